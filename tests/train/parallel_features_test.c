/* parallel_features_test.c — what the pipeline executor and the optimizer promise beyond
 * "the same numbers as serial" (that is tests/train/equivalence_test.c):
 *   - activations held: GPipe keeps all m micro-batches on every rank, 1F1B keeps min(p−r, m)
 *     on rank r (measured by the executor while it runs);
 *   - ZeRO on and off give the same parameters to 1e-6 relative;
 *   - ZeRO-1 optimizer state per rank is the unsharded amount / dp, apart from padding;
 *   - bf16 and fp16 train, staying within a stated tolerance of fp32;
 *   - fp16 loss scaling skips the step and lowers the scale on an (injected) overflow, and
 *     training goes on;
 *   - evaluation (forward passes only through the pipeline) gives the serial loss, with
 *     sequence parallelism too;
 *   - in bf16, --overlap-grad-reduce / --overlap-param-gather give the parameters of the
 *     blocking step (gradients rounded bucket by bucket, the tied wte summed first), also
 *     with more buckets than the communication stream has tags;
 *   - activation recomputation holds fewer bytes per micro-batch (measured, 1F1B), and in
 *     bf16 changes no bit of the parameters (TP × PP zero bubble, with and without sequence
 *     parallelism; PP × DP ZeRO);
 *   - sequence parallelism divides a micro-batch's activations by the tensor-parallel size
 *     (Korthikanti et al.'s (sbh/t)(34 + 5as/h): all of it, not only the TP region), and in
 *     bf16 trains like plain TP (TP × PP zero bubble);
 *   - ZeRO-2 and ZeRO-3 (--data-parallel-sharding-strategy optim_grads, optim_grads_params)
 *     really free what they shard: under --device cpu-guarded, which counts every device
 *     allocation, the bytes in use differ between the four strategies by exactly what
 *     distopt_memory_held says (the table is printed, dp 4 and dp 2, fp32 and bf16);
 *   - in bf16, ZeRO-3 changes no bit of ZeRO-2 (the same buckets, the same gathered
 *     values), and both train like ZeRO-1 (they round each micro-batch's gradients);
 *   - ZeRO-2 and ZeRO-3 save, load and continue at the same layout changing no bit of the
 *     parameters (ZeRO-3 with PP; ZeRO-2 in bf16, master weights included).
 * Runs under mpirun with 4 ranks.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/ckpt/checkpoint.h"
#include "src/device/device.h"
#include "src/pp/executor.h"
#include "src/runtime/comm_stream.h"
#include "src/runtime/dist.h"
#include "src/runtime/parallel_state.h"
#include "src/train/trainer.h"
#include "src/zero/distributed_optimizer.h"
#include "tests/support/testing.h"
#include "tests/train/equivalence.h"

static trainer *make(train_config *c, parallel_state **ps_out) {
    char err[512];
    if (!train_config_check(c, dist_world_size(), err, sizeof err)) fail_msg("%s", err);
    pg_layout l;
    assert_true(pg_layout_make(&l, dist_world_size(), c->tensor_model_parallel_size, 1, 1,
                               c->pipeline_model_parallel_size, c->vpp, c->rank_order, err,
                               sizeof err));
    *ps_out = ps_create(&l, dist_rank());
    return trainer_create(c, *ps_out);
}

static void pipeline_holds_the_expected_number_of_microbatches(void **state) {
    (void)state;
    const char *kinds[3] = {"gpipe", "1f1b", "1f1b"}; /* the last with full recomputation */
    size_t per_1f1b = 0;
    for (int k = 0; k < 3; k++) {
        train_config c;
        equivalence_base_config(&c);
        c.pipeline_model_parallel_size = 4;
        c.pipeline_schedule = kinds[k];
        c.global_batch_size = 16; /* m = 8 micro-batches of 2 */
        if (k == 2) c.recompute_granularity = "full", c.recompute_method = "uniform";
        if (k == 2) c.recompute_num_layers = 1;
        parallel_state *ps;
        trainer *t = make(&c, &ps);
        trainer_step(t, 1);
        int got = pp_executor_peak_microbatches(trainer_executor(t));
        int m = c.num_microbatches, p = 4, r = ps->pp_rank;
        int want = k == 0 ? m : (p - r < m ? p - r : m);
        if (got != want)
            fail_msg("%s rank %d: held %d micro-batches at the peak, expected %d", kinds[k], r, got,
                     want);
        size_t per = pp_executor_activation_bytes_per_microbatch(trainer_executor(t));
        assert_int_equal(pp_executor_peak_activation_bytes(trainer_executor(t)),
                         per * (size_t)want);
        if (k == 1) per_1f1b = per;
        /* one block per stage: its input instead of 20 tensors (the head's logits stay) */
        if (k == 2 && !(per < per_1f1b / 2))
            fail_msg("rank %d: %zu activation bytes per micro-batch with full recomputation, "
                     "%zu without",
                     r, per, per_1f1b);
        trainer_destroy(t);
        ps_destroy(ps);
    }
}

