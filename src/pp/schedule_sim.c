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
    pp_costs c = {1.0, 1.0, 0.0, NULL, NULL, 0.0};
    return c;
}

pp_costs pp_costs_per_chunk(const pp_config *cfg, double stage_forward, double stage_backward,
                            double p2p_latency) {
    CHECK(cfg->v >= 1, "pp_costs_per_chunk: a schedule has at least one model chunk per rank");
    pp_costs c = {stage_forward / cfg->v, stage_backward / cfg->v, p2p_latency, NULL, NULL, 0.0};
    return c;
}

pp_costs pp_costs_default(const pp_config *cfg) {
    return pp_costs_per_chunk(cfg, 1.0, PP_BACKWARD_OVER_FORWARD, 0.0);
}

static const char *dir_word(int tag) { return (tag & 1) == PP_ACTIVATION ? "activation" : "gradient"; }

static double action_cost(const pp_costs *c, const pp_action *a) {
    if (a->op == PP_FORWARD) return c->forward_per_stage ? c->forward_per_stage[a->stage] : c->forward;
    const double whole = c->backward_per_stage ? c->backward_per_stage[a->stage] : c->backward;
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
        append(msg, cap, &len, "%s rank %d is stuck at action %d (%s) waiting for the %s of micro-batch %d from rank %d",
               len > 10 ? ";" : "", r, next[r], name, dir_word(a->recv_tag), a->mb, a->recv_peer);
        /* Where does the sender send it, if at all? */
        int found = -1;
        if (a->recv_peer >= 0 && a->recv_peer < c->p) {
            const pp_rank_plan *sp = &s->ranks[a->recv_peer];
            for (int j = 0; j < sp->n && found < 0; j++)
                if (sp->actions[j].send_tag == a->recv_tag && sp->actions[j].send_peer == r) found = j;
            if (found >= 0)
                append(msg, cap, &len, ", which rank %d sends only at its action %d (%s)", a->recv_peer,
                       found, pp_action_name(&sp->actions[found], c->v, sname, sizeof sname));
        }
        if (found < 0) append(msg, cap, &len, ", which no action sends");
    }
}

