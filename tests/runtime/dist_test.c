/* dist_test.c — start-up and failure of a job: a rank that dies ends the whole job by itself
 * (no rank left waiting in a collective until mpirun's 60 s hang guard), a user error found by
 * every rank prints once and exits non-zero, and a plain run never starts MPI. Runs
 * dist_fail_helper under mpirun with run_capture. */
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

static const char *helper(void) { return test_runfile("tests/runtime/dist_fail_helper"); }

/* Runs the helper under mpirun with np ranks; returns the exit status, *secs the wall time.
 * No single copy: large messages take the progress-thread path on purpose. */
static int run_job(int np, const char *mode, double *secs) {
    return test_run_job(np, TEST_MPI_NO_SINGLE_COPY, helper(), mode, g_out, sizeof g_out, secs);
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static void a_rank_that_dies_ends_the_whole_job_quickly(void **state) {
    (void)state;
    double secs;
    int st = run_job(4, "die", &secs);
    if (st == 0 || strstr(g_out, MPIRUN_TIME_LIMIT)) fprintf(stderr, "%s\n", g_out);
    assert_int_not_equal(st, 0);
    assert_null(strstr(g_out, MPIRUN_TIME_LIMIT)); /* it ended by itself */
    assert_non_null(strstr(g_out, "trident[rank 1]: rank 1 gives up: --answer 41 must be 42"));
    assert_null(strstr(g_out, "ok rank"));
}

static void a_failed_check_ends_the_whole_job_quickly(void **state) {
    (void)state;
    double secs;
    int st = run_job(3, "check", &secs);
    if (st == 0 || strstr(g_out, MPIRUN_TIME_LIMIT)) fprintf(stderr, "%s\n", g_out);
    assert_int_not_equal(st, 0);
    assert_null(strstr(g_out, MPIRUN_TIME_LIMIT)); /* it ended by itself */
    assert_non_null(strstr(g_out, "check failed: 1 + 1 == 3"));
}

static void an_error_every_rank_finds_prints_once_and_fails(void **state) {
    (void)state;
    double secs;
    int st = run_job(4, "fail_all", &secs);
    if (st == 0 || count(g_out, "does not divide") != 1) fprintf(stderr, "%s\n", g_out);
    assert_int_not_equal(st, 0);
    assert_null(strstr(g_out, MPIRUN_TIME_LIMIT)); /* it ended by itself */
    assert_int_equal(
        count(g_out,
              "trident: helper: --tensor-model-parallel-size 3 does not divide the world size 4"),
        1);
    assert_null(strstr(g_out, "MPI_ABORT"));
}

static void a_healthy_job_reports_every_rank(void **state) {
    (void)state;
    double secs;
    int st = run_job(4, "ok", &secs);
    if (st != 0) fprintf(stderr, "%s\n", g_out);
    assert_int_equal(st, 0);
    for (int r = 0; r < 4; r++) {
        char want[64];
        snprintf(want, sizeof want, "ok rank %d of 4 local %d mpi 1", r, r);
        assert_non_null(strstr(g_out, want));
    }
}

static void a_plain_run_is_one_rank_without_mpi(void **state) {
    (void)state;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "env -u OMPI_COMM_WORLD_SIZE %s ok", helper());
    assert_int_equal(run_capture(cmd, g_out, sizeof g_out), 0);
    assert_non_null(strstr(g_out, "ok rank 0 of 1 local 0 mpi 0"));
    snprintf(cmd, sizeof cmd, "env -u OMPI_COMM_WORLD_SIZE %s fail_all", helper());
    assert_int_equal(run_capture(cmd, g_out, sizeof g_out), 1);
    assert_string_equal(
        g_out,
        "trident: helper: --tensor-model-parallel-size 3 does not divide the world size 1\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_rank_that_dies_ends_the_whole_job_quickly),
        cmocka_unit_test(a_failed_check_ends_the_whole_job_quickly),
        cmocka_unit_test(an_error_every_rank_finds_prints_once_and_fails),
        cmocka_unit_test(a_healthy_job_reports_every_rank),
        cmocka_unit_test(a_plain_run_is_one_rank_without_mpi),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