static void zero_on_and_off_agree_and_shard_the_state(void **state) {
    (void)state;
    train_config c;
    equivalence_base_config(&c); /* dp = 4 */
    parallel_state *ps_a, *ps_b;
    trainer *a = make(&c, &ps_a);
    train_config cz = c;
    cz.use_distributed_optimizer = true;
    trainer *b = make(&cz, &ps_b);
    for (int it = 1; it <= 4; it++) {
        trainer_step(a, it);
        trainer_step(b, it);
    }
    const local_model *ma = trainer_model(a), *mb = trainer_model(b);
    assert_int_equal(ma->numel, mb->numel);
    double worst = max_rel_diff(mb->params, ma->params, ma->numel);
    if (dist_rank() == 0)
        printf("  ZeRO on vs off after 4 steps: max relative difference %.2e\n", worst);
    assert_true(worst <= 1e-6);
    /* state bytes: m and v of the shard = unsharded / dp, up to the padding */
    const zero_ranges *r = distopt_ranges(trainer_optimizer(b));
    size_t unsharded = distopt_state_bytes(trainer_optimizer(a));
    size_t sharded = distopt_state_bytes(trainer_optimizer(b));
    assert_int_equal(sharded, 2 * r->shard_numel * sizeof(float));
    assert_true(sharded * 4 >= unsharded);
    assert_true(sharded * 4 - unsharded <= 2 * (r->padded_numel - r->numel) * sizeof(float));
    trainer_destroy(a);
    trainer_destroy(b);
    ps_destroy(ps_a);
    ps_destroy(ps_b);
}

/* Parameters after 3 bf16 steps of layout c (a copy; the trainer is gone when it returns). */
static float *bf16_params(train_config c, size_t *n) {
    c.bf16 = true;
    c.ddp_bucket_size = 3000; /* many buckets, most reduced during the backward */
    parallel_state *ps;
    trainer *t = make(&c, &ps);
    for (int it = 1; it <= 3; it++) trainer_step(t, it);
    const local_model *m = trainer_model(t);
    *n = m->numel;
    float *p = malloc(m->numel * sizeof(float));
    memcpy(p, m->params, m->numel * sizeof(float));
    trainer_destroy(t);
    ps_destroy(ps);
    return p;
}

static void overlap_flags_in_bf16_give_the_blocking_steps_parameters(void **state) {
    (void)state;
    train_config c;
    equivalence_base_config(&c);
    const struct {
        int tp, pp;
        bool zero, params;
    } cases[] = {{2, 1, true, true}, {1, 2, false, false}}; /* TP2×DP2 ZeRO; PP2×DP2 tied wte */
    for (int k = 0; k < 2; k++) {
        train_config a = c;
        a.tensor_model_parallel_size = cases[k].tp;
        a.pipeline_model_parallel_size = cases[k].pp;
        a.use_distributed_optimizer = cases[k].zero;
        train_config b = a;
        b.overlap_grad_reduce = true;
        b.overlap_param_gather = cases[k].params;
        size_t na, nb;
        float *pa = bf16_params(a, &na), *pb = bf16_params(b, &nb);
        assert_int_equal(na, nb);
        double worst = max_rel_diff(pb, pa, na);
        if (dist_rank() == 0)
            printf("  bf16 tp%d pp%d dp2%s: overlapped vs blocking, max relative difference %.2e\n",
                   cases[k].tp, cases[k].pp, cases[k].zero ? " zero" : "", worst);
        assert_true(worst <= 1e-6);
        free(pa);
        free(pb);
    }
}

