/* ideal_rows.h — the run's own schedule played with the run's own costs (the "ideal"), and
 * that plan as rows a timeline picture draws under the measured ones (`trident render
 * --ideal`).
 *
 * THE IDEAL PLAN of a traced pipeline run: its schedule, p, m and v (what the trace headers
 * say), built and validated (src/pp/schedule.h) and simulated (src/pp/schedule_sim.h) with
 * what this run measured per virtual stage — the mean forward, backward (B, or the whole
 * backward) and W of one chunk, and the mean p2p transfer as the message latency
 * (src/pp/stage_costs.h, in the view passed: the run as recorded, or its replay). Everything
 * the simulator leaves out is not in it: data loading, the optimizer, untraced time, waits the
 * plan does not have, and the costs' spread around their means. `trident analyze
 * --what-if-schedule` (replan.h) starts from the same plan.
 *
 * THE IDEAL ROWS are that plan as a viz_timeline whose rows parallel a measured step's: rank
 * k's row holds the plan of k's pipeline rank (every tensor- and data-parallel rank of one
 * stage shows the same plan), with the same time origin, the step's start:
 *
 *   measured rank 0  |data|F0  |F1   |  B0    |F2 |   B1   |   B2  |optim|
 *   ideal    rank 0       |F0 |F1 |B0  |F2 |B1  |B2  |                        plan at t = 0
 *
 * Boxes: forward, backward (B when split) and W of each (micro-batch, chunk), no messages.
 *
 * Not here: measuring costs (stage_costs.h), simulating (schedule_sim.h), drawing
 * (viz/timeline_draw.h).
 */
#ifndef TRIDENT_ANALYZE_IDEAL_ROWS_H
#define TRIDENT_ANALYZE_IDEAL_ROWS_H

#include <stdbool.h>
#include <stddef.h>

#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"
#include "src/pp/stage_costs.h"
#include "src/trace/trace.h"
#include "viz/timeline.h"

typedef struct {
    stage_costs sc;    /* the run's own costs (sc.cfg: its schedule, p, m, v) */
    pp_costs costs;    /* sc as the simulator takes them (views into sc) */
    pp_schedule sched; /* the schedule of sc.cfg */
    pp_sim sim;        /* sched played with costs: sim.ranks[r].spans[i] is action i of rank r */
} ideal_plan;

/* The ideal plan of `run` (as recorded or replayed), with the costs of step `step` alone (its
 * micro-batches' means: what a picture of that step is compared with), or with -1 the means
 * over the run's steps after the first (stage_costs.h). False and one line in err when the run
 * has no forward or backward, its schedule is not one Trident knows, or the plan does not
 * run (the validator's message). */
bool ideal_plan_simulate(const trace_run *run, int step, ideal_plan *out, char *err, size_t cap);
void ideal_plan_free(ideal_plan *plan);

/* The plan as rows parallel to `measured`'s (its ranks, coordinates and name "ideal"), times
 * from its start; free with viz_timeline_free. NULL and one line in err when the plan's
 * pipeline is not the step's (p differs). */
viz_timeline *ideal_rows_build(const ideal_plan *plan, const viz_timeline *measured, char *err,
                               size_t cap);

#endif /* TRIDENT_ANALYZE_IDEAL_ROWS_H */
