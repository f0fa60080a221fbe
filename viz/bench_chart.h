/* bench_chart.h — the picture of a `trident bench` run: one bar per measured ratio, showing
 * how it stands to its target.
 *
 * The ratios have different units and different directions (some must be at least a bound,
 * some at most, some within a band), so each bar shows a *score*: 1 is exactly on the target,
 * above 1 meets it, below 1 misses it (src/bench/bench.h computes it). One vertical line
 * marks score 1; passing bars are green and end right of it, missing ones red and end left
 * of it (at least a stub, however far); rows without a target (information) show only their
 * value.
 *
 *   suite: metric ................ |██████████████|████        value   target
 *                                  0              1 (target)   2.5
 *
 * Layout first (viz_bench_chart_layout: where every bar goes, testable without drawing),
 * then Cairo (viz_bench_chart_draw, by file extension .png/.svg/.pdf, written atomically).
 *
 * Not here: measuring, the report's table (src/bench/).
 */
#ifndef TRIDENT_VIZ_BENCH_CHART_H
#define TRIDENT_VIZ_BENCH_CHART_H

#include <stdbool.h>

typedef struct {
    const char *label;  /* "serial: model FLOP/s ÷ sgemm FLOP/s" */
    const char *value;  /* the value as printed in the table */
    const char *target; /* the target as printed, "—" for none */
    double score;       /* >= 1: target met; < 1: missed; NAN: information only (no bar) */
} viz_bench_bar;

/* Scores are drawn on [0, VIZ_BENCH_MAX_SCORE]; larger ones are clipped (and marked). */
#define VIZ_BENCH_MAX_SCORE 2.5

typedef struct {
    double x, y, w, h;
} viz_bench_rect;

typedef struct {
    double width, height;                   /* of the page */
    double axis_x0, axis_x1;                /* x of score 0 and of VIZ_BENCH_MAX_SCORE */
    double target_x;                        /* x of score 1 */
    double label_x, value_x, target_text_x; /* left edges of the text columns */
    int n;
    viz_bench_rect *bars; /* (n) the bar of row i; w = 0 for information rows */
    double *baseline;     /* (n) text baseline of row i */
    bool *clipped;        /* (n) the score was larger than the axis */
} viz_bench_layout;

/* Where everything goes for n rows. Free with viz_bench_layout_free. */
void viz_bench_chart_layout(const viz_bench_bar *bars, int n, viz_bench_layout *out);
void viz_bench_layout_free(viz_bench_layout *l);

/* Draws the chart to path (.png, .svg or .pdf); dies naming the path on a bad extension. */
void viz_bench_chart_draw(const viz_bench_bar *bars, int n, const char *title, const char *path);

#endif /* TRIDENT_VIZ_BENCH_CHART_H */
