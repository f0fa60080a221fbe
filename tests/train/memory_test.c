/* memory_test.c — what `trident memory` predicts is what Trident's allocator measures.
 *
 * Run under mpirun with WORLD ranks (one binary per world size). For every row of the layout
 * matrix (tests/train/equivalence_cases.h: the 3-D rows — schedules, TP/PP/DP, ZeRO-1,
 * ZeRO-2/3, overlaps, recomputation, sequence parallelism — and the 5-D rows — context
 * parallelism, mixture of experts, expert parallelism, with TP, PP, DP and ZeRO-1), in fp32 and
 * in bf16 (whose bf16 linear products hold the device's operand scratch, sized for the largest
 * product: with expert parallelism an expert's, ep·N rows), and a few 3-D rows in fp16 (not
 * ZeRO-2/3, which refuse fp16), each rank trains 2 steps and one held-out evaluation of the
 * small equivalence model, and:
 *   - its allocator high-water mark (device_bytes_peak, src/device/device_memory.h) is within
 *     ±5% of the prediction for its rank (train_memory_predict, src/train/memory_predict.h:
 *     the coordinates of pg_layout_make, this ep rank's experts, activations at T/cp with each
 *     MoE block's worst case, ring attention's scratch as the temporary) — the bound;
 *     the worst deviation seen is printed (0.00% today: the prediction adds up the same buffers
 *     the run allocates);
 *   - parameters, gradients, fp32 master and Adam m + v, measured by their allocation labels
 *     (device_bytes_in_use_of), equal the predicted kinds exactly: the ZeRO paper's pattern in
 *     Trident's storage at dp = 2, 4 and 8, with ZeRO-1 and without (with expert parallelism:
 *     E/ep experts per rank);
 *   - the prediction's coordinates are the run's;
 *   - trainer_memory_peak, which every rank gathers for metrics.jsonl, is each rank's own.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "src/device/device_memory.h"
#include "src/pp/schedule.h"
#include "src/runtime/dist.h"
#include "src/runtime/groups.h"
#include "src/runtime/parallel_state.h"
#include "src/train/memory_predict.h"
#include "src/train/trainer.h"
#include "tests/support/testing.h"
#include "tests/train/equivalence_cases.h"

/* The model-state kinds, measured by their device_alloc labels. */
static void model_state_measured(size_t out[ZERO_MEM_ADAM + 1]) {
    /* ZeRO-2/3 hold their gradients, and ZeRO-3 its parameters, as shards (src/zero/fsdp.h) */
    out[ZERO_MEM_PARAMS] = device_bytes_in_use_of("parameters") +
                           device_bytes_in_use_of("parameter shard");
    out[ZERO_MEM_GRADS] = device_bytes_in_use_of("gradients") +
                          device_bytes_in_use_of("gradient shard");
    out[ZERO_MEM_MASTER] = device_bytes_in_use_of("fp32 master weights");
    out[ZERO_MEM_ADAM] = device_bytes_in_use_of("Adam first moments") +
                         device_bytes_in_use_of("Adam second moments");
}

/* Trains c (2 steps, one evaluation) at this world and checks every rank; returns the largest
 * |peak / predicted − 1| over the ranks. */
