/* schedule.c — the three pipeline schedules as action lists. See schedule.h for the manual.
 *
 * All three schedules are built by one function from three ingredients:
 *   - the order in which the rank's forwards run    (fwd[k] = (mb, chunk), k < N = m·v),
 *   - the order in which its backwards run           (bwd[k]),
 *   - the number W of warmup forwards.
 * The plan is then always
 *     F fwd[0] .. F fwd[W-1] | F fwd[W] B bwd[0]  F fwd[W+1] B bwd[1] .. | B bwd[N-W] .. B bwd[N-1]
 *          warmup (W)          steady: N-W (forward, backward) pairs      cooldown (W)
 * GPipe is the case W = N; 1F1B and interleaved differ only in W and the two orders.
 *
 * zb-h1 has its own small generator below; zbv, the published construction, in schedule_zbv.c.
 *
 * Not here: checking that a schedule can run (schedule_sim.c) or running it (the executor).
 */
#include "src/pp/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/pp/schedule_dualpipev.h"
#include "src/pp/schedule_zbv.h"
#include "src/runtime/comm_tag.h"

bool pp_kind_parse(const char *name, pp_kind *out) {
    static const struct {
        const char *name;
        pp_kind kind;
    } k[] = {{"gpipe", PP_GPIPE}, {"1f1b", PP_1F1B}, {"interleaved", PP_INTERLEAVED},
             {"zb-h1", PP_ZB_H1}, {"zbv", PP_ZBV},   {"dualpipev", PP_DUALPIPEV}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (name && strcmp(name, k[i].name) == 0) {
            *out = k[i].kind;
            return true;
        }
    return false;
}

const char *pp_kind_name(pp_kind kind) {
    switch (kind) {
    case PP_GPIPE: return "gpipe";
    case PP_1F1B: return "1f1b";
    case PP_INTERLEAVED: return "interleaved";
    case PP_ZB_H1: return "zb-h1";
    case PP_ZBV: return "zbv";
    case PP_DUALPIPEV: return "dualpipev";
    }
    return "?";
}

bool pp_config_valid(const pp_config *cfg, char *msg, size_t cap) {
    const int p = cfg->p, m = cfg->m, v = cfg->v;
    if (cfg->kind != PP_GPIPE && cfg->kind != PP_1F1B && cfg->kind != PP_INTERLEAVED &&
        cfg->kind != PP_ZB_H1 && cfg->kind != PP_ZBV && cfg->kind != PP_DUALPIPEV)
        snprintf(msg, cap,
                 "unknown pipeline schedule %d (one of gpipe, 1f1b, interleaved, zb-h1, zbv, "
                 "dualpipev)",
                 (int)cfg->kind);
    else if (p < 1) snprintf(msg, cap, "pipeline size p = %d must be at least 1", p);
    else if (m < 1) snprintf(msg, cap, "number of micro-batches m = %d must be at least 1", m);
    else if (v < 1) snprintf(msg, cap, "v = %d model chunks per rank must be at least 1", v);
    else if (cfg->kind == PP_INTERLEAVED && p < 2)
        snprintf(msg, cap,
                 "the interleaved schedule needs a pipeline of at least 2 ranks, got p = %d "
                 "(--pipeline-model-parallel-size > 1)",
                 p);
    else if (cfg->kind == PP_INTERLEAVED && v < 2)
        snprintf(msg, cap,
                 "the interleaved schedule needs at least 2 model chunks per rank, got v = %d "
                 "(use 1f1b for one chunk)",
                 v);
    else if (pp_v_placement(cfg->kind) && v != 2)
        snprintf(msg, cap,
                 "v = %d model chunks per rank: %s always runs 2 chunks per rank (the two arms "
                 "of the V)",
                 v, pp_kind_name(cfg->kind));
    else if (cfg->kind == PP_DUALPIPEV && m < 2 * p)
        snprintf(msg, cap,
                 "m = %d micro-batches is fewer than 2p = %d: dualpipev sends 2(p - 1 - r) "
                 "micro-batches down rank r's arm of the V before its first backward",
                 m, 2 * p);
    else if (cfg->kind != PP_INTERLEAVED && !pp_v_placement(cfg->kind) && v != 1)
        snprintf(msg, cap,
                 "v = %d model chunks per rank needs the interleaved schedule; %s runs one chunk "
                 "per rank",
                 v, pp_kind_name(cfg->kind));
    else if (cfg->kind == PP_INTERLEAVED && m % p != 0)
        snprintf(msg, cap,
                 "m = %d micro-batches is not a multiple of the pipeline size p = %d: the "
                 "interleaved schedule walks micro-batches in groups of p",
                 m, p);
    else if ((long long)2 * m * p * v > COMM_MAX_TAG + 1LL)
        snprintf(msg, cap,
                 "m = %d micro-batches × p·v = %d stages need 2·m·p·v = %lld message tags; "
                 "tags stop at COMM_MAX_TAG = %d (src/runtime/comm_tag.h)",
                 m, p * v, 2LL * m * p * v, COMM_MAX_TAG);
    else return true;
    return false;
}

void pp_config_check(const pp_config *cfg, const char *who) {
    char msg[256];
    if (!pp_config_valid(cfg, msg, sizeof msg)) die("%s: %s", who, msg);
}

int pp_stage(const pp_config *cfg, int rank, int chunk) {
    if (pp_v_placement(cfg->kind)) return chunk == 0 ? rank : 2 * cfg->p - 1 - rank;
    return chunk * cfg->p + rank;
}

void pp_stage_owner(const pp_config *cfg, int stage, int *rank, int *chunk) {
    const int p = cfg->p;
    CHECK(stage >= 0 && stage < p * cfg->v, "a virtual stage is in [0, p·v)");
    if (pp_v_placement(cfg->kind)) {
        *chunk = stage < p ? 0 : 1;
        *rank = stage < p ? stage : 2 * p - 1 - stage;
    } else {
        *chunk = stage / p;
        *rank = stage % p;
    }
}

bool pp_splits_backward(pp_kind kind) {
    return kind == PP_ZB_H1 || kind == PP_ZBV || kind == PP_DUALPIPEV;
}

bool pp_v_placement(pp_kind kind) { return kind == PP_ZBV || kind == PP_DUALPIPEV; }

bool pp_name_v_placement(const char *name) {
    pp_kind k;
    return pp_kind_parse(name, &k) && pp_v_placement(k);
}

int pp_default_chunks(pp_kind kind) {
    return kind == PP_INTERLEAVED || pp_v_placement(kind) ? 2 : 1;
}

static int min_int(int a, int b) { return a < b ? a : b; }

/* exercise 5 begins: warm-up count, interleaved order (tutorials/exercises/05-one-f-one-b) */
/* W, the forwards `rank` runs before its first backward, for 1F1B (and zb-h1) and for the
 * interleaved schedule (v chunks per rank): the fewest that keep every rank busy once the
 * first backward comes back up the pipeline. */
static int warmup_1f1b_or_interleaved(const pp_config *cfg, int rank) {
    const int p = cfg->p, m = cfg->m, v = cfg->v;
    if (cfg->kind == PP_INTERLEAVED) return min_int(m * v, 2 * (p - rank - 1) + (v - 1) * p);
    return min_int(p - rank - 1, m);
}

/* The (mb, chunk) of the k-th forward of a rank, k < m·v.
 * v = 1: micro-batch order. Interleaved: groups of p micro-batches, chunk by chunk:
 *     k:      0    1    2    3    4    5    6    7    8  ...      (p = 4, v = 2)
 *     fwd:  0c0  1c0  2c0  3c0  0c1  1c1  2c1  3c1  4c0 ...
 *     bwd:  0c1  1c1  2c1  3c1  0c0  1c0  2c0  3c0  4c1 ...       (chunk v-1-c) */
static void kth_forward(const pp_config *cfg, int k, int *mb, int *chunk) {
    const int p = cfg->p, v = cfg->v;
    const int group = k / (p * v), in_group = k % (p * v);
    *chunk = in_group / p;
    *mb = group * p + in_group % p;
}
/* exercise 5 ends */

int pp_warmup(const pp_config *cfg, int rank) {
    switch (cfg->kind) {
    case PP_GPIPE: return cfg->m;
    case PP_1F1B:
    case PP_ZB_H1:
    case PP_INTERLEAVED: return warmup_1f1b_or_interleaved(cfg, rank);
    case PP_ZBV:
    case PP_DUALPIPEV: {
        pp_rank_plan plan;
        pp_rank_plan_build(cfg, rank, &plan);
        const int w = plan.warmup;
        pp_rank_plan_free(&plan);
        return w;
    }
    }
    return 0;
}

int pp_tag(pp_dir dir, int mb, int dst_stage, int nstages) {
    return (mb * nstages + dst_stage) * 2 + (int)dir;
}

int pp_tag_microbatch(int tag, int nstages) { return tag / 2 / nstages; }

int pp_tag_count(const pp_config *cfg) { return 2 * cfg->m * cfg->p * cfg->v; }

pp_action pp_action_make(const pp_config *cfg, int rank, pp_op op, int mb, int chunk) {
    const int S = cfg->p * cfg->v;
    pp_action a;
    memset(&a, 0, sizeof a);
    a.op = op;
    a.mb = mb;
    a.chunk = chunk;
    a.stage = pp_stage(cfg, rank, chunk);
    a.phase = PP_STEADY;
    a.recv_peer = a.recv_stage = a.recv_tag = -1;
    a.send_peer = a.send_stage = a.send_tag = -1;
    const int s = a.stage;
    int prev = -1, next = -1, c; /* owners of stages s-1 and s+1 */
    if (s > 0) pp_stage_owner(cfg, s - 1, &prev, &c);
    if (s < S - 1) pp_stage_owner(cfg, s + 1, &next, &c);
    if (op == PP_FORWARD) {
        /* activation in from s-1, activation out to s+1 */
        if (s > 0) {
            a.recv_peer = prev;
            a.recv_stage = s - 1;
            a.recv_tag = pp_tag(PP_ACTIVATION, mb, s, S);
        }
        if (s < S - 1) {
            a.send_peer = next;
            a.send_stage = s + 1;
            a.send_tag = pp_tag(PP_ACTIVATION, mb, s + 1, S);
        }
    } else if (op == PP_BACKWARD || op == PP_BACKWARD_INPUT) {
        /* output-gradient in from s+1, input-gradient out to s-1 (W has no messages) */
        if (s < S - 1) {
            a.recv_peer = next;
            a.recv_stage = s + 1;
            a.recv_tag = pp_tag(PP_GRADIENT, mb, s, S);
        }
        if (s > 0) {
            a.send_peer = prev;
            a.send_stage = s - 1;
            a.send_tag = pp_tag(PP_GRADIENT, mb, s - 1, S);
        }
    }
    return a;
}

/* The (mb, chunk) of the k-th backward: kth_forward's order, chunks mirrored (v-1-c). */
static void kth_backward(const pp_config *cfg, int k, int *mb, int *chunk) {
    kth_forward(cfg, k, mb, chunk);
    *chunk = cfg->v - 1 - *chunk;
}

/* zb-h1 on `rank` (v = 1): see schedule.h. F/B/W counters nf, nb, nw; W's run in the
 * order of their B's. */
static void zb_h1_plan(const pp_config *cfg, int rank, pp_rank_plan *out) {
    const int m = cfg->m, W = pp_warmup(cfg, rank);
    int n = 0, nf = 0, nb = 0, nw = 0;
#define ZB_PUSH(op, counter, ph)                                                                   \
    do {                                                                                           \
        out->actions[n] = pp_action_make(cfg, rank, op, counter++, 0);                             \
        out->actions[n++].phase = ph;                                                              \
    } while (0)
    for (int i = 0; i < W; i++) ZB_PUSH(PP_FORWARD, nf, PP_WARMUP);
    for (int i = 0; i < rank && nf < m; i++) { /* keep this rank's first W's back */
        ZB_PUSH(PP_FORWARD, nf, PP_STEADY);
        ZB_PUSH(PP_BACKWARD_INPUT, nb, PP_STEADY);
    }
    while (nf < m) {
        ZB_PUSH(PP_FORWARD, nf, PP_STEADY);
        ZB_PUSH(PP_BACKWARD_INPUT, nb, PP_STEADY);
        ZB_PUSH(PP_WEIGHT, nw, PP_STEADY);
    }
    const int last_forward = n;
    while (nb < m) {
        ZB_PUSH(PP_BACKWARD_INPUT, nb, PP_COOLDOWN);
        ZB_PUSH(PP_WEIGHT, nw, PP_COOLDOWN);
    }
    while (nw < m) ZB_PUSH(PP_WEIGHT, nw, PP_COOLDOWN);
#undef ZB_PUSH
    out->cooldown = n - last_forward;
    CHECK(n == out->n && nf == m && nb == m && nw == m, "the plan must hold every F, B and W once");
}

void pp_rank_plan_build(const pp_config *cfg, int rank, pp_rank_plan *out) {
    char msg[256];
    CHECK(pp_config_valid(cfg, msg, sizeof msg),
          "check the configuration with pp_config_check first");
    CHECK(rank >= 0 && rank < cfg->p, "the pipeline rank must be in [0, p)");
    const int N = cfg->m * cfg->v; /* forwards (and backwards) on this rank */
    const int W = pp_v_placement(cfg->kind) ? 0 : pp_warmup(cfg, rank); /* V: set by its plan */
    memset(out, 0, sizeof *out);
    out->rank = rank;
    out->n = (pp_splits_backward(cfg->kind) ? 3 : 2) * N;
    out->warmup = W;
    out->cooldown = W;
    out->actions = mallocCheck((size_t)out->n * sizeof *out->actions);
    if (cfg->kind == PP_ZB_H1) {
        zb_h1_plan(cfg, rank, out);
        return;
    }
    if (cfg->kind == PP_ZBV) {
        pp_zbv_plan(cfg, rank, out);
        return;
    }
    if (cfg->kind == PP_DUALPIPEV) {
        pp_dualpipev_plan(cfg, rank, out);
        return;
    }
    int n = 0, nf = 0, nb = 0, mb, chunk;
#define PUSH(op, next_fn, counter, ph)                                                             \
    do {                                                                                           \
        next_fn(cfg, counter++, &mb, &chunk);                                                      \
        out->actions[n] = pp_action_make(cfg, rank, op, mb, chunk);                                \
        out->actions[n++].phase = ph;                                                              \
    } while (0)
    for (int i = 0; i < W; i++) PUSH(PP_FORWARD, kth_forward, nf, PP_WARMUP);
    for (int i = 0; i < N - W; i++) {
        PUSH(PP_FORWARD, kth_forward, nf, PP_STEADY);
        PUSH(PP_BACKWARD, kth_backward, nb, PP_STEADY);
    }
    for (int i = 0; i < W; i++) PUSH(PP_BACKWARD, kth_backward, nb, PP_COOLDOWN);

#undef PUSH
    CHECK(n == out->n && nf == N && nb == N, "the plan must hold every forward and backward once");
}

void pp_rank_plan_free(pp_rank_plan *plan) {
    free(plan->actions);
    plan->actions = NULL;
    plan->n = 0;
}

pp_plan_holds pp_plan_holds_of(const pp_rank_plan *plan, int v) {
    pp_plan_holds h = {v,
                       callocCheck((size_t)v, sizeof(int)),
                       callocCheck((size_t)v, sizeof(int)),
                       callocCheck((size_t)v, sizeof(int)),
                       0,
                       0,
                       callocCheck((size_t)plan->n + 1, sizeof(int))};
    int *acts = callocCheck((size_t)(3 * v), sizeof(int)), *bpart = acts + v, *hand = acts + 2 * v;
    int sets = 0, self = 0;
    for (int i = 0; i < plan->n; i++) {
        const pp_action *a = &plan->actions[i];
        CHECK(a->chunk >= 0 && a->chunk < v, "an action's chunk is one of the rank's v chunks");
        const int c = a->chunk;
        if (a->recv_peer == plan->rank) self--;
        if (a->op == PP_FORWARD) acts[c]++, bpart[c]++, sets++;
        if (a->op == PP_BACKWARD_INPUT) hand[c]++;
        if (a->op == PP_BACKWARD || a->op == PP_BACKWARD_INPUT) bpart[c]--;
        if (a->op == PP_BACKWARD || a->op == PP_WEIGHT) acts[c]--, sets--;
        if (a->op == PP_WEIGHT) hand[c]--;
        if (acts[c] > h.acts[c]) h.acts[c] = acts[c];
        if (bpart[c] > h.acts_b[c]) h.acts_b[c] = bpart[c];
        if (hand[c] > h.handover[c]) h.handover[c] = hand[c];
        if (sets > h.sets) h.sets = sets;
        h.sets_after[i] = sets;
        if (a->send_peer == plan->rank && ++self > h.self_msgs) h.self_msgs = self;
    }
    free(acts);
    return h;
}

/* +1 when the action takes the part, −1 when it gives it back, else 0. */
static int part_delta(pp_op op, const pp_part *part) {
    if (op == PP_FORWARD) return 1;
    if (op == PP_BACKWARD) return -1;
    return (op == PP_WEIGHT) == part->until_w ? -1 : 0;
}

size_t pp_pool_bytes(const pp_rank_plan *plan, int v, int nparts, const pp_part *parts) {
    const int n = v * nparts;
    size_t total = 0;
    for (int s = 0; s < n; s++) { /* each size once: at its first part */
        const size_t size = parts[s].bytes;
        bool seen = size == 0;
        for (int t = 0; t < s && !seen; t++) seen = parts[t].bytes == size;
        if (seen) continue;
        int held = 0, most = 0;
        for (int i = 0; i < plan->n; i++) {
            const pp_action *a = &plan->actions[i];
            CHECK(a->chunk >= 0 && a->chunk < v, "an action's chunk is one of the rank's v chunks");
            for (int k = 0; k < nparts; k++) {
                const pp_part *part = &parts[a->chunk * nparts + k];
                if (part->bytes == size) held += part_delta(a->op, part);
            }
            most = held > most ? held : most;
        }
        total += (size_t)most * size;
    }
    return total;
}

void pp_plan_holds_free(pp_plan_holds *h) {
    free(h->acts);
    free(h->acts_b);
    free(h->handover);
    free(h->sets_after);
    h->acts = h->acts_b = h->handover = h->sets_after = NULL;
}

void pp_schedule_build(const pp_config *cfg, pp_schedule *out) {
    pp_config_check(cfg, "pp_schedule_build");
    out->cfg = *cfg;
    out->ranks = callocCheck((size_t)cfg->p, sizeof *out->ranks);
    for (int r = 0; r < cfg->p; r++) pp_rank_plan_build(cfg, r, &out->ranks[r]);
}

void pp_schedule_free(pp_schedule *s) {
    if (!s->ranks) return;
    for (int r = 0; r < s->cfg.p; r++) pp_rank_plan_free(&s->ranks[r]);
    free(s->ranks);
    s->ranks = NULL;
}

char pp_op_letter(pp_op op) { return op == PP_FORWARD ? 'F' : op == PP_WEIGHT ? 'W' : 'B'; }

const char *pp_action_name(const pp_action *a, int v, char *buf, size_t cap) {
    if (v > 1) snprintf(buf, cap, "%c%dc%d", pp_op_letter(a->op), a->mb, a->chunk);
    else snprintf(buf, cap, "%c%d", pp_op_letter(a->op), a->mb);
    return buf;
}

double pp_bubble_of_ideal(int p, int m, int v) { return (double)(p - 1) / ((double)v * m); }

double pp_textbook_of_ideal(const pp_config *cfg) {
    if (cfg->kind == PP_ZB_H1) return (double)(cfg->p - 1) / (3.0 * cfg->m);
    if (pp_v_placement(cfg->kind)) return (double)(cfg->p - 1) / (6.0 * cfg->m);
    return pp_bubble_of_ideal(cfg->p, cfg->m, cfg->kind == PP_INTERLEAVED ? cfg->v : 1);
}

double pp_textbook_of_total(const pp_config *cfg, char *formula, size_t cap) {
    pp_textbook_text t;
    pp_textbook_formulas(cfg, &t);
    if (formula) snprintf(formula, cap, "%s%s%s", t.total, t.assumes[0] ? ", " : "", t.assumes);
    if (cfg->kind == PP_ZB_H1) return (double)(cfg->p - 1) / (3.0 * cfg->m + cfg->p - 1);
    if (pp_v_placement(cfg->kind)) return (double)(cfg->p - 1) / (6.0 * cfg->m + cfg->p - 1);
    return pp_bubble_of_total(cfg->p, cfg->m, cfg->kind == PP_INTERLEAVED ? cfg->v : 1);
}

void pp_textbook_formulas(const pp_config *cfg, pp_textbook_text *out) {
    const bool zb = pp_splits_backward(cfg->kind);
    const char *units = cfg->kind == PP_ZB_H1 ? "3m" : "6m"; /* F, B, W per chunk: 3 or 6 */
    if (zb) {
        snprintf(out->total, sizeof out->total, "(p-1)/(%s+p-1)", units);
        snprintf(out->ideal, sizeof out->ideal, "(p-1)/(%s)", units);
    } else if (cfg->kind == PP_INTERLEAVED) {
        snprintf(out->total, sizeof out->total, "(p-1)/(v*m+p-1)");
        snprintf(out->ideal, sizeof out->ideal, "(p-1)/(v*m)");
    } else {
        snprintf(out->total, sizeof out->total, "(p-1)/(m+p-1)");
        snprintf(out->ideal, sizeof out->ideal, "(p-1)/m");
    }
    snprintf(out->assumes, sizeof out->assumes, "%s", zb ? "F = B = W" : "");
    out->shows_v = cfg->kind == PP_INTERLEAVED;
}

double pp_bubble_of_total(int p, int m, int v) { return (double)(p - 1) / ((double)v * m + p - 1); }
