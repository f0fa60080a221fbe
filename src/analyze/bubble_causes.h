/* bubble_causes.h — the measured bubble of every rank, split into four causes that add up to
 * it exactly.
 *
 * THE MEASURED BUBBLE of rank r (viz/timeline.h, "THE BUBBLE"): the time r spends waiting or
 * idle inside the pipeline's span (first forward start to last backward end, all ranks), as a
 * share of the span: measured_r = (wait_r + idle_r) / span. Its mean over ranks is what
 * `trident render` prints as the measured bubble.
 *
 * THE CAUSES, each a share of the span (signed: a cause can give back what another took):
 *
 *   schedule       the idle share of r's pipeline rank in the ideal schedule: this run's own
 *                  schedule, p, m and v, simulated (src/pp/schedule_sim.h, pp_simulate) with
 *                  every stage costing the run's MEAN forward, backward and W of one chunk, and
 *                  free messages — the textbook bubble at this run's F : B : W;
 *   imbalance      the same simulation with each virtual stage's OWN mean costs
 *                  (src/pp/stage_costs.h), minus schedule: what unequal stages add (the last
 *                  stage's head and loss, the first stage's embedding);
 *   communication  what the replay view measures beyond that simulation: replay_r − schedule
 *                  − imbalance. The replay (src/trace/replay.h) keeps the run's real order,
 *                  transfers and waits for peers, but gives every rank its own core, so what
 *                  it adds to the simulated plan is messages and waiting for them;
 *   sharing        wall-clock view only: measured_r − replay_r, the bubble that came from
 *                  ranks being descheduled (wall time beyond CPU time on a shared core, and the
 *                  peers it delayed); 0 in the replay view, where measured_r is replay_r.
 *
 * So schedule + imbalance + communication + sharing = measured_r by construction (floating
 * point rounding apart: well within 1e-9 of the step). The costs are always measured in the
 * replay view (CPU time where the trace has it: what the work costs without sharing), over
 * the micro-batches of the step explained (stage_costs_measure_step): the same costs `trident
 * render --ideal` draws under that step.
 *
 * Not here: the graph (step_graph.h), the replay itself, printing (src/cli/analyze_cmd.c).
 */
#ifndef TRIDENT_ANALYZE_BUBBLE_CAUSES_H
#define TRIDENT_ANALYZE_BUBBLE_CAUSES_H

#include <stdbool.h>
#include <stddef.h>

#include "src/trace/trace.h"
#include "viz/timeline.h"

typedef struct {
    double measured; /* (wait + idle) / span in the view analysed */
    double schedule, imbalance, communication, sharing; /* add up to measured */
} bc_shares;

typedef struct {
    int nranks;
    bc_shares *rank;  /* (nranks) */
    bc_shares mean;   /* over the ranks; mean.measured = the measured bubble */
    double span;      /* the pipeline's span in the view analysed, seconds */
    bool replay_view; /* the view analysed is the replay (sharing is 0) */
    double forward_mean, backward_mean, weight_mean; /* the costs simulated (seconds) */
    double sim_mean_makespan, sim_stage_makespan;    /* the two simulations' step (seconds) */
} bubble_causes;

/* The causes for timeline `view` (a step of the run as recorded, or of its replay), given
 * `replay`, the same step of the replay (the same pointer as view in the replay view), and
 * `cost_run`, the replayed run the costs are measured in. False and one line in err when the
 * run has no forward or backward, or its schedule is not one Trident knows. */
bool bubble_causes_measure(const viz_timeline *view, const viz_timeline *replay,
                           const trace_run *cost_run, bubble_causes *out, char *err, size_t cap);
void bubble_causes_free(bubble_causes *bc);

/* The measured bubble of one row: (wait + idle) / span inside bb's span, 0 without a span. */
double bubble_of_row(const viz_timeline *tl, const viz_tl_bubble *bb, int rank);

#endif /* TRIDENT_ANALYZE_BUBBLE_CAUSES_H */