static double check_layout(const train_config *base, const char *name) {
    const int world = dist_world_size(), rank = dist_rank();
    train_config c = *base;
    c.train_iters = 2;
    char err[512];
    if (!train_config_check(&c, world, err, sizeof err)) fail_msg("%s rejected: %s", name, err);
    pg_layout l;
    assert_true(pg_layout_make(&l, world, c.tensor_model_parallel_size, c.context_parallel_size,
                               c.expert_model_parallel_size, c.pipeline_model_parallel_size, c.vpp,
                               c.rank_order, err, sizeof err));
    assert_int_equal(device_bytes_in_use(), 0); /* the previous case gave everything back */
    device_bytes_peak_reset();
    parallel_state *ps = ps_create(&l, rank);
    trainer *t = trainer_create(&c, ps);
    for (int it = 1; it <= 2; it++) trainer_step(t, it);
    trainer_evaluate(t, 1, 2);
    const size_t peak = device_bytes_peak();
    size_t state[ZERO_MEM_ADAM + 1];
    model_state_measured(state);
    train_memory *tm = train_memory_predict(&c, train_config_zero_stage(&c), "memory_test");
    const zero_memory_rank *m = &tm->ranks[rank];
    /* the prediction's coordinates are the run's */
    assert_int_equal(m->tp_rank, ps->tp_rank);
    assert_int_equal(m->pp_rank, ps->pp_rank);
    assert_int_equal(m->dp_rank, ps->dp_rank);
    assert_int_equal(m->cp_rank, ps->cp_rank);
    assert_int_equal(m->ep_rank, ps->ep_rank);
    for (int k = 0; k <= ZERO_MEM_ADAM; k++)
        if (state[k] != m->bytes[k])
            fail_msg("%s rank %d: %s measured %zu bytes, predicted %zu", name, rank,
                     zero_mem_kind_name(k), state[k], m->bytes[k]);
    assert_int_equal(trainer_memory_peak(t, rank), device_bytes_peak()); /* gathered at the step */
    trainer_memory_gather(t);
    assert_int_equal(trainer_memory_peak(t, rank), peak); /* the evaluation raised nothing */
    const double dev = (double)peak / (double)m->total - 1.0;
    double worst = 0, mine = fabs(dev);
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    long long off = (long long)peak - (long long)m->total, most = 0;
    off = off < 0 ? -off : off;
    MPI_Allreduce(&off, &most, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        char a[32], b[32], d[32];
        printf("  %-52s rank 0: peak %9s, predicted %9s; params+grads+master+Adam %8s; worst "
               "|peak/predicted − 1| %.4f%% (%lld bytes)\n",
               name, zero_bytes_text((double)peak, a, sizeof a),
               zero_bytes_text((double)m->total, b, sizeof b),
               zero_bytes_text((double)(state[0] + state[1] + state[2] + state[3]), d, sizeof d),
               100.0 * worst, most);
    }
    if (!(mine <= 0.05))
        fail_msg("%s rank %d: allocator peak %zu bytes vs predicted %zu (%+.2f%%, bound ±5%%)",
                 name, rank, peak, m->total, 100.0 * dev);
    train_memory_free(tm);
    trainer_destroy(t);
    ps_destroy(ps);
    return worst;
}

/* A row's name: its layout, schedule and features, and the precision. */
static void case_name(const layout_case *lc, const train_config *c, char *buf, size_t cap) {
    const int dp = dist_world_size() / (lc->tp * lc->pp * c->context_parallel_size);
    snprintf(buf, cap, "tp%d pp%d dp%d %s%s%s%s%s%s%s%s%s", lc->tp, lc->pp, dp, lc->schedule,
             lc->zero ? " zero" : "", lc->overlap_grad || lc->overlap_param ? " overlap" : "",
             lc->overlap_p2p ? " p2p-ahead" : "", lc->recompute ? " rc-" : "",
             lc->recompute ? lc->recompute : "", lc->sequence_parallel ? " sp" : "",
             lc->sharding ? " " : "", lc->sharding ? lc->sharding : "");
    if (c->context_parallel_size > 1)
        snprintf(buf + strlen(buf), cap - strlen(buf), " cp%d", c->context_parallel_size);
    if (lc->experts > 0)
        snprintf(buf + strlen(buf), cap - strlen(buf), " moe-E%d-k%d ep%d%s", lc->experts,
                 c->moe_router_topk, c->expert_model_parallel_size, lc->capacity > 0 ? " cap" : "");
    if (c->bf16 || c->fp16)
        snprintf(buf + strlen(buf), cap - strlen(buf), c->bf16 ? " bf16" : " fp16");
}

/* fp16 on a few rows: every fourth 3-D row without --overlap-grad-reduce (which refuses fp16)
 * and without ZeRO-2/3 (which refuse it too). */
static bool fp16_row(size_t i) {
    const layout_case *lc = &k_cases[i];
    return i % 4 == 0 && !lc->overlap_grad && !lc->sharding && !layout_case_is_5d(lc);
}

