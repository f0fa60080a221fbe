/* timeline_draw_test.c — a known small trace, recorded through the real API with chosen
 * times, rendered to PNG: the image has the layout's size, boxes have their kind's colour
 * where the layout puts them, odd chunks are hatched, idle is blank, waiting is pale and
 * hatched, a transfer is solid slate; SVG and PDF come out non-empty; the same input gives
 * the same PNG bytes. */
#include <cairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/trace/trace.h"
#include "tests/support/testing.h"
#include "viz/canvas.h"
#include "viz/timeline_draw.h"
#include "viz/timeline_layout.h"
#include "viz/timeline_load.h"

enum { WIDTH = 1000 };

/* Two stages, one step of 10 ms (rank 1's clock runs 0.5 s behind rank 0's):
 *   rank 0: F0 chunk 0 [0, 2] ms, F1 chunk 1 [2, 4], B0 [5, 8]
 *   rank 1: F0 [2, 4], B0 [4, 7]                                  */
static const char *write_known_run(void) {
    const char *dir = test_tmpdir("draw");
    for (int r = 0; r < 2; r++) {
        trace_header h = {0};
        h.rank = r, h.world_size = 2, h.tp = 1, h.pp = 2, h.dp = 1, h.vpp = 2, h.pp_rank = r;
        h.num_microbatches = 2;
        strcpy(h.schedule, "interleaved");
        h.clock_offset = 0.5 * r;
        h.config_json = "{}";
        trace_recorder *t = trace_create(&h, 32);
        double o = 1.0 - 0.5 * r, ms = 1e-3; /* local = global - offset; global step start 1.0 s */
        trace_record(t, TRACE_STEP, 0, -1, -1, o, o + 10 * ms);
        if (r == 0) {
            trace_record(t, TRACE_FORWARD, 0, 0, 0, o, o + 2 * ms);
            trace_record(t, TRACE_FORWARD, 0, 1, 1, o + 2 * ms, o + 4 * ms);
            trace_record(t, TRACE_BACKWARD, 0, 0, 0, o + 5 * ms, o + 8 * ms);
            trace_comm(t, TRACE_SEND, "send", "pp", 1, 64, 0, o + 2 * ms, o + 2 * ms, o + 2.1 * ms);
        } else {
            trace_record(t, TRACE_FORWARD, 0, 0, 0, o + 2 * ms, o + 4 * ms);
            trace_record(t, TRACE_BACKWARD, 0, 0, 0, o + 4 * ms, o + 7 * ms);
            trace_comm(t, TRACE_RECV, "recv", "pp", 0, 64, 0, o + 1 * ms, o + 2 * ms, o + 2.1 * ms);
        }
        trace_memory_at(t, 1000, o + 1 * ms);
        char path[4200];
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, r);
        trace_write(t, path);
        trace_destroy(t);
    }
    return dir;
}

static viz_timeline *load(const char *dir) {
    char err[1024];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    viz_timeline *tl = viz_timeline_from_run(run, "known", -1, err, sizeof err);
    if (!tl) fail_msg("%s", err);
    trace_run_free(run);
    return tl;
}

typedef struct {
    int r, g, b;
} px;

static px pixel(cairo_surface_t *s, double x, double y) {
    unsigned char *data = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    uint32_t v = *(uint32_t *)(data + (int)y * stride + 4 * (int)x);
    return (px){(int)((v >> 16) & 255), (int)((v >> 8) & 255), (int)(v & 255)};
}

