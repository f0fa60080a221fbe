/* groups_draw_test.c — the groups picture through its numbers (box positions, node bands,
 * colours) and a rendered PNG sampled where boxes must be. */
#include <cairo.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testing.h"
#include "viz/groups_draw.h"

/* The label audit of viz/canvas.h found nothing in the picture just drawn. */
static void expect_no_layout_violations(void) {
    char bad[8192];
    if (viz_last_violations(bad, sizeof bad)) fail_msg("%s", bad);
}

static pg_layout make(int world, int tp, int pp, const char *order) {
    pg_layout l;
    char err[256];
    if (!pg_layout_make(&l, world, tp, 1, 1, pp, 1, order, err, sizeof err)) fail_msg("%s", err);
    return l;
}

static bool inside(viz_rect in, viz_rect out) {
    return in.x >= out.x && in.y >= out.y && in.x + in.w <= out.x + out.w &&
           in.y + in.h <= out.y + out.h;
}

static bool overlap(viz_rect a, viz_rect b) {
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

static void boxes_sit_in_their_node_without_overlapping(void **state) {
    (void)state;
    int worlds[] = {1, 6, 16, 64}, per_node[] = {8, 4, 8, 16};
    for (int t = 0; t < 4; t++) {
        pg_layout l = make(worlds[t], worlds[t] % 2 ? 1 : 2, 1, NULL);
        viz_groups_layout gl;
        viz_groups_layout_make(&gl, &l, per_node[t]);
        assert_int_equal(gl.nodes, (worlds[t] + per_node[t] - 1) / per_node[t]);
        viz_rect page = {0, 0, gl.width, gl.height};
        for (int r = 0; r < l.world; r++) {
            assert_true(inside(gl.box[r], gl.node[r / per_node[t]]));
            assert_true(inside(gl.box[r], page));
            for (int q = 0; q < r; q++) assert_false(overlap(gl.box[r], gl.box[q]));
        }
        for (int n = 1; n < gl.nodes; n++)
            assert_true(gl.node[n].y >= gl.node[n - 1].y + gl.node[n - 1].h);
        viz_groups_layout_free(&gl);
    }
}

static void ranks_of_a_node_read_left_to_right(void **state) {
    (void)state;
    pg_layout l = make(16, 2, 4, NULL);
    viz_groups_layout gl;
    viz_groups_layout_make(&gl, &l, 8);
    assert_int_equal(gl.nodes, 2);
    assert_int_equal(gl.cols, 8);
    for (int r = 1; r < 8; r++) {
        assert_true(gl.box[r].x > gl.box[r - 1].x);
        assert_true(gl.box[r].y == gl.box[0].y);
    }
    assert_true(gl.box[8].x == gl.box[0].x && gl.box[8].y > gl.box[7].y);
    /* DP groups colour the boxes: [0,2] share a colour, [1,3] another */
    assert_int_equal(gl.dp_group[0], gl.dp_group[2]);
    assert_int_equal(gl.dp_group[1], gl.dp_group[3]);
    assert_int_not_equal(gl.dp_group[0], gl.dp_group[1]);
    assert_int_equal(gl.dp_group[13], 7);
    viz_groups_layout_free(&gl);
}

static void rendered_png_has_the_fill_colour_inside_each_box(void **state) {
    (void)state;
    pg_layout l = make(16, 2, 4, NULL);
    char path[4200];
    snprintf(path, sizeof path, "%s/groups.png", test_tmpdir("groups_draw"));
    viz_groups_draw(path, &l, 8);
    expect_no_layout_violations();
    viz_groups_layout gl;
    viz_groups_layout_make(&gl, &l, 8);
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(s), (int)(gl.width + 0.5));
    assert_int_equal(cairo_image_surface_get_height(s), (int)(gl.height + 0.5));
    const unsigned char *px = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    for (int r = 0; r < l.world; r++) {
        int x = (int)(gl.box[r].x + 6), y = (int)(gl.box[r].y + 5); /* top-left, clear of text */
        uint32_t p;
        memcpy(&p, px + y * stride + x * 4, 4);
        viz_rgb want = viz_groups_fill(gl.dp_group[r]);
        int red = (p >> 16) & 255, green = (p >> 8) & 255, blue = p & 255;
        if (abs(red - (int)(want.r * 255)) > 3 || abs(green - (int)(want.g * 255)) > 3 ||
            abs(blue - (int)(want.b * 255)) > 3)
            fail_msg("rank %d at (%d,%d): pixel %d,%d,%d, want the DP fill %.0f,%.0f,%.0f", r, x, y,
                     red, green, blue, want.r * 255, want.g * 255, want.b * 255);
    }
    /* the page margin is white */
    uint32_t corner;
    memcpy(&corner, px + 2 * stride + 2 * 4, 4);
    assert_int_equal(corner & 0xffffff, 0xffffff);
    cairo_surface_destroy(s);
    viz_groups_layout_free(&gl);
}

