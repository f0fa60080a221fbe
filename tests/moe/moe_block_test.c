/* moe_block_test.c — the MoE layer as a GPT block runs it (src/moe/moe_block.h): which ranks
 * share the switch loss's counts, the loss's weight (dloss · the micro-batch's positions), and
 * the trace label on the layer's messages. argv[1]: the world size (2 under mpirun, the world
 * standing for a tensor-parallel group with sequence parallelism; "0" is a plain run). */
#include <stdlib.h>
#include <string.h>

#include "src/core/rng.h"
#include "src/moe/moe_block.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"
#include "tests/support/testing.h"

static comm_group *g_world;

/* The statistics group, for every way a chunk cuts its sequences (the groups are only compared,
 * never used: any distinct addresses do). */
static void the_counts_are_shared_by_the_ranks_holding_the_other_positions(void **state) {
    (void)state;
    static char tp_, cp_, tp_cp_;
    comm_group *tp = (comm_group *)&tp_, *cp = (comm_group *)&cp_, *tp_cp = (comm_group *)&tp_cp_;
    const moe_config m = {4, 2, 0.01f, 0.0f, 1, 0};
    assert_null(moe_block_make(&m, NULL, tp, false, NULL, NULL, 0).stats); /* whole sequences */
    assert_ptr_equal(moe_block_make(&m, NULL, tp, true, NULL, NULL, 0).stats, tp);   /* SP */
    assert_ptr_equal(moe_block_make(&m, NULL, tp, false, cp, NULL, 0).stats, cp);    /* CP */
    assert_ptr_equal(moe_block_make(&m, NULL, tp, true, cp, tp_cp, 0).stats, tp_cp); /* both */
    assert_int_equal(moe_block_make(&m, NULL, tp, true, cp, tp_cp, 7).layer, 7);
}

static float *fill(size_t n, uint64_t stream, float scale) {
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = scale * (2.0f * rng_uniform(5, stream, i) - 1.0f);
    return x;
}

static int g_labelled, g_other;
static void count_labels(const comm_event *e, void *ctx) {
    (void)ctx;
    const bool ours = e->label && e->layer == 3 &&
                      (!strcmp(e->label, "ep a2a fwd moe") || !strcmp(e->label, "ep a2a bwd moe"));
    if (ours) g_labelled++;
    else g_other++;
}

/* forward and backward are moe_forward and moe_backward with the stats group, and the switch
 * loss's gradient weight dloss · N · (ranks sharing the counts), bit for bit. */
static void forward_and_backward_are_the_layers_with_the_loss_weighed(void **state) {
    (void)state;
    const size_t N = 6, C = 4, E = 4;
    const moe_config m = {(int)E, 2, 0.05f, 0.0f, 1, 0};
    const size_t np = moe_param_floats(C, E, E);
    float *pbuf = fill(np, 1, 0.5f), *in = fill(N * C, 2, 1.0f), *dout = fill(N * C, 3, 1.0f);
    const moe_params p = moe_params_view(&m, pbuf, C);
    const bool shared = comm_size(g_world) > 1;
    comm_group *stats = shared ? g_world : NULL;
    const moe_block b = moe_block_make(&m, NULL, g_world, shared, NULL, NULL, 3);
    assert_ptr_equal(b.stats, stats);
    float *out[2], *dinp[2], *gbuf[2];
    float aux[2];
    const float dloss = 0.125f;
    for (int k = 0; k < 2; k++) {
        out[k] = calloc(N * C, sizeof(float)), dinp[k] = calloc(N * C, sizeof(float));
        gbuf[k] = calloc(np, sizeof(float));
        moe_grads g = moe_grads_view(&m, gbuf[k], C);
        moe_acts *a = moe_acts_create(&m, N, C);
        if (k == 0) {
            g_labelled = g_other = 0;
            comm_set_trace_hook(count_labels, NULL);
            aux[k] = moe_block_forward(&b, &p, a, out[k], in, N, C);
            moe_block_backward(&b, &p, &g, a, dinp[k], dout, in, dloss, N, C);
            comm_set_trace_hook(NULL, NULL);
            assert_int_equal(g_other, 0);
            assert_true(!shared || g_labelled > 0); /* the counts' all-reduce */
        } else {
            const float holders = (float)(stats ? comm_size(stats) : 1);
            aux[k] = moe_forward(&m, NULL, stats, &p, a, out[k], in, N, C);
            moe_backward(&m, NULL, &p, &g, a, dinp[k], dout, in, dloss * (float)N * holders, N, C);
        }
        moe_acts_destroy(a);
    }
    assert_memory_equal(&aux[0], &aux[1], sizeof(float));
    assert_memory_equal(out[0], out[1], N * C * sizeof(float));
    assert_memory_equal(dinp[0], dinp[1], N * C * sizeof(float));
    assert_memory_equal(gbuf[0], gbuf[1], np * sizeof(float));
    for (int k = 0; k < 2; k++) free(out[k]), free(dinp[k]), free(gbuf[k]);
    free(pbuf), free(in), free(dout);
}

int main(int argc, char **argv) {
    const int np = argc > 1 ? atoi(argv[1]) : 0;
    if (np > 0) mpi_test_launch(argc, argv, np);
    dist_init(&argc, &argv);
    g_world = comm_group_world(COMM_MPI);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_counts_are_shared_by_the_ranks_holding_the_other_positions),
        cmocka_unit_test(forward_and_backward_are_the_layers_with_the_loss_weighed),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    comm_group_destroy(g_world);
    dist_finalize();
    return failed;
}
