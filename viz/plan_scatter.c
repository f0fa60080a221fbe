/* plan_scatter.c — see plan_scatter.h: the geometry (axis, points, labels), then the paint. */
#include "viz/plan_scatter.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/core/check.h"

enum { TITLE_H = 44, LEFT_W = 70, BOTTOM_H = 46, LEGEND_H = 34, RIGHT_W = 190 };
#define PLOT_SIZE 520.0
#define LABEL_SIZE 9.0
enum { MAX_SHIFT = 2 }; /* lines a label may move from its point */

void viz_plan_scatter_at(const viz_plan_scatter_layout *l, double measured, double predicted,
                         double *x, double *y) {
    *x = l->plot_x + (measured * 1e3 - l->axis.lo) * l->scale;
    *y = l->plot_y + l->plot_size - (predicted * 1e3 - l->axis.lo) * l->scale;
}

/* Whether two labels' boxes (left, baseline, width; one line of LABEL_SIZE) overlap. */
static bool overlaps(double x0, double y0, double w0, double x1, double y1, double w1) {
    const double h = viz_line_pitch(LABEL_SIZE);
    return x0 < x1 + w1 && x1 < x0 + w0 && y0 - h < y1 && y1 - h < y0;
}

/* Whether label i, at its place, lies in the plot and overlaps no point and no label placed
 * before it. */
static bool room(const viz_plan_scatter_layout *l, const double *w, int i, int n) {
    const double h = viz_line_pitch(LABEL_SIZE), r = l->radius;
    if (l->label_y[i] - h < l->plot_y || l->label_y[i] > l->plot_y + l->plot_size ||
        l->label_x[i] + w[i] > l->plot_x + l->plot_size + RIGHT_W - 4)
        return false;
    for (int j = 0; j < n; j++)
        if (overlaps(l->label_x[i], l->label_y[i], w[i], l->x[j] - r, l->y[j] + r, 2 * r))
            return false;
    for (int j = 0; j < i; j++)
        if (l->labelled[j] &&
            overlaps(l->label_x[i], l->label_y[i], w[i], l->label_x[j], l->label_y[j], w[j]))
            return false;
    return true;
}

/* Each missing point of a labelled series gets its label right of it, moved down, then up, a
 * line at a time until it has room; none when no place within MAX_SHIFT lines has (a label
 * further away would name the wrong point). */
static void place_labels(const viz_plan_scatter *s, viz_plan_scatter_layout *l) {
    double w[VIZ_SCATTER_MAX_POINTS];
    const double pitch = viz_line_pitch(LABEL_SIZE);
    for (int i = 0; i < s->n; i++) {
        if (!l->miss[i] || (s->labelled && !s->labelled[s->points[i].series])) continue;
        w[i] = viz_measure(LABEL_SIZE, false, s->points[i].label);
        l->label_x[i] = l->x[i] + l->radius + 3;
        const double y0 = l->y[i] + LABEL_SIZE / 3;
        for (int k = 0; k <= 2 * MAX_SHIFT && !l->labelled[i]; k++) {
            l->label_y[i] = y0 + (k % 2 ? -1 : 1) * ((k + 1) / 2) * pitch;
            l->labelled[i] = room(l, w, i, s->n);
        }
    }
}

void viz_plan_scatter_layout_make(const viz_plan_scatter *s, viz_plan_scatter_layout *out) {
    CHECK(s->n >= 1 && s->n <= VIZ_SCATTER_MAX_POINTS, "viz_plan_scatter: 1 to 128 points");
    CHECK(s->nseries >= 1 && s->nseries <= VIZ_SCATTER_MAX_SERIES, "viz_plan_scatter: series");
    memset(out, 0, sizeof *out);
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < s->n; i++) {
        const viz_scatter_point *p = &s->points[i];
        CHECK(p->series >= 0 && p->series < s->nseries, "viz_plan_scatter: a point's series");
        lo = fmin(lo, fmin(p->measured, p->predicted) * 1e3);
        hi = fmax(hi, fmax(p->measured, p->predicted) * 1e3);
    }
    if (!viz_axis_of(fmax(0, lo * 0.9), hi * 1.05, 6, &out->axis))
        viz_axis_of(0, 1, 5, &out->axis); /* values no axis can span: an empty plot */
    out->plot_x = LEFT_W;
    out->plot_y = TITLE_H;
    out->plot_size = PLOT_SIZE;
    out->width = LEFT_W + PLOT_SIZE + RIGHT_W;
    out->height = TITLE_H + PLOT_SIZE + BOTTOM_H + LEGEND_H;
    out->scale = PLOT_SIZE / (out->axis.hi - out->axis.lo);
    out->radius = 4.5;
    for (int i = 0; i < s->n; i++) {
        const viz_scatter_point *p = &s->points[i];
        viz_plan_scatter_at(out, p->measured, p->predicted, &out->x[i], &out->y[i]);
        out->miss[i] = fabs(p->predicted - p->measured) > s->band * p->measured;
    }
    place_labels(s, out);
}

