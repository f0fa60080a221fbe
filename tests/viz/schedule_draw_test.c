/* schedule_draw_test.c — the schedule picture: box geometry from simulated times, colours,
 * chunk hatching, idle gaps, phase strips, and a rendered PNG that is deterministic and has
 * the boxes where the layout says. */
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"
#include "tests/support/testing.h"
#include "viz/build.h"
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

/* A build's page k of K: the layout cut at k·T/K shows exactly the actions that started
 * before the cut, each up to it; the gaps stop at the cut; the last page is the whole. */
static void a_build_page_shows_what_started_before_its_cut(void **state) {
    (void)state;
    pp_schedule s;
    pp_sim sim;
    build(PP_1F1B, 4, 8, 1, &s, &sim);
    viz_schedule_layout full;
    viz_schedule_layout_compute(&s, &sim, &full);
    const int K = 4;
    for (int k = 1; k <= K; k++) {
        const double cut = viz_build_cut(sim.makespan, K, k);
        assert_true(cut == sim.makespan * k / K);
        viz_schedule_layout l;
        viz_schedule_layout_compute_opt(&s, &sim, &(viz_schedule_options){.until = cut}, &l);
        assert_true(l.until == cut);
        assert_true(l.width == full.width && l.height == full.height); /* one fixed axis */
        assert_true(l.px_per_unit == full.px_per_unit);
        int started = 0;
        for (int r = 0; r < 4; r++)
            for (int i = 0; i < s.ranks[r].n; i++) started += sim.ranks[r].spans[i].start < cut;
        assert_int_equal(l.nbox, started);
        const double x_cut = l.plot_x + cut * l.px_per_unit;
        for (int i = 0; i < l.nbox; i++) {
            const viz_sched_rect *b = &l.boxes[i];
            const pp_span sp = sim.ranks[b->rank].spans[b->action];
            assert_true(sp.start < cut);
            assert_true(b->x + b->w <= x_cut + 1e-9);
            const double end = sp.end < cut ? sp.end : cut;
            assert_true(fabs(b->w - (end - sp.start) * l.px_per_unit) < 1e-9);
        }
        for (int i = 0; i < l.ngap; i++) assert_true(l.gaps[i].x + l.gaps[i].w <= x_cut + 1e-9);
        if (k == K) {
            assert_int_equal(l.nbox, full.nbox);
            assert_int_equal(l.ngap, full.ngap);
        }
        viz_schedule_layout_free(&l);
    }
    viz_schedule_layout_free(&full);
    pp_sim_free(&sim);
    pp_schedule_free(&s);
}

/* Does the rectangle hold a pixel of exactly this colour? */
static bool has_colour(cairo_surface_t *img, double x0, double y0, double x1, double y1,
                       viz_rgb c) {
    int want[3] = {(int)(c.r * 255 + 0.5), (int)(c.g * 255 + 0.5), (int)(c.b * 255 + 0.5)}, rgb[3];
    for (int y = (int)y0; y < (int)y1; y++)
        for (int x = (int)x0; x < (int)x1; x++) {
            pixel(img, x, y, rgb);
            if (rgb[0] == want[0] && rgb[1] == want[1] && rgb[2] == want[2]) return true;
        }
    return false;
}

/* Rendered: 1F1B p = 4, m = 8 in 11 pages of 3 time units (one F + one B each). The first
 * backward starts at 4 (rank 3, after F0 on it at 3): page 1 (cut 3) holds no pixel of the
 * backward colour among the rows, page 2 (cut 6) does. (With K = 4 the first cut, 8.25, is
 * after it.) The last page equals the whole picture but for its "11 / 11" corner. */
