/* train_faults_test.c — `trident train` under mpirun when a rank fails: the job ends
 * non-zero by itself (not through mpirun's 60 s hang guard), and the output says which rank
 * and why.
 *
 * 4 ranks = tensor 2 × pipeline 2 (ranks 2 and 3 hold the last stage); about 55 comm
 * operations per step, so operation 150 falls inside step 3. The faults:
 *   - rank 3 is SIGKILLed mid-step (TRIDENT_TEST_FAULT=kill:3:150): mpirun ends the job
 *     and names rank 3;
 *   - rank 3 hangs mid-step (hang:3:150) with --distributed-timeout-minutes 0.05: the
 *     ranks waiting for it time out after 3 s, each line naming itself, the operation and
 *     the rank(s) it waited for — rank 3 among them (trainer_run passes the flag on to
 *     comm_set_timeout());
 *   - the loss diverges (--lr 1e30 gives NaN at iteration 2): every rank stops with exit
 *     status 1 and ONE line naming the iteration and a rank, no MPI_Abort banner. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/clock.h"
#include "tests/support/testing.h"

/* What mpirun prints when its --timeout (the hang guard of every job here) ends the job. A
 * job that ends by itself never prints it: that, not the wall clock, is what is asserted. */
#define MPIRUN_TIME_LIMIT "The user-provided time limit for job execution has been reached"

static char g_out[1 << 17];

/* Runs `env ENV mpirun -np 4 trident train <small 2x2 layout> ARGS`; returns the status. */
static int run_train(const char *env, const char *args, double *secs) {
    char extra[512], train[4096];
    snprintf(extra, sizeof extra, TEST_MPI_NO_SINGLE_COPY " %s", env); /* progress-thread path */
    snprintf(
        train, sizeof train,
        "train --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --train-iters 30 "
        "--log-interval 1 --no-trace --run-dir %s %s",
        test_tmpdir("run"), args);
    return test_run_job(4, extra, test_trident_path(), train, g_out, sizeof g_out, secs);
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* Copies the line of g_out that contains `at` into line[cap]. */
static void line_at(const char *at, char *line, size_t cap) {
    const char *start = at;
    while (start > g_out && start[-1] != '\n') start--;
    size_t n = strcspn(start, "\n");
    if (n >= cap) n = cap - 1;
    memcpy(line, start, n);
    line[n] = 0;
}

static void a_killed_rank_ends_the_job_and_is_named(void **state) {
    (void)state;
    double secs;
    int st = run_train("TRIDENT_TEST_FAULT=kill:3:150", "", &secs);
    if (st == 0 || strstr(g_out, MPIRUN_TIME_LIMIT) || !strstr(g_out, "process rank 3"))
        fprintf(stderr, "status %d after %.1f s:\n%s\n", st, secs, g_out);
    assert_int_not_equal(st, 0);
    assert_null(strstr(g_out, MPIRUN_TIME_LIMIT));   /* it ended by itself */
    assert_non_null(strstr(g_out, "step     2/30")); /* it was training ... */
    assert_non_null(strstr(g_out, "trident[rank 3]: TRIDENT_TEST_FAULT: killing this rank"));
    assert_non_null(strstr(g_out, "process rank 3")); /* ... and mpirun says who died */
    assert_null(strstr(g_out, "done:"));
}

static void a_hung_rank_times_out_and_the_waiting_ranks_name_it(void **state) {
    (void)state;
    double secs;
    int st = run_train("TRIDENT_TEST_FAULT=hang:3:150", "--distributed-timeout-minutes 0.05",
                       &secs);
    int lines = count(g_out, ": timed out after 3 s in ");
    if (st == 0 || strstr(g_out, MPIRUN_TIME_LIMIT) || lines == 0)
        fprintf(stderr, "status %d after %.1f s:\n%s\n", st, secs, g_out);
    assert_int_not_equal(st, 0);
    assert_null(strstr(g_out, MPIRUN_TIME_LIMIT)); /* it ended by itself */
    assert_non_null(strstr(g_out, "step     2/30"));
    assert_non_null(strstr(g_out, "trident[rank 3]: TRIDENT_TEST_FAULT: this rank hangs"));
    assert_true(lines >= 1);
    /* Every timeout line is a waiting rank's own; at least one names rank 3 as whom it waited
     * for: "from rank 3 (", "to rank 3 (" or a member list ending in 3 ("ranks 2,3)"). */
    int names_3 = 0;
    for (const char *p = strstr(g_out, ": timed out after 3 s in "); p;
         p = strstr(p + 1, ": timed out after 3 s in ")) {
        char line[512];
        line_at(p, line, sizeof line);
        assert_null(strstr(line, "trident[rank 3]"));
        assert_non_null(strstr(line, "a rank is stuck or dead (--distributed-timeout-minutes)"));
        if (strstr(line, " rank 3 (") || strstr(line, ",3)")) names_3++;
    }
    if (!names_3) fprintf(stderr, "no timeout line names rank 3:\n%s\n", g_out);
    assert_true(names_3 >= 1);
    assert_null(strstr(g_out, "done:"));
}

static void a_diverging_loss_stops_every_rank_with_one_line(void **state) {
    (void)state;
    double secs;
    int st = run_train("", "--lr 1e30", &secs);
    const char *at = strstr(g_out, "the loss became");
    if (st != 1 || !at) fprintf(stderr, "status %d after %.1f s:\n%s\n", st, secs, g_out);
    assert_int_equal(st, 1);
    assert_null(strstr(g_out, MPIRUN_TIME_LIMIT)); /* it ended by itself */
    assert_non_null(at);
    assert_int_equal(count(g_out, "the loss became"), 1);
    char line[512];
    line_at(at, line, sizeof line);
    assert_non_null(strstr(line, "at iteration 2"));
    assert_non_null(strstr(line, "rank "));
    assert_non_null(strstr(line, "--lr"));
    assert_null(strstr(g_out, "MPI_ABORT"));
    assert_null(strstr(g_out, "done:"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_killed_rank_ends_the_job_and_is_named),
        cmocka_unit_test(a_hung_rank_times_out_and_the_waiting_ranks_name_it),
        cmocka_unit_test(a_diverging_loss_stops_every_rank_with_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
