/* causality.c — is a run's picture physically possible? (trace_run_check_causality, trace.h)
 *
 * Two rules, on rank 0's clock (local time + clock_offset), each with slack for what the
 * clocks cannot know: the two ranks' clock uncertainties plus TRACE_CAUSALITY_EPSILON.
 *
 *   p2p          send on rank a   |──t_start ...                    (posted)
 *                recv on rank b            ... t_end──|             must not end before it
 *   collective   member x enters  |──t_start ...                    (last to enter)
 *                member y's call           ... t_end──|             must not end before it
 *
 * A violation is a clock error (or a recording bug), never physics: a message cannot arrive
 * before it was sent, a reduction cannot finish before its last contribution was offered.
 *
 * Not here: the matching itself (trace_run.c fills flow/coll when the run is read).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "src/core/check.h"
#include "src/trace/trace.h"

/* The earliest violation found so far, and how many there are. */
typedef struct {
    int count, p2p, coll;
    double when; /* rank-0 time of the violating end */
    char what[768];
} violations;

static double offset_of(const trace_run *r, int k) {
    return trace_file_header(r->ranks[k])->clock_offset;
}
static double unc_of(const trace_run *r, int k) {
    return trace_file_header(r->ranks[k])->clock_uncertainty;
}

static void note(violations *v, double when, const char *what) {
    v->count++;
    if (v->count == 1 || when < v->when) {
        v->when = when;
        snprintf(v->what, sizeof v->what, "%s", what);
    }
}

/* For each matched pair: where the send is (rank, event index), by flow id. */
static void check_p2p(const trace_run *r, violations *v) {
    int *send_rank = mallocCheck(((size_t)r->nflows + 1) * sizeof(int));
    size_t *send_idx = mallocCheck(((size_t)r->nflows + 1) * sizeof(size_t));
    for (int f = 0; f < r->nflows; f++) send_rank[f] = -1;
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            int f = r->flow[k][i];
            if (f >= 0 && trace_file_event(r->ranks[k], i)->kind == TRACE_SEND)
                send_rank[f] = k, send_idx[f] = i;
        }
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            const trace_event *rv = trace_file_event(r->ranks[k], i);
            int f = r->flow[k][i];
            if (f < 0 || rv->kind != TRACE_RECV || send_rank[f] < 0) continue;
            int a = send_rank[f];
            const trace_event *sd = trace_file_event(r->ranks[a], send_idx[f]);
            double sent = sd->t_start + offset_of(r, a), got = rv->t_end + offset_of(r, k);
            double slack = unc_of(r, a) + unc_of(r, k) + TRACE_CAUSALITY_EPSILON;
            if (got >= sent - slack) continue;
            char what[768];
            snprintf(what, sizeof what,
                     "rank %d's recv from rank %d (tag %d, group %s, label '%s', step %d) ends at "
                     "%.6f s "
                     "but the send began at %.6f s, %.1f us later (slack %.1f us)",
                     k, a, rv->tag, trace_file_string(r->ranks[k], rv->group),
                     trace_file_string(r->ranks[k], rv->label), rv->step, got, sent,
                     (sent - got) * 1e6, slack * 1e6);
            note(v, got, what);
            v->p2p++;
        }
    free(send_rank);
    free(send_idx);
}

static void check_collectives(const trace_run *r, violations *v) {
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            int c = r->coll[k][i];
            if (c < 0) continue;
            const trace_event *e = trace_file_event(r->ranks[k], i);
            int last = r->coll_last[c];
            double done = e->t_end + offset_of(r, k), entered = r->coll_entered[c];
            double slack = unc_of(r, last) + unc_of(r, k) + TRACE_CAUSALITY_EPSILON;
            if (done >= entered - slack) continue;
            char what[768];
            snprintf(what, sizeof what,
                     "rank %d's %s on group %s of rank %d (label '%s', layer %d, step %d) ends at "
                     "%.6f s "
                     "but rank %d entered it only at %.6f s, %.1f us later (slack %.1f us)",
                     k, trace_file_string(r->ranks[k], e->op),
                     trace_file_string(r->ranks[k], e->group), e->group_first,
                     trace_file_string(r->ranks[k], e->label), e->layer, e->step, done, last,
                     entered, (entered - done) * 1e6, slack * 1e6);
            note(v, done, what);
            v->coll++;
        }
}

bool trace_run_check_causality(const trace_run *r, char *err, size_t errlen) {
    violations v = {0};
    check_p2p(r, &v);
    check_collectives(r, &v);
    if (err && errlen) err[0] = 0;
    if (v.count == 0) return true;
    if (err && errlen)
        snprintf(err, errlen,
                 "trace '%s' is not causal: %d violation%s (%d receive%s ending before the send "
                 "began, %d "
                 "collective%s ending before the last member entered); earliest: %s",
                 r->dir, v.count, v.count == 1 ? "" : "s", v.p2p, v.p2p == 1 ? "" : "s", v.coll,
                 v.coll == 1 ? "" : "s", v.what);
    return false;
}
