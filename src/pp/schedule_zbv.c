/* schedule_zbv.c — ZB-V as published: the construction of Qi et al.'s V-shaped zero-bubble
 * schedule ("Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv v2 §ZB-V), in the order its
 * reference generator builds it (sail-sg/zero-bubble-pipeline-parallelism,
 * megatron/core/pipeline_parallel/zerobubble/scheduler/zbv.py). schedule.h has the V placement
 * and the rules; this file builds one rank's order. tests/pp/zbv_reference/ keeps the
 * reference generator's orders at p = 2, 4, 8 and m = 2p, 3p, 4p, and schedule_test.c checks
 * this file gives exactly them.
 *
 * Legs. A micro-batch crosses the ranks twice, down the V (rank 0 → p−1) and back up
 * (p−1 → 0). Its forward goes down on chunk 0 and up on chunk 1; its backward comes down on
 * chunk 1 (from the loss on rank 0) and goes up on chunk 0. So an action is (kind, leg): on
 * leg 0 rank r waits for rank r−1, on leg 1 for rank r+1, and
 *     forward chunk = leg,   backward (B, W) chunk = 1 − leg.
 *
 * The construction is played in time, every F, B and W one unit long and communication free
 * (the order is the schedule; the executor runs it with real costs). An action starts when its
 * rank is free and its input has arrived; a rank's activation memory holds at most 2p chunk
 * sets (1F1B's p stage sets): an F adds one, its W frees it. Five phases:
 *   1. the first chunk-0 F of every rank, top down;
 *   2. going up the V (rank p−1 to 0): rank r keeps running chunk-0 F's (ranks 0..r along with
 *      it) while they end before its first chunk-1 F can start and its memory keeps room for the
 *      2r + 2 sets still to come; then that chunk-1 F;
 *   3. ranks 1..p−1 catch up with the rank above: forwards alternating chunk 0 and chunk 1,
 *      bottom rank first, until each has run as many as the rank above and more chunk-1's;
 *   4. 2m rounds, each one B per rank then one F per rank. A rank alternates B's: chunk 1's
 *      when it has run as many of chunk 0's, else chunk 0's once its output gradient is there;
 *      the round runs chunk 0's B's bottom rank up, then chunk 1's top down. A rank's F is
 *      chunk 0's when it has run as many of chunk 1's, else chunk 1's once its input is there,
 *      else chunk 0's when its input is there. Before a B or an F, W's fill any wait for its input; one more W goes in when
 *      the wait would make this rank idle longer than the worst rank already is (the "approved
 *      bubble" below); W's run in the order of their B's;
 *   5. the W's left.
 * Phase 4's one-more-W rule is tried with and without it for B's and for F's, and each of the
 * four plays is replayed with every rank allowed the idle time the last play gave it, while
 * that lowers the worst rank's idle time; the play with the least is kept (ties: the first).
 * With m >= p it reaches the least makespan, 6m + p − 1 (tested for p <= 8, m <= 24).
 *
 *     p = 2, m = 4 (`trident schedule --pipeline-schedule zbv` prints every grid):
 *     rank 0 (s0, s3):  F0c0 F1c0 F2c0 F0c1 B0c1 W0c1 F1c1 B1c1 W1c1 F3c0 B0c0 W0c0 F2c1 ...
 *     rank 1 (s1, s2):  F0c0 F0c1 F1c0 F1c1 B0c1 W0c1 F2c0 B0c0 W0c0 F2c1 B1c1 W1c1 F3c0 ...
 *
 * Not here: the other schedules (schedule.c), validation and timing (schedule_sim.c).
 */
#include "src/pp/schedule_zbv.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"

enum { ZF = 0, ZB = 1, ZW = 2 }; /* kind of action: forward, input gradient, weight gradient */

/* The play's unit costs and memory: F, B, W one unit, communication free; an F holds one
 * chunk set, a W frees it, at most 2p held. */
static const int k_cost[3] = {1, 1, 1}, k_mem[3] = {1, 0, -1}, k_comm = 0;

