/* step_graph.c — a step's pieces and what each waited for (see step_graph.h). */
#include "src/analyze/step_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "viz/timeline_load.h"

/* realloc that never returns NULL. */
static void *grow(void *p, size_t bytes) {
    void *q = realloc(p, bytes);
    CHECK(q != NULL, "out of memory growing the step graph");
    return q;
}

typedef struct {
    sg_node *v;
    int n, cap;
} node_vec;

static void push_node(node_vec *nv, sg_node x) {
    if (nv->n == nv->cap) {
        nv->cap = nv->cap ? 2 * nv->cap : 256;
        nv->v = grow(nv->v, (size_t)nv->cap * sizeof *nv->v);
    }
    nv->v[nv->n++] = x;
}

typedef struct {
    sg_edge *v;
    int n, cap;
} edge_vec;

static void push_edge(edge_vec *ev, int from, bool from_end, int to, bool to_end,
                      sg_edge_kind kind) {
    if (from < 0 || to < 0 || from == to) return;
    if (ev->n == ev->cap) {
        ev->cap = ev->cap ? 2 * ev->cap : 256;
        ev->v = grow(ev->v, (size_t)ev->cap * sizeof *ev->v);
    }
    ev->v[ev->n++] = (sg_edge){from, to, from_end, to_end, kind};
}

static int dbl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The event of the trace a box was loaded from. */
static const trace_event *event_of(const trace_run *run, int k, const viz_tl_box *b) {
    return trace_file_event(run->ranks[k], (size_t)b->event);
}

/* Does this box get a wait node even when it did not wait: a matched receive, a matched
 * collective, an exposed wait for the stream? */
static bool needs_wait(const trace_run *run, int k, const viz_tl_box *b) {
    const trace_event *e = event_of(run, k, b);
    if (e->kind == TRACE_RECV) return b->flow >= 0;
    if (e->kind != TRACE_COLLECTIVE) return false;
    return run->coll[k][b->event] >= 0 ||
           trace_file_is_stream_wait(run->ranks[k], (size_t)b->event);
}

/* The box of the lane that decides instant x (see viz/timeline.h, TIME CLASSES: transfer >
 * wait > compute; among equals the innermost, i.e. the latest begun), or -1. */
static int box_at(const viz_tl_row *row, sg_lane lane, double x, viz_time_class *cls) {
    int best = -1, best_pri = 0;
    for (int i = 0; i < row->nboxes; i++) {
        const viz_tl_box *b = &row->boxes[i];
        if (b->stream != (lane == SG_STREAM) || !(b->start <= x && x < b->end)) continue;
        viz_time_class c = !viz_tl_is_comm(b->kind) ? VIZ_TC_COMPUTE
                           : x < b->ready           ? VIZ_TC_WAIT
                                                    : VIZ_TC_TRANSFER;
        int pri = c == VIZ_TC_TRANSFER ? 3 : c == VIZ_TC_WAIT ? 2 : 1;
        if (pri > best_pri || (pri == best_pri && b->start >= row->boxes[best].start)) {
            best = i, best_pri = pri, *cls = c;
        }
    }
    return best;
}

/* The box of the row's event ev (a box per event), or -1 when the step does not hold it. */
static int box_of_event(const viz_tl_row *row, int ev) {
    for (int i = 0; i < row->nboxes; i++)
        if (row->boxes[i].event == ev) return i;
    return -1;
}

/* Where the program handed stream box b of rank k to the stream, on the timeline's clock: the
 * start of the event trace_file_stream_issue names (the box itself, or its exposed wait). */
static double issue_at(const viz_timeline *tl, const trace_run *run, int k, const viz_tl_box *b) {
    const size_t j = trace_file_stream_issue(run->ranks[k], (size_t)b->event);
    const int w = j == (size_t)b->event ? -1 : box_of_event(&tl->rows[k], (int)j);
    return w >= 0 ? tl->rows[k].boxes[w].start : b->start; /* the wait may be outside the step */
}

