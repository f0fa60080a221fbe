/* stage_costs_test.c — a run's pipeline costs per virtual stage (src/pp/stage_costs.h), from
 * forged traces whose costs are known: each stage's own means, the split backward's W apart and
 * inside the whole backward, the first step left out (or one step alone), the V placement's
 * stages, and the simulator taking them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/pp/schedule_sim.h"
#include "src/pp/stage_costs.h"
#include "tests/support/testing.h"

/* Forward, B and W of chunk c on pipeline rank r cost this (seconds); the first step 10x. */
static double cost_of(int kind, int r, int c) {
    const double base = 0.001 * (1 + r + 2 * c); /* every (rank, chunk) its own */
    return kind == TRACE_FORWARD ? base : kind == TRACE_BACKWARD ? 1.5 * base : 0.5 * base;
}

/* A 2-rank zbv run, 2 steps of m = 2 micro-batches, written under dir/trace/. */
static void forge_zbv_run(const char *dir) {
    static const int kinds[3] = {TRACE_FORWARD, TRACE_BACKWARD, TRACE_WEIGHT};
    for (int r = 0; r < 2; r++) {
        trace_header h = {0};
        h.rank = r, h.world_size = 2, h.tp = 1, h.pp = 2, h.dp = 1, h.vpp = 2, h.pp_rank = r;
        h.num_microbatches = 2;
        strcpy(h.schedule, "zbv");
        strcpy(h.run_id, "stage-costs");
        h.config_json = "{}";
        trace_recorder *t = trace_create(&h, 256);
        double now = 0;
        for (int step = 1; step <= 2; step++)
            for (int k = 0; k < 3; k++)
                for (int c = 0; c < 2; c++)
                    for (int mb = 0; mb < 2; mb++) {
                        const double d = cost_of(kinds[k], r, c) * (step == 1 ? 10 : 1);
                        trace_record(t, kinds[k], step, mb, c, now, now + d);
                        now += d;
                    }
        char path[4200];
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, r);
        trace_write(t, path);
        trace_destroy(t);
    }
}

static void each_stage_gets_its_own_means(void **state) {
    (void)state;
    const char *dir = test_tmpdir("stage_costs");
    forge_zbv_run(dir);
    char err[512];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    stage_costs sc;
    if (!stage_costs_measure(run, &sc, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(sc.cfg.kind, PP_ZBV);
    assert_int_equal(sc.S, 4);
    assert_int_equal(sc.from_step, 2);        /* the first step is warm-up */
    assert_int_equal(sc.nforward, 2 * 2 * 2); /* 2 ranks × 2 chunks × 2 micro-batches */
    assert_int_equal(sc.nweight, 8);
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 2; c++) {
            const int s = pp_stage(&sc.cfg, r, c); /* the V: rank 0 chunk 1 is stage 3 */
            assert_true(fabs(sc.forward[s] - cost_of(TRACE_FORWARD, r, c)) < 1e-12);
            assert_true(fabs(sc.weight[s] - cost_of(TRACE_WEIGHT, r, c)) < 1e-12);
            assert_true(fabs(sc.whole[s] - cost_of(TRACE_BACKWARD, r, c) -
                             cost_of(TRACE_WEIGHT, r, c)) < 1e-12);
        }
    assert_true(fabs(sc.forward[3] - cost_of(TRACE_FORWARD, 0, 1)) < 1e-12);

    /* The simulator takes them: each action of the plan costs its stage's mean. */
    pp_costs c = stage_costs_as_pp_costs(&sc);
    pp_schedule s;
    pp_schedule_build(&sc.cfg, &s);
    pp_sim sim;
    char msg[512];
    assert_true(pp_simulate(&s, &c, &sim, msg, sizeof msg));
    for (int r = 0; r < 2; r++) {
        double busy = 0;
        for (int ch = 0; ch < 2; ch++)
            busy += 2 * (cost_of(TRACE_FORWARD, r, ch) + cost_of(TRACE_BACKWARD, r, ch) +
                         cost_of(TRACE_WEIGHT, r, ch));
        assert_true(fabs(sim.ranks[r].busy - busy) < 1e-12);
    }
    pp_sim_free(&sim);
    pp_schedule_free(&s);
    stage_costs_free(&sc);
    trace_run_free(run);
}

/* One step's own costs (the step a picture shows): step 1 alone costs 10x, and nothing of
 * step 2 is counted. */
static void one_step_alone_gets_its_own_costs(void **state) {
    (void)state;
    const char *dir = test_tmpdir("stage_costs_step");
    forge_zbv_run(dir);
    char err[512];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    stage_costs sc;
    if (!stage_costs_measure_step(run, 1, &sc, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(sc.from_step, 1);
    assert_int_equal(sc.to_step, 1);
    assert_int_equal(sc.nforward, 8);
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 2; c++)
            assert_true(fabs(sc.forward[pp_stage(&sc.cfg, r, c)] -
                             10 * cost_of(TRACE_FORWARD, r, c)) < 1e-12);
    stage_costs_free(&sc);
    assert_false(stage_costs_measure_step(run, 7, &sc, err, sizeof err)); /* no such step */
    assert_non_null(strstr(err, "from step 7"));
    trace_run_free(run);
}

/* A 1f1b run whose whole backwards record W's share (trace_set_weight_share): W inside each
 * stage's backward is that share of it; none is split. */
static void w_inside_whole_backwards(void **state) {
    (void)state;
    const char *dir = test_tmpdir("stage_costs_inside");
    for (int r = 0; r < 2; r++) {
        trace_header h = {0};
        h.rank = r, h.world_size = 2, h.tp = 1, h.pp = 2, h.dp = 1, h.vpp = 1, h.pp_rank = r;
        h.num_microbatches = 2;
        strcpy(h.schedule, "1f1b");
        strcpy(h.run_id, "stage-costs-inside");
        h.config_json = "{}";
        trace_recorder *t = trace_create(&h, 64);
        double now = 0;
        for (int mb = 0; mb < 2; mb++) {
            trace_record(t, TRACE_FORWARD, 1, mb, 0, now, now + 0.001);
            now += 0.001;
            const int b = trace_record(t, TRACE_BACKWARD, 1, mb, 0, now, now + 0.004);
            trace_set_weight_share(t, b, r == 0 ? 0.25 : 0.5);
            now += 0.004;
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, r);
        trace_write(t, path);
        trace_destroy(t);
    }
    char err[512];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    stage_costs sc;
    if (!stage_costs_measure(run, &sc, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(sc.nweight, 0);
    assert_int_equal(sc.ninside, 4);
    assert_true(fabs(sc.weight_inside[0] - 0.001) < 1e-12);
    assert_true(fabs(sc.weight_inside[1] - 0.002) < 1e-12);
    assert_true(fabs(sc.whole[1] - 0.004) < 1e-12); /* the whole backward stays whole */
    stage_costs_free(&sc);
    trace_run_free(run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_stage_gets_its_own_means),
        cmocka_unit_test(one_step_alone_gets_its_own_costs),
        cmocka_unit_test(w_inside_whole_backwards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
