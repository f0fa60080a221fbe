/* comm_stream_test.c — the communication stream computes exactly what the blocking
 * collectives compute (its ring adds in the blocking ring's order, so every rank holds the same
 * bits), with many jobs in flight, waited for in any order, beside the main thread's own
 * collectives; destroy drains what is still queued. Run with 0 (no mpirun), 2 and 4 ranks. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/runtime/comm.h"
#include "src/runtime/comm_stream.h"
#include "src/runtime/dist.h"
#include "tests/support/testing.h"

static comm_group *g_world;

/* A value that differs by rank and position. Multiples of 1/64 below 1000: every partial sum
 * is exact, so the result cannot depend on the order in which an algorithm adds the ranks'
 * parts (MPI_Iallreduce and MPI_Allreduce may pick different ones at 4 ranks). */
static float value(int rank, size_t i) { return (float)rank + (float)(i % 97) / 64.0f; }

static void all_reduce_equals_the_blocking_all_reduce_bit_for_bit(void **state) {
    (void)state;
    const int me = comm_rank(g_world);
    const size_t n = 300001;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) a[i] = b[i] = value(me, i);
    comm_stream *s = comm_stream_create(g_world, 4096);
    comm_handle h = comm_stream_all_reduce(s, a, n, "test");
    comm_all_reduce(g_world, b, n, COMM_FLOAT32, COMM_SUM); /* main thread, meanwhile */
    comm_stream_wait(s, h);
    assert_memory_equal(a, b, n * sizeof(float));
    comm_stream_destroy(s);
    free(a);
    free(b);
}

/* Uneven parts, one of them empty: what per-bucket ZeRO reduce-scatters look like. */
static void uneven_reduce_scatter_and_all_gather_match_a_summed_reference(void **state) {
    (void)state;
    const int me = comm_rank(g_world), size = comm_size(g_world);
    size_t *counts = calloc((size_t)size, sizeof(size_t)), total = 0, before = 0;
    for (int d = 0; d < size; d++) {
        counts[d] = d == 1 ? 0 : 1000 + 37 * (size_t)d;
        if (d < me) before += counts[d];
        total += counts[d];
    }
    float *send = malloc(total * sizeof(float)), *sum = malloc(total * sizeof(float));
    float *recv = calloc(counts[me] + 1, sizeof(float));
    for (size_t i = 0; i < total; i++) send[i] = sum[i] = value(me, i);
    comm_all_reduce(g_world, sum, total, COMM_FLOAT32, COMM_SUM);
    comm_stream *s = comm_stream_create(g_world, 4096);
    comm_stream_wait(s, comm_stream_reduce_scatter(s, send, recv, counts, "test"));
    if (counts[me]) assert_memory_equal(recv, sum + before, counts[me] * sizeof(float));
    /* all-gather in place: every rank puts the reduced part in its slot, gets the others' */
    float *buf = calloc(total, sizeof(float));
    memcpy(buf + before, recv, counts[me] * sizeof(float));
    comm_stream_wait(s, comm_stream_all_gather(s, buf, counts, "test"));
    assert_memory_equal(buf, sum, total * sizeof(float));
    comm_stream_destroy(s);
    free(counts), free(send), free(sum), free(recv), free(buf);
}

/* Values whose sums depend on the order of the additions (at 4 ranks and more). */
static float rough(int rank, size_t i) {
    return (float)((rank + 1) * 0.1 + (double)((i * 2654435761u) % 10007) / 3.0e3);
}

/* The stream's ring sums each block once, in the blocking ring's order (comm_ring.c: block j
 * starts on rank j+1), and copies it: its all-reduce is the blocking reduce-scatter then
 * all-gather bit for bit, and every rank holds the same bits, whatever the values. */
