/* bench_chart.c — see bench_chart.h. Layout numbers first, then Cairo paints them. */
#include "viz/bench_chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "src/core/check.h"
#include "viz/canvas.h"

/* Page geometry (points). */
enum {
    MIN_BAR = 4,
    PAGE_W = 1500,
    TOP = 70,
    ROW_H = 22,
    BOTTOM = 46,
    LABEL_X = 16,
    AXIS_X0 = 800,
    AXIS_X1 = 1220
};

static const viz_rgb k_pass = {0.30, 0.66, 0.36};
static const viz_rgb k_miss = {0.86, 0.30, 0.26};

void viz_bench_chart_layout(const viz_bench_bar *bars, int n, viz_bench_layout *out) {
    CHECK(n >= 0, "a chart has a non-negative number of rows");
    out->width = PAGE_W;
    out->height = TOP + (double)n * ROW_H + BOTTOM;
    out->axis_x0 = AXIS_X0;
    out->axis_x1 = AXIS_X1;
    out->target_x = AXIS_X0 + (AXIS_X1 - AXIS_X0) / VIZ_BENCH_MAX_SCORE;
    out->label_x = LABEL_X;
    out->value_x = AXIS_X1 + 14;
    out->target_text_x = AXIS_X1 + 130;
    out->n = n;
    out->bars = callocCheck((size_t)n + 1, sizeof *out->bars);
    out->baseline = callocCheck((size_t)n + 1, sizeof *out->baseline);
    out->clipped = callocCheck((size_t)n + 1, sizeof *out->clipped);
    for (int i = 0; i < n; i++) {
        double y = TOP + (double)i * ROW_H;
        out->baseline[i] = y + ROW_H * 0.68;
        out->bars[i] = (viz_bench_rect){AXIS_X0, y + 4, 0, ROW_H - 8};
        double s = bars[i].score;
        if (isnan(s)) continue;
        if (s < 0) s = 0;
        if (s > VIZ_BENCH_MAX_SCORE) {
            s = VIZ_BENCH_MAX_SCORE;
            out->clipped[i] = true;
        }
        out->bars[i].w = (AXIS_X1 - AXIS_X0) * s / VIZ_BENCH_MAX_SCORE;
        if (out->bars[i].w < MIN_BAR) out->bars[i].w = MIN_BAR; /* a far miss still shows red */
    }
}

void viz_bench_layout_free(viz_bench_layout *l) {
    free(l->bars);
    free(l->baseline);
    free(l->clipped);
    l->bars = NULL;
    l->baseline = NULL;
    l->clipped = NULL;
}

void viz_bench_chart_draw(const viz_bench_bar *bars, int n, const char *title, const char *path) {
    viz_bench_layout l;
    viz_bench_chart_layout(bars, n, &l);
    viz_canvas c;
    viz_canvas_open(&c, path, l.width, l.height);
    cairo_t *cr = c.cr;
    viz_text(cr, LABEL_X, 26, 15, true, VIZ_LEFT, VIZ_TEXT, title);
    viz_text(cr, LABEL_X, 48, 10, false, VIZ_LEFT, VIZ_TEXT,
             "each bar: how a measured ratio stands to its target — right of the line the target "
             "is met");
    viz_text(cr, l.value_x, TOP - 8, 10, true, VIZ_LEFT, VIZ_TEXT, "value");
    viz_text(cr, l.target_text_x, TOP - 8, 10, true, VIZ_LEFT, VIZ_TEXT, "target");
    for (int i = 0; i < n; i++) {
        if (i % 2 == 0) {
            viz_set_rgb(cr, (viz_rgb){0.97, 0.97, 0.98});
            cairo_rectangle(cr, 0, TOP + (double)i * ROW_H, l.width, ROW_H);
            cairo_fill(cr);
        }
        viz_text(cr, l.label_x, l.baseline[i], 10, false, VIZ_LEFT, VIZ_TEXT, bars[i].label);
        const viz_bench_rect *b = &l.bars[i];
        if (b->w > 0) viz_box(cr, b->x, b->y, b->w, b->h, bars[i].score >= 1.0 ? k_pass : k_miss);
        if (l.clipped[i])
            viz_text(cr, b->x + b->w - 4, l.baseline[i], 10, true, VIZ_RIGHT, VIZ_TEXT, "»");
        viz_text(cr, l.value_x, l.baseline[i], 10, true, VIZ_LEFT, VIZ_TEXT, bars[i].value);
        viz_text(cr, l.target_text_x, l.baseline[i], 10, false, VIZ_LEFT, VIZ_TEXT, bars[i].target);
    }
    /* The target line and the axis. */
    double y0 = TOP - 4, y1 = TOP + (double)n * ROW_H + 4;
    viz_set_rgb(cr, VIZ_TEXT);
    viz_line_width(cr, 1.5);
    cairo_move_to(cr, l.target_x, y0);
    cairo_line_to(cr, l.target_x, y1);
    cairo_stroke(cr);
    viz_set_rgb(cr, VIZ_GRID);
    viz_line_width(cr, 1.0);
    cairo_move_to(cr, l.axis_x0, y1);
    cairo_line_to(cr, l.axis_x1, y1);
    cairo_stroke(cr);
    viz_text(cr, l.axis_x0, y1 + 16, 10, false, VIZ_CENTER, VIZ_TEXT, "0");
    viz_text(cr, l.target_x, y1 + 16, 10, true, VIZ_CENTER, VIZ_TEXT, "1 = target");
    char s[16];
    snprintf(s, sizeof s, "%.1f", VIZ_BENCH_MAX_SCORE);
    viz_text(cr, l.axis_x1, y1 + 16, 10, false, VIZ_CENTER, VIZ_TEXT, s);
    viz_text(cr, l.axis_x0, y1 + 32, 9, false, VIZ_LEFT, VIZ_TEXT,
             "score: value ÷ minimum, maximum ÷ value, or 2 − |value − wanted| ÷ tolerance");
    viz_canvas_close(&c);
    viz_bench_layout_free(&l);
}
