/* bubble_causes_test.c — the causes of a hand-timed run's bubble (synthetic_run.h) are the
 * known ones, and add up to the measured bubble within 1e-9, rank by rank and on average. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "src/analyze/bubble_causes.h"
#include "src/trace/replay.h"
#include "tests/analyze/synthetic_run.h"
#include "tests/support/testing.h"
#include "viz/timeline_load.h"

static void assert_adds_up(const bc_shares *s) {
    double sum = s->schedule + s->imbalance + s->communication + s->sharing;
    if (fabs(sum - s->measured) > 1e-9)
        fail_msg("causes %.12f != measured %.12f", sum, s->measured);
}

static void the_slow_stage_is_imbalance_and_the_messages_communication(void **state) {
    (void)state;
    char err[512];
    trace_run *run = synthetic_run_load("bubble_causes_known");
    trace_run *rep = trace_run_replay(run, err, sizeof err);
    if (!rep) fail_msg("%s", err);
    viz_timeline *wall = viz_timeline_from_run(run, "wall", -1, err, sizeof err);
    viz_timeline *replay = viz_timeline_from_run(rep, "replay", -1, err, sizeof err);
    assert_non_null(wall);
    assert_non_null(replay);
    bubble_causes bc;
    if (!bubble_causes_measure(wall, replay, rep, &bc, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(bc.nranks, 2);
    assert_true(fabs(bc.span - SYN_STEP) < 1e-12);
    assert_true(fabs(bc.forward_mean - 1.5 * SYN_MS) < 1e-12);
    assert_true(fabs(bc.backward_mean - 2.5 * SYN_MS) < 1e-12);
    /* measured: rank 0 busy 6.4 of 13.4 ms, rank 1 10.4 (its last 2 ms idle) */
    const double measured[2] = {7.0 / 13.4, 3.0 / 13.4};
    /* the ideal 1F1B at mean costs idles (p-1)/(m+p-1) = 1/3 everywhere; with each stage's
     * own costs rank 0 idles 7 of 13 ms, rank 1 3 of 13; the replay is the recorded run */
    const double own[2] = {7.0 / 13, 3.0 / 13};
    for (int r = 0; r < 2; r++) {
        const bc_shares *s = &bc.rank[r];
        assert_true(fabs(s->measured - measured[r]) < 1e-9);
        assert_true(fabs(s->schedule - 1.0 / 3) < 1e-9);
        assert_true(fabs(s->imbalance - (own[r] - 1.0 / 3)) < 1e-9);
        assert_true(fabs(s->communication - (measured[r] - own[r])) < 1e-9);
        assert_true(fabs(s->sharing) < 1e-9);
        assert_adds_up(s);
    }
    assert_adds_up(&bc.mean);
    assert_true(fabs(bc.mean.measured - viz_timeline_bubble(wall).measured_total) < 1e-12);
    assert_true(bc.rank[0].imbalance > 0.15); /* the slow stage 1 keeps stage 0 waiting */
    bubble_causes_free(&bc);
    viz_timeline_free(wall);
    viz_timeline_free(replay);
    trace_run_free(rep);
    trace_run_free(run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_slow_stage_is_imbalance_and_the_messages_communication),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
