/* schedule_zbv.c — ZB-V (Qi et al. 2024, the V-shaped zero-bubble schedule) as a list
 * schedule. See schedule.h for the V placement and the rules; this file plays them.
 *
 * Every rank of the V is played forward in time, one unit per action (F = B = W, free
 * communication): at each tick a rank that has work takes the first of
 *     1. a W, when its activation memory is full (cap = 2p chunk sets, 1F1B's p stage sets);
 *     2. a B whose output gradient is there (the older micro-batch first, then chunk 0);
 *     3. an F whose input is there: chunk 1 first; chunk 0 only while fewer than k chunk 0
 *        sets are held (k in [p, 2p−1]: how far chunk 0 may run ahead of the V);
 *     4. a W kept waiting (W's run in the order of their B's).
 * Per chunk, F's and B's go in micro-batch order. The play is made for each k and the shortest
 * kept (ties: the smallest k). With p | m the best play reaches the textbook makespan
 * 6m + p − 1, the least possible (schedule.h; tested for m >= 2p, p <= 8); for other m it is
 * a few units longer (the last, partial group of micro-batches: 1 at p = 4, m = 9, 3 at
 * p = 8, m = 17). The order each rank took is its plan; the executor runs that order with
 * real costs (the order, not the ticks, is the schedule).
 *
 *     p = 2, m = 4 (each cell one unit, '.' idle):
 *     rank 0 (s0, s3):  F0c0 F1c0 .    F0c1 B0c1 F1c1 W0c1 B1c1 B0c0 W1c1 B1c0 W0c0 F2c0 ...
 *     rank 1 (s1, s2):  .    F0c0 F0c1 F1c0 F1c1 B0c1 W0c1 B0c0 B1c1 B1c0 W0c0 W1c1 W1c0 ...
 *     (`trident schedule --pipeline-schedule zbv` prints the whole grid)
 *
 * Why chunk 0 is held to k <= 2p − 1 sets: a chunk 0 forward only lets a micro-batch into the
 * V; its chunk 1 forward is what brings it to the loss and starts its backward. Keeping a slot
 * for chunk 1 means a rank full of chunk 0 sets can still pass a micro-batch on, so the V
 * drains. A play that stalls anyway (no rank can move) is dropped; the generator CHECKs that
 * one survives (tests/pp/schedule_test.c plays every p <= 8, m <= 24).
 *
 * Not here: the other schedules (schedule.c), validation and timing (schedule_sim.c).
 */
#include "src/pp/schedule_zbv.h"

#include <stdlib.h>

#include "src/core/check.h"

/* One rank's state while playing: next F and B micro-batch per chunk, the W queue. */
typedef struct {
    int nf[2], nb[2];    /* next micro-batch to run forward / backward, per chunk */
    int *wq, wq_head;    /* (2m) (mb·2 + chunk) of the B's whose W is pending, from wq_head */
    int wq_tail;         /* one past the last queued */
    int inflight;        /* chunk sets held: F done, W not yet */
    int inflight0;       /* of which chunk 0's */
    int n;               /* actions taken */
    pp_action *taken;    /* (6m) */
    int first_b, last_f; /* index of the first B and of the last F taken */
} zbv_rank;

/* The whole play: when each (stage, micro-batch) forward and B ended (-1 = not yet). */
typedef struct {
    const pp_config *cfg;
    int chunk0_cap;     /* k: most chunk 0 sets a rank may hold */
    int *f_end, *b_end; /* (S, m) */
    zbv_rank *ranks;    /* (p) */
} zbv_play;

static bool done_by(const int *end, int at, int t) { return end[at] >= 0 && end[at] <= t; }

static bool forward_ready(const zbv_play *g, int r, int c, int t) {
    const int m = g->cfg->m, cap = 2 * g->cfg->p, s = pp_stage(g->cfg, r, c);
    const zbv_rank *k = &g->ranks[r];
    const int mb = k->nf[c];
    if (mb >= m || k->inflight >= cap || (c == 0 && k->inflight0 >= g->chunk0_cap)) return false;
    return s == 0 || done_by(g->f_end, (s - 1) * m + mb, t);
}

static bool backward_ready(const zbv_play *g, int r, int c, int t) {
    const int m = g->cfg->m, S = 2 * g->cfg->p, s = pp_stage(g->cfg, r, c);
    const int mb = g->ranks[r].nb[c];
    if (mb >= m || !done_by(g->f_end, s * m + mb, t)) return false;
    return s == S - 1 || done_by(g->b_end, (s + 1) * m + mb, t);
}