bool pp_simulate(const pp_schedule *s, const pp_costs *costs, pp_sim *out, char *msg, size_t cap) {
    const pp_config *c = &s->cfg;
    const int p = c->p, S = c->p * c->v, ntags = pp_tag_count(c);
    pp_costs unit = pp_costs_unit();
    if (!costs) costs = &unit;
    memset(out, 0, sizeof *out);
    if (cap) msg[0] = 0;

    /* A plan the timing cannot even read: stages or tags out of range. */
    for (int r = 0; r < p; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const pp_action *a = &s->ranks[r].actions[i];
            if (a->stage < 0 || a->stage >= S || a->recv_tag >= ntags || a->send_tag >= ntags ||
                (a->recv_tag >= 0 && (a->recv_peer < 0 || a->recv_peer >= p))) {
                snprintf(msg, cap, "rank %d action %d: stage %d, tags %d/%d or peer %d out of range "
                         "(S = %d stages, %d tags, %d ranks)", r, i, a->stage, a->recv_tag, a->send_tag,
                         a->recv_peer, S, ntags, p);
                return false;
            }
        }

    double *sent = mallocCheck((size_t)ntags * sizeof *sent); /* issue time of each tag, or -1 */
    for (int t = 0; t < ntags; t++) sent[t] = -1.0;
    int *next = callocCheck((size_t)p, sizeof *next);     /* next action of each rank */
    double *free_at = callocCheck((size_t)p, sizeof *free_at); /* when each rank is free */
    int *inflight = callocCheck((size_t)p, sizeof *inflight);
    out->p = p;
    out->ranks = callocCheck((size_t)p, sizeof *out->ranks);
    for (int r = 0; r < p; r++) {
        out->ranks[r].n = s->ranks[r].n;
        out->ranks[r].spans = callocCheck((size_t)s->ranks[r].n, sizeof(pp_span));
    }

    bool moved = true, done = false;
    while (moved && !done) {
        moved = false;
        done = true;
        for (int r = 0; r < p; r++) {
            const pp_rank_plan *pl = &s->ranks[r];
            pp_rank_timeline *tl = &out->ranks[r];
            while (next[r] < pl->n) {
                const pp_action *a = &pl->actions[next[r]];
                double start = free_at[r];
                if (a->recv_tag >= 0) {
                    if (sent[a->recv_tag] < 0) break; /* blocks: not sent yet */
                    double arrive = sent[a->recv_tag] + costs->p2p_latency;
                    if (arrive > start) start = arrive;
                }
                double cost = action_cost(costs, a);
                tl->spans[next[r]].start = start;
                tl->spans[next[r]].end = start + cost;
                tl->busy += cost;
                free_at[r] = start + cost;
                if (a->send_tag >= 0 && sent[a->send_tag] < 0) sent[a->send_tag] = start + cost;
                inflight[r] += a->op == PP_FORWARD ? 1 : releases(a) ? -1 : 0;
                if (inflight[r] > tl->peak_inflight) tl->peak_inflight = inflight[r];
                next[r]++;
                moved = true;
            }
            if (next[r] < pl->n) done = false;
        }
    }

    bool ok = done;
    if (!ok) {
        explain_deadlock(s, next, msg, cap);
        pp_sim_free(out);
    } else {
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
    free(sent);
    free(next);
    free(free_at);
    free(inflight);
    return ok;
}

void pp_sim_free(pp_sim *sim) {
    if (sim->ranks)
        for (int r = 0; r < sim->p; r++) free(sim->ranks[r].spans);
    free(sim->ranks);
    memset(sim, 0, sizeof *sim);
}

/* The structural checks, in the order a reader would make them. */
bool pp_validate(const pp_schedule *s, char *msg, size_t cap) {
    const pp_config *c = &s->cfg;
    if (!pp_config_valid(c, msg, cap)) return false;
    const int p = c->p, m = c->m, v = c->v, S = p * v, ntags = pp_tag_count(c);
    char name[32];
    bool ok = false;
    /* Index of each (mb, stage)'s forward and backward on its rank: (m, S), -1 = none. */
    int *fpos = mallocCheck((size_t)m * S * sizeof *fpos);
    int *bpos = mallocCheck((size_t)m * S * sizeof *bpos);
    int *wpos = mallocCheck((size_t)m * S * sizeof *wpos); /* split backward: its W */
    /* Who sends / receives each tag: count and rank. (ntags) */
    int *nsend = callocCheck((size_t)ntags, sizeof *nsend), *nrecv = callocCheck((size_t)ntags, sizeof *nrecv);
    int *sender = callocCheck((size_t)ntags, sizeof *sender), *sendpeer = callocCheck((size_t)ntags, sizeof *sendpeer);
    for (int i = 0; i < m * S; i++) fpos[i] = bpos[i] = wpos[i] = -1;

    for (int r = 0; r < p; r++) {
        const pp_rank_plan *pl = &s->ranks[r];
        if (pl->rank != r) {
            snprintf(msg, cap, "plan %d says it is rank %d", r, pl->rank);
            goto out;
        }
        for (int i = 0; i < pl->n; i++) {
            const pp_action *a = &pl->actions[i];
            if (a->mb < 0 || a->mb >= m || a->chunk < 0 || a->chunk >= v ||
                a->stage != pp_stage(c, r, a->chunk)) {
                snprintf(msg, cap, "rank %d action %d: micro-batch %d chunk %d stage %d is not one of this "
                         "rank's (m = %d, v = %d, stage = chunk·p + rank)", r, i, a->mb, a->chunk, a->stage, m, v);
                goto out;
            }
            /* Its messages must be the ones its (op, mb, stage) implies. */
            pp_action want = pp_action_make(c, r, a->op, a->mb, a->chunk);
            if (a->recv_tag != want.recv_tag || a->recv_peer != want.recv_peer ||
                a->send_tag != want.send_tag || a->send_peer != want.send_peer) {
                snprintf(msg, cap, "rank %d action %d (%s): its messages (recv tag %d from %d, send tag %d to %d) "
                         "are not the ones of stage %d (recv tag %d from %d, send tag %d to %d)",
                         r, i, pp_action_name(a, v, name, sizeof name), a->recv_tag, a->recv_peer,
                         a->send_tag, a->send_peer, a->stage, want.recv_tag, want.recv_peer,
                         want.send_tag, want.send_peer);
                goto out;
            }
            int *pos = a->op == PP_FORWARD ? fpos : a->op == PP_WEIGHT ? wpos : bpos;
            int key = a->mb * S + a->stage;
            if (pos[key] >= 0) {
                snprintf(msg, cap, "rank %d runs %s twice (actions %d and %d); each (micro-batch, stage) "
                         "needs exactly one forward and one backward", r, pp_action_name(a, v, name, sizeof name),
                         pos[key], i);
                goto out;
            }
            pos[key] = i;
            if (a->op == PP_WEIGHT && (bpos[key] < 0 || s->ranks[r].actions[bpos[key]].op != PP_BACKWARD_INPUT)) {
                snprintf(msg, cap, "rank %d runs %s (action %d) before the input-gradient backward of its "
                         "micro-batch: W needs the output gradients B saves", r,
                         pp_action_name(a, v, name, sizeof name), i);
                goto out;
            }
            if (a->op != PP_FORWARD && a->op != PP_WEIGHT && fpos[key] < 0) {
                snprintf(msg, cap, "rank %d runs %s (action %d) before its forward: a backward needs the "
                         "activations its forward stored", r, pp_action_name(a, v, name, sizeof name), i);
                goto out;
            }
            if (a->send_tag >= 0) {
                nsend[a->send_tag]++;
                sender[a->send_tag] = r;
                sendpeer[a->send_tag] = a->send_peer;
            }
            if (a->recv_tag >= 0) nrecv[a->recv_tag]++;
        }
    }
    for (int key = 0; key < m * S; key++) {
        const bool split = bpos[key] >= 0 && s->ranks[(key % S) % p].actions[bpos[key]].op == PP_BACKWARD_INPUT;
        if (split && wpos[key] < 0) {
            const int mb = key / S, st = key % S;
            pp_action a = pp_action_make(c, st % p, PP_WEIGHT, mb, st / p);
            snprintf(msg, cap, "rank %d never runs %s (micro-batch %d, stage %d): its input-gradient backward "
                     "ran, so its weight gradient must too", st % p, pp_action_name(&a, v, name, sizeof name), mb, st);
            goto out;
        }
        if (fpos[key] >= 0 && bpos[key] >= 0) continue;
        int mb = key / S, st = key % S;
        pp_action a = pp_action_make(c, st % p, fpos[key] < 0 ? PP_FORWARD : PP_BACKWARD, mb, st / p);
        snprintf(msg, cap, "rank %d never runs %s (micro-batch %d, stage %d); each (micro-batch, stage) needs "
                 "exactly one forward and one backward", st % p, pp_action_name(&a, v, name, sizeof name), mb, st);
        goto out;
    }
    /* Every receive has exactly one matching send (and every send one receive). */
    for (int r = 0; r < p; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const pp_action *a = &s->ranks[r].actions[i];
            if (a->recv_tag < 0) continue;
            int t = a->recv_tag;
            if (nsend[t] != 1 || sender[t] != a->recv_peer || sendpeer[t] != r || nrecv[t] != 1) {
                snprintf(msg, cap, "rank %d action %d (%s): the %s it receives (tag %d) is sent %d times "
                         "and received %d times; it needs exactly one send from rank %d", r, i,
                         pp_action_name(a, v, name, sizeof name), dir_word(t), t, nsend[t], nrecv[t], a->recv_peer);
                goto out;
            }
        }
    /* Finally: does it run to the end? */
    pp_sim sim;
    ok = pp_simulate(s, NULL, &sim, msg, cap);
    if (ok) pp_sim_free(&sim);
out:
    free(fpos);
    free(bpos);
    free(wpos);
    free(nsend);
    free(nrecv);
    free(sender);
    free(sendpeer);
    return ok;
}