/* More gradient buckets than the communication stream's tags (issue 31: over 4,096 buckets with
 * the overlap flags died on the stream's fixed queue): ZeRO with both flags, tiny buckets, the
 * parameters of the blocking step (bf16: each bucket rounded the same way). */
static void more_buckets_than_stream_tags_overlap_like_blocking(void **state) {
    (void)state;
    train_config c;
    equivalence_base_config(&c);
    c.tensor_model_parallel_size = 2;
    c.use_distributed_optimizer = true;
    c.bf16 = true;
    c.ddp_bucket_size = 2;
    train_config o = c;
    o.overlap_grad_reduce = o.overlap_param_gather = true;
    parallel_state *ps_a, *ps_b;
    trainer *a = make(&c, &ps_a), *b = make(&o, &ps_b);
    const int buckets = distopt_ranges(trainer_optimizer(b))->n_buckets;
    if (dist_rank() == 0) printf("  overlap with %d gradient buckets\n", buckets);
    assert_true(buckets > COMM_STREAM_TAGS);
    for (int it = 1; it <= 2; it++) {
        trainer_step(a, it);
        trainer_step(b, it);
    }
    const local_model *ma = trainer_model(a), *mb = trainer_model(b);
    assert_true(max_rel_diff(mb->params, ma->params, ma->numel) <= 1e-6);
    trainer_destroy(a);
    trainer_destroy(b);
    ps_destroy(ps_a);
    ps_destroy(ps_b);
}

static void recomputation_in_bf16_changes_no_bit(void **state) {
    (void)state;
    train_config c;
    equivalence_base_config(&c);
    const struct {
        int tp, pp;
        const char *schedule, *granularity, *method;
        bool zero, sp;
    } cases[] = {{2, 2, "zb-h1", "full", "uniform", false, false}, /* chunks of 2: one group */
                 {1, 2, "1f1b", "selective", NULL, true, false},   /* PP2 × DP2 ZeRO */
                 {2, 2, "zb-h1", "full", "uniform", false, true}}; /* the gathers redone */
    for (int k = 0; k < 3; k++) {
        train_config a = c;
        a.tensor_model_parallel_size = cases[k].tp;
        a.pipeline_model_parallel_size = cases[k].pp;
        a.pipeline_schedule = cases[k].schedule;
        a.use_distributed_optimizer = cases[k].zero;
        a.sequence_parallel = cases[k].sp;
        train_config b = a;
        b.recompute_granularity = cases[k].granularity;
        b.recompute_method = cases[k].method;
        b.recompute_num_layers = cases[k].method ? 2 : 0;
        size_t na, nb;
        float *pa = bf16_params(a, &na), *pb = bf16_params(b, &nb);
        assert_int_equal(na, nb);
        if (memcmp(pa, pb, na * sizeof(float)) != 0)
            fail_msg("bf16 tp%d pp%d %s%s, %s recomputation: parameters differ from no "
                     "recomputation (rank %d)",
                     cases[k].tp, cases[k].pp, cases[k].schedule, cases[k].sp ? " sp" : "",
                     cases[k].granularity, dist_rank());
        free(pa);
        free(pb);
    }
}

/* Activation bytes per micro-batch at tp = t (pp 1, dp 4/t), with or without sequence
 * parallelism, as the executor lays them out. */
static size_t activation_bytes(int t, bool sp) {
    train_config c;
    equivalence_base_config(&c);
    c.tensor_model_parallel_size = t;
    c.sequence_parallel = sp;
    parallel_state *ps;
    trainer *tr = make(&c, &ps);
    size_t bytes = pp_executor_activation_bytes_per_microbatch(trainer_executor(tr));
    trainer_destroy(tr);
    ps_destroy(ps);
    return bytes;
}

