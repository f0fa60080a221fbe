/* plan_draw.h — the picture of a plan (`trident plan -o plan.png`): one row per layout, fastest
 * first; its predicted step as a stacked bar and its peak memory as a bar beside it.
 *
 *   title
 *   layout flags        | compute | comm | bubble |opt|          | memory |
 *   --tp 2 --pp 2 ...   |█████████████▒▒▒▒░░░░░|                 |██████   |
 *   ...                 0          step ms                       0   MB (limit: a red line)
 *   legend
 *
 * The geometry is computed first (viz_plan_layout_make, no Cairo) and painted second, so tests
 * check the boxes as numbers: a segment's width is its milliseconds times the scale, the four
 * segments of a row end at its step, the longest step fills the time column.
 *
 * Not here: the prediction (src/plan/time_model.h) or the memory (src/train/memory_predict.h);
 * this module draws numbers.
 */
#ifndef TRIDENT_VIZ_PLAN_DRAW_H
#define TRIDENT_VIZ_PLAN_DRAW_H

#include "viz/canvas.h"

enum { VIZ_PLAN_MAX_ROWS = 64, VIZ_PLAN_PARTS = 4 };

/* One layout: its flags and its predicted seconds by part, and its peak bytes. */
typedef struct {
    const char *label;
    double part[VIZ_PLAN_PARTS]; /* compute, exposed communication, bubble, optimizer (s) */
    double memory;               /* bytes, the largest rank */
} viz_plan_row;

typedef struct {
    const viz_plan_row *rows; /* (n), fastest first */
    int n;                    /* at most VIZ_PLAN_MAX_ROWS */
    const char *title;
    double memory_limit; /* bytes; 0 = none */
} viz_plan_chart;

typedef struct {
    double width, height;
    double label_x, time_x, time_w, mem_x, mem_w; /* columns */
    double ms_scale, mb_scale;                    /* points per ms, per MB */
    double row_y[VIZ_PLAN_MAX_ROWS], row_h;       /* top of each bar, its height */
    double seg_x[VIZ_PLAN_MAX_ROWS][VIZ_PLAN_PARTS], seg_w[VIZ_PLAN_MAX_ROWS][VIZ_PLAN_PARTS];
    double mem_bar_w[VIZ_PLAN_MAX_ROWS];
    double limit_x; /* the memory limit's line, or -1 */
} viz_plan_layout;

/* "compute", "exposed communication", "bubble", "optimizer". */
const char *viz_plan_part_name(int k);
void viz_plan_layout_make(const viz_plan_chart *ch, viz_plan_layout *out);
/* Draws ch into path (.png, .svg, .pdf), atomically. */
void viz_plan_draw(const char *path, const viz_plan_chart *ch);

#endif /* TRIDENT_VIZ_PLAN_DRAW_H */
