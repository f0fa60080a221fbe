/* timeline_overlay_test.c — what `render --ideal --critical-path` lays over a timeline, as
 * layout numbers and pixels, on a hand-made 2-rank step:
 *
 *   ms             0    1    2    3    4    5
 *   rank 0         |F0..|         |B0.......|          path: rank 0 [0, 1] -> hop ->
 *   ideal rank 0   |F0..|    |B0.......|                     rank 1 [1, 3], idle [3, 4],
 *   rank 1              |F0.......|                          rank 0 [4, 5] <- hop
 *   ideal rank 1        |F0..|
 *
 * The ideal lane sits under the compute lane, thinner, its boxes where their times say, pale
 * in their kind's colour; the path's segments are rectangles on their ranks' compute lanes,
 * outlined in the path colour, with one arrow per change of rank; without overlays the layout
 * is as before; a window hides what lies outside it. */
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testing.h"
#include "viz/canvas.h"
#include "viz/timeline_draw.h"
#include "viz/timeline_layout.h"
#include "viz/timeline_overlay.h"

#define MS 1e-3

static viz_tl_box box(viz_tl_kind kind, int mb, double a_ms, double b_ms) {
    return (viz_tl_box){.kind = kind,
                        .microbatch = mb,
                        .chunk = 0,
                        .start = a_ms * MS,
                        .ready = a_ms * MS,
                        .end = b_ms * MS,
                        .peer = -1,
                        .flow = -1};
}

static viz_timeline *measured(void) {
    viz_timeline *tl = viz_timeline_new("hand", "1f1b", 1, 2, 1, 1, 1);
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 0, 0, 1));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_BACKWARD, 0, 3, 5));
    viz_timeline_add_box(tl, 1, box(VIZ_TL_FORWARD, 0, 1, 3));
    viz_timeline_finish(tl);
    return tl;
}

static viz_timeline *ideal(void) {
    viz_timeline *tl = viz_timeline_new("ideal", "1f1b", 1, 2, 1, 1, 1);
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 0, 0, 1));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_BACKWARD, 0, 2, 4));
    viz_timeline_add_box(tl, 1, box(VIZ_TL_FORWARD, 0, 1, 2));
    viz_timeline_finish(tl);
    return tl;
}

static const viz_tl_path_seg k_path[4] = {{0, 0, 1 * MS, false},
                                          {1, 1 * MS, 3 * MS, false},
                                          {1, 3 * MS, 4 * MS, true},
                                          {0, 4 * MS, 5 * MS, false}};

static const viz_tl_row_layout *row_of(const viz_tl_panel_layout *P, int rank) {
    for (int d = 0; d < P->nrows; d++)
        if (P->rows[d].rank == rank) return &P->rows[d];
    fail_msg("no row for rank %d", rank);
    return NULL;
}

static bool near(double a, double b) { return fabs(a - b) < 1e-9; }