/* The shaded band (1 ± band)·x and the diagonal, clipped to the plot. */
static void band_and_diagonal(cairo_t *cr, const viz_plan_scatter_layout *l, double band) {
    const double lo = l->axis.lo / 1e3, hi = l->axis.hi / 1e3;
    double x, y;
    cairo_save(cr);
    cairo_rectangle(cr, l->plot_x, l->plot_y, l->plot_size, l->plot_size);
    cairo_clip(cr);
    viz_plan_scatter_at(l, lo, lo * (1 - band), &x, &y);
    cairo_move_to(cr, x, y);
    viz_plan_scatter_at(l, hi, hi * (1 - band), &x, &y);
    cairo_line_to(cr, x, y);
    viz_plan_scatter_at(l, hi, hi * (1 + band), &x, &y);
    cairo_line_to(cr, x, y);
    viz_plan_scatter_at(l, lo, lo * (1 + band), &x, &y);
    cairo_line_to(cr, x, y);
    cairo_close_path(cr);
    viz_set_rgb(cr, viz_shade(VIZ_GRID, 0.5));
    cairo_fill(cr);
    viz_plan_scatter_at(l, lo, lo, &x, &y);
    cairo_move_to(cr, x, y);
    viz_plan_scatter_at(l, hi, hi, &x, &y);
    cairo_line_to(cr, x, y);
    viz_set_rgb(cr, VIZ_TEXT);
    viz_line_width(cr, 1);
    cairo_stroke(cr);
    cairo_restore(cr);
}

/* The frame, the ticks of both axes (same milliseconds) and their names. */
static void axes(cairo_t *cr, const viz_plan_scatter_layout *l) {
    const double x0 = l->plot_x, y1 = l->plot_y + l->plot_size;
    viz_set_rgb(cr, VIZ_TEXT);
    viz_line_width(cr, 1);
    cairo_rectangle(cr, x0, l->plot_y, l->plot_size, l->plot_size);
    cairo_stroke(cr);
    char a[32];
    for (int k = 0; k <= l->axis.intervals; k++) {
        const double ms = l->axis.lo + k * l->axis.step, d = (ms - l->axis.lo) * l->scale;
        snprintf(a, sizeof a, "%g", ms);
        viz_text(cr, x0 + d, y1 + 14, 9, false, VIZ_CENTER, VIZ_TEXT, a);
        viz_text(cr, x0 - 6, y1 - d + 3, 9, false, VIZ_RIGHT, VIZ_TEXT, a);
        cairo_move_to(cr, x0 + d, y1);
        cairo_line_to(cr, x0 + d, y1 + 4);
        cairo_move_to(cr, x0, y1 - d);
        cairo_line_to(cr, x0 - 4, y1 - d);
        cairo_stroke(cr);
    }
    viz_text(cr, x0 + l->plot_size / 2, y1 + 32, 10, false, VIZ_CENTER, VIZ_TEXT,
             "measured step (ms)");
    cairo_save(cr);
    cairo_translate(cr, 16, l->plot_y + l->plot_size / 2);
    cairo_rotate(cr, -M_PI / 2);
    viz_text(cr, 0, 0, 10, false, VIZ_CENTER, VIZ_TEXT, "predicted step (ms)");
    cairo_restore(cr);
}

void viz_plan_scatter_draw(const char *path, const viz_plan_scatter *s) {
    viz_plan_scatter_layout l;
    viz_plan_scatter_layout_make(s, &l);
    viz_canvas cv;
    viz_canvas_open(&cv, path, l.width, l.height);
    cairo_t *cr = cv.cr;
    viz_text(cr, l.plot_x, 26, 14, true, VIZ_LEFT, VIZ_TEXT, s->title);
    band_and_diagonal(cr, &l, s->band);
    axes(cr, &l);
    for (int i = 0; i < s->n; i++) {
        cairo_new_path(cr); /* text leaves a current point: no line from it to the circle */
        cairo_arc(cr, l.x[i], l.y[i], l.radius, 0, 2 * M_PI);
        viz_set_rgb(cr, viz_categorical(s->points[i].series));
        cairo_fill_preserve(cr);
        viz_set_rgb(cr, VIZ_TEXT);
        viz_line_width(cr, 0.6);
        cairo_stroke(cr);
        if (l.labelled[i])
            viz_text(cr, l.label_x[i], l.label_y[i], LABEL_SIZE, false, VIZ_LEFT, VIZ_TEXT,
                     s->points[i].label);
    }
    viz_rgb colours[VIZ_SCATTER_MAX_SERIES + 1];
    const char *labels[VIZ_SCATTER_MAX_SERIES + 1];
    for (int k = 0; k < s->nseries; k++) colours[k] = viz_categorical(k), labels[k] = s->series[k];
    char band[64];
    snprintf(band, sizeof band, "y = x ± %.0f %%", 100 * s->band);
    colours[s->nseries] = viz_shade(VIZ_GRID, 0.5), labels[s->nseries] = band;
    viz_legend(cr, l.plot_x, l.height - 14, 10, s->nseries + 1, colours, labels);
    viz_canvas_close(&cv);
}
