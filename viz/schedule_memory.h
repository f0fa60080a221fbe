/* schedule_memory.h — the activations a rank holds over a simulated schedule's time, as a step
 * curve under the rank's row of the schedule picture (viz/schedule_draw.h).
 *
 *   rank 0 [F0][F1][F2][F3]      [B0][F4][B1] ...
 *   held        ___|‾‾|‾‾‾‾‾‾‾‾‾‾‾‾|__|‾‾|__       peak 4     1F1B: at most p on rank 0
 *           _|‾‾                                             GPipe: m; ZB-H1: like 1F1B
 *
 * The count is the plan's own (src/pp/schedule.h, pp_plan_holds_of: sets_after), the number
 * the memory prediction multiplies by the bytes of one set: +1 activation set at a forward,
 * −1 at its whole backward (or, split, at its W), per (micro-batch, chunk) — micro-batches
 * for v = 1, chunk sets (each 1/v of a micro-batch's activations) for v > 1. On the time axis
 * a set is counted from its forward's start to its release's end.
 *
 * Not here: bytes (src/train/memory_predict.h), the rest of the picture.
 */
#ifndef TRIDENT_VIZ_SCHEDULE_MEMORY_H
#define TRIDENT_VIZ_SCHEDULE_MEMORY_H

#include <cairo.h>

#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"

typedef struct {
    double t; /* from this time on ... */
    int sets; /* ... the rank holds this many activation sets */
} viz_sched_mem_step;

typedef struct {
    int n;
    viz_sched_mem_step *steps; /* (n) in time order; steps[0] = {0, 0} */
    double t_end;              /* the curve ends here: the makespan or the cut before it */
    int peak;                  /* the most held up to t_end (the whole plan: holds.sets) */
    int v;                     /* chunks per rank: a set is 1/v of a micro-batch's */
    double peak_t;             /* when the peak is first reached */
} viz_sched_mem_curve;

/* The curve of one rank's plan timed by its simulated timeline, up to `until` (a build's
 * cut; >= the makespan or <= 0: the whole curve, ending at the makespan). */
void viz_sched_mem_compute(const pp_rank_plan *plan, int v, const pp_rank_timeline *tl,
                           double makespan, double until, viz_sched_mem_curve *out);
void viz_sched_mem_free(viz_sched_mem_curve *c);

/* Paints the curve filled down to `base` (page y of 0 sets): page x = x0 + t·ppu, page y =
 * base − sets·px_per_set, and the label "peak N" next to its peak (in micro-batches: "peak 4
 * (8 chunk sets)" for v = 2). */
void viz_sched_mem_paint(cairo_t *cr, const viz_sched_mem_curve *c, double x0, double ppu,
                         double base, double px_per_set);

#endif /* TRIDENT_VIZ_SCHEDULE_MEMORY_H */