static void rendered_pages_fill_up_and_the_last_is_the_whole(void **state) {
    (void)state;
    pp_schedule s;
    pp_sim sim;
    build(PP_1F1B, 4, 8, 1, &s, &sim);
    pp_costs costs = pp_costs_default(&s.cfg);
    pp_sim_free(&sim);
    char msg[256];
    assert_true(pp_simulate(&s, &costs, &sim, msg, sizeof msg));
    assert_true(sim.makespan == 33);
    const char *dir = test_tmpdir("schedule_build");
    char frames[4200], whole[4200], name[4300];
    snprintf(frames, sizeof frames, "%s/frame.png", dir);
    snprintf(whole, sizeof whole, "%s/whole.png", dir);
    viz_schedule_draw_opt(&s, &sim, 1, &(viz_schedule_options){.build = 11}, frames);
    viz_schedule_draw(&s, &sim, whole);
    viz_schedule_layout l;
    viz_schedule_layout_compute(&s, &sim, &l);
    const double top = l.row_y0, bottom = l.row_y0 + 4 * l.row_pitch;
    const double x0 = l.plot_x, x1 = l.plot_x + l.plot_w;
    for (int k = 1; k <= 2; k++) {
        viz_build_page_name(frames, k, name, sizeof name);
        cairo_surface_t *img = cairo_image_surface_create_from_png(name);
        assert_int_equal(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
        assert_int_equal(has_colour(img, x0, top, x1, bottom, VIZ_BACKWARD), k == 2);
        assert_true(has_colour(img, x0, top, x1, bottom, VIZ_FORWARD));
        cairo_surface_destroy(img);
    }
    viz_build_page_name(frames, 11, name, sizeof name);
    cairo_surface_t *last = cairo_image_surface_create_from_png(name);
    cairo_surface_t *all = cairo_image_surface_create_from_png(whole);
    const int w = cairo_image_surface_get_width(all), h = cairo_image_surface_get_height(all);
    assert_int_equal(cairo_image_surface_get_width(last), w);
    assert_int_equal(cairo_image_surface_get_height(last), h);
    int a[3], b[3], differ = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            if (y < 40 && x > w - 120) continue; /* the page number */
            pixel(last, x, y, a);
            pixel(all, x, y, b);
            differ += a[0] != b[0] || a[1] != b[1] || a[2] != b[2];
        }
    assert_int_equal(differ, 0);
    cairo_surface_destroy(last);
    cairo_surface_destroy(all);
    viz_schedule_layout_free(&l);
    pp_sim_free(&sim);
    pp_schedule_free(&s);
}

/* Arrows: one per receive, from its sender's box to its own. 1F1B p = 4, m = 8: 3 × 8
 * forwards and 3 × 8 backwards receive (48); zbv adds the V's turn-around on the last rank,
 * an arrow within its own row for each forward and each B there (2m). A page of a build
 * shows the arrows into the boxes it shows. */
static void arrows_follow_the_dependencies(void **state) {
    (void)state;
    pp_schedule s;
    pp_sim sim;
    build(PP_1F1B, 4, 8, 1, &s, &sim);
    viz_schedule_layout l;
    viz_schedule_layout_compute_opt(&s, &sim, &(viz_schedule_options){.arrows = true}, &l);
    assert_int_equal(l.narrow, 48);
    for (int i = 0; i < l.narrow; i++) {
        const viz_sched_arrow *a = &l.arrows[i];
        const pp_action *from = &s.ranks[a->from_rank].actions[a->from_action];
        const pp_action *to = &s.ranks[a->to_rank].actions[a->to_action];
        assert_int_equal(from->send_tag, to->recv_tag);
        assert_int_equal(from->mb, to->mb);
        assert_int_equal(a->to_rank - a->from_rank, from->op == PP_FORWARD ? 1 : -1);
        assert_true(a->x1 <= a->x2); /* a message never arrives before it was sent */
    }
    viz_schedule_layout_free(&l);
    viz_schedule_layout_compute(&s, &sim, &l);
    assert_int_equal(l.narrow, 0); /* only on request */
    viz_schedule_layout_free(&l);
    viz_schedule_layout_compute_opt(&s, &sim, &(viz_schedule_options){.arrows = true, .until = 5},
                                    &l);
    int into_shown = 0;
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < s.ranks[r].n; i++)
            into_shown += s.ranks[r].actions[i].recv_tag >= 0 && sim.ranks[r].spans[i].start < 5;
    assert_int_equal(l.narrow, into_shown);
    viz_schedule_layout_free(&l);
    pp_sim_free(&sim);
    pp_schedule_free(&s);

    build(PP_ZBV, 4, 8, 2, &s, &sim);
    viz_schedule_layout_compute_opt(&s, &sim, &(viz_schedule_options){.arrows = true}, &l);
    int recv = 0, same_row = 0;
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < s.ranks[r].n; i++) recv += s.ranks[r].actions[i].recv_tag >= 0;
    for (int i = 0; i < l.narrow; i++) same_row += l.arrows[i].same_row;
    assert_int_equal(l.narrow, recv);
    assert_int_equal(recv, 2 * (4 * 2 - 1) * 8); /* S − 1 hand-overs each way, per micro-batch */
    assert_int_equal(same_row, 2 * 8);
    viz_schedule_layout_free(&l);
    pp_sim_free(&sim);
    pp_schedule_free(&s);
}

