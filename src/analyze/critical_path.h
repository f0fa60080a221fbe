/* critical_path.h — the chain of pieces, across ranks, that set the step's length.
 *
 * Walk back from the point where the step ends (the latest end of any node of the step graph,
 * step_graph.h) and ask at every point which bound decided it:
 *
 *   the end of a compute, transfer or idle node    its own start (the node is on the path);
 *   the end of a wait                              the latest of its own start and the points
 *                                                  it waited for (a send's start, every member's
 *                                                  entry, the stream's collective); the part of
 *                                                  the wait after that point is on the path as
 *                                                  a WAIT segment (data in flight, a late peer);
 *   the start of a node                            the latest of its bounds (the previous node
 *                                                  of its lane, a hand-off); a lane's first
 *                                                  node: the lead-in from 0, on the path as IDLE.
 *
 * Ties keep the path on its rank. Every segment is the time between two consecutive points of
 * the walk, so the segments add up to the step's end exactly:
 *
 *     rank 0  |F0|F1|··· send ·|        |B1|          path: F0 F1 send(→1) F1' B1' xfer B1
 *     rank 1          |F1'|B1'|xfer|B1   ...          sum of the segments = step end
 *
 * Kinds (the table's sums): forward, backward (B, or the whole backward when it is not
 * split), weight (W), optimizer, data, eval, transfer (p2p and collective bytes moving),
 * wait (a wait longer than what it waited for), idle (untraced time and the lead-in).
 *
 * Works on any point times: the recorded ones (step_graph_recorded) or a re-timing
 * (step_graph_retime, what_if.h).
 *
 * Not here: building the graph (step_graph.h), printing (src/cli/analyze_cmd.c).
 */
#ifndef TRIDENT_ANALYZE_CRITICAL_PATH_H
#define TRIDENT_ANALYZE_CRITICAL_PATH_H

#include "src/analyze/step_graph.h"

typedef enum {
    CP_FORWARD,
    CP_BACKWARD,
    CP_WEIGHT,
    CP_OPTIMIZER,
    CP_DATA,
    CP_EVAL,
    CP_TRANSFER,
    CP_WAIT,
    CP_IDLE,
    CP_NUM_KINDS
} cp_kind;

/* "forward", "backward", "weight", "optimizer", "data", "eval", "transfer", "wait", "idle". */
const char *cp_kind_name(cp_kind k);

/* What node i counts as on a path. */
cp_kind cp_node_kind(const step_graph *g, int node);

typedef struct {
    int node; /* the graph node; -1 for the lead-in before a lane's first node */
    int rank;
    cp_kind kind;
    double start, end; /* on the walk's clock (t) */
} cp_segment;

typedef struct {
    int n;
    cp_segment *seg; /* (n) in time order, consecutive pieces of one node merged */
    double total;    /* the step's end: the segments' sum */
    double by_kind[CP_NUM_KINDS];
} critical_path;

/* The path through g with point times t (2·g->n). */
void critical_path_find(const step_graph *g, const double *t, critical_path *out);
void critical_path_free(critical_path *p);

/* The path told as the steps a reader follows (`trident analyze`'s table). A row is one op —
 * a forward, backward or W of one micro-batch and chunk on one pipeline stage, the optimizer,
 * a data load — with everything inside it: the path hops between the ranks of its
 * tensor-parallel group at every collective, and those transfers and waits stay in the row.
 * What lies between two different ops (a p2p message, a wait for data, untraced time) is a
 * row of its own, named by its longest segment:
 *
 *     segments   F0·r0 | ar | F0·r1 | ar | F0·r0 | send | idle | F0'·r2 | ...
 *     rows       forward mb 0 on ranks 0,1 (2 transfers inside) | send | forward mb 0 on 2 ...
 *
 * The rows cover the segments in order, so their lengths add up to the step too. */
typedef struct {
    int first, last;   /* the segments seg[first .. last] */
    cp_kind kind;      /* the op's kind; between ops, the kind of the longest segment */
    int node;          /* the op's first compute node, or the longest segment's (-1: lead-in) */
    int rank;          /* the rank of that node's segment */
    int nranks;        /* distinct ranks the row's segments are on */
    double start, end; /* seconds */
    double inner;      /* transfer and wait inside an op's row */
} cp_row;

/* Fills rows (capacity p->n) and returns how many. */
int critical_path_rows(const step_graph *g, const critical_path *p, cp_row *rows);

/* The path as the segments a timeline picture outlines (viz_tl_overlay, viz/timeline.h):
 * (p->n, at least one slot) malloc'd, in time order, one per segment, idle ones marked
 * (`trident render --critical-path`). */
viz_tl_path_seg *critical_path_overlay(const critical_path *p);

#endif /* TRIDENT_ANALYZE_CRITICAL_PATH_H */
