/* ring_attention.c — ring attention over the zig-zag layout (see ring_attention.h for the
 * algorithm, the block picture and the traffic).
 *
 * Layout of the travelling buffer: the parts K, V (and dK, dV in the backward) one after
 * another, each (B, Tl, CH) contiguous with CH = NH·HS, so head h of row t of sequence b is at
 * part + (b·Tl + t)·CH + h·HS. Q, out, dout, dqkv stay in the caller's layouts.
 *
 * Scratch of one call, all of it device_alloc'ed (label "ring attention scratch") at the start
 * and freed before it returns, so at its peak a call holds, in floats (c = the longest span):
 *
 *   block scratch   2c² + c·HS + c     s, ds (c,c), o_blk (c,HS), l_blk (c): one allocation
 *   forward         2 × 2X             kv, kv_next: [K | V] held and arriving
 *   backward        B·NH·Tl + 2 × 4X   D, then buf, buf_next: [K | V | dK | dV] × 2
 *
 * ring_attention_scratch_bytes is the larger of the two sums (the backward's).
 */
#include "src/cp/ring_attention.h"

#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "src/core/check.h"
#include "src/cp/zigzag.h"
#include "src/device/device_memory.h"
#include "src/runtime/comm.h"

/* A run of consecutive positions a rank holds: its local rows [row0, row0 + n) are the global
 * positions [pos0, pos0 + n). A rank holds two (one at cp = 1). */
typedef struct {
    size_t row0, n, pos0;
} span;

/* The spans of rank `rank`; returns how many (1 or 2). */
static int spans_of(int rank, int cp_size, size_t Tl, span out[2]) {
    const int n = cp_size == 1 ? 1 : 2;
    for (int k = 0; k < n; k++) {
        out[k].row0 = (size_t)k * (Tl / (size_t)n);
        out[k].n = Tl / (size_t)n;
        out[k].pos0 = cp_global_position(rank, cp_size, Tl * (size_t)cp_size, out[k].row0);
    }
    return n;
}

/* How many keys of span k query row i of span q sees: the keys at positions <= its own, which
 * are the first ones of k (0, some, or all of them). */
static size_t visible_keys(const span *q, const span *k, size_t i) {
    const size_t last = q->pos0 + i; /* the last position row i may see */
    if (last < k->pos0) return 0;
    const size_t n = last - k->pos0 + 1;
    return n < k->n ? n : k->n;
}

/* A block is skipped when every key comes after every query (its last row sees nothing). */
static bool block_is_empty(const span *q, const span *k) {
    return visible_keys(q, k, q->n - 1) == 0;
}

/* The group's size and this rank's place in it; NULL is a group of one. */
static int group_size(const comm_group *cp) { return cp ? comm_size(cp) : 1; }
static int group_rank(const comm_group *cp) { return cp ? comm_rank(cp) : 0; }

static void check_shapes(size_t Tl, int cp_size) {
    CHECK(cp_size == 1 || Tl % 2 == 0,
          "with cp > 1 a rank holds two equal chunks, so Tl must be even (cp_check on "
          "--seq-length and --context-parallel-size)");
}

size_t ring_attention_score_entries(size_t Tl, int cp_rank, int cp_size) {
    check_shapes(Tl, cp_size);
    span qs[2], ks[2];
    const int nq = spans_of(cp_rank, cp_size, Tl, qs);
    size_t entries = 0;
    for (int s = 0; s < cp_size; s++) {
        const int src = (cp_rank - s + cp_size) % cp_size; /* forward: whose K/V at step s */
        const int nk = spans_of(src, cp_size, Tl, ks);
        for (int qi = 0; qi < nq; qi++)
            for (int ki = 0; ki < nk; ki++)
                if (!block_is_empty(&qs[qi], &ks[ki])) entries += qs[qi].n * ks[ki].n;
    }
    return entries;
}

size_t ring_attention_forward_bytes(size_t B, size_t Tl, size_t NH, size_t HS, int cp_size) {
    if (cp_size <= 1) return 0;
    const size_t X = B * Tl * NH * HS * sizeof(float);
    return 2 * (size_t)(cp_size - 1) * X;
}