static void expect_rgb(px got, viz_rgb want, const char *what) {
    int r = (int)(want.r * 255 + 0.5), g = (int)(want.g * 255 + 0.5), b = (int)(want.b * 255 + 0.5);
    if (abs(got.r - r) > 2 || abs(got.g - g) > 2 || abs(got.b - b) > 2)
        fail_msg("%s: pixel (%d,%d,%d), want (%d,%d,%d)", what, got.r, got.g, got.b, r, g, b);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void png_has_boxes_where_the_layout_puts_them(void **state) {
    (void)state;
    const char *dir = write_known_run();
    viz_timeline *tl = load(dir);
    char png[4200];
    snprintf(png, sizeof png, "%s/known.png", dir);
    viz_tl_draw_options opt = {.width = WIDTH, .arrows = true};
    const viz_timeline *one[1] = {tl};
    viz_timeline_draw(png, one, 1, &opt);

    viz_tl_layout L;
    viz_tl_layout_compute(&L, one, 1, WIDTH);
    cairo_surface_t *s = cairo_image_surface_create_from_png(png);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(s), WIDTH);
    assert_int_equal(cairo_image_surface_get_height(s), (int)(L.height + 0.5));

    const viz_tl_panel_layout *P = &L.panels[0];
    const viz_tl_row_layout *R0 = &P->rows[0], *R1 = &P->rows[1];
    assert_int_equal(R0->rank, 0);
    /* Boxes by start: rank 0 has F0, F1 and the send at 2 ms, B0; rank 1 the receive, F0, B0. */
    const viz_tl_box *b0 = &tl->rows[0].boxes[0];
    assert_int_equal(b0->kind, VIZ_TL_FORWARD);
    assert_true(b0->start == 0);
    expect_rgb(pixel(s, R0->boxes[0].x + 3, R0->lane_y + 3), VIZ_FORWARD, "rank 0 forward");
    int kb = tl->rows[1].nboxes - 1;
    assert_int_equal(tl->rows[1].boxes[kb].kind, VIZ_TL_BACKWARD);
    expect_rgb(pixel(s, R1->boxes[kb].x + 3, R1->lane_y + 3), VIZ_BACKWARD, "rank 1 backward");
    assert_true(R1->boxes[kb].x > 150 + 0.39 * L.plot_w && R1->boxes[kb].x < 150 + 0.41 * L.plot_w);

    /* The chunk-1 forward is hatched: along one line through it, two colours alternate. */
    int k1 = -1;
    for (int i = 0; i < tl->rows[0].nboxes; i++)
        if (tl->rows[0].boxes[i].chunk == 1) k1 = i;
    assert_true(k1 >= 0);
    int fill = 0, ink = 0;
    viz_rgb f = viz_tl_box_color(VIZ_TL_FORWARD, 1);
    for (double x = R0->boxes[k1].x + 2; x < R0->boxes[k1].x + R0->boxes[k1].w - 2; x++) {
        px p = pixel(s, x, R0->lane_y + 4);
        if (abs(p.r - (int)(f.r * 255 + 0.5)) <= 2 && abs(p.b - (int)(f.b * 255 + 0.5)) <= 2)
            fill++;
        else if (p.r < f.r * 255 - 20) ink++;
    }
    assert_true(fill > 10 && ink > 5);

    /* Rank 1: idle for 1 ms (blank), then its receive waits 1 ms (pale, hatched), then
     * transfers 0.1 ms (solid slate, over the start of its forward). */
    assert_true(R1->nseg >= 3 && R1->seg_x[0] == L.plot_x);
    assert_int_equal(R1->seg_cls[0], VIZ_TC_IDLE);
    assert_int_equal(R1->seg_cls[1], VIZ_TC_WAIT);
    assert_int_equal(R1->seg_cls[2], VIZ_TC_TRANSFER);
    double mid = R1->lane_y + VIZ_TL_LANE_H / 2.0;
    px idle = pixel(s, R1->seg_x[0] + R1->seg_w[0] / 2, R1->lane_y + 4);
    assert_true(idle.r == 255 && idle.g == 255 && idle.b == 255);
    int pale = 0, hatch = 0;
    for (double x = R1->seg_x[1] + 2; x < R1->seg_x[1] + R1->seg_w[1] - 2; x++) {
        px p = pixel(s, x, mid);
        assert_false(p.r == 255 && p.g == 255 && p.b == 255); /* waiting is never blank */
        if (abs(p.r - (int)(VIZ_TL_WAIT_RGB.r * 255 + 0.5)) <= 2 &&
            abs(p.b - (int)(VIZ_TL_WAIT_RGB.b * 255 + 0.5)) <= 2)
            pale++;
        else hatch++;
    }
    assert_true(pale > 10 && hatch > 3);
    expect_rgb(pixel(s, R1->seg_x[2] + R1->seg_w[2] / 2, mid), VIZ_TL_TRANSFER_RGB,
               "rank 1 transfer");
    /* The left margin stays white. */
    px margin = pixel(s, 5, R0->lane_y + 5);
    assert_true(margin.r == 255 && margin.g == 255 && margin.b == 255);
    assert_int_equal(P->narrows, 1);

    cairo_surface_destroy(s);
    viz_tl_layout_free(&L);
    viz_timeline_free(tl);
}

static void same_input_gives_identical_png_bytes_and_svg_pdf_are_written(void **state) {
    (void)state;
    const char *dir = write_known_run();
    viz_timeline *tl = load(dir);
    const viz_timeline *one[1] = {tl};
    char a[4200], b[4200], svg[4200], pdf[4200];
    snprintf(a, sizeof a, "%s/a.png", dir);
    snprintf(b, sizeof b, "%s/b.png", dir);
    snprintf(svg, sizeof svg, "%s/t.svg", dir);
    snprintf(pdf, sizeof pdf, "%s/t.pdf", dir);
    viz_timeline_draw(a, one, 1, NULL);
    viz_timeline_draw(b, one, 1, NULL);
    viz_timeline_draw(svg, one, 1, NULL);
    viz_timeline_draw(pdf, one, 1, NULL);
    long n = file_size(a);
    assert_true(n > 1000);
    assert_int_equal(n, file_size(b));
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    char *ba = malloc((size_t)n), *bb = malloc((size_t)n);
    assert_int_equal(fread(ba, 1, (size_t)n, fa), (size_t)n);
    assert_int_equal(fread(bb, 1, (size_t)n, fb), (size_t)n);
    assert_memory_equal(ba, bb, (size_t)n);
    fclose(fa);
    fclose(fb);
    free(ba);
    free(bb);
    assert_true(file_size(svg) > 1000);
    assert_true(file_size(pdf) > 1000);
    viz_timeline_free(tl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(png_has_boxes_where_the_layout_puts_them),
        cmocka_unit_test(same_input_gives_identical_png_bytes_and_svg_pdf_are_written),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
