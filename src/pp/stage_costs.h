/* stage_costs.h — what a run's pipeline actions cost, measured in its traces: the mean forward,
 * backward and (split backward) weight-gradient time of each virtual stage, and of one p2p
 * transfer. The simulator (schedule_sim.h) takes them as pp_costs, so a schedule can be timed
 * with the run's own costs instead of the textbook's F = B = W: `trident schedule --costs-from`
 * and the pipeline bench's "own-cost ideal" both ask this module.
 *
 * Which clock is the caller's: pass the run as recorded (wall clock: right when every rank
 * had its own core) or its replay (src/trace/replay.h: each event lasts the CPU time it got;
 * right when ranks time-shared cores). The first step is skipped when there are later ones:
 * it pays for warm-up. A virtual stage is pp_stage(schedule, pp_rank, chunk), so the V of
 * zbv and dualpipev and the round robin of interleaved are each measured where they ran.
 *
 *     stage_costs sc;
 *     if (!stage_costs_measure(run, &sc, err, sizeof err)) die("%s", err);
 *     pp_costs c = stage_costs_as_pp_costs(&sc);          // views into sc
 *     pp_simulate(&schedule, &c, &sim, msg, sizeof msg);
 *     stage_costs_free(&sc);
 *
 * Not here: reading the traces (src/trace), simulating (schedule_sim.h).
 */
#ifndef TRIDENT_PP_STAGE_COSTS_H
#define TRIDENT_PP_STAGE_COSTS_H

#include <stdbool.h>
#include <stddef.h>

#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"
#include "src/trace/trace.h"

typedef struct {
    pp_config cfg;         /* the run's schedule, p, m (per data-parallel rank) and v */
    int S;                 /* virtual stages, p·v */
    double *forward;       /* (S) mean forward of one chunk, seconds */
    double *whole;         /* (S) mean whole backward (B + W when split), seconds */
    double *weight;        /* (S) mean W (0 when the backward is not split) */
    double *weight_inside; /* (S) mean W inside a whole backward, from the share the trace
                            * records of it (trace_set_weight_share); 0 where not recorded */
    double forward_mean, whole_mean, weight_mean; /* over every stage's actions */
    double latency; /* mean transfer of one matched receive (t_ready -> t_end) */
    int nforward, nbackward, nweight, ntransfer;
    int ninside;   /* whole backwards whose W share the trace recorded */
    int from_step; /* the first step counted */
    int to_step;   /* the last step counted; -1: every step from from_step on */
    bool cpu;      /* every forward/backward had thread CPU time recorded */
} stage_costs;

/* Measures run (as recorded or replayed); false with one line in err when it holds no forward
 * or backward of a step, or its schedule is not one Trident knows. */
bool stage_costs_measure(const trace_run *run, stage_costs *out, char *err, size_t cap);
/* The same, counting only step `step` (its own micro-batches' means: what a picture of that
 * step is compared with); step < 0 is stage_costs_measure. */
bool stage_costs_measure_step(const trace_run *run, int step, stage_costs *out, char *err,
                              size_t cap);
/* Whether every forward and backward of a run as recorded carries its thread CPU time (its
 * replay's durations are then CPU time, else wall time). */
bool stage_costs_cpu_timed(const trace_run *recorded);
/* The per-stage costs as the simulator takes them (pointers into sc; keep sc alive). */
pp_costs stage_costs_as_pp_costs(const stage_costs *sc);
void stage_costs_free(stage_costs *sc);

#endif /* TRIDENT_PP_STAGE_COSTS_H */
