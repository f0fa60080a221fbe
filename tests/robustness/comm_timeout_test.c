/* comm_timeout_test.c — with a timeout set, comm.h does what it does without one.
 *
 * The timed path swaps each blocking MPI call for its nonblocking twin and polls it. Under
 * mpirun at the world size given as argv[1], every collective runs both ways on the same
 * inputs — random floats, so that another summation order would show — and must give the
 * same bits (a timed collective is a polled barrier, then the same blocking call), and the
 * same bits on every rank where the result is replicated. Point-to-point delivers small and
 * large messages (the rendezvous protocol) without deadlock; the trace hook's wait/transfer
 * split is kept; the setting itself round-trips. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/precision/convert.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"
#include "src/runtime/parallel_state.h"
#include "tests/support/testing.h"

static comm_group *g_world;

static int R(void) { return comm_rank(g_world); }
static int N(void) { return comm_size(g_world); }

/* Rank-dependent floats in [-1, 1) with all mantissa bits busy. */
static float *random_floats(size_t n, uint64_t salt) {
    float *x = malloc(n * sizeof *x);
    uint64_t s = 0x9E3779B97F4A7C15ull * (salt + 1) + (uint64_t)R() * 7919u;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    return x;
}

/* Every rank must hold the same bytes as rank 0. */
static void expect_same_on_every_rank(const void *buf, size_t bytes, const char *what) {
    unsigned char *r0 = malloc(bytes ? bytes : 1);
    if (bytes) memcpy(r0, buf, bytes);
    comm_set_timeout(0);
    comm_broadcast(g_world, r0, bytes, COMM_BYTE, 0);
    if (bytes && memcmp(r0, buf, bytes) != 0)
        fail_msg("%s differs between rank 0 and rank %d", what, R());
    free(r0);
}

static void expect_same_bits(const void *a, const void *b, size_t bytes, const char *what) {
    if (bytes && memcmp(a, b, bytes) != 0) fail_msg("%s: the timed path gave other bits", what);
}


/* Runs `op` on a fresh copy of `in` (timed or not) into out. */
typedef void (*collective_fn)(float *out, const float *in, size_t n);

static void run_all_reduce(float *out, const float *in, size_t n) {
    memcpy(out, in, n * sizeof *out);
    comm_all_reduce(g_world, out, n, COMM_FLOAT32, COMM_SUM);
}

static void run_reduce_scatter(float *out, const float *in, size_t n) {
    memcpy(out, in, n * (size_t)N() * sizeof *out);
    comm_reduce_scatter(g_world, out, out, n, COMM_FLOAT32, COMM_SUM); /* in place */
}

static void run_all_gather(float *out, const float *in, size_t n) {
    comm_all_gather(g_world, in, out, n, COMM_FLOAT32);
}

static void run_broadcast(float *out, const float *in, size_t n) {
    memcpy(out, in, n * sizeof *out);
    comm_broadcast(g_world, out, n, COMM_FLOAT32, N() - 1);
}

/* out[0] blocking, out[1] and out[2] timed (twice). */
static void run_three_ways(collective_fn fn, float *out[3], const float *in, size_t n) {
    for (int k = 0; k < 3; k++) {
        comm_set_timeout(k ? 30.0 : 0.0);
        fn(out[k], in, n);
    }
    comm_set_timeout(0);
}

static const size_t k_sizes[] = {1, 37, 300000}; /* eager and rendezvous, small and segmented */

static void timed_moves_give_the_blocking_bits(void **state) {
    (void)state;
    for (int k = 0; k < 3; k++) {
        size_t n = k_sizes[k], P = (size_t)N();
        float *in = random_floats(n * P, (uint64_t)k), *out[3];
        for (int j = 0; j < 3; j++) out[j] = malloc(n * P * sizeof(float));
        run_three_ways(run_all_gather, out, in, n);
        expect_same_bits(out[0], out[1], n * P * sizeof(float), "all_gather");
        expect_same_on_every_rank(out[1], n * P * sizeof(float), "all_gather");
        run_three_ways(run_broadcast, out, in, n);
        expect_same_bits(out[0], out[1], n * sizeof(float), "broadcast");
        expect_same_on_every_rank(out[1], n * sizeof(float), "broadcast");
        comm_set_timeout(30.0);
        comm_barrier(g_world);
        comm_set_timeout(0);
        for (int j = 0; j < 3; j++) free(out[j]);
        free(in);
    }
}

static void timed_reductions_give_the_blocking_bits(void **state) {
    (void)state;
    for (int k = 0; k < 3; k++) {
        size_t n = k_sizes[k], P = (size_t)N();
        float *in = random_floats(n * P, 10 + (uint64_t)k), *out[3];
        for (int j = 0; j < 3; j++) out[j] = malloc(n * P * sizeof(float));
        run_three_ways(run_all_reduce, out, in, n);
        expect_same_bits(out[0], out[1], n * sizeof(float), "all_reduce");
        expect_same_bits(out[1], out[2], n * sizeof(float), "all_reduce, timed twice");
        expect_same_on_every_rank(out[1], n * sizeof(float), "timed all_reduce");
        run_three_ways(run_reduce_scatter, out, in, n);
        expect_same_bits(out[0], out[1], n * sizeof(float), "reduce_scatter");
        /* bf16 sums through the user-defined MPI_Op */
        uint16_t *h[2];
        for (int j = 0; j < 2; j++) {
            h[j] = malloc(n * sizeof(uint16_t));
            for (size_t i = 0; i < n; i++) h[j][i] = prec_fp32_to_bf16(in[i]);
            comm_set_timeout(j ? 30.0 : 0.0);
            comm_all_reduce(g_world, h[j], n, COMM_BF16, COMM_SUM);
        }
        comm_set_timeout(0);
        expect_same_bits(h[0], h[1], n * sizeof(uint16_t), "bf16 all_reduce");
        expect_same_on_every_rank(h[1], n * sizeof(uint16_t), "timed bf16 all_reduce");
        for (int j = 0; j < 2; j++) free(h[j]);
        for (int j = 0; j < 3; j++) free(out[j]);
        free(in);
    }
}