static void ring_sums_equal_the_blocking_rings_bits_on_every_rank(void **state) {
    (void)state;
    const int me = comm_rank(g_world), size = comm_size(g_world);
    const size_t part = 20000, n = part * (size_t)size; /* blocks above COMM_RING_MIN_FLOATS */
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    float *rs = malloc(part * sizeof(float)), *want = malloc(part * sizeof(float));
    for (size_t i = 0; i < n; i++) a[i] = b[i] = rough(me, i);
    comm_stream *s = comm_stream_create(g_world, 4096);
    size_t *counts = malloc((size_t)size * sizeof(size_t));
    for (int d = 0; d < size; d++) counts[d] = part;
    comm_stream_wait(s, comm_stream_reduce_scatter(s, a, rs, counts, "test"));
    comm_stream_wait(s, comm_stream_all_reduce(s, a, n, "test"));
    comm_reduce_scatter(g_world, b, want, part, COMM_FLOAT32, COMM_SUM);
    assert_memory_equal(rs, want, part * sizeof(float));
    comm_all_gather(g_world, want, b, part, COMM_FLOAT32);
    assert_memory_equal(a, b, n * sizeof(float));
    float *all = malloc(n * (size_t)size * sizeof(float)); /* every rank's result */
    comm_all_gather(g_world, a, all, n, COMM_FLOAT32);
    for (int d = 0; d < size; d++) assert_memory_equal(all + (size_t)d * n, a, n * sizeof(float));
    comm_stream_destroy(s);
    free(a), free(b), free(rs), free(want), free(counts), free(all);
}

static double g_started, g_ended; /* the last job's times on the stream, from the hook */
static void keep_times(const comm_stream_event *e, void *ctx) {
    (void)ctx;
    g_started = e->t_start;
    g_ended = e->t_end;
}

/* Runs job `kind` (0: reduce-scatter, 1: all-gather) of a small bucket that is all rank 0's
 * part, with rank `late` starting 30 ms after the others; true when no rank finished it before
 * every rank had started it (ranks of one host share time_now's clock). */
static bool ends_after_every_start(int kind, int late) {
    const int me = comm_rank(g_world), size = comm_size(g_world);
    size_t *counts = calloc((size_t)size, sizeof(size_t));
    counts[0] = 100; /* an eager message: its send completes without the receiver */
    float send[100] = {0}, recv[100] = {0};
    comm_stream *s = comm_stream_create(g_world, 4096);
    comm_stream_set_trace_hook(keep_times, NULL);
    comm_barrier(g_world);
    if (me == late) {
        struct timespec nap = {0, 30000000};
        nanosleep(&nap, NULL);
    }
    comm_stream_wait(s, kind == 0 ? comm_stream_reduce_scatter(s, send, recv, counts, "test")
                                  : comm_stream_all_gather(s, send, counts, "test"));
    comm_stream_set_trace_hook(NULL, NULL);
    comm_stream_destroy(s);
    double mine[2] = {g_started, g_ended}, *all = malloc(2 * sizeof(double) * (size_t)size);
    comm_all_gather(g_world, mine, all, sizeof mine, COMM_BYTE);
    double last_start = 0;
    for (int d = 0; d < size; d++) last_start = all[2 * d] > last_start ? all[2 * d] : last_start;
    bool ok = true;
    for (int d = 0; d < size; d++) ok = ok && all[2 * d + 1] >= last_start;
    free(counts), free(all);
    return ok;
}

/* A rank with nothing to receive still hears from every member before its job is complete
 * (empty blocks travel as empty messages): nobody finishes a collective a member has not
 * started, which the trace's causality check asserts on every traced run. */
static void a_rank_with_an_empty_part_finishes_after_every_member_started(void **state) {
    (void)state;
    if (comm_size(g_world) == 1) return;       /* completes on the caller: nothing to order */
    assert_true(ends_after_every_start(0, 0)); /* ranks 1.. get nothing, rank 0 is late */
    assert_true(ends_after_every_start(1, 1)); /* rank 0 receives nothing, rank 1 is late */
}

static void many_jobs_in_flight_waited_for_in_reverse_order(void **state) {
    (void)state;
    const int me = comm_rank(g_world);
    enum { JOBS = 40, N = 5000 };
    float *a = malloc(JOBS * N * sizeof(float)), *b = malloc(JOBS * N * sizeof(float));
    for (size_t i = 0; i < (size_t)JOBS * N; i++) a[i] = b[i] = value(me, i);
    comm_stream *s = comm_stream_create(g_world, 4096);
    comm_handle h[JOBS];
    for (int j = 0; j < JOBS; j++) h[j] = comm_stream_all_reduce(s, a + (size_t)j * N, N, "test");
    for (int j = 0; j < JOBS; j++)
        comm_all_reduce(g_world, b + (size_t)j * N, N, COMM_FLOAT32, COMM_SUM);
    for (int j = JOBS - 1; j >= 0; j--) comm_stream_wait(s, h[j]);
    comm_stream_wait(s, h[3]); /* twice is fine */
    assert_memory_equal(a, b, JOBS * N * sizeof(float));
    comm_stream_destroy(s);
    free(a);
    free(b);
}

