/* schedule_sim.c — validator and timing simulator of pipeline schedules. See schedule_sim.h.
 *
 * The simulation is a longest-path computation over the dependency graph
 *     (rank r, action i) -> (rank r, action i+1)          same rank, in order
 *     (sender's action)  -> (receiver's action)           message, + p2p latency
 * done by sweeping the ranks: each rank advances while the message its next action needs has
 * been sent. The times do not depend on the sweep order; a sweep that moves no rank while
 * some have actions left has found a cycle (or a message nobody sends): a deadlock.
 *
 * Not here: building schedules (schedule.c) or any MPI.
 */
#include "src/pp/schedule_sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"

pp_costs pp_costs_unit(void) {
    pp_costs c = {1.0, 1.0, 0.0, NULL, NULL, 0.0, NULL};
    return c;
}

pp_costs pp_costs_per_chunk(const pp_config *cfg, double stage_forward, double stage_backward,
                            double p2p_latency) {
    CHECK(cfg->v >= 1, "pp_costs_per_chunk: a schedule has at least one model chunk per rank");
    pp_costs c = {
        stage_forward / cfg->v, stage_backward / cfg->v, p2p_latency, NULL, NULL, 0.0, NULL};
    return c;
}

pp_costs pp_costs_default(const pp_config *cfg) {
    return pp_costs_per_chunk(cfg, 1.0, PP_BACKWARD_OVER_FORWARD, 0.0);
}

static const char *dir_word(int tag) {
    return (tag & 1) == PP_ACTIVATION ? "activation" : "gradient";
}

static double action_cost(const pp_costs *c, const pp_action *a) {
    if (a->op == PP_FORWARD)
        return c->forward_per_stage ? c->forward_per_stage[a->stage] : c->forward;
    const double whole = c->backward_per_stage ? c->backward_per_stage[a->stage] : c->backward;
    if (a->op != PP_BACKWARD && c->weight_per_stage) {
        const double w = c->weight_per_stage[a->stage];
        return a->op == PP_WEIGHT ? w : whole - w;
    }
    const double w = c->weight_share > 0 ? c->weight_share : 0.5;
    return a->op == PP_BACKWARD ? whole : a->op == PP_WEIGHT ? w * whole : (1 - w) * whole;
}

/* Whether action a gives back the activations of its (micro-batch, chunk): the whole
 * backward does, a split one at its W. */
static bool releases(const pp_action *a) { return a->op == PP_BACKWARD || a->op == PP_WEIGHT; }

