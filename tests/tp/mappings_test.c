/* mappings_test.c — f, g, scatter and gather over a real TP group, against direct serial
 * computation, at WORLD ranks (one binary per world size: 1, 2, 4); and the two operators of
 * sequence parallelism, g (all-gather along T, backward reduce-scatter) and ḡ (reduce-scatter
 * along T, backward all-gather), against their definition on (B, T, C) tensors.
 *
 * Rank r's data is tp_fixture_fill(stream = r), so every rank can compute the sum over all
 * ranks, or the full gathered tensor, on its own and compare. Each operator is also checked
 * for the traffic it causes: the identity halves move nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/runtime/comm.h"
#include "src/tp/mappings.h"
#include "tests/support/testing.h"
#include "tests/tp/tp_fixture.h"

#ifndef WORLD
#define WORLD 2
#endif

enum { N = 5, K = 3, LEN = N * K };

/* Σ over ranks of rank r's data (stream base + r), in double, rounded once. */
static void sum_over_ranks(float *out, size_t n, uint64_t base) {
    float *x = malloc(n * sizeof(float));
    double *acc = calloc(n, sizeof(double));
    for (int r = 0; r < tp_fixture_size(); r++) {
        tp_fixture_fill(x, n, base + (uint64_t)r, 1.0f);
        for (size_t i = 0; i < n; i++) acc[i] += x[i];
    }
    for (size_t i = 0; i < n; i++) out[i] = (float)acc[i];
    free(x);
    free(acc);
}

static void expect_traffic(size_t reduces, size_t reduce_bytes, size_t gathers, size_t gather_bytes,
                           const char *what) {
    tp_traffic t = tp_traffic_get();
    if (t.all_reduce_calls != reduces || t.all_reduce_bytes != reduce_bytes ||
        t.all_gather_calls != gathers || t.all_gather_bytes != gather_bytes || t.other_calls ||
        t.reduce_scatter_calls)
        fail_msg("%s: %zu all-reduces (%zu B), %zu all-gathers (%zu B), %zu other; expected %zu "
                 "(%zu B), "
                 "%zu (%zu B), 0",
                 what, t.all_reduce_calls, t.all_reduce_bytes, t.all_gather_calls,
                 t.all_gather_bytes, t.other_calls, reduces, reduce_bytes, gathers, gather_bytes);
}

static size_t active(void) { return tp_fixture_size() > 1; }

static void f_is_identity_forward_and_all_reduce_backward(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const int r = tp_fixture_rank();
    float x[LEN], x0[LEN], dx[LEN], want[LEN];
    tp_fixture_fill(x, LEN, 100, 1.0f); /* the same input on every rank */
    memcpy(x0, x, sizeof x);
    tp_traffic_reset();
    tp_copy_to_region_forward(tp, x, LEN);
    expect_close(x, x0, LEN, 0, 0, "f forward");
    expect_traffic(0, 0, 0, 0, "f forward");
    tp_fixture_fill(dx, LEN, 200 + (uint64_t)r, 1.0f); /* a different partial gradient per rank */
    tp_copy_to_region_backward(tp, dx, LEN);
    sum_over_ranks(want, LEN, 200);
    expect_close(dx, want, LEN, 1e-6, 1e-6, "f backward = sum over ranks");
    expect_traffic(active(), active() * LEN * sizeof(float), 0, 0, "f backward");
}

static void g_is_all_reduce_forward_and_identity_backward(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const int r = tp_fixture_rank();
    float x[LEN], want[LEN], dx[LEN], dx0[LEN];
    tp_fixture_fill(x, LEN, 300 + (uint64_t)r, 1.0f);
    tp_traffic_reset();
    tp_reduce_from_region_forward(tp, x, LEN);
    sum_over_ranks(want, LEN, 300);
    expect_close(x, want, LEN, 1e-6, 1e-6, "g forward = sum over ranks");
    expect_traffic(active(), active() * LEN * sizeof(float), 0, 0, "g forward");
    tp_traffic_reset();
    tp_fixture_fill(dx, LEN, 400, 1.0f);
    memcpy(dx0, dx, sizeof dx);
    tp_reduce_from_region_backward(tp, dx, LEN);
    expect_close(dx, dx0, LEN, 0, 0, "g backward");
    expect_traffic(0, 0, 0, 0, "g backward");
}

