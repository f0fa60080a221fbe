/* step_graph.h — one training step of a traced run as a dependency graph: what each piece of
 * every rank's time waited for. The critical path (critical_path.h), the what-if re-timing
 * (what_if.h) and the bubble's causes (bubble_causes.h) are all read off it.
 *
 * NODES are the pieces of each rank's time, cut exactly as the time classes of
 * viz/timeline.h cut it (the innermost event decides: transfer > wait > compute > idle), so a
 * forward holding a tensor-parallel all-reduce is three nodes — forward, all-reduce (wait,
 * then transfer), forward — and the nodes of a rank's main lane add up to its time classes:
 *
 *     rank 0  |F0.......|send|F1.......|send|.idle.|B1........|
 *     rank 1  |wait.......|xfer|F0........|wait|xfer|F1........|
 *
 * A rank has a main lane (its program) and, with --overlap-grad-reduce, a stream lane (the
 * collectives its communication stream ran, trace flag STREAM). A gap between two events of
 * the main lane is an IDLE node (untraced time: it keeps its length in every re-timing).
 *
 * EDGES say "this point cannot come before that one". A node has two points, its start and
 * its end; an edge goes from a point of one node (its end, or its start) to a point of
 * another (its start, or — for a wait — its end):
 *
 *   program   end of a lane's node i      -> start of node i+1 (one thread runs them in turn)
 *   p2p       start of the send           -> end of the receive's wait (the data can arrive
 *                                            once the sender posted it; sends never wait)
 *   collective start of every member      -> end of each member's wait (a collective ends on a
 *                                            member only after every member entered it)
 *   hand-off  end of the rank's last compute before a stream collective was issued
 *                                         -> start of that collective (a bucket is reduced
 *                                            after its last gradient); a compute piece is
 *                                            cut where the program issued one
 *                                            (trace_file_stream_issue), as the replay does
 *   stream    end of a stream collective  -> end of the exposed wait for it on the main
 *                                            lane (trace_file_is_stream_wait: the "wait"
 *                                            recorded right after it, as the replay pairs them)
 *
 * Every receive and every matched collective has a wait node (of zero length when it did not
 * wait), so a re-timing can make it wait. A node's duration is what it costs by itself:
 * end − start for compute, transfer and idle; 0 for a wait, whose end is the latest of its
 * own start and its dependencies — except a wait that depends on nothing the graph holds (an
 * unmatched message; in the replay view, which drops the communication stream, the exposed
 * wait for it), which keeps its recorded length. Re-timing (step_graph_retime) is the longest path through
 * the graph with given durations; with the recorded durations of a replayed run it gives
 * back the recorded times (the replay, src/trace/replay.h, runs the same rules).
 *
 * Times are seconds from the start of the step's timeline (viz/timeline_load.h picks the step
 * and puts every rank on rank 0's clock). Views: the run as recorded (wall clock) or its
 * replay "as if each rank had its own core" — the caller passes either trace_run.
 *
 * Not here: reading traces (src/trace), the replay simulation, drawing (viz/).
 */
#ifndef TRIDENT_ANALYZE_STEP_GRAPH_H
#define TRIDENT_ANALYZE_STEP_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "src/trace/trace.h"
#include "viz/timeline.h"

typedef enum { SG_MAIN = 0, SG_STREAM = 1 } sg_lane;

typedef enum { SG_PROGRAM, SG_P2P, SG_COLLECTIVE, SG_HANDOFF, SG_STREAM_WAIT } sg_edge_kind;

typedef struct {
    int rank;
    sg_lane lane;
    int box;            /* tl->rows[rank].boxes[box] it is a piece of; -1 for an idle gap */
    viz_time_class cls; /* compute, transfer, wait or idle */
    double start, end;  /* as recorded */
    double dur;         /* its own cost: end − start; 0 for a wait on dependencies */
} sg_node;

typedef struct {
    int from, to;
    bool from_end; /* the bound is from's end (else its start) */
    bool to_end;   /* it bounds to's end (to is a wait), else to's start */
    sg_edge_kind kind;
} sg_edge;

/* Points: start of node i is point 2i, its end point 2i + 1. */
enum { SG_START = 0, SG_END = 1 };

typedef struct {
    viz_timeline *tl; /* owned: the step's boxes, every rank on one clock */
    int step;
    int n;
    sg_node *nodes; /* (n) by rank, lane, then time */
    int nedges;
    sg_edge *edges; /* (nedges) */
    int *in_first;  /* (2n + 1): edges into point q are in_edge[in_first[q] .. in_first[q+1]) */
    int *in_edge;   /* (nedges) edge indices grouped by the point they bound */
    int *order;     /* (2n) every point, each after all the points it depends on */
    double t_end;   /* the step's end: the latest node end */
} step_graph;

/* The graph of step `step` (-1: the last complete one) of `run`. False and one line in err
 * when the step is not complete, or the run's dependencies form a cycle (forged traces). */
bool step_graph_build(const trace_run *run, int step, step_graph *g, char *err, size_t cap);
void step_graph_free(step_graph *g);

/* The box a node is a piece of, or NULL for an idle gap. */
const viz_tl_box *step_graph_box(const step_graph *g, int node);

/* Re-times the graph: t (2n) gets every point's time when node i costs dur[i] (NULL: the
 * recorded durations). A lane's first node starts when it was recorded to; every other point
 * is the latest of its bounds, and a node ends no earlier than its start + its duration. */
void step_graph_retime(const step_graph *g, const double *dur, double *t);

/* The recorded point times (2n), for the readers that take a t. */
void step_graph_recorded(const step_graph *g, double *t);

#endif /* TRIDENT_ANALYZE_STEP_GRAPH_H */
