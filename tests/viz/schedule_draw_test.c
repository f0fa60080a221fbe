/* schedule_draw_test.c — the schedule picture: box geometry from simulated times, colours,
 * chunk hatching, idle gaps, phase strips, and a rendered PNG that is deterministic and has
 * the boxes where the layout says. */
#include <cairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"
#include "tests/support/testing.h"
#include "viz/canvas.h"
#include "viz/schedule_draw.h"

static bool same_rgb(viz_rgb a, viz_rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }

static void build(pp_kind kind, int p, int m, int v, pp_schedule *s, pp_sim *sim) {
    pp_config cfg = {kind, p, m, v};
    pp_schedule_build(&cfg, s);
    char msg[256];
    if (!pp_simulate(s, NULL, sim, msg, sizeof msg)) fail_msg("%s", msg);
}

/* 1f1b p=2 m=2, unit costs:
 *   rank 0: F0 [0,1] F1 [1,2] .     B0 [3,4] .     B1 [5,6]
 *   rank 1: .     F0 [1,2] B0 [2,3] F1 [3,4] B1 [4,5] .          makespan 6 */
static void boxes_sit_at_their_simulated_times(void **state) {
    (void)state;
    pp_schedule s;
    pp_sim sim;
    build(PP_1F1B, 2, 2, 1, &s, &sim);
    viz_schedule_layout l;
    viz_schedule_layout_compute(&s, &sim, &l);
    assert_int_equal(l.nbox, 8);
    const double u = l.px_per_unit;
    assert_true(l.plot_w == 6 * u);
    assert_true(l.width > l.plot_x + l.plot_w && l.height > l.axis_y);
    /* rank 0 action 2 is B0 at [3, 4] */
    const viz_sched_rect *b0 = &l.boxes[2];
    assert_int_equal(b0->rank, 0);
    assert_int_equal(b0->action, 2);
    assert_true(b0->x == l.plot_x + 3 * u && b0->w == u);
    assert_true(b0->y == l.row_y0);
    assert_true(same_rgb(b0->fill, VIZ_BACKWARD));
    assert_string_equal(b0->label, "0");
    /* rank 1 action 0 is F0 at [1, 2], one row down */
    const viz_sched_rect *f0 = &l.boxes[4];
    assert_int_equal(f0->rank, 1);
    assert_true(f0->x == l.plot_x + u && f0->y == l.row_y0 + l.row_pitch);
    assert_true(same_rgb(f0->fill, VIZ_FORWARD));
    assert_false(f0->hatched);
    /* idle gaps: rank 0 [2,3] [4,5]; rank 1 [0,1] [5,6] */
    assert_int_equal(l.ngap, 4);
    assert_true(l.gaps[0].rank == 0 && l.gaps[0].x == l.plot_x + 2 * u && l.gaps[0].w == u);
    assert_true(l.gaps[2].rank == 1 && l.gaps[2].x == l.plot_x && l.gaps[2].w == u);
    assert_true(l.gaps[3].rank == 1 && l.gaps[3].x == l.plot_x + 5 * u);
    assert_true(same_rgb(l.gaps[0].fill, VIZ_IDLE));
    /* phases: rank 0 has warmup [0,1], steady [1,4], cooldown [5,6]; rank 1 only steady */
    assert_int_equal(l.nstrip, 4);
    assert_true(l.strips[0].phase == PP_WARMUP && l.strips[0].w == u);
    assert_true(l.strips[1].phase == PP_STEADY && l.strips[1].x == l.plot_x + u &&
                l.strips[1].w == 3 * u);
    assert_true(l.strips[2].phase == PP_COOLDOWN && l.strips[2].x == l.plot_x + 5 * u);
    assert_true(l.strips[3].phase == PP_STEADY && l.strips[3].rank == 1);
    /* the title gives the configuration, the bubble and the textbook figure (1/3 here) */
    assert_non_null(strstr(l.title, "1f1b"));
    assert_non_null(strstr(l.title, "p = 2"));
    assert_non_null(strstr(l.title, "bubble 33.3%"));
    assert_non_null(strstr(l.title, "(m+p−1) = 33.3%"));
    assert_string_equal(l.right[0], "idle 33.3%   peak 2 in flight");
    viz_schedule_layout_free(&l);
    pp_sim_free(&sim);
    pp_schedule_free(&s);
}

