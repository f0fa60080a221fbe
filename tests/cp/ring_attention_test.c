/* ring_attention_test.c — ring attention (src/cp/ring_attention.h) against the serial causal
 * attention of kernels/ops.h, at the world size given as argv[1] (one Bazel target per size:
 * 1, 2, 4 under mpirun; "0" is a plain run without mpirun). The cp group is the whole world.
 *
 * Every rank builds the same full (B, T, ·) inputs from a counter-based RNG, runs the serial
 * forward and backward on the whole sequence, takes its zig-zag rows of the result, and
 * compares them with what the ring computed from its rows alone. The bytes each call sends are
 * checked against the traffic formulas, and lse against a direct log-sum-exp in double. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "src/core/rng.h"
#include "src/cp/ring_attention.h"
#include "src/cp/zigzag.h"
#include "src/device/device_memory.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"
#include "tests/support/testing.h"

#define ATOL 1e-6
#define RTOL 1e-5

static comm_group *g_cp;
static int R(void) { return comm_rank(g_cp); }
static int P(void) { return comm_size(g_cp); }

/* x (n) = uniform in [-1, 1) for (stream, index); the same on every rank. */
static float *fill(size_t n, uint64_t stream) {
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = 2.0f * rng_uniform(1234, stream, i) - 1.0f;
    return x;
}

/* The serial run on the whole sequence: out (B,T,CH), dqkv (B,T,3CH) for inputs qkv, dout. */
typedef struct {
    size_t B, T, NH, HS, CH;
    float *qkv, *dout; /* (B,T,3CH), (B,T,CH) */
    float *out, *dqkv; /* the reference results */
} problem;

static problem problem_new(size_t B, size_t T, size_t NH, size_t HS) {
    problem p = {.B = B, .T = T, .NH = NH, .HS = HS, .CH = NH * HS};
    p.qkv = fill(B * T * 3 * p.CH, 1);
    p.dout = fill(B * T * p.CH, 2);
    p.out = malloc(B * T * p.CH * sizeof(float));
    p.dqkv = calloc(B * T * 3 * p.CH, sizeof(float));
    float *att = malloc(B * NH * T * T * sizeof(float));
    float *scratch = malloc(T * T * sizeof(float));
    attention_forward(p.out, att, p.qkv, B, T, NH, HS);
    attention_backward(p.dqkv, p.dout, p.qkv, att, scratch, B, T, NH, HS);
    free(att);
    free(scratch);
    return p;
}

static void problem_free(problem *p) {
    free(p->qkv);
    free(p->dout);
    free(p->out);
    free(p->dqkv);
}

/* log Σ_{j <= i} exp(q_i · k_j / sqrt(HS)) for query position i of (b, h), in double. */
static double direct_lse(const problem *p, size_t b, size_t h, size_t i) {
    const size_t ld = 3 * p->CH;
    const float *q = p->qkv + (b * p->T + i) * ld + h * p->HS;
    double s[512], mx = -INFINITY, sum = 0.0;
    for (size_t j = 0; j <= i; j++) {
        const float *k = p->qkv + (b * p->T + j) * ld + p->CH + h * p->HS;
        double d = 0.0;
        for (size_t e = 0; e < p->HS; e++) d += (double)q[e] * k[e];
        s[j] = d / sqrt((double)p->HS);
        mx = s[j] > mx ? s[j] : mx;
    }
    for (size_t j = 0; j <= i; j++) sum += exp(s[j] - mx);
    return mx + log(sum);
}

/* This rank's forward and backward on its zig-zag rows, compared with the serial run; the
 * bytes sent by each call must match the formulas. */