size_t ring_attention_backward_bytes(size_t B, size_t Tl, size_t NH, size_t HS, int cp_size) {
    if (cp_size <= 1) return 0;
    const size_t X = B * Tl * NH * HS * sizeof(float);
    return (4 * (size_t)(cp_size - 1) + 2) * X;
}

/* part (B,Tl,CH) = columns [off, off + CH) of qkv (B,Tl,3·CH): K (off = CH) or V (off = 2·CH). */
static void copy_part_out(float *part, const float *qkv, size_t N, size_t CH, size_t off) {
    for (size_t n = 0; n < N; n++)
        memcpy(part + n * CH, qkv + n * 3 * CH + off, CH * sizeof(float));
}

/* Columns [off, off + CH) of dqkv (B,Tl,3·CH) += part (B,Tl,CH). */
static void add_part_in(float *dqkv, const float *part, size_t N, size_t CH, size_t off) {
    for (size_t n = 0; n < N; n++) {
        float *d = dqkv + n * 3 * CH + off;
        const float *p = part + n * CH;
        for (size_t c = 0; c < CH; c++) d[c] += p[c];
    }
}

/* The label of every scratch buffer (device_bytes_in_use_of). */
#define SCRATCH "ring attention scratch"

/* Shapes and scratch of one call. */
typedef struct {
    size_t Tl, NH, HS, CH;
    float scale;  /* 1/sqrt(HS) */
    float *s;     /* (c, c) scores, then probabilities; c = the longest span */
    float *ds;    /* (c, c) backward: dP, then dS */
    float *o_blk; /* (c, HS) forward: one block's output */
    float *l_blk; /* (c) forward: one block's log-sum-exp per row */
} ring_ctx;

/* Folds one block's (o_blk, l_blk) into a query row's (o, l) by the log-sum-exp rule;
 * l = -inf means no key so far, l_blk = -inf a block row that saw no key. o, o_blk (HS). */
static void merge_row(float *o, float *l, const float *o_blk, float l_blk, size_t HS) {
    if (l_blk == -INFINITY) return;
    if (*l == -INFINITY) {
        memcpy(o, o_blk, HS * sizeof(float));
        *l = l_blk;
        return;
    }
    const float hi = fmaxf(*l, l_blk), lo = fminf(*l, l_blk);
    const float l_new = hi + log1pf(expf(lo - hi));
    const float wa = expf(*l - l_new), wb = expf(l_blk - l_new);
    for (size_t d = 0; d < HS; d++) o[d] = wa * o[d] + wb * o_blk[d];
    *l = l_new;
}

/* Forward of one (query span, key span) block of one (b, h):
 *   q (nq,HS) row stride 3·CH;  k, v (nk,HS) row stride CH;
 *   o (nq,HS) row stride CH and l (nq): this rank's output and lse rows, merged into. */
static void forward_block(const ring_ctx *x, float *o, float *l, const float *q, const float *k,
                          const float *v, const span *qs, const span *ks) {
    const size_t nq = qs->n, nk = ks->n, HS = x->HS, CH = x->CH;
    float *s = x->s; /* (nq, nk) */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)nk, (int)HS, x->scale, q,
                (int)(3 * CH), k, (int)CH, 0.0f, s, (int)nk);
    for (size_t i = 0; i < nq; i++) {
        float *row = s + i * nk;
        const size_t nv = visible_keys(qs, ks, i);
        if (nv == 0) {
            memset(row, 0, nk * sizeof(float));
            x->l_blk[i] = -INFINITY;
            continue;
        }
        float mx = row[0];
        for (size_t j = 1; j < nv; j++) mx = row[j] > mx ? row[j] : mx;
        float sum = 0.0f;
        for (size_t j = 0; j < nv; j++) {
            row[j] = expf(row[j] - mx);
            sum += row[j];
        }
        const float inv = 1.0f / sum;
        for (size_t j = 0; j < nv; j++) row[j] *= inv;
        for (size_t j = nv; j < nk; j++) row[j] = 0.0f; /* masked */
        x->l_blk[i] = mx + logf(sum);
    }
    /* o_blk (nq,HS) = P (nq,nk) @ v (nk,HS) */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nq, (int)HS, (int)nk, 1.0f, s,
                (int)nk, v, (int)CH, 0.0f, x->o_blk, (int)HS);
    for (size_t i = 0; i < nq; i++)
        merge_row(o + i * CH, &l[i], x->o_blk + i * HS, x->l_blk[i], HS);
}

