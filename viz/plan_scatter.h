/* plan_scatter.h — how right the planner was: one point per measured layout at (measured,
 * predicted) step time, a colour per rank count, on the line y = x where the prediction is
 * exact and inside a band of ±band around it; the points outside the band carry their names.
 *
 *   predicted ms
 *        |            /  /        band: y = (1 ± band)·x, shaded
 *        |         / ●/ /         the diagonal: y = x
 *        |  tp4 ●/  / /           a point outside the band: labelled
 *        |    /  ●/ /
 *        +----------------- measured ms
 *   legend: ● 2 ranks  ● 4 ranks  y = x  ±10 %
 *
 * Only the series marked `labelled` label their misses; a label goes right of its point, moved
 * down (then up) a line at a time, at most two, until it overlaps no point and no other label,
 * inside the plot; one that finds no room is left out (its point stays). Both axes share one scale (a square plot), from one 1-2-5 axis over every value
 * (viz/axis.h), so distance from the diagonal reads as error. The geometry is computed first
 * (viz_plan_scatter_layout_make, no Cairo: every point's position, which are labelled and
 * where) and painted second, so tests check it as numbers and then the pixels.
 *
 * Not here: measuring or predicting (src/bench/bench_plan.c, src/plan/time_model.h), the
 * plan's own picture (plan_draw.h).
 */
#ifndef TRIDENT_VIZ_PLAN_SCATTER_H
#define TRIDENT_VIZ_PLAN_SCATTER_H

#include <stdbool.h>

#include "viz/axis.h"
#include "viz/canvas.h"

enum { VIZ_SCATTER_MAX_POINTS = 128, VIZ_SCATTER_MAX_SERIES = 8 };

typedef struct {
    const char *label;          /* short name, drawn beside the point when it misses */
    double measured, predicted; /* seconds */
    int series;                 /* which series (colour): 0 .. nseries - 1 */
} viz_scatter_point;

typedef struct {
    const viz_scatter_point *points; /* (n) */
    int n;                           /* 1 .. VIZ_SCATTER_MAX_POINTS */
    const char *const *series;       /* (nseries) names: "2 ranks", "4 ranks" */
    const bool *labelled;            /* (nseries) whether a series labels its misses; NULL all */
    int nseries;                     /* 1 .. VIZ_SCATTER_MAX_SERIES */
    const char *title;
    double band; /* the relative error the band spans, 0.10 for ±10 % */
} viz_plan_scatter;

typedef struct {
    double width, height;
    double plot_x, plot_y, plot_size; /* the square plot: left, top, side (points) */
    viz_axis axis;                    /* milliseconds, both axes */
    double scale;                     /* points per millisecond */
    double x[VIZ_SCATTER_MAX_POINTS], y[VIZ_SCATTER_MAX_POINTS]; /* each point's centre */
    bool miss[VIZ_SCATTER_MAX_POINTS];      /* |predicted − measured| > band·measured */
    bool labelled[VIZ_SCATTER_MAX_POINTS];  /* a label drawn (a miss with room for it) */
    double label_x[VIZ_SCATTER_MAX_POINTS]; /* a labelled point's label: left end */
    double label_y[VIZ_SCATTER_MAX_POINTS]; /* baseline; no two labels overlap */
    double radius;                          /* of a point */
} viz_plan_scatter_layout;

/* The page coordinates of (measured, predicted) seconds in layout l. */
void viz_plan_scatter_at(const viz_plan_scatter_layout *l, double measured, double predicted,
                         double *x, double *y);
void viz_plan_scatter_layout_make(const viz_plan_scatter *s, viz_plan_scatter_layout *out);
/* Draws s into path (.png, .svg, .pdf), atomically. */
void viz_plan_scatter_draw(const char *path, const viz_plan_scatter *s);

#endif /* TRIDENT_VIZ_PLAN_SCATTER_H */
