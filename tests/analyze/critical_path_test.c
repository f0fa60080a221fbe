/* critical_path_test.c — the critical path of a hand-timed run (synthetic_run.h) is the known
 * chain, its segments add up to the step, a longer wait shows as a WAIT segment, and the
 * overlay a picture outlines is the path segment for segment. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "src/analyze/critical_path.h"
#include "src/analyze/step_graph.h"
#include "tests/analyze/synthetic_run.h"
#include "tests/support/testing.h"

static void build(const char *name, step_graph *g, double **t) {
    char err[512];
    trace_run *run = synthetic_run_load(name);
    if (!step_graph_build(run, -1, g, err, sizeof err)) fail_msg("%s", err);
    trace_run_free(run); /* the graph keeps its own timeline */
    *t = malloc(2 * (size_t)g->n * sizeof **t);
    step_graph_recorded(g, *t);
}

static void the_known_chain_across_both_ranks(void **state) {
    (void)state;
    step_graph g;
    double *t;
    build("critical_path_chain", &g, &t);
    critical_path p;
    critical_path_find(&g, t, &p);
    static const struct {
        int rank;
        cp_kind kind;
        double ms;
    } want[] = {{0, CP_FORWARD, 1},  {1, CP_TRANSFER, 0.1}, {1, CP_FORWARD, 2},
                {1, CP_BACKWARD, 3}, {1, CP_TRANSFER, 0.1}, {1, CP_TRANSFER, 0.1},
                {1, CP_FORWARD, 2},  {1, CP_BACKWARD, 3},   {0, CP_TRANSFER, 0.1},
                {0, CP_BACKWARD, 2}};
    const int n = (int)(sizeof want / sizeof want[0]);
    if (p.n != n) fail_msg("%d segments, want %d", p.n, n);
    double sum = 0;
    for (int i = 0; i < n; i++) {
        const cp_segment *s = &p.seg[i];
        assert_int_equal(s->rank, want[i].rank);
        assert_int_equal(s->kind, want[i].kind);
        assert_true(fabs(s->end - s->start - want[i].ms * SYN_MS) < 1e-12);
        if (i > 0) assert_true(s->start == p.seg[i - 1].end); /* one chain, no gaps */
        sum += s->end - s->start;
    }
    assert_true(fabs(sum - SYN_STEP) < 1e-12);
    assert_true(fabs(p.total - SYN_STEP) < 1e-12);
    assert_true(fabs(p.by_kind[CP_FORWARD] - 5 * SYN_MS) < 1e-12);
    assert_true(fabs(p.by_kind[CP_BACKWARD] - 8 * SYN_MS) < 1e-12);
    assert_true(fabs(p.by_kind[CP_TRANSFER] - 0.4 * SYN_MS) < 1e-12);
    critical_path_free(&p);
    free(t);
    step_graph_free(&g);
}

/* Data that arrives after its sender posted it (in flight 0.5 ms): the wait beyond the send's
 * start is on the path as WAIT, and the sum still is the step. */
static void a_wait_beyond_its_sender_is_a_wait_segment(void **state) {
    (void)state;
    step_graph g;
    double *t;
    build("critical_path_wait", &g, &t);
    /* rank 0's last receive: its wait ends 0.5 ms after the send began; shift what follows */
    int last_wait = -1;
    for (int i = 0; i < g.n; i++)
        if (g.nodes[i].rank == 0 && g.nodes[i].cls == VIZ_TC_WAIT) last_wait = i;
    const double d = 0.5 * SYN_MS;
    for (int q = 2 * last_wait + 1; q < 2 * g.n && q / 2 < g.n && g.nodes[q / 2].rank == 0; q++)
        t[q] += d;
    critical_path p;
    critical_path_find(&g, t, &p);
    assert_true(fabs(p.total - SYN_STEP - d) < 1e-12);
    assert_true(fabs(p.by_kind[CP_WAIT] - d) < 1e-12);
    double sum = 0;
    for (int i = 0; i < p.n; i++) sum += p.seg[i].end - p.seg[i].start;
    assert_true(fabs(sum - p.total) < 1e-12);
    critical_path_free(&p);
    free(t);
    step_graph_free(&g);
}

/* The table's rows: ops, and the gaps between them, in the path's order; they cover the
 * segments without a hole, so they add up to the step. The chain's 10 segments are 9 rows:
 * F0·r0 | recv | F0·r1 | B0·r1 | send+recv | F1·r1 | B1·r1 | recv | B1·r0. */