static void every_layout_peaks_where_predicted(void **state) {
    (void)state;
    double worst = 0;
    char name[192];
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
        for (int prec = 0; prec < 3; prec++) {
            if (prec == 2 && !fp16_row(i)) continue;
            train_config base, c;
            equivalence_base_config(&base);
            equivalence_model(&k_cases[i], &base); /* the row's model: its experts */
            equivalence_apply(&base, &k_cases[i], &c);
            c.bf16 = prec == 1;
            c.fp16 = prec == 2;
            case_name(&k_cases[i], &c, name, sizeof name);
            worst = fmax(worst, check_layout(&c, name));
        }
    if (dist_rank() == 0)
        printf("  worst |peak/predicted − 1| over every row: %.4f%%\n", 100 * worst);
}

/* Data parallelism alone at this world (dp = WORLD), without and with ZeRO-1, fp32 and bf16:
 * the ZeRO pattern of the four model-state kinds, measured by label (check_layout). */
static void zero_pattern_at_this_dp(void **state) {
    (void)state;
    train_config base;
    equivalence_base_config(&base);
    char name[128];
    for (int zero = 0; zero < 2; zero++)
        for (int bf16 = 0; bf16 < 2; bf16++) {
            train_config c = base;
            c.use_distributed_optimizer = zero;
            c.bf16 = bf16;
            snprintf(name, sizeof name, "dp%d %s %s", dist_world_size(),
                     zero ? "ZeRO-1" : "no ZeRO", bf16 ? "bf16" : "fp32");
            check_layout(&c, name);
        }
}

/* The most activation bytes any rank of c holds, predicted (exact: the test above); per rank
 * into per_rank, into head each rank's head parts of one micro-batch plus the tokens of p
 * micro-batches, into head_w p micro-batches' head parts that W reads (each may be NULL). */
static size_t activation_peak(const train_config *c, const char *schedule, size_t *per_rank,
                              size_t *head, size_t *head_w) {
    train_config k = *c;
    k.pipeline_schedule = schedule;
    const int m_least = 2 * k.pipeline_model_parallel_size; /* dualpipev's least m */
    if (strcmp(schedule, "dualpipev") == 0 && k.global_batch_size < m_least * k.micro_batch_size)
        k.global_batch_size = m_least * k.micro_batch_size;
    char err[512];
    if (!train_config_check(&k, WORLD, err, sizeof err)) fail_msg("%s: %s", schedule, err);
    train_memory *tm = train_memory_predict(&k, 0, "memory_test");
    size_t most = 0;
    for (int r = 0; r < WORLD; r++) {
        const size_t a = tm->ranks[r].bytes[ZERO_MEM_ACTIVATIONS];
        if (per_rank) per_rank[r] = a;
        /* what a V holds beyond 1F1B's layers: one head set, p more micro-batches' tokens */
        if (head)
            head[r] = tm->ranks[r].head_bytes +
                      (size_t)k.pipeline_model_parallel_size * tm->ranks[r].tokens_bytes;
        /* what ZB-H1's last stage holds beyond 1F1B's: the head's W side of p micro-batches */
        if (head_w) head_w[r] = (size_t)k.pipeline_model_parallel_size * tm->ranks[r].head_w_bytes;
        most = a > most ? a : most;
    }
    train_memory_free(tm);
    return most;
}

/* Qi et al.'s bound: after B only W's inputs stay (gpt.h, the parts of a set), so ZB-H1 holds
 * no more activations on any rank than 1F1B's peak (rank 0's p sets); the B -> W hand-over
 * (the output gradients W reads) comes on top and is billed apart. ZB-V holds 2p chunk sets
 * of half a stage each, in one pool by size across its two chunks: 1F1B's peak too, except
 * that the V puts the head on rank 0, where one micro-batch's head parts (the logits, the
 * final norm) come on top of the fill, and the tokens of 2p micro-batches where 1F1B keeps
 * p — the paper counts uniform layers. DualPipeV as its
 * README states: p + 1 stages' activations where 1F1B holds p, the head's beside. */