/* Korthikanti et al.: TP alone keeps sbh(10 + 24/t + 5as/(ht)) per layer, the replicated part
 * whole; with SP (sbh/t)(34 + 5as/h), everything over t. Here: at t = 2 and 4 the whole
 * micro-batch's bytes are the serial ones over t, up to what is per position and not cut
 * (tokens, targets, per-position losses and loss statistics: 6 values per position, each
 * buffer rounded up to 16), while TP alone stays above by the replicated part. */
static void sequence_parallelism_divides_the_activations_by_t(void **state) {
    (void)state;
    train_config c;
    equivalence_base_config(&c);
    const size_t N = (size_t)c.micro_batch_size * (size_t)c.seq_length, uncut = 6 * (N + 16) * 4;
    const size_t serial = activation_bytes(1, false);
    assert_int_equal(activation_bytes(1, true), serial); /* tp 1: sequence parallelism is off */
    for (int t = 2; t <= 4; t *= 2) {
        const size_t tp = activation_bytes(t, false), sp = activation_bytes(t, true);
        if (dist_rank() == 0)
            printf("  activations per micro-batch: serial %zu B; tp %d: %zu B, with sequence "
                   "parallelism %zu B (serial / %d = %zu B)\n",
                   serial, t, tp, sp, t, serial / (size_t)t);
        if (!(sp >= serial / (size_t)t && sp <= serial / (size_t)t + uncut && tp > sp + uncut))
            fail_msg("tp %d: %zu activation bytes with sequence parallelism, %zu without; serial "
                     "%zu over %d is %zu (+ at most %zu not cut)",
                     t, sp, tp, serial, t, serial / (size_t)t, uncut);
    }
}

/* bf16: sequence parallelism changes only the order of some sums (LayerNorm gradients: two
 * partial sums rounded to bf16, then added), so it trains like plain TP: the same losses to
 * 1e-3 and parameters to well within one bf16 step (2^-8) of the largest weight. */
static void sequence_parallelism_in_bf16_trains_like_tensor_parallelism(void **state) {
    (void)state;
    train_config c;
    equivalence_base_config(&c);
    c.tensor_model_parallel_size = 2;
    c.pipeline_model_parallel_size = 2;
    c.pipeline_schedule = "zb-h1";
    train_config s = c;
    s.sequence_parallel = true;
    size_t na, nb;
    float *pa = bf16_params(c, &na), *pb = bf16_params(s, &nb);
    assert_int_equal(na, nb);
    double worst = max_rel_diff(pb, pa, na);
    if (dist_rank() == 0)
        printf("  bf16 tp2 pp2 zb-h1: sequence parallel vs not, max relative difference %.2e\n",
               worst);
    assert_true(worst <= 1e-3); /* bf16 keeps 8 bits: its step is 4e-3 of a weight */
    free(pa);
    free(pb);
}

/* Serial losses over `steps` with a precision flag. */
static void losses(int prec, int steps, float *out) {
    train_config c;
    equivalence_base_config(&c);
    c.hidden_size = 64;
    c.seq_length = 32;
    c.lr = 3e-3f;
    c.lr_warmup_iters = 10;
    c.train_iters = steps;
    c.bf16 = prec == 1;
    c.fp16 = prec == 2;
    char err[512];
    assert_true(train_config_check(&c, 1, err, sizeof err));
    trainer *t = trainer_create(&c, NULL);
    for (int it = 1; it <= steps; it++) out[it - 1] = trainer_step(t, it).loss;
    trainer_destroy(t);
}

static void bf16_and_fp16_train_close_to_fp32(void **state) {
    (void)state;
    enum { N = 60 };
    float l32[N], lbf[N], lfp[N];
    losses(0, N, l32);
    losses(1, N, lbf);
    losses(2, N, lfp);
    if (dist_rank() == 0)
        printf("  loss after %d steps: fp32 %.4f, bf16 %.4f, fp16 %.4f (start %.4f)\n", N,
               l32[N - 1], lbf[N - 1], lfp[N - 1], l32[0]);
    /* all three learn, and 16-bit stays within 3% of fp32 (the tolerance we state) */
    assert_true(lbf[N - 1] < lbf[0] - 1.5f);
    assert_true(lfp[N - 1] < lfp[0] - 1.5f);
    assert_true(fabsf(lbf[N - 1] - l32[N - 1]) <= 0.03f * l32[N - 1]);
    assert_true(fabsf(lfp[N - 1] - l32[N - 1]) <= 0.03f * l32[N - 1]);
}

