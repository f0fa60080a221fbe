/* what_if.c — scaled durations and the longest path again (see what_if.h). */
#include "src/analyze/what_if.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/pp/schedule.h"

static const char *const k_names[WI_NUM_TARGETS] = {
    "forward",        "backward",   "w",          "optimizer", "p2p",   "allreduce",
    "reduce-scatter", "all-gather", "all-to-all", "ring",      "stage", "rank"};

static bool parse_index(const char *s, size_t len, int *out) {
    if (len == 0 || len > 9) return false;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = 10 * v + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Name part of NAME=FACTOR (len bytes at s) -> target and index. */
static bool parse_name(const step_graph *g, const char *s, size_t len, wi_factor *out, char *err,
                       size_t cap) {
    for (int k = 0; k < WI_NUM_TARGETS; k++) {
        const size_t n = strlen(k_names[k]);
        const bool indexed = k == WI_STAGE || k == WI_RANK;
        if (len < n || strncmp(s, k_names[k], n) != 0) continue;
        if (!indexed && len != n) continue;
        if (indexed) {
            const int limit = k == WI_STAGE ? g->tl->pp * (g->tl->vpp > 0 ? g->tl->vpp : 1)
                                            : g->tl->nrows;
            if (len < n + 2 || s[n] != ':' || !parse_index(s + n + 1, len - n - 1, &out->index) ||
                out->index >= limit) {
                snprintf(err, cap, "'%.*s': %s:K needs K in 0..%d (this run has %d %s)", (int)len,
                         s, k_names[k], limit - 1, limit,
                         k == WI_STAGE ? "virtual stages" : "ranks");
                return false;
            }
        }
        out->target = (wi_target)k;
        return true;
    }
    snprintf(err, cap,
             "'%.*s' is not a cost to scale (one of forward, backward, w, optimizer, p2p, "
             "allreduce, reduce-scatter, all-gather, all-to-all, ring, stage:K, rank:R)",
             (int)len, s);
    return false;
}

bool what_if_parse(const step_graph *g, const char *text, wi_factor *out, char *err, size_t cap) {
    *out = (wi_factor){WI_FORWARD, -1, 1};
    const char *eq = strchr(text, '=');
    if (!eq) {
        snprintf(err, cap, "--what-if '%s': expected NAME=FACTOR, e.g. p2p=0 or stage:1=0.5", text);
        return false;
    }
    char why[256];
    if (!parse_name(g, text, (size_t)(eq - text), out, why, sizeof why)) {
        snprintf(err, cap, "--what-if %s", why);
        return false;
    }
    char *end = NULL;
    errno = 0;
    double f = strtod(eq + 1, &end);
    if (end == eq + 1 || *end != 0 || errno != 0 || !isfinite(f) || f < 0 ||
        f > WHAT_IF_MAX_FACTOR) {
        snprintf(err, cap, "--what-if '%s': the factor must be a number in [0, %g]", text,
                 WHAT_IF_MAX_FACTOR);
        return false;
    }
    out->factor = f;
    return true;
}

/* The op of a collective with '_' and '-' dropped: "all_reduce" -> "allreduce". */
static void op_key(const char *op, char *key, size_t cap) {
    size_t n = 0;
    for (; *op && n + 1 < cap; op++)
        if (*op != '_' && *op != '-') key[n++] = *op;
    key[n] = 0;
}

/* Does factor f name node i? */
static bool names(const step_graph *g, const pp_config *cfg, bool have_cfg, int i,
                  const wi_factor *f) {
    const sg_node *x = &g->nodes[i];
    const viz_tl_box *b = step_graph_box(g, i);
    if (!b || x->cls == VIZ_TC_WAIT) return false;
    if (f->target == WI_RANK) return x->rank == f->index;
    const bool fbw = b->kind == VIZ_TL_FORWARD || b->kind == VIZ_TL_BACKWARD ||
                     b->kind == VIZ_TL_WEIGHT;
    if (x->cls == VIZ_TC_COMPUTE) {
        switch (f->target) {
        case WI_FORWARD: return b->kind == VIZ_TL_FORWARD;
        case WI_BACKWARD: return b->kind == VIZ_TL_BACKWARD;
        case WI_WEIGHT: return b->kind == VIZ_TL_WEIGHT;
        case WI_OPTIMIZER: return b->kind == VIZ_TL_OPTIMIZER;
        case WI_STAGE:
            return fbw && have_cfg &&
                   pp_stage(cfg, g->tl->rows[x->rank].pp_rank, b->chunk < 0 ? 0 : b->chunk) ==
                       f->index;
        default: return false;
        }
    }
    char key[32];
    op_key(b->op, key, sizeof key);
    switch (f->target) {
    case WI_P2P: return b->kind == VIZ_TL_SEND || b->kind == VIZ_TL_RECV;
    case WI_RING: return b->kind == VIZ_TL_RING;
    case WI_ALL_TO_ALL: return b->kind == VIZ_TL_ALL_TO_ALL;
    case WI_ALLREDUCE: return b->kind == VIZ_TL_COLLECTIVE && strcmp(key, "allreduce") == 0;
    case WI_REDUCE_SCATTER:
        return b->kind == VIZ_TL_COLLECTIVE && strcmp(key, "reducescatter") == 0;
    case WI_ALL_GATHER: return b->kind == VIZ_TL_COLLECTIVE && strcmp(key, "allgather") == 0;
    default: return false;
    }
}

void what_if_durations(const step_graph *g, const wi_factor *f, int nf, double *dur) {
    pp_config cfg = {PP_1F1B, g->tl->pp, g->tl->num_microbatches, g->tl->vpp > 0 ? g->tl->vpp : 1};
    char msg[256];
    bool have_cfg = pp_kind_parse(g->tl->schedule, &cfg.kind) &&
                    pp_config_valid(&cfg, msg, sizeof msg);
    for (int i = 0; i < g->n; i++) {
        dur[i] = g->nodes[i].dur;
        for (int k = 0; k < nf; k++)
            if (names(g, &cfg, have_cfg, i, &f[k])) dur[i] *= f[k].factor;
    }
}

double what_if_bubble(const step_graph *g, const double *t) {
    double lo = 0, hi = 0;
    bool any = false;
    for (int i = 0; i < g->n; i++) {
        const viz_tl_box *b = step_graph_box(g, i);
        if (!b ||
            (b->kind != VIZ_TL_FORWARD && b->kind != VIZ_TL_BACKWARD && b->kind != VIZ_TL_WEIGHT))
            continue;
        if (!any || t[2 * i] < lo) lo = t[2 * i];
        if (!any || t[2 * i + 1] > hi) hi = t[2 * i + 1];
        any = true;
    }
    if (!any || !(hi > lo) || g->tl->nrows == 0) return 0;
    double busy = 0; /* compute and transfer of every rank's main lane inside the span */
    for (int i = 0; i < g->n; i++) {
        const sg_node *x = &g->nodes[i];
        if (x->lane != SG_MAIN || (x->cls != VIZ_TC_COMPUTE && x->cls != VIZ_TC_TRANSFER)) continue;
        double a = fmax(t[2 * i], lo), b = fmin(t[2 * i + 1], hi);
        if (b > a) busy += b - a;
    }
    return 1 - busy / (g->tl->nrows * (hi - lo));
}

/* What the factors save on the nodes of the path through the graph at every factor 1, and
 * on every node; that step into *base_step. */
static void savings(const step_graph *g, const double *dur, what_if_result *out) {
    double *t = mallocCheck((2 * (size_t)g->n + 1) * sizeof *t);
    step_graph_retime(g, NULL, t);
    critical_path base;
    critical_path_find(g, t, &base);
    out->base_step = base.total;
    for (int i = 0; i < g->n; i++) out->saved_in_all += g->nodes[i].dur - dur[i];
    int last = -1; /* merged segments of one node: count the node once */
    for (int s = 0; s < base.n; s++) {
        const int i = base.seg[s].node;
        if (i >= 0 && i != last && g->nodes[i].cls != VIZ_TC_WAIT)
            out->saved_on_path += g->nodes[i].dur - dur[i];
        last = i;
    }
    critical_path_free(&base);
    free(t);
}

void what_if_run(const step_graph *g, const wi_factor *f, int nf, what_if_result *out) {
    memset(out, 0, sizeof *out);
    double *dur = mallocCheck(((size_t)g->n + 1) * sizeof *dur);
    out->t = mallocCheck((2 * (size_t)g->n + 1) * sizeof *out->t);
    what_if_durations(g, f, nf, dur);
    savings(g, dur, out);
    step_graph_retime(g, dur, out->t);
    critical_path_find(g, out->t, &out->path);
    out->step = out->path.total;
    out->bubble = what_if_bubble(g, out->t);
    free(dur);
}

void what_if_free(what_if_result *r) {
    free(r->t);
    critical_path_free(&r->path);
    memset(r, 0, sizeof *r);
}
