/* metrics_plot_test.c — loss curves: the layout numbers (shared step axis, panels stacked
 * without overlap, value ranges that hold every value), the legend labels, and a rendered PNG
 * checked for its size and for the runs' colours where their curves must be. */
#include "viz/metrics_plot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cairo.h>

#include "tests/support/testing.h"
#include "viz/axis.h"
#include "viz/canvas.h"

/* The label audit of viz/canvas.h found nothing in the picture just drawn. */
static void expect_no_layout_violations(void) {
    char bad[8192];
    if (viz_last_violations(bad, sizeof bad)) fail_msg("%s", bad);
}

enum { STEPS = 10 };

typedef struct {
    run_metrics m;
    run_metrics_step steps[STEPS];
    run_metrics_eval evals[2];
} fake_run;

/* Steps 1..10, loss falling from 5 by `slope`, lr rising, tokens/s flat at `tps`. */
static void fake(fake_run *r, const char *dir, const char *layout, double slope, double tps) {
    memset(r, 0, sizeof *r);
    snprintf(r->m.dir, sizeof r->m.dir, "%s", dir);
    snprintf(r->m.layout, sizeof r->m.layout, "%s", layout);
    for (int i = 0; i < STEPS; i++)
        r->steps[i] = (run_metrics_step){.step = i + 1,
                                         .loss = 5 - slope * i,
                                         .lr = 1e-4 * (i + 1),
                                         .grad_norm = i == 4 ? NAN : 2.0 / (i + 1),
                                         .tokens_per_sec = tps,
                                         .model_flops_per_s = NAN,
                                         .mfu = NAN};
    r->evals[0] = (run_metrics_eval){5, 4.2};
    r->evals[1] = (run_metrics_eval){10, 3.9};
    r->m.steps = r->steps;
    r->m.nsteps = STEPS;
    r->m.evals = r->evals;
    r->m.nevals = 2;
}

static void test_layout_shares_the_step_axis_and_holds_every_value(void **state) {
    (void)state;
    fake_run a, b;
    fake(&a, "runs/serial", "serial", 0.2, 9000);
    fake(&b, "runs/3d", "tp2×pp2×dp2, interleaved v2, ZeRO", 0.1, 3000);
    const run_metrics *runs[2] = {&a.m, &b.m};
    viz_metrics_layout l;
    assert_true(viz_metrics_layout_of(runs, 2, 1000, NULL, &l, NULL, 0));
    assert_true(l.step_lo == 1 && l.step_hi == 10);
    /* The steps inside the frame, so that points on the first and last step stay whole. */
    assert_true(fabs(viz_mp_x(&l, 1) - (l.panel[0].x + VIZ_MP_INSET)) < 1e-9);
    assert_true(fabs(viz_mp_x(&l, 10) - (l.panel[0].x + l.panel[0].w - VIZ_MP_INSET)) < 1e-9);
    for (int q = 0; q < VIZ_MP_PANELS; q++) {
        const viz_mp_panel *p = &l.panel[q];
        assert_false(p->empty);
        assert_true(p->x == l.panel[0].x && p->w == l.panel[0].w);          /* one step axis */
        if (q > 0) assert_true(p->y > l.panel[q - 1].y + l.panel[q - 1].h); /* below, apart */
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < STEPS; i++) {
                double v = viz_mp_value(&runs[r]->steps[i], (viz_mp_quantity)q);
                if (isfinite(v)) assert_true(v >= p->lo && v <= p->hi);
            }
        assert_true(p->tick_step > 0 && (p->hi - p->lo) / p->tick_step <= 10.0 + 1e-9);
    }
    /* The held-out loss is inside the loss panel's range too. */
    assert_true(l.panel[VIZ_MP_LOSS].lo <= 3.2 && l.panel[VIZ_MP_LOSS].hi >= 5);
    assert_true(l.height > l.panel[VIZ_MP_TOKENS].y + l.panel[VIZ_MP_TOKENS].h);
    /* Larger values are higher up. */
    assert_true(viz_mp_y(&l.panel[0], 5) < viz_mp_y(&l.panel[0], 4));
}

