/* moe_load_draw_test.c — the MoE load picture: layout numbers (columns, panels, the colour
 * scale around the balanced share, the dropped strip, the texts), then a rendered PNG checked
 * for its size and for the colour of a cell where a heavy expert must be. */
#include "viz/moe_load_draw.h"

#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/testing.h"

/* A run of 4 experts and `layers` layers, steps 10, 20, ..., 10·steps: in layer 0 expert 0
 * takes half of the tokens from step 30 on (the others share the rest), every other layer is
 * balanced; layer 1 drops 8 tokens at step 20. */
static run_metrics *moe_run(const char *name, int layers, int steps) {
    const char *dir = test_tmpdir(name);
    char path[4200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int s = 1; s <= steps; s++) {
        fprintf(f, "{\"step\":%d,\"loss\":%.3f,\"moe_aux_loss\":%.4f,\"moe_tokens\":[", 10 * s,
                5.0 - 0.1 * s, 0.01 * s);
        for (int l = 0; l < layers; l++)
            fprintf(f, "%s%s", l ? "," : "", l == 0 && s >= 3 ? "[60,20,20,20]" : "[30,30,30,30]");
        fprintf(f, "],\"moe_dropped\":[");
        for (int l = 0; l < layers; l++) fprintf(f, "%s%d", l ? "," : "", l == 1 && s == 2 ? 8 : 0);
        fprintf(f, "]}\n");
    }
    fclose(f);
    char err[512];
    run_metrics *m = run_metrics_read(dir, err, sizeof err);
    if (!m) fail_msg("%s", err);
    return m;
}

static void layout_has_a_panel_per_layer_and_a_scale_around_one_over_e(void **state) {
    (void)state;
    run_metrics *m = moe_run("moe_layout", 2, 5);
    viz_moe_layout l;
    char err[512];
    assert_true(viz_moe_layout_of(m, 1000, &l, err, sizeof err));
    assert_int_equal(l.experts, 4);
    assert_int_equal(l.layers, 2);
    assert_int_equal(l.npanels, 2);
    assert_int_equal(l.columns, 5); /* one per logged step */
    assert_true(l.balanced == 0.25);
    assert_true(l.scale_max == 0.5); /* 60 of 120: at least 2/E anyway */
    /* layer 0, step 30 (column 2): expert 0 has half, the others a sixth */
    assert_true(fabs(viz_moe_share(m, &l, 0, 0, 2) - 0.5) < 1e-12);
    assert_true(fabs(viz_moe_share(m, &l, 0, 1, 2) - 1.0 / 6) < 1e-12);
    assert_true(fabs(viz_moe_share(m, &l, 1, 3, 4) - 0.25) < 1e-12);
    /* white at the balanced share, red at the top, blue at 0 */
    viz_rgb mid = viz_moe_color(&l, 0.25), hi = viz_moe_color(&l, 0.5), lo = viz_moe_color(&l, 0);
    assert_true(mid.r > 0.9 && mid.g > 0.9 && mid.b > 0.9);
    assert_true(hi.r > 0.6 && hi.b < 0.3);
    assert_true(lo.b > 0.6 && lo.r < 0.3);
    /* the dropped strip: only layer 1, 8 of 120 routed tokens at step 20 */
    assert_true(l.panel[0].strip_h == 0 && l.panel[1].strip_h > 0);
    assert_true(fabs(viz_moe_dropped_share(m, &l, 1, 1) - 8.0 / 120) < 1e-12);
    assert_true(fabs(l.panel[1].dropped_max - 8.0 / 120) < 1e-12);
    assert_string_equal(l.panel[0].title, "layer 0 · no token dropped");
    assert_non_null(strstr(l.panel[1].title, "dropped up to 6.7% of its routed tokens"));
    assert_true(l.panel[1].y > l.panel[0].y + l.panel[0].h);
    assert_non_null(strstr(l.title, "4 experts × 2 layers · 5 logged steps"));
    assert_non_null(strstr(l.subtitle, "balanced: 1/4 = 25.0%"));
    assert_non_null(strstr(l.subtitle, "aux loss at step 50: 0.05"));
    assert_null(strstr(l.subtitle, "top-k"));
    assert_null(strstr(l.note, "first"));
    run_metrics_free(m);
}