/* With cp and ep above 1: every box gets its CP and EP group number, a channel above each
 * row holds their lines, and boxes still sit in their node without overlapping. Without,
 * the geometry is the old one. */
static void context_and_expert_groups_get_numbers_and_room(void **state) {
    (void)state;
    pg_layout old = make(16, 2, 2, NULL);
    viz_groups_layout go;
    viz_groups_layout_make(&go, &old, 8);
    assert_null(go.cp_group);
    assert_null(go.ep_group);
    assert_null(go.tp_cp_group);
    assert_true(go.top_gap == 0);

    pg_layout l;
    char err[256];
    assert_true(pg_layout_make(&l, 16, 2, 2, 2, 2, 1, NULL, err, sizeof err));
    viz_groups_layout gl;
    viz_groups_layout_make(&gl, &l, 8);
    assert_non_null(gl.cp_group);
    assert_non_null(gl.ep_group);
    assert_true(gl.top_gap > 20);
    viz_rect page = {0, 0, gl.width, gl.height};
    for (int r = 0; r < l.world; r++) {
        assert_int_equal(gl.cp_group[r], pg_group_of(&l, PG_CP, r, NULL, NULL));
        assert_int_equal(gl.ep_group[r], pg_group_of(&l, PG_EP, r, NULL, NULL));
        assert_int_equal(gl.tp_cp_group[r], pg_group_of(&l, PG_TP_CP, r, NULL, NULL));
        assert_true(inside(gl.box[r], gl.node[r / 8]));
        assert_true(inside(gl.box[r], page));
        /* the channel above the box is inside the node band too */
        assert_true(gl.box[r].y - gl.top_gap >= gl.node[r / 8].y);
        for (int q = 0; q < r; q++) assert_false(overlap(gl.box[r], gl.box[q]));
    }
    assert_int_equal(gl.cp_group[0], gl.cp_group[2]);       /* [0,2] */
    assert_int_equal(gl.ep_group[0], gl.ep_group[4]);       /* [0,4] */
    assert_int_equal(gl.tp_cp_group[0], gl.tp_cp_group[3]); /* [0,1,2,3] */
    assert_int_not_equal(gl.tp_cp_group[0], gl.tp_cp_group[4]);
    assert_int_not_equal(gl.ep_group[0], gl.ep_group[2]);
    assert_true(gl.box[0].y > go.box[0].y); /* room for the CP/EP legend row and channel */
    viz_groups_layout_free(&gl);
    viz_groups_layout_free(&go);
}

/* The rendered picture has a CP dot over rank 0 (left of centre) and an EP dot (right), and
 * the TP × CP bracket under ranks 0 to 3. */
