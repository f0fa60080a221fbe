/* time_model_test.c — each term of the predicted step on hand-computable cases, with a made-up
 * calibration: every GEMM at 1 GFLOP/s, 1e8 floats/s elsewhere (no block measured), the head
 * 1 ms forward and 2 ms backward, AdamW 1e8 parameters/s, every link α = 1 µs, β = 1 ns/byte.
 * The default model: L = 4, C = 64, NH = 4, T = 64, micro-batch 4, global batch 16.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/plan/calibration.h"
#include "src/plan/time_model.h"
#include "src/train/config.h"
#include "src/train/memory_predict.h"
#include "tests/support/testing.h"

static plan_calibration g_cal;

static int setup(void **state) {
    (void)state;
    memset(&g_cal, 0, sizeof g_cal);
    g_cal.ngemm = 1;
    g_cal.gemm[0] = (plan_gemm){64, 64, 64, 1e9};
    g_cal.elementwise_per_s = 1e8;
    g_cal.optimizer_per_s = 1e8;
    g_cal.head_forward = 1e-3, g_cal.head_backward = 2e-3;
    for (int k = 0; k < PLAN_NLINKS; k++) g_cal.link[k] = (plan_link){1e-6, 1e-9, 0, "test"};
    return 0;
}

static void near(double got, double want, const char *what) {
    if (fabs(got - want) > 1e-12 + 1e-9 * fabs(want))
        fail_msg("%s: got %.12g, want %.12g", what, got, want);
}

/* Buffers a configuration points into stay until the program ends, then are freed (before the
 * leak checker of a sanitizer build looks). */
static char **g_kept;
static int g_nkept;
static void free_kept(void) {
    for (int i = 0; i < g_nkept; i++) free(g_kept[i]);
    free(g_kept);
}
static char *kept(size_t bytes) {
    if (g_nkept == 0) atexit(free_kept);
    g_kept = realloc(g_kept, (size_t)(g_nkept + 1) * sizeof *g_kept);
    return g_kept[g_nkept++] = malloc(bytes);
}

/* A checked configuration of the default model with `flags` at `world` ranks. */
static train_config layout(const char *flags, int world) {
    char *line = kept(1024), *argv[64];
    snprintf(line, 1024, "%s", flags);
    int argc = 0;
    for (char *t = strtok(line, " "); t && argc < 64; t = strtok(NULL, " ")) argv[argc++] = t;
    train_config c;
    train_config_defaults(&c);
    train_config_parse(&c, "train", argc, argv);
    c.predict_only = true;
    char err[512];
    if (!train_config_check(&c, world, err, sizeof err)) fail_msg("%s: %s", flags, err);
    return c;
}

static plan_time predict(const train_config *c) {
    train_memory *tm = train_memory_predict(c, train_config_zero_stage(c), "test");
    plan_time p = plan_time_predict(c, tm, &g_cal);
    train_memory_free(tm);
    return p;
}

static void collectives_follow_the_ring(void **state) {
    (void)state;
    near(plan_collective_time(&g_cal, PLAN_ALL_REDUCE, 4, 1e6), 6e-6 + 1.5e-3, "all-reduce g=4");
    near(plan_collective_time(&g_cal, PLAN_ALL_GATHER, 4, 1e6), 3e-6 + 0.75e-3, "all-gather");
    near(plan_collective_time(&g_cal, PLAN_P2P, 2, 1e6), 1e-6 + 1e-3, "p2p");
    near(plan_collective_time(&g_cal, PLAN_REDUCE_SCATTER, 1, 1e6), 0, "one rank");
    g_cal.link[PLAN_ALL_REDUCE].sync = 1e-4; /* once per call, not per step */
    near(plan_collective_time(&g_cal, PLAN_ALL_REDUCE, 8, 1e6), 1e-4 + 14e-6 + 1.75e-3, "sync");
    g_cal.link[PLAN_ALL_REDUCE].sync = 0;
    /* measured on 4 ranks too (α 3 µs): groups of 4 to 7 take it, 2 and 3 the pair's */
    g_cal.nlink_groups = 1;
    g_cal.link_group[0].g = 4;
    for (int k = 0; k < PLAN_NLINKS; k++)
        g_cal.link_group[0].link[k] = (plan_link){3e-6, 1e-9, 0, "t"};
    near(plan_collective_time(&g_cal, PLAN_ALL_REDUCE, 4, 1e6), 18e-6 + 1.5e-3, "g=4: its link");
    near(plan_collective_time(&g_cal, PLAN_ALL_REDUCE, 3, 1e6), 4e-6 + 1e-3 * 4 / 3, "g=3: 2's");
    train_config c = layout("--tensor-model-parallel-size 4", 4); /* 2 all-reduces of N·C floats */
    near(predict(&c).layer.tp_comm, 2 * (18e-6 + 1e-9 * 1.5 * 4 * 256 * 64), "tp 4 takes it");
    g_cal.nlink_groups = 0;
}