static void fp16_loss_scaling_recovers_from_an_overflow(void **state) {
    (void)state;
    train_config c;
    equivalence_base_config(&c);
    c.fp16 = true;
    c.train_iters = 12;
    parallel_state *ps;
    trainer *t = make(&c, &ps); /* dp = 4: every rank must agree to skip */
    dist_optimizer *o = trainer_optimizer(t);
    float scale0 = distopt_loss_scale(o);
    float first = 0, last = 0;
    int skipped = 0;
    for (int it = 1; it <= 12; it++) {
        if ((it == 4 || it == 6) && dist_rank() == 1)
            distopt_inject_overflow(o); /* one rank sees inf */
        step_result r = trainer_step(t, it);
        if (it == 1) first = r.loss;
        last = r.loss;
        skipped += r.skipped;
        if (it == 4 || it == 6) assert_true(r.skipped);
    }
    assert_int_equal(skipped, 2);
    /* hysteresis 2: the second overflow halves the scale */
    assert_true(distopt_loss_scale(o) == scale0 * 0.5f);
    assert_true(last < first);
    trainer_destroy(t);
    ps_destroy(ps);
}

static void evaluation_gives_the_serial_loss_on_any_layout(void **state) {
    (void)state;
    train_config c;
    equivalence_base_config(&c);
    char err[512];
    assert_true(train_config_check(&c, 1, err, sizeof err));
    trainer *s = trainer_create(&c, NULL);
    trainer_step(s, 1);
    float want = trainer_evaluate(s, 2, 1);
    /* tp, pp, layers per chunk, sequence parallelism */
    const int layouts[4][4] = {{1, 4, 0, 0}, {2, 2, 0, 0}, {1, 2, 1, 0}, {2, 2, 0, 1}};
    for (int k = 0; k < 4; k++) {
        train_config p = c;
        p.tensor_model_parallel_size = layouts[k][0];
        p.pipeline_model_parallel_size = layouts[k][1];
        p.num_layers_per_virtual_pipeline_stage = layouts[k][2];
        p.sequence_parallel = layouts[k][3];
        parallel_state *ps;
        trainer *t = make(&p, &ps);
        trainer_step(t, 1);
        float got = trainer_evaluate(t, 2, 1);
        if (fabsf(got - want) > 1e-5f * want)
            fail_msg("tp%d pp%d%s: evaluation loss %.9g, serial %.9g", layouts[k][0], layouts[k][1],
                     layouts[k][3] ? " sp" : "", got, want);
        trainer_destroy(t);
        ps_destroy(ps);
    }
    trainer_destroy(s);
}

static const char *const k_strategy[4] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};

static void zero3_changes_no_bit_of_zero2_in_bf16(void **state) {
    (void)state;
    train_config c;
    equivalence_base_config(&c);
    const int layouts[3][2] = {{1, 2}, {2, 1}, {1, 1}}; /* PP2 × DP2 (tied wte), TP2 × DP2, DP4 */
    for (int k = 0; k < 3; k++) {
        size_t n[3];
        float *p[3];
        for (int stage = 1; stage <= 3; stage++) {
            train_config a = c;
            a.tensor_model_parallel_size = layouts[k][0];
            a.pipeline_model_parallel_size = layouts[k][1];
            a.data_parallel_sharding_strategy = k_strategy[stage];
            p[stage - 1] = bf16_params(a, &n[stage - 1]);
        }
        assert_int_equal(n[0], n[1]);
        assert_int_equal(n[1], n[2]);
        double worst = max_rel_diff(p[1], p[0], n[0]);
        if (dist_rank() == 0)
            printf("  bf16 tp%d pp%d: ZeRO-3 = ZeRO-2 bit for bit; ZeRO-2 vs ZeRO-1 max relative "
                   "difference %.2e\n",
                   layouts[k][0], layouts[k][1], worst);
        if (memcmp(p[1], p[2], n[1] * sizeof(float)) != 0)
            fail_msg("bf16 tp%d pp%d: ZeRO-3's parameters differ from ZeRO-2's (rank %d)",
                     layouts[k][0], layouts[k][1], dist_rank());
        assert_true(worst <= 2e-2); /* per micro-batch rounding: a few bf16 steps (2^-8) */
        for (int i = 0; i < 3; i++) free(p[i]);
    }
}

