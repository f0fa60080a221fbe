/* moe_layer.c — the MoE layer (moe_layer.h): parameter views, the one activation buffer,
 * and forward / backward as router -> dispatch -> experts -> return -> combine.
 *
 * Activation memory, one buffer laid out by acts_layout (every piece 64-byte aligned), taken
 * from the device allocator (src/device/device_memory.h: the cpu device is host memory) under
 * the label "activations", so the allocator's peak sees it as `trident memory` predicts it:
 *
 *   token side (this rank's N tokens, K choices each)
 *     scores, dscores  (N,E)        router output; backward: d scores, then d logits
 *     stats            (2E+1)       [P_e | n_e | N_tot] of the aux loss (router.h)
 *     expert, slot     (N,K) int32  chosen experts; row of each pair (-1: dropped)
 *     perm             (N·K) int32  pair of each row
 *     counts           (E) int64    pairs per expert before dropping
 *     rows             (N·K, C)     permuted token rows; backward: d rows (score · dout)
 *     back             (N·K, C)     expert outputs come back here; backward: d inputs
 *   dispatch plan (token_dispatch.h): kept (E), recv_cnt (P,El) int64; send_rows, recv_rows,
 *     sc, sd, rc, rd (P) size_t; order (P·N·K) int32
 *   expert side (at most P·N·K rows arrive)
 *     work             (P·N·K, C)   rows in source order
 *     xs, ys           (P·N·K, C)   expert inputs / outputs in expert order; backward: dY, dX
 *     h_pre, h, dh     (P·N·K, 4C)  fc output, after GELU; backward: d h
 *
 * Not here: routing (router.c), the exchanges (token_dispatch.c). */
#include "src/moe/moe_layer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "src/core/check.h"
#include "src/device/device.h"
#include "src/moe/router.h"
#include "src/moe/token_dispatch.h"

/* ------------------------------------------------------------------------ parameters */

size_t moe_param_floats(size_t C, size_t E, size_t El) {
    return E * C + El * (4 * C * C + 4 * C + C * 4 * C + C);
}

/* Offsets (floats) of the five pieces of the layout, in order, and the total. */
static void param_offsets(const moe_config *m, size_t C, size_t off[5]) {
    size_t E = (size_t)m->num_experts, El = E / (size_t)m->ep_size;
    off[0] = 0;                       /* router_w (E,C) */
    off[1] = off[0] + E * C;          /* fc_w (El,4C,C) */
    off[2] = off[1] + El * 4 * C * C; /* fc_b (El,4C) */
    off[3] = off[2] + El * 4 * C;     /* fcproj_w (El,C,4C) */
    off[4] = off[3] + El * C * 4 * C; /* fcproj_b (El,C) */
}

moe_params moe_params_view(const moe_config *m, const float *base, size_t C) {
    size_t o[5];
    param_offsets(m, C, o);
    return (moe_params){base + o[0], base + o[1], base + o[2], base + o[3], base + o[4]};
}

moe_grads moe_grads_view(const moe_config *m, float *base, size_t C) {
    size_t o[5];
    param_offsets(m, C, o);
    return (moe_grads){base + o[0], base + o[1], base + o[2], base + o[3], base + o[4]};
}

/* ------------------------------------------------------------------------ activations */

struct moe_acts {
    moe_config m;
    size_t N, C, max_rows; /* max_rows = P·N·K */
    void *buf;             /* the one allocation; everything below points into it */
    float *scores, *dscores, *stats;
    int32_t *expert, *slot, *perm;
    int64_t *counts, dropped;
    float *rows, *back;
    moe_dispatch d;
    float *work, *xs, *ys, *h_pre, *h, *dh;
};

/* Next piece of `bytes` at *off (64-byte aligned); NULL while only measuring (base NULL). */
static void *carve(char *base, size_t *off, size_t bytes) {
    void *p = base ? base + *off : NULL;
    *off += (bytes + 63) / 64 * 64;
    return p;
}

