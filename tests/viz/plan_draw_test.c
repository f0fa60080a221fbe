/* plan_draw_test.c — the plan picture's geometry as numbers, and a rendered PNG with its size
 * and each part's colour where its box must be:
 *   - segments are their milliseconds times the scale, laid end to end from the time column;
 *   - the longest step fills the time column; memory bars scale to the largest (or the limit).
 */
#include <math.h>
#include <stdio.h>

#include <cairo.h>

#include "tests/support/testing.h"
#include "viz/canvas.h"
#include "viz/plan_draw.h"

static const viz_plan_row k_rows[3] = {
    {"--tensor-model-parallel-size 2", {4e-3, 1e-3, 0, 0.5e-3}, 6e6},
    {"--pipeline-model-parallel-size 2", {4e-3, 0.2e-3, 2e-3, 0.5e-3}, 4e6},
    {"", {6e-3, 0, 0, 1e-3}, 8e6},
};

static void segments_end_to_end_at_the_step(void **state) {
    (void)state;
    viz_plan_chart ch = {k_rows, 3, "plan", 10e6};
    viz_plan_layout L;
    viz_plan_layout_make(&ch, &L);
    /* the longest step, 7 ms (rows 2 and 3), fills the time column */
    assert_true(fabs(L.ms_scale * 7.0 - L.time_w) < 1e-9);
    for (int i = 0; i < 3; i++) {
        double x = L.time_x;
        for (int k = 0; k < VIZ_PLAN_PARTS; k++) {
            assert_true(fabs(L.seg_x[i][k] - x) < 1e-9);
            assert_true(fabs(L.seg_w[i][k] - k_rows[i].part[k] * 1e3 * L.ms_scale) < 1e-9);
            x += L.seg_w[i][k];
        }
        assert_true(L.row_y[i] + L.row_h <= (i + 1 < 3 ? L.row_y[i + 1] : L.height));
    }
    /* memory: the limit (10 MB) is the largest, so it sits at the column's end */
    assert_true(fabs(L.limit_x - (L.mem_x + L.mem_w)) < 1e-9);
    assert_true(fabs(L.mem_bar_w[2] - 0.8 * L.mem_w) < 1e-9);
}

static int near(unsigned char v, double want) { return fabs(v - want * 255.0) <= 3.0; }

static void expect_pixel(cairo_surface_t *img, double x, double y, viz_rgb c, const char *what) {
    const int stride = cairo_image_surface_get_stride(img);
    unsigned char *px = cairo_image_surface_get_data(img) + (int)y * stride + 4 * (int)x;
    if (!(near(px[2], c.r) && near(px[1], c.g) && near(px[0], c.b)))
        fail_msg("%s: pixel (%d, %d) is (%d, %d, %d)", what, (int)x, (int)y, px[2], px[1], px[0]);
}

static void png_has_each_part_where_its_box_is(void **state) {
    (void)state;
    viz_plan_chart ch = {k_rows, 3, "plan", 0};
    char path[4200];
    snprintf(path, sizeof path, "%s/plan.png", test_tmpdir("plan_draw"));
    viz_plan_draw(path, &ch);
    viz_plan_layout L;
    viz_plan_layout_make(&ch, &L);
    cairo_surface_t *img = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(img), (int)ceil(L.width));
    const double y = L.row_y[1] + L.row_h / 2;
    expect_pixel(img, L.seg_x[1][0] + L.seg_w[1][0] / 2, y, VIZ_FORWARD, "compute");
    expect_pixel(img, L.seg_x[1][2] + L.seg_w[1][2] / 2, y, VIZ_IDLE, "bubble");
    expect_pixel(img, L.seg_x[1][3] + L.seg_w[1][3] / 2, y, VIZ_OPTIMIZER, "optimizer");
    expect_pixel(img, L.mem_x + L.mem_bar_w[1] / 2, y, VIZ_MEMORY, "memory");
    cairo_surface_destroy(img);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(segments_end_to_end_at_the_step),
        cmocka_unit_test(png_has_each_part_where_its_box_is),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