static void all_reduce_max_takes_the_largest_over_ranks(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    float x[LEN], want[LEN], y[LEN];
    tp_fixture_fill(x, LEN, 500 + (uint64_t)tp_fixture_rank(), 1.0f);
    for (size_t i = 0; i < LEN; i++) want[i] = -INFINITY;
    for (int q = 0; q < tp_fixture_size(); q++) {
        tp_fixture_fill(y, LEN, 500 + (uint64_t)q, 1.0f);
        for (size_t i = 0; i < LEN; i++) want[i] = fmaxf(want[i], y[i]);
    }
    tp_all_reduce_max(tp, x, LEN);
    expect_close(x, want, LEN, 0, 0, "max over ranks");
}

static void scatter_takes_own_columns_and_its_backward_gathers(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const size_t p = (size_t)tp_fixture_size(), r = (size_t)tp_fixture_rank();
    float *x = tp_fixture_fill(NULL, N * K * p, 600, 1.0f); /* whole (N, K*p), same everywhere */
    float out[LEN], want[LEN];
    tp_traffic_reset();
    tp_scatter_to_region_forward(tp, out, x, N, K);
    tp_fixture_columns(want, x, N, K * p, r * K, K);
    expect_close(out, want, LEN, 0, 0, "scatter forward = own columns");
    expect_traffic(0, 0, 0, 0, "scatter forward");
    /* Backward: rank q's dout (N,K) lands in columns [q*K, (q+1)*K) of the whole dx. */
    float dout[LEN], *dx = malloc(N * K * p * sizeof(float)),
                     *dwant = malloc(N * K * p * sizeof(float));
    tp_fixture_fill(dout, LEN, 700 + r, 1.0f);
    tp_scatter_to_region_backward(tp, dx, dout, N, K);
    for (size_t q = 0; q < p; q++) {
        float part[LEN];
        tp_fixture_fill(part, LEN, 700 + q, 1.0f);
        for (size_t n = 0; n < N; n++)
            memcpy(dwant + n * K * p + q * K, part + n * K, K * sizeof(float));
    }
    expect_close(dx, dwant, N * K * p, 0, 0, "scatter backward = all-gather of columns");
    expect_traffic(0, 0, p > 1, p > 1 ? N * K * p * sizeof(float) : 0, "scatter backward");
    free(x);
    free(dx);
    free(dwant);
}

static void gather_joins_columns_and_its_backward_takes_own_columns(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const size_t p = (size_t)tp_fixture_size(), r = (size_t)tp_fixture_rank();
    float x[LEN], *out = malloc(N * K * p * sizeof(float)),
                  *want = malloc(N * K * p * sizeof(float));
    tp_fixture_fill(x, LEN, 800 + r, 1.0f);
    tp_traffic_reset();
    tp_gather_from_region_forward(tp, out, x, N, K);
    for (size_t q = 0; q < p; q++) {
        float part[LEN];
        tp_fixture_fill(part, LEN, 800 + q, 1.0f);
        for (size_t n = 0; n < N; n++)
            memcpy(want + n * K * p + q * K, part + n * K, K * sizeof(float));
    }
    expect_close(out, want, N * K * p, 0, 0, "gather forward = [x_0 | x_1 | ...]");
    expect_traffic(0, 0, p > 1, p > 1 ? N * K * p * sizeof(float) : 0, "gather forward");
    tp_traffic_reset();
    float *dout = tp_fixture_fill(NULL, N * K * p, 900, 1.0f), dx[LEN], dwant[LEN];
    tp_gather_from_region_backward(tp, dx, dout, N, K);
    tp_fixture_columns(dwant, dout, N, K * p, r * K, K);
    expect_close(dx, dwant, LEN, 0, 0, "gather backward = own columns");
    expect_traffic(0, 0, 0, 0, "gather backward");
    free(out);
    free(want);
    free(dout);
}

