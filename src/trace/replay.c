/* replay.c — re-times a run as if each rank had its own core. See replay.h for the model.
 *
 * Three passes:
 *   1. per rank, the events sorted by start (longer first on ties) become a tree: an event
 *      whose interval lies inside a compute event's is its child. The tree is flattened into
 *      a small program of ops: BEGIN e, ADVANCE dt, COMM e, MEMORY e, END e;
 *   2. collectives of all ranks are grouped into instances (same group name, same group
 *      instance, same occurrence count on each member), each with its cost (replay_match.c);
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
#include "src/trace/replay_internal.h"

static double wall(const trace_event *e) { return e->t_end - e->t_start; }
static bool is_comm(trace_kind k) {
    return k == TRACE_SEND || k == TRACE_RECV || k == TRACE_COLLECTIVE;
}
/* Where event i ends in the program: a stream collective is a point, its issue (it ran beside
 * the program, which only started it). */
static double at_end(const rp_rank *k, int i) {
    return rp_on_stream(rp_ev(k, i)) ? k->at[i] : rp_ev(k, i)->t_end;
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
    const bool xp = rp_on_stream(rp_ev(k, i)), yp = rp_on_stream(rp_ev(k, j));
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
    const trace_event *x = rp_ev(k, e);
    if (rp_on_stream(x)) { /* issued when the last piece of compute before it ended */
        emit_at(&k->prog, k->piece_end, OP_ISSUE, e, 0);
        k->piece_end++;
        return;
    }
    if (x->kind == TRACE_MEMORY || is_comm(x->kind)) {
        emit(&k->prog, x->kind == TRACE_MEMORY ? OP_MEMORY : OP_COMM, e, 0);
        return;
    }
    /* Own wall time = the gaps between children; own replay time from the CPU clock. */
    double own_wall = 0, child_cpu = 0, prev = x->t_start, last_start = -1, last_end = -1;
    const double share = x->cpu >= 0 && wall(x) > 0 ? (x->cpu < wall(x) ? x->cpu / wall(x) : 1.0)
                                                    : 1.0;
    for (int c = first_child[e]; c >= 0; c = next_sib[c]) {
        const trace_event *y = rp_ev(k, c);
        if (rp_on_stream(y)) continue; /* a point: the issue; its time is the stream's */
        if (y->t_start > prev) own_wall += y->t_start - prev;
        if (y->t_end > prev) prev = y->t_end;
        /* a sendrecv is traced as its two halves over one call (src/runtime/comm_p2p.c), each
         * with the whole call's CPU time: subtracted once */
        const bool half = is_comm(y->kind) && y->t_start == last_start && y->t_end == last_end;
        /* a wait for the stream sleeps on a condition variable (comm_stream_wait): no CPU */
        const double unknown = k->stream_of[c] >= 0 ? 0 : wall(y) * share;
        if (!half) child_cpu += y->cpu >= 0 ? y->cpu : unknown;
        last_start = y->t_start, last_end = y->t_end;
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
        const trace_event *e = rp_ev(k, i);
        if (!(e->flags & TRACE_OPEN)) k->order[m++] = i;
        k->stream_of[i] = trace_file_is_stream_wait(k->f, (size_t)i) ? i - 1 : -1;
        k->at[i] = rp_ev(k, (int)trace_file_stream_issue(k->f, (size_t)i))->t_start;
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
        const trace_event *x = rp_ev(k, e);
        while (depth > 0) { /* pop the events that do not contain e */
            const trace_event *top = rp_ev(k, stack[depth - 1]);
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

/* ---- pass 3: the simulation ------------------------------------------------------------ */

/* A send or receive's transfer: what it measured, and no more than its bytes at the fastest
 * p2p copy the run measured (a copy that waited for the sender to come back into MPI, which
 * a time-shared sender does late, measured that wait too). */
static double p2p_cost(const rp_rank *k, const trace_event *e) {
    double t = rp_transfer(e);
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
            const double t = rp_transfer(e);
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
            const trace_event *e = rp_ev(k, i);
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
        const trace_event *e = rp_ev(k, i);
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

/* Writes the replayed events of every rank under dir/trace/ with the ordinary recorder, in
 * the recorded file's order: a stream collective stays right before its wait, which is how
 * the run read back tells a wait from a call (trace_file_is_stream_wait). */
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
        for (int i = 0; i < k->n; i++) {
            const trace_event *e = rp_ev(k, i);
            if (e->flags & TRACE_OPEN) continue; /* not replayed */
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
                if (rp_on_stream(e)) trace_comm_stream(t, &ci);
                else trace_comm_full(t, &ci);
            } else {
                const int ev = trace_record(t, e->kind, e->step, e->microbatch, e->chunk, k->t0[i],
                                            k->t1[i]);
                /* the share of W inside a whole backward carries over */
                trace_set_weight_share(t, ev, trace_event_weight_share(e));
            }
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, q);
        trace_write(t, path);
        trace_destroy(t);
    }
}

/* Rank k of the replay: its arrays for f's events, its program built. */
static void rank_init(rp_rank *k, const trace_file *f, double p2p_bandwidth) {
    k->f = f;
    k->p2p_bandwidth = p2p_bandwidth;
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

static void rank_free(rp_rank *k) {
    free(k->order);
    free(k->inst);
    free(k->stream_of);
    free(k->at);
    free(k->queue);
    free(k->issued);
    free(k->finished);
    free(k->t0);
    free(k->tr);
    free(k->t1);
    free(k->prog.ops);
}

trace_run *trace_run_replay(const trace_run *r, char *err, size_t errlen) {
    if (errlen) err[0] = 0;
    const int nr = r->nranks;
    rp_rank *ks = callocCheck((size_t)nr, sizeof *ks);
    int nflows = r->nflows;
    const double bandwidth = fastest_p2p(r);
    for (int q = 0; q < nr; q++) rank_init(&ks[q], r->ranks[q], bandwidth);
    int ninst = 0;
    rp_inst *inst = rp_match_collectives(r, ks, &ninst);
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
    for (int q = 0; q < nr; q++) rank_free(&ks[q]);
    free(ks);
    free(inst);
    free(post);
    return out;
}

bool trace_run_is_replay(const trace_run *r) {
    return r->nranks > 0 && strncmp(trace_file_header(r->ranks[0])->run_id, TRACE_REPLAY_ID_PREFIX,
                                    strlen(TRACE_REPLAY_ID_PREFIX)) == 0;
}