/* N = 256 tokens, C = 64: products 24·N·C² FLOPs, attention 4·N·T·C, elementwise
 * N·(12C + 16C + 4·NH·T) floats. */
static void one_layer_serial(void **state) {
    (void)state;
    train_config c = layout("", 1);
    plan_time p = predict(&c);
    const double N = 256, C = 64, T = 64;
    near(p.layer.layer_gemm, 24 * N * C * C / 1e9, "layer_gemm");
    near(p.layer.attention_gemm, 4 * N * T * C / 1e9, "attention_gemm");
    near(p.layer.elementwise, N * (28 * C + 16 * T) / 1e8, "elementwise");
    near(p.layer.tp_comm + p.layer.cp_comm + p.layer.ep_comm, 0, "no communication");
    const double compute = p.layer.layer_gemm + p.layer.attention_gemm + p.layer.elementwise;
    near(p.layer.forward, compute, "forward");
    near(p.layer.backward, 2 * compute, "backward: twice the forward without a block measured");
    near(p.layer.recompute, 0, "no recomputation");
}

/* tp = 2: products halve, two all-reduces of N·C floats per pass; with sequence parallelism two
 * all-gathers and two reduce-scatters instead. */
static void tensor_parallel_terms(void **state) {
    (void)state;
    const double N = 256, C = 64, T = 64, bytes = 4 * N * C;
    train_config c = layout("--tensor-model-parallel-size 2", 2);
    plan_time p = predict(&c);
    near(p.layer.layer_gemm, 12 * N * C * C / 1e9, "layer_gemm / tp");
    near(p.layer.attention_gemm, 2 * N * T * C / 1e9, "attention / tp");
    near(p.layer.tp_comm, 2 * (2e-6 + 1e-9 * bytes), "2 all-reduces");
    c = layout("--tensor-model-parallel-size 2 --sequence-parallel", 2);
    p = predict(&c);
    near(p.layer.tp_comm, 4 * (1e-6 + 1e-9 * bytes / 2), "2 all-gathers + 2 reduce-scatters");
    near(p.p2p, 1e-6 + 1e-9 * bytes / 2, "the pipeline message is a sequence shard");
}

static void context_and_recompute_terms(void **state) {
    (void)state;
    train_config c = layout("--context-parallel-size 2", 2);
    plan_time p = predict(&c);
    near(p.layer.cp_comm, 1e-6 + 1e-9 * 2 * 4 * 128 * 64, "one ring step of K and V");
    c = layout("--recompute-granularity selective", 1);
    p = predict(&c);
    near(p.layer.recompute, p.layer.attention_gemm + 256 * 16 * 64 / 1e8, "selective");
    c = layout("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
               1);
    plan_time full = predict(&c);
    c = layout("", 1);
    plan_time none = predict(&c);
    near(full.layer.recompute, full.layer.forward, "full: the layer's forward again");
    /* one rank, 4 micro-batches, 4 layers: the pipeline grows by 4 × 4 forwards */
    near(full.pipeline - none.pipeline, 16 * none.layer.forward, "full recompute in the step");
}

/* The attention core measured (4 heads: 1 ms forward, 3 ms backward, ring attention's kernel
 * 2 and 4 ms; 2 heads: 0.6, 1.6 ms): it replaces Q·Kᵀ and A·V, the softmax leaves the
 * elementwise floats, its backward is its own (the rest twice the forward: no block
 * measured), with context parallelism the ring's kernel at the rank's share of the score
 * entries, and selective recomputation adds exactly its forward. */
