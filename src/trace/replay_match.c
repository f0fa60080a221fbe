/* replay_match.c — pass 2 of the replay (see replay.h, replay.c): the collective calls of all
 * ranks as instances — the calls trace_run_read matched (trace.h: one rule for the wall view
 * and the replay), each unmatched call an instance of its own — and what each instance costs:
 * the least transfer over its members, no slower than its bus bytes at the fastest p2p copy,
 * no slower than the lower quartile of its class.
 *
 * Not here: the programs and the simulation (replay.c).
 */
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/trace/replay_internal.h"

enum { CLASS_CALLS = 8 }; /* calls of a class that cap one another (cap_by_class) */

/* ---- pass 2: collective instances ---------------------------------------------------- */

static int cmp_int(int a, int b) { return a < b ? -1 : a > b; }

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

/* A collective call the replay runs: not a wait on the stream (stream_of). */
static bool is_call(const rp_rank *k, int i) {
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

/* A new instance for rank k's call i, its first member. */
static int new_instance(rp_inst *inst, int *ni, const rp_rank *k, int i) {
    const trace_event *e = rp_ev(k, i);
    inst[*ni] = (rp_inst){
        .cost = -1, .op = trace_file_string(k->f, e->op), .bytes = (long long)e->bytes};
    return (*ni)++;
}

rp_inst *rp_match_collectives(const trace_run *r, rp_rank *ks, int *ninst) {
    int total = 0;
    for (int q = 0; q < r->nranks; q++)
        for (int j = 0; j < ks[q].nkept; j++) total += is_call(&ks[q], ks[q].order[j]);
    rp_inst *inst = callocCheck((size_t)(total + 1), sizeof *inst);
    int *of_call = mallocCheck((size_t)(r->ncolls + 1) * sizeof *of_call); /* call -> inst */
    for (int c = 0; c < r->ncolls; c++) of_call[c] = -1;
    int ni = 0;
    for (int q = 0; q < r->nranks; q++) {
        rp_rank *k = &ks[q];
        for (int i = 0; i < k->n; i++) k->inst[i] = -1;
        for (int j = 0; j < k->nkept; j++) {
            const int i = k->order[j], c = r->coll[q][i];
            if (!is_call(k, i)) continue;
            /* a call trace_run_read could not match runs alone, on its own transfer */
            int id = c < 0 ? new_instance(inst, &ni, k, i) : of_call[c];
            if (id < 0) id = of_call[c] = new_instance(inst, &ni, k, i);
            const double t = rp_transfer(rp_ev(k, i));
            if (inst[id].cost < 0 || t < inst[id].cost) inst[id].cost = t;
            inst[id].members++;
            k->inst[i] = id;
        }
    }
    const double bw = ks[0].p2p_bandwidth;      /* the run's fastest p2p copy (0: none measured) */
    for (int id = 0; id < ni && bw > 0; id++) { /* no slower than its bus bytes at that speed */
        const double t = bus_bytes(inst[id].op, inst[id].members, (double)inst[id].bytes) / bw;
        if (t < inst[id].cost) inst[id].cost = t;
    }
    free(of_call);
    cap_by_class(inst, ni);
    *ninst = ni;
    return inst;
}