static void rows_are_the_ops_and_the_gaps_between_them(void **state) {
    (void)state;
    step_graph g;
    double *t;
    build("critical_path_rows", &g, &t);
    critical_path p;
    critical_path_find(&g, t, &p);
    cp_row *rows = malloc((size_t)p.n * sizeof *rows);
    const int n = critical_path_rows(&g, &p, rows);
    static const cp_kind want[] = {CP_FORWARD, CP_TRANSFER, CP_FORWARD,  CP_BACKWARD, CP_TRANSFER,
                                   CP_FORWARD, CP_BACKWARD, CP_TRANSFER, CP_BACKWARD};
    assert_int_equal(n, 9);
    double sum = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(rows[i].kind, want[i]);
        assert_int_equal(rows[i].first, i == 0 ? 0 : rows[i - 1].last + 1);
        assert_true(rows[i].inner == 0); /* no collective inside an op here */
        sum += rows[i].end - rows[i].start;
    }
    assert_int_equal(rows[n - 1].last, p.n - 1);
    assert_int_equal(rows[4].last - rows[4].first, 1); /* the send and the receive: one gap */
    assert_true(fabs(sum - p.total) < 1e-12);
    free(rows);
    critical_path_free(&p);
    free(t);
    step_graph_free(&g);
}

/* What `render --critical-path` outlines: one segment per path segment, on its rank at its
 * times, idle ones (the lead-in, untraced time) marked. */
static void the_overlay_is_the_path_segment_for_segment(void **state) {
    (void)state;
    step_graph g;
    double *t;
    build("critical_path_overlay", &g, &t);
    critical_path p;
    critical_path_find(&g, t, &p);
    viz_tl_path_seg *o = critical_path_overlay(&p);
    for (int i = 0; i < p.n; i++) {
        assert_int_equal(o[i].rank, p.seg[i].rank);
        assert_true(o[i].start == p.seg[i].start && o[i].end == p.seg[i].end);
        assert_false(o[i].idle); /* the known chain has no idle time */
    }
    free(o);
    cp_segment idle[2] = {{-1, 1, CP_IDLE, 0, 1e-3}, {4, 1, CP_FORWARD, 1e-3, 2e-3}};
    critical_path two = {.n = 2, .seg = idle};
    o = critical_path_overlay(&two);
    assert_true(o[0].idle && !o[1].idle);
    assert_int_equal(o[0].rank, 1);
    free(o);
    critical_path_free(&p);
    free(t);
    step_graph_free(&g);
}

/* A path that leaves an op for a transfer and comes back to it (a tensor-parallel collective
 * inside a forward) is one row, the transfer counted inside it. */
static void an_op_interrupted_by_a_transfer_is_one_row(void **state) {
    (void)state;
    step_graph g;
    double *t;
    build("critical_path_inner", &g, &t);
    int f = -1, x = -1;
    for (int i = 0; i < g.n; i++) {
        const viz_tl_box *b = step_graph_box(&g, i);
        if (f < 0 && g.nodes[i].rank == 0 && b && b->kind == VIZ_TL_FORWARD) f = i;
        if (x < 0 && g.nodes[i].cls == VIZ_TC_TRANSFER) x = i;
    }
    assert_true(f >= 0 && x >= 0);
    cp_segment seg[3] = {{f, 0, CP_FORWARD, 0, 1e-3},
                         {x, g.nodes[x].rank, CP_TRANSFER, 1e-3, 1.5e-3},
                         {f, 0, CP_FORWARD, 1.5e-3, 2e-3}};
    critical_path p = {.n = 3, .seg = seg, .total = 2e-3};
    cp_row rows[3];
    assert_int_equal(critical_path_rows(&g, &p, rows), 1);
    assert_int_equal(rows[0].kind, CP_FORWARD);
    assert_int_equal(rows[0].last, 2);
    assert_true(fabs(rows[0].inner - 0.5e-3) < 1e-15);
    assert_int_equal(rows[0].nranks, g.nodes[x].rank == 0 ? 1 : 2);
    free(t);
    step_graph_free(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_known_chain_across_both_ranks),
        cmocka_unit_test(a_wait_beyond_its_sender_is_a_wait_segment),
        cmocka_unit_test(rows_are_the_ops_and_the_gaps_between_them),
        cmocka_unit_test(an_op_interrupted_by_a_transfer_is_one_row),
        cmocka_unit_test(the_overlay_is_the_path_segment_for_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
