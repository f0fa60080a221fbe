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
 * in-flight micro-batches on the right; legend and time axis at the bottom. Under each row
 * the activations the rank holds over time (viz/schedule_memory.h), peak labelled, on one
 * scale for the whole picture (so GPipe's m stands taller than 1F1B's p). On request
 * (viz_schedule_options) dependency arrows join each send to its receive: a forward's output
 * to the next stage's forward, a backward's gradient to the previous stage's backward, and
 * in V schedules the turn-around on the last rank (an arc above its own row).
 *
 * A build (viz/build.h) draws the same layout cut at a time `until`: boxes that started
 * before it drawn up to it, later ones absent, the curve and arrows likewise.
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
#include "viz/schedule_memory.h"

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

/* A dependency: from the sending action's box to the receiving one's (page points). */
typedef struct {
    double x1, y1, x2, y2;
    bool same_row; /* a V's turn-around: drawn as an arc above the row */
    int from_rank, from_action, to_rank, to_action;
} viz_sched_arrow;

/* What to draw beside the boxes; all zero = the default picture. */
typedef struct {
    double until;      /* a build's cut: only what happens before it (<= 0: everything) */
    bool no_memory;    /* hide the activations curve */
    bool arrows;       /* dependency arrows */
    const char *title; /* replaces the generated title (one line; NULL: generated) */
    int build;         /* viz_schedule_draw_opt: K pages cut in time (0: one picture) */
} viz_schedule_options;

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
    double until;           /* the time drawn up to: the makespan, or a build's cut */
    /* activations held: row r's band has its 0 at row_y0 + r·row_pitch + mem_base; a set is
     * px_per_set high (a chunk set 1/v of a micro-batch's); mem_max micro-batches reach the
     * band's top (the most any rank of the picture holds, in every panel of a stack).
     * mem_base = 0 and mem NULL when hidden. */
    double mem_base, px_per_set, mem_max;
    int nmem;
    viz_sched_mem_curve *mem; /* (nmem = p) */
    int narrow;
    viz_sched_arrow *arrows; /* (narrow): one per receive, when asked for */
} viz_schedule_layout;

/* Geometry of the picture of schedule `s` timed by `sim` (from pp_simulate on s); _opt with
 * the options (NULL: the default picture). */
void viz_schedule_layout_compute(const pp_schedule *s, const pp_sim *sim, viz_schedule_layout *out);
void viz_schedule_layout_compute_opt(const pp_schedule *s, const pp_sim *sim,
                                     const viz_schedule_options *opt, viz_schedule_layout *out);
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

/* The same with options: one schedule (n = 1) or a stack; with opt->build = K a build of K
 * pages (viz/build.h: one PDF, or numbered PNG/SVG frames). With a title and n > 1 the title
 * heads the stack (each panel keeps its own line). opt->until is set per page by the build. */
void viz_schedule_stack_compute_opt(const pp_schedule *s, const pp_sim *sim, int n,
                                    const viz_schedule_options *opt, viz_schedule_layout *out,
                                    double *panel_y, double *width, double *height);
void viz_schedule_draw_opt(const pp_schedule *s, const pp_sim *sim, int n,
                           const viz_schedule_options *opt, const char *path);

#endif /* TRIDENT_VIZ_SCHEDULE_DRAW_H */
