/* equivalence_test.c — every parallel layout computes what one process computes.
 *
 * Run under mpirun with WORLD ranks (a build-time constant, one binary per world size; WORLD 1
 * is the serial check alone). Each row of the layout matrix (tests/train/equivalence_cases.h:
 * the 3-D rows, then the 5-D ones) trains a few steps serially (on every rank, no
 * communication) and at the layout, and compares every step's loss (rtol 1e-5) and every final
 * parameter element (|diff| <= 1e-5 + 1e-4·|serial|: fp32 reductions in another order, through
 * Adam). Rows with activation recomputation are compared with the serial run without it, and so
 * are rows with sequence parallelism (.sequence_parallel: LayerNorms and residual stream on T/tp
 * positions per rank, pipeline messages of (B, T/tp, C)). The 5-D rows:
 *   - context parallelism (--context-parallel-size): zig-zag positions, ring attention, the
 *     gradients averaged over dp × cp — alone and with TP, PP, DP and ZeRO;
 *   - mixture of experts at expert-parallel sizes 2 and 4 (--expert-model-parallel-size): the
 *     all-to-all dispatch, the experts' gradients summed over the expert-data-parallel group —
 *     against the same MoE model run serially, with TP, PP (split backward too) and CP.
 * Rows with an MoE model compare parameters to 2e-5 + 1e-4·|serial|: an expert's gradient sums
 * only the tokens routed to it, in another grouping (the ep ranks' micro-batches in one
 * product), and where those sums nearly cancel Adam's normalised step turns their last-bit
 * differences into up to 1.2e-5 after 4 steps (measured: 1 element of 81,024 above 1e-5, at tp2
 * cp2 ep2; losses agree to 1e-7).
 * And, serially: an MoE model with one expert and top-1 routing is the dense model (losses to
 * 1e-6 and every shared parameter after training within the same tolerance; the router alone is
 * extra).
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "src/runtime/dist.h"
#include "src/runtime/groups.h"
#include "src/runtime/parallel_state.h"
#include "src/train/trainer.h"
#include "tests/support/testing.h"
#include "tests/train/equivalence.h"
#include "tests/train/equivalence_cases.h"

/* bf16 against the serial bf16 run: the losses (measured 1.9e-5 at ep2) */
#define BF16_LOSS_RTOL 1e-4

#if WORLD > 1
/* A row's parameter tolerance, absolute part: 2e-5 with an MoE model (see above), else 1e-5. */
static double param_atol(const layout_case *lc) { return lc->experts > 0 ? 2e-5 : 1e-5; }

static void every_layout_matches_the_serial_run(void **state) {
    (void)state;
    train_config base;
    equivalence_base_config(&base);
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
        equivalence_check(&base, &k_cases[i], 4, 1e-5, param_atol(&k_cases[i]), 1e-4);
}
#endif

#if WORLD == 2
/* bf16 with ZeRO-1 and expert parallelism (EP2: the experts' fp32 master weights in their own
 * shard over edp, the dense ones in dp's): the same as EP2 without ZeRO, in bf16. Against the
 * serial bf16 run the losses agree; its parameters do not to a tight tolerance at any layout,
 * ZeRO or not (each rank rounds its half of the gradients to bf16 before the sum, the serial
 * run the whole sum: Adam turns the differences into up to a step of lr on small values), so
 * the parameters are compared with the plain EP2 bf16 run at the same layout instead. */
static void bf16_zero_ep2_trains_like_bf16_ep2(void **state) {
    (void)state;
    const int world = dist_world_size(), rank = dist_rank();
    char err[512];
    train_config sc;
    equivalence_base_config(&sc);
    sc.bf16 = true;
    sc.num_experts = 4;
    sc.moe_router_topk = 2;
    sc.moe_aux_loss_coeff = 0.01f;
    const layout_case lc = {.tp = 1, .pp = 1, .schedule = "1f1b", .ep = 2};
    train_config plain, zero;
    equivalence_apply(&sc, &lc, &plain);
    zero = plain;
    zero.use_distributed_optimizer = true;
    if (!train_config_check(&sc, 1, err, sizeof err)) fail_msg("serial: %s", err);
    if (!train_config_check(&plain, world, err, sizeof err)) fail_msg("ep2: %s", err);
    if (!train_config_check(&zero, world, err, sizeof err)) fail_msg("ep2 zero: %s", err);
    pg_layout l;
    assert_true(
        pg_layout_make(&l, world, 1, 1, 2, 1, plain.vpp, plain.rank_order, err, sizeof err));
    parallel_state *ps = ps_create(&l, rank);
    trainer *ts = trainer_create(&sc, NULL), *tp = trainer_create(&plain, ps),
            *tz = trainer_create(&zero, ps);
    double worst_loss = 0.0;
    for (int it = 1; it <= 4; it++) {
        const float ls = trainer_step(ts, it).loss, lp = trainer_step(tp, it).loss;
        const float lz = trainer_step(tz, it).loss;
        const double rel = fabs((double)lz - ls) / fabs((double)ls);
        if (rel > worst_loss) worst_loss = rel;
        if (!(rel <= BF16_LOSS_RTOL))
            fail_msg("step %d: bf16 ep2 zero loss %.9g, serial bf16 %.9g (rel %.3g)", it,
                     (double)lz, (double)ls, rel);
        if (lz != lp)
            fail_msg("step %d: bf16 ep2 zero loss %.9g, without zero %.9g", it, (double)lz,
                     (double)lp);
    }
    const local_model *mp = trainer_model(tp), *mz = trainer_model(tz);
    assert_int_equal(mp->numel, mz->numel);
    size_t differ = 0;
    double worst = 0.0;
    for (size_t k = 0; k < mp->numel; k++) {
        const double d = fabs((double)mp->params[k] - mz->params[k]);
        if (d > worst) worst = d;
        if (d > 0) differ++;
    }
    if (rank == 0)
        printf("  bf16 tp1 pp1 dp2 zero moe-E4-k2 ep2: worst loss rel diff to serial bf16 %.2e; "
               "parameters vs bf16 ep2 without zero: %zu of %zu differ, worst %.2e\n",
               worst_loss, differ, mp->numel, worst);
    if (differ) fail_msg("rank %d: %zu parameters differ from bf16 ep2 without ZeRO", rank, differ);
    trainer_destroy(tz);
    trainer_destroy(tp);
    trainer_destroy(ts);
    ps_destroy(ps);
}
#endif

