/* schedule_dualpipev_test.c — DualPipeV's order (src/pp/schedule_dualpipev.c): its eight steps
 * add up to every F, B and W once per (micro-batch, chunk) in order, it runs (validated:
 * deadlock-free, every message matched), what it holds, and what the simulation says of its
 * bubble against the published formula. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"
#include "tests/support/testing.h"

/* Every rank's plan, p <= 8, 2p <= m <= 24: 6m actions; per chunk F's and B's in micro-batch
 * order, each B after its F, each W once after its B; at most 2p + 1 chunk sets held at once,
 * exactly that on every rank (DualPipe's "PP + 1" activations: one chunk set more than
 * 1F1B's p stage sets); validated. */
static void plans_hold_every_action_once_and_run(void **state) {
    (void)state;
    char msg[512];
    for (int p = 1; p <= 8; p++)
        for (int m = 2 * p; m <= 24; m++) {
            const pp_config cfg = {PP_DUALPIPEV, p, m, 2};
            pp_schedule s;
            pp_schedule_build(&cfg, &s);
            if (!pp_validate(&s, msg, sizeof msg)) fail_msg("p=%d m=%d: %s", p, m, msg);
            for (int r = 0; r < p; r++) {
                const pp_rank_plan *plan = &s.ranks[r];
                assert_int_equal(plan->n, 6 * m);
                int f[2] = {0, 0}, b[2] = {0, 0}, w = 0;
                char *wdone = calloc((size_t)(2 * m), 1);
                for (int i = 0; i < plan->n; i++) {
                    const pp_action *a = &plan->actions[i];
                    const int c = a->chunk;
                    assert_int_equal(a->stage, pp_stage(&cfg, r, c));
                    if (a->op == PP_FORWARD) assert_int_equal(a->mb, f[c]++);
                    if (a->op == PP_BACKWARD_INPUT) assert_int_equal(a->mb, b[c]++);
                    if (a->op == PP_BACKWARD_INPUT) assert_true(a->mb < f[c]);
                    if (a->op == PP_WEIGHT) {
                        assert_true(a->mb < b[c] && !wdone[a->mb * 2 + c]);
                        wdone[a->mb * 2 + c] = 1, w++;
                    }
                }
                assert_true(f[0] == m && f[1] == m && b[0] == m && b[1] == m && w == 2 * m);
                pp_plan_holds h = pp_plan_holds_of(plan, 2);
                if (h.sets != 2 * p + 1)
                    fail_msg("p=%d m=%d rank %d holds %d chunk sets, not 2p + 1", p, m, r, h.sets);
                pp_plan_holds_free(&h);
                free(wdone);
            }
            pp_schedule_free(&s);
        }
}

/* Fewer than 2p micro-batches: refused, naming m and the rule. */
static void fewer_than_2p_micro_batches_are_refused(void **state) {
    (void)state;
    char msg[256];
    const pp_config cfg = {PP_DUALPIPEV, 4, 7, 2};
    assert_false(pp_config_valid(&cfg, msg, sizeof msg));
    assert_non_null(strstr(msg, "m = 7 micro-batches is fewer than 2p = 8"));
}

/* The bubble, simulated with free communication and each overlapped pair run as its F then its
 * B (F&B = F + B, as Trident runs it). Published (DualPipe's README, per chunk, B a whole
 * backward): (p − 1)(F&B + B − 3W). At F = Bi = W (unit chunk costs: F = 1, B = 2, W = 1) that
 * is 2(p − 1) per rank; the simulation gives (p − 1): only the fill of the V, the least any
 * schedule can have, like ZB-V's (p − 1)/(6m + p − 1) — the W's DualPipeV defers fill the
 * rest. Checked for every p <= 8, 2p <= m <= 24. */
static void bubble_at_equal_costs_is_only_the_fill_of_the_v(void **state) {
    (void)state;
    char msg[512];
    for (int p = 2; p <= 8; p++)
        for (int m = 2 * p; m <= 24; m++) {
            const pp_config cfg = {PP_DUALPIPEV, p, m, 2};
            pp_schedule s;
            pp_schedule_build(&cfg, &s);
            pp_costs c = pp_costs_unit();
            c.forward = 1, c.backward = 2; /* one chunk: F = 1, B = 1, W = 1 */
            pp_sim sim;
            if (!pp_simulate(&s, &c, &sim, msg, sizeof msg)) fail_msg("%s", msg);
            const double published = 2.0 * (p - 1); /* (p−1)(F&B + B − 3W), F&B = 3, B = 2 */
            for (int r = 0; r < p; r++) {
                const double idle = sim.makespan - sim.ranks[r].busy;
                if (fabs(idle - (p - 1)) > 1e-9)
                    fail_msg("p=%d m=%d rank %d idles %g, not p - 1 = %d (published %g)", p, m, r,
                             idle, p - 1, published);
            }
            assert_true(fabs(sim.bubble_fraction - pp_textbook_of_total(&cfg, NULL, 0)) < 1e-12);
            pp_sim_free(&sim);
            pp_schedule_free(&s);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plans_hold_every_action_once_and_run),
        cmocka_unit_test(fewer_than_2p_micro_batches_are_refused),
        cmocka_unit_test(bubble_at_equal_costs_is_only_the_fill_of_the_v),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
