/* critical_path.c — the walk back from the step's end (see critical_path.h). */
#include "src/analyze/critical_path.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"

const char *cp_kind_name(cp_kind k) {
    static const char *names[CP_NUM_KINDS] = {"forward", "backward", "weight", "optimizer", "data",
                                              "eval",    "transfer", "wait",   "idle"};
    return k >= 0 && k < CP_NUM_KINDS ? names[k] : "?";
}

cp_kind cp_node_kind(const step_graph *g, int node) {
    const sg_node *x = &g->nodes[node];
    if (x->cls == VIZ_TC_TRANSFER) return CP_TRANSFER;
    if (x->cls == VIZ_TC_WAIT) return CP_WAIT;
    if (x->cls == VIZ_TC_IDLE) return CP_IDLE;
    switch (step_graph_box(g, node)->kind) {
    case VIZ_TL_FORWARD: return CP_FORWARD;
    case VIZ_TL_BACKWARD: return CP_BACKWARD;
    case VIZ_TL_WEIGHT: return CP_WEIGHT;
    case VIZ_TL_OPTIMIZER: return CP_OPTIMIZER;
    case VIZ_TL_DATA: return CP_DATA;
    case VIZ_TL_EVAL: return CP_EVAL;
    default: return CP_TRANSFER;
    }
}

/* Appends a segment (walking back, so in reverse time order), merged with the previous one
 * when it continues the same node and kind. Zero-length segments are left out. */
static void add(critical_path *p, int *cap, int node, int rank, cp_kind kind, double a, double b) {
    if (!(b > a)) return;
    if (p->n > 0) {
        cp_segment *last = &p->seg[p->n - 1];
        if (last->node == node && last->kind == kind && last->rank == rank && last->start == b) {
            last->start = a;
            return;
        }
    }
    if (p->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        cp_segment *s = realloc(p->seg, (size_t)*cap * sizeof *s);
        CHECK(s != NULL, "out of memory for the critical path");
        p->seg = s;
    }
    p->seg[p->n++] = (cp_segment){node, rank, kind, a, b};
}

/* Of the bounds into point q (and, for a wait's end, the wait's own start), the latest that
 * is not after t[q]; ties keep the rank's own point. -1 when there is none. */
static int decider(const step_graph *g, const double *t, int q) {
    const int i = q / 2;
    int best = q % 2 == SG_END ? q - 1 : -1;
    for (int k = g->in_first[q]; k < g->in_first[q + 1]; k++) {
        const sg_edge *e = &g->edges[g->in_edge[k]];
        int from = 2 * e->from + (e->from_end ? SG_END : SG_START);
        if (t[from] > t[q]) continue;
        bool own = g->nodes[e->from].rank == g->nodes[i].rank;
        if (best < 0 || t[from] > t[best] || (t[from] == t[best] && own && e->kind == SG_PROGRAM))
            best = from;
    }
    return best;
}

void critical_path_find(const step_graph *g, const double *t, critical_path *out) {
    memset(out, 0, sizeof *out);
    if (g->n == 0) return;
    int q = 1;
    for (int i = 0; i < g->n; i++)
        if (t[2 * i + 1] > t[q]) q = 2 * i + 1;
    out->total = t[q];
    int cap = 0;
    for (;;) {
        const int i = q / 2;
        const sg_node *x = &g->nodes[i];
        if (q % 2 == SG_END && x->cls != VIZ_TC_WAIT) {
            add(out, &cap, i, x->rank, cp_node_kind(g, i), t[q - 1], t[q]);
            q = q - 1;
            continue;
        }
        int d = decider(g, t, q);
        if (d < 0) { /* a lane's first node: the lead-in from 0 */
            add(out, &cap, -1, x->rank, CP_IDLE, 0, t[q]);
            break;
        }
        add(out, &cap, i, x->rank, CP_WAIT, t[d], t[q]);
        q = d;
    }
    for (int a = 0, b = out->n - 1; a < b; a++, b--) {
        cp_segment s = out->seg[a];
        out->seg[a] = out->seg[b];
        out->seg[b] = s;
    }
    for (int s = 0; s < out->n; s++)
        out->by_kind[out->seg[s].kind] += out->seg[s].end - out->seg[s].start;
}

void critical_path_free(critical_path *p) {
    free(p->seg);
    memset(p, 0, sizeof *p);
}

/* Whether a segment is a piece of an op (compute), not a transfer, wait or idle gap. */
static bool is_op(const cp_segment *s) { return s->node >= 0 && s->kind < CP_TRANSFER; }

/* Whether two op segments are pieces of one op: its kind, micro-batch and chunk, on one stage. */
static bool same_op(const step_graph *g, const cp_segment *x, const cp_segment *y) {
    const viz_tl_box *a = step_graph_box(g, x->node), *b = step_graph_box(g, y->node);
    return x->kind == y->kind && a->microbatch == b->microbatch && a->chunk == b->chunk &&
           g->tl->rows[x->rank].pp_rank == g->tl->rows[y->rank].pp_rank;
}

/* Closes row r over seg[first .. last]: its times, ranks and (between ops) its name. */
static void row_close(const critical_path *p, cp_row *r, int first, int last, bool op) {
    r->first = first, r->last = last;
    r->start = p->seg[first].start, r->end = p->seg[last].end;
    r->inner = 0, r->nranks = 0;
    int longest = first;
    for (int i = first; i <= last; i++) {
        const cp_segment *s = &p->seg[i];
        bool seen = false;
        for (int j = first; j < i && !seen; j++) seen = p->seg[j].rank == s->rank;
        r->nranks += !seen;
        if (op && (s->kind == CP_TRANSFER || s->kind == CP_WAIT)) r->inner += s->end - s->start;
        if (s->end - s->start > p->seg[longest].end - p->seg[longest].start) longest = i;
    }
    const int named = op ? first : longest;
    r->kind = p->seg[named].kind, r->node = p->seg[named].node, r->rank = p->seg[named].rank;
}

int critical_path_rows(const step_graph *g, const critical_path *p, cp_row *rows) {
    int n = 0, open = -1, between = -1; /* the open op's first segment; the gap's first */
    for (int i = 0; i <= p->n; i++) {
        const bool end = i == p->n;
        if (!end && !is_op(&p->seg[i])) { /* inside the op if the op goes on after it */
            if (between < 0) between = i;
            continue;
        }
        if (!end && open >= 0 && same_op(g, &p->seg[open], &p->seg[i])) {
            between = -1; /* the same op again: the gap was inside it */
            continue;
        }
        const int op_end = between >= 0 ? between - 1 : i - 1;
        if (open >= 0) row_close(p, &rows[n++], open, op_end, true);
        if (between >= 0) row_close(p, &rows[n++], between, i - 1, false);
        open = end ? -1 : i, between = -1;
    }
    return n;
}

viz_tl_path_seg *critical_path_overlay(const critical_path *p) {
    viz_tl_path_seg *out = callocCheck((size_t)p->n + 1, sizeof *out);
    for (int i = 0; i < p->n; i++)
        out[i] = (viz_tl_path_seg){p->seg[i].rank, p->seg[i].start, p->seg[i].end,
                                   p->seg[i].kind == CP_IDLE};
    return out;
}
