/* schedule_draw.h — the predicted timeline of a pipeline schedule, drawn the way a teacher
 * draws it on the board.
 *
 *   1f1b  p = 4  m = 8 — bubble 27.3% of the time (textbook (p−1)/(m+p−1) = 27.3%)
 *   rank 0 [0][1][2][3]      [0][4]   [1][5]  ...      idle 27.3%   peak 4 in flight
 *          ~~warmup~~~|~~~~~~~~~steady~~~~~~~~|~~cooldown~~
 *   rank 1    [0][1][2]   [0][3][1][4] ...         idle 27.3%   peak 3 in flight
 *   ...
 *          0    5    10   15  ...  time
 *   [F] forward  [B] backward  [/] chunk 1  [ ] idle  warmup  steady  cooldown
 *
 * One row per pipeline rank (rank 0 on top), boxes placed by the simulated start/end times
 * (schedule_sim.h): forward blue, backward green, the micro-batch number inside; chunks
 * >= 1 are lighter and hatched so they read without colour; idle gaps are grey; a thin strip
 * under each row marks its warmup / steady / cooldown phases; each rank's idle % and peak
 * in-flight micro-batches on the right; legend and time axis at the bottom.
 *
 * The geometry is computed first, without Cairo (viz_schedule_layout_compute), so tests can
 * check box positions, colours and labels; viz_schedule_draw() only paints that layout.
 * Same input -> identical PNG bytes.
 *
 * Not here: real measured timelines (the trace renderer) or the simulation itself.
 */
#ifndef TRIDENT_VIZ_SCHEDULE_DRAW_H
#define TRIDENT_VIZ_SCHEDULE_DRAW_H

#include <stdbool.h>

#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"
#include "viz/canvas.h"

/* One rectangle of the picture, in points (y grows downwards). */
typedef struct {
    double x, y, w, h;
    int rank;   /* pipeline rank (row) */
    int action; /* index in the rank's plan; -1 for idle gaps and phase strips */
    viz_rgb fill;
    bool hatched; /* chunk >= 1: diagonal hatching over the fill */
    double hatch_gap;
    pp_phase phase; /* phase strips only */
    char label[24]; /* drawn inside: micro-batch number ("3"); "" when too narrow */
} viz_sched_rect;

typedef struct {
    double width, height;     /* the canvas */
    double plot_x, plot_w;    /* time 0 is at plot_x; makespan at plot_x + plot_w */
    double px_per_unit;       /* points per unit of simulated time */
    double row_y0, row_pitch; /* row r's boxes start at row_y0 + r·row_pitch */
    double box_h, strip_h;    /* heights of action boxes and phase strips */
    double axis_y;            /* baseline of the time axis */
    double tick_step;         /* time between axis ticks */
    int nbox, ngap, nstrip;
    viz_sched_rect *boxes;  /* (nbox): one per action, rank-major, in plan order */
    viz_sched_rect *gaps;   /* (ngap): idle spans between 0 and the makespan */
    viz_sched_rect *strips; /* (nstrip): one per non-empty phase per rank */
    char title[200];        /* configuration and measured vs textbook bubble */
    char (*right)[64];      /* (p): "idle 27.3%   peak 4 in flight" per rank */
} viz_schedule_layout;

/* Geometry of the picture of schedule `s` timed by `sim` (from pp_simulate on s). */
void viz_schedule_layout_compute(const pp_schedule *s, const pp_sim *sim, viz_schedule_layout *out);
void viz_schedule_layout_free(viz_schedule_layout *l);

/* Draws the picture into `path` (.png, .svg or .pdf, written atomically). */
void viz_schedule_draw(const pp_schedule *s, const pp_sim *sim, const char *path);

/* A stack for a slide (`trident schedule --compare`): n schedules, each timed by its sim,
 * one panel under the other on ONE time scale (the longest makespan sets it), so equal times
 * line up and a shorter schedule ends visibly earlier; the legend only under the last.
 * viz_schedule_stack_compute gives each panel's layout (free each), its top in panel_y and
 * the canvas size; viz_schedule_draw_stack paints them into `path`. */
void viz_schedule_stack_compute(const pp_schedule *s, const pp_sim *sim, int n,
                                viz_schedule_layout *out, double *panel_y, double *width,
                                double *height);
void viz_schedule_draw_stack(const pp_schedule *s, const pp_sim *sim, int n, const char *path);

#endif /* TRIDENT_VIZ_SCHEDULE_DRAW_H */