/* Rank k's lane cut into pieces (appended to out), before zero-length waits are added. The
 * main lane's compute is also cut where a stream collective was issued, so a hand-off leaves
 * from the end of a piece even when the program issued it in the middle of a computation. */
static void cut_lane(const viz_timeline *tl, const trace_run *run, int k, sg_lane lane,
                     node_vec *out) {
    const viz_tl_row *row = &tl->rows[k];
    double *x = mallocCheck((4 * (size_t)row->nboxes + 1) * sizeof *x);
    double *issue = mallocCheck(((size_t)row->nboxes + 1) * sizeof *issue);
    int nx = 0, ni = 0;
    for (int i = 0; i < row->nboxes; i++) {
        if (row->boxes[i].stream && lane == SG_MAIN)
            x[nx++] = issue[ni++] = issue_at(tl, run, k, &row->boxes[i]);
        if (row->boxes[i].stream == (lane == SG_STREAM)) {
            x[nx++] = row->boxes[i].start;
            x[nx++] = row->boxes[i].ready;
            x[nx++] = row->boxes[i].end;
        }
    }
    qsort(x, (size_t)nx, sizeof *x, dbl_cmp);
    qsort(issue, (size_t)ni, sizeof *issue, dbl_cmp);
    const int first = out->n;
    for (int j = 0; j + 1 < nx; j++) {
        if (!(x[j + 1] > x[j])) continue;
        viz_time_class cls = VIZ_TC_IDLE;
        int b = box_at(row, lane, 0.5 * (x[j] + x[j + 1]), &cls);
        if (b < 0 && (lane == SG_STREAM || out->n == first)) continue; /* no lead-in, no gap */
        sg_node *last = out->n > first ? &out->v[out->n - 1] : NULL;
        const bool cut = cls == VIZ_TC_COMPUTE &&
                         bsearch(&x[j], issue, (size_t)ni, sizeof *issue, dbl_cmp) != NULL;
        if (last && last->box == b && last->cls == cls && last->end == x[j] && !cut) {
            last->end = x[j + 1];
            continue;
        }
        push_node(
            out,
            (sg_node){
                .rank = k, .lane = lane, .box = b, .cls = cls, .start = x[j], .end = x[j + 1]});
    }
    free(x);
    free(issue);
}

/* The lane's pieces with a zero-length wait before the first piece of every box that needs
 * one and has none, and every node's own duration. */
static void add_lane(const viz_timeline *tl, const trace_run *run, int k, sg_lane lane,
                     node_vec *all) {
    node_vec cut = {0};
    cut_lane(tl, run, k, lane, &cut);
    const int nb = tl->rows[k].nboxes;
    char *has_wait = callocCheck((size_t)nb + 1, 1), *seen = callocCheck((size_t)nb + 1, 1);
    for (int i = 0; i < cut.n; i++)
        if (cut.v[i].box >= 0 && cut.v[i].cls == VIZ_TC_WAIT) has_wait[cut.v[i].box] = 1;
    for (int i = 0; i < cut.n; i++) {
        sg_node x = cut.v[i];
        if (x.box >= 0 && !seen[x.box]) {
            seen[x.box] = 1;
            if (!has_wait[x.box] && needs_wait(run, k, &tl->rows[k].boxes[x.box]))
                push_node(all, (sg_node){.rank = k,
                                         .lane = lane,
                                         .box = x.box,
                                         .cls = VIZ_TC_WAIT,
                                         .start = x.start,
                                         .end = x.start});
        }
        x.dur = x.cls == VIZ_TC_WAIT ? 0 : x.end - x.start;
        push_node(all, x);
    }
    free(has_wait);
    free(seen);
    free(cut.v);
}

/* Per (rank, box): the first node and the last wait node of it (-1 none). */
typedef struct {
    int *first, *wait; /* indexed by box_base[rank] + box */
    int *base;         /* (nranks + 1) */
} box_nodes;