/* One play of the construction. */
typedef struct {
    int p, m, cap;    /* ranks, micro-batches, chunk sets a rank may hold */
    bool fill_b;      /* phase 4: the one-more-W rule before a chunk-0 B */
    bool fill_f;      /* phase 4: the one-more-W rule before an F */
    int *end;         /* (3, 2, p, m) when (kind, leg, rank, mb) ended; -1 = not yet */
    int *count;       /* (p, 3, 2) actions of (kind, leg) run on the rank */
    int *now, *mem;   /* (p) when the rank is free; chunk sets it holds */
    int *idle;        /* (p) idle time since its first F */
    int *wq, *wq_n;   /* (p, 2m) legs of the B's whose W waits, oldest first; (p) queued */
    int *wq_head;     /* (p) */
    int *order, *n;   /* (p, 6m) kind·2 + leg, then mb in the high bits; (p) actions */
    const int *grant; /* (p) idle time each rank may have (a last play's), or NULL */
    int grant_max;    /* the largest of them */
} zbv_play;

static int *at_end(zbv_play *g, int kind, int leg, int r, int mb) {
    return &g->end[((kind * 2 + leg) * g->p + r) * g->m + mb];
}
static int *count_of(zbv_play *g, int r, int kind, int leg) {
    return &g->count[(r * 3 + kind) * 2 + leg];
}

/* The rank a leg's input comes from: r − 1 on leg 0, r + 1 on leg 1; -1 past either end. */
static int from_rank(const zbv_play *g, int leg, int r) {
    const int from = leg == 0 ? r - 1 : r + 1;
    return from >= 0 && from < g->p ? from : -1;
}

/* When the input of the next (kind, leg) on rank r ends, or -1 when it has none (the first
 * rank of its leg) or it has not run. */
static int input_end(zbv_play *g, int kind, int leg, int r) {
    const int from = from_rank(g, leg, r), mb = *count_of(g, r, kind, leg);
    return from >= 0 && mb < g->m ? *at_end(g, kind, leg, from, mb) : -1;
}

/* Whether the next (kind, leg) of rank r may start: it is the first rank of its leg, or its
 * input has run (mb < m: there is a next one). */
static bool input_ready(zbv_play *g, int kind, int leg, int r) {
    return from_rank(g, leg, r) < 0 || input_end(g, kind, leg, r) >= 0;
}

/* Runs the next (kind, leg) of rank r: after the rank is free and its input arrived. */
static void put(zbv_play *g, int kind, int leg, int r) {
    int *c = count_of(g, r, kind, leg);
    const int mb = *c, free_at = g->now[r] + k_cost[kind];
    CHECK(mb < g->m && g->mem[r] + k_mem[kind] <= g->cap, "zbv: the construction overran");
    const int from = from_rank(g, leg, r);
    int t = free_at;
    if (kind != ZW && from >= 0) {
        const int in = *at_end(g, kind, leg, from, mb);
        CHECK(in >= 0, "zbv: the construction ran an action before its input");
        if (in + k_comm + k_cost[kind] > t) t = in + k_comm + k_cost[kind];
    }
    if (*count_of(g, r, ZF, 0) > 0) g->idle[r] += t - free_at;
    *at_end(g, kind, leg, r, mb) = t;
    g->now[r] = t;
    g->mem[r] += k_mem[kind];
    g->order[r * 6 * g->m + g->n[r]++] = (mb << 3) | (kind * 2 + leg);
    if (kind == ZB) g->wq[r * 2 * g->m + g->wq_n[r]++] = leg;
    (*c)++;
}

static bool w_waits(const zbv_play *g, int r) { return g->wq_head[r] < g->wq_n[r]; }
static void put_w(zbv_play *g, int r) { put(g, ZW, g->wq[r * 2 * g->m + g->wq_head[r]++], r); }

/* The idle time rank r may still add without being the worst: the worst rank's so far (or
 * what the last play granted beyond rank r's own grant), less rank r's own. */
static int idle_allowed(const zbv_play *g, int r) {
    int worst = 0;
    for (int i = 0; i < g->p; i++) worst = g->idle[i] > worst ? g->idle[i] : worst;
    if (g->grant && g->grant_max - g->grant[r] > worst) worst = g->grant_max - g->grant[r];
    return worst - g->idle[r];
}

