/* trace_run.c — a whole run read back (trace_run_read, trace.h): every rank's file from
 * RUN_DIR/trace/, checked to belong together, then the matching of messages across ranks:
 * sends with their receives, and each collective with its other members' part, whose t_ready
 * becomes the moment the last member entered.
 *
 * Not here: reading and checking one file (trace_read.c), the causality check (causality.c),
 * which only reads what the matching left.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/core/check.h"
#include "src/trace/trace.h"
#include "src/trace/trace_file.h"

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Something is there (a regular file or not: trace_file_read names what is wrong with it). */
static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* One p2p endpoint, for pairing: (sender, receiver, tag) then t_start order. */
typedef struct {
    int src, dst, tag;
    double t;
    int rank;
    size_t idx;
} endpoint;

static int endpoint_cmp(const void *a, const void *b) {
    const endpoint *x = a, *y = b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
    if (x->tag != y->tag) return x->tag < y->tag ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The k-th send from A to B with tag T pairs with the k-th receive on B from A with tag T
 * (MPI's non-overtaking rule), both counted in order of t_start. */
static void match_p2p(trace_run *r) {
    size_t ns = 0, nr = 0;
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            trace_kind kind = trace_file_event(r->ranks[k], i)->kind;
            ns += kind == TRACE_SEND;
            nr += kind == TRACE_RECV;
        }
    endpoint *s = mallocCheck(ns * sizeof *s), *v = mallocCheck(nr * sizeof *v);
    ns = nr = 0;
    for (int k = 0; k < r->nranks; k++) {
        r->flow[k] = mallocCheck((trace_file_num_events(r->ranks[k]) + 1) * sizeof(int));
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            const trace_event *e = trace_file_event(r->ranks[k], i);
            r->flow[k][i] = -1;
            if (e->kind == TRACE_SEND) s[ns++] = (endpoint){k, e->peer, e->tag, e->t_start, k, i};
            if (e->kind == TRACE_RECV) v[nr++] = (endpoint){e->peer, k, e->tag, e->t_start, k, i};
        }
    }
    qsort(s, ns, sizeof *s, endpoint_cmp);
    qsort(v, nr, sizeof *v, endpoint_cmp);
    size_t i = 0, j = 0;
    int matched = 0;
    while (i < ns && j < nr) {
        endpoint a = s[i], b = v[j];
        int key = a.src != b.src   ? (a.src < b.src ? -1 : 1)
                  : a.dst != b.dst ? (a.dst < b.dst ? -1 : 1)
                  : a.tag != b.tag ? (a.tag < b.tag ? -1 : 1)
                                   : 0;
        if (key < 0) i++;
        else if (key > 0) j++;
        else {
            r->flow[a.rank][a.idx] = r->flow[b.rank][b.idx] = r->nflows++;
            matched += 2;
            i++, j++;
        }
    }
    r->unmatched = (int)(ns + nr) - matched;
    free(s);
    free(v);
}

/* One collective event, for matching: (group name, lane, group instance, rank) then t_start
 * order. The communication stream's calls (TRACE_STREAM) run on a communicator of their own,
 * so they are matched apart from the program's. */
typedef struct {
    const char *group;
    int stream, instance, rank;
    double t;
    size_t idx;
} coll_entry;

static bool same_instance(const coll_entry *x, const coll_entry *y) {
    return strcmp(x->group, y->group) == 0 && x->stream == y->stream && x->instance == y->instance;
}

/* The group instance of a collective: its group_first, else (traces written before it was
 * recorded) a key from the coordinates of the ranks that share the group, offset so it never
 * equals a recorded group_first: "tp" = same (pp, dp), "dp" = same (tp, pp), "pp" and
 * "embedding" = same (tp, dp), "mp" = same dp, any other name = all ranks. */
static int group_instance(const trace_header *h, const char *group, const trace_event *e) {
    if (e->group_first >= 0) return e->group_first;
    const int dp = trace_header_dp_cp_size(h), dp_rank = trace_header_dp_cp_rank(h);
    int key = 0;
    if (strcmp(group, "tp") == 0) key = h->pp_rank * dp + dp_rank;
    else if (strcmp(group, "dp") == 0) key = h->tp_rank * h->pp + h->pp_rank;
    else if (strcmp(group, "pp") == 0 || strcmp(group, "embedding") == 0)
        key = h->tp_rank * dp + dp_rank;
    else if (strcmp(group, "mp") == 0) key = dp_rank;
    return h->world_size + key;
}

