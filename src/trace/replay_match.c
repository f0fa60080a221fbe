/* replay_match.c — pass 2 of the replay (see replay.h, replay.c): the collective calls of all
 * ranks grouped into instances (same group name, same group instance, same occurrence on each
 * member; the stream's calls apart from the program's), and what each instance costs: the least
 * transfer over its members, no slower than its bus bytes at the fastest p2p copy, no slower
 * than the lower quartile of its class.
 *
 * Not here: the programs and the simulation (replay.c).
 */
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/trace/replay_internal.h"

enum { CLASS_CALLS = 8 }; /* calls of a class that cap one another (cap_by_class) */

/* ---- pass 2: collective instances ---------------------------------------------------- */

typedef struct {
    const char *group;                       /* name */
    int instance, occurrence, rank, seq, ev; /* seq: position in the rank's start order */
    int stream; /* 1 on the communication stream: matched only with the stream's calls */
} rp_coll;

static int cmp_int(int a, int b) { return a < b ? -1 : a > b; }

/* (group, instance, rank, seq): a rank's collectives on one group instance, in order. */
static int cmp_by_rank(const void *a, const void *b) {
    const rp_coll *x = a, *y = b;
    int c = strcmp(x->group, y->group);
    if (!c) c = cmp_int(x->stream, y->stream);
    if (!c) c = cmp_int(x->instance, y->instance);
    if (!c) c = cmp_int(x->rank, y->rank);
    return c ? c : cmp_int(x->seq, y->seq);
}

static bool same_instance(const rp_coll *x, const rp_coll *y) {
    return strcmp(x->group, y->group) == 0 && x->stream == y->stream &&
           x->instance == y->instance && x->occurrence == y->occurrence;
}

/* (group, instance, occurrence, rank): the members of one collective call side by side. */
static int cmp_by_occurrence(const void *a, const void *b) {
    const rp_coll *x = a, *y = b;
    int c = strcmp(x->group, y->group);
    if (!c) c = cmp_int(x->stream, y->stream);
    if (!c) c = cmp_int(x->instance, y->instance);
    if (!c) c = cmp_int(x->occurrence, y->occurrence);
    return c ? c : cmp_int(x->rank, y->rank);
}

/* The group instance of a collective: its group_first, else a key from the coordinates of
 * the ranks that share the group (see replay.h). Keys from coordinates are offset so they
 * never equal a recorded group_first. */
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

/* Bytes each member of an n-member collective moves over its links (the "bus bytes" of
 * nccl-tests' PERFORMANCE.md): a ring all-reduce sends 2(n-1)/n of the buffer, an
 * all-gather or reduce-scatter (n-1)/n of the whole, anything else the buffer once. */
static double bus_bytes(const char *op, int n, double bytes) {
    if (n <= 1) return 0;
    if (strcmp(op, "all_reduce") == 0) return 2.0 * (n - 1) / n * bytes;
    if (strcmp(op, "all_gather") == 0 || strcmp(op, "reduce_scatter") == 0)
        return (double)(n - 1) / n * bytes;
    return bytes;
}

/* A collective call to match across ranks: not a wait on the stream (stream_of). */
static bool matched(const rp_rank *k, int i) {
    return rp_ev(k, i)->kind == TRACE_COLLECTIVE && k->stream_of[i] < 0;
}

static const rp_inst *cmp_inst_ctx; /* the instances sorted by cmp_class */

/* The size class of a call: bytes within a factor of 2 (0 for none). */
static int size_class(long long bytes) {
    int k = 0;
    while (bytes > 1) bytes >>= 1, k++;
    return k;
}