static void zero_bubble_holds_no_more_than_1f1b(void **state) {
    (void)state;
    if (WORLD < 2 || dist_rank() != 0) return;
    for (int tp = 1; tp <= WORLD / 2; tp *= 2) {
        const int p = WORLD / tp;
        train_config c;
        equivalence_base_config(&c);
        c.tensor_model_parallel_size = tp;
        c.pipeline_model_parallel_size = p;
        c.num_layers = 4 * p;
        size_t zb[WORLD], v[WORLD], dual[WORLD], head[WORLD];
        const size_t one = activation_peak(&c, "1f1b", NULL, NULL, NULL);
        activation_peak(&c, "zb-h1", zb, NULL, NULL);
        for (int r = 0; r < WORLD; r++)
            if (zb[r] > one)
                fail_msg("tp%d pp%d: zb-h1 rank %d holds %zu activation bytes, 1F1B's peak %zu", tp,
                         p, r, zb[r], one);
        if (p < 2) continue;
        activation_peak(&c, "zbv", v, head, NULL);
        activation_peak(&c, "dualpipev", dual, NULL, NULL);
        for (int r = 0; r < WORLD; r++) {
            if (v[r] > one + head[r])
                fail_msg("tp%d pp%d: zbv rank %d holds %zu activation bytes, 1F1B's peak %zu + "
                         "head %zu",
                         tp, p, r, v[r], one, head[r]);
            if (dual[r] > one / (size_t)p * (size_t)(p + 1) + head[r])
                fail_msg("tp%d pp%d: dualpipev rank %d holds %zu activation bytes, (p+1)/p of "
                         "1F1B's peak %zu + head %zu",
                         tp, p, r, dual[r], one, head[r]);
        }
        printf("  tp%d pp%d activation peak: 1f1b %zu, zb-h1 %zu, zbv %zu (rank 0 head parts "
               "%zu), dualpipev %zu bytes\n",
               tp, p, one, activation_peak(&c, "zb-h1", NULL, NULL, NULL),
               activation_peak(&c, "zbv", NULL, NULL, NULL), head[0],
               activation_peak(&c, "dualpipev", NULL, NULL, NULL));
    }
}

/* The same bounds on every zero-bubble row of the equivalence matrix (TP, SP, CP, MoE, ZeRO),
 * each against its own layout run under 1F1B (the model's layers cut into pp stages). */
static void zero_bubble_rows_hold_what_their_1f1b_holds(void **state) {
    (void)state;
    if (dist_rank() != 0) return;
    int checked = 0;
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        const layout_case *lc = &k_cases[i];
        const bool v = pp_name_v_placement(lc->schedule);
        if (!v && strcmp(lc->schedule, "zb-h1") != 0) continue;
        train_config base, c, one;
        equivalence_base_config(&base);
        equivalence_model(lc, &base);
        equivalence_apply(&base, lc, &c);
        one = c;
        one.num_layers_per_virtual_pipeline_stage = 0;
        size_t zb[WORLD], head[WORLD], head_w[WORLD];
        const size_t peak1 = activation_peak(&one, "1f1b", NULL, NULL, NULL);
        activation_peak(&c, lc->schedule, zb, head, head_w);
        const int p = lc->pp;
        for (int r = 0; r < WORLD; r++) {
            /* ZB-H1: the last stage holds p sets' W parts, the head's among them (the paper
             * counts uniform layers; with recomputation or experts a stage's layers keep so
             * little besides that the head's part decides) */
            const size_t bound = strcmp(lc->schedule, "zb-h1") == 0 ? peak1 + head_w[r]
                                 : strcmp(lc->schedule, "zbv") == 0
                                     ? peak1 + head[r]
                                     : peak1 / (size_t)p * (size_t)(p + 1) + head[r];
            if (zb[r] > bound)
                fail_msg("row %zu (tp%d pp%d %s, cp %d, ep %d, %d experts): rank %d holds %zu "
                         "activation bytes, above %zu (1F1B's peak %zu)",
                         i, lc->tp, p, lc->schedule, lc->cp, lc->ep, lc->experts, r, zb[r], bound,
                         peak1);
        }
        checked++;
    }
    printf("  %d zero-bubble rows within their 1F1B bound on every rank\n", checked);
}

int main(int argc, char **argv) {
    mpi_test_launch(argc, argv, WORLD);
    dist_init(&argc, &argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zero_pattern_at_this_dp),
        cmocka_unit_test(every_layout_peaks_where_predicted),
        cmocka_unit_test(zero_bubble_holds_no_more_than_1f1b),
        cmocka_unit_test(zero_bubble_rows_hold_what_their_1f1b_holds),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dist_finalize();
    return rc;
}