/* One strategy's bytes: what the optimizer says it holds, and the device's count of what is
 * allocated after set-up and after a step (every rank's; the test compares them). */
typedef struct {
    distopt_memory held;
    size_t total, created, stepped, psi;
} held_row;

static held_row measure(train_config c, int stage) {
    c.data_parallel_sharding_strategy = k_strategy[stage];
    const size_t base = device_bytes_in_use();
    parallel_state *ps;
    trainer *t = make(&c, &ps);
    held_row r = {.created = device_bytes_in_use() - base};
    trainer_step(t, 1);
    r.stepped = device_bytes_in_use() - base;
    dist_optimizer *o = trainer_optimizer(t);
    r.held = distopt_memory_held(o);
    r.total = r.held.params + r.held.grads + r.held.master + r.held.adam + r.held.work;
    const local_model *lm = trainer_model_held(t);
    r.psi = lm->numel;
    assert_true((lm->grads == NULL) == (stage >= 2)); /* the buffer is gone, not just unused */
    assert_true((lm->params == NULL) == (stage == 3));
    trainer_destroy(t);
    ps_destroy(ps);
    return r;
}

static void sharding_strategies_free_what_they_shard(void **state) {
    (void)state;
    char err[256];
    if (!device_init(DEVICE_CPU_GUARDED, -1, err, sizeof err)) fail_msg("%s", err);
    for (int k = 0; k < 4; k++) {
        train_config c;
        equivalence_base_config(&c);
        c.pipeline_model_parallel_size = k < 2 ? 1 : 2; /* dp 4, then dp 2 (pp 2) */
        c.bf16 = k % 2 == 1;
        held_row r[4];
        for (int stage = 0; stage < 4; stage++) r[stage] = measure(c, stage);
        for (int stage = 0; stage < 4; stage++) {
            if (dist_rank() == 0)
                printf("  dp %d %s %-18s psi %6zu: params %7zu grads %7zu master %7zu adam %7zu "
                       "work %6zu = %7zu B (device: +%zu after set-up)\n",
                       c.pipeline_model_parallel_size == 1 ? 4 : 2, c.bf16 ? "bf16" : "fp32",
                       k_strategy[stage], r[stage].psi, r[stage].held.params, r[stage].held.grads,
                       r[stage].held.master, r[stage].held.adam, r[stage].held.work, r[stage].total,
                       r[stage].created);
            /* what the strategies hold differs only by what they say they hold */
            const long long said = (long long)r[stage].total - (long long)r[0].total;
            assert_int_equal((long long)r[stage].created - (long long)r[0].created, said);
            assert_int_equal((long long)r[stage].stepped - (long long)r[0].stepped, said);
        }
        /* sharded: S, one Adam moment's size, which is Ψ/dp and the units' padding (< 5%) */
        const size_t dp = c.pipeline_model_parallel_size == 1 ? 4 : 2;
        assert_int_equal(r[2].held.grads, r[2].held.adam / 2);
        assert_int_equal(r[3].held.params, r[3].held.adam / 2);
        assert_true(r[2].held.grads * dp * 20 <= r[0].held.grads * 21);
        /* the state shrinks stage by stage; the work buffers (a bucket, ZeRO-3's two gathers:
         * each as large as the largest unit) are what a model this small pays for it */
        for (int stage = 1; stage < 4; stage++)
            assert_true(r[stage].total - r[stage].held.work <
                        r[stage - 1].total - r[stage - 1].held.work);
    }
    device_shutdown();
}

