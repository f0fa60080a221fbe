/* canvas_test.c — the themes and the output frame of viz/canvas.h: the default palette is
 * the documented one, the slides theme tells its kinds apart in grey scale (lightness and
 * patterns), --width/--height frame the drawing without rasterising vector output, and bad
 * picture options end the program naming the flag and the rule. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/testing.h"
#include "viz/canvas.h"

/* Grey level of a colour as grey-scale print renders it (Rec. 601 luma). */
static double grey(viz_rgb c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b; }

static void reset(void) {
    viz_theme_use("default");
    viz_output_size(0, 0);
}

static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = calloc((size_t)len + 1, 1);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return buf;
}

/* A 200 x 100 drawing: a forward box on the left, a backward box on the right. */
static void draw_two_boxes(const char *path) {
    viz_canvas c;
    viz_canvas_open(&c, path, 200, 100);
    viz_box(c.cr, 10, 10, 80, 80, VIZ_FORWARD);
    viz_box(c.cr, 110, 10, 80, 80, VIZ_BACKWARD);
    viz_text(c.cr, 100, 50, 10, false, VIZ_CENTER, VIZ_TEXT, "F B");
    viz_canvas_close(&c);
}

/* The pixel (x, y) of a PNG as 0xRRGGBB. */
static unsigned pixel(const char *path, int x, int y, int *w, int *h) {
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    *w = cairo_image_surface_get_width(s);
    *h = cairo_image_surface_get_height(s);
    const unsigned char *d = cairo_image_surface_get_data(s);
    unsigned v = *(const unsigned *)(d + (size_t)y * (size_t)cairo_image_surface_get_stride(s) +
                                     (size_t)x * 4) &
                 0xffffffu;
    cairo_surface_destroy(s);
    return v;
}

static void default_theme_is_the_documented_palette(void **state) {
    (void)state;
    reset();
    const viz_theme *t = viz_theme_current();
    assert_string_equal(t->name, "default");
    assert_true(VIZ_FORWARD.r == 0.27 && VIZ_FORWARD.g == 0.51 && VIZ_FORWARD.b == 0.80);
    assert_true(VIZ_BACKWARD.r == 0.40 && VIZ_BACKWARD.g == 0.72 && VIZ_BACKWARD.b == 0.38);
    assert_true(t->text_scale == 1.0 && t->line_scale == 1.0 && !t->patterns);
    assert_true(viz_categorical(9).r == viz_categorical(1).r); /* eight colours, repeating */
}

static void slides_theme_is_large_thick_and_apart_in_grey(void **state) {
    (void)state;
    assert_true(viz_theme_use("slides"));
    const viz_theme *t = viz_theme_current();
    assert_string_equal(t->name, "slides");
    assert_true(t->text_scale >= 1.3 && t->line_scale >= 2.0 && t->patterns);
    /* The kinds drawn side by side differ in grey level, not only in hue. */
    const viz_rgb side[3] = {VIZ_FORWARD, VIZ_BACKWARD, VIZ_WEIGHT};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (!(fabs(grey(side[i]) - grey(side[j])) >= 0.2))
                fail_msg("slides kinds %d and %d are %.2f and %.2f in grey", i, j, grey(side[i]),
                         grey(side[j]));
    for (int i = 0; i < 7; i++) /* neighbouring categorical colours too */
        assert_true(fabs(grey(viz_categorical(i)) - grey(viz_categorical(i + 1))) >= 0.15);
    assert_true(grey(VIZ_TEXT) == 0.0);
    assert_false(viz_theme_use("neon")); /* unknown: nothing changes */
    assert_string_equal(viz_theme_current()->name, "slides");
    reset();
}