/* More jobs queued at once than the stream's tags (issue 31: over 4,096 gradient buckets died
 * on a fixed queue): the queue is as long as the creator asks, tags stay distinct in flight. */
static void more_jobs_than_tags_queued_at_once_all_complete(void **state) {
    (void)state;
    const int me = comm_rank(g_world);
    enum { JOBS = COMM_STREAM_TAGS + 1500, N = 3 };
    float *a = malloc(JOBS * N * sizeof(float)), *b = malloc(JOBS * N * sizeof(float));
    for (size_t i = 0; i < (size_t)JOBS * N; i++) a[i] = b[i] = value(me, i);
    comm_stream *s = comm_stream_create(g_world, JOBS);
    comm_handle *h = malloc(JOBS * sizeof *h);
    for (int j = 0; j < JOBS; j++) h[j] = comm_stream_all_reduce(s, a + (size_t)j * N, N, "test");
    comm_all_reduce(g_world, b, (size_t)JOBS * N, COMM_FLOAT32, COMM_SUM);
    comm_stream_wait(s, h[JOBS / 2]);
    comm_stream_wait_all(s);
    assert_memory_equal(a, b, JOBS * N * sizeof(float));
    comm_stream_destroy(s);
    free(a), free(b), free(h);
}

static int g_events, g_waited;
static void count_events(const comm_stream_event *e, void *ctx) {
    (void)ctx;
    assert_true(e->t_posted <= e->t_start && e->t_start <= e->t_end);
    assert_true(e->t_wait_start <= e->t_wait_end);
    assert_string_equal(e->label, "grads");
    g_events++;
    g_waited += e->t_wait_end > e->t_wait_start;
}

/* Destroy drains: jobs never waited for complete (on every rank) before the thread stops,
 * and each is reported once. */
static void destroy_drains_pending_jobs_and_reports_each_once(void **state) {
    (void)state;
    const int me = comm_rank(g_world), size = comm_size(g_world);
    enum { JOBS = 8, N = 20000 };
    float *a = malloc(JOBS * N * sizeof(float));
    for (size_t i = 0; i < (size_t)JOBS * N; i++) a[i] = (float)me;
    g_events = g_waited = 0;
    comm_stream_set_trace_hook(count_events, NULL);
    comm_stream *s = comm_stream_create(g_world, 4096);
    for (int j = 0; j < JOBS; j++) (void)comm_stream_all_reduce(s, a + (size_t)j * N, N, "grads");
    comm_stream_destroy(s);
    comm_stream_set_trace_hook(NULL, NULL);
    assert_int_equal(g_events, JOBS);
    assert_true(g_waited <= 1); /* only the last job's wait can be exposed */
    const float want = (float)(size * (size - 1) / 2);
    for (size_t i = 0; i < (size_t)JOBS * N; i++) assert_true(a[i] == want);
    free(a);
}

int main(int argc, char **argv) {
    int np = argc > 1 ? atoi(argv[1]) : 0;
    if (np > 0) mpi_test_launch(argc, argv, np);
    dist_init(&argc, &argv);
    g_world = comm_group_world(COMM_MPI);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_reduce_equals_the_blocking_all_reduce_bit_for_bit),
        cmocka_unit_test(uneven_reduce_scatter_and_all_gather_match_a_summed_reference),
        cmocka_unit_test(ring_sums_equal_the_blocking_rings_bits_on_every_rank),
        cmocka_unit_test(a_rank_with_an_empty_part_finishes_after_every_member_started),
        cmocka_unit_test(many_jobs_in_flight_waited_for_in_reverse_order),
        cmocka_unit_test(destroy_drains_pending_jobs_and_reports_each_once),
        cmocka_unit_test(more_jobs_than_tags_queued_at_once_all_complete),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    comm_group_destroy(g_world);
    dist_finalize();
    return failed;
}