/* Every non-empty block of this rank's queries against one rank's K/V (kv: [K | V], each
 * (B,Tl,CH)) whose spans are ks, merged into out and lse. */
static void forward_step(const ring_ctx *x, float *out, float *lse, const float *qkv,
                         const float *kv, size_t B, const span *qs, int nq, const span *ks,
                         int nk) {
    const size_t Tl = x->Tl, CH = x->CH, HS = x->HS;
    const float *K = kv, *V = kv + B * Tl * CH;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < x->NH; h++)
            for (int qi = 0; qi < nq; qi++)
                for (int ki = 0; ki < nk; ki++) {
                    const span *q = &qs[qi], *k = &ks[ki];
                    if (block_is_empty(q, k)) continue;
                    const size_t qrow = b * Tl + q->row0, krow = b * Tl + k->row0;
                    forward_block(x, out + qrow * CH + h * HS, lse + (b * x->NH + h) * Tl + q->row0,
                                  qkv + qrow * 3 * CH + h * HS, K + krow * CH + h * HS,
                                  V + krow * CH + h * HS, q, k);
                }
}

/* The longest span: blocks have at most this many rows and columns. */
static size_t block_rows(size_t Tl, int cp_size) { return cp_size == 1 ? Tl : Tl / 2; }

/* Floats of a ring_ctx's block scratch: s, ds (c, c), o_blk (c, HS), l_blk (c). */
static size_t ctx_floats(size_t c, size_t HS) { return 2 * c * c + c * HS + c; }

/* Scratch for blocks of at most c rows (c = the longest span), one device allocation. */
static ring_ctx ctx_new(size_t Tl, size_t NH, size_t HS, int cp_size) {
    const size_t c = block_rows(Tl, cp_size);
    ring_ctx x = {.Tl = Tl, .NH = NH, .HS = HS, .CH = NH * HS, .scale = 1.0f / sqrtf((float)HS)};
    x.s = device_alloc(ctx_floats(c, HS) * sizeof(float), SCRATCH);
    x.ds = x.s + c * c;
    x.o_blk = x.ds + c * c;
    x.l_blk = x.o_blk + c * HS;
    return x;
}

static void ctx_free(ring_ctx *x) { device_free(x->s); }

size_t ring_attention_scratch_bytes(size_t B, size_t Tl, size_t NH, size_t HS, int cp_size) {
    const size_t X = B * Tl * NH * HS, ctx = ctx_floats(block_rows(Tl, cp_size), HS);
    const size_t forward = ctx + 2 * (2 * X), backward = ctx + B * NH * Tl + 2 * (4 * X);
    return (forward > backward ? forward : backward) * sizeof(float);
}

/* The forward as rank `rank` of a ring of `size`; cp NULL with size > 1: no messages, the
 * held K/V stands in for every rank's (ring_attention_forward_alone). */
static void forward_ring(comm_group *cp, int rank, int size, float *out, float *lse,
                         const float *qkv, size_t B, size_t Tl, size_t NH, size_t HS) {
    check_shapes(Tl, size);
    const size_t CH = NH * HS, N = B * Tl, X = N * CH; /* X: floats of one of Q, K, V */
    ring_ctx x = ctx_new(Tl, NH, HS, size);
    float *kv = device_alloc(2 * X * sizeof(float), SCRATCH);      /* [K | V] held now */
    float *kv_next = device_alloc(2 * X * sizeof(float), SCRATCH); /* [K | V] arriving */
    copy_part_out(kv, qkv, N, CH, CH);
    copy_part_out(kv + X, qkv, N, CH, 2 * CH);
    for (size_t i = 0; i < X; i++) out[i] = 0.0f;
    for (size_t i = 0; i < B * NH * Tl; i++) lse[i] = -INFINITY;

    span qs[2], ks[2];
    const int nq = spans_of(rank, size, Tl, qs);
    const int next = (rank + 1) % size, prev = (rank - 1 + size) % size;
    for (int s = 0; s < size; s++) {
        const int src = (rank - s + size) % size; /* whose K/V this rank holds at step s */
        const int nk = spans_of(src, size, Tl, ks);
        forward_step(&x, out, lse, qkv, kv, B, qs, nq, ks, nk);
        if (s == size - 1 || !cp) continue;
        comm_sendrecv(cp, kv, 2 * X, next, kv_next, 2 * X, prev, COMM_FLOAT32, s);
        float *t = kv;
        kv = kv_next;
        kv_next = t;
    }
    device_free(kv);
    device_free(kv_next);
    ctx_free(&x);
}