#if WORLD == 1
/* The tensor of the same kind and layer in another model, or NULL. */
static const gpt_param *twin(const local_model *m, const gpt_param *p) {
    for (int i = 0; i < m->nparams; i++)
        if (m->plist[i]->kind == p->kind && m->plist[i]->layer == p->layer) return m->plist[i];
    return NULL;
}

/* One expert, top-1: every token goes to it with score 1, so the MoE model is the dense one
 * (the same initial values: the experts' tensors are numbered as the dense MLP's). */
static void one_expert_top1_is_the_dense_model(void **state) {
    (void)state;
    char err[512];
    train_config dense;
    equivalence_base_config(&dense);
    train_config moe = dense;
    moe.num_experts = 1;
    moe.moe_router_topk = 1;
    moe.moe_aux_loss_coeff = 0.01f; /* its gradient reaches no weight: softmax over one expert */
    assert_true(train_config_check(&dense, 1, err, sizeof err));
    if (!train_config_check(&moe, 1, err, sizeof err)) fail_msg("%s", err);
    trainer *td = trainer_create(&dense, NULL), *tm = trainer_create(&moe, NULL);
    for (int it = 1; it <= 4; it++) {
        step_result rd = trainer_step(td, it), rm = trainer_step(tm, it);
        const double rel = fabs((double)rd.loss - rm.loss) / fabs((double)rd.loss);
        if (!(rel <= 1e-6))
            fail_msg("step %d: MoE (1 expert, top-1) loss %.9g, dense %.9g (rel %.3g)", it,
                     (double)rm.loss, (double)rd.loss, rel);
        assert_true(rm.moe_tokens != NULL);
        /* every position of the global batch went to the one expert, in every layer */
        for (int l = 0; l < dense.num_layers; l++)
            assert_int_equal(rm.moe_tokens[l], (int64_t)dense.global_batch_size * dense.seq_length);
    }
    const local_model *md = trainer_model(td), *mm = trainer_model(tm);
    double worst = 0.0;
    int routers = 0;
    size_t bad = 0;
    for (int i = 0; i < mm->nparams; i++) {
        const gpt_param *p = mm->plist[i], *q = twin(md, p);
        if (p->kind == GPT_ROUTER_W) {
            routers++;
            continue;
        }
        assert_non_null(q);
        assert_int_equal(p->numel, q->numel);
        for (size_t k = 0; k < p->numel; k++) {
            const double a = mm->params[p->offset + k], b = md->params[q->offset + k];
            if (fabs(a - b) / (fabs(b) + 1e-3) > worst) worst = fabs(a - b) / (fabs(b) + 1e-3);
            /* the equivalence tolerance: the same sums, another order (the experts' weight
             * gradients are computed into their own buffer and then added) */
            if (!(fabs(a - b) <= 1e-5 + 1e-4 * fabs(b))) bad++;
        }
    }
    assert_int_equal(routers, dense.num_layers);
    printf("  MoE 1 expert top-1 vs dense: 4 steps, worst param diff %.2e\n", worst);
    assert_int_equal(bad, 0);
    trainer_destroy(td);
    trainer_destroy(tm);
}
#endif

int main(int argc, char **argv) {
    if (WORLD > 1) mpi_test_launch(argc, argv, WORLD);
    dist_init(&argc, &argv);
#if WORLD == 1
    const struct CMUnitTest tests[] = {cmocka_unit_test(one_expert_top1_is_the_dense_model)};
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_layout_matches_the_serial_run),
#if WORLD == 2
        cmocka_unit_test(bf16_zero_ep2_trains_like_bf16_ep2),
#endif
    };
#endif
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dist_finalize();
    return rc;
}
