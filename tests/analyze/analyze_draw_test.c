/* analyze_draw_test.c — the picture of the hand-timed step (synthetic_run.h): the path's
 * segments sit in their rank's row at their times, the causes' bars add up to the measured
 * tick, and the rendered PNG has each colour where the layout puts it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "src/analyze/analyze_draw.h"
#include "src/trace/replay.h"
#include "tests/analyze/synthetic_run.h"
#include "tests/support/testing.h"
#include "viz/timeline_load.h"

typedef struct {
    trace_run *run, *rep;
    step_graph g;
    double *t;
    critical_path p;
    viz_timeline *rtl;
    bubble_causes bc;
} fixture;

static void load(fixture *f, const char *name) {
    char err[512];
    f->run = synthetic_run_load(name);
    f->rep = trace_run_replay(f->run, err, sizeof err);
    if (!f->rep || !step_graph_build(f->run, -1, &f->g, err, sizeof err)) fail_msg("%s", err);
    f->t = malloc(2 * (size_t)f->g.n * sizeof *f->t);
    step_graph_recorded(&f->g, f->t);
    critical_path_find(&f->g, f->t, &f->p);
    f->rtl = viz_timeline_from_run(f->rep, "replay", -1, err, sizeof err);
    if (!f->rtl || !bubble_causes_measure(f->g.tl, f->rtl, f->rep, &f->bc, err, sizeof err))
        fail_msg("%s", err);
}

static void unload(fixture *f) {
    bubble_causes_free(&f->bc);
    viz_timeline_free(f->rtl);
    critical_path_free(&f->p);
    free(f->t);
    step_graph_free(&f->g);
    trace_run_free(f->rep);
    trace_run_free(f->run);
}

static void segments_at_their_times_and_bars_adding_up(void **state) {
    (void)state;
    fixture f;
    load(&f, "analyze_draw_layout");
    an_layout l;
    an_layout_compute(&f.g, &f.p, &f.bc, &l);
    assert_int_equal(l.nseg, f.p.n);
    const double scale = l.plot_w / SYN_STEP;
    for (int i = 0; i < l.nseg; i++) {
        const an_rect *s = &l.seg[i];
        assert_true(fabs(s->x - (l.plot_x + f.p.seg[i].start * scale)) < 1e-9);
        assert_true(fabs(s->w - (f.p.seg[i].end - f.p.seg[i].start) * scale) < 1e-9);
        assert_true(fabs(s->y - (l.path_y + s->rank * (l.row_h + 4))) < 1e-9);
    }
    assert_true(fabs(l.seg[l.nseg - 1].x + l.seg[l.nseg - 1].w - (l.plot_x + l.plot_w)) < 1e-9);
    for (int r = 0; r < 2; r++) { /* right of 0 minus left of 0 = the measured tick */
        double right = 0, left = 0;
        for (int i = 0; i < l.nbar; i++)
            if (l.bar[i].rank == r && l.bar[i].x >= l.zero_x - 1e-9) right += l.bar[i].w;
            else if (l.bar[i].rank == r) left += l.bar[i].w;
        assert_true(fabs(l.zero_x + right - left - l.measured_x[r]) < 1e-9);
    }
    /* rank 0's communication share is negative here (13.4 ms measured against a 13 ms plan
     * with free messages takes 7 ms of bubble as a smaller share): its bar is left of 0 */
    bool left_bar = false;
    for (int i = 0; i < l.nbar; i++)
        left_bar |= l.bar[i].rank == 0 && l.bar[i].kind == 2 && l.bar[i].x < l.zero_x;
    assert_true(left_bar);
    an_layout_free(&l);
    unload(&f);
}

static void pixel(cairo_surface_t *img, double x, double y, int rgb[3]) {
    unsigned char *data = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    uint32_t px = *(uint32_t *)(data + (int)y * stride + 4 * (int)x);
    rgb[0] = (px >> 16) & 255, rgb[1] = (px >> 8) & 255, rgb[2] = px & 255;
}

static void assert_colour_at(cairo_surface_t *img, const an_rect *r) {
    int rgb[3];
    pixel(img, r->x + r->w / 2, r->y + r->h / 2, rgb);
    const int want[3] = {(int)(r->fill.r * 255 + 0.5), (int)(r->fill.g * 255 + 0.5),
                         (int)(r->fill.b * 255 + 0.5)};
    for (int k = 0; k < 3; k++)
        if (abs(rgb[k] - want[k]) > 2)
            fail_msg("rect at %.1f,%.1f: pixel %d,%d,%d, fill %d,%d,%d", r->x, r->y, rgb[0], rgb[1],
                     rgb[2], want[0], want[1], want[2]);
}

static void the_png_has_each_colour_where_the_layout_says(void **state) {
    (void)state;
    fixture f;
    load(&f, "analyze_draw_png");
    char path[4200];
    snprintf(path, sizeof path, "%s/step.png", test_tmpdir("analyze_draw_png_out"));
    an_draw(path, "synthetic — step 1", &f.g, &f.p, &f.bc);
    an_layout l;
    an_layout_compute(&f.g, &f.p, &f.bc, &l);
    cairo_surface_t *img = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(img), (int)(l.width + 0.5));
    assert_int_equal(cairo_image_surface_get_height(img), (int)(l.height + 0.5));
    for (int i = 0; i < l.nseg; i++)
        if (l.seg[i].w > 6) assert_colour_at(img, &l.seg[i]);
    for (int i = 0; i < l.nbar; i++)
        if (l.bar[i].w > 6) assert_colour_at(img, &l.bar[i]);
    cairo_surface_destroy(img);
    an_layout_free(&l);
    unload(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(segments_at_their_times_and_bars_adding_up),
        cmocka_unit_test(the_png_has_each_colour_where_the_layout_says),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