static void ideal_lane_and_path_have_their_places(void **state) {
    (void)state;
    viz_timeline *tl = measured(), *id = ideal();
    viz_tl_overlay ov = {.ideal = id, .path = k_path, .npath = 4};
    snprintf(ov.caption, sizeof ov.caption, "ideal rows and the critical path");
    const viz_timeline *tls[1] = {tl};
    viz_tl_layout L, plain;
    viz_tl_layout_compute_overlaid(&L, tls, &ov, 1, 1000, NULL, 0, NULL);
    viz_tl_layout_compute(&plain, tls, 1, 1000);
    const viz_tl_panel_layout *P = &L.panels[0];
    for (int r = 0; r < 2; r++) {
        const viz_tl_row_layout *R = row_of(P, r), *Q = row_of(&plain.panels[0], r);
        assert_true(near(R->ideal_y, R->lane_y + R->lane_h + 2));
        assert_true(near(R->ideal_h, viz_tl_ideal_lane_h(R->lane_h)));
        assert_true(R->ideal_h < R->lane_h);               /* thinner */
        assert_true(R->comm_y >= R->ideal_y + R->ideal_h); /* the comm lane below it */
        assert_true(near(Q->ideal_h, 0));                  /* no overlay: as before */
        assert_true(near(Q->comm_y, Q->lane_y + Q->lane_h));
        assert_null(Q->ideal_boxes);
        for (int i = 0; i < id->rows[r].nboxes; i++) { /* on the measured rows' time axis */
            const viz_tl_box *b = &id->rows[r].boxes[i];
            assert_true(near(R->ideal_boxes[i].x, viz_tl_x(&L, b->start)));
            assert_true(near(R->ideal_boxes[i].w, (b->end - b->start) * L.px_per_s));
            assert_false(R->ideal_boxes[i].hidden);
        }
    }
    /* the path: one rectangle per segment on its rank's compute lane, hops where it changes
     * rank (0 -> 1 at 1 ms, 1 -> 0 at 4 ms), none inside a rank */
    assert_int_equal(P->npath, 4);
    for (int i = 0; i < 4; i++) {
        const viz_tl_row_layout *R = row_of(P, k_path[i].rank);
        assert_true(near(P->path[i].x, viz_tl_x(&L, k_path[i].start)));
        assert_true(near(P->path[i].w, (k_path[i].end - k_path[i].start) * L.px_per_s));
        assert_true(near(P->path[i].y, R->lane_y) && near(P->path[i].h, R->lane_h));
        assert_int_equal(P->path[i].idle, k_path[i].idle);
    }
    assert_int_equal(P->nhops, 2);
    const viz_tl_row_layout *R0 = row_of(P, 0), *R1 = row_of(P, 1);
    assert_true(near(P->hops[0].x1, viz_tl_x(&L, 1 * MS)) && near(P->hops[0].x2, P->hops[0].x1));
    assert_true(near(P->hops[0].y1, R0->lane_y + R0->lane_h / 2));
    assert_true(near(P->hops[0].y2, R1->lane_y + R1->lane_h / 2));
    assert_true(near(P->hops[1].x1, viz_tl_x(&L, 4 * MS)) && near(P->hops[1].y2, P->hops[0].y1));
    /* the caption sits above the rows; the legend names both overlays */
    assert_int_equal(P->caption_lines, 1);
    assert_true(P->caption_y < P->rows_top);
    int named = 0;
    for (int i = 0; i < L.nlegend; i++)
        named += L.legend[i].swatch == VIZ_TL_SW_IDEAL || L.legend[i].swatch == VIZ_TL_SW_PATH;
    assert_int_equal(named, 2);
    for (int i = 0; i < plain.nlegend; i++)
        assert_true(plain.legend[i].swatch != VIZ_TL_SW_IDEAL &&
                    plain.legend[i].swatch != VIZ_TL_SW_PATH);
    viz_tl_layout_free(&L);
    viz_tl_layout_free(&plain);
    viz_timeline_free(id);
    viz_timeline_free(tl);
}

/* A window of [0.5, 2.5) ms: the ideal B0 of rank 0 ([2, 4]) is cut at the window's end, the
 * path's last two segments and the hop at 4 ms are hidden. */
static void a_window_hides_what_lies_outside(void **state) {
    (void)state;
    viz_timeline *tl = measured(), *id = ideal();
    viz_tl_overlay ov = {.ideal = id, .path = k_path, .npath = 4};
    const viz_timeline *tls[1] = {tl};
    viz_tl_layout L;
    const viz_tl_window w = {0.5 * MS, 2.5 * MS};
    viz_tl_layout_compute_overlaid(&L, tls, &ov, 1, 1000, &w, 0, NULL);
    const viz_tl_panel_layout *P = &L.panels[0];
    const viz_tl_row_layout *R0 = row_of(P, 0);
    assert_false(R0->ideal_boxes[1].hidden);
    assert_true(near(R0->ideal_boxes[1].x + R0->ideal_boxes[1].w, L.plot_x + L.plot_w));
    assert_false(P->path[0].hidden);
    assert_true(near(P->path[0].x, L.plot_x)); /* clipped at the window's start */
    assert_true(P->path[0].cut_left && !P->path[0].cut_right);
    assert_true(P->path[1].cut_right && !P->path[1].cut_left); /* rank 1's [1, 3] ms */
    assert_true(P->path[2].hidden && P->path[3].hidden);
    assert_int_equal(P->nhops, 1);
    viz_tl_layout_free(&L);
    viz_timeline_free(id);
    viz_timeline_free(tl);
}