static void ring_matches_serial(size_t B, size_t T, size_t NH, size_t HS) {
    const int r = R(), cp = P();
    problem p = problem_new(B, T, NH, HS);
    const size_t CH = p.CH, Tl = T / (size_t)cp;
    float *qkv = malloc(B * Tl * 3 * CH * sizeof(float));
    float *dout = malloc(B * Tl * CH * sizeof(float));
    float *want_out = malloc(B * Tl * CH * sizeof(float));
    float *want_dqkv = malloc(B * Tl * 3 * CH * sizeof(float));
    cp_slice_rows(qkv, p.qkv, B, T, 3 * CH, r, cp);
    cp_slice_rows(dout, p.dout, B, T, CH, r, cp);
    cp_slice_rows(want_out, p.out, B, T, CH, r, cp);
    cp_slice_rows(want_dqkv, p.dqkv, B, T, 3 * CH, r, cp);

    float *out = malloc(B * Tl * CH * sizeof(float));
    float *lse = malloc(B * NH * Tl * sizeof(float));
    float *dqkv = calloc(B * Tl * 3 * CH, sizeof(float));

    const size_t held = device_bytes_in_use(); /* the scratch comes and goes on top of it */
    device_bytes_peak_reset();
    comm_reset_counters(g_cp);
    ring_attention_forward(g_cp, out, lse, qkv, B, Tl, NH, HS);
    assert_int_equal(comm_bytes_sent(g_cp), ring_attention_forward_bytes(B, Tl, NH, HS, cp));
    expect_close(out, want_out, B * Tl * CH, ATOL, RTOL, "ring forward out vs serial");

    float *want_lse = malloc(B * NH * Tl * sizeof(float));
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < NH; h++)
            for (size_t t = 0; t < Tl; t++)
                want_lse[(b * NH + h) * Tl + t] = (float)direct_lse(
                    &p, b, h, cp_global_position(r, cp, T, t));
    expect_close(lse, want_lse, B * NH * Tl, ATOL, RTOL, "lse vs direct log-sum-exp");

    comm_reset_counters(g_cp);
    ring_attention_backward(g_cp, dqkv, dout, qkv, out, lse, B, Tl, NH, HS);
    assert_int_equal(comm_bytes_sent(g_cp), ring_attention_backward_bytes(B, Tl, NH, HS, cp));
    expect_close(dqkv, want_dqkv, B * Tl * 3 * CH, ATOL, RTOL, "ring backward dqkv vs serial");
    /* the scratch is device memory, given back on return; its peak is what memory predicts */
    assert_int_equal(device_bytes_in_use(), held);
    assert_int_equal(device_bytes_peak() - held, ring_attention_scratch_bytes(B, Tl, NH, HS, cp));

    /* A second backward adds the same gradient again (accumulates, like kernels/ops.h). */
    ring_attention_backward(g_cp, dqkv, dout, qkv, out, lse, B, Tl, NH, HS);
    for (size_t i = 0; i < B * Tl * 3 * CH; i++) want_dqkv[i] *= 2.0f;
    expect_close(dqkv, want_dqkv, B * Tl * 3 * CH, 2 * ATOL, RTOL, "two backwards add up");

    free(qkv);
    free(dout);
    free(want_out);
    free(want_dqkv);
    free(want_lse);
    free(out);
    free(lse);
    free(dqkv);
    problem_free(&p);
}

static void ring_forward_and_backward_match_serial_attention_T32(void **state) {
    (void)state;
    ring_matches_serial(2, 32, 2, 8);
}

/* T = 16: at 4 ranks a chunk is 2 positions, the diagonal blocks 2 × 2. */
static void ring_forward_and_backward_match_serial_attention_T16(void **state) {
    (void)state;
    ring_matches_serial(2, 16, 2, 8);
}

/* With more positions than the 64 rows of the serial kernel's blocks, and one head. */
static void ring_matches_serial_on_a_longer_sequence(void **state) {
    (void)state;
    ring_matches_serial(1, 160, 1, 16);
}

/* cp == NULL is the serial attention on the local sequence: no group, no message, any T. */
static void null_group_is_serial_attention_for_any_length(void **state) {
    (void)state;
    const size_t Ts[] = {15, 32};
    for (size_t k = 0; k < 2; k++) {
        const size_t B = 2, T = Ts[k], NH = 2, HS = 8, CH = NH * HS;
        problem p = problem_new(B, T, NH, HS);
        float *out = malloc(B * T * CH * sizeof(float)), *lse = malloc(B * NH * T * sizeof(float));
        float *dqkv = calloc(B * T * 3 * CH, sizeof(float));
        const size_t calls = comm_calls(g_cp);
        ring_attention_forward(NULL, out, lse, p.qkv, B, T, NH, HS);
        ring_attention_backward(NULL, dqkv, p.dout, p.qkv, out, lse, B, T, NH, HS);
        assert_int_equal(comm_calls(g_cp), calls);
        expect_close(out, p.out, B * T * CH, ATOL, RTOL, "NULL group out");
        expect_close(dqkv, p.dqkv, B * T * 3 * CH, ATOL, RTOL, "NULL group dqkv");
        free(out);
        free(lse);
        free(dqkv);
        problem_free(&p);
    }
}

/* A rank's compute alone (ring_attention_forward_alone, _backward_alone): where every rank's
 * K and V rows are the same, the ring brings the rank nothing it does not hold, so alone it
 * computes the ring's out, lse and dQ exactly — the same blocks on the same data — and sends
 * nothing. (Its dK, dV keep its own queries' share: the ring sends those to their owners.) */