static void test_a_quantity_no_run_has_is_an_empty_panel(void **state) {
    (void)state;
    fake_run a;
    fake(&a, "runs/x", "", 0.2, 1000);
    for (int i = 0; i < STEPS; i++) a.steps[i].grad_norm = NAN;
    const run_metrics *runs[1] = {&a.m};
    viz_metrics_layout l;
    assert_true(viz_metrics_layout_of(runs, 1, 800, NULL, &l, NULL, 0));
    assert_true(l.panel[VIZ_MP_GRAD_NORM].empty);
    assert_false(l.panel[VIZ_MP_LOSS].empty);
    /* A flat quantity still gets a range around its value. */
    assert_true(l.panel[VIZ_MP_TOKENS].lo < 1000 && l.panel[VIZ_MP_TOKENS].hi > 1000);
}

static void test_labels_name_layout_and_directory(void **state) {
    (void)state;
    fake_run a;
    char buf[4400];
    fake(&a, "runs/3d", "tp2×pp2×dp2, 1f1b", 0.1, 1);
    viz_mp_label(&a.m, buf, sizeof buf);
    assert_string_equal(buf, "tp2×pp2×dp2, 1f1b — runs/3d");
    fake(&a, "runs/old", "", 0.1, 1);
    viz_mp_label(&a.m, buf, sizeof buf);
    assert_string_equal(buf, "runs/old");
}

/* Every panel of layout l: a finite range holding the values, a bounded tick count. */
static void expect_sane_axes(const viz_metrics_layout *l) {
    for (int q = 0; q < VIZ_MP_PANELS; q++) {
        const viz_mp_panel *p = &l->panel[q];
        assert_true(isfinite(p->lo) && isfinite(p->hi) && p->lo < p->hi);
        assert_true(p->tick_step > 0 && p->ticks >= 1 && p->ticks <= VIZ_AXIS_MAX_INTERVALS);
        assert_true(fabs(p->lo + p->ticks * p->tick_step - p->hi) <= 1e-9 * (p->hi - p->lo));
    }
    assert_true(l->step_hi > l->step_lo && l->step_tick >= 1);
}

/* Losses a hostile metrics.jsonl may hold that an axis can still span: a single point, all
 * equal, denormals, zeros, ±1e300 (issue 31: ±1e308 spun forever). */
static void test_extreme_but_drawable_values_give_bounded_axes(void **state) {
    (void)state;
    const double pairs[][2] = {{1e300, -1e300},  {4.9e-324, 4.9e-324}, {0, 0},           {-0.0, 0},
                               {1e-310, 1e-320}, {1e300, 1e300},       {-1e300, -1e300}, {7, 7},
                               {1e-300, 1e300}};
    for (size_t c = 0; c < sizeof pairs / sizeof pairs[0]; c++) {
        fake_run a;
        fake(&a, "runs/x", "", 0.2, 1000);
        for (int i = 0; i < STEPS; i++) a.steps[i].loss = pairs[c][i % 2];
        a.m.nevals = 0;
        const run_metrics *runs[1] = {&a.m};
        viz_metrics_layout l;
        assert_true(viz_metrics_layout_of(runs, 1, 800, NULL, &l, NULL, 0));
        expect_sane_axes(&l);
        const viz_mp_panel *p = &l.panel[VIZ_MP_LOSS];
        assert_true(pairs[c][0] >= p->lo && pairs[c][0] <= p->hi);
        assert_true(pairs[c][1] >= p->lo && pairs[c][1] <= p->hi);
    }
    fake_run one; /* a single logged step */
    fake(&one, "runs/one", "", 0.2, 1000);
    one.m.nsteps = 1, one.m.nevals = 0;
    const run_metrics *runs[1] = {&one.m};
    viz_metrics_layout l;
    assert_true(viz_metrics_layout_of(runs, 1, 800, NULL, &l, NULL, 0));
    expect_sane_axes(&l);
}

