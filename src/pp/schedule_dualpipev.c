/* schedule_dualpipev.c — DualPipeV: DeepSeek's bidirectional DualPipe "cut in half" onto the V
 * placement (DeepSeek-V3 technical report §3.2.1; deepseek-ai/DualPipe, dualpipe/dualpipev.py;
 * torch.distributed.pipelining's ScheduleDualPipeV). schedule.h has the V placement: rank r
 * holds stage r (chunk 0, on the way down) and stage 2p−1−r (chunk 1, on the way back up).
 *
 * What it promises (DualPipe's README, per chunk: F forward, B a whole backward, W its weight
 * part, F&B a forward and a backward of two micro-batches run as one overlapped pair):
 *     bubble  (p − 1)(F&B + B − 3W)   per rank, for p ranks of DualPipeV (DualPipe's
 *                                      (PP/2 − 1)(F&B + B − 3W) with its PP = 2p stages)
 *     parameters 1× (DualPipe keeps 2×: each rank holds its stages for both directions)
 *     activations: at most 2p chunk sets on rank 0 (1F1B's p stage sets), fewer further down
 * Overlapping F&B needs two streams and communication that runs beside compute (GPUs);
 * Trident runs a pair as its F then its B, each receiving its input just before it runs, so
 * F&B = F + B here. What the simulation then gives (schedule_sim_test.c checks it): with
 * F = B (a whole backward as cheap as a forward) exactly the published bubble; with the usual
 * B = 2F (F = Bi = W) only the fill of the V, (p − 1)·F, half the published
 * (p − 1)(F&B + B − 3W) = 2(p − 1)·F — the W's deferred in steps 3, 6 and 7 fill what the
 * formula counts as idle.
 *
 * Its order, rank r of p, m >= 2p micro-batches (Trident's B is the backward's input part and
 * W its weight part; "B c k" with W right after is DualPipe's whole backward; a W is deferred
 * when the text says so, and deferred W's run oldest first):
 *   1. 2(p − r − 1) × F c0
 *   2. r + 1 × (F c0, F c1)
 *   3. p − r − 1 × (B c1 with its W deferred, a deferred W, F c1)
 *   4. m − 2p + r + 1 × (F c0 & B c1, F c1 & B c0)    each B whole: the overlapped pairs
 *   5. p − r − 1 × (B c1, F c1 & B c0)                each B whole
 *   6. r + 1 × (B c1, B c0): whole for the first half; from the middle on, the W's deferred
 *      (odd ranks from that round's B c1, even ranks from its B c0)
 *   7. p − r − 1 × (a deferred W, B c0 with its W deferred)
 *   8. r + 1 × a deferred W
 * Each count adds up to m F's and m B's per chunk (the test checks it). Phases: warmup is step
 * 1-3 (up to the first B), cooldown after the last F.
 *
 * Not here: the placement (schedule.c), validation and timing (schedule_sim.c).
 */
#include "src/pp/schedule_dualpipev.h"

#include <stdlib.h>

#include "src/core/check.h"

/* One rank's plan as it is written: the next micro-batch per (op, chunk), the deferred W's. */
typedef struct {
    const pp_config *cfg;
    int rank;
    pp_rank_plan *out;
    int n;               /* actions written */
    int nf[2], nb[2];    /* next F / B micro-batch per chunk */
    int *wq, wq_h, wq_t; /* (2m) deferred W's, mb·2 + chunk, oldest at wq_h */
} dpv_writer;

static void emit(dpv_writer *w, pp_op op, int mb, int chunk) {
    CHECK(w->n < w->out->n, "dualpipev: a plan has 6m actions");
    w->out->actions[w->n++] = pp_action_make(w->cfg, w->rank, op, mb, chunk);
}

static void f(dpv_writer *w, int c) { emit(w, PP_FORWARD, w->nf[c]++, c); }

/* B of chunk c; its W right after (a whole backward) or deferred. */
static void b(dpv_writer *w, int c, bool defer) {
    const int mb = w->nb[c]++;
    emit(w, PP_BACKWARD_INPUT, mb, c);
    if (defer) w->wq[w->wq_t++] = mb * 2 + c;
    else emit(w, PP_WEIGHT, mb, c);
}

/* F of chunk c and the whole backward of the other chunk, as one overlapped pair. */
static void pair(dpv_writer *w, int c) {
    f(w, c);
    b(w, 1 - c, false);
}

static void deferred_w(dpv_writer *w) {
    CHECK(w->wq_h < w->wq_t, "dualpipev: a deferred W is waiting");
    const int k = w->wq[w->wq_h++];
    emit(w, PP_WEIGHT, k / 2, k % 2);
}

void pp_dualpipev_plan(const pp_config *cfg, int rank, pp_rank_plan *out) {
    const int p = cfg->p, m = cfg->m, r = rank, below = p - r - 1;
    CHECK(cfg->kind == PP_DUALPIPEV && cfg->v == 2 && m >= 2 * p,
          "pp_dualpipev_plan builds dualpipev: 2 chunks per rank, m >= 2p");
    dpv_writer w = {cfg, rank, out, 0, {0, 0}, {0, 0}, mallocCheck(sizeof(int) * (size_t)(2 * m)),
                    0,   0};
    for (int i = 0; i < 2 * below; i++) f(&w, 0);                             /* 1 */
    for (int i = 0; i < r + 1; i++) f(&w, 0), f(&w, 1);                       /* 2 */
    for (int i = 0; i < below; i++) b(&w, 1, true), deferred_w(&w), f(&w, 1); /* 3 */
    for (int i = 0; i < m - 2 * p + r + 1; i++) { /* 4; the bottom's first pair not overlapped */
        if (i == 0 && r == p - 1) f(&w, 0), b(&w, 1, false);
        else pair(&w, 0);
        pair(&w, 1);
    }
    for (int i = 0; i < below; i++) b(&w, 1, false), pair(&w, 1); /* 5 */
    const int half = (r + 1) / 2;                                 /* 6 */
    for (int i = 0; i < r + 1; i++) {
        b(&w, 1, i > half || (i == half && r % 2 == 1));
        b(&w, 0, i >= half);
    }
    for (int i = 0; i < below; i++) deferred_w(&w), b(&w, 0, true); /* 7 */
    while (w.wq_h < w.wq_t) deferred_w(&w);                         /* 8 */
    CHECK(w.n == out->n, "dualpipev: the eight steps write 6m actions");
    int first_b = -1, last_f = -1;
    for (int i = 0; i < out->n; i++) {
        if (out->actions[i].op == PP_BACKWARD_INPUT && first_b < 0) first_b = i;
        if (out->actions[i].op == PP_FORWARD) last_f = i;
    }
    for (int i = 0; i < out->n; i++)
        out->actions[i].phase = i < first_b ? PP_WARMUP : i > last_f ? PP_COOLDOWN : PP_STEADY;
    out->warmup = first_b;
    out->cooldown = out->n - 1 - last_f;
    free(w.wq);
}