static box_nodes index_boxes(const step_graph *g) {
    box_nodes bn;
    const viz_timeline *tl = g->tl;
    bn.base = mallocCheck(((size_t)tl->nrows + 1) * sizeof *bn.base);
    bn.base[0] = 0;
    for (int k = 0; k < tl->nrows; k++) bn.base[k + 1] = bn.base[k] + tl->rows[k].nboxes;
    size_t total = (size_t)bn.base[tl->nrows] + 1;
    bn.first = mallocCheck(total * sizeof *bn.first);
    bn.wait = mallocCheck(total * sizeof *bn.wait);
    for (size_t i = 0; i < total; i++) bn.first[i] = bn.wait[i] = -1;
    for (int i = 0; i < g->n; i++) {
        const sg_node *x = &g->nodes[i];
        if (x->box < 0) continue;
        int j = bn.base[x->rank] + x->box;
        if (bn.first[j] < 0) bn.first[j] = i;
        if (x->cls == VIZ_TC_WAIT) bn.wait[j] = i; /* nodes in time order: the last wins */
    }
    return bn;
}

static void free_box_nodes(box_nodes *bn) {
    free(bn->first);
    free(bn->wait);
    free(bn->base);
}

/* send -> receive: the start of the send bounds the end of the receive's wait. */
static void p2p_edges(const step_graph *g, const trace_run *run, const box_nodes *bn,
                      edge_vec *ev) {
    int nf = run->nflows > 0 ? run->nflows : 1;
    int *send = mallocCheck((size_t)nf * sizeof *send),
        *wait = mallocCheck((size_t)nf * sizeof *wait);
    for (int f = 0; f < nf; f++) send[f] = wait[f] = -1;
    for (int k = 0; k < g->tl->nrows; k++)
        for (int b = 0; b < g->tl->rows[k].nboxes; b++) {
            const viz_tl_box *x = &g->tl->rows[k].boxes[b];
            if (x->flow < 0 || x->flow >= nf) continue;
            if (event_of(run, k, x)->kind == TRACE_SEND) send[x->flow] = bn->first[bn->base[k] + b];
            else wait[x->flow] = bn->wait[bn->base[k] + b];
        }
    for (int f = 0; f < nf; f++) push_edge(ev, send[f], false, wait[f], true, SG_P2P);
    free(send);
    free(wait);
}

/* Every member's entry bounds every other member's wait. */
static void collective_edges(const step_graph *g, const trace_run *run, const box_nodes *bn,
                             edge_vec *ev) {
    const int nc = run->ncolls;
    int *count = callocCheck((size_t)nc + 1, sizeof *count);
    for (int k = 0; k < g->tl->nrows; k++)
        for (int b = 0; b < g->tl->rows[k].nboxes; b++) {
            const viz_tl_box *x = &g->tl->rows[k].boxes[b];
            int c = viz_tl_is_comm(x->kind) ? run->coll[k][x->event] : -1;
            if (c >= 0 && c < nc) count[c]++;
        }
    /* Members of call c: a bucket per call, filled in one sweep. */
    int *start = mallocCheck(((size_t)nc + 1) * sizeof *start);
    start[0] = 0;
    for (int c = 0; c < nc; c++) start[c + 1] = start[c] + count[c];
    int *member = mallocCheck(((size_t)start[nc] + 1) * sizeof *member);
    memset(count, 0, ((size_t)nc + 1) * sizeof *count);
    for (int k = 0; k < g->tl->nrows; k++)
        for (int b = 0; b < g->tl->rows[k].nboxes; b++) {
            const viz_tl_box *x = &g->tl->rows[k].boxes[b];
            int c = viz_tl_is_comm(x->kind) ? run->coll[k][x->event] : -1;
            if (c >= 0 && c < nc) member[start[c] + count[c]++] = bn->base[k] + b;
        }
    for (int c = 0; c < nc; c++)
        for (int i = start[c]; i < start[c + 1]; i++)
            for (int j = start[c]; j < start[c + 1]; j++)
                if (i != j)
                    push_edge(ev, bn->first[member[i]], false, bn->wait[member[j]], true,
                              SG_COLLECTIVE);
    free(member);
    free(start);
    free(count);
}