static void rendered_png_marks_cp_and_ep_members_over_the_boxes(void **state) {
    (void)state;
    pg_layout l;
    char err[256], path[4200];
    assert_true(pg_layout_make(&l, 16, 2, 2, 2, 2, 1, NULL, err, sizeof err));
    snprintf(path, sizeof path, "%s/groups_cp_ep.png", test_tmpdir("groups_draw"));
    viz_groups_draw(path, &l, 8);
    expect_no_layout_violations();
    viz_groups_layout gl;
    viz_groups_layout_make(&gl, &l, 8);
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_height(s), (int)(gl.height + 0.5));
    const unsigned char *px = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    const double dx[2] = {-16, 16};
    const viz_rgb base[2] = {viz_groups_cp_color(), viz_groups_ep_color()};
    for (int k = 0; k < 2; k++) {
        int x = (int)(gl.box[0].x + gl.box[0].w / 2 + dx[k]), y = (int)(gl.box[0].y - 8);
        uint32_t p;
        memcpy(&p, px + y * stride + x * 4, 4);
        viz_rgb want = viz_shade(base[k], -0.25); /* group 0's shade */
        int red = (p >> 16) & 255, green = (p >> 8) & 255, blue = p & 255;
        if (abs(red - (int)(want.r * 255)) > 12 || abs(green - (int)(want.g * 255)) > 12 ||
            abs(blue - (int)(want.b * 255)) > 12)
            fail_msg("%s dot at (%d,%d): pixel %d,%d,%d, want %.0f,%.0f,%.0f", k ? "EP" : "CP", x,
                     y, red, green, blue, want.r * 255, want.g * 255, want.b * 255);
    }
    /* The TP × CP bracket under ranks 0..3: its line 10 points under box 1, in the bracket's
     * colour (a 1.6-point line, antialiased: one of the rows around it is mostly that colour,
     * at most 30% of the way back to the node band's grey). */
    const viz_rgb bracket = viz_shade(viz_groups_cp_color(), -0.25);
    const int want[3] = {(int)(bracket.r * 255), (int)(bracket.g * 255), (int)(bracket.b * 255)};
    const int bx = (int)(gl.box[1].x + 20), by = (int)(gl.box[1].y + gl.box[1].h + 10);
    bool found = false;
    for (int y = by - 1; y <= by + 1; y++) {
        uint32_t p, band;
        memcpy(&p, px + y * stride + bx * 4, 4);
        memcpy(&band, px + (y + 4) * stride + bx * 4, 4); /* under the bracket: the band */
        int off = 0, span = 0;
        for (int c = 0; c < 3; c++) {
            const int got = (int)((p >> (16 - 8 * c)) & 255),
                      bg = (int)((band >> (16 - 8 * c)) & 255);
            off += abs(got - want[c]);
            span += abs(bg - want[c]);
        }
        found |= span > 100 && off * 10 <= span * 3;
    }
    if (!found) fail_msg("no TP × CP bracket under rank 1 at (%d,%d)", bx, by);
    cairo_surface_destroy(s);
    viz_groups_layout_free(&gl);
}

/* Pixels of picture `path` within 12 of any shade the PP lines use (the sending dots and arcs). */
static int pp_coloured_pixels(const char *path) {
    static const double shade[4] = {-0.35, 0.0, -0.15, 0.2}; /* draw_pp_links' shades */
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    const unsigned char *px = cairo_image_surface_get_data(s);
    const int stride = cairo_image_surface_get_stride(s), w = cairo_image_surface_get_width(s),
              h = cairo_image_surface_get_height(s);
    int count = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint32_t p;
            memcpy(&p, px + y * stride + x * 4, 4);
            const int rgb[3] = {(int)((p >> 16) & 255), (int)((p >> 8) & 255), (int)(p & 255)};
            for (int k = 0; k < 4; k++) {
                const viz_rgb c = viz_shade(viz_groups_pp_color(), shade[k]);
                if (abs(rgb[0] - (int)(c.r * 255)) <= 12 && abs(rgb[1] - (int)(c.g * 255)) <= 12 &&
                    abs(rgb[2] - (int)(c.b * 255)) <= 12) {
                    count++;
                    break;
                }
            }
        }
    cairo_surface_destroy(s);
    return count;
}

/* The legend lists exactly the kinds the picture draws (both read viz_groups_layout.drawn):
 * no PP line without pipeline parallelism, EP and EDP lines with experts (page 10's layout),
 * no EDP line when every rank holds other experts (edp = 1). And the picture agrees: the PP
 * colour appears only where pp > 1. */