static void test_values_beyond_an_axis_are_refused_naming_them(void **state) {
    (void)state;
    fake_run a;
    fake(&a, "runs/huge", "", 0.2, 1000);
    a.steps[3].loss = -1e308;
    a.steps[6].loss = 1e308;
    const run_metrics *runs[1] = {&a.m};
    viz_metrics_layout l;
    char err[512];
    assert_false(viz_metrics_layout_of(runs, 1, 800, NULL, &l, err, sizeof err));
    assert_non_null(strstr(err, "'runs/huge/metrics.jsonl': loss -1e+308 at step 4"));
    fake(&a, "runs/huge", "", 0.2, 1000);
    a.evals[1].loss = 1.7e308;
    assert_false(viz_metrics_layout_of(runs, 1, 800, NULL, &l, err, sizeof err));
    assert_non_null(strstr(err, "eval_loss 1.7e+308 at step 10"));
    fake(&a, "runs/huge", "", 0.2, 1000);
    a.steps[0].lr = -1e301;
    assert_false(viz_metrics_layout_of(runs, 1, 800, NULL, &l, err, sizeof err));
    assert_non_null(strstr(err, "lr -1e+301 at step 1"));
    const char *dir = test_tmpdir("metrics_plot_huge"); /* and no picture is written */
    char path[4200];
    snprintf(path, sizeof path, "%s/huge.png", dir);
    assert_false(viz_metrics_plot(path, runs, 1, 1000, NULL, err, sizeof err));
    FILE *f = fopen(path, "rb");
    assert_null(f);
}

/* Is the pixel at (x, y), or one next to it, close to colour c? */
static bool colour_near(cairo_surface_t *s, double x, double y, viz_rgb c) {
    const unsigned char *px = cairo_image_surface_get_data(s);
    const int stride = cairo_image_surface_get_stride(s);
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            const unsigned char *p = px + ((int)y + dy) * stride + 4 * ((int)x + dx);
            /* ARGB32, little-endian: B G R A */
            if (fabs(p[2] / 255.0 - c.r) < 0.08 && fabs(p[1] / 255.0 - c.g) < 0.08 &&
                fabs(p[0] / 255.0 - c.b) < 0.08)
                return true;
        }
    return false;
}

static void test_png_has_the_layout_size_and_each_run_where_its_curve_is(void **state) {
    (void)state;
    fake_run a, b;
    fake(&a, "runs/serial", "serial", 0.2, 9000);
    fake(&b, "runs/3d", "tp2×pp2×dp2", 0.1, 3000); /* apart from a, so each is visible */
    const run_metrics *runs[2] = {&a.m, &b.m};
    const char *dir = test_tmpdir("metrics_plot");
    char path[4200];
    snprintf(path, sizeof path, "%s/curves.png", dir);
    assert_true(viz_metrics_plot(path, runs, 2, 1000, "test", NULL, 0));
    expect_no_layout_violations();
    viz_metrics_layout l;
    assert_true(viz_metrics_layout_of(runs, 2, 1000, NULL, &l, NULL, 0));
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(s), (int)l.width);
    assert_int_equal(cairo_image_surface_get_height(s), (int)l.height);
    /* Mid-way between two logged steps, on each run's own line (tokens/s: flat lines). */
    const viz_mp_panel *t = &l.panel[VIZ_MP_TOKENS];
    double x = viz_mp_x(&l, 6.5);
    assert_true(colour_near(s, x, viz_mp_y(t, 9000), viz_categorical(0)));
    assert_true(colour_near(s, x, viz_mp_y(t, 3000), viz_categorical(1)));
    /* The loss of run 0 at step 3 (5 - 0.2·2 = 4.6) is drawn in run 0's colour. */
    assert_true(
        colour_near(s, viz_mp_x(&l, 3), viz_mp_y(&l.panel[VIZ_MP_LOSS], 4.6), viz_categorical(0)));
    cairo_surface_destroy(s);
}

/* The loss panel's reference levels: the axis spans them (the floor lies below every loss),
 * each line sits at its value inside the panel, NAN levels are skipped; in the PNG the line is
 * drawn across the panel and the last held-out point is a whole dot inside the frame. */
