/* replay.c — re-times a run as if each rank had its own core. See replay.h for the model.
 *
 * Three passes:
 *   1. per rank, the events sorted by start (longer first on ties) become a tree: an event
 *      whose interval lies inside a compute event's is its child. The tree is flattened into
 *      a small program of ops: BEGIN e, ADVANCE dt, COMM e, MEMORY e, END e;
 *   2. collectives of all ranks are grouped into instances (same group name, same group
 *      instance, same occurrence count on each member);
 *   3. the ranks' programs run as a discrete-event simulation: every rank advances until it
 *      reaches a receive whose send has not been posted or a collective some member has not
 *      reached; a sweep that moves no rank while some have ops left is a deadlock.
 *
 * Why these estimates.
 *   Own time. The thread CPU clock counts what the rank ran, children included. A child with
 *   a CPU time of its own (a nested compute event, or a message: comm reports the CPU spent in
 *   the call) is subtracted exactly. A child without one (older traces) spun or slept for its
 *   wall time; the rank got some share of a
 *   core meanwhile, and the only share we know is the parent's overall cpu / wall, so the
 *   child is charged wall × share. With one core per rank the share is 1 and this is exact.
 *   Transfer. A receive records when the data was there (t_ready) and when it was copied
 *   (t_end): the copy is the transfer, the time before it was waiting, which the replay
 *   recomputes from the sender. A collective's t_ready is set by trace_run_read to when its
 *   last member entered; where it could not be matched (t_ready = t_start) each member's
 *   duration includes waiting for the others, and the member that arrived last waited least,
 *   so the least duration over the members is the best measured transfer.
 *   A cpu, when known, bounds the transfer (a descheduled copy is no slower in the replay).
 *   But a p2p copy can itself wait: with Open MPI's shared memory and no single-copy
 *   mechanism, a large message moves in fragments only while the sender is inside MPI, and a
 *   time-shared sender comes back late. So a send or receive is also capped at bytes / the
 *   fastest copy the run measured (bytes / (t_end - t_ready) over its matched receives): the
 *   speed the transport showed it can reach when nobody waits. A collective is capped the same
 *   way at its bus bytes (nccl-tests' rule: a ring all-reduce moves 2(n-1)/n of the buffer per
 *   member) over that speed: its members, time-shared, also wait for each other inside it.
 *
 * The replayed run is written with the ordinary recorder into a temporary directory and read
 * back with trace_run_read(), so it is checked and paired exactly like a recorded run; the
 * files are removed before returning.
 *
 * Not here: drawing, MPI, the file format.
 */
#include "src/trace/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/check.h"

enum { OP_BEGIN, OP_END, OP_ADVANCE, OP_COMM, OP_MEMORY, OP_ISSUE };
enum { CLASS_CALLS = 8 }; /* calls of a class that cap one another (cap_by_class) */

typedef struct {
    int type;
    int ev;    /* event index in the rank's file (all but ADVANCE) */
    double dt; /* ADVANCE */
} rp_op;

typedef struct {
    int n, cap;
    rp_op *ops;
} rp_program;

typedef struct { /* one rank during the replay */
    const trace_file *f;
    int n;                /* events */
    int nkept;            /* events replayed (all but TRACE_OPEN and TRACE_STREAM ones) */
    int *order;           /* (nkept) their indices, by start time */
    double *t0, *tr, *t1; /* (n) replayed times */
    int *inst;            /* (n) collective instance, -1 otherwise */
    int *stream_of;       /* (n) for the main lane's wait on a stream collective: that
                             collective's index, -1 otherwise */
    double *at;           /* (n) where the event begins in the program: its start, but a
                             stream collective's issue (no later than its wait) */
    rp_program prog;
    int piece_end; /* where the program's last piece of compute ends (an op index) */
    int pc;        /* next op */
    bool arrived;  /* the collective at pc has registered its arrival */
    double now;    /* the rank's replay clock */
    /* the communication stream: collectives issued by the program, run in issue order */
    int *queue, head, tail; /* (n) issued, not yet finished: queue[head..tail) */
    double *issued;         /* (n) replayed time each stream collective was issued */
    bool *finished;         /* (n) a stream collective's replayed end is known */
    bool stream_arrived;    /* the collective at the queue's head has registered its arrival */
    double stream_now;      /* the stream's clock: when its previous collective ended */
    double p2p_bandwidth;   /* bytes per second of the fastest measured p2p copy, 0 unknown */
} rp_rank;