/* The rank's last compute node of the main lane that ended by time t, or -1. */
static int last_compute_before(const step_graph *g, int k, double t) {
    int best = -1;
    for (int i = 0; i < g->n; i++) {
        const sg_node *x = &g->nodes[i];
        if (x->rank == k && x->lane == SG_MAIN && x->cls == VIZ_TC_COMPUTE && x->end <= t)
            best = i; /* nodes of a lane are in time order */
    }
    return best;
}

/* Stream collectives: posted after the piece of compute that ended where the program issued
 * them (hand-off; cut_lane cut the compute there); an exposed wait on the main lane ends
 * after the stream collective it waited for, the event recorded right before it
 * (trace_file_is_stream_wait: the replay pairs them by the same rule). */
static void stream_edges(const step_graph *g, const trace_run *run, const box_nodes *bn,
                         edge_vec *ev) {
    for (int k = 0; k < g->tl->nrows; k++) {
        const viz_tl_row *row = &g->tl->rows[k];
        for (int b = 0; b < row->nboxes; b++) {
            const viz_tl_box *x = &row->boxes[b];
            if (x->stream) {
                push_edge(ev, last_compute_before(g, k, issue_at(g->tl, run, k, x)), true,
                          bn->first[bn->base[k] + b], false, SG_HANDOFF);
                continue;
            }
            if (x->kind != VIZ_TL_COLLECTIVE ||
                !trace_file_is_stream_wait(run->ranks[k], (size_t)x->event))
                continue;
            const int best = box_of_event(row, x->event - 1); /* its collective's, if held */
            if (best < 0) continue;
            /* the stream collective's last node: the one before the next box's first */
            int last = -1;
            for (int i = 0; i < g->n; i++)
                if (g->nodes[i].rank == k && g->nodes[i].box == best) last = i;
            push_edge(ev, last, true, bn->wait[bn->base[k] + b], true, SG_STREAM_WAIT);
        }
    }
}

static int point_of(int node, bool end) { return 2 * node + (end ? SG_END : SG_START); }

/* A wait that depends on nothing the graph holds (an unmatched message, the exposed wait for a
 * stream the replay view does not keep, the earlier part of a wait cut by another message)
 * keeps its recorded length: there is nothing to re-time it from. */
static void keep_free_waits(step_graph *g) {
    char *bound = callocCheck((size_t)g->n + 1, 1);
    for (int e = 0; e < g->nedges; e++)
        if (g->edges[e].to_end) bound[g->edges[e].to] = 1;
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i].cls == VIZ_TC_WAIT && !bound[i])
            g->nodes[i].dur = g->nodes[i].end - g->nodes[i].start;
    free(bound);
}

/* Groups the edges by the point they bound (in_first / in_edge) and orders the points so
 * that each comes after every point it depends on (Kahn). False on a cycle. */
static bool order_points(step_graph *g) {
    const int np = 2 * g->n;
    g->in_first = callocCheck((size_t)np + 1, sizeof *g->in_first);
    g->in_edge = mallocCheck(((size_t)g->nedges + 1) * sizeof *g->in_edge);
    g->order = mallocCheck(((size_t)np + 1) * sizeof *g->order);
    int *out_first = callocCheck((size_t)np + 1, sizeof *out_first);
    int *out_edge = mallocCheck(((size_t)g->nedges + 1) * sizeof *out_edge);
    int *fill = callocCheck((size_t)np + 1, sizeof *fill);
    for (int e = 0; e < g->nedges; e++) {
        g->in_first[point_of(g->edges[e].to, g->edges[e].to_end) + 1]++;
        out_first[point_of(g->edges[e].from, g->edges[e].from_end) + 1]++;
    }
    for (int q = 0; q < np; q++) {
        g->in_first[q + 1] += g->in_first[q];
        out_first[q + 1] += out_first[q];
    }
    int *indeg = callocCheck((size_t)np + 1, sizeof *indeg);
    for (int e = 0; e < g->nedges; e++) {
        int to = point_of(g->edges[e].to, g->edges[e].to_end);
        int from = point_of(g->edges[e].from, g->edges[e].from_end);
        g->in_edge[g->in_first[to] + indeg[to]++] = e;
        out_edge[out_first[from] + fill[from]++] = e;
    }
    for (int i = 0; i < g->n; i++) indeg[point_of(i, true)]++; /* a node's end after its start */
    int head = 0, tail = 0;
    for (int q = 0; q < np; q++)
        if (indeg[q] == 0) g->order[tail++] = q;
    while (head < tail) {
        int q = g->order[head++];
        if (q % 2 == SG_START && --indeg[q + 1] == 0) g->order[tail++] = q + 1;
        for (int j = out_first[q]; j < out_first[q + 1]; j++) {
            const sg_edge *e = &g->edges[out_edge[j]];
            int to = point_of(e->to, e->to_end);
            if (--indeg[to] == 0) g->order[tail++] = to;
        }
    }
    free(indeg);
    free(fill);
    free(out_edge);
    free(out_first);
    return tail == np;
}