static void test_reference_levels_and_the_held_out_point_are_inside_the_loss_panel(void **state) {
    (void)state;
    fake_run a;
    fake(&a, "runs/demo", "serial", 0.2, 9000);
    const run_metrics *runs[1] = {&a.m};
    viz_mp_levels levels = {3, {{1.245, "loss floor"}, {NAN, "unknown"}, {2.285, "no-copy"}}};
    viz_metrics_layout l;
    assert_true(viz_metrics_layout_of(runs, 1, 1000, &levels, &l, NULL, 0));
    const viz_mp_panel *p = &l.panel[VIZ_MP_LOSS];
    assert_int_equal(l.nlevels, 2);
    assert_string_equal(l.level[1].label, "no-copy");
    assert_true(p->lo <= 1.245 && p->hi >= 5); /* the floor is below every logged loss */
    for (int i = 0; i < l.nlevels; i++) {
        assert_true(fabs(l.level_y[i] - viz_mp_y(p, l.level[i].value)) < 1e-9);
        assert_true(l.level_y[i] > p->y + 9 && l.level_y[i] <= p->y + p->h); /* room for label */
    }
    assert_true(l.level_y[0] > l.level_y[1]); /* the floor below the baseline */
    /* The last held-out point (step 10) lies a dot's width inside the frame. */
    double ex = viz_mp_x(&l, 10);
    assert_true(ex + 6 < p->x + p->w);

    const char *dir = test_tmpdir("metrics_plot_levels");
    char path[4200];
    snprintf(path, sizeof path, "%s/loss.png", dir);
    assert_true(viz_metrics_plot_levels(path, runs, 1, 1000, NULL, &levels, NULL, 0));
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_height(s), (int)l.height);
    viz_rgb ink = viz_shade(viz_categorical(0), -0.35);
    assert_true(colour_near(s, ex, viz_mp_y(p, 3.9), ink));     /* the dot's centre */
    assert_true(colour_near(s, ex + 3, viz_mp_y(p, 3.9), ink)); /* its right half, whole */
    /* Some pixel of the floor's line, right of its label, is dark (a thin line: antialiased). */
    const unsigned char *px = cairo_image_surface_get_data(s);
    const int stride = cairo_image_surface_get_stride(s);
    int darkest = 255;
    for (int x = (int)(p->x + p->w / 2); x < (int)(p->x + p->w / 2) + 8; x++)
        for (int y = (int)l.level_y[0] - 1; y <= (int)l.level_y[0] + 1; y++)
            if (px[y * stride + 4 * x + 1] < darkest) darkest = px[y * stride + 4 * x + 1];
    assert_true(darkest < 160);
    cairo_surface_destroy(s);
}

/* A run of one step, evaluated after it (figures.sh's ZeRO picture run): the held-out dot sits
 * at the left edge, and its value is written to its right, inside the page. */
static void test_a_one_step_run_keeps_its_held_out_label_inside(void **state) {
    (void)state;
    fake_run a;
    fake(&a, "runs/one", "dp2", 0.2, 9000);
    a.m.nsteps = 1;
    a.evals[0] = (run_metrics_eval){1, 5.541};
    a.m.nevals = 1;
    const run_metrics *runs[1] = {&a.m};
    char path[4200];
    snprintf(path, sizeof path, "%s/loss.png", test_tmpdir("metrics_one_step"));
    assert_true(viz_metrics_plot(path, runs, 1, 1000, NULL, NULL, 0));
    expect_no_layout_violations();
}

/* A run in a deep directory (a test's scratch path): its legend line is cut in the middle of
 * the path, inside the page. */
static void test_a_deep_run_directory_stays_inside_the_page(void **state) {
    (void)state;
    fake_run a;
    fake(&a,
         "/root/.cache/bazel/_bazel_root/835165e65df656dc9abbd58e53cf243e/execroot/trident/_tmp/"
         "44d1a986fb62fb3f104f1e4a96985f10/demo.7503/run",
         "tp2×pp2×dp2, interleaved v2, ZeRO", 0.2, 9000);
    const run_metrics *runs[1] = {&a.m};
    char path[4200];
    snprintf(path, sizeof path, "%s/loss.png", test_tmpdir("metrics_deep"));
    assert_true(viz_metrics_plot(path, runs, 1, 1000, NULL, NULL, 0));
    expect_no_layout_violations();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_shares_the_step_axis_and_holds_every_value),
        cmocka_unit_test(test_a_quantity_no_run_has_is_an_empty_panel),
        cmocka_unit_test(test_labels_name_layout_and_directory),
        cmocka_unit_test(test_extreme_but_drawable_values_give_bounded_axes),
        cmocka_unit_test(test_values_beyond_an_axis_are_refused_naming_them),
        cmocka_unit_test(test_png_has_the_layout_size_and_each_run_where_its_curve_is),
        cmocka_unit_test(test_reference_levels_and_the_held_out_point_are_inside_the_loss_panel),
        cmocka_unit_test(test_a_one_step_run_keeps_its_held_out_label_inside),
        cmocka_unit_test(test_a_deep_run_directory_stays_inside_the_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
