/* build_test.c — a picture cut into K time slices: the cut times k·T/K, the pages' names, the
 * checks on K and the extension, a PDF of K pages from one surface and a sequence of K frames
 * painted with their cuts, with nothing staged left behind; a failing page leaves the old
 * sequence as it was. */
#include <cairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/core/check.h"
#include "tests/support/testing.h"
#include "viz/build.h"
#include "viz/canvas.h"

static void cuts_are_equal_slices_ending_at_t(void **state) {
    (void)state;
    for (int k = 1; k <= 4; k++) assert_true(viz_build_cut(33, 4, k) == 33.0 * k / 4);
    assert_true(viz_build_cut(0.1, 3, 3) == 0.1); /* the last page is exactly the whole */
    assert_true(viz_build_cut(10, 1, 1) == 10);
}

static void pages_are_named_and_checked(void **state) {
    (void)state;
    char name[256], why[512];
    viz_build_page_name("out/frame.png", 3, name, sizeof name);
    assert_string_equal(name, "out/frame-03.png");
    viz_build_page_name("a.b/slides.svg", 12, name, sizeof name);
    assert_string_equal(name, "a.b/slides-12.svg");
    viz_build_page_name("deck.pdf", 2, name, sizeof name);
    assert_string_equal(name, "deck.pdf");
    viz_build_describe("x/frame.png", 4, name, sizeof name);
    assert_string_equal(name, "wrote x/frame-01.png .. x/frame-04.png (4 frames)");
    viz_build_describe("deck.pdf", 4, name, sizeof name);
    assert_string_equal(name, "wrote deck.pdf (4 pages)");
    assert_true(viz_build_check(1, "a.png", why, sizeof why));
    assert_true(viz_build_check(VIZ_BUILD_MAX, "a.pdf", why, sizeof why));
    assert_false(viz_build_check(0, "a.pdf", why, sizeof why));
    assert_string_equal(why, "--build 0 must be between 1 and 64 (the number of pages)");
    assert_false(viz_build_check(65, "a.pdf", why, sizeof why));
    assert_false(viz_build_check(4, "a.json", why, sizeof why));
    assert_non_null(strstr(why, "-o 'a.json' must end in .pdf"));
    int K = 0;
    assert_true(viz_build_parse("12", "a.svg", &K, why, sizeof why) && K == 12);
    assert_false(viz_build_parse("4x", "a.pdf", &K, why, sizeof why));
    assert_string_equal(why, "--build '4x' is not a number of pages (1 to 64)");
    assert_false(viz_build_parse("99999999999", "a.pdf", &K, why, sizeof why));
    assert_false(viz_build_parse("-3", "a.pdf", &K, why, sizeof why));
    assert_string_equal(why, "--build -3 must be between 1 and 64 (the number of pages)");
}

/* The painter records the cuts it was given and fills the page grey in proportion. */
typedef struct {
    int calls;
    double cuts[8];
} recorder;

static void paint_bar(cairo_t *cr, int k, int K, double cut, void *ctx) {
    recorder *r = ctx;
    r->cuts[r->calls++] = cut;
    cairo_rectangle(cr, 0, 0, 200 * cut / 8, 50);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_fill(cr);
    viz_build_now(cr, 200 * cut / 8, 0, 50, k, K);
    viz_build_page_number(cr, k, K, 190, 12);
}

static void a_pdf_has_k_pages_and_frames_are_numbered(void **state) {
    (void)state;
    const char *dir = test_tmpdir("build");
    char path[4200], name[4300];
    recorder r = {0};
    snprintf(path, sizeof path, "%s/deck.pdf", dir);
    viz_build_write(path, 4, 8, 200, 50, paint_bar, &r);
    assert_int_equal(r.calls, 4);
    for (int k = 1; k <= 4; k++) assert_true(r.cuts[k - 1] == 2.0 * k);
    assert_int_equal(test_pdf_pages(path), 4);

    r = (recorder){0};
    snprintf(path, sizeof path, "%s/frame.png", dir);
    viz_build_write(path, 3, 8, 200, 50, paint_bar, &r);
    assert_int_equal(r.calls, 3);
    for (int k = 1; k <= 3; k++) {
        viz_build_page_name(path, k, name, sizeof name);
        cairo_surface_t *img = cairo_image_surface_create_from_png(name);
        assert_int_equal(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
        /* the bar reaches the cut: k/3 of the width; past it the page is white */
        const unsigned char *d = cairo_image_surface_get_data(img);
        const int stride = cairo_image_surface_get_stride(img), x_in = (int)(200.0 * k / 3) - 6;
        const int x_out = (int)(200.0 * k / 3) + 4;
        assert_true(d[40 * stride + 4 * x_in] < 100);
        if (k < 3) assert_true(d[40 * stride + 4 * x_out] > 250);
        cairo_surface_destroy(img);
    }
    char cmd[4400], out[64];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c build", dir);
    run_capture(cmd, out, sizeof out);
    assert_int_equal(atoi(out), 0); /* no staged frame left */
}

/* Page 2 of 3 fails (its painter dies, as a drawing error does): the good frames of an
 * earlier build stay as they were, and no staged frame is left behind. */
static void paint_failing(cairo_t *cr, int k, int K, double cut, void *ctx) {
    (void)ctx, (void)cut, (void)K;
    if (k == 2) die("page 2 cannot be drawn");
    cairo_paint(cr);
}

static void a_failing_page_leaves_the_old_sequence(void **state) {
    (void)state;
    const char *dir = test_tmpdir("build_fail");
    char path[4200], name[4300], cmd[4400], out[64];
    snprintf(path, sizeof path, "%s/frame.png", dir);
    for (int k = 1; k <= 3; k++) {
        viz_build_page_name(path, k, name, sizeof name);
        FILE *f = fopen(name, "w");
        fputs("good", f);
        fclose(f);
    }
    pid_t child = fork();
    if (child == 0) {
        viz_build_write(path, 3, 1, 50, 50, paint_failing, NULL);
        _exit(0);
    }
    int st = 0;
    waitpid(child, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    for (int k = 1; k <= 3; k++) {
        viz_build_page_name(path, k, name, sizeof name);
        FILE *f = fopen(name, "r");
        char text[16] = "";
        assert_non_null(fgets(text, sizeof text, f));
        fclose(f);
        assert_string_equal(text, "good");
    }
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c -e build -e tmp", dir);
    run_capture(cmd, out, sizeof out);
    assert_int_equal(atoi(out), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cuts_are_equal_slices_ending_at_t),
        cmocka_unit_test(pages_are_named_and_checked),
        cmocka_unit_test(a_pdf_has_k_pages_and_frames_are_numbered),
        cmocka_unit_test(a_failing_page_leaves_the_old_sequence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
