/* clock_fix.c — one clock shift per host from the run's own messages (trace_run_fix_clocks,
 * trace.h).
 *
 * Every bound is "a later time on host B no earlier than an earlier one on host A":
 *
 *   host A  send ──t_start|                          δ_B − δ_A ≥ (A's start) − (B's end)
 *   host B               ... recv t_end|              = need
 *
 * with both times on rank 0's clock as measured. Starting from δ = 0 everywhere, a backwards
 * pair moves the receiver's host later by what it lacks (or, when the receiver is rank 0's
 * host, whose δ stays 0, the sender's host earlier); one pass over every bound per host is
 * enough when they agree (a longest path has at most hosts − 1 edges).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/trace/trace.h"
#include "src/trace/trace_file.h"

typedef struct {
    int a, b;    /* hosts: the earlier time's, the later time's */
    double need; /* δ_b − δ_a must be at least this */
} bound;

typedef struct {
    bound *v;
    int n, cap;
} bounds;

static void add(bounds *bs, int a, int b, double need) {
    if (a == b) return; /* one host, one clock: nothing to shift */
    if (bs->n == bs->cap) {
        bs->cap = bs->cap ? 2 * bs->cap : 64;
        bound *grown = mallocCheck((size_t)bs->cap * sizeof *grown);
        if (bs->n) memcpy(grown, bs->v, (size_t)bs->n * sizeof *grown);
        free(bs->v);
        bs->v = grown;
    }
    bs->v[bs->n++] = (bound){a, b, need};
}

/* Each rank's host index (rank 0's host is 0), from the headers' host names. */
static int hosts_of_ranks(const trace_run *r, int *host) {
    int n = 0;
    for (int k = 0; k < r->nranks; k++) {
        const trace_header *h = &r->ranks[k]->h;
        host[k] = -1;
        if (!h->host[0]) { /* before version 4: rank 0's clock, or one of its own */
            host[k] = k == 0 || h->clock_uncertainty == 0 ? 0 : n++;
            if (k == 0) n = 1;
            continue;
        }
        for (int j = 0; j < k && host[k] < 0; j++)
            if (strcmp(r->ranks[j]->h.host, h->host) == 0) host[k] = host[j];
        if (host[k] < 0) host[k] = n++;
    }
    return n;
}

static double off(const trace_run *r, int k) { return r->ranks[k]->h.clock_offset; }

/* Every send before its receive's end. */
static void p2p_bounds(const trace_run *r, const int *host, bounds *bs) {
    int *sr = mallocCheck(((size_t)r->nflows + 1) * sizeof(int));
    double *sent = mallocCheck(((size_t)r->nflows + 1) * sizeof(double));
    for (int f = 0; f < r->nflows; f++) sr[f] = -1;
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < r->ranks[k]->n; i++)
            if (r->flow[k][i] >= 0 && r->ranks[k]->ev[i].kind == TRACE_SEND)
                sr[r->flow[k][i]] = k, sent[r->flow[k][i]] = r->ranks[k]->ev[i].t_start + off(r, k);
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < r->ranks[k]->n; i++) {
            const int f = r->flow[k][i];
            const trace_event *ev = &r->ranks[k]->ev[i];
            if (f >= 0 && ev->kind == TRACE_RECV && sr[f] >= 0)
                add(bs, host[sr[f]], host[k], sent[f] - (ev->t_end + off(r, k)));
        }
    free(sr);
    free(sent);
}

/* Every member's end of a collective after every member's entry: per call and host, the
 * latest entry and the earliest end are enough. */
static void collective_bounds(const trace_run *r, const int *host, int nhosts, bounds *bs) {
    const size_t cells = (size_t)r->ncolls * (size_t)nhosts;
    double *in = mallocCheck((cells + 1) * sizeof(double)),
           *out = mallocCheck((cells + 1) * sizeof(double));
    for (size_t c = 0; c < cells; c++) in[c] = -INFINITY, out[c] = INFINITY;
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < r->ranks[k]->n; i++) {
            const int id = r->coll[k][i];
            if (id < 0) continue;
            const size_t c = (size_t)id * (size_t)nhosts + (size_t)host[k];
            const trace_event *ev = &r->ranks[k]->ev[i];
            in[c] = fmax(in[c], ev->t_start + off(r, k));
            out[c] = fmin(out[c], ev->t_end + off(r, k));
        }
    for (int id = 0; id < r->ncolls; id++)
        for (int a = 0; a < nhosts; a++)
            for (int b = 0; b < nhosts; b++) {
                const size_t ca = (size_t)id * (size_t)nhosts + (size_t)a;
                const size_t cb = (size_t)id * (size_t)nhosts + (size_t)b;
                if (isfinite(in[ca]) && isfinite(out[cb])) add(bs, a, b, in[ca] - out[cb]);
            }
    free(in);
    free(out);
}

/* Moves hosts until no bound is broken (or a pass per host has not managed); returns the
 * bounds still broken. Host 0 (rank 0's) stays at 0. */
static int relax(const bounds *bs, double *delta, int nhosts) {
    for (int pass = 0; pass <= nhosts; pass++) {
        bool moved = false;
        for (int i = 0; i < bs->n; i++) {
            const bound *x = &bs->v[i];
            const double lack = x->need - (delta[x->b] - delta[x->a]);
            if (!(lack > 0)) continue;
            if (x->b != 0) delta[x->b] += lack;
            else delta[x->a] -= lack;
            moved = true;
        }
        if (!moved) return 0;
    }
    int left = 0;
    for (int i = 0; i < bs->n; i++)
        left += bs->v[i].need - (delta[bs->v[i].b] - delta[bs->v[i].a]) > 1e-12;
    return left;
}

void trace_run_fix_clocks(trace_run *r) {
    int *host = mallocCheck(((size_t)r->nranks + 1) * sizeof(int));
    const int nhosts = hosts_of_ranks(r, host);
    free(r->clock_fix);
    r->clock_fix = callocCheck((size_t)r->nranks + 1, sizeof(double));
    r->clock_fix_most = 0;
    r->clock_fix_left = 0;
    if (nhosts > 1) {
        bounds bs = {NULL, 0, 0};
        p2p_bounds(r, host, &bs);
        collective_bounds(r, host, nhosts, &bs);
        double *delta = callocCheck((size_t)nhosts, sizeof(double));
        r->clock_fix_left = relax(&bs, delta, nhosts);
        if (r->clock_fix_left) /* contradicting bounds: no shift can help; draw as measured */
            memset(delta, 0, (size_t)nhosts * sizeof *delta);
        for (int k = 0; k < r->nranks; k++) {
            r->clock_fix[k] = delta[host[k]];
            r->ranks[k]->h.clock_offset += delta[host[k]];
            r->clock_fix_most = fmax(r->clock_fix_most, fabs(delta[host[k]]));
        }
        free(delta);
        free(bs.v);
    }
    free(host);
    trace_run_time_collectives(r);
}
