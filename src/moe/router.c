/* router.c — scores, top-k, the switch load-balancing loss and its gradient (router.h).
 *
 * Plain loops over rows; the one matmul goes through kernels/ops.h. Sums over tokens are
 * accumulated in double and rounded once, so they do not depend on how tokens are split
 * between ranks beyond that last rounding. */
#include "src/moe/router.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels/ops.h"
#include "src/core/check.h"
#include "src/core/checked.h"

void router_scores(float *scores, const float *in, const float *router_w, size_t N, size_t C,
                   size_t E) {
    matmul_forward(scores, in, router_w, NULL, N, C, E); /* logits (N,E) */
    for (size_t t = 0; t < N; t++) {
        float *row = scores + t * E;
        float max = row[0], sum = 0.0f;
        for (size_t e = 1; e < E; e++) max = row[e] > max ? row[e] : max;
        for (size_t e = 0; e < E; e++) {
            row[e] = expf(row[e] - max);
            sum += row[e];
        }
        for (size_t e = 0; e < E; e++) row[e] /= sum;
    }
}

/* Expert a ranks before b: a higher score, or the same score and a lower index. */
static bool ranks_before(const float *row, int32_t a, int32_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
}

/* Restores the heap below i in h[0..n): each parent ranks after its children, so h[0] is
 * the worst of the kept choices. */
static void sift_down(int32_t *h, int n, int i, const float *row) {
    for (;;) {
        int w = i, c1 = 2 * i + 1, c2 = 2 * i + 2;
        if (c1 < n && ranks_before(row, h[w], h[c1])) w = c1;
        if (c2 < n && ranks_before(row, h[w], h[c2])) w = c2;
        if (w == i) return;
        int32_t t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

/* One token's K best of E in O(E log K): a heap of the K best so far (its root the worst),
 * then a heap sort puts them best first. */
static void topk_row(int32_t *pick, const float *row, size_t E, int K) {
    for (int k = 0; k < K; k++) pick[k] = (int32_t)k;
    for (int i = K / 2 - 1; i >= 0; i--) sift_down(pick, K, i, row);
    for (size_t e = (size_t)K; e < E; e++)
        if (ranks_before(row, (int32_t)e, pick[0])) {
            pick[0] = (int32_t)e;
            sift_down(pick, K, 0, row);
        }
    for (int n = K - 1; n > 0; n--) { /* the worst goes to the end */
        int32_t t = pick[0];
        pick[0] = pick[n];
        pick[n] = t;
        sift_down(pick, n, 0, row);
    }
}

void router_topk(int32_t *expert, const float *scores, size_t N, size_t E, int K) {
    CHECK(K >= 1 && (size_t)K <= E, "top-k needs 1 <= K <= E");
    for (size_t t = 0; t < N; t++) topk_row(expert + t * (size_t)K, scores + t * E, E, K);
}

void router_count(int64_t *counts, const int32_t *expert, size_t N, size_t E, int K) {
    memset(counts, 0, E * sizeof(int64_t));
    for (size_t i = 0; i < N * (size_t)K; i++) counts[expert[i]]++;
}

void router_load_stats(float *stats, const float *scores, const int64_t *counts, size_t N, size_t E,
                       comm_group *g) {
    for (size_t e = 0; e < E; e++) {
        double p = 0.0;
        for (size_t t = 0; t < N; t++) p += scores[t * E + e];
        stats[e] = (float)p;
        stats[E + e] = (float)counts[e];
    }
    stats[2 * E] = (float)N;
    if (g) comm_all_reduce(g, stats, 2 * E + 1, COMM_FLOAT32, COMM_SUM);
}

/* coeff · E / (N_tot² · K): the factor in front of both the loss and its gradient. */
static double aux_scale(const float *stats, size_t E, int K, float coeff) {
    double n_tot = stats[2 * E];
    return n_tot > 0 ? (double)coeff * (double)E / (n_tot * n_tot * K) : 0.0;
}

float router_aux_loss(const float *stats, size_t E, int K, float coeff) {
    double sum = 0.0;
    for (size_t e = 0; e < E; e++) sum += (double)stats[e] * stats[E + e];
    return (float)(aux_scale(stats, E, K, coeff) * sum);
}

void router_aux_backward(float *dscores, const float *stats, size_t N, size_t E, int K, float coeff,
                         float aux_dloss) {
    double scale = aux_scale(stats, E, K, coeff) * aux_dloss;
    for (size_t t = 0; t < N; t++)
        for (size_t e = 0; e < E; e++) dscores[t * E + e] += (float)(scale * stats[E + e]);
}

void router_backward(float *dinp, float *drouter_w, float *dscores, const float *scores,
                     const float *in, const float *router_w, size_t N, size_t C, size_t E) {
    /* softmax: dlogit_e = s_e · (ds_e - Σ_j s_j ds_j) */
    for (size_t t = 0; t < N; t++) {
        const float *s = scores + t * E;
        float *d = dscores + t * E;
        float dot = 0.0f;
        for (size_t e = 0; e < E; e++) dot += s[e] * d[e];
        for (size_t e = 0; e < E; e++) d[e] = s[e] * (d[e] - dot);
    }
    matmul_backward(dinp, drouter_w, NULL, dscores, in, router_w, N, C, E);
}

size_t router_capacity(float factor, size_t N, size_t E, int K) {
    if (factor <= 0.0f) return SIZE_MAX;
    const double want = (double)factor * (double)N * (double)K / (double)E;
    int64_t cap;
    if (N > 0 && checked_to_i64(want, CHECKED_CEIL, 0, (int64_t)N, &cap) == CHECKED_OK)
        return (size_t)cap;
    /* an expert receives each token at most once: N or more is every pair of the call */
    CHECK(isfinite(want), "a capacity factor that is not finite (moe_config_check refuses it)");
    return N;
}