static void timed_point_to_point_delivers_small_and_large_messages(void **state) {
    (void)state;
    comm_set_timeout(30.0);
    const int r = R(), P = N(), next = (r + 1) % P, prev = (r + P - 1) % P;
    const size_t sizes[] = {0, 5, 1u << 20};
    for (int k = 0; k < 3; k++) {
        size_t n = sizes[k];
        float *mine = random_floats(n ? n : 1, 100 + (uint64_t)k);
        float *got = malloc((n ? n : 1) * sizeof *got), *got2 = malloc((n ? n : 1) * sizeof *got2);
        /* send, send, then recv, recv around the ring: must not deadlock */
        comm_send(g_world, mine, n, COMM_FLOAT32, next, 40 + k);
        comm_send(g_world, mine, n, COMM_FLOAT32, prev, 50 + k);
        comm_recv(g_world, got, n, COMM_FLOAT32, prev, 40 + k);
        comm_recv(g_world, got2, n, COMM_FLOAT32, next, 50 + k);
        comm_wait_sends(g_world);
        float *want = malloc((n ? n : 1) * sizeof *want);
        /* what prev and next sent: regenerate with their rank */
        comm_sendrecv(g_world, mine, n, next, want, n, prev, COMM_FLOAT32, 60 + k);
        expect_same_bits(got, want, n * sizeof *got, "recv from prev");
        comm_sendrecv(g_world, mine, n, prev, want, n, next, COMM_FLOAT32, 70 + k);
        expect_same_bits(got2, want, n * sizeof *got2, "recv from next");
        free(mine);
        free(got);
        free(got2);
        free(want);
    }
    comm_barrier(g_world);
    comm_set_timeout(0);
}

typedef struct {
    int n;
    comm_event ev[8];
} trace_log;

static void record(const comm_event *e, void *ctx) {
    trace_log *t = ctx;
    if (t->n < 8) t->ev[t->n++] = *e;
}

static void a_timed_recv_still_splits_waiting_from_transfer(void **state) {
    (void)state;
    comm_set_timeout(30.0);
    trace_log t = {0};
    float x[4] = {1, 2, 3, 4};
    if (R() == 1) {
        comm_set_trace_hook(record, &t);
        comm_recv(g_world, x, 4, COMM_FLOAT32, 0, 11);
        comm_set_trace_hook(NULL, NULL);
        assert_int_equal(t.n, 1);
        assert_string_equal(t.ev[0].op, "recv");
        assert_int_equal(t.ev[0].peer, 0);
        double waiting = t.ev[0].t_ready - t.ev[0].t_start,
               transfer = t.ev[0].t_end - t.ev[0].t_ready;
        assert_true(waiting > 0.15); /* rank 0 sleeps 0.3 s before sending */
        assert_true(transfer < waiting);
        assert_true(x[3] == 4.0f);
    } else if (R() == 0) {
        struct timespec ts = {0, 300000000};
        nanosleep(&ts, NULL);
        comm_send(g_world, x, 4, COMM_FLOAT32, 1, 11);
        comm_wait_sends(g_world);
    }
    comm_barrier(g_world);
    comm_set_timeout(0);
}

static void the_timeout_is_a_process_wide_setting(void **state) {
    (void)state;
    assert_true(comm_timeout() == 0.0);
    comm_set_timeout(600.0);
    assert_true(comm_timeout() == 600.0);
    comm_set_timeout(0);
    assert_true(comm_timeout() == 0.0);
}

static void subgroups_work_the_same_with_a_timeout(void **state) {
    (void)state;
    if (N() < 4) skip();
    pg_layout l;
    char err[128];
    assert_true(pg_layout_make(&l, N(), 2, 1, 1, 1, 1, NULL, err, sizeof err));
    parallel_state *ps = ps_create(&l, dist_rank());
    comm_set_timeout(30.0);
    int32_t v = dist_rank(), sum = 0;
    comm_all_reduce(ps->tp, &v, 1, COMM_INT32, COMM_SUM);
    int members[2];
    for (int i = 0; i < 2; i++) members[i] = comm_global_rank(ps->tp, i);
    sum = members[0] + members[1];
    assert_int_equal(v, sum);
    comm_set_timeout(0);
    ps_destroy(ps);
}

int main(int argc, char **argv) {
    int np = argc > 1 ? atoi(argv[1]) : 2;
    mpi_test_launch(argc, argv, np);
    dist_init(&argc, &argv);
    if (dist_world_size() != np)
        fail_msg("launched with %d ranks, expected %d", dist_world_size(), np);
    g_world = comm_group_world(COMM_MPI);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_timeout_is_a_process_wide_setting),
        cmocka_unit_test(timed_moves_give_the_blocking_bits),
        cmocka_unit_test(timed_reductions_give_the_blocking_bits),
        cmocka_unit_test(timed_point_to_point_delivers_small_and_large_messages),
        cmocka_unit_test(a_timed_recv_still_splits_waiting_from_transfer),
        cmocka_unit_test(subgroups_work_the_same_with_a_timeout),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    comm_group_destroy(g_world);
    dist_finalize();
    return failed;
}
