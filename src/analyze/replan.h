/* replan.h — the step re-planned under another pipeline schedule: "what would zb-h1, or
 * interleaved with v = 2, have taken on this run?"
 *
 * The run's own costs are measured per virtual stage (src/pp/stage_costs.h: mean forward,
 * whole backward and W of one chunk, and the mean p2p transfer) in the view the caller passes
 * (the run as recorded, or its replay). The target cuts the same layers into p·v' virtual
 * stages; each target stage costs what the measured stages it overlaps cost, in proportion to
 * the share of their layers it holds (a stage's cost taken as spread evenly over its layers:
 * the first stage's embedding and the last one's head and loss go with their layers):
 *
 *     measured  p=2 v=1   | s0: F 4 ms          | s1: F 6 ms          |
 *     target    p=2 v=2   | s0: 2 | s1: 2       | s2: 3 | s3: 3       |   (by layers)
 *
 * A schedule that splits the backward gets the run's W where the run split it too, else the
 * share of each whole backward its W parts took, which the trainer records on every whole
 * backward it traces on a CPU device (trace_set_weight_share), else half of the whole
 * backward (the simulator's default: a run that shows B and W apart nowhere cannot tell
 * their ratio). Both plans — the run's own schedule and the target — are built and
 * validated (src/pp/schedule.h) and simulated (src/pp/schedule_sim.h) with these costs; what
 * the simulator leaves out (the optimizer, data loading, untraced time, waits the plan does
 * not have) is taken to be the same under both:
 *
 *     predicted step = measured step + makespan(target) − makespan(own schedule)
 *
 * Not here: measuring costs (stage_costs.h), simulating (schedule_sim.h), running the target.
 */
#ifndef TRIDENT_ANALYZE_REPLAN_H
#define TRIDENT_ANALYZE_REPLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "src/pp/schedule.h"
#include "src/trace/trace.h"

typedef struct {
    pp_config own, target;  /* the run's schedule; the one asked about */
    double own_makespan;    /* the run's schedule simulated with its own costs, seconds */
    double target_makespan; /* the target, same costs re-cut to its stages */
    double target_bubble;   /* the target simulation's bubble fraction */
    double measured_step;   /* as given */
    double predicted_step;  /* measured + target − own */
    bool weight_assumed;    /* the target splits the backward and the run neither split it nor
                             * recorded W's share inside it: W = B */
    bool weight_inside;     /* the target splits the backward; W is the share the run recorded
                             * inside its whole backwards (trace_set_weight_share) */
    double weight_share;    /* W ÷ the whole backward, over the target's stages (0: assumed) */
} replan_result;

/* Re-plans `run` (its costs, measured in the view given) under schedule `name` with `v`
 * chunks per rank (0: pp_default_chunks). measured_step is the step the prediction starts
 * from (same view). False and one line in err on an unknown schedule, a configuration the
 * schedule refuses (pp_config_valid's message), or a run without pipeline costs. */
bool replan_step(const trace_run *run, double measured_step, const char *name, int v,
                 replan_result *out, char *err, size_t cap);

/* Where the target's W came from, for a printed line: "; W measured inside the run's whole
 * backwards (38% of them)", "; W taken as half of each backward (the run did not split it)",
 * or "" (the run split it, or the target does not). Returns buf. */
const char *replan_weight_note(const replan_result *r, char *buf, size_t cap);

#endif /* TRIDENT_ANALYZE_REPLAN_H */
