/* traffic_5d_test.c — the bytes context and expert parallelism move in a training step are the
 * formulas' bytes, exactly.
 *
 * Run under mpirun with 4 ranks. After one step of a real training run, the communication
 * counters of the cp and ep groups (src/runtime/comm.h) are compared with:
 *   ring attention, per layer and micro-batch, this rank's sends on cp (src/cp/ring_attention.h):
 *     forward 2·(cp−1)·X, backward (4·(cp−1)+2)·X, X = B·(T/cp)·(NH/tp)·HS·4 bytes;
 *   MoE token dispatch, per layer, this rank's all-to-all sends on ep to OTHER ranks
 *   (src/moe/moe_layer.h), summed over the step's m micro-batches:
 *     m·(P−1)·El·8 (the counts)  +  2 · 4C · (pairs sent to other ranks' experts + rows received
 *     from other ranks), the 2 for forward and backward (tokens out and results back each);
 *   the pairs are what the router chose (the executor's per-expert counts of this rank, and of
 *   every other ep rank for what arrives), plus the optimizer's all-gather of the experts' share
 *   of the gradient norm on ep (one double per rank: P·8 bytes as comm.h counts a gather).
 * Each case prints its table: the closing note of issue 20 quotes it.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/cp/ring_attention.h"
#include "src/pp/executor.h"
#include "src/runtime/dist.h"
#include "src/runtime/parallel_state.h"
#include "src/train/trainer.h"
#include "tests/support/testing.h"
#include "tests/train/equivalence.h"

static void one_case(int tp, int cp, int ep, int experts) {
    const int world = dist_world_size(), rank = dist_rank();
    char err[512];
    train_config c;
    equivalence_base_config(&c);
    c.tensor_model_parallel_size = tp;
    c.context_parallel_size = cp;
    c.expert_model_parallel_size = ep;
    c.num_experts = experts;
    c.moe_aux_loss_coeff = experts > 0 ? 0.01f : 0.0f; /* a dense model takes no MoE setting */
    if (!train_config_check(&c, world, err, sizeof err)) fail_msg("%s", err);
    pg_layout l;
    assert_true(pg_layout_make(&l, world, tp, cp, ep, c.pipeline_model_parallel_size, c.vpp,
                               c.rank_order, err, sizeof err));
    parallel_state *ps = ps_create(&l, rank);
    trainer *t = trainer_create(&c, ps);
    comm_reset_counters(ps->cp);
    comm_reset_counters(ps->ep);
    trainer_step(t, 1);

    const size_t B = (size_t)c.micro_batch_size, Tl = (size_t)(c.seq_length / cp);
    const size_t NHl = (size_t)(c.num_attention_heads / tp);
    const size_t HS = (size_t)(c.hidden_size / c.num_attention_heads);
    const size_t L = (size_t)c.num_layers, m = (size_t)c.num_microbatches;
    const size_t C = (size_t)c.hidden_size;
    const size_t ring_f = ring_attention_forward_bytes(B, Tl, NHl, HS, cp);
    const size_t ring_b = ring_attention_backward_bytes(B, Tl, NHl, HS, cp);
    const size_t ring_want = L * m * (ring_f + ring_b), ring_got = comm_bytes_sent(ps->cp);
    if (rank == 0)
        printf("  tp%d cp%d ep%d E%d: ring attention per layer and micro-batch: forward %zu B, "
               "backward %zu B (X = %zu B); step: %zu B formula, %zu B counted\n",
               tp, cp, ep, experts, ring_f, ring_b, B * Tl * NHl * HS * 4, ring_want, ring_got);
    assert_int_equal(ring_got, ring_want);

    if (ep > 1) { /* the all-to-alls: from what the router chose on every ep rank */
        const size_t E = (size_t)experts, El = E / (size_t)ep, P = (size_t)ep;
        const size_t got = comm_bytes_collective(ps->ep); /* before the test's own gather */
        const int64_t *mine;
        pp_executor_moe_load(trainer_executor(t), &mine, NULL);
        int64_t *all = malloc(sizeof(int64_t) * L * E * P);
        comm_all_gather(ps->ep, mine, all, L * E, COMM_INT64);
        const size_t me = (size_t)ps->ep_rank;
        /* the gradient norm's experts' share: one double per rank, all-gathered (comm.h counts
         * an all-gather's whole receive buffer) */
        size_t want = 8 * P;
        for (size_t layer = 0; layer < L; layer++) {
            int64_t out = 0, in = 0;
            for (size_t e = 0; e < E; e++) {
                const bool here = e / El == me;
                if (!here) out += mine[layer * E + e];
                for (size_t j = 0; j < P && here; j++)
                    if (j != me) in += all[(j * L + layer) * E + e];
            }
            const size_t bytes = m * (P - 1) * El * 8 + 2 * 4 * C * (size_t)(out + in);
            if (rank == 0)
                printf("    layer %zu: %lld pairs to other ranks' experts, %lld rows from other "
                       "ranks: %zu B of all-to-all (counts %zu B)\n",
                       layer, (long long)out, (long long)in, bytes, m * (P - 1) * El * 8);
            want += bytes;
        }
        if (rank == 0) printf("    step: %zu B formula, %zu B counted on ep\n", want, got);
        assert_int_equal(got, want);
        free(all);
    }
    trainer_destroy(t);
    ps_destroy(ps);
}

static void ring_bytes_at_tp2_cp2(void **state) {
    (void)state;
    one_case(2, 2, 1, 0);
}

static void ring_and_all_to_all_bytes_at_cp2_ep2(void **state) {
    (void)state;
    one_case(1, 2, 2, 4);
}

static void all_to_all_bytes_at_ep4(void **state) {
    (void)state;
    one_case(1, 1, 4, 8);
}

int main(int argc, char **argv) {
    mpi_test_launch(argc, argv, 4);
    dist_init(&argc, &argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ring_bytes_at_tp2_cp2),
        cmocka_unit_test(ring_and_all_to_all_bytes_at_cp2_ep2),
        cmocka_unit_test(all_to_all_bytes_at_ep4),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dist_finalize();
    return rc;
}