/* Points a's arrays into base (NULL: only measures); returns the buffer's bytes. */
static size_t acts_layout(struct moe_acts *a, const moe_config *m, size_t N, size_t C, char *base) {
    size_t E = (size_t)m->num_experts, K = (size_t)m->topk, P = (size_t)m->ep_size;
    size_t El = E / P, rows_max = P * N * K, off = 0;
    a->scores = carve(base, &off, N * E * sizeof(float));
    a->dscores = carve(base, &off, N * E * sizeof(float));
    a->stats = carve(base, &off, (2 * E + 1) * sizeof(float));
    a->expert = carve(base, &off, N * K * sizeof(int32_t));
    a->slot = carve(base, &off, N * K * sizeof(int32_t));
    a->perm = carve(base, &off, N * K * sizeof(int32_t));
    a->counts = carve(base, &off, E * sizeof(int64_t));
    a->rows = carve(base, &off, N * K * C * sizeof(float));
    a->back = carve(base, &off, N * K * C * sizeof(float));
    a->d.kept = carve(base, &off, E * sizeof(int64_t));
    a->d.recv_cnt = carve(base, &off, P * El * sizeof(int64_t));
    a->d.send_rows = carve(base, &off, P * sizeof(size_t));
    a->d.recv_rows = carve(base, &off, P * sizeof(size_t));
    a->d.sc = carve(base, &off, P * sizeof(size_t));
    a->d.sd = carve(base, &off, P * sizeof(size_t));
    a->d.rc = carve(base, &off, P * sizeof(size_t));
    a->d.rd = carve(base, &off, P * sizeof(size_t));
    a->d.order = carve(base, &off, rows_max * sizeof(int32_t));
    a->work = carve(base, &off, rows_max * C * sizeof(float));
    a->xs = carve(base, &off, rows_max * C * sizeof(float));
    a->ys = carve(base, &off, rows_max * C * sizeof(float));
    a->h_pre = carve(base, &off, rows_max * 4 * C * sizeof(float));
    a->h = carve(base, &off, rows_max * 4 * C * sizeof(float));
    a->dh = carve(base, &off, rows_max * 4 * C * sizeof(float));
    return off;
}

size_t moe_acts_bytes_of(const moe_config *m, size_t N, size_t C) {
    struct moe_acts probe;
    return acts_layout(&probe, m, N, C, NULL);
}

moe_acts *moe_acts_create(const moe_config *m, size_t N, size_t C) {
    char err[160];
    CHECK(moe_config_check(m, err, sizeof err), err);
    moe_acts *a = callocCheck(1, sizeof *a);
    a->m = *m;
    a->N = N;
    a->C = C;
    a->max_rows = (size_t)m->ep_size * N * (size_t)m->topk;
    a->buf = device_alloc(moe_acts_bytes_of(m, N, C), "activations"); /* zeroed, counted */
    acts_layout(a, m, N, C, a->buf);
    a->d.P = m->ep_size;
    a->d.me = m->ep_rank;
    a->d.El = m->num_experts / m->ep_size;
    a->d.C = C;
    a->d.max_rows_in = a->max_rows;
    return a;
}

size_t moe_matmul_operand_elems(const moe_config *m, size_t N, size_t C) {
    const size_t rows = (size_t)m->ep_size * N; /* one row per token of the ep group, at most */
    const size_t fc = dev_matmul_operand_elems(rows, C, 4 * C);
    const size_t fcproj = dev_matmul_operand_elems(rows, 4 * C, C);
    return fc > fcproj ? fc : fcproj;
}

void moe_acts_destroy(moe_acts *a) {
    if (!a) return;
    device_free(a->buf);
    free(a);
}

const int64_t *moe_acts_expert_counts(const moe_acts *a) { return a->counts; }
int64_t moe_acts_dropped(const moe_acts *a) { return a->dropped; }

size_t moe_forward_bytes(const moe_acts *a) {
    return token_counts_bytes(&a->d) + token_dispatch_bytes(&a->d) + token_return_bytes(&a->d);
}

size_t moe_backward_bytes(const moe_acts *a) {
    return token_dispatch_bytes(&a->d) + token_return_bytes(&a->d);
}

/* ------------------------------------------------------------------------ experts */

/* Local expert l's weights and its rows in expert order: [first, first + n), first being
 * where expert l-1's rows ended (the loops below carry it: O(El·P) per layer, not El²·P). */
typedef struct {
    const float *fc_w, *fc_b, *fcproj_w, *fcproj_b;
    size_t first, n;
} expert_slice;

static expert_slice expert_of(const moe_acts *a, const moe_params *p, int l, size_t first) {
    size_t C = a->C, n = 0;
    for (int s = 0; s < a->d.P; s++) n += (size_t)a->d.recv_cnt[s * a->d.El + l];
    size_t L = (size_t)l;
    return (expert_slice){p->fc_w + L * 4 * C * C,
                          p->fc_b + L * 4 * C,
                          p->fcproj_w + L * C * 4 * C,
                          p->fcproj_b + L * C,
                          first,
                          n};
}

/* ys = fcproj(gelu(fc(xs))) for every local expert on its rows. */
static void experts_forward(moe_acts *a, const moe_params *p) {
    size_t C = a->C;
    size_t first = 0;
    for (int l = 0; l < a->d.El; l++) {
        expert_slice x = expert_of(a, p, l, first);
        first += x.n;
        if (x.n == 0) continue;
        float *h_pre = a->h_pre + x.first * 4 * C, *h = a->h + x.first * 4 * C;
        dev_matmul_forward(h_pre, a->xs + x.first * C, x.fc_w, x.fc_b, x.n, C, 4 * C);
        gelu_forward(h, h_pre, x.n * 4 * C);
        dev_matmul_forward(a->ys + x.first * C, h, x.fcproj_w, x.fcproj_b, x.n, 4 * C, C);
    }
}

