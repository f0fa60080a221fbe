/* ideal_rows_test.c — the hand-timed step (synthetic_run.h) under its ideal: the plan is the
 * run's 1F1B played with each stage's own mean F and B and its 0.1 ms messages, so every box of
 * the ideal rows is a known time; the plan is the one --what-if-schedule starts from; a step of
 * another pipeline is refused; and drawn (render --ideal --critical-path), the ideal boxes are
 * paler than the measured ones and the path's boxes carry the bold outline. */
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/analyze/critical_path.h"
#include "src/analyze/ideal_rows.h"
#include "src/analyze/replan.h"
#include "src/analyze/step_graph.h"
#include "tests/analyze/synthetic_run.h"
#include "tests/support/testing.h"
#include "viz/timeline_draw.h"
#include "viz/timeline_layout.h"
#include "viz/timeline_load.h"

static viz_timeline *measured(const trace_run *run) {
    char err[512];
    viz_timeline *tl = viz_timeline_from_run(run, "syn", -1, err, sizeof err);
    if (!tl) fail_msg("%s", err);
    return tl;
}

static void expect_box(const viz_tl_box *b, viz_tl_kind kind, int mb, double start_ms,
                       double end_ms) {
    assert_int_equal(b->kind, kind);
    assert_int_equal(b->microbatch, mb);
    assert_int_equal(b->chunk, 0);
    if (fabs(b->start - start_ms * SYN_MS) > 1e-12 || fabs(b->end - end_ms * SYN_MS) > 1e-12)
        fail_msg("%s %d: [%.4f, %.4f] ms, want [%.4f, %.4f]", viz_tl_kind_name(kind), mb,
                 b->start / SYN_MS, b->end / SYN_MS, start_ms, end_ms);
}

/* Stage 0: F 1, B 2; stage 1: F 2, B 3; messages 0.1 ms; 1F1B, m = 2:
 *   ideal rank 0  |F0|F1|          ..... |B0 6.2-8.2|      ..... |B1 11.2-13.2|
 *   ideal rank 1      |F0 1.1-3.1|B0 3.1-6.1|F1 6.1-8.1|B1 8.1-11.1|               */
