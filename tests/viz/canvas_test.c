/* canvas_test.c — the themes and the output frame of viz/canvas.h: the default palette is
 * the documented one, the slides theme tells its kinds apart in grey scale (lightness and
 * patterns), --width/--height frame the drawing without rasterising vector output, and bad
 * picture options end the program naming the flag and the rule; the label audit (a label past
 * the edge, white on light, text on hatching with and without a plate), text on a fill,
 * wrapping, and SVG text as <text> elements. */
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

/* ---- the label audit ---- */

/* The violations of a 200 x 100 PNG on which `draw` put its labels. */
static int audit(void (*draw)(cairo_t *cr), char *out, size_t cap) {
    viz_canvas c;
    viz_canvas_open(&c, "audit.png", 200, 100);
    draw(c.cr);
    int n = viz_canvas_check(&c, out, cap);
    viz_canvas_close(&c);
    assert_int_equal(viz_last_violations(NULL, 0), n); /* the same list, kept after closing */
    remove("audit.png");
    return n;
}

static void past_the_right_edge(cairo_t *cr) {
    viz_text(cr, 150, 50, 12, false, VIZ_LEFT, VIZ_TEXT, "too long for the page");
}
static void inside(cairo_t *cr) {
    viz_text(cr, 100, 50, 12, false, VIZ_CENTER, VIZ_TEXT, "fits");
    viz_text_on_fill(cr, 100, 80, 10, true, VIZ_CENTER, VIZ_BACKWARD, true, "7");
}
static void white_on_light(cairo_t *cr) {
    viz_box(cr, 10, 10, 80, 40, (viz_rgb){0.98, 0.78, 0.30});
    viz_text_ground((viz_rgb){0.98, 0.78, 0.30}, false);
    viz_text(cr, 50, 35, 10, true, VIZ_CENTER, (viz_rgb){1, 1, 1}, "3");
    viz_text_ground_page();
}
static void on_hatching_bare(cairo_t *cr) {
    viz_box(cr, 10, 10, 80, 40, VIZ_FORWARD);
    viz_hatch(cr, 10, 10, 80, 40, viz_shade(VIZ_FORWARD, -0.5), 4);
    viz_text_ground(VIZ_FORWARD, true);
    viz_text(cr, 50, 35, 10, true, VIZ_CENTER, viz_ink_on(VIZ_FORWARD), "5");
    viz_text_ground_page();
}
static void on_hatching_plated(cairo_t *cr) {
    viz_box(cr, 10, 10, 80, 40, VIZ_FORWARD);
    viz_hatch(cr, 10, 10, 80, 40, viz_shade(VIZ_FORWARD, -0.5), 4);
    viz_text_on_fill(cr, 50, 35, 10, true, VIZ_CENTER, VIZ_FORWARD, true, "5");
}

static void the_audit_names_clipped_faint_and_unplated_labels(void **state) {
    (void)state;
    reset();
    char out[4096];
    assert_int_equal(audit(inside, out, sizeof out), 0);
    assert_int_equal(audit(past_the_right_edge, out, sizeof out), 1);
    if (!strstr(out, "layout: label 'too long for the page' at 150..") ||
        !strstr(out, "outside the 200 x 100 canvas"))
        fail_msg("%s", out);
    assert_int_equal(audit(white_on_light, out, sizeof out), 1);
    assert_non_null(strstr(out, "layout: label '3' has contrast 1.")); /* white on yellow */
    assert_non_null(strstr(out, "below 4.5:1"));
    assert_int_equal(audit(on_hatching_bare, out, sizeof out), 1);
    assert_non_null(strstr(out, "layout: label '5' is drawn over hatching or a pattern without a "
                                "backing plate"));
    assert_int_equal(audit(on_hatching_plated, out, sizeof out), 0);
}

/* A plate of the plain fill hides the hatching under the digit, and the digit is black on the
 * light slides B colour, white on the dark slides forward. */