void ring_attention_forward(comm_group *cp, float *out, float *lse, const float *qkv, size_t B,
                            size_t Tl, size_t NH, size_t HS) {
    forward_ring(cp, group_rank(cp), group_size(cp), out, lse, qkv, B, Tl, NH, HS);
}

void ring_attention_forward_alone(int rank, int size, float *out, float *lse, const float *qkv,
                                  size_t B, size_t Tl, size_t NH, size_t HS) {
    forward_ring(NULL, rank, size, out, lse, qkv, B, Tl, NH, HS);
}

/* Backward of one (query span, key span) block of one (b, h):
 *   q, dq (nq,HS) row stride 3·CH;  dy (nq,HS) row stride CH (dout);  l, D (nq);
 *   k, v, dk, dv (nk,HS) row stride CH (the travelling buffer). dq, dk, dv accumulate. */
static void backward_block(const ring_ctx *x, float *dq, float *dk, float *dv, const float *q,
                           const float *dy, const float *l, const float *D, const float *k,
                           const float *v, const span *qs, const span *ks) {
    const size_t nq = qs->n, nk = ks->n, HS = x->HS, CH = x->CH, ld = 3 * CH;
    float *p = x->s, *ds = x->ds; /* (nq, nk) each */
    /* P = exp(scale · q kᵀ − lse), the forward's probabilities, masked to 0 */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)nk, (int)HS, x->scale, q,
                (int)ld, k, (int)CH, 0.0f, p, (int)nk);
    for (size_t i = 0; i < nq; i++) {
        float *row = p + i * nk;
        const size_t nv = visible_keys(qs, ks, i);
        for (size_t j = 0; j < nv; j++) row[j] = expf(row[j] - l[i]);
        for (size_t j = nv; j < nk; j++) row[j] = 0.0f;
    }
    /* dP = dy vᵀ;  dS = P ∘ (dP − D) · scale, in place */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)nk, (int)HS, 1.0f, dy,
                (int)CH, v, (int)CH, 0.0f, ds, (int)nk);
    for (size_t i = 0; i < nq; i++)
        for (size_t j = 0; j < nk; j++)
            ds[i * nk + j] = p[i * nk + j] * (ds[i * nk + j] - D[i]) * x->scale;
    /* dq += dS k;  dk += dSᵀ q;  dv += Pᵀ dy */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nq, (int)HS, (int)nk, 1.0f, ds,
                (int)nk, k, (int)CH, 1.0f, dq, (int)ld);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)nk, (int)HS, (int)nq, 1.0f, ds,
                (int)nk, q, (int)ld, 1.0f, dk, (int)CH);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)nk, (int)HS, (int)nq, 1.0f, p,
                (int)nk, dy, (int)CH, 1.0f, dv, (int)CH);
}

/* Every non-empty block of this rank's queries against one rank's travelling buffer
 * buf = [K | V | dK | dV] (each (B,Tl,CH)) whose spans are ks: dQ into dqkv, dK/dV into buf. */
static void backward_step(const ring_ctx *x, float *dqkv, float *buf, const float *dout,
                          const float *qkv, const float *lse, const float *D, size_t B,
                          const span *qs, int nq, const span *ks, int nk) {
    const size_t Tl = x->Tl, CH = x->CH, HS = x->HS, X = B * Tl * CH;
    const float *K = buf, *V = buf + X;
    float *dK = buf + 2 * X, *dV = buf + 3 * X;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < x->NH; h++)
            for (int qi = 0; qi < nq; qi++)
                for (int ki = 0; ki < nk; ki++) {
                    const span *q = &qs[qi], *k = &ks[ki];
                    if (block_is_empty(q, k)) continue;
                    const size_t qrow = b * Tl + q->row0, krow = b * Tl + k->row0;
                    const size_t lrow = (b * x->NH + h) * Tl + q->row0;
                    const size_t kh = krow * CH + h * HS;
                    backward_block(x, dqkv + qrow * 3 * CH + h * HS, dK + kh, dV + kh,
                                   qkv + qrow * 3 * CH + h * HS, dout + qrow * CH + h * HS,
                                   lse + lrow, D + lrow, K + kh, V + kh, q, k);
                }
}

