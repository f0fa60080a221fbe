/* schedule_sim.h — does a pipeline schedule run, and how long does it take? Pure arithmetic.
 *
 * The model of execution is the one the executor implements:
 *   - each rank runs its actions strictly in the order of its plan;
 *   - a send is asynchronous: it is issued when its action ends and never blocks;
 *   - a receive blocks until the matching send (same tag) has been issued, plus an optional
 *     p2p latency.
 * So an action starts at max(end of the previous action on its rank, arrival of the message
 * it receives) and lasts its cost. If no rank can move and some have actions left, the
 * schedule deadlocks: ranks wait on each other in a cycle, or on a message nobody sends.
 *
 *     rank 0 | F0 | F1 | F2 | F3 |    | B0 | F4 | ...       each box: start .. end
 *     rank 1      | F0 | F1 | F2 | B0 | F3 | B1 | ...      gaps are bubbles (idle time)
 *
 * pp_validate() checks the structure (every (micro-batch, virtual stage) has one forward and
 * one backward — or, split, one B and one W after it —, each forward precedes its backward,
 * every receive has exactly one matching
 * send) and then simulates with unit costs to prove that all ranks finish. Its message says
 * which rank and action is stuck or what is missing.
 *
 * pp_simulate() predicts the timeline with given costs: start/end of every action, the
 * makespan, each rank's idle (bubble) fraction, the overall bubble fraction and the peak
 * number of micro-batches whose activations a rank holds (+1 at a forward, −1 at its
 * backward — or its W in a zero-bubble schedule — per (micro-batch, chunk)).
 *
 * Not here: building schedules (schedule.h) or drawing them (viz/schedule_draw.h).
 */
#ifndef TRIDENT_PP_SCHEDULE_SIM_H
#define TRIDENT_PP_SCHEDULE_SIM_H

#include <stdbool.h>
#include <stddef.h>

#include "src/pp/schedule.h"

/* Cost of each action, in any time unit. When a per-stage array is given it wins over the
 * scalar: the executor feeds measured per-virtual-stage times there. */
typedef struct {
    double forward;                   /* cost of one forward of one chunk */
    double backward;                  /* cost of one whole backward of one chunk (B + W) */
    double p2p_latency;               /* from a send's issue to when its receive completes */
    const double *forward_per_stage;  /* (p·v) or NULL */
    const double *backward_per_stage; /* (p·v) or NULL */
    double weight_share;              /* split backward: W costs this share of the whole
                                       * backward, B the rest (0: one half each) */
    const double *weight_per_stage;   /* (p·v) or NULL: split backward, W's cost per stage (B:
                                       * the whole backward's less it); wins over the share */
} pp_costs;

/* forward = backward = 1, no latency, no per-stage arrays. */
pp_costs pp_costs_unit(void);

/* The textbook costs of `trident schedule`: a whole stage's backward takes twice its forward
 * (the input gradient and the weight gradient each cost about one forward). */
enum { PP_BACKWARD_OVER_FORWARD = 2 };

/* Per-chunk costs from per-stage ones: a rank of the interleaved schedule holds v chunks, each
 * 1/v of its layers, so one chunk's forward costs stage_forward / v (backward likewise). With
 * v = 1 the chunk is the stage. Without this, interleaving looks slower than 1F1B (every chunk
 * charged a whole stage) instead of shrinking the bubble. */
pp_costs pp_costs_per_chunk(const pp_config *cfg, double stage_forward, double stage_backward,
                            double p2p_latency);
/* The defaults of `trident schedule`: a stage's forward 1, backward 2, free communication,
 * split over cfg->v chunks. */
pp_costs pp_costs_default(const pp_config *cfg);

typedef struct {
    double start, end;
} pp_span;

typedef struct {
    int n;                /* actions of the rank */
    pp_span *spans;       /* (n): spans[i] is when the rank's action i runs */
    double busy;          /* sum of the action costs */
    double idle_fraction; /* 1 − busy / makespan: the rank's bubble */
    int peak_inflight;    /* most (micro-batch, chunk) activations held at once */
} pp_rank_timeline;

typedef struct {
    int p;
    pp_rank_timeline *ranks; /* (p) */
    double makespan;         /* end of the last action of any rank (all start at 0) */
    double bubble_fraction;  /* total idle / (p · makespan) */
} pp_sim;

/* Simulates `s` with `costs` (NULL = unit). On a deadlock returns false with a message in
 * msg and leaves *out empty (nothing to free); otherwise fills *out (free with pp_sim_free). */
bool pp_simulate(const pp_schedule *s, const pp_costs *costs, pp_sim *out, char *msg, size_t cap);
void pp_sim_free(pp_sim *sim);

/* True when the schedule is well formed and runs to the end; otherwise false and one line in
 * msg saying what is wrong (which rank/action is stuck, which action is missing or twice). */
bool pp_validate(const pp_schedule *s, char *msg, size_t cap);

/* A configuration played: its schedule built (pp_schedule_build), checked (pp_validate) and
 * simulated with `costs` — what a reader of measured costs asks of a schedule it does not keep.
 * False with msg (nothing to free) when it does not run; else *out as pp_simulate fills it. */
bool pp_simulate_config(const pp_config *cfg, const pp_costs *costs, pp_sim *out, char *msg,
                        size_t cap);

#endif /* TRIDENT_PP_SCHEDULE_SIM_H */