/* Before rank r runs (kind, leg): W's fill the wait for its input; then one more W when the
 * wait left is longer than the idle time allowed (and `rule` is on). */
static void fill_wait(zbv_play *g, int kind, int leg, int r, bool rule) {
    const int in = input_end(g, kind, leg, r);
    if (in < 0) return; /* first rank of its leg: nothing to wait for */
    while (w_waits(g, r) && in + k_comm >= g->now[r] + k_cost[ZW]) put_w(g, r);
    if (w_waits(g, r) && in + k_comm - g->now[r] > idle_allowed(g, r) && rule) put_w(g, r);
}

/* Phases 1-3: the forwards that fill the V. */
static void fill_the_v(zbv_play *g) {
    const int p = g->p, m = g->m;
    for (int r = 0; r < p; r++) put(g, ZF, 0, r);
    put(g, ZF, 1, p - 1); /* the bottom of the V: its chunk-1 F follows at once */
    for (int r = p - 2; r >= 0; r--) {
        const int arrives = *at_end(g, ZF, 1, r + 1, 0) + k_comm;
        while (g->mem[r] + k_mem[ZF] * (2 + 2 * r) <= g->cap && g->now[r] + k_cost[ZF] <= arrives &&
               *count_of(g, r, ZF, 0) < m)
            for (int j = 0; j <= r; j++) put(g, ZF, 0, j);
        put(g, ZF, 1, r);
    }
    int leg = 0;
    for (int r = 1; r < p; r++) {
        for (;;) {
            const int mine = *count_of(g, r, ZF, 0) + *count_of(g, r, ZF, 1);
            const int above = *count_of(g, r - 1, ZF, 0) + *count_of(g, r - 1, ZF, 1);
            const int up = *count_of(g, r, ZF, 1), up_above = *count_of(g, r - 1, ZF, 1);
            if (!(mine < above || (up <= up_above && up_above < m))) break;
            for (int j = p - 1; j >= r; j--)
                if (*count_of(g, j, ZF, leg) < m) put(g, ZF, leg, j);
            leg = 1 - leg;
        }
    }
}

/* Phase 4, the B half of a round: which leg each rank runs, then the B's in their order. */
static void round_of_b(zbv_play *g) {
    const int p = g->p, m = g->m;
    for (int r = 0; r < p; r++)
        while (g->mem[r] + k_mem[ZB] > g->cap) put_w(g, r);
    int *leg = mallocCheck(sizeof(int) * (size_t)p);
    for (int r = 0; r < p; r++) { /* alternate: chunk 1's B (leg 0), then chunk 0's (leg 1) */
        const int down = *count_of(g, r, ZB, 0), up = *count_of(g, r, ZB, 1);
        const bool up_ready = up < m && input_ready(g, ZB, 1, r);
        leg[r] = up >= down ? 0 : up_ready || down >= m ? 1 : 0;
    }
    for (int pass = 0; pass < 2; pass++) /* chunk 0's B's bottom up, then chunk 1's top down */
        for (int i = 0; i < p; i++) {
            const int r = pass == 0 ? p - 1 - i : i, want = pass == 0 ? 1 : 0;
            if (leg[r] != want) continue;
            fill_wait(g, ZB, leg[r], r, leg[r] == 1 || g->fill_b);
            put(g, ZB, leg[r], r);
        }
    free(leg);
}

/* Phase 4, the F half of a round: one F per rank whose next F can run. */
static void round_of_f(zbv_play *g) {
    const int p = g->p, m = g->m;
    for (int r = 0; r < p; r++) {
        const int down = *count_of(g, r, ZF, 0), up = *count_of(g, r, ZF, 1);
        if (up >= m) continue;
        int leg = -1;
        if (up >= down) leg = 0;
        else if (input_ready(g, ZF, 1, r)) leg = 1;
        else if (down < m && input_ready(g, ZF, 0, r)) leg = 0;
        if (leg < 0) continue;
        while (g->mem[r] + k_mem[ZF] > g->cap) put_w(g, r);
        fill_wait(g, ZF, leg, r, g->fill_f);
        put(g, ZF, leg, r);
    }
}