/* The activations band: on by default, one scale for the picture in micro-batches (GPipe's
 * m = 8 fills the band, 1F1B's p = 4 half of it when stacked, zbv's 8 chunk sets of 1/2 as
 * high as 1F1B's 4), the curve's height at the peak is the peak times px_per_set;
 * --hide-memory gives the rows back their height. A title replaces the generated one. */
static void memory_band_heights_are_the_held_counts(void **state) {
    (void)state;
    pp_schedule s[3];
    pp_sim sim[3];
    build(PP_GPIPE, 4, 8, 1, &s[0], &sim[0]);
    build(PP_1F1B, 4, 8, 1, &s[1], &sim[1]);
    build(PP_ZBV, 4, 8, 2, &s[2], &sim[2]);
    viz_schedule_layout l[3], bare;
    double y[3], width, height;
    viz_schedule_stack_compute(s, sim, 3, l, y, &width, &height);
    for (int k = 0; k < 3; k++) {
        assert_true(l[k].mem_max == 8);
        assert_true(l[k].px_per_set * s[k].cfg.v == l[0].px_per_set && l[0].px_per_set > 0);
        for (int r = 0; r < 4; r++) {
            assert_int_equal(l[k].mem[r].peak, sim[k].ranks[r].peak_inflight);
            /* the top of the band is the most held in the picture: the peak's height fits */
            assert_true(l[k].mem[r].peak * l[k].px_per_set <= l[k].mem_base);
        }
    }
    const double gpipe = l[0].mem[0].peak * l[0].px_per_set;
    const double f1b1 = l[1].mem[0].peak * l[1].px_per_set;
    const double zbv = l[2].mem[0].peak * l[2].px_per_set;
    assert_int_equal(l[2].mem[0].peak, 8); /* 2p chunk sets */
    assert_true(gpipe == 2 * f1b1 && zbv == f1b1);
    viz_schedule_layout_compute_opt(
        &s[1], &sim[1], &(viz_schedule_options){.no_memory = true, .title = "Mine"}, &bare);
    assert_true(bare.nmem == 0 && bare.mem == NULL && bare.mem_base == 0);
    assert_true(bare.row_pitch < l[1].row_pitch && bare.height < l[1].height);
    assert_string_equal(bare.title, "Mine");
    viz_schedule_layout_free(&bare);
    for (int k = 0; k < 3; k++) {
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
        cmocka_unit_test(a_build_page_shows_what_started_before_its_cut),
        cmocka_unit_test(rendered_pages_fill_up_and_the_last_is_the_whole),
        cmocka_unit_test(arrows_follow_the_dependencies),
        cmocka_unit_test(memory_band_heights_are_the_held_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