/* The whole parameters of t (a copy), for comparisons across trainers. */
static float *params_copy(trainer *t, size_t *n) {
    const local_model *m = trainer_model(t);
    *n = m->numel;
    float *p = malloc(m->numel * sizeof(float));
    memcpy(p, m->params, m->numel * sizeof(float));
    return p;
}

static void zero2_and_zero3_resume_changing_no_bit(void **state) {
    (void)state;
    char dir[4096] = "";
    if (dist_rank() == 0) snprintf(dir, sizeof dir, "%s", test_tmpdir("zero23_resume"));
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    const struct {
        int pp;
        const char *strategy;
        bool bf16;
    } cases[] = {{2, "optim_grads_params", false}, {1, "optim_grads", true}};
    for (int k = 0; k < 2; k++) {
        train_config c;
        equivalence_base_config(&c);
        c.train_iters = 6;
        c.pipeline_model_parallel_size = cases[k].pp;
        c.data_parallel_sharding_strategy = cases[k].strategy;
        c.bf16 = cases[k].bf16;
        char ck[4200];
        snprintf(ck, sizeof ck, "%s/ck%d", dir, k);
        parallel_state *ps;
        trainer *t = make(&c, &ps); /* uninterrupted */
        for (int it = 1; it <= 6; it++) trainer_step(t, it);
        size_t n, n2;
        float *want = params_copy(t, &n);
        trainer_destroy(t);
        ps_destroy(ps);
        const ckpt_layout l = trainer_ckpt_layout(&c);
        t = make(&c, &ps); /* 3 steps, saved */
        for (int it = 1; it <= 3; it++) trainer_step(t, it);
        checkpoint_save(ck, 3, &l, trainer_model(t), trainer_optimizer(t), ps->world, dist_rank());
        trainer_destroy(t);
        ps_destroy(ps);
        t = make(&c, &ps); /* loaded, 3 more */
        assert_int_equal(
            checkpoint_load(ck, &l, trainer_model(t), trainer_optimizer(t), dist_rank()), 3);
        distopt_params_loaded(trainer_optimizer(t));
        for (int it = 4; it <= 6; it++) trainer_step(t, it);
        float *got = params_copy(t, &n2);
        assert_int_equal(n, n2);
        if (memcmp(got, want, n * sizeof(float)) != 0)
            fail_msg("pp%d %s%s: resumed parameters differ from the uninterrupted run (rank %d)",
                     cases[k].pp, cases[k].strategy, cases[k].bf16 ? " bf16" : "", dist_rank());
        if (dist_rank() == 0)
            printf("  pp%d %s%s: save at 3, load, 3 more steps: the parameters of 6 steps, bit "
                   "for bit\n",
                   cases[k].pp, cases[k].strategy, cases[k].bf16 ? " bf16" : "");
        free(want);
        free(got);
        trainer_destroy(t);
        ps_destroy(ps);
    }
}

int main(int argc, char **argv) {
    mpi_test_launch(argc, argv, 4);
    dist_init(&argc, &argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pipeline_holds_the_expected_number_of_microbatches),
        cmocka_unit_test(zero_on_and_off_agree_and_shard_the_state),
        cmocka_unit_test(fp16_loss_scaling_recovers_from_an_overflow),
        cmocka_unit_test(bf16_and_fp16_train_close_to_fp32),
        cmocka_unit_test(evaluation_gives_the_serial_loss_on_any_layout),
        cmocka_unit_test(overlap_flags_in_bf16_give_the_blocking_steps_parameters),
        cmocka_unit_test(more_buckets_than_stream_tags_overlap_like_blocking),
        cmocka_unit_test(recomputation_in_bf16_changes_no_bit),
        cmocka_unit_test(sequence_parallelism_divides_the_activations_by_t),
        cmocka_unit_test(sequence_parallelism_in_bf16_trains_like_tensor_parallelism),
        cmocka_unit_test(zero3_changes_no_bit_of_zero2_in_bf16),
        cmocka_unit_test(sharding_strategies_free_what_they_shard),
        cmocka_unit_test(zero2_and_zero3_resume_changing_no_bit),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dist_finalize();
    return rc;
}