/* One whole play; returns the worst rank's idle time. */
static int play(zbv_play *g) {
    fill_the_v(g);
    for (int round = 0; round < 2 * g->m; round++) {
        round_of_b(g);
        round_of_f(g);
    }
    for (int r = 0; r < g->p; r++)
        while (w_waits(g, r)) put_w(g, r);
    int worst = 0;
    for (int r = 0; r < g->p; r++) worst = g->idle[r] > worst ? g->idle[r] : worst;
    return worst;
}

static zbv_play play_new(int p, int m, bool fill_b, bool fill_f, const int *grant) {
    zbv_play g = {.p = p, .m = m, .cap = 2 * p, .fill_b = fill_b, .fill_f = fill_f};
    g.end = mallocCheck(sizeof(int) * (size_t)(6 * p * m));
    for (int i = 0; i < 6 * p * m; i++) g.end[i] = -1;
    g.count = callocCheck((size_t)(6 * p), sizeof(int));
    g.now = callocCheck((size_t)p, sizeof(int));
    g.mem = callocCheck((size_t)p, sizeof(int));
    g.idle = callocCheck((size_t)p, sizeof(int));
    g.wq = mallocCheck(sizeof(int) * (size_t)(2 * p * m));
    g.wq_n = callocCheck((size_t)p, sizeof(int));
    g.wq_head = callocCheck((size_t)p, sizeof(int));
    g.order = mallocCheck(sizeof(int) * (size_t)(6 * p * m));
    g.n = callocCheck((size_t)p, sizeof(int));
    g.grant = grant;
    for (int r = 0; grant && r < p; r++)
        g.grant_max = r == 0 || grant[r] > g.grant_max ? grant[r] : g.grant_max;
    return g;
}

static void play_free(zbv_play *g) {
    free(g->end), free(g->count), free(g->now), free(g->mem), free(g->idle);
    free(g->wq), free(g->wq_n), free(g->wq_head), free(g->order), free(g->n);
}

/* The four plays, each replayed with the idle times it gave while that helps; the best kept
 * (its order and idle times live on in *best). */
static void best_play(int p, int m, zbv_play *best) {
    int best_worst = -1;
    for (int fb = 0; fb < 2; fb++)
        for (int ff = 0; ff < 2; ff++) {
            zbv_play cur = play_new(p, m, fb == 0, ff == 0, NULL);
            int worst = play(&cur);
            for (;;) { /* replay granting each rank the idle time it had */
                zbv_play next = play_new(p, m, fb == 0, ff == 0, cur.idle);
                const int w = play(&next);
                if (w >= worst) {
                    play_free(&next);
                    break;
                }
                play_free(&cur);
                cur = next, worst = w;
            }
            if (best_worst < 0 || worst < best_worst) {
                if (best_worst >= 0) play_free(best);
                *best = cur, best_worst = worst;
            } else {
                play_free(&cur);
            }
        }
}

void pp_zbv_plan(const pp_config *cfg, int rank, pp_rank_plan *out) {
    const int n = 6 * cfg->m;
    CHECK(cfg->kind == PP_ZBV && cfg->v == 2, "pp_zbv_plan builds zbv (2 chunks per rank)");
    CHECK(out->n == n, "a zbv plan has 6m actions: F, B and W of m micro-batches on 2 chunks");
    zbv_play g;
    best_play(cfg->p, cfg->m, &g);
    CHECK(g.n[rank] == n, "zbv: the construction placed every action");
    int first_b = -1, last_f = -1;
    for (int i = 0; i < n; i++) {
        const int code = g.order[rank * n + i], kind = (code & 7) / 2, leg = code & 1;
        const pp_op op = kind == ZF ? PP_FORWARD : kind == ZB ? PP_BACKWARD_INPUT : PP_WEIGHT;
        out->actions[i] = pp_action_make(cfg, rank, op, code >> 3, kind == ZF ? leg : 1 - leg);
        if (kind == ZB && first_b < 0) first_b = i;
        if (kind == ZF) last_f = i;
    }
    for (int i = 0; i < n; i++)
        out->actions[i].phase = i < first_b ? PP_WARMUP : i > last_f ? PP_COOLDOWN : PP_STEADY;
    out->warmup = first_b;
    out->cooldown = n - 1 - last_f;
    play_free(&g);
}