static void a_null_group_is_the_serial_case(void **state) {
    (void)state;
    float x[LEN], x0[LEN], y[LEN];
    tp_fixture_fill(x, LEN, 1000, 1.0f);
    memcpy(x0, x, sizeof x);
    tp_copy_to_region_backward(NULL, x, LEN);
    tp_reduce_from_region_forward(NULL, x, LEN);
    tp_all_reduce_max(NULL, x, LEN);
    expect_close(x, x0, LEN, 0, 0, "no-ops without a group");
    tp_scatter_to_region_forward(NULL, y, x, N, K);
    expect_close(y, x0, LEN, 0, 0, "scatter without a group");
    tp_gather_from_region_forward(NULL, y, x, N, K);
    expect_close(y, x0, LEN, 0, 0, "gather without a group");
}

/* ---------------------------------------------------------------- sequence parallelism */

/* Shapes of the sequence tests: B sequences, Tl positions per rank, C channels. B = 3 makes
 * rank r's positions a strided block of the whole (B, T, C); B = 1 a contiguous one. */
enum { SEQ_TL = 2, SEQ_C = 3 };

static void expect_seq_traffic(size_t gathers, size_t gather_bytes, size_t scatters,
                               size_t scatter_bytes, const char *what) {
    tp_traffic t = tp_traffic_get();
    if (t.all_gather_calls != gathers || t.all_gather_bytes != gather_bytes ||
        t.reduce_scatter_calls != scatters || t.reduce_scatter_bytes != scatter_bytes ||
        t.all_reduce_calls || t.other_calls)
        fail_msg("%s: %zu all-gathers (%zu B), %zu reduce-scatters (%zu B), %zu all-reduces, %zu "
                 "other; expected %zu (%zu B), %zu (%zu B), 0, 0",
                 what, t.all_gather_calls, t.all_gather_bytes, t.reduce_scatter_calls,
                 t.reduce_scatter_bytes, t.all_reduce_calls, t.other_calls, gathers, gather_bytes,
                 scatters, scatter_bytes);
}

/* The whole (B, T, C) from every rank's shard (stream base + q), by the definition: position
 * q·Tl + j of sequence b is rank q's position j of sequence b. */
static void whole_from_shards(float *out, size_t B, uint64_t base) {
    const size_t p = (size_t)tp_fixture_size(), T = SEQ_TL * p, n = B * SEQ_TL * SEQ_C;
    float *x = malloc(n * sizeof(float));
    for (size_t q = 0; q < p; q++) {
        tp_fixture_fill(x, n, base + q, 1.0f);
        for (size_t b = 0; b < B; b++)
            for (size_t j = 0; j < SEQ_TL; j++)
                memcpy(out + (b * T + q * SEQ_TL + j) * SEQ_C, x + (b * SEQ_TL + j) * SEQ_C,
                       SEQ_C * sizeof(float));
    }
    free(x);
}

/* Rank r's positions of Σ_q (every rank's whole (B, T, C), stream base + q), in double. */
static void own_positions_of_sum(float *out, size_t B, uint64_t base) {
    const size_t p = (size_t)tp_fixture_size(), r = (size_t)tp_fixture_rank();
    const size_t T = SEQ_TL * p, whole = B * T * SEQ_C;
    float *sum = malloc(whole * sizeof(float));
    sum_over_ranks(sum, whole, base);
    for (size_t b = 0; b < B; b++)
        memcpy(out + b * SEQ_TL * SEQ_C, sum + (b * T + r * SEQ_TL) * SEQ_C,
               SEQ_TL * SEQ_C * sizeof(float));
    free(sum);
}

static void sequence_g_all_gathers_forward_and_reduce_scatters_backward(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const size_t p = (size_t)tp_fixture_size(), r = (size_t)tp_fixture_rank(), on = p > 1;
    for (size_t B = 1; B <= 3; B += 2) {
        const size_t shard = B * SEQ_TL * SEQ_C, whole = shard * p;
        float *x = tp_fixture_fill(NULL, shard, 1100 + r, 1.0f), *out = malloc(whole * 4);
        float *want = malloc(whole * 4), *dout = tp_fixture_fill(NULL, whole, 1200 + r, 1.0f);
        float *dx = malloc(shard * 4), *dwant = malloc(shard * 4);
        tp_traffic_reset();
        tp_gather_from_sequence_region_forward(tp, out, x, B, SEQ_TL, SEQ_C);
        whole_from_shards(want, B, 1100);
        expect_close(out, want, whole, 0, 0, "g forward = the shards in position order");
        expect_seq_traffic(on, on * whole * 4, 0, 0, "g forward");
        tp_traffic_reset();
        tp_gather_from_sequence_region_backward(tp, dx, dout, B, SEQ_TL, SEQ_C);
        own_positions_of_sum(dwant, B, 1200);
        expect_close(dx, dwant, shard, 1e-6, 1e-6, "g backward = own positions of the sum");
        expect_seq_traffic(0, 0, on, on * whole * 4, "g backward");
        free(x), free(out), free(want), free(dout), free(dx), free(dwant);
    }
}