static void text_on_a_fill_is_plated_and_picks_its_ink(void **state) {
    (void)state;
    viz_theme_use("slides");
    const viz_rgb black = {0, 0, 0}, white = {1, 1, 1};
    viz_rgb ink = viz_ink_on(VIZ_BACKWARD);
    assert_true(ink.r == 0 && ink.g == 0 && ink.b == 0);
    ink = viz_ink_on(VIZ_FORWARD);
    assert_true(ink.r == 1 && ink.g == 1 && ink.b == 1);
    assert_true(viz_contrast(black, white) > 20.9);
    viz_canvas c;
    viz_canvas_open(&c, "plate.png", 100, 60);
    viz_box(c.cr, 0, 0, 100, 60, VIZ_BACKWARD); /* hatched by the slides' pattern */
    viz_text_on_fill(c.cr, 50, 36, 14, true, VIZ_CENTER, VIZ_BACKWARD, true, "-");
    viz_canvas_close(&c);
    int w, h;
    /* beside the dash, inside the plate: the plain fill, no hatching line */
    unsigned fill = (unsigned)(lround(VIZ_BACKWARD.r * 255)) << 16 |
                    (unsigned)(lround(VIZ_BACKWARD.g * 255)) << 8 |
                    (unsigned)lround(VIZ_BACKWARD.b * 255);
    unsigned got = pixel("plate.png", 50, 27, &w, &h);
    for (int sh = 0; sh <= 16; sh += 8) /* each channel within 1 of the fill (rounding) */
        if (abs((int)((got >> sh) & 255) - (int)((fill >> sh) & 255)) > 1)
            fail_msg("inside the plate: %06x, the fill is %06x", got, fill);
    remove("plate.png");
    reset();
}

/* Wrapping breaks at spaces (keeping the spacing inside a line), a path too long for a line
 * after a '/', and a legend wraps into rows that stay inside its width. */
static void text_and_legends_wrap_inside_the_width(void **state) {
    (void)state;
    reset();
    char out[512];
    const char *t = "1f1b   p = 4   m = 8 — bubble 27.3% of the time";
    double full = viz_measure(12, false, t);
    assert_int_equal(viz_wrap(t, 12, false, full + 1, out, sizeof out), 1);
    assert_string_equal(out, t);
    int n = viz_wrap(t, 12, false, full * 0.6, out, sizeof out);
    assert_int_equal(n, 2);
    assert_non_null(strstr(out, "1f1b   p = 4")); /* the spacing kept */
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
        assert_true(viz_measure(12, false, line) <= full * 0.6);
    n = viz_wrap("/a/very/long/path/to/a/run/directory", 10, false, 60, out, sizeof out);
    assert_true(n >= 2);
    assert_non_null(strstr(out, "/\n")); /* broken after a directory */
    assert_int_equal(viz_wrap("runs/gpipe (replay)", 10, false, 500, out, sizeof out), 1);
    assert_string_equal(out, "runs/gpipe (replay)"); /* a path that fits stays whole */
    const char *labels[4] = {"forward", "backward B: input gradient", "weight gradient W",
                             "idle (bubble)"};
    const double all = viz_legend_item_width(11, labels[0]) + viz_legend_item_width(11, labels[1]) +
                       viz_legend_item_width(11, labels[2]) + viz_legend_item_width(11, labels[3]);
    assert_int_equal(viz_legend_rows(11, 4, labels, all), 1);
    assert_true(viz_legend_rows(11, 4, labels, all / 2) >= 2);
    viz_canvas c;
    viz_canvas_open(&c, "legend.png", 200, 200);
    viz_rgb colors[4] = {VIZ_FORWARD, VIZ_BACKWARD, VIZ_WEIGHT, VIZ_IDLE};
    assert_int_equal(viz_legend_wrap(c.cr, 10, 20, 11, 4, colors, labels, NULL, 180),
                     viz_legend_rows(11, 4, labels, 180));
    assert_int_equal(viz_canvas_check(&c, NULL, 0), 0); /* every label inside the page */
    viz_canvas_close(&c);
    remove("legend.png");
}

/* SVG: the labels are <text> elements (font, size, colour, anchor), not glyph outlines. */
static void svg_labels_are_real_text(void **state) {
    (void)state;
    reset();
    viz_canvas c;
    viz_canvas_open(&c, "text.svg", 200, 100);
    viz_text(c.cr, 100, 50, 12, true, VIZ_CENTER, VIZ_TEXT, "F & B <1>");
    viz_canvas_close(&c);
    size_t n;
    char *svg = read_all("text.svg", &n);
    assert_non_null(strstr(svg, ">F &amp; B &lt;1&gt;</text>"));
    assert_non_null(strstr(svg, "font-family=\"DejaVu Sans\""));
    assert_non_null(strstr(svg, "font-weight=\"bold\""));
    assert_non_null(strstr(svg, "text-anchor=\"middle\""));
    assert_null(strstr(svg, "<use")); /* no glyphs drawn as outlines */
    free(svg);
    remove("text.svg");
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
        cmocka_unit_test(the_audit_names_clipped_faint_and_unplated_labels),
        cmocka_unit_test(text_on_a_fill_is_plated_and_picks_its_ink),
        cmocka_unit_test(text_and_legends_wrap_inside_the_width),
        cmocka_unit_test(svg_labels_are_real_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