static void alone_is_the_ring_when_every_rank_holds_the_same_keys(void **state) {
    (void)state;
    const int r = R(), cp = P();
    const size_t B = 2, Tl = 8, NH = 2, HS = 8, CH = NH * HS, rows = B * Tl;
    float *qkv = fill(rows * 3 * CH, 10), *dout = fill(rows * CH, 11 + (uint64_t)r);
    float *q_mine = fill(rows * CH, 20 + (uint64_t)r); /* the queries differ by rank */
    for (size_t i = 0; i < rows; i++) memcpy(qkv + i * 3 * CH, q_mine + i * CH, CH * sizeof(float));
    float *out[2], *lse[2], *dqkv[2];
    for (int k = 0; k < 2; k++) {
        out[k] = malloc(rows * CH * sizeof(float));
        lse[k] = malloc(B * NH * Tl * sizeof(float));
        dqkv[k] = calloc(rows * 3 * CH, sizeof(float));
    }
    ring_attention_forward(g_cp, out[0], lse[0], qkv, B, Tl, NH, HS);
    ring_attention_backward(g_cp, dqkv[0], dout, qkv, out[0], lse[0], B, Tl, NH, HS);
    const size_t calls = comm_calls(g_cp);
    ring_attention_forward_alone(r, cp, out[1], lse[1], qkv, B, Tl, NH, HS);
    ring_attention_backward_alone(r, cp, dqkv[1], dout, qkv, out[1], lse[1], B, Tl, NH, HS);
    assert_int_equal(comm_calls(g_cp), calls);
    expect_close(out[1], out[0], rows * CH, 0, 0, "alone out");
    expect_close(lse[1], lse[0], B * NH * Tl, 0, 0, "alone lse");
    for (size_t i = 0; i < rows; i++) /* dQ: the first CH columns of each row */
        expect_close(dqkv[1] + i * 3 * CH, dqkv[0] + i * 3 * CH, CH, ATOL, RTOL, "alone dQ");
    for (int k = 0; k < 2; k++) free(out[k]), free(lse[k]), free(dqkv[k]);
    free(qkv);
    free(dout);
    free(q_mine);
}

/* The zig-zag balances the work: every rank computes (2cp + 1) chunk² score entries, where
 * consecutive chunks would give rank r (2r + 1) times the first rank's. Pure numbers. */
static void zigzag_gives_every_rank_the_same_number_of_scores(void **state) {
    (void)state;
    assert_int_equal(ring_attention_score_entries(15, 0, 1), 15 * 15);
    for (int cp = 2; cp <= 8; cp *= 2) {
        const size_t T = 64, Tl = T / (size_t)cp, c = Tl / 2;
        for (int r = 0; r < cp; r++)
            assert_int_equal(ring_attention_score_entries(Tl, r, cp), (2 * (size_t)cp + 1) * c * c);
    }
}

/* The formulas themselves, in numbers: X = B·Tl·NH·HS·4 bytes. */
static void traffic_formulas_in_numbers(void **state) {
    (void)state;
    const size_t X = 2 * 8 * 2 * 8 * 4; /* B 2, Tl 8, NH 2, HS 8 */
    assert_int_equal(ring_attention_forward_bytes(2, 8, 2, 8, 1), 0);
    assert_int_equal(ring_attention_backward_bytes(2, 8, 2, 8, 1), 0);
    assert_int_equal(ring_attention_forward_bytes(2, 8, 2, 8, 4), 6 * X);
    assert_int_equal(ring_attention_backward_bytes(2, 8, 2, 8, 4), 14 * X);
}

int main(int argc, char **argv) {
    int np = argc > 1 ? atoi(argv[1]) : 0;
    if (np > 0) mpi_test_launch(argc, argv, np);
    dist_init(&argc, &argv);
    if (np > 0 && dist_world_size() != np)
        fail_msg("launched with %d ranks, expected %d", dist_world_size(), np);
    g_cp = comm_group_world(COMM_MPI);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ring_forward_and_backward_match_serial_attention_T32),
        cmocka_unit_test(ring_forward_and_backward_match_serial_attention_T16),
        cmocka_unit_test(ring_matches_serial_on_a_longer_sequence),
        cmocka_unit_test(null_group_is_serial_attention_for_any_length),
        cmocka_unit_test(alone_is_the_ring_when_every_rank_holds_the_same_keys),
        cmocka_unit_test(zigzag_gives_every_rank_the_same_number_of_scores),
        cmocka_unit_test(traffic_formulas_in_numbers),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    comm_group_destroy(g_cp);
    dist_finalize();
    return failed;
}
