/* step_graph_test.c — the step graph of a hand-timed run (synthetic_run.h): its pieces, its
 * edges, and its re-timing with the recorded durations giving the recorded times back; and a
 * hand-timed step with buckets on the communication stream, one issued mid-computation. */
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

/* Each view of `run` (as recorded, replayed): its graph built, handed to `check` (may be
 * NULL), and re-timed with the recorded durations, which gives back every recorded point. */
typedef void view_check(const step_graph *g);
static void retimes_to_its_recorded_times(const trace_run *run, view_check *check) {
    char err[512];
    trace_run *rep = trace_run_replay(run, err, sizeof err);
    if (!rep) fail_msg("%s", err);
    const trace_run *views[2] = {run, rep};
    for (int v = 0; v < 2; v++) {
        step_graph g;
        if (!step_graph_build(views[v], -1, &g, err, sizeof err)) fail_msg("%s", err);
        if (check) check(&g);
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
}

static void retiming_with_recorded_costs_gives_the_recorded_times(void **state) {
    (void)state;
    trace_run *run = synthetic_run_load("step_graph_retime");
    retimes_to_its_recorded_times(run, NULL);
    trace_run_free(run);
}

/* A data-parallel step with --overlap-grad-reduce, by hand (ms): each rank's optimizer [0, 4]
 * holds a main-lane all-reduce and two buckets on the communication stream, the second issued
 * in the middle of a piece of compute — at 2.5 on rank 0 (after its all-reduce), at 1.1 on
 * rank 1 (before it) — and waited for at [3, 3.5]:
 *
 *   rank 0  main   |opt..|ar.|opt......^..|wait|opt|      ^ issued
 *           stream    |s1|           |s2.......|
 *   rank 1  main   |opt.^....|ar|opt......|wait|opt|
 */
static void bucket(trace_recorder *t, bool stream, const char *op, double a, double ready,
                   double end) {
    trace_comm_info ci = {.kind = TRACE_COLLECTIVE,
                          .op = op,
                          .group = "dp",
                          .label = "bucket",
                          .peer = -1,
                          .tag = -1,
                          .layer = -1,
                          .group_first = 0,
                          .bytes = 4096,
                          .t_start = a * SYN_MS,
                          .t_ready = ready * SYN_MS,
                          .t_end = end * SYN_MS,
                          .cpu = -1};
    if (stream) trace_comm_stream(t, &ci);
    else trace_comm_full(t, &ci);
}

static trace_run *overlapped_run(void) {
    const char *dir = test_tmpdir("step_graph_stream");
    for (int r = 0; r < 2; r++) {
        trace_recorder *t = synthetic_rank_open(r, 1, 2, 1, "analyze-stream");
        bucket(t, true, "all_reduce", 0.5, 0.5, 0.8);
        bucket(t, false, "all_reduce", r ? 1.2 : 1.0, r ? 1.2 : 1.0, 1.5);
        bucket(t, true, "all_reduce", r ? 1.1 : 2.5, r ? 1.1 : 2.5, 3.5); /* recorded */
        bucket(t, false, "wait", 3.0, 3.5, 3.5); /* right before its wait, as run.c does */
        trace_record(t, TRACE_OPTIMIZER, 1, -1, -1, 0, 4 * SYN_MS);
        trace_record(t, TRACE_STEP, 1, -1, -1, 0, 4.2 * SYN_MS); /* holds the optimizer */
        synthetic_rank_write(t, dir, r);
    }
    return synthetic_run_read(dir);
}

/* Rank 0's two buckets hand off from the compute that ended where each was issued. */
static void handoffs_leave_where_issued(const step_graph *g) {
    int handoffs = 0;
    for (int e = 0; e < g->nedges; e++) {
        const sg_edge *x = &g->edges[e];
        if (x->kind != SG_HANDOFF || g->nodes[x->to].rank != 0) continue;
        const double issued = g->nodes[x->to].start < 1 * SYN_MS ? 0.5 : 2.5;
        assert_true(fabs(g->nodes[x->from].end - issued * SYN_MS) < 1e-12);
        assert_int_equal(g->nodes[x->from].cls, VIZ_TC_COMPUTE);
        handoffs++;
    }
    assert_int_equal(handoffs, 2);
}

/* The stream's calls are matched with the stream's, the program's with the program's, the
 * exposed waits with nothing; the second bucket hands off from the piece of compute that
 * ends where it was issued; and both views re-time to their recorded times. */
static void a_bucket_issued_inside_a_computation_hands_off_there(void **state) {
    (void)state;
    trace_run *run = overlapped_run();
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < trace_file_num_events(run->ranks[r]); i++) {
            const trace_event *e = trace_file_event(run->ranks[r], i);
            const char *op = trace_file_string(run->ranks[r], e->op);
            if (e->kind != TRACE_COLLECTIVE) continue;
            if (strcmp(op, "wait") == 0) assert_int_equal(run->coll[r][i], -1);
            else assert_true(run->coll[r][i] >= 0);
            if (r == 1 && strcmp(op, "wait") != 0) /* the same call as rank 0's i-th */
                assert_int_equal(run->coll[1][i], run->coll[0][i]);
        }
    retimes_to_its_recorded_times(run, handoffs_leave_where_issued);
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
        cmocka_unit_test(a_bucket_issued_inside_a_computation_hands_off_there),
        cmocka_unit_test(a_step_that_is_not_there_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