static unsigned pixel(cairo_surface_t *s, double x, double y) {
    const unsigned char *d = cairo_image_surface_get_data(s);
    return *(const unsigned *)(d + (size_t)y * (size_t)cairo_image_surface_get_stride(s) +
                               4 * (size_t)x) &
           0xffffff;
}

static unsigned rgb_of(viz_rgb c) {
    return (unsigned)(c.r * 255 + 0.5) << 16 | (unsigned)(c.g * 255 + 0.5) << 8 |
           (unsigned)(c.b * 255 + 0.5);
}

static void expect_near(unsigned got, unsigned want, const char *what) {
    for (int sh = 0; sh <= 16; sh += 8)
        if (abs((int)((got >> sh) & 255) - (int)((want >> sh) & 255)) > 2)
            fail_msg("%s: pixel %06x, want %06x", what, got, want);
}

/* Drawn: an ideal box's inside is its kind's colour made paler, its edge darker, the path's
 * edge is the path colour, in both themes, and every label passes the audit. */
static void drawn_in_both_themes(void **state) {
    (void)state;
    static const char *themes[] = {"default", "slides"};
    for (int k = 0; k < 2; k++) {
        assert_true(viz_theme_use(themes[k]));
        viz_timeline *tl = measured(), *id = ideal();
        viz_tl_overlay ov = {.ideal = id, .path = k_path, .npath = 4};
        const viz_timeline *tls[1] = {tl};
        char path[4300];
        snprintf(path, sizeof path, "%s/overlay-%s.png", test_tmpdir("timeline_overlay"),
                 themes[k]);
        viz_timeline_draw(path, tls, 1, &(viz_tl_draw_options){.width = 1000, .overlays = &ov});
        char why[4096];
        if (viz_last_violations(why, sizeof why) > 0) fail_msg("label audit: %s", why);
        viz_tl_layout L;
        viz_tl_layout_compute_overlaid(&L, tls, &ov, 1, 1000, NULL, 0, NULL);
        cairo_surface_t *s = cairo_image_surface_create_from_png(path);
        assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
        const viz_tl_panel_layout *P = &L.panels[0];
        const viz_tl_row_layout *R0 = row_of(P, 0);
        /* ideal F0 of rank 0, 0..1 ms (a forward: no slides pattern over its fill) */
        const viz_tl_box_layout *B = &R0->ideal_boxes[0];
        const viz_rgb bw = viz_tl_box_color(VIZ_TL_FORWARD, 0);
        expect_near(pixel(s, B->x + B->w * 0.2, R0->ideal_y + R0->ideal_h * 0.3),
                    rgb_of(viz_shade(bw, VIZ_TL_IDEAL_LIGHTEN)), "ideal box");
        /* outlined in the kind's colour: its edge is darker than its inside (anti-aliased) */
        const unsigned edge = pixel(s, B->x + 0.5, R0->ideal_y + R0->ideal_h * 0.3);
        const unsigned in = pixel(s, B->x + B->w * 0.2, R0->ideal_y + R0->ideal_h * 0.3);
        assert_true(((edge >> 8) & 255) + 20 < ((in >> 8) & 255));
        const viz_tl_path_rect *r = &P->path[1]; /* rank 1's F0, 1..3 ms */
        expect_near(pixel(s, r->x + 1, r->y + r->h / 2), rgb_of(VIZ_TL_PATH_RGB), "path edge");
        expect_near(pixel(s, r->x + r->w * 0.3, r->y + r->h * 0.2),
                    rgb_of(viz_tl_box_color(VIZ_TL_FORWARD, 0)), "inside the path's box");
        cairo_surface_destroy(s);
        viz_tl_layout_free(&L);
        viz_timeline_free(id);
        viz_timeline_free(tl);
    }
    assert_true(viz_theme_use("default"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ideal_lane_and_path_have_their_places),
        cmocka_unit_test(a_window_hides_what_lies_outside),
        cmocka_unit_test(drawn_in_both_themes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