/* ys holds dY on entry, dX (the rows' input gradients) on return; grads +=. */
static void experts_backward(moe_acts *a, const moe_params *p, moe_grads *g) {
    size_t C = a->C;
    size_t first = 0;
    for (int l = 0; l < a->d.El; l++) {
        expert_slice x = expert_of(a, p, l, first);
        first += x.n;
        if (x.n == 0) continue;
        size_t L = (size_t)l;
        float *h_pre = a->h_pre + x.first * 4 * C, *h = a->h + x.first * 4 * C;
        float *dh = a->dh + x.first * 4 * C, *dy = a->ys + x.first * C;
        memset(dh, 0, x.n * 4 * C * sizeof(float));
        dev_matmul_backward(dh, g->fcproj_w + L * C * 4 * C, g->fcproj_b + L * C, dy, h, x.fcproj_w,
                            x.n, 4 * C, C);
        memset(h, 0, x.n * 4 * C * sizeof(float)); /* h is spent: it takes d h_pre */
        gelu_backward(h, h_pre, dh, x.n * 4 * C);
        memset(dy, 0, x.n * C * sizeof(float)); /* dY is spent: it takes dX */
        dev_matmul_backward(dy, g->fc_w + L * 4 * C * C, g->fc_b + L * 4 * C, h,
                            a->xs + x.first * C, x.fc_w, x.n, C, 4 * C);
    }
}

/* ------------------------------------------------------------------------ the layer */

static void check_call(const moe_config *m, const moe_acts *a, comm_group *ep, size_t N, size_t C) {
    CHECK(N <= a->N && a->C == C,
          "MoE: more tokens than, or another C than, the activations were made for");
    CHECK(a->m.num_experts == m->num_experts && a->m.topk == m->topk &&
              a->m.ep_size == m->ep_size && a->m.ep_rank == m->ep_rank,
          "MoE: the config differs from the one the activations were made for");
    CHECK(ep ? comm_size(ep) == m->ep_size && comm_rank(ep) == m->ep_rank : m->ep_size == 1,
          "MoE: the ep group does not match --expert-model-parallel-size / the ep rank");
}

float moe_forward(const moe_config *m, comm_group *ep, comm_group *stats_group, const moe_params *p,
                  moe_acts *a, float *out, const float *in, size_t N, size_t C) {
    check_call(m, a, ep, N, C);
    size_t E = (size_t)m->num_experts;
    int K = m->topk;
    /* router: scores, choices, the aux loss of the whole micro-batch */
    router_scores(a->scores, in, p->router_w, N, C, E);
    router_topk(a->expert, a->scores, N, E, K);
    router_count(a->counts, a->expert, N, E, K);
    router_load_stats(a->stats, a->scores, a->counts, N, E, stats_group);
    float aux = router_aux_loss(a->stats, E, K, m->aux_loss_coeff);
    /* permute (dropping over capacity), exchange, experts, back, combine */
    size_t capacity = router_capacity(m->capacity_factor, N, E, K);
    size_t M = token_permute_plan(a->slot, a->perm, a->d.kept, &a->dropped, a->expert, N, E, K,
                                  capacity, NULL);
    token_permute(a->rows, in, a->perm, M, K, C);
    token_exchange_counts(&a->d, ep);
    token_dispatch(&a->d, ep, a->xs, a->rows, a->work);
    experts_forward(a, p);
    token_return(&a->d, ep, a->back, a->ys, a->work);
    token_combine(out, a->back, a->slot, a->expert, a->scores, N, E, K, C);
    return aux;
}

void moe_backward(const moe_config *m, comm_group *ep, const moe_params *p, moe_grads *g,
                  moe_acts *a, float *dinp, const float *dout, const float *in, float aux_dloss,
                  size_t N, size_t C) {
    check_call(m, a, ep, N, C);
    size_t E = (size_t)m->num_experts;
    int K = m->topk;
    /* combine: d rows to the experts, d scores from the outputs that came back */
    memset(a->dscores, 0, N * E * sizeof(float));
    token_combine_backward(a->rows, a->dscores, dout, a->back, a->slot, a->expert, a->scores, N, E,
                           K, C);
    token_dispatch(&a->d, ep, a->ys, a->rows, a->work);
    experts_backward(a, p, g);
    token_return(&a->d, ep, a->back, a->ys, a->work);
    token_permute_backward(dinp, a->back, a->perm, a->d.rows_out, K, C);
    /* router: the aux loss's share, then softmax and the matmul */
    router_aux_backward(a->dscores, a->stats, N, E, K, m->aux_loss_coeff, aux_dloss);
    router_backward(dinp, g->router_w, a->dscores, a->scores, in, p->router_w, N, C, E);
}