/* The backward as rank `rank` of a ring of `size`; cp NULL with size > 1: no messages (the
 * held buffer stands in for every rank's, and its dK, dV stay home). */
static void backward_ring(comm_group *cp, int rank, int size, float *dqkv, const float *dout,
                          const float *qkv, const float *out, const float *lse, size_t B, size_t Tl,
                          size_t NH, size_t HS) {
    check_shapes(Tl, size);
    const size_t CH = NH * HS, N = B * Tl, X = N * CH;
    ring_ctx x = ctx_new(Tl, NH, HS, size);

    /* D (B,NH,Tl) = rowsum(dout ∘ out) per head: Σ_j P_ij dP_ij of the softmax backward */
    float *D = device_alloc(B * NH * Tl * sizeof(float), SCRATCH);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < NH; h++)
            for (size_t t = 0; t < Tl; t++) {
                const float *dy = dout + (b * Tl + t) * CH + h * HS;
                const float *o = out + (b * Tl + t) * CH + h * HS;
                float d = 0.0f;
                for (size_t e = 0; e < HS; e++) d += dy[e] * o[e];
                D[(b * NH + h) * Tl + t] = d;
            }

    float *buf = device_alloc(4 * X * sizeof(float), SCRATCH);      /* [K | V | dK | dV] now */
    float *buf_next = device_alloc(4 * X * sizeof(float), SCRATCH); /* the one arriving */
    copy_part_out(buf, qkv, N, CH, CH);
    copy_part_out(buf + X, qkv, N, CH, 2 * CH);
    memset(buf + 2 * X, 0, 2 * X * sizeof(float));

    span qs[2], ks[2];
    const int nq = spans_of(rank, size, Tl, qs);
    const int next = (rank + 1) % size, prev = (rank - 1 + size) % size;
    for (int s = 0; s < size; s++) {
        const int src = (rank + s) % size; /* whose block this rank holds at step s */
        const int nk = spans_of(src, size, Tl, ks);
        backward_step(&x, dqkv, buf, dout, qkv, lse, D, B, qs, nq, ks, nk);
        if (s == size - 1 || !cp) continue;
        comm_sendrecv(cp, buf, 4 * X, prev, buf_next, 4 * X, next, COMM_FLOAT32, s);
        float *t = buf;
        buf = buf_next;
        buf_next = t;
    }
    /* buf's dK, dV are finished sums for rank r−1 (own at cp = 1): one hop home */
    float *home = buf + 2 * X;
    if (size > 1 && cp) {
        comm_sendrecv(cp, buf + 2 * X, 2 * X, prev, buf_next + 2 * X, 2 * X, next, COMM_FLOAT32,
                      size - 1);
        home = buf_next + 2 * X;
    }
    add_part_in(dqkv, home, N, CH, CH);
    add_part_in(dqkv, home + X, N, CH, 2 * CH);

    device_free(buf);
    device_free(buf_next);
    device_free(D);
    ctx_free(&x);
}

void ring_attention_backward(comm_group *cp, float *dqkv, const float *dout, const float *qkv,
                             const float *out, const float *lse, size_t B, size_t Tl, size_t NH,
                             size_t HS) {
    backward_ring(cp, group_rank(cp), group_size(cp), dqkv, dout, qkv, out, lse, B, Tl, NH, HS);
}

void ring_attention_backward_alone(int rank, int size, float *dqkv, const float *dout,
                                   const float *qkv, const float *out, const float *lse, size_t B,
                                   size_t Tl, size_t NH, size_t HS) {
    backward_ring(NULL, rank, size, dqkv, dout, qkv, out, lse, B, Tl, NH, HS);
}