static void many_layers_and_steps_are_cut_and_merged_with_a_note(void **state) {
    (void)state;
    run_metrics *m = moe_run("moe_many", 20, 900);
    viz_moe_layout l;
    char err[512];
    assert_true(viz_moe_layout_of(m, 600, &l, err, sizeof err));
    assert_int_equal(l.npanels, VIZ_MOE_MAX_PANELS);
    assert_true(l.columns < 900 && l.columns <= 600);
    int a, b;
    viz_moe_column_lines(&l, l.columns - 1, &a, &b);
    assert_int_equal(b, 900);
    assert_non_null(strstr(l.note, "first 16 layers of 20 shown"));
    assert_non_null(strstr(l.note, "logged steps merged"));
    run_metrics_free(m);
}

static void png_has_the_layout_size_and_a_heavy_expert_is_red(void **state) {
    (void)state;
    run_metrics *m = moe_run("moe_png", 2, 5);
    char path[4300], err[512];
    snprintf(path, sizeof path, "%s/moe_load.png", m->dir);
    assert_true(viz_moe_load_draw(m, path, 1000, err, sizeof err));
    viz_moe_layout l;
    assert_true(viz_moe_layout_of(m, 1000, &l, err, sizeof err));
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(s), (int)l.width);
    assert_int_equal(cairo_image_surface_get_height(s), (int)ceil(l.height));
    char bad[4096]; /* every label inside the page and legible */
    if (viz_last_violations(bad, sizeof bad)) fail_msg("%s", bad);
    /* layer 0, expert 0 (top row), the last column, at the cell's top left (its value is
     * written in its middle): the share 0.5 at the red end */
    const viz_moe_panel *P = &l.panel[0];
    int x = (int)(P->x + P->w * 4 / 5) + 3, y = (int)P->y + 3;
    const unsigned char *px = cairo_image_surface_get_data(s);
    uint32_t v;
    memcpy(&v, px + (size_t)y * (size_t)cairo_image_surface_get_stride(s) + (size_t)x * 4, 4);
    int r = (v >> 16) & 255, g = (v >> 8) & 255, b = v & 255;
    if (!(r > 150 && g < 80 && b < 80))
        fail_msg("pixel (%d, %d) is %d,%d,%d, not red", x, y, r, g, b);
    cairo_surface_destroy(s);

    /* A run without MoE metrics: refused, nothing written. */
    run_metrics plain = {0};
    snprintf(plain.dir, sizeof plain.dir, "runs/dense");
    snprintf(path, sizeof path, "%s/none.png", m->dir);
    assert_false(viz_moe_load_draw(&plain, path, 1000, err, sizeof err));
    assert_string_equal(err, "runs/dense/metrics.jsonl has no moe_tokens (not an MoE run)");
    FILE *f = fopen(path, "r");
    assert_null(f);
    run_metrics_free(m);
}

/* One expert (the dense model as MoE, page 10): the balanced mark is the bar's end, and its
 * label stays inside the page. */
static void one_expert_keeps_every_label_inside(void **state) {
    (void)state;
    const char *dir = test_tmpdir("moe_one");
    char path[4300], err[512], bad[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int s = 1; s <= 3; s++)
        fprintf(f,
                "{\"step\":%d,\"loss\":4.0,\"moe_aux_loss\":0.01,\"moe_tokens\":[[64],[64]],"
                "\"moe_dropped\":[0,0]}\n",
                s);
    fclose(f);
    run_metrics *m = run_metrics_read(dir, err, sizeof err);
    if (!m) fail_msg("%s", err);
    snprintf(path, sizeof path, "%s/moe_load.png", dir);
    assert_true(viz_moe_load_draw(m, path, 1000, err, sizeof err));
    if (viz_last_violations(bad, sizeof bad)) fail_msg("%s", bad);
    run_metrics_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layout_has_a_panel_per_layer_and_a_scale_around_one_over_e),
        cmocka_unit_test(many_layers_and_steps_are_cut_and_merged_with_a_note),
        cmocka_unit_test(png_has_the_layout_size_and_a_heavy_expert_is_red),
        cmocka_unit_test(one_expert_keeps_every_label_inside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