static void later_chunks_are_hatched_and_lighter(void **state) {
    (void)state;
    pp_schedule s;
    pp_sim sim;
    build(PP_INTERLEAVED, 2, 2, 2, &s, &sim);
    viz_schedule_layout l;
    viz_schedule_layout_compute(&s, &sim, &l);
    for (int i = 0; i < l.nbox; i++) {
        const pp_action *a = &s.ranks[l.boxes[i].rank].actions[l.boxes[i].action];
        assert_int_equal(l.boxes[i].hatched, a->chunk > 0);
        viz_rgb base = a->op == PP_FORWARD ? VIZ_FORWARD : VIZ_BACKWARD;
        assert_int_equal(same_rgb(l.boxes[i].fill, base), a->chunk == 0);
        assert_true(l.boxes[i].fill.r >= base.r); /* lighter, never darker */
    }
    assert_non_null(strstr(l.title, "v = 2"));
    viz_schedule_layout_free(&l);
    pp_sim_free(&sim);
    pp_schedule_free(&s);
}

/* zbv: chunk 1 (the way back up the V) hatched and lighter, W in its own colour, the title
 * with the zero-bubble textbook figure. */
static void zbv_shows_chunk_1_and_w_distinctly(void **state) {
    (void)state;
    pp_schedule s;
    pp_sim sim;
    build(PP_ZBV, 2, 4, 2, &s, &sim);
    viz_schedule_layout l;
    viz_schedule_layout_compute(&s, &sim, &l);
    int weights = 0;
    for (int i = 0; i < l.nbox; i++) {
        const pp_action *a = &s.ranks[l.boxes[i].rank].actions[l.boxes[i].action];
        assert_int_equal(l.boxes[i].hatched, a->chunk > 0);
        viz_rgb base = a->op == PP_FORWARD  ? VIZ_FORWARD
                       : a->op == PP_WEIGHT ? VIZ_WEIGHT
                                            : VIZ_BACKWARD;
        assert_int_equal(same_rgb(l.boxes[i].fill, base), a->chunk == 0);
        weights += a->op == PP_WEIGHT;
    }
    assert_int_equal(weights, 2 * 2 * 4); /* p ranks × 2 chunks × m */
    assert_non_null(strstr(l.title, "zbv"));
    assert_non_null(strstr(l.title, "(p-1)/(6m+p-1), F = B = W"));
    viz_schedule_layout_free(&l);
    pp_sim_free(&sim);
    pp_schedule_free(&s);
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*n);
    assert_int_equal(fread(buf, 1, *n, f), *n);
    fclose(f);
    return buf;
}

/* The pixel at (x, y) of an ARGB32 surface, as 0..255 r, g, b. */
static void pixel(cairo_surface_t *img, double x, double y, int rgb[3]) {
    unsigned char *data = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    uint32_t px = *(uint32_t *)(data + (int)y * stride + 4 * (int)x);
    rgb[0] = (px >> 16) & 255;
    rgb[1] = (px >> 8) & 255;
    rgb[2] = px & 255;
}