typedef struct { /* one collective instance */
    int members, arrived;
    double latest, cost;
    const char *op; /* its class: op, bytes and members */
    long long bytes;
} rp_inst;

static const trace_event *ev(const rp_rank *k, int i) { return trace_file_event(k->f, (size_t)i); }
static double wall(const trace_event *e) { return e->t_end - e->t_start; }
static bool is_comm(trace_kind k) {
    return k == TRACE_SEND || k == TRACE_RECV || k == TRACE_COLLECTIVE;
}
static bool on_stream(const trace_event *e) { return (e->flags & TRACE_STREAM) != 0; }
/* Where event i ends in the program: a stream collective is a point, its issue (it ran beside
 * the program, which only started it). */
static double at_end(const rp_rank *k, int i) {
    return on_stream(ev(k, i)) ? k->at[i] : ev(k, i)->t_end;
}

/* Puts an op at position `at` of the program (at == p->n: at its end). */
static void emit_at(rp_program *p, int at, int type, int e, double dt) {
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 256;
        p->ops = realloc(p->ops, (size_t)p->cap * sizeof *p->ops);
        CHECK(p->ops, "out of memory growing a replay program");
    }
    memmove(p->ops + at + 1, p->ops + at, (size_t)(p->n - at) * sizeof *p->ops);
    p->ops[at] = (rp_op){type, e, dt};
    p->n++;
}
static void emit(rp_program *p, int type, int e, double dt) { emit_at(p, p->n, type, e, dt); }

/* The part of a communication event after its data was there, capped by its cpu if known. */
static double transfer(const trace_event *e) {
    double t = e->t_end - (e->t_ready > e->t_start ? e->t_ready : e->t_start);
    if (t < 0) t = 0;
    if (e->cpu >= 0 && e->cpu < t) t = e->cpu;
    return t;
}

static const rp_rank *cmp_rank_ctx; /* qsort has no context argument in C11: the rank sorted */

/* Start order. Ties: of two spans the longer first (it contains the other: a step and its
 * first forward); with a zero-length event, the order of recording (a send that ends a
 * forward was recorded before the next forward began, at the same clock reading). Recording
 * order is start order on one thread: compute events take their slot when they begin,
 * communication events, which contain nothing, when they end. */