bool step_graph_build(const trace_run *run, int step, step_graph *g, char *err, size_t cap) {
    memset(g, 0, sizeof *g);
    g->tl = viz_timeline_from_run(run, run->dir, step, err, cap);
    if (!g->tl) return false;
    g->step = g->tl->step;
    node_vec nv = {0};
    for (int k = 0; k < g->tl->nrows; k++) {
        add_lane(g->tl, run, k, SG_MAIN, &nv);
        add_lane(g->tl, run, k, SG_STREAM, &nv);
    }
    g->nodes = nv.v, g->n = nv.n;
    edge_vec ev = {0};
    for (int i = 0; i + 1 < g->n; i++)
        if (g->nodes[i].rank == g->nodes[i + 1].rank && g->nodes[i].lane == g->nodes[i + 1].lane)
            push_edge(&ev, i, true, i + 1, false, SG_PROGRAM);
    box_nodes bn = index_boxes(g);
    p2p_edges(g, run, &bn, &ev);
    collective_edges(g, run, &bn, &ev);
    g->edges = ev.v, g->nedges = ev.n; /* last_compute_before reads g->nodes only */
    stream_edges(g, run, &bn, &ev);
    g->edges = ev.v, g->nedges = ev.n;
    free_box_nodes(&bn);
    keep_free_waits(g);
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i].end > g->t_end) g->t_end = g->nodes[i].end;
    if (!order_points(g)) {
        snprintf(err, cap, "'%s' step %d: the recorded dependencies form a cycle", run->dir,
                 g->step);
        step_graph_free(g);
        return false;
    }
    return true;
}

void step_graph_free(step_graph *g) {
    if (g->tl) viz_timeline_free(g->tl);
    free(g->nodes);
    free(g->edges);
    free(g->in_first);
    free(g->in_edge);
    free(g->order);
    memset(g, 0, sizeof *g);
}

const viz_tl_box *step_graph_box(const step_graph *g, int node) {
    const sg_node *x = &g->nodes[node];
    return x->box < 0 ? NULL : &g->tl->rows[x->rank].boxes[x->box];
}

void step_graph_retime(const step_graph *g, const double *dur, double *t) {
    for (int j = 0; j < 2 * g->n; j++) {
        const int q = g->order[j], i = q / 2;
        const sg_node *x = &g->nodes[i];
        double v;
        if (q % 2 == SG_START) v = g->in_first[q] == g->in_first[q + 1] ? x->start : -1e300;
        else v = t[q - 1] + (dur ? dur[i] : x->dur);
        for (int k = g->in_first[q]; k < g->in_first[q + 1]; k++) {
            const sg_edge *e = &g->edges[g->in_edge[k]];
            double s = t[point_of(e->from, e->from_end)];
            if (s > v) v = s;
        }
        t[q] = v;
    }
}

void step_graph_recorded(const step_graph *g, double *t) {
    for (int i = 0; i < g->n; i++) {
        t[2 * i] = g->nodes[i].start;
        t[2 * i + 1] = g->nodes[i].end;
    }
}