static int coll_entry_cmp(const void *a, const void *b) {
    const coll_entry *x = a, *y = b;
    int c = strcmp(x->group, y->group);
    if (c) return c;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->instance != y->instance) return x->instance < y->instance ? -1 : 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* How many members a group of this name has in the layout of h; -1 for names not known. */
static int group_size_of(const char *name, const trace_header *h) {
    if (strcmp(name, "tp") == 0) return h->tp;
    if (strcmp(name, "pp") == 0) return h->pp;
    if (strcmp(name, "dp") == 0) return h->dp;
    if (strcmp(name, "mp") == 0) return h->tp * h->pp;
    if (strcmp(name, "embedding") == 0) return h->pp == 1 ? 1 : 2;
    if (strcmp(name, "world") == 0) return h->world_size;
    return -1;
}

/* The k-th collective of a group instance on each member is one call (MPI runs the
 * collectives of a communicator in the same order on every member). Entries of one
 * instance are contiguous after sorting, rank by rank:
 *
 *   e:  [ rank 2: c0 c1 c2 | rank 3: c0 c1 c2 ]     members 2, count 3
 *   call k = { rank 2's c_k, rank 3's c_k }, entered at max(t_start + clock_offset)
 */
static void match_collectives(trace_run *r) {
    size_t n = 0;
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < r->ranks[k]->n; i++)
            n += r->ranks[k]->ev[i].kind == TRACE_COLLECTIVE;
    coll_entry *e = mallocCheck((n + 1) * sizeof *e);
    n = 0;
    for (int k = 0; k < r->nranks; k++) {
        trace_file *f = r->ranks[k];
        r->coll[k] = mallocCheck((f->n + 1) * sizeof(int));
        for (size_t i = 0; i < f->n; i++) {
            const trace_event *ev = &f->ev[i];
            r->coll[k][i] = -1;
            if (ev->kind != TRACE_COLLECTIVE || trace_file_is_stream_wait(f, i))
                continue; /* a wait is the program's, not a call */
            const char *group = trace_file_string(f, ev->group);
            e[n++] = (coll_entry){.group = group,
                                  .stream = (ev->flags & TRACE_STREAM) != 0,
                                  .instance = group_instance(&f->h, group, ev),
                                  .rank = k,
                                  .t = ev->t_start,
                                  .idx = i};
        }
    }
    qsort(e, n, sizeof *e, coll_entry_cmp);
    r->coll_entered = mallocCheck((n + 1) * sizeof(double));
    r->coll_last = mallocCheck((n + 1) * sizeof(int));
    const trace_header *h0 = trace_file_header(r->ranks[0]);
    for (size_t a = 0; a < n;) {
        size_t b = a; /* e[a, b): one instance */
        while (b < n && same_instance(&e[b], &e[a])) b++;
        int members = 0;
        size_t count = 0;
        bool agree = true;
        for (size_t m = a; m < b;) { /* e[m, m2): one member's calls */
            size_t m2 = m;
            while (m2 < b && e[m2].rank == e[m].rank) m2++;
            if (members++ == 0) count = m2 - m;
            else if (m2 - m != count) agree = false;
            m = m2;
        }
        int want = group_size_of(e[a].group, h0);
        if (!agree || (want >= 0 && members != want)) {
            r->coll_unmatched += (int)(b - a);
            a = b;
            continue;
        }
        for (size_t k = 0; k < count; k++) {
            int id = r->ncolls++;
            for (int m = 0; m < members; m++) {
                const coll_entry *x = &e[a + (size_t)m * count + k];
                r->coll[x->rank][x->idx] = id;
            }
        }
        a = b;
    }
    free(e);
}