/* Records action (op, mb, c) on rank r at tick t. */
static void take(zbv_play *g, int r, pp_op op, int mb, int c, int t) {
    const int m = g->cfg->m, s = pp_stage(g->cfg, r, c);
    zbv_rank *k = &g->ranks[r];
    if (op == PP_FORWARD) {
        g->f_end[s * m + mb] = t + 1;
        k->nf[c]++;
        k->inflight++;
        k->inflight0 += c == 0;
        k->last_f = k->n;
    } else if (op == PP_BACKWARD_INPUT) {
        g->b_end[s * m + mb] = t + 1;
        k->nb[c]++;
        k->wq[k->wq_tail++] = mb * 2 + c;
        if (k->first_b < 0) k->first_b = k->n;
    } else {
        k->wq_head++;
        k->inflight--;
        k->inflight0 -= c == 0;
    }
    k->taken[k->n++] = pp_action_make(g->cfg, r, op, mb, c);
}

/* Rank r's choice at tick t (rules 1-4 above); false when it has nothing it can run. */
static bool step(zbv_play *g, int r, int t) {
    zbv_rank *k = &g->ranks[r];
    const bool w_waits = k->wq_head < k->wq_tail;
    const int wmb = w_waits ? k->wq[k->wq_head] / 2 : -1, wc = w_waits ? k->wq[k->wq_head] % 2 : -1;
    if (w_waits && k->inflight >= 2 * g->cfg->p) {
        take(g, r, PP_WEIGHT, wmb, wc, t);
        return true;
    }
    const bool b0 = backward_ready(g, r, 0, t), b1 = backward_ready(g, r, 1, t);
    if (b0 || b1) {
        const int c = b0 && (!b1 || k->nb[0] <= k->nb[1]) ? 0 : 1;
        take(g, r, PP_BACKWARD_INPUT, k->nb[c], c, t);
        return true;
    }
    for (int c = 1; c >= 0; c--)
        if (forward_ready(g, r, c, t)) {
            take(g, r, PP_FORWARD, k->nf[c], c, t);
            return true;
        }
    if (w_waits) {
        take(g, r, PP_WEIGHT, wmb, wc, t);
        return true;
    }
    return false;
}

/* Plays every rank to its end; returns the ticks it took, or -1 when it stalled. */
static int play(zbv_play *g) {
    const int p = g->cfg->p, n = 6 * g->cfg->m;
    for (int t = 0;; t++) {
        bool moved = false, done = true;
        for (int r = 0; r < p; r++) {
            if (g->ranks[r].n == n) continue;
            done = false;
            moved = step(g, r, t) || moved;
        }
        if (done) return t;
        /* Actions of tick t-1 became visible at t; if none moved now, none ever will. */
        if (!moved) return -1;
    }
}

/* One play with chunk 0 capped at k sets; rank `rank`'s actions go to dst (6m), its first B
 * and last F to *first_b, *last_f. Returns the ticks, or -1 when it stalled. */
static int play_with(const pp_config *cfg, int k, int rank, pp_action *dst, int *first_b,
                     int *last_f) {
    const int p = cfg->p, m = cfg->m, S = 2 * p, n = 6 * m;
    zbv_play g = {cfg, k, mallocCheck(sizeof(int) * (size_t)(S * m)),
                  mallocCheck(sizeof(int) * (size_t)(S * m)),
                  callocCheck((size_t)p, sizeof(zbv_rank))};
    for (int i = 0; i < S * m; i++) g.f_end[i] = g.b_end[i] = -1;
    for (int r = 0; r < p; r++) {
        g.ranks[r].wq = mallocCheck(sizeof(int) * (size_t)(2 * m));
        g.ranks[r].taken = r == rank ? dst : mallocCheck(sizeof(pp_action) * (size_t)n);
        g.ranks[r].first_b = -1;
    }
    const int ticks = play(&g);
    *first_b = g.ranks[rank].first_b;
    *last_f = g.ranks[rank].last_f;
    for (int r = 0; r < p; r++) {
        free(g.ranks[r].wq);
        if (r != rank) free(g.ranks[r].taken);
    }
    free(g.ranks);
    free(g.f_end);
    free(g.b_end);
    return ticks;
}

void pp_zbv_plan(const pp_config *cfg, int rank, pp_rank_plan *out) {
    const int p = cfg->p, n = 6 * cfg->m;
    CHECK(cfg->kind == PP_ZBV && cfg->v == 2, "pp_zbv_plan builds zbv (2 chunks per rank)");
    CHECK(out->n == n, "a zbv plan has 6m actions: F, B and W of m micro-batches on 2 chunks");
    int best = -1, best_k = -1, first_b, last_f;
    for (int k = p; k <= 2 * p - 1 || (p == 1 && k == 1); k++) {
        int ticks = play_with(cfg, k, rank, out->actions, &first_b, &last_f);
        if (ticks >= 0 && (best < 0 || ticks < best)) best = ticks, best_k = k;
    }
    CHECK(best_k >= 0, "some zbv play must run to its end (see schedule_zbv.c)");
    play_with(cfg, best_k, rank, out->actions, &first_b, &last_f);
    for (int i = 0; i < n; i++)
        out->actions[i].phase = i < first_b ? PP_WARMUP : i > last_f ? PP_COOLDOWN : PP_STEADY;
    out->warmup = first_b;
    out->cooldown = n - 1 - last_f;
}
