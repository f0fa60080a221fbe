/* replan_test.c — the hand-timed step (synthetic_run.h) re-planned: under its own schedule it
 * is predicted as measured, under GPipe as the plan with its measured costs says, and
 * schedules it cannot run under are refused with the rule. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/analyze/replan.h"
#include "tests/analyze/synthetic_run.h"
#include "tests/support/testing.h"

static void own_schedule_is_the_measured_step_and_gpipe_its_plan(void **state) {
    (void)state;
    trace_run *run = synthetic_run_load("replan_known");
    replan_result r;
    char err[512];
    if (!replan_step(run, SYN_STEP, "1f1b", 0, &r, err, sizeof err)) fail_msg("%s", err);
    assert_true(fabs(r.predicted_step - SYN_STEP) < 1e-15);
    /* 1F1B with the stages' own costs and 0.1 ms per message: rank 0's last B ends at 13.2 */
    assert_true(fabs(r.own_makespan - 13.2 * SYN_MS) < 1e-12);
    if (!replan_step(run, SYN_STEP, "gpipe", 0, &r, err, sizeof err)) fail_msg("%s", err);
    /* GPipe at m = 2: rank 1 runs F0 F1 B0 B1 back to back from 1.1 ms, rank 0's B1 ends at
     * 13.2 again: the same step */
    assert_true(fabs(r.target_makespan - 13.2 * SYN_MS) < 1e-12);
    assert_true(fabs(r.predicted_step - SYN_STEP) < 1e-12);
    assert_false(r.weight_assumed);
    if (!replan_step(run, SYN_STEP, "zb-h1", 0, &r, err, sizeof err)) fail_msg("%s", err);
    assert_true(r.weight_assumed); /* the run did not split its backward */
    assert_true(r.target_makespan < r.own_makespan);
    if (!replan_step(run, SYN_STEP, "interleaved", 2, &r, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(r.target.v, 2);
    trace_run_free(run);
}

static void schedules_that_cannot_run_are_refused(void **state) {
    (void)state;
    trace_run *run = synthetic_run_load("replan_bad");
    replan_result r;
    char err[512];
    assert_false(replan_step(run, SYN_STEP, "pipedream", 0, &r, err, sizeof err));
    assert_non_null(strstr(err, "not a schedule"));
    assert_false(replan_step(run, SYN_STEP, "zbv", 3, &r, err, sizeof err));
    assert_non_null(strstr(err, "--what-if-schedule zbv"));
    assert_false(replan_step(run, SYN_STEP, "dualpipev", 0, &r, err, sizeof err));
    assert_non_null(strstr(err, "fewer than 2p")); /* m = 2 micro-batches at p = 2 */
    trace_run_free(run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(own_schedule_is_the_measured_step_and_gpipe_its_plan),
        cmocka_unit_test(schedules_that_cannot_run_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