/* (op, members, size class): the calls of one class side by side. */
static int cmp_class(const void *a, const void *b) {
    const rp_inst *x = &cmp_inst_ctx[*(const int *)a], *y = &cmp_inst_ctx[*(const int *)b];
    int c = strcmp(x->op, y->op);
    if (!c) c = cmp_int(x->members, y->members);
    if (!c) c = cmp_int(size_class(x->bytes), size_class(y->bytes));
    return c;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Every call of a class (op, members, bytes within a factor of 2) of at least CLASS_CALLS
 * calls costs at most the class's lower quartile, each other call's cost scaled up to this
 * call's bytes where it moved fewer (never down): calls of about one size over one group size
 * move their bytes the same way, and what makes some slower is members descheduled in the
 * middle of the ring (a time-shared member stalls each of its steps), which the replay
 * removes. The lower quartile, not the least: a call whose recorded end precedes a member's
 * entry (clock skew) measures too little. Fewer calls (a step's one gradient all-reduce) tell
 * typical from stalled too poorly and keep their own cost. */
static void cap_by_class(rp_inst *inst, int n) {
    int *idx = mallocCheck((size_t)(n + 1) * sizeof *idx);
    double *scaled = mallocCheck((size_t)(n + 1) * sizeof *scaled);
    double *cap = mallocCheck((size_t)(n + 1) * sizeof *cap);
    for (int i = 0; i < n; i++) idx[i] = i;
    cmp_inst_ctx = inst;
    qsort(idx, (size_t)n, sizeof *idx, cmp_class);
    for (int a = 0; a < n;) {
        int b = a + 1;
        while (b < n && cmp_class(&idx[a], &idx[b]) == 0) b++;
        for (int i = a; i < b && b - a >= CLASS_CALLS; i++) {
            const rp_inst *x = &inst[idx[i]];
            for (int j = a; j < b; j++) {
                const rp_inst *y = &inst[idx[j]];
                scaled[j - a] = y->bytes > 0 && x->bytes > y->bytes
                                    ? y->cost * (double)x->bytes / (double)y->bytes
                                    : y->cost;
            }
            qsort(scaled, (size_t)(b - a), sizeof *scaled, cmp_double);
            cap[i] = scaled[(b - a - 1) / 4];
        }
        for (int i = a; i < b && b - a >= CLASS_CALLS; i++)
            if (inst[idx[i]].cost > cap[i]) inst[idx[i]].cost = cap[i];
        a = b;
    }
    free(cap);
    free(scaled);
    free(idx);
}

rp_inst *rp_match_collectives(rp_rank *ks, int nranks, int *ninst) {
    int total = 0;
    for (int r = 0; r < nranks; r++) {
        for (int i = 0; i < ks[r].n; i++) ks[r].inst[i] = -1;
        for (int j = 0; j < ks[r].nkept; j++)
            if (matched(&ks[r], ks[r].order[j])) total++;
    }
    rp_coll *all = mallocCheck((size_t)(total + 1) * sizeof *all);
    int n = 0;
    for (int r = 0; r < nranks; r++) {
        const trace_header *h = trace_file_header(ks[r].f);
        for (int j = 0; j < ks[r].nkept; j++) {
            const int i = ks[r].order[j];
            const trace_event *e = rp_ev(&ks[r], i);
            if (!matched(&ks[r], i)) continue;
            rp_coll c = {trace_file_string(ks[r].f, e->group), 0, 0, r, j, i, rp_on_stream(e)};
            c.instance = group_instance(h, c.group, e);
            all[n++] = c;
        }
    }
    /* The k-th call of a rank on a group instance is its occurrence k. */
    qsort(all, (size_t)n, sizeof *all, cmp_by_rank);
    for (int a = 0; a < n; a++)
        all[a].occurrence = a > 0 && all[a - 1].rank == all[a].rank &&
                                    all[a - 1].instance == all[a].instance &&
                                    all[a - 1].stream == all[a].stream &&
                                    strcmp(all[a - 1].group, all[a].group) == 0
                                ? all[a - 1].occurrence + 1
                                : 0;
    qsort(all, (size_t)n, sizeof *all, cmp_by_occurrence);
    rp_inst *inst = callocCheck((size_t)(n + 1), sizeof *inst);
    int ni = 0;
    for (int a = 0; a < n;) {
        int b = a;
        double cost = -1;
        while (b < n && same_instance(&all[a], &all[b])) {
            double t = rp_transfer(rp_ev(&ks[all[b].rank], all[b].ev));
            if (cost < 0 || t < cost) cost = t;
            ks[all[b].rank].inst[all[b].ev] = ni;
            b++;
        }
        inst[ni].members = b - a;
        inst[ni].cost = cost < 0 ? 0 : cost;
        const rp_rank *k0 = &ks[all[a].rank];
        const trace_event *e0 = rp_ev(k0, all[a].ev);
        inst[ni].op = trace_file_string(k0->f, e0->op);
        inst[ni].bytes = (long long)e0->bytes;
        if (k0->p2p_bandwidth > 0) { /* no slower than its bus bytes at the fastest p2p copy */
            double t = bus_bytes(trace_file_string(k0->f, e0->op), b - a, (double)e0->bytes) /
                       k0->p2p_bandwidth;
            if (t < inst[ni].cost) inst[ni].cost = t;
        }
        ni++;
        a = b;
    }
    free(all);
    cap_by_class(inst, ni);
    *ninst = ni;
    return inst;
}
