/* what_if.h — the step re-timed with some costs scaled: "what if the backward were twice as
 * fast, or messages free?"
 *
 * The recorded step graph (step_graph.h) keeps every dependency of the run: each rank's order,
 * who waited for whose message, every collective's members. Scaling the durations of some
 * nodes and taking the longest path again (step_graph_retime) gives the step the same program
 * would have taken with those costs: waits grow or vanish by themselves, another chain may
 * become critical. With every factor 1 a replayed run's step comes back as recorded.
 *
 * A factor is NAME=FACTOR (FACTOR a number >= 0; 0 makes the cost free); names:
 *   forward  backward  w  optimizer       compute: forward, backward (B when the backward is
 *                                         split, else the whole backward), W, optimizer
 *   p2p  allreduce  reduce-scatter  all-gather  all-to-all  ring
 *                                         the transfer part of those messages (waits are
 *                                         never scaled: they follow from the rest)
 *   stage:K                               forward, backward and W of virtual stage K
 *   rank:R                                everything rank R does itself (compute, transfers)
 * Several factors that name one node multiply. Idle gaps (untraced time) keep their length.
 *
 * Not here: parsing the command line (src/cli/analyze_cmd.c), the schedule re-planning of
 * --what-if-schedule.
 */
#ifndef TRIDENT_ANALYZE_WHAT_IF_H
#define TRIDENT_ANALYZE_WHAT_IF_H

#include <stdbool.h>
#include <stddef.h>

#include "src/analyze/critical_path.h"
#include "src/analyze/step_graph.h"

typedef enum {
    WI_FORWARD,
    WI_BACKWARD,
    WI_WEIGHT,
    WI_OPTIMIZER,
    WI_P2P,
    WI_ALLREDUCE,
    WI_REDUCE_SCATTER,
    WI_ALL_GATHER,
    WI_ALL_TO_ALL,
    WI_RING,
    WI_STAGE,
    WI_RANK,
    WI_NUM_TARGETS
} wi_target;

typedef struct {
    wi_target target;
    int index; /* stage:K's K, rank:R's R; -1 otherwise */
    double factor;
} wi_factor;

/* The largest factor taken (a step scaled beyond it is no longer a question about this run). */
#define WHAT_IF_MAX_FACTOR 1e6

/* Parses "NAME=FACTOR" for graph g (stage and rank numbers must exist in it). False and one
 * line in err naming the bad text and the rule. */
bool what_if_parse(const step_graph *g, const char *text, wi_factor *out, char *err, size_t cap);

/* Every node's duration under the factors (dur: g->n). */
void what_if_durations(const step_graph *g, const wi_factor *f, int nf, double *dur);

/* The measured bubble (mean over ranks of (wait + idle) / span, viz/timeline.h) of g at point
 * times t: the same number viz_timeline_bubble gives for the recorded times. */
double what_if_bubble(const step_graph *g, const double *t);

typedef struct {
    double base_step; /* the graph re-timed with every factor 1 (a replayed run: its step) */
    double saved_on_path, saved_in_all; /* seconds the factors take off the nodes of base's
                                         * critical path, and off every node: the step
                                         * shortens by at most saved_in_all (no chain loses
                                         * more), and by saved_on_path when that path stays
                                         * the longest */
    double step;                        /* the re-timed step's end, seconds */
    double bubble;                      /* its measured bubble */
    double *t;                          /* (2·g->n) point times */
    critical_path path;                 /* its critical path */
} what_if_result;

void what_if_run(const step_graph *g, const wi_factor *f, int nf, what_if_result *out);
void what_if_free(what_if_result *r);

#endif /* TRIDENT_ANALYZE_WHAT_IF_H */