static void png_is_deterministic_and_boxes_are_where_the_layout_says(void **state) {
    (void)state;
    pp_schedule s;
    pp_sim sim;
    build(PP_1F1B, 4, 8, 1, &s, &sim);
    const char *dir = test_tmpdir("schedule_draw");
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/a.png", dir);
    snprintf(b, sizeof b, "%s/b.png", dir);
    viz_schedule_draw(&s, &sim, a);
    viz_schedule_draw(&s, &sim, b);
    size_t na, nb;
    unsigned char *da = slurp(a, &na), *db = slurp(b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(da, db, na);
    free(da);
    free(db);

    viz_schedule_layout l;
    viz_schedule_layout_compute(&s, &sim, &l);
    cairo_surface_t *img = cairo_image_surface_create_from_png(a);
    assert_int_equal(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(img), (int)(l.width + 0.5));
    assert_int_equal(cairo_image_surface_get_height(img), (int)(l.height + 0.5));
    int rgb[3];
    for (int i = 0; i < l.nbox; i++) { /* a point inside each box, away from its label */
        const viz_sched_rect *r = &l.boxes[i];
        pixel(img, r->x + 3, r->y + 4, rgb);
        int want[3] = {(int)(r->fill.r * 255 + 0.5), (int)(r->fill.g * 255 + 0.5),
                       (int)(r->fill.b * 255 + 0.5)};
        for (int k = 0; k < 3; k++)
            if (abs(rgb[k] - want[k]) > 2)
                fail_msg("box %d (rank %d action %d): pixel %d,%d,%d, fill %d,%d,%d", i, r->rank,
                         r->action, rgb[0], rgb[1], rgb[2], want[0], want[1], want[2]);
    }
    for (int i = 0; i < l.ngap; i++) { /* idle gaps are grey, not white */
        const viz_sched_rect *g = &l.gaps[i];
        pixel(img, g->x + g->w / 2, g->y + g->h / 2, rgb);
        assert_true(rgb[0] < 250 && abs(rgb[0] - rgb[2]) < 3);
    }
    cairo_surface_destroy(img);
    viz_schedule_layout_free(&l);

    /* svg and pdf are drawn too */
    snprintf(a, sizeof a, "%s/s.svg", dir);
    viz_schedule_draw(&s, &sim, a);
    snprintf(b, sizeof b, "%s/s.pdf", dir);
    viz_schedule_draw(&s, &sim, b);
    da = slurp(a, &na);
    db = slurp(b, &nb);
    assert_true(na > 1000 && nb > 1000);
    assert_memory_equal(db, "%PDF", 4);
    free(da);
    free(db);
    pp_sim_free(&sim);
    pp_schedule_free(&s);
}

/* The stack for a slide (--compare): one time scale for every panel, so a time unit is the
 * same width everywhere and the shorter schedule's plot ends earlier; panels one under the
 * other; in the PNG, each panel's boxes where its layout, moved down by its top, says. */
static void a_stack_shares_one_time_scale(void **state) {
    (void)state;
    pp_schedule s[2];
    pp_sim sim[2];
    build(PP_1F1B, 4, 8, 1, &s[0], &sim[0]);
    build(PP_ZBV, 4, 8, 2, &s[1], &sim[1]);
    viz_schedule_layout l[2];
    double y[2], width, height;
    viz_schedule_stack_compute(s, sim, 2, l, y, &width, &height);
    assert_true(l[0].px_per_unit == l[1].px_per_unit);
    const int shorter = sim[1].makespan < sim[0].makespan ? 1 : 0;
    assert_true(sim[shorter].makespan < sim[1 - shorter].makespan);
    assert_true(l[shorter].plot_w < l[1 - shorter].plot_w);
    assert_true(y[0] == 0 && y[1] >= l[0].axis_y && height > y[1] + l[1].axis_y);
    assert_true(width >= l[0].width && width >= l[1].width);
    const char *dir = test_tmpdir("schedule_stack");
    char path[4200];
    snprintf(path, sizeof path, "%s/stack.png", dir);
    viz_schedule_draw_stack(s, sim, 2, path);
    cairo_surface_t *img = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_height(img), (int)(height + 0.5));
    int rgb[3];
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < l[k].nbox; i += 7) {
            const viz_sched_rect *r = &l[k].boxes[i];
            if (r->hatched) continue; /* the hatching's lines may sit on the probe */
            pixel(img, r->x + 3, y[k] + r->y + 4, rgb);
            assert_true(abs(rgb[0] - (int)(r->fill.r * 255 + 0.5)) <= 2);
            assert_true(abs(rgb[2] - (int)(r->fill.b * 255 + 0.5)) <= 2);
        }
    cairo_surface_destroy(img);
    for (int k = 0; k < 2; k++) {
        viz_schedule_layout_free(&l[k]);
        pp_sim_free(&sim[k]);
        pp_schedule_free(&s[k]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_stack_shares_one_time_scale),
        cmocka_unit_test(boxes_sit_at_their_simulated_times),
        cmocka_unit_test(later_chunks_are_hatched_and_lighter),
        cmocka_unit_test(zbv_shows_chunk_1_and_w_distinctly),
        cmocka_unit_test(png_is_deterministic_and_boxes_are_where_the_layout_says),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
