/* plan_scatter_test.c — the predicted-vs-measured scatter as numbers, and a rendered PNG:
 *   - a point's position is its milliseconds on one shared scale: an exact prediction lies
 *     on the diagonal; the axis spans every value;
 *   - the points outside the band (and only they, of the series that label) are labelled,
 *     inside the plot, over no point, and no two labels overlap;
 *   - in the PNG, a point is its series' colour, the band is shaded, outside it is paper.
 */
#include <math.h>
#include <stdio.h>

#include <cairo.h>

#include "tests/support/testing.h"
#include "viz/canvas.h"
#include "viz/plan_scatter.h"

static const viz_scatter_point k_points[5] = {
    {"dp", 10e-3, 10e-3, 0},    /* exact */
    {"tp2", 20e-3, 30e-3, 0},   /* +50 %: labelled */
    {"tp4", 20.5e-3, 14e-3, 1}, /* −32 %: labelled, near tp2's label */
    {"pp2", 40e-3, 42e-3, 1},   /* +5 %: inside */
    {"cp2", 21e-3, 29e-3, 1},   /* +38 %: labelled, where tp2's label would be */
};
static const char *const k_series[2] = {"2 ranks", "4 ranks"};

static viz_plan_scatter chart(void) {
    return (viz_plan_scatter){k_points, 5, k_series, NULL, 2, "plan: predicted vs measured", 0.10};
}

static void points_sit_at_their_milliseconds_on_one_scale(void **state) {
    (void)state;
    const viz_plan_scatter s = chart();
    viz_plan_scatter_layout L;
    viz_plan_scatter_layout_make(&s, &L);
    assert_true(L.axis.lo <= 10 && L.axis.hi >= 42);
    assert_true(fabs(L.scale * (L.axis.hi - L.axis.lo) - L.plot_size) < 1e-9);
    for (int i = 0; i < 5; i++) {
        const double ms = k_points[i].measured * 1e3, mp = k_points[i].predicted * 1e3;
        assert_true(fabs(L.x[i] - (L.plot_x + (ms - L.axis.lo) * L.scale)) < 1e-9);
        assert_true(fabs(L.y[i] - (L.plot_y + L.plot_size - (mp - L.axis.lo) * L.scale)) < 1e-9);
        assert_true(L.x[i] >= L.plot_x && L.x[i] <= L.plot_x + L.plot_size);
        assert_true(L.y[i] >= L.plot_y && L.y[i] <= L.plot_y + L.plot_size);
    }
    /* exact: as far right of the plot's left as above its bottom */
    assert_true(fabs((L.x[0] - L.plot_x) - (L.plot_y + L.plot_size - L.y[0])) < 1e-9);
}

static void only_the_misses_are_labelled_and_labels_never_overlap(void **state) {
    (void)state;
    const viz_plan_scatter s = chart();
    viz_plan_scatter_layout L;
    viz_plan_scatter_layout_make(&s, &L);
    const bool want[5] = {false, true, true, false, true};
    const double h = viz_line_pitch(9);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(L.miss[i], want[i]);
        assert_int_equal(L.labelled[i], want[i]); /* room for each here */
        if (!L.labelled[i]) continue;
        assert_true(L.label_x[i] > L.x[i]);
        assert_true(L.label_y[i] - h >= L.plot_y && L.label_y[i] <= L.plot_y + L.plot_size);
        const double wi = viz_measure(9, false, k_points[i].label);
        for (int j = 0; j < 5; j++) /* no point under a label */
            if (L.label_x[i] < L.x[j] + L.radius && L.x[j] - L.radius < L.label_x[i] + wi &&
                L.label_y[i] - h < L.y[j] + L.radius && L.y[j] - L.radius < L.label_y[i])
                fail_msg("label %d covers point %d", i, j);
        for (int j = 0; j < i; j++) {
            if (!L.labelled[j]) continue;
            const double wj = viz_measure(9, false, k_points[j].label);
            const bool apart = L.label_x[i] >= L.label_x[j] + wj ||
                               L.label_x[j] >= L.label_x[i] + wi ||
                               L.label_y[i] - h >= L.label_y[j] || L.label_y[j] - h >= L.label_y[i];
            if (!apart) fail_msg("labels %d and %d overlap", i, j);
        }
    }
    /* a series that does not label its misses: the 4-rank points keep no label */
    const bool only_first[2] = {true, false};
    viz_plan_scatter t = s;
    t.labelled = only_first;
    viz_plan_scatter_layout_make(&t, &L);
    for (int i = 0; i < 5; i++) assert_int_equal(L.labelled[i], want[i] && k_points[i].series == 0);
}

static int near(unsigned char v, double want) { return fabs(v - want * 255.0) <= 3.0; }

static void expect_pixel(cairo_surface_t *img, double x, double y, viz_rgb c, const char *what) {
    const int stride = cairo_image_surface_get_stride(img);
    unsigned char *px = cairo_image_surface_get_data(img) + (int)y * stride + 4 * (int)x;
    if (!(near(px[2], c.r) && near(px[1], c.g) && near(px[0], c.b)))
        fail_msg("%s: pixel (%d, %d) is (%d, %d, %d)", what, (int)x, (int)y, px[2], px[1], px[0]);
}

static void png_has_points_in_their_colours_and_the_band_shaded(void **state) {
    (void)state;
    const viz_plan_scatter s = chart();
    char path[4200];
    snprintf(path, sizeof path, "%s/scatter.png", test_tmpdir("plan_scatter"));
    viz_plan_scatter_draw(path, &s);
    viz_plan_scatter_layout L;
    viz_plan_scatter_layout_make(&s, &L);
    cairo_surface_t *img = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(img), (int)ceil(L.width));
    assert_int_equal(cairo_image_surface_get_height(img), (int)ceil(L.height));
    expect_pixel(img, L.x[1], L.y[1], viz_categorical(0), "tp2 (2 ranks)");
    expect_pixel(img, L.x[3], L.y[3], viz_categorical(1), "pp2 (4 ranks)");
    double x, y;
    viz_plan_scatter_at(&L, 30e-3, 32e-3, &x, &y); /* +6.7 %: in the band, no point there */
    expect_pixel(img, x, y, viz_shade(VIZ_GRID, 0.5), "the band");
    viz_plan_scatter_at(&L, 30e-3, 15e-3, &x, &y); /* −50 %: outside it */
    expect_pixel(img, x, y, (viz_rgb){1, 1, 1}, "outside the band (the page)");
    cairo_surface_destroy(img);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(points_sit_at_their_milliseconds_on_one_scale),
        cmocka_unit_test(only_the_misses_are_labelled_and_labels_never_overlap),
        cmocka_unit_test(png_has_points_in_their_colours_and_the_band_shaded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