static void slides_patterns_mark_the_backward_box_only(void **state) {
    (void)state;
    const char *path = "canvas_test_pattern.png";
    viz_theme_use("slides");
    draw_two_boxes(path);
    int w, h;
    /* The forward box is one flat colour inside; the backward box has hatching lines. */
    unsigned f0 = pixel(path, 30, 30, &w, &h), differ_f = 0, differ_b = 0;
    unsigned b0 = pixel(path, 130, 30, &w, &h);
    for (int y = 20; y < 80; y += 3)
        for (int x = 0; x < 60; x += 3) {
            differ_f += pixel(path, 20 + x, y, &w, &h) != f0;
            differ_b += pixel(path, 120 + x, y, &w, &h) != b0;
        }
    assert_int_equal(differ_f, 0);
    if (differ_b < 20)
        fail_msg("the slides backward box shows no pattern (%u pixels differ)", differ_b);
    remove(path);
    reset();
}

static void width_and_height_frame_the_drawing(void **state) {
    (void)state;
    reset();
    const char *path = "canvas_test_frame.png";
    int w, h;
    draw_two_boxes(path);
    pixel(path, 0, 0, &w, &h);
    assert_int_equal(w, 200);
    assert_int_equal(h, 100);
    viz_output_size(400, 0); /* the height follows the aspect ratio */
    draw_two_boxes(path);
    unsigned inside = pixel(path, 100, 100, &w, &h);
    assert_int_equal(w, 400);
    assert_int_equal(h, 200);
    assert_int_not_equal(inside, 0xffffffu); /* the forward box, scaled x2 */
    viz_output_size(400, 400);               /* both: fit inside, centred (white above and below) */
    draw_two_boxes(path);
    unsigned top = pixel(path, 100, 50, &w, &h), mid = pixel(path, 100, 200, &w, &h);
    assert_int_equal(w, 400);
    assert_int_equal(h, 400);
    assert_int_equal(top, 0xffffffu);
    assert_int_not_equal(mid, 0xffffffu);
    remove(path);
    reset();
}

static void svg_and_pdf_stay_vector_at_any_size(void **state) {
    (void)state;
    viz_theme_use("slides");
    viz_output_size(1600, 900);
    size_t n;
    draw_two_boxes("canvas_test.svg");
    char *svg = read_all("canvas_test.svg", &n);
    assert_non_null(strstr(svg, "width=\"1600"));
    assert_non_null(strstr(svg, "<path"));
    assert_null(strstr(svg, "<image")); /* nothing was rasterised */
    free(svg);
    draw_two_boxes("canvas_test.pdf");
    char *pdf = read_all("canvas_test.pdf", &n);
    assert_memory_equal(pdf, "%PDF", 4);
    assert_null(strstr(pdf, "/Subtype /Image"));
    free(pdf);
    remove("canvas_test.svg");
    remove("canvas_test.pdf");
    reset();
}

static void bad_theme(const void *arg) {
    (void)arg;
    viz_picture_options("trident groups", "neon", 0, 0);
}
static void bad_width(const void *arg) {
    (void)arg;
    viz_picture_options("trident schedule", NULL, 5, 0);
}
static void bad_height(const void *arg) {
    (void)arg;
    viz_picture_options("trident render", "slides", 1600, 99999);
}

static void bad_picture_options_name_the_flag_and_the_rule(void **state) {
    (void)state;
    char out[1024];
    assert_int_not_equal(run_in_child(bad_theme, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "--theme 'neon' is not a theme (one of default, slides)"));
    assert_int_not_equal(run_in_child(bad_width, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "trident schedule: --width 5 is out of range (100 to 20000"));
    assert_int_not_equal(run_in_child(bad_height, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "--height 99999 is out of range"));
}

int main(void) {
    const char *tmp = getenv("TEST_TMPDIR");
    if (tmp && chdir(tmp) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_theme_is_the_documented_palette),
        cmocka_unit_test(slides_theme_is_large_thick_and_apart_in_grey),
        cmocka_unit_test(slides_patterns_mark_the_backward_box_only),
        cmocka_unit_test(width_and_height_frame_the_drawing),
        cmocka_unit_test(svg_and_pdf_stay_vector_at_any_size),
        cmocka_unit_test(bad_picture_options_name_the_flag_and_the_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
