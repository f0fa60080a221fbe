/* attention_test.c — attention as a block calls it (src/cp/attention.h): without a cp group it
 * is the device's local attention, bit for bit; with one it is ring attention, bit for bit,
 * every message labelled for the trace with the block's layer; and what each keeps for the
 * backward. argv[1]: the world size (2 under mpirun; "0" is a plain run, local only). */
#include <stdlib.h>
#include <string.h>

#include "src/core/rng.h"
#include "src/cp/attention.h"
#include "src/cp/ring_attention.h"
#include "src/device/device.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"
#include "tests/support/testing.h"

static comm_group *g_world;

static float *fill(size_t n, uint64_t stream) {
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = 2.0f * rng_uniform(99, stream, i) - 1.0f;
    return x;
}

static void kept_floats_are_the_probabilities_locally_and_the_lse_in_a_ring(void **state) {
    (void)state;
    assert_int_equal(cp_attention_kept_floats(2, 8, 3, 1), 2 * 3 * 8 * 8);
    assert_int_equal(cp_attention_kept_floats(2, 8, 3, 0), 2 * 3 * 8 * 8); /* never set: local */
    assert_int_equal(cp_attention_kept_floats(2, 8, 3, 4), 2 * 3 * 8);
}

/* One call of each path on the same inputs, against the function it stands for. */
typedef struct {
    size_t B, T, NH, HS, n_qkv, n_out, n_kept;
    float *qkv, *dout, *out, *kept, *dqkv, *ref_out, *ref_kept, *ref_dqkv;
} case_t;

static case_t case_new(size_t B, size_t T, size_t NH, size_t HS, size_t kept) {
    case_t k = {.B = B, .T = T, .NH = NH, .HS = HS};
    k.n_qkv = B * T * 3 * NH * HS, k.n_out = B * T * NH * HS, k.n_kept = kept;
    k.qkv = fill(k.n_qkv, 1);
    k.dout = fill(k.n_out, 2);
    k.out = calloc(k.n_out, sizeof(float)), k.ref_out = calloc(k.n_out, sizeof(float));
    k.kept = calloc(kept, sizeof(float)), k.ref_kept = calloc(kept, sizeof(float));
    k.dqkv = calloc(k.n_qkv, sizeof(float)), k.ref_dqkv = calloc(k.n_qkv, sizeof(float));
    return k;
}

static void case_expect_same(const case_t *k) {
    assert_memory_equal(k->out, k->ref_out, k->n_out * sizeof(float));
    assert_memory_equal(k->kept, k->ref_kept, k->n_kept * sizeof(float));
    assert_memory_equal(k->dqkv, k->ref_dqkv, k->n_qkv * sizeof(float));
    float *all[] = {k->qkv,  k->dout,    k->out,      k->kept,
                    k->dqkv, k->ref_out, k->ref_kept, k->ref_dqkv};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

static void without_a_group_it_is_the_local_attention(void **state) {
    (void)state;
    const size_t B = 2, T = 8, NH = 2, HS = 4;
    case_t k = case_new(B, T, NH, HS, cp_attention_kept_floats(B, T, NH, 1));
    float *scratch = calloc(dev_attention_scratch_floats(T, NH), sizeof(float));
    const cp_attention a = {NULL, B, T, NH, HS, 3};
    cp_attention_forward(&a, k.out, k.kept, k.qkv);
    cp_attention_backward(&a, k.dqkv, k.dout, k.qkv, k.out, k.kept, scratch);
    dev_attention_forward(k.ref_out, k.ref_kept, k.qkv, B, T, NH, HS);
    dev_attention_backward(k.ref_dqkv, k.dout, k.qkv, k.ref_kept, scratch, B, T, NH, HS);
    case_expect_same(&k);
    free(scratch);
}

/* The labels of the messages the hook saw, and how many carried another one. */
static int g_labelled[2], g_other;
static void count_labels(const comm_event *e, void *ctx) {
    (void)ctx;
    const int fwd = e->label && strcmp(e->label, "cp ring fwd attn") == 0;
    const int bwd = e->label && strcmp(e->label, "cp ring bwd attn") == 0;
    if ((fwd || bwd) && e->layer == 5) g_labelled[bwd]++;
    else g_other++;
}

static void with_a_group_it_is_the_ring_labelled(void **state) {
    (void)state;
    const int P = comm_size(g_world);
    const size_t B = 2, T = 8, NH = 2, HS = 4; /* this rank's T positions */
    case_t k = case_new(B, T, NH, HS, cp_attention_kept_floats(B, T, NH, P));
    const cp_attention a = {g_world, B, T, NH, HS, 5};
    g_labelled[0] = g_labelled[1] = g_other = 0;
    comm_set_trace_hook(count_labels, NULL);
    cp_attention_forward(&a, k.out, k.kept, k.qkv);
    cp_attention_backward(&a, k.dqkv, k.dout, k.qkv, k.out, k.kept, NULL);
    comm_set_trace_hook(NULL, NULL);
    assert_true(g_labelled[0] > 0 && g_labelled[1] > 0);
    assert_int_equal(g_other, 0);
    ring_attention_forward(g_world, k.ref_out, k.ref_kept, k.qkv, B, T, NH, HS);
    ring_attention_backward(g_world, k.ref_dqkv, k.dout, k.qkv, k.ref_out, k.ref_kept, B, T, NH,
                            HS);
    case_expect_same(&k);
}

int main(int argc, char **argv) {
    const int np = argc > 1 ? atoi(argv[1]) : 0;
    if (np > 0) mpi_test_launch(argc, argv, np);
    dist_init(&argc, &argv);
    g_world = comm_group_world(COMM_MPI);
    const struct CMUnitTest local[] = {
        cmocka_unit_test(kept_floats_are_the_probabilities_locally_and_the_lse_in_a_ring),
        cmocka_unit_test(without_a_group_it_is_the_local_attention),
    };
    const struct CMUnitTest ring[] = {
        cmocka_unit_test(with_a_group_it_is_the_ring_labelled),
    };
    int failed = cmocka_run_group_tests(local, NULL, NULL);
    if (np > 1) failed += cmocka_run_group_tests(ring, NULL, NULL);
    comm_group_destroy(g_world);
    dist_finalize();
    return failed;
}