static void legend_lists_exactly_the_kinds_drawn(void **state) {
    (void)state;
    struct {
        int world, tp, cp, ep, pp;
        bool want[VIZ_GK_NUM]; /* TP PP CP TP_CP EP EDP */
    } cases[] = {
        {8, 2, 1, 1, 1, {true, false, false, false, false, false}},
        {8, 2, 1, 1, 2, {true, true, false, false, false, false}},
        {8, 2, 1, 2, 1, {true, false, false, false, true, true}},  /* page 10 */
        {4, 1, 1, 4, 1, {true, false, false, false, true, false}}, /* edp = 1 */
        {16, 2, 2, 2, 2, {true, true, true, true, true, false}},   /* dp 2 = ep 2: edp 1 */
    };
    char err[256], path[4200];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pg_layout l;
        if (!pg_layout_make(&l, cases[i].world, cases[i].tp, cases[i].cp, cases[i].ep, cases[i].pp,
                            1, NULL, err, sizeof err))
            fail_msg("%s", err);
        viz_groups_layout gl;
        viz_groups_layout_make(&gl, &l, 8);
        for (int k = 0; k < VIZ_GK_NUM; k++)
            if (gl.drawn[k] != cases[i].want[k])
                fail_msg("case %zu: %s is %s, want %s", i, viz_groups_key_label((viz_groups_key)k),
                         gl.drawn[k] ? "drawn" : "not drawn", cases[i].want[k] ? "it" : "not");
        viz_groups_layout_free(&gl);
        if (i > 1) continue;
        snprintf(path, sizeof path, "%s/legend%zu.png", test_tmpdir("groups_draw"), i);
        viz_groups_draw(path, &l, 8);
        int n = pp_coloured_pixels(path);
        if (cases[i].pp > 1 ? n < 50 : n > 0)
            fail_msg("case %zu (pp %d): %d pixels in the PP lines' colour", i, cases[i].pp, n);
    }
}

/* Page 10's layout: an EDP dot over rank 0's centre in the EDP colour (group 0's shade). */
static void rendered_png_marks_expert_data_parallel_members(void **state) {
    (void)state;
    pg_layout l;
    char err[256], path[4200];
    assert_true(pg_layout_make(&l, 8, 2, 1, 2, 1, 1, NULL, err, sizeof err));
    snprintf(path, sizeof path, "%s/groups_edp.png", test_tmpdir("groups_draw"));
    viz_groups_draw(path, &l, 8);
    viz_groups_layout gl;
    viz_groups_layout_make(&gl, &l, 8);
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    const unsigned char *px = cairo_image_surface_get_data(s);
    const int stride = cairo_image_surface_get_stride(s);
    const int x = (int)(gl.box[0].x + gl.box[0].w / 2), y = (int)(gl.box[0].y - 8);
    uint32_t p;
    memcpy(&p, px + y * stride + x * 4, 4);
    const viz_rgb want = viz_shade(viz_groups_edp_color(), -0.25);
    const int red = (p >> 16) & 255, green = (p >> 8) & 255, blue = p & 255;
    if (abs(red - (int)(want.r * 255)) > 12 || abs(green - (int)(want.g * 255)) > 12 ||
        abs(blue - (int)(want.b * 255)) > 12)
        fail_msg("EDP dot at (%d,%d): pixel %d,%d,%d, want %.0f,%.0f,%.0f", x, y, red, green, blue,
                 want.r * 255, want.g * 255, want.b * 255);
    cairo_surface_destroy(s);
    viz_groups_layout_free(&gl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(boxes_sit_in_their_node_without_overlapping),
        cmocka_unit_test(legend_lists_exactly_the_kinds_drawn),
        cmocka_unit_test(rendered_png_marks_expert_data_parallel_members),
        cmocka_unit_test(ranks_of_a_node_read_left_to_right),
        cmocka_unit_test(rendered_png_has_the_fill_colour_inside_each_box),
        cmocka_unit_test(context_and_expert_groups_get_numbers_and_room),
        cmocka_unit_test(rendered_png_marks_cp_and_ep_members_over_the_boxes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