static void measured_attention_core(void **state) {
    (void)state;
    const plan_calibration saved = g_cal;
    g_cal.nattention = 2;
    g_cal.attention[0] = (plan_attention){4, 64, 1e-3, 3e-3, 2e-3, 4e-3};
    g_cal.attention[1] = (plan_attention){2, 64, 0.6e-3, 1.6e-3, 1.2e-3, 2.4e-3};
    const double N = 256, C = 64;
    train_config c = layout("", 1);
    plan_time p = predict(&c);
    near(p.layer.attention_gemm, 1e-3, "attention: measured");
    near(p.layer.elementwise, N * 28 * C / 1e8, "elementwise without the softmax");
    near(p.layer.backward, 2 * (p.layer.layer_gemm + p.layer.elementwise) + 3e-3, "backward");
    c = layout("--tensor-model-parallel-size 2", 2);
    near(predict(&c).layer.attention_gemm, 0.6e-3, "tp 2: the 2-head measurement");
    c = layout("--context-parallel-size 2", 2);
    p = predict(&c);
    /* ring attention's kernel × the rank's score entries, (2·2 + 1)·16² of 64² */
    near(p.layer.attention_gemm, 2e-3 * 1280 / 4096, "cp 2: the ring's share");
    near(p.layer.backward - 2 * (p.layer.layer_gemm + p.layer.elementwise) - 2 * p.layer.cp_comm,
         4e-3 * 1280 / 4096, "cp 2: the ring's backward share");
    c = layout("--recompute-granularity selective", 1);
    near(predict(&c).layer.recompute, 1e-3, "selective: the attention core's forward");
    /* a rank's ring attention measured at cp 2 (0.9, 1.9 ms) replaces the share of the kernel */
    g_cal.nring = 1;
    g_cal.ring[0] = (plan_ring){4, 64, 2, 0.9e-3, 1.9e-3};
    c = layout("--context-parallel-size 2", 2);
    p = predict(&c);
    near(p.layer.attention_gemm, 0.9e-3, "cp 2: the rank's ring as measured");
    near(p.layer.backward - 2 * (p.layer.layer_gemm + p.layer.elementwise) - 2 * p.layer.cp_comm,
         1.9e-3, "cp 2: its backward as measured");
    g_cal = saved;
}

/* MoE, 4 experts top-2, ep 2 at 2 ranks, with the calibration's expert load 1.5 at ep 2: the
 * busiest rank's two experts take 1.5 × their balanced N·K·ep/E = 256 rows (384), its
 * elementwise work and all-to-alls 1.5 × theirs; without a measured load, the balanced share. */
static void expert_load_on_the_busiest_rank(void **state) {
    (void)state;
    const plan_calibration saved = g_cal;
    g_cal.nmoe_load = 1;
    g_cal.moe_load[0] = (plan_moe_load){2, 1.5};
    const double N = 256, C = 64, E = 4, K = 2, rows = 384;
    const train_config c = layout("--num-experts 4 --moe-router-topk 2 "
                                  "--expert-model-parallel-size 2",
                                  2);
    plan_time p = predict(&c);
    const double attention = 2 * N * C * 3 * C + 2 * N * C * C, router = 2 * N * C * E;
    const double experts = 2 * (2 * rows * C * 4 * C + 2 * rows * 4 * C * C);
    near(p.layer.layer_gemm, (attention + router + experts) / 1e9, "experts at the busiest load");
    /* two all-to-alls over 2 ranks: 1 step each, half the N·K·C floats × 1.5 on the wire */
    near(p.layer.ep_comm, 2 * (1e-6 + 1e-9 * 4 * N * C * K * 1.5 / 2), "all-to-alls");
    near(p.layer.moe_load, 1.5, "the load applied");
    /* its GELU and biases over every routed row: 16·C·K × 1.5 floats a token, beside the
     * LayerNorms' and residuals' 12·C and the softmax's 4·NH·T */
    near(p.layer.elementwise, N * (12 * C + 16 * C * K * 1.5 + 4 * 4 * 64) / 1e8, "expert rows");
    g_cal = saved;
    near(predict(&c).layer.moe_load, 1, "not measured: balanced");
}

/* One rank: the pipeline is m × (the stage's forward + backward); the step adds the optimizer;
 * tokens/s = global batch × T / step. */
