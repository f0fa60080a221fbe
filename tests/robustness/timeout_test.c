/* timeout_test.c — comm_set_timeout() ends a job whose rank waits too long, with one line
 * that names the waiting rank, the operation, the group and whom it waited for.
 *
 * Runs stuck_helper under mpirun (3 ranks, a 1 s timeout): global rank 1 stops taking part
 * while the others wait in recv, all_reduce, barrier, sendrecv, wait_sends, or a recv on a
 * sub-group whose group ranks differ from the global ones. Each job must end non-zero by
 * itself (through the 1 s timeout, not mpirun's 60 s hang guard), and no wait may return
 * without its peer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/clock.h"
#include "tests/support/testing.h"

/* What mpirun prints when its --timeout (the hang guard of every job here) ends the job. A
 * job that ends by itself never prints it: that, not the wall clock, is what is asserted. */
#define MPIRUN_TIME_LIMIT "The user-provided time limit for job execution has been reached"

static char g_out[1 << 16];

static const char *helper(void) { return test_runfile("tests/robustness/stuck_helper"); }

/* Runs the helper with 3 ranks and a 1 s timeout; returns the exit status, *secs the time. */
/* No single copy: the waits run on the progress-thread path on purpose. */
static int run_job(const char *mode, double *secs) {
    char args[256];
    snprintf(args, sizeof args, "%s 1", mode);
    return test_run_job(3, TEST_MPI_NO_SINGLE_COPY, helper(), args, g_out, sizeof g_out, secs);
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* The job ends non-zero by itself, every timed-out line is one of `want` (NULL-ended), at
 * least one was printed, and no wait returned without its peer. */
static void expect_timeout(const char *mode, const char *const *want) {
    double secs;
    int st = run_job(mode, &secs);
    int lines = count(g_out, "timed out after"), matched = 0;
    for (const char *const *w = want; *w; w++) matched += count(g_out, *w);
    if (st == 0 || strstr(g_out, MPIRUN_TIME_LIMIT) || lines == 0 || matched != lines ||
        strstr(g_out, "was not stopped"))
        fprintf(stderr,
                "--- %s: status %d after %.1f s, %d timeout lines (%d expected ones):\n%s\n", mode,
                st, secs, lines, matched, g_out);
    assert_int_not_equal(st, 0);
    assert_null(strstr(g_out, MPIRUN_TIME_LIMIT)); /* it ended by itself */
    assert_true(lines >= 1);
    assert_int_equal(matched, lines);
    assert_null(strstr(g_out, "was not stopped"));
}

#define TAIL ": a rank is stuck or dead (--distributed-timeout-minutes)"

static void a_recv_from_a_silent_peer_names_the_peer_and_tag(void **state) {
    (void)state;
    const char *want[] = {
        "trident[rank 0]: timed out after 1 s in recv from rank 1 (group world, tag 17)" TAIL,
        NULL};
    expect_timeout("recv", want);
}

static void an_all_reduce_names_the_group_and_its_members(void **state) {
    (void)state;
    const char *want[] = {
        "trident[rank 0]: timed out after 1 s in all_reduce (group world, ranks 0,1,2)" TAIL,
        "trident[rank 2]: timed out after 1 s in all_reduce (group world, ranks 0,1,2)" TAIL, NULL};
    expect_timeout("all_reduce", want);
}

static void a_barrier_times_out(void **state) {
    (void)state;
    const char *want[] = {
        "trident[rank 0]: timed out after 1 s in barrier (group world, ranks 0,1,2)" TAIL,
        "trident[rank 2]: timed out after 1 s in barrier (group world, ranks 0,1,2)" TAIL, NULL};
    expect_timeout("barrier", want);
}

static void a_sendrecv_waits_for_the_source(void **state) {
    (void)state;
    const char *want[] = {
        "trident[rank 0]: timed out after 1 s in sendrecv from rank 1 (group world, tag 9)" TAIL,
        NULL};
    expect_timeout("sendrecv", want);
}

static void a_send_nobody_receives_times_out_in_wait_sends(void **state) {
    (void)state;
    const char *want[] = {
        "trident[rank 0]: timed out after 1 s in send to rank 1 (group world, tag 5)" TAIL, NULL};
    expect_timeout("wait_sends", want);
}

static void a_subgroup_names_the_global_rank_of_the_peer(void **state) {
    (void)state;
    /* In "pp" = {1, 2}, group rank 0 is global rank 1. */
    const char *want[] = {
        "trident[rank 2]: timed out after 1 s in recv from rank 1 (group pp, tag 3)" TAIL, NULL};
    expect_timeout("subgroup", want);
}

static void a_healthy_job_with_a_timeout_finishes(void **state) {
    (void)state;
    double secs;
    int st = run_job("ok", &secs);
    if (st != 0) fprintf(stderr, "%s\n", g_out);
    assert_int_equal(st, 0);
    for (int r = 0; r < 3; r++) {
        char want[32];
        snprintf(want, sizeof want, "ok rank %d", r);
        assert_non_null(strstr(g_out, want));
    }
    assert_null(strstr(g_out, "timed out"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_recv_from_a_silent_peer_names_the_peer_and_tag),
        cmocka_unit_test(an_all_reduce_names_the_group_and_its_members),
        cmocka_unit_test(a_barrier_times_out),
        cmocka_unit_test(a_sendrecv_waits_for_the_source),
        cmocka_unit_test(a_send_nobody_receives_times_out_in_wait_sends),
        cmocka_unit_test(a_subgroup_names_the_global_rank_of_the_peer),
        cmocka_unit_test(a_healthy_job_with_a_timeout_finishes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