void trace_run_time_collectives(trace_run *r) {
    for (int id = 0; id < r->ncolls; id++) r->coll_entered[id] = -INFINITY, r->coll_last[id] = -1;
    for (int k = 0; k < r->nranks; k++) { /* when the last member entered, on rank 0's clock */
        const double off = r->ranks[k]->h.clock_offset;
        for (size_t i = 0; i < r->ranks[k]->n; i++) {
            const int id = r->coll[k][i];
            const double entered = r->ranks[k]->ev[i].t_start + off;
            if (id >= 0 && entered > r->coll_entered[id])
                r->coll_entered[id] = entered, r->coll_last[id] = k;
        }
    }
    for (int k = 0; k < r->nranks; k++) { /* ... and on each member's own clock */
        const double off = r->ranks[k]->h.clock_offset;
        for (size_t i = 0; i < r->ranks[k]->n; i++) {
            if (r->coll[k][i] < 0) continue;
            trace_event *ev = &r->ranks[k]->ev[i];
            const double ready = r->coll_entered[r->coll[k][i]] - off;
            ev->t_ready = ready < ev->t_start ? ev->t_start : ready > ev->t_end ? ev->t_end : ready;
        }
    }
}

trace_run *trace_run_read(const char *run_dir, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!is_dir(run_dir)) {
        snprintf(err, errlen, "run directory '%s' does not exist", run_dir);
        return NULL;
    }
    /* RUN_DIR/trace/rank<k>.trace, or RUN_DIR itself when it is the trace directory. */
    char tdir[4096 + 8], path[4096 + 64];
    snprintf(tdir, sizeof tdir, "%s/trace", run_dir);
    if (!is_dir(tdir)) snprintf(tdir, sizeof tdir, "%s", run_dir);
    snprintf(path, sizeof path, "%s/rank0.trace", tdir);
    if (!exists(path)) {
        snprintf(err, errlen,
                 "run directory '%s' has no trace/rank0.trace (was it trained with tracing on?)",
                 run_dir);
        return NULL;
    }
    trace_file *first = trace_file_read(path, err, errlen);
    if (!first) return NULL;
    const trace_header h0 = *trace_file_header(first);

    trace_run *r = callocCheck(1, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", run_dir);
    r->nranks = h0.world_size;
    r->ranks = callocCheck((size_t)r->nranks, sizeof *r->ranks);
    r->flow = callocCheck((size_t)r->nranks, sizeof *r->flow);
    r->coll = callocCheck((size_t)r->nranks, sizeof *r->coll);
    r->ranks[0] = first;
    for (int k = 1; k < r->nranks; k++) {
        snprintf(path, sizeof path, "%s/rank%d.trace", tdir, k);
        if (!exists(path)) {
            snprintf(err, errlen, "trace '%s' is missing (rank 0's header says world size %d)",
                     path, r->nranks);
            trace_run_free(r);
            return NULL;
        }
        r->ranks[k] = trace_file_read(path, err, errlen);
        if (!r->ranks[k]) {
            trace_run_free(r);
            return NULL;
        }
        const trace_header *h = trace_file_header(r->ranks[k]);
        if (h->rank != k || h->world_size != h0.world_size || h->tp != h0.tp || h->pp != h0.pp ||
            h->dp != h0.dp || h->vpp != h0.vpp || h->cp != h0.cp || h->ep != h0.ep ||
            strcmp(h->schedule, h0.schedule) != 0 || strcmp(h->run_id, h0.run_id) != 0) {
            snprintf(err, errlen,
                     "trace '%s' does not belong with rank0.trace (it says rank %d of %d, tp %d cp "
                     "%d pp %d dp %d ep %d vpp %d '%s', run '%s'; rank 0 says world %d, tp %d cp "
                     "%d pp %d dp %d ep %d vpp %d '%s', run '%s')",
                     path, h->rank, h->world_size, h->tp, h->cp, h->pp, h->dp, h->ep, h->vpp,
                     h->schedule, h->run_id, h0.world_size, h0.tp, h0.cp, h0.pp, h0.dp, h0.ep,
                     h0.vpp, h0.schedule, h0.run_id);
            trace_run_free(r);
            return NULL;
        }
    }
    match_p2p(r);
    match_collectives(r);
    trace_run_fix_clocks(r); /* and times the collectives (trace_run_time_collectives) */
    return r;
}

void trace_run_free(trace_run *r) {
    if (!r) return;
    for (int k = 0; k < r->nranks; k++) {
        if (r->ranks) trace_file_free(r->ranks[k]);
        if (r->flow) free(r->flow[k]);
        if (r->coll) free(r->coll[k]);
    }
    free(r->ranks);
    free(r->flow);
    free(r->coll);
    free(r->coll_entered);
    free(r->coll_last);
    free(r->clock_fix);
    free(r);
}