static void serial_step_adds_up(void **state) {
    (void)state;
    train_config c = layout("", 1);
    plan_time p = predict(&c);
    const double f = 4 * p.layer.forward + p.embedding + p.head_forward;
    const double b = 4 * p.layer.backward + p.head_backward;
    near(p.pipeline, 4 * (f + b), "pipeline");
    near(p.bubble, 0, "no bubble on one rank");
    train_memory *tm = train_memory_predict(&c, 0, "test");
    near(p.optimizer, (double)tm->ranks[0].numel / 1e8, "AdamW over Ψ (no norm all-reduce)");
    near(p.step, p.pipeline + p.optimizer, "step");
    near(p.tokens_per_s, 16 * 64 / p.step, "tokens/s");
    train_memory_free(tm);
}

/* dp = 2: ZeRO-0 all-reduces Ψ floats, ZeRO-1 reduce-scatters and all-gathers them and steps
 * Adam over its shard; --overlap-grad-reduce hides the reduction behind the backward, all but
 * one bucket. */
static void data_parallel_terms(void **state) {
    (void)state;
    train_config c = layout("", 2);
    train_memory *tm = train_memory_predict(&c, 0, "test");
    const double psi = (double)tm->ranks[0].numel, bytes = 4 * psi;
    train_memory_free(tm);
    plan_time p = predict(&c);
    near(p.dp_comm, 2e-6 + 1e-9 * bytes, "all-reduce of the gradients");
    near(p.dp_exposed, p.dp_comm, "all exposed");
    c = layout("--use-distributed-optimizer", 2);
    p = predict(&c);
    near(p.dp_comm, 2 * (1e-6 + 1e-9 * bytes / 2), "reduce-scatter + all-gather");
    /* one bucket (the default 2^20 elements > Ψ) is reduced when the backward ends: nothing hides */
    c = layout("--overlap-grad-reduce", 2);
    plan_time o = predict(&c);
    near(o.dp_exposed, o.dp_comm, "one bucket");
    /* buckets of 10^4 elements: the backward covers the all-reduce's waiting (α·2 steps) all
     * but one bucket's, not its copies (β·wire: the rank's core moves the bytes) */
    c = layout("--overlap-grad-reduce --ddp-bucket-size 10000", 2);
    o = predict(&c);
    const double buckets = ceil(psi / 10000);
    near(o.dp_exposed, 1e-9 * bytes + 2e-6 / buckets, "overlapped: the copies and one bucket");
    train_config plain = layout("", 2);
    assert_true(o.step < predict(&plain).step);
}

/* ZeRO-3 at 2 ranks: each pass gathers the stage's Ψ floats one unit ahead; the forward (far
 * longer than the gather's 1 µs of latency) covers all but one of the n + 1 = 5 pieces of the
 * waiting, and none of the copies (1 ns per byte of the half on the wire). The backward adds
 * the same, and the reduce-scatter of the gradients. */
static void zero3_gathers_pay_their_copies(void **state) {
    (void)state;
    train_config c = layout("--data-parallel-sharding-strategy optim_grads_params", 2);
    train_memory *tm = train_memory_predict(&c, 3, "test");
    const double bytes = 4 * (double)tm->ranks[0].numel;
    train_memory_free(tm);
    const double gather = 1e-9 * bytes / 2 + 1e-6 / 5;
    const plan_time z = predict(&c);
    c = layout("--use-distributed-optimizer", 2);
    const plan_time one = predict(&c);
    near(z.stage_forward_max - one.stage_forward_max, gather, "forward: copies + a piece");
    near(z.zero_in_pass, (1e-6 + 1e-9 * bytes / 2) + gather, "backward: reduce-scatter + gather");
}

/* pp = 2: the schedule adds a bubble; interleaving (v = 2) shrinks it; GPipe and 1F1B have the
 * same makespan with equal stages. */
static void pipeline_schedules(void **state) {
    (void)state;
    train_config c = layout("--pipeline-model-parallel-size 2 --global-batch-size 32", 2);
    plan_time one = predict(&c);
    assert_true(one.bubble > 0);
    c = layout("--pipeline-model-parallel-size 2 --global-batch-size 32 "
               "--num-layers-per-virtual-pipeline-stage 1",
               2);
    plan_time inter = predict(&c);
    assert_true(inter.bubble < one.bubble);
    c = layout("--pipeline-model-parallel-size 2 --global-batch-size 32 --pipeline-schedule zbv",
               2);
    plan_time zbv = predict(&c);
    assert_true(zbv.bubble < one.bubble);
    assert_true(one.pipeline >= 8 * (one.stage_forward_max));
}