static int cmp_start(const void *a, const void *b) {
    const int i = *(const int *)a, j = *(const int *)b;
    const rp_rank *k = cmp_rank_ctx;
    const double xs = k->at[i], ys = k->at[j], xe = at_end(k, i), ye = at_end(k, j);
    if (xs != ys) return xs < ys ? -1 : 1;
    /* an issue at the end of a piece of compute comes before what begins there */
    const bool xp = on_stream(ev(k, i)), yp = on_stream(ev(k, j));
    if (xp != yp) return xp ? -1 : 1;
    if (xe > xs && ye > ys && xe != ye) return xe > ye ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* An ADVANCE of dt inside event x; one of compute (not a step's untraced gap) that lasts is
 * where a stream collective after it is issued (the analysis's step graph hands off there
 * too, src/analyze/step_graph.c: both views re-time a step alike). */
static void advance_op(rp_rank *k, const trace_event *x, double dt) {
    emit(&k->prog, OP_ADVANCE, -1, dt);
    if (x->kind != TRACE_STEP && dt > 0) k->piece_end = k->prog.n;
}

/* Emits the ops of event e (a compute event or a step) and of everything nested in it.
 * children[] lists, in start order, the events whose parent is e (first_child/next_sib). */
static void walk(rp_rank *k, int e, const int *first_child, const int *next_sib) {
    const trace_event *x = ev(k, e);
    if (on_stream(x)) { /* issued when the last piece of compute before it ended */
        emit_at(&k->prog, k->piece_end, OP_ISSUE, e, 0);
        k->piece_end++;
        return;
    }
    if (x->kind == TRACE_MEMORY || is_comm(x->kind)) {
        emit(&k->prog, x->kind == TRACE_MEMORY ? OP_MEMORY : OP_COMM, e, 0);
        return;
    }
    /* Own wall time = the gaps between children; own replay time from the CPU clock. */
    double own_wall = 0, child_cpu = 0, prev = x->t_start;
    const double share = x->cpu >= 0 && wall(x) > 0 ? (x->cpu < wall(x) ? x->cpu / wall(x) : 1.0)
                                                    : 1.0;
    for (int c = first_child[e]; c >= 0; c = next_sib[c]) {
        const trace_event *y = ev(k, c);
        if (on_stream(y)) continue; /* a point: the issue; its time is the stream's */
        if (y->t_start > prev) own_wall += y->t_start - prev;
        if (y->t_end > prev) prev = y->t_end;
        child_cpu += y->cpu >= 0 ? y->cpu : wall(y) * share;
    }
    if (x->t_end > prev) own_wall += x->t_end - prev;
    double own = own_wall;
    if (x->cpu >= 0) {
        own = x->cpu - child_cpu;
        if (own < 0) own = 0;
        if (own > own_wall) own = own_wall;
    }
    const double scale = own_wall > 0 ? own / own_wall : 0;
    emit(&k->prog, OP_BEGIN, e, 0);
    prev = x->t_start;
    for (int c = first_child[e]; c >= 0; c = next_sib[c]) {
        if (k->at[c] > prev) advance_op(k, x, (k->at[c] - prev) * scale);
        walk(k, c, first_child, next_sib);
        if (at_end(k, c) > prev) prev = at_end(k, c);
    }
    if (x->t_end > prev) advance_op(k, x, (x->t_end - prev) * scale);
    emit(&k->prog, OP_END, e, 0);
}

/* Pass 1 for one rank: order, tree, program. */
static void build_program(rp_rank *k) {
    const int n = k->n;
    int m = 0;
    /* A communication stream's collectives (TRACE_STREAM) ran beside the rank's program: in
     * it they are points, where the program issued them (OP_ISSUE); the main lane's "wait"
     * recorded right after one (run.c's stream hook) waits for that collective. */
    for (int i = 0; i < n; i++) {
        const trace_event *e = ev(k, i);
        if (!(e->flags & TRACE_OPEN)) k->order[m++] = i;
        k->stream_of[i] = -1;
        k->at[i] = e->t_start;
        if (i > 0 && e->kind == TRACE_COLLECTIVE && !on_stream(e) && on_stream(ev(k, i - 1)) &&
            strcmp(trace_file_string(k->f, e->op), "wait") == 0) {
            k->stream_of[i] = i - 1;
            if (e->t_start < k->at[i - 1]) k->at[i - 1] = e->t_start;
        }
    }
    k->nkept = m;
    cmp_rank_ctx = k;
    qsort(k->order, (size_t)m, sizeof *k->order, cmp_start);

    int *stack = mallocCheck((size_t)(n + 1) * sizeof *stack), depth = 0;
    int *first_child = mallocCheck((size_t)(n + 1) * sizeof *first_child);
    int *last_child = mallocCheck((size_t)(n + 1) * sizeof *last_child);
    int *next_sib = mallocCheck((size_t)(n + 1) * sizeof *next_sib);
    for (int i = 0; i <= n; i++) first_child[i] = last_child[i] = next_sib[i] = -1;
    const int root = n; /* a virtual parent of the top-level events */
    for (int j = 0; j < m; j++) {
        const int e = k->order[j];
        const trace_event *x = ev(k, e);
        while (depth > 0) { /* pop the events that do not contain e */
            const trace_event *top = ev(k, stack[depth - 1]);
            if (k->at[e] >= top->t_start && at_end(k, e) <= top->t_end) break;
            depth--;
        }
        const int p = depth > 0 ? stack[depth - 1] : root;
        if (last_child[p] < 0) first_child[p] = e;
        else next_sib[last_child[p]] = e;
        last_child[p] = e;
        if (!is_comm(x->kind) && x->kind != TRACE_MEMORY) stack[depth++] = e;
    }
    /* Top level: one event after the other, the time between them is not replayed. */
    for (int c = first_child[root]; c >= 0; c = next_sib[c]) walk(k, c, first_child, next_sib);
    free(stack);
    free(first_child);
    free(last_child);
    free(next_sib);
}

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
    return ev(k, i)->kind == TRACE_COLLECTIVE && k->stream_of[i] < 0;
}

static const rp_inst *cmp_inst_ctx; /* the instances sorted by cmp_class */

/* (op, bytes, members, cost): the calls of one class side by side, cheapest first. */
static int cmp_class(const void *a, const void *b) {
    const rp_inst *x = &cmp_inst_ctx[*(const int *)a], *y = &cmp_inst_ctx[*(const int *)b];
    int c = strcmp(x->op, y->op);
    if (!c) c = x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
    if (!c) c = cmp_int(x->members, y->members);
    if (!c) c = x->cost < y->cost ? -1 : x->cost > y->cost;
    return c;
}

/* Every call of a class (op, bytes, members) of at least CLASS_CALLS calls costs at most the
 * class's lower quartile: calls of one size over one group size move the same bytes the same
 * way, and what makes some slower is members descheduled in the middle of the ring (a
 * time-shared member stalls each of its steps), which the replay removes. The lower quartile,
 * not the least: a call whose recorded end precedes a member's entry (clock skew) measures
 * too little. Fewer calls (a step's one gradient all-reduce) tell typical from stalled too
 * poorly and keep their own cost. */
static void cap_by_class(rp_inst *inst, int n) {
    int *idx = mallocCheck((size_t)(n + 1) * sizeof *idx);
    for (int i = 0; i < n; i++) idx[i] = i;
    cmp_inst_ctx = inst;
    qsort(idx, (size_t)n, sizeof *idx, cmp_class);
    for (int a = 0; a < n;) {
        const rp_inst *x = &inst[idx[a]];
        int b = a;
        while (b < n && strcmp(inst[idx[b]].op, x->op) == 0 && inst[idx[b]].bytes == x->bytes &&
               inst[idx[b]].members == x->members)
            b++;
        const double q = inst[idx[a + (b - a - 1) / 4]].cost;
        for (int j = a; j < b && b - a >= CLASS_CALLS; j++)
            if (inst[idx[j]].cost > q) inst[idx[j]].cost = q;
        a = b;
    }
    free(idx);
}

/* Fills k[*].inst and returns the instances (*ninst of them). */
static rp_inst *match_collectives(rp_rank *ks, int nranks, int *ninst) {
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
            const trace_event *e = ev(&ks[r], i);
            if (!matched(&ks[r], i)) continue;
            rp_coll c = {trace_file_string(ks[r].f, e->group), 0, 0, r, j, i, on_stream(e)};
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
            double t = transfer(ev(&ks[all[b].rank], all[b].ev));
            if (cost < 0 || t < cost) cost = t;
            ks[all[b].rank].inst[all[b].ev] = ni;
            b++;
        }
        inst[ni].members = b - a;
        inst[ni].cost = cost < 0 ? 0 : cost;
        const rp_rank *k0 = &ks[all[a].rank];
        const trace_event *e0 = ev(k0, all[a].ev);
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

/* ---- pass 3: the simulation ------------------------------------------------------------ */

/* A send or receive's transfer: what it measured, and no more than its bytes at the fastest
 * p2p copy the run measured (a copy that waited for the sender to come back into MPI, which
 * a time-shared sender does late, measured that wait too). */
static double p2p_cost(const rp_rank *k, const trace_event *e) {
    double t = transfer(e);
    if (k->p2p_bandwidth > 0 && (double)e->bytes / k->p2p_bandwidth < t)
        t = (double)e->bytes / k->p2p_bandwidth;
    return t;
}

/* The fastest copy of any matched receive of the run, in bytes per second (0: none measured). */
static double fastest_p2p(const trace_run *r) {
    double best = 0;
    for (int q = 0; q < r->nranks; q++)
        for (size_t i = 0; i < trace_file_num_events(r->ranks[q]); i++) {
            const trace_event *e = trace_file_event(r->ranks[q], i);
            const double t = transfer(e);
            if (e->kind != TRACE_RECV || r->flow[q][i] < 0 || e->bytes == 0 || t <= 0) continue;
            if ((double)e->bytes / t > best) best = (double)e->bytes / t;
        }
    return best;
}

/* Runs rank k until it blocks or ends; returns whether it moved. post[flow] = replayed start
 * of each matched send (-1 not yet). */
static bool advance(rp_rank *k, const int *flow, double *post, rp_inst *inst) {
    bool moved = false;
    while (k->pc < k->prog.n) {
        const rp_op *op = &k->prog.ops[k->pc];
        if (op->type == OP_ADVANCE) {
            k->now += op->dt;
        } else if (op->type == OP_BEGIN) {
            k->t0[op->ev] = k->tr[op->ev] = k->now;
        } else if (op->type == OP_END) {
            k->t1[op->ev] = k->now;
        } else if (op->type == OP_MEMORY) {
            k->t0[op->ev] = k->tr[op->ev] = k->t1[op->ev] = k->now;
        } else if (op->type == OP_ISSUE) { /* handed to the stream: the program goes on */
            k->issued[op->ev] = k->now;
            k->queue[k->tail++] = op->ev;
        } else { /* OP_COMM */
            const int i = op->ev;
            const trace_event *e = ev(k, i);
            const int s = k->stream_of[i];
            if (s >= 0) { /* a wait on the stream: until its collective ends */
                if (!k->finished[s]) break;
                k->t0[i] = k->now;
                if (k->t1[s] > k->now) k->now = k->t1[s];
                k->tr[i] = k->now;
            } else if (e->kind == TRACE_SEND) {
                k->t0[i] = k->tr[i] = k->now;
                if (flow[i] >= 0) post[flow[i]] = k->now;
                k->now += p2p_cost(k, e);
            } else if (e->kind == TRACE_RECV) {
                if (flow[i] >= 0 && post[flow[i]] < 0) break; /* the send is not posted yet */
                k->t0[i] = k->now;
                if (flow[i] >= 0 && post[flow[i]] > k->now) k->now = post[flow[i]];
                k->tr[i] = k->now;
                k->now += p2p_cost(k, e);
            } else {
                rp_inst *c = &inst[k->inst[i]];
                if (!k->arrived) {
                    k->arrived = true;
                    k->t0[i] = k->now;
                    c->arrived++;
                    if (k->now > c->latest) c->latest = k->now;
                    moved = true;
                }
                if (c->arrived < c->members) break; /* a member has not reached it yet */
                k->tr[i] = c->latest;
                k->now = c->latest + c->cost;
                k->arrived = false;
            }
            k->t1[i] = k->now;
        }
        k->pc++;
        moved = true;
    }
    return moved;
}

/* Runs rank k's stream: each issued collective starts when it was issued and the stream is
 * free, and ends like any collective, at its last member's arrival + its transfer. Returns
 * whether it moved. */
static bool advance_stream(rp_rank *k, rp_inst *inst) {
    bool moved = false;
    while (k->head < k->tail) {
        const int i = k->queue[k->head];
        rp_inst *c = &inst[k->inst[i]];
        if (!k->stream_arrived) {
            k->stream_arrived = true;
            k->t0[i] = k->issued[i] > k->stream_now ? k->issued[i] : k->stream_now;
            c->arrived++;
            if (k->t0[i] > c->latest) c->latest = k->t0[i];
            moved = true;
        }
        if (c->arrived < c->members) break;
        k->tr[i] = c->latest;
        k->t1[i] = k->stream_now = c->latest + c->cost;
        k->finished[i] = true;
        k->stream_arrived = false;
        k->head++;
        moved = true;
    }
    return moved;
}

/* One line naming where the first stuck rank waits. */
static void explain_deadlock(const trace_run *r, const rp_rank *ks, char *err, size_t errlen) {
    for (int q = 0; q < r->nranks; q++) {
        const rp_rank *k = &ks[q];
        if (k->pc >= k->prog.n && k->head >= k->tail) continue;
        const bool stream = k->pc >= k->prog.n ||
                            (k->stream_of[k->prog.ops[k->pc].ev] >= 0 && k->head < k->tail);
        const int i = stream ? k->queue[k->head] : k->prog.ops[k->pc].ev;
        const trace_event *e = ev(k, i);
        if (stream)
            snprintf(err, errlen,
                     "replay deadlock: rank %d's communication stream waits at its event %d (%s "
                     "on group %s) for a member that never reaches it",
                     q, i, trace_file_string(k->f, e->op), trace_file_string(k->f, e->group));
        else if (e->kind == TRACE_RECV)
            snprintf(err, errlen,
                     "replay deadlock: rank %d waits at its event %d (recv from rank %d, tag %d, "
                     "group %s) for its matched send, which rank %d never reaches in the replay",
                     q, i, e->peer, e->tag, trace_file_string(k->f, e->group), e->peer);
        else
            snprintf(err, errlen,
                     "replay deadlock: rank %d waits at its event %d (%s %s on group %s) for a "
                     "member that never reaches it",
                     q, i, trace_file_string(k->f, e->op), trace_kind_name(e->kind),
                     trace_file_string(k->f, e->group));
        return;
    }
}

/* Writes the replayed events of every rank under dir/trace/ with the ordinary recorder. */
static void write_replayed(const trace_run *r, const rp_rank *ks, const char *dir) {
    for (int q = 0; q < r->nranks; q++) {
        const rp_rank *k = &ks[q];
        trace_header h = *trace_file_header(k->f);
        h.clock_offset = 0;
        h.clock_uncertainty = 0;
        char id[sizeof h.run_id];
        snprintf(id, sizeof id, "%s%s", TRACE_REPLAY_ID_PREFIX, h.run_id);
        memcpy(h.run_id, id, sizeof h.run_id);
        trace_recorder *t = trace_create(&h, (size_t)k->n + 1);
        for (int j = 0; j < k->nkept; j++) {
            const int i = k->order[j];
            const trace_event *e = ev(k, i);
            if (e->kind == TRACE_MEMORY) {
                trace_memory_at(t, (size_t)e->bytes, k->t0[i]);
            } else if (is_comm(e->kind)) {
                const char *label = e->label >= 0 ? trace_file_string(k->f, e->label) : NULL;
                trace_comm_info ci = {e->kind,
                                      trace_file_string(k->f, e->op),
                                      trace_file_string(k->f, e->group),
                                      label,
                                      e->peer,
                                      e->tag,
                                      e->layer,
                                      e->group_first,
                                      (size_t)e->bytes,
                                      k->t0[i],
                                      k->tr[i],
                                      k->t1[i],
                                      k->t1[i] - k->tr[i]};
                if (on_stream(e)) trace_comm_stream(t, &ci);
                else trace_comm_full(t, &ci);
            } else {
                trace_record(t, e->kind, e->step, e->microbatch, e->chunk, k->t0[i], k->t1[i]);
            }
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, q);
        trace_write(t, path);
        trace_destroy(t);
    }
}

trace_run *trace_run_replay(const trace_run *r, char *err, size_t errlen) {
    if (errlen) err[0] = 0;
    const int nr = r->nranks;
    rp_rank *ks = callocCheck((size_t)nr, sizeof *ks);
    int nflows = r->nflows;
    const double bandwidth = fastest_p2p(r);
    for (int q = 0; q < nr; q++) {
        rp_rank *k = &ks[q];
        k->f = r->ranks[q];
        k->p2p_bandwidth = bandwidth;
        k->n = (int)trace_file_num_events(k->f);
        const size_t n1 = (size_t)k->n + 1;
        k->order = mallocCheck(n1 * sizeof *k->order);
        k->inst = mallocCheck(n1 * sizeof *k->inst);
        k->stream_of = mallocCheck(n1 * sizeof *k->stream_of);
        k->at = mallocCheck(n1 * sizeof *k->at);
        k->queue = mallocCheck(n1 * sizeof *k->queue);
        k->issued = callocCheck(n1, sizeof *k->issued);
        k->finished = callocCheck(n1, sizeof *k->finished);
        k->t0 = callocCheck(n1, sizeof *k->t0);
        k->tr = callocCheck(n1, sizeof *k->tr);
        k->t1 = callocCheck(n1, sizeof *k->t1);
        build_program(k);
    }
    int ninst = 0;
    rp_inst *inst = match_collectives(ks, nr, &ninst);
    double *post = mallocCheck((size_t)(nflows + 1) * sizeof *post);
    for (int f = 0; f < nflows; f++) post[f] = -1;

    bool moved = true, done = false;
    while (moved && !done) {
        moved = false;
        done = true;
        for (int q = 0; q < nr; q++) {
            if (advance(&ks[q], r->flow[q], post, inst)) moved = true;
            if (advance_stream(&ks[q], inst)) moved = true;
            if (ks[q].pc < ks[q].prog.n || ks[q].head < ks[q].tail) done = false;
        }
    }

    trace_run *out = NULL;
    if (!done) {
        explain_deadlock(r, ks, err, errlen);
    } else {
        const char *tmp = getenv("TMPDIR");
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/trident-replay-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            snprintf(err, errlen,
                     "replay: cannot create a temporary directory under %s for the replayed traces",
                     tmp && *tmp ? tmp : "/tmp");
        } else {
            write_replayed(r, ks, dir);
            out = trace_run_read(dir, err, errlen);
            char path[4200];
            for (int q = 0; q < nr; q++) {
                snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, q);
                unlink(path);
            }
            snprintf(path, sizeof path, "%s/trace", dir);
            rmdir(path);
            rmdir(dir);
            if (out) snprintf(out->dir, sizeof out->dir, "%s", r->dir);
        }
    }
    for (int q = 0; q < nr; q++) {
        free(ks[q].order);
        free(ks[q].inst);
        free(ks[q].stream_of);
        free(ks[q].at);
        free(ks[q].queue);
        free(ks[q].issued);
        free(ks[q].finished);
        free(ks[q].t0);
        free(ks[q].tr);
        free(ks[q].t1);
        free(ks[q].prog.ops);
    }
    free(ks);
    free(inst);
    free(post);
    return out;
}

bool trace_run_is_replay(const trace_run *r) {
    return r->nranks > 0 && strncmp(trace_file_header(r->ranks[0])->run_id, TRACE_REPLAY_ID_PREFIX,
                                    strlen(TRACE_REPLAY_ID_PREFIX)) == 0;
}