static void sequence_gbar_reduce_scatters_forward_and_all_gathers_backward(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const size_t p = (size_t)tp_fixture_size(), r = (size_t)tp_fixture_rank(), on = p > 1;
    for (size_t B = 1; B <= 3; B += 2) {
        const size_t shard = B * SEQ_TL * SEQ_C, whole = shard * p;
        float *x = tp_fixture_fill(NULL, whole, 1300 + r, 1.0f), *out = malloc(shard * 4);
        float *want = malloc(shard * 4), *dout = tp_fixture_fill(NULL, shard, 1400 + r, 1.0f);
        float *dx = malloc(whole * 4), *dwant = malloc(whole * 4);
        tp_traffic_reset();
        tp_reduce_scatter_to_sequence_region_forward(tp, out, x, B, SEQ_TL, SEQ_C);
        own_positions_of_sum(want, B, 1300);
        expect_close(out, want, shard, 1e-6, 1e-6, "gbar forward = own positions of the sum");
        expect_seq_traffic(0, 0, on, on * whole * 4, "gbar forward");
        tp_traffic_reset();
        tp_reduce_scatter_to_sequence_region_backward(tp, dx, dout, B, SEQ_TL, SEQ_C);
        whole_from_shards(dwant, B, 1400);
        expect_close(dx, dwant, whole, 0, 0, "gbar backward = the shards in position order");
        expect_seq_traffic(on, on * whole * 4, 0, 0, "gbar backward");
        free(x), free(out), free(want), free(dout), free(dx), free(dwant);
    }
}

/* The identity the paper builds on: ḡ then g (reduce-scatter, then all-gather) is g of plain
 * TP (the all-reduce); and the same bytes move (an event counts a buffer of the whole size). */
static void gbar_then_g_is_the_all_reduce(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const size_t p = (size_t)tp_fixture_size(), r = (size_t)tp_fixture_rank(), B = 3;
    const size_t shard = B * SEQ_TL * SEQ_C, whole = shard * p;
    float *x = tp_fixture_fill(NULL, whole, 1500 + r, 1.0f), *mine = malloc(shard * 4);
    float *y = malloc(whole * 4), *want = malloc(whole * 4);
    tp_reduce_scatter_to_sequence_region_forward(tp, mine, x, B, SEQ_TL, SEQ_C);
    tp_gather_from_sequence_region_forward(tp, y, mine, B, SEQ_TL, SEQ_C);
    memcpy(want, x, whole * 4);
    tp_reduce_from_region_forward(tp, want, whole);
    expect_close(y, want, whole, 1e-6, 1e-6, "g(gbar(x)) = all-reduce(x)");
    free(x), free(mine), free(y), free(want);
}

int main(int argc, char **argv) {
    mpi_test_launch(argc, argv, WORLD);
    tp_fixture_init(&argc, &argv, WORLD);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f_is_identity_forward_and_all_reduce_backward),
        cmocka_unit_test(g_is_all_reduce_forward_and_identity_backward),
        cmocka_unit_test(all_reduce_max_takes_the_largest_over_ranks),
        cmocka_unit_test(scatter_takes_own_columns_and_its_backward_gathers),
        cmocka_unit_test(gather_joins_columns_and_its_backward_takes_own_columns),
        cmocka_unit_test(a_null_group_is_the_serial_case),
        cmocka_unit_test(sequence_g_all_gathers_forward_and_reduce_scatters_backward),
        cmocka_unit_test(sequence_gbar_reduce_scatters_forward_and_all_gathers_backward),
        cmocka_unit_test(gbar_then_g_is_the_all_reduce),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    return tp_fixture_finish(rc);
}