/* The same layout on hosts of R ranks (tp fastest): at R = 2 its tp 4 groups span hosts and
 * every tensor-parallel all-reduce takes the network's α = 10 µs, β = 10 ns/byte; at R = 4
 * they stay inside a host. Both times dp (ranks r, r + 4) spans hosts, so the steps differ by
 * the tp all-reduces alone: per micro-batch 2 in each layer's forward and 2 in its backward,
 * and one each in the embedding and the head (m = 16 / (4 · dp 2) = 2 micro-batches). */
static void tensor_parallel_across_hosts_pays_the_network(void **state) {
    (void)state;
    const train_config c = layout("--tensor-model-parallel-size 4", 8);
    g_cal.network = (plan_link){1e-5, 1e-8, 0, "given"};
    g_cal.ranks_per_node = 4;
    const plan_time inside = predict(&c);
    g_cal.ranks_per_node = 2;
    const plan_time across = predict(&c);
    g_cal.ranks_per_node = 0;
    const plan_time one_host = predict(&c);
    assert_int_equal(inside.across, (1u << PG_DP_CP) | (1u << PLAN_WORLD));
    assert_int_equal(across.across, (1u << PG_TP) | (1u << PG_DP_CP) | (1u << PLAN_WORLD));
    assert_int_equal(one_host.across, 0);
    const double g = 4, bytes = 4 * 256 * 64, steps = 2 * (g - 1), wire = 2 * (g - 1) / g * bytes;
    const double ar_local = 1e-6 * steps + 1e-9 * wire, ar_net = 1e-5 * steps + 1e-8 * wire;
    near(inside.layer.tp_comm, 2 * ar_local, "tp inside a host: the calibrated link");
    near(across.layer.tp_comm, 2 * ar_net, "tp across hosts: the network");
    near(across.step - inside.step, 2 * (4 * 4 + 2) * (ar_net - ar_local), "the step's difference");
    assert_true(across.tokens_per_s < inside.tokens_per_s);
    /* dp spans hosts in both: its all-reduce of Ψ floats is the network's, a host's on one */
    assert_true(inside.dp_comm > one_host.dp_comm);
}

/* pp 2 at 8 ranks on hosts of 4: stage 0 is ranks 0-3, stage 1 ranks 4-7, so every pipeline
 * message crosses the network while the data-parallel groups (ranks 0-3, 4-7) stay inside. */
static void pipeline_messages_across_hosts(void **state) {
    (void)state;
    const train_config c = layout("--pipeline-model-parallel-size 2 --global-batch-size 32", 8);
    g_cal.network = (plan_link){1e-5, 1e-8, 0, "given"};
    g_cal.ranks_per_node = 4;
    const plan_time p = predict(&c);
    near(p.p2p, 1e-5 + 1e-8 * 4 * 256 * 64, "one message over the network");
    const plan_link l = plan_group_link(&g_cal, &c, PG_PP, PLAN_P2P, 2);
    assert_string_equal(l.source, "given");
    assert_string_equal(plan_group_link(&g_cal, &c, PG_TP, PLAN_ALL_REDUCE, 4).source, "test");
    char names[48];
    assert_string_equal(plan_groups_across_name(p.across, names, sizeof names), "pp");
    g_cal.ranks_per_node = 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(collectives_follow_the_ring),
        cmocka_unit_test(one_layer_serial),
        cmocka_unit_test(tensor_parallel_terms),
        cmocka_unit_test(context_and_recompute_terms),
        cmocka_unit_test(measured_attention_core),
        cmocka_unit_test(expert_load_on_the_busiest_rank),
        cmocka_unit_test(serial_step_adds_up),
        cmocka_unit_test(data_parallel_terms),
        cmocka_unit_test(zero3_gathers_pay_their_copies),
        cmocka_unit_test(pipeline_schedules),
        cmocka_unit_test(tensor_parallel_across_hosts_pays_the_network),
        cmocka_unit_test(pipeline_messages_across_hosts),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
