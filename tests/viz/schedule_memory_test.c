/* schedule_memory_test.c — the activations-held curve: its peak is the plan's own count
 * (pp_plan_holds_of) and the simulator's, so the memory claims read off the picture — 1F1B
 * holds p − r on rank r, GPipe m, ZB-H1 no more than 1F1B's p — and a cut ends the curve. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"
#include "tests/support/testing.h"
#include "viz/schedule_memory.h"

static void build(pp_kind kind, int p, int m, int v, pp_schedule *s, pp_sim *sim) {
    pp_config cfg = {kind, p, m, v};
    pp_schedule_build(&cfg, s);
    pp_costs costs = pp_costs_default(&cfg);
    char msg[256];
    if (!pp_simulate(s, &costs, sim, msg, sizeof msg)) fail_msg("%s", msg);
}

/* The peak of each rank's curve: the plan's sets and the simulator's in-flight count. */
static int peak_of(const pp_schedule *s, const pp_sim *sim, int r) {
    viz_sched_mem_curve c;
    viz_sched_mem_compute(&s->ranks[r], s->cfg.v, &sim->ranks[r], sim->makespan, 0, &c);
    pp_plan_holds h = pp_plan_holds_of(&s->ranks[r], s->cfg.v);
    assert_int_equal(c.peak, h.sets);
    assert_int_equal(c.peak, sim->ranks[r].peak_inflight);
    assert_true(c.steps[0].t == 0);
    assert_int_equal(c.steps[c.n - 1].sets, 0); /* everything is given back by the end */
    for (int i = 1; i < c.n; i++) assert_true(c.steps[i].t > c.steps[i - 1].t);
    assert_true(c.t_end == sim->makespan);
    pp_plan_holds_free(&h);
    const int peak = c.peak;
    viz_sched_mem_free(&c);
    return peak;
}

static void peaks_are_the_schedules_memory_claims(void **state) {
    (void)state;
    pp_schedule s;
    pp_sim sim;
    const int p = 4, m = 8;
    build(PP_1F1B, p, m, 1, &s, &sim);
    for (int r = 0; r < p; r++) assert_int_equal(peak_of(&s, &sim, r), p - r);
    pp_sim_free(&sim), pp_schedule_free(&s);
    build(PP_GPIPE, p, m, 1, &s, &sim);
    for (int r = 0; r < p; r++) assert_int_equal(peak_of(&s, &sim, r), m);
    pp_sim_free(&sim), pp_schedule_free(&s);
    build(PP_ZB_H1, p, m, 1, &s, &sim);
    for (int r = 0; r < p; r++) assert_true(peak_of(&s, &sim, r) <= p);
    pp_sim_free(&sim), pp_schedule_free(&s);
}

/* 1F1B p = 4 rank 0, F = 1, B = 2: F0..F3 start at 0, 1, 2, 3 (one more set each), B0 ends at
 * 12 while F4 starts there (one step: 4 held on). A cut at 2.5 keeps the steps before it. */
static void steps_follow_the_simulated_times_and_a_cut_ends_them(void **state) {
    (void)state;
    pp_schedule s;
    pp_sim sim;
    build(PP_1F1B, 4, 8, 1, &s, &sim);
    viz_sched_mem_curve c;
    viz_sched_mem_compute(&s.ranks[0], 1, &sim.ranks[0], sim.makespan, 0, &c);
    for (int i = 0; i < 4; i++) /* F0 at 0 merged into the start: {0, 1} */
        assert_true(c.steps[i].t == i && c.steps[i].sets == i + 1);
    assert_true(c.peak_t == 3);
    for (int i = 5; i < c.n; i++) assert_true(c.steps[i].t != 12 || c.steps[i].sets == 4);
    viz_sched_mem_free(&c);
    viz_sched_mem_compute(&s.ranks[0], 1, &sim.ranks[0], sim.makespan, 2.5, &c);
    assert_int_equal(c.n, 3); /* {0, 1} {1, 2} {2, 3} */
    assert_true(c.t_end == 2.5 && c.peak == 3 && c.steps[c.n - 1].t == 2);
    viz_sched_mem_free(&c);
    pp_sim_free(&sim), pp_schedule_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(peaks_are_the_schedules_memory_claims),
        cmocka_unit_test(steps_follow_the_simulated_times_and_a_cut_ends_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