static void ideal_rows_are_the_plan_with_the_stages_own_costs(void **state) {
    (void)state;
    trace_run *run = synthetic_run_load("ideal_rows_known");
    viz_timeline *tl = measured(run);
    ideal_plan plan;
    char err[512];
    if (!ideal_plan_simulate(run, -1, &plan, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(plan.sc.cfg.kind, PP_1F1B);
    assert_int_equal(plan.sc.cfg.p, 2);
    assert_int_equal(plan.sc.cfg.m, 2);
    assert_true(fabs(plan.sim.makespan - 13.2 * SYN_MS) < 1e-12);
    viz_timeline *ideal = ideal_rows_build(&plan, tl, err, sizeof err);
    if (!ideal) fail_msg("%s", err);
    assert_int_equal(ideal->nrows, tl->nrows);
    for (int k = 0; k < 2; k++) assert_int_equal(ideal->rows[k].pp_rank, tl->rows[k].pp_rank);
    assert_int_equal(ideal->rows[0].nboxes, 4);
    assert_int_equal(ideal->rows[1].nboxes, 4);
    /* the first forward starts at the step's start and lasts stage 0's mean F */
    expect_box(&ideal->rows[0].boxes[0], VIZ_TL_FORWARD, 0, 0, 1);
    expect_box(&ideal->rows[0].boxes[1], VIZ_TL_FORWARD, 1, 1, 2);
    expect_box(&ideal->rows[0].boxes[2], VIZ_TL_BACKWARD, 0, 6.2, 8.2);
    expect_box(&ideal->rows[0].boxes[3], VIZ_TL_BACKWARD, 1, 11.2, 13.2);
    expect_box(&ideal->rows[1].boxes[0], VIZ_TL_FORWARD, 0, 1.1, 3.1);
    expect_box(&ideal->rows[1].boxes[1], VIZ_TL_BACKWARD, 0, 3.1, 6.1);
    expect_box(&ideal->rows[1].boxes[2], VIZ_TL_FORWARD, 1, 6.1, 8.1);
    expect_box(&ideal->rows[1].boxes[3], VIZ_TL_BACKWARD, 1, 8.1, 11.1);
    /* --what-if-schedule starts from the same plan */
    replan_result r;
    if (!replan_step(run, SYN_STEP, "gpipe", 0, &r, err, sizeof err)) fail_msg("%s", err);
    assert_true(r.own_makespan == plan.sim.makespan);
    viz_timeline_free(ideal);
    ideal_plan_free(&plan);
    viz_timeline_free(tl);
    trace_run_free(run);
}

static void a_step_of_another_pipeline_is_refused(void **state) {
    (void)state;
    trace_run *run = synthetic_run_load("ideal_rows_other");
    ideal_plan plan;
    char err[512];
    if (!ideal_plan_simulate(run, -1, &plan, err, sizeof err)) fail_msg("%s", err);
    viz_timeline *four = viz_timeline_new("four", "1f1b", 1, 4, 1, 1, 2);
    viz_timeline_finish(four);
    assert_null(ideal_rows_build(&plan, four, err, sizeof err));
    assert_non_null(strstr(err, "p = 2"));
    assert_non_null(strstr(err, "p = 4"));
    viz_timeline_free(four);
    ideal_plan_free(&plan);
    trace_run_free(run);
}

static unsigned pixel_at(cairo_surface_t *s, double x, double y) {
    const unsigned char *d = cairo_image_surface_get_data(s);
    return *(const unsigned *)(d + (size_t)y * (size_t)cairo_image_surface_get_stride(s) +
                               4 * (size_t)x);
}
static int brightness(unsigned v) { return (int)((v >> 16) & 255) + ((v >> 8) & 255) + (v & 255); }

/* The synthetic step drawn as `render --ideal --critical-path` draws it. */
static void drawn_ideal_is_paler_and_the_path_is_outlined(void **state) {
    (void)state;
    trace_run *run = synthetic_run_load("ideal_rows_drawn");
    viz_timeline *tl = measured(run);
    ideal_plan plan;
    char err[512];
    if (!ideal_plan_simulate(run, -1, &plan, err, sizeof err)) fail_msg("%s", err);
    viz_tl_overlay ov = {.ideal = ideal_rows_build(&plan, tl, err, sizeof err)};
    step_graph g;
    if (!step_graph_build(run, tl->step, &g, err, sizeof err)) fail_msg("%s", err);
    double *t = malloc(2 * (size_t)g.n * sizeof *t);
    step_graph_recorded(&g, t);
    critical_path cp;
    critical_path_find(&g, t, &cp);
    viz_tl_path_seg *segs = critical_path_overlay(&cp);
    ov.path = segs, ov.npath = cp.n;
    snprintf(ov.caption, sizeof ov.caption, "ideal rows and the critical path");
    const viz_timeline *tls[1] = {tl};
    char path[4300];
    snprintf(path, sizeof path, "%s/overlay.png", test_tmpdir("ideal_rows_png"));
    viz_timeline_draw(path, tls, 1, &(viz_tl_draw_options){.width = 1000, .overlays = &ov});
    viz_tl_layout L;
    viz_tl_layout_compute_overlaid(&L, tls, &ov, 1, 1000, NULL, 0, NULL);
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    const viz_tl_panel_layout *P = &L.panels[0];
    const viz_tl_row_layout *R0 = P->rows[0].rank == 0 ? &P->rows[0] : &P->rows[1];
    /* rank 0's F0: measured [0, 1] ms, ideal [0, 1] ms; inside both, away from the labels */
    const double x = R0->boxes[0].x + R0->boxes[0].w * 0.15;
    const unsigned m = pixel_at(s, x, R0->lane_y + R0->lane_h * 0.25);
    const unsigned i = pixel_at(s, x, R0->ideal_y + R0->ideal_h * 0.3);
    if (!(brightness(i) > brightness(m) + 120))
        fail_msg("ideal pixel %06x is not paler than the measured %06x", i & 0xffffff,
                 m & 0xffffff);
    /* the path starts on rank 0's F0: its left edge carries the outline colour */
    assert_int_equal(P->npath, cp.n);
    assert_true(fabs(P->path[0].x - R0->boxes[0].x) < 1e-9);
    const unsigned e = pixel_at(s, P->path[0].x + 1, P->path[0].y + P->path[0].h / 2);
    if ((e & 0xffffff) != 0) fail_msg("path edge pixel %06x, want black", e & 0xffffff);
    cairo_surface_destroy(s);
    viz_tl_layout_free(&L);
    critical_path_free(&cp);
    free(segs);
    free(t);
    step_graph_free(&g);
    viz_timeline_free((viz_timeline *)ov.ideal);
    ideal_plan_free(&plan);
    viz_timeline_free(tl);
    trace_run_free(run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ideal_rows_are_the_plan_with_the_stages_own_costs),
        cmocka_unit_test(a_step_of_another_pipeline_is_refused),
        cmocka_unit_test(drawn_ideal_is_paler_and_the_path_is_outlined),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
