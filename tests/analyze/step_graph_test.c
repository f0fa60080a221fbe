/* step_graph_test.c — the step graph of a hand-timed run (synthetic_run.h): its pieces, its
 * edges, and its re-timing with the recorded durations giving the recorded times back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/analyze/step_graph.h"
#include "src/trace/replay.h"
#include "tests/analyze/synthetic_run.h"
#include "tests/support/testing.h"

static void pieces_edges_and_the_step_end(void **state) {
    (void)state;
    trace_run *run = synthetic_run_load("step_graph_pieces");
    step_graph g;
    char err[512];
    if (!step_graph_build(run, -1, &g, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(g.step, 1);
    /* rank 0: F0 s F1 s wait x B0 wait x B1; rank 1: wait x F0 B0 s wait(0) x F1 B1 s */
    assert_int_equal(g.n, 20);
    int per_kind[5] = {0}, waits = 0, zero_waits = 0;
    for (int e = 0; e < g.nedges; e++) per_kind[g.edges[e].kind]++;
    for (int i = 0; i < g.n; i++)
        if (g.nodes[i].cls == VIZ_TC_WAIT) {
            waits++;
            zero_waits += g.nodes[i].end == g.nodes[i].start;
            assert_true(g.nodes[i].dur == 0);
        }
    assert_int_equal(per_kind[SG_PROGRAM], 18);
    assert_int_equal(per_kind[SG_P2P], 4); /* one per message pair, send -> receive's wait */
    assert_int_equal(waits, 4);            /* every receive has one */
    assert_int_equal(zero_waits, 1);       /* rank 1's second receive did not wait */
    for (int e = 0; e < g.nedges; e++)
        if (g.edges[e].kind == SG_P2P) {
            const sg_edge *x = &g.edges[e];
            assert_false(x->from_end);
            assert_true(x->to_end);
            assert_int_equal(step_graph_box(&g, x->from)->kind, VIZ_TL_SEND);
            assert_int_equal(g.nodes[x->to].cls, VIZ_TC_WAIT);
        }
    assert_true(fabs(g.t_end - SYN_STEP) < 1e-12);
    step_graph_free(&g);
    trace_run_free(run);
}

static void retiming_with_recorded_costs_gives_the_recorded_times(void **state) {
    (void)state;
    trace_run *run = synthetic_run_load("step_graph_retime");
    char err[512];
    trace_run *rep = trace_run_replay(run, err, sizeof err);
    if (!rep) fail_msg("%s", err);
    const trace_run *views[2] = {run, rep};
    for (int v = 0; v < 2; v++) {
        step_graph g;
        if (!step_graph_build(views[v], -1, &g, err, sizeof err)) fail_msg("%s", err);
        double *rec = malloc(2 * (size_t)g.n * sizeof *rec),
               *t = malloc(2 * (size_t)g.n * sizeof *t);
        step_graph_recorded(&g, rec);
        step_graph_retime(&g, NULL, t);
        for (int q = 0; q < 2 * g.n; q++)
            if (fabs(t[q] - rec[q]) > 1e-9)
                fail_msg("view %d point %d: %g != %g", v, q, t[q], rec[q]);
        free(rec);
        free(t);
        step_graph_free(&g);
    }
    trace_run_free(rep);
    trace_run_free(run);
}

static void a_step_that_is_not_there_is_named(void **state) {
    (void)state;
    trace_run *run = synthetic_run_load("step_graph_missing");
    step_graph g;
    char err[512];
    assert_false(step_graph_build(run, 7, &g, err, sizeof err));
    assert_non_null(strstr(err, "step 7"));
    trace_run_free(run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pieces_edges_and_the_step_end),
        cmocka_unit_test(retiming_with_recorded_costs_gives_the_recorded_times),
        cmocka_unit_test(a_step_that_is_not_there_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