/* Appends printf-style text to msg (which holds `*len` characters already). */
static void append(char *msg, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *msg, size_t cap, size_t *len, const char *fmt, ...) {
    if (*len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(msg + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (k > 0) *len = *len + (size_t)k < cap ? *len + (size_t)k : cap - 1;
}

/* Explains why the ranks with next[r] < n are stuck: which message each waits for, and
 * whether its sender sends it later (a cycle) or never. */
static void explain_deadlock(const pp_schedule *s, const int *next, char *msg, size_t cap) {
    const pp_config *c = &s->cfg;
    size_t len = 0;
    char name[32], sname[32];
    msg[0] = 0;
    append(msg, cap, &len, "deadlock:");
    for (int r = 0; r < c->p; r++) {
        const pp_rank_plan *pl = &s->ranks[r];
        if (next[r] >= pl->n) continue;
        const pp_action *a = &pl->actions[next[r]];
        pp_action_name(a, c->v, name, sizeof name);
        append(msg, cap, &len,
               "%s rank %d is stuck at action %d (%s) waiting for the %s of micro-batch %d from "
               "rank %d",
               len > 10 ? ";" : "", r, next[r], name, dir_word(a->recv_tag), a->mb, a->recv_peer);
        /* Where does the sender send it, if at all? */
        int found = -1;
        if (a->recv_peer >= 0 && a->recv_peer < c->p) {
            const pp_rank_plan *sp = &s->ranks[a->recv_peer];
            for (int j = 0; j < sp->n && found < 0; j++)
                if (sp->actions[j].send_tag == a->recv_tag && sp->actions[j].send_peer == r)
                    found = j;
            if (found >= 0)
                append(msg, cap, &len, ", which rank %d sends only at its action %d (%s)",
                       a->recv_peer, found,
                       pp_action_name(&sp->actions[found], c->v, sname, sizeof sname));
        }
        if (found < 0) append(msg, cap, &len, ", which no action sends");
    }
}

/* A plan the timing cannot even read: stages or tags out of range. */
static bool plan_in_range(const pp_schedule *s, char *msg, size_t cap) {
    const pp_config *c = &s->cfg;
    const int p = c->p, S = c->p * c->v, ntags = pp_tag_count(c);
    for (int r = 0; r < p; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const pp_action *a = &s->ranks[r].actions[i];
            if (a->stage < 0 || a->stage >= S || a->recv_tag >= ntags || a->send_tag >= ntags ||
                (a->recv_tag >= 0 && (a->recv_peer < 0 || a->recv_peer >= p))) {
                snprintf(msg, cap,
                         "rank %d action %d: stage %d, tags %d/%d or peer %d out of range "
                         "(S = %d stages, %d tags, %d ranks)",
                         r, i, a->stage, a->recv_tag, a->send_tag, a->recv_peer, S, ntags, p);
                return false;
            }
        }
    return true;
}

/* The simulation's state: per tag when it was sent, per rank where its plan stands. */
typedef struct {
    double *sent;    /* (ntags) issue time of each tag, or -1 */
    int *next;       /* (p) next action of each rank */
    double *free_at; /* (p) when each rank is free */
    int *inflight;   /* (p) forwards whose backward has not run yet */
} sim_state;

/* Runs every rank as far as its receives allow, round after round, until all are done or
 * none can move. Returns true when every plan ran to its end. */
static bool run_plans(const pp_schedule *s, const pp_costs *costs, sim_state *st, pp_sim *out) {
    const int p = s->cfg.p;
    bool moved = true, done = false;
    while (moved && !done) {
        moved = false;
        done = true;
        for (int r = 0; r < p; r++) {
            const pp_rank_plan *pl = &s->ranks[r];
            pp_rank_timeline *tl = &out->ranks[r];
            while (st->next[r] < pl->n) {
                const pp_action *a = &pl->actions[st->next[r]];
                double start = st->free_at[r];
                if (a->recv_tag >= 0) {
                    if (st->sent[a->recv_tag] < 0) break; /* blocks: not sent yet */
                    double arrive = st->sent[a->recv_tag] + costs->p2p_latency;
                    if (arrive > start) start = arrive;
                }
                double cost = action_cost(costs, a);
                tl->spans[st->next[r]].start = start;
                tl->spans[st->next[r]].end = start + cost;
                tl->busy += cost;
                st->free_at[r] = start + cost;
                if (a->send_tag >= 0 && st->sent[a->send_tag] < 0)
                    st->sent[a->send_tag] = start + cost;
                st->inflight[r] += a->op == PP_FORWARD ? 1 : releases(a) ? -1 : 0;
                if (st->inflight[r] > tl->peak_inflight) tl->peak_inflight = st->inflight[r];
                st->next[r]++;
                moved = true;
            }
            if (st->next[r] < pl->n) done = false;
        }
    }
    return done;
}

/* Makespan, idle fractions and the bubble, from when each rank became free. */
static void sum_up(pp_sim *out, const double *free_at, int p) {
    double idle = 0;
    for (int r = 0; r < p; r++)
        if (free_at[r] > out->makespan) out->makespan = free_at[r];
    for (int r = 0; r < p; r++) {
        pp_rank_timeline *tl = &out->ranks[r];
        tl->idle_fraction = out->makespan > 0 ? 1.0 - tl->busy / out->makespan : 0.0;
        idle += out->makespan - tl->busy;
    }
    out->bubble_fraction = out->makespan > 0 ? idle / (p * out->makespan) : 0.0;
}

bool pp_simulate(const pp_schedule *s, const pp_costs *costs, pp_sim *out, char *msg, size_t cap) {
    const pp_config *c = &s->cfg;
    const int p = c->p, ntags = pp_tag_count(c);
    pp_costs unit = pp_costs_unit();
    if (!costs) costs = &unit;
    memset(out, 0, sizeof *out);
    if (cap) msg[0] = 0;
    if (!plan_in_range(s, msg, cap)) return false;

    sim_state st;
    st.sent = mallocCheck((size_t)ntags * sizeof *st.sent);
    for (int t = 0; t < ntags; t++) st.sent[t] = -1.0;
    st.next = callocCheck((size_t)p, sizeof *st.next);
    st.free_at = callocCheck((size_t)p, sizeof *st.free_at);
    st.inflight = callocCheck((size_t)p, sizeof *st.inflight);
    out->p = p;
    out->ranks = callocCheck((size_t)p, sizeof *out->ranks);
    for (int r = 0; r < p; r++) {
        out->ranks[r].n = s->ranks[r].n;
        out->ranks[r].spans = callocCheck((size_t)s->ranks[r].n, sizeof(pp_span));
    }

    bool ok = run_plans(s, costs, &st, out);
    if (!ok) {
        explain_deadlock(s, st.next, msg, cap);
        pp_sim_free(out);
    } else {
        sum_up(out, st.free_at, p);
    }
    free(st.sent);
    free(st.next);
    free(st.free_at);
    free(st.inflight);
    return ok;
}

void pp_sim_free(pp_sim *sim) {
    if (sim->ranks)
        for (int r = 0; r < sim->p; r++) free(sim->ranks[r].spans);
    free(sim->ranks);
    memset(sim, 0, sizeof *sim);
}

/* What the validator learns from the plans: where each (mb, stage) runs, who sends what. */
typedef struct {
    int *fpos, *bpos;       /* (m, S) index of the forward / backward on its rank, -1 = none */
    int *wpos;              /* (m, S) split backward: index of its W, -1 = none */
    int *nsend, *nrecv;     /* (ntags) how often each tag is sent / received */
    int *sender, *sendpeer; /* (ntags) the rank sending it and to whom */
} plan_index;

/* Action i of the rank's plan: its (mb, chunk, stage) is this rank's, its messages are the
 * ones they imply, it runs once, a backward after its forward, a W after its own B. Records it
 * in the index. */
static bool check_action(const pp_config *c, int r, int i, const pp_action *plan, plan_index *ix,
                         char *msg, size_t cap) {
    const pp_action *a = &plan[i];
    const int m = c->m, v = c->v, S = c->p * c->v;
    char name[32];
    if (a->mb < 0 || a->mb >= m || a->chunk < 0 || a->chunk >= v ||
        a->stage != pp_stage(c, r, a->chunk)) {
        snprintf(msg, cap,
                 "rank %d action %d: micro-batch %d chunk %d stage %d is not one of this "
                 "rank's (m = %d, v = %d, stage = pp_stage(rank, chunk))",
                 r, i, a->mb, a->chunk, a->stage, m, v);
        return false;
    }
    /* Its messages must be the ones its (op, mb, stage) implies. */
    pp_action want = pp_action_make(c, r, a->op, a->mb, a->chunk);
    if (a->recv_tag != want.recv_tag || a->recv_peer != want.recv_peer ||
        a->send_tag != want.send_tag || a->send_peer != want.send_peer) {
        snprintf(msg, cap,
                 "rank %d action %d (%s): its messages (recv tag %d from %d, send tag %d to %d) "
                 "are not the ones of stage %d (recv tag %d from %d, send tag %d to %d)",
                 r, i, pp_action_name(a, v, name, sizeof name), a->recv_tag, a->recv_peer,
                 a->send_tag, a->send_peer, a->stage, want.recv_tag, want.recv_peer, want.send_tag,
                 want.send_peer);
        return false;
    }
    int *pos = a->op == PP_FORWARD ? ix->fpos : a->op == PP_WEIGHT ? ix->wpos : ix->bpos;
    int key = a->mb * S + a->stage;
    if (pos[key] >= 0) {
        snprintf(msg, cap,
                 "rank %d runs %s twice (actions %d and %d); each (micro-batch, stage) "
                 "needs exactly one forward and one backward",
                 r, pp_action_name(a, v, name, sizeof name), pos[key], i);
        return false;
    }
    pos[key] = i;
    if (a->op == PP_WEIGHT && (ix->bpos[key] < 0 || plan[ix->bpos[key]].op != PP_BACKWARD_INPUT)) {
        snprintf(msg, cap,
                 "rank %d runs %s (action %d) before the input-gradient backward of its "
                 "micro-batch: W needs the output gradients B saves",
                 r, pp_action_name(a, v, name, sizeof name), i);
        return false;
    }
    if (a->op != PP_FORWARD && a->op != PP_WEIGHT && ix->fpos[key] < 0) {
        snprintf(msg, cap,
                 "rank %d runs %s (action %d) before its forward: a backward needs the "
                 "activations its forward stored",
                 r, pp_action_name(a, v, name, sizeof name), i);
        return false;
    }
    if (a->send_tag >= 0) {
        ix->nsend[a->send_tag]++;
        ix->sender[a->send_tag] = r;
        ix->sendpeer[a->send_tag] = a->send_peer;
    }
    if (a->recv_tag >= 0) ix->nrecv[a->recv_tag]++;
    return true;
}

/* Every (micro-batch, stage) has a forward and a backward, and a split backward its W. */
static bool check_every_pair_runs(const pp_schedule *s, const plan_index *ix, char *msg,
                                  size_t cap) {
    const pp_config *c = &s->cfg;
    const int v = c->v, S = c->p * v;
    char name[32];
    for (int key = 0; key < c->m * S; key++) {
        const int mb = key / S, st = key % S;
        int owner, chunk;
        pp_stage_owner(c, st, &owner, &chunk);
        const bool split = ix->bpos[key] >= 0 &&
                           s->ranks[owner].actions[ix->bpos[key]].op == PP_BACKWARD_INPUT;
        if (split && ix->wpos[key] < 0) {
            pp_action a = pp_action_make(c, owner, PP_WEIGHT, mb, chunk);
            snprintf(
                msg, cap,
                "rank %d never runs %s (micro-batch %d, stage %d): its input-gradient backward "
                "ran, so its weight gradient must too",
                owner, pp_action_name(&a, v, name, sizeof name), mb, st);
            return false;
        }
        if (ix->fpos[key] >= 0 && ix->bpos[key] >= 0) continue;
        pp_action a = pp_action_make(c, owner, ix->fpos[key] < 0 ? PP_FORWARD : PP_BACKWARD, mb,
                                     chunk);
        snprintf(
            msg, cap,
            "rank %d never runs %s (micro-batch %d, stage %d); each (micro-batch, stage) needs "
            "exactly one forward and one backward",
            owner, pp_action_name(&a, v, name, sizeof name), mb, st);
        return false;
    }
    return true;
}

/* Every receive has exactly one matching send (and every send one receive). */
static bool check_messages_pair_up(const pp_schedule *s, const plan_index *ix, char *msg,
                                   size_t cap) {
    char name[32];
    for (int r = 0; r < s->cfg.p; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const pp_action *a = &s->ranks[r].actions[i];
            if (a->recv_tag < 0) continue;
            int t = a->recv_tag;
            if (ix->nsend[t] != 1 || ix->sender[t] != a->recv_peer || ix->sendpeer[t] != r ||
                ix->nrecv[t] != 1) {
                snprintf(msg, cap,
                         "rank %d action %d (%s): the %s it receives (tag %d) is sent %d times "
                         "and received %d times; it needs exactly one send from rank %d",
                         r, i, pp_action_name(a, s->cfg.v, name, sizeof name), dir_word(t), t,
                         ix->nsend[t], ix->nrecv[t], a->recv_peer);
                return false;
            }
        }
    return true;
}

/* The structural checks, in the order a reader would make them. */
bool pp_validate(const pp_schedule *s, char *msg, size_t cap) {
    const pp_config *c = &s->cfg;
    if (!pp_config_valid(c, msg, cap)) return false;
    const int p = c->p, m = c->m, S = p * c->v, ntags = pp_tag_count(c);
    bool ok = true;
    plan_index ix;
    ix.fpos = mallocCheck((size_t)m * S * sizeof *ix.fpos);
    ix.bpos = mallocCheck((size_t)m * S * sizeof *ix.bpos);
    ix.wpos = mallocCheck((size_t)m * S * sizeof *ix.wpos);
    ix.nsend = callocCheck((size_t)ntags, sizeof *ix.nsend),
    ix.nrecv = callocCheck((size_t)ntags, sizeof *ix.nrecv);
    ix.sender = callocCheck((size_t)ntags, sizeof *ix.sender);
    ix.sendpeer = callocCheck((size_t)ntags, sizeof *ix.sendpeer);
    for (int i = 0; i < m * S; i++) ix.fpos[i] = ix.bpos[i] = ix.wpos[i] = -1;

    for (int r = 0; r < p && ok; r++) {
        const pp_rank_plan *pl = &s->ranks[r];
        if (pl->rank != r) {
            snprintf(msg, cap, "plan %d says it is rank %d", r, pl->rank);
            ok = false;
        }
        for (int i = 0; i < pl->n && ok; i++)
            ok = check_action(c, r, i, pl->actions, &ix, msg, cap);
    }
    ok = ok && check_every_pair_runs(s, &ix, msg, cap) && check_messages_pair_up(s, &ix, msg, cap);
    /* Finally: does it run to the end? */
    if (ok) {
        pp_sim sim;
        ok = pp_simulate(s, NULL, &sim, msg, cap);
        if (ok) pp_sim_free(&sim);
    }
    free(ix.fpos);
    free(ix.bpos);
    free(ix.wpos);
    free(ix.nsend);
    free(ix.nrecv);
    free(ix.sender);
    free(ix.sendpeer);
    return ok;
}

bool pp_simulate_config(const pp_config *cfg, const pp_costs *costs, pp_sim *out, char *msg,
                        size_t cap) {
    pp_schedule s;
    pp_schedule_build(cfg, &s);
    const bool ok = pp_validate(&s, msg, cap) && pp_simulate(&s, costs, out, msg, cap);
    pp_schedule_free(&s);
    return ok;
}
