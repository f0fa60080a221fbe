/* router_test.c — the router against direct computation: top-k order and ties, softmax
 * scores, the switch load-balancing loss by its formula, and its gradient by finite
 * differences of a double-precision twin. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/moe/router.h"
#include "tests/support/testing.h"

static uint64_t g_rng = 88172645463325252ULL;
static float frand(void) { /* uniform in [-1, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static void fill(float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * frand();
}

static void topk_takes_largest_first_and_lower_index_on_ties(void **state) {
    (void)state;
    enum { E = 4 };
    const float scores[3 * E] = {0.1f, 0.3f,  0.3f, 0.3f, /* ties: 1, 2 */
                                 0.5f, 0.1f,  0.4f, 0.0f, /* 0, 2 */
                                 0.0f, 0.25f, 0.5f, 0.25f /* 2, 1 */};
    int32_t expert[3 * 2];
    router_topk(expert, scores, 3, E, 2);
    const int32_t want[6] = {1, 2, 0, 2, 2, 1};
    for (int i = 0; i < 6; i++) assert_int_equal(expert[i], want[i]);
    const float flat[E] = {0.25f, 0.25f, 0.25f, 0.25f};
    int32_t three[3];
    router_topk(three, flat, 1, E, 3);
    for (int k = 0; k < 3; k++) assert_int_equal(three[k], k);
    int64_t counts[E];
    router_count(counts, expert, 3, E, 2);
    const int64_t want_counts[E] = {1, 2, 3, 0};
    for (int e = 0; e < E; e++) assert_int_equal(counts[e], want_counts[e]);
}

/* The K-pass selection router_topk replaced: the best expert not yet picked, K times. */
static void topk_by_passes(int32_t *pick, const float *row, size_t E, int K) {
    for (int k = 0; k < K; k++) {
        int32_t best = -1;
        for (size_t e = 0; e < E; e++) {
            bool taken = false;
            for (int j = 0; j < k; j++) taken = taken || pick[j] == (int32_t)e;
            if (!taken && (best < 0 || row[e] > row[best])) best = (int32_t)e;
        }
        pick[k] = best;
    }
}

static void topk_equals_the_k_pass_selection_with_ties_at_every_k(void **state) {
    (void)state;
    enum { N = 3, E = 300 };
    float *scores = malloc(N * E * sizeof(float));
    int32_t *got = malloc(N * E * sizeof(int32_t)), *want = malloc(E * sizeof(int32_t));
    for (int i = 0; i < N * E; i++) /* few distinct values: many ties */
        scores[i] = (float)(int)(4 * frand()) / 4.0f;
    const int ks[] = {1, 2, 3, 7, 64, E - 1, E};
    for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) {
        int K = ks[j];
        router_topk(got, scores, N, E, K);
        for (int t = 0; t < N; t++) {
            topk_by_passes(want, scores + t * E, E, K);
            for (int k = 0; k < K; k++) assert_int_equal(got[t * K + k], want[k]);
        }
    }
    free(scores), free(got), free(want);
}

static void scores_are_the_softmax_of_the_logits_and_sum_to_one(void **state) {
    (void)state;
    enum { N = 9, C = 7, E = 5 };
    float in[N * C], w[E * C], scores[N * E];
    fill(in, N * C, 1.0f);
    fill(w, E * C, 1.0f);
    router_scores(scores, in, w, N, C, E);
    for (int t = 0; t < N; t++) {
        double logit[E], max = -1e300, sum = 0.0, total = 0.0;
        for (int e = 0; e < E; e++) {
            logit[e] = 0.0;
            for (int c = 0; c < C; c++) logit[e] += (double)in[t * C + c] * w[e * C + c];
            max = logit[e] > max ? logit[e] : max;
        }
        for (int e = 0; e < E; e++) sum += exp(logit[e] - max);
        for (int e = 0; e < E; e++) {
            float want = (float)(exp(logit[e] - max) / sum);
            expect_close(&scores[t * E + e], &want, 1, 1e-6, 1e-5, "softmax score");
            total += scores[t * E + e];
        }
        assert_true(fabs(total - 1.0) < 1e-6);
    }
}

/* coeff · E / (N² · K) · Σ_e (Σ_t s[t,e]) · n_e, straight from the definition. */
static double aux_direct(const float *scores, const int32_t *expert, size_t N, size_t E, int K,
                         double coeff) {
    double sum = 0.0;
    for (size_t e = 0; e < E; e++) {
        double p = 0.0, n = 0.0;
        for (size_t t = 0; t < N; t++) p += scores[t * E + e];
        for (size_t i = 0; i < N * (size_t)K; i++) n += expert[i] == (int32_t)e;
        sum += p * n;
    }
    return coeff * (double)E / ((double)N * (double)N * K) * sum;
}

static void aux_loss_is_the_switch_formula(void **state) {
    (void)state;
    enum { N = 13, C = 6, E = 5, K = 2 };
    float in[N * C], w[E * C], scores[N * E], stats[2 * E + 1];
    int32_t expert[N * K];
    int64_t counts[E];
    fill(in, N * C, 1.0f);
    fill(w, E * C, 2.0f);
    router_scores(scores, in, w, N, C, E);
    router_topk(expert, scores, N, E, K);
    router_count(counts, expert, N, E, K);
    router_load_stats(stats, scores, counts, N, E, NULL);
    assert_true(stats[2 * E] == (float)N);
    float got = router_aux_loss(stats, E, K, 0.01f),
          want = (float)aux_direct(scores, expert, N, E, K, 0.01f);
    expect_close(&got, &want, 1, 0, 1e-6, "aux loss");
    /* Perfectly uniform routing gives aux = coeff. */
    const float uniform[2 * 2 + 1] = {2.0f, 2.0f, 2.0f, 2.0f, 4.0f}; /* E=2, K=1, N=4 */
    float u = router_aux_loss(uniform, 2, 1, 0.3f), want_u = 0.3f;
    expect_close(&u, &want_u, 1, 0, 1e-6, "uniform aux");
}

/* The aux loss as a function of router_w (E,C) and in (N,C), in double, with the routing
 * counts n_e held fixed (they are constants of the loss). */
static double aux_of(const double *w, const double *in, const int64_t *counts, size_t N, size_t C,
                     size_t E, int K, double coeff) {
    double sum = 0.0;
    for (size_t e = 0; e < E; e++) {
        double p = 0.0;
        for (size_t t = 0; t < N; t++) {
            double logit[16], max = -1e300, z = 0.0;
            for (size_t j = 0; j < E; j++) {
                logit[j] = 0.0;
                for (size_t c = 0; c < C; c++) logit[j] += in[t * C + c] * w[j * C + c];
                max = logit[j] > max ? logit[j] : max;
            }
            for (size_t j = 0; j < E; j++) z += exp(logit[j] - max);
            p += exp(logit[e] - max) / z;
        }
        sum += p * (double)counts[e];
    }
    return coeff * (double)E / ((double)N * (double)N * K) * sum;
}

static void aux_gradient_matches_finite_differences(void **state) {
    (void)state;
    enum { N = 7, C = 5, E = 4, K = 2 };
    const float coeff = 0.5f, aux_dloss = 1.5f;
    float in[N * C], w[E * C], scores[N * E], dscores[N * E], stats[2 * E + 1];
    float dw[E * C] = {0}, din[N * C] = {0};
    int32_t expert[N * K];
    int64_t counts[E];
    fill(in, N * C, 1.0f);
    fill(w, E * C, 1.0f);
    router_scores(scores, in, w, N, C, E);
    router_topk(expert, scores, N, E, K);
    router_count(counts, expert, N, E, K);
    router_load_stats(stats, scores, counts, N, E, NULL);
    memset(dscores, 0, sizeof dscores);
    router_aux_backward(dscores, stats, N, E, K, coeff, aux_dloss);
    router_backward(din, dw, dscores, scores, in, w, N, C, E);

    double wd[E * C], ind[N * C];
    for (int i = 0; i < E * C; i++) wd[i] = w[i];
    for (int i = 0; i < N * C; i++) ind[i] = in[i];
    const double h = 1e-5;
    float fd_w[E * C], fd_in[N * C];
    for (int i = 0; i < E * C; i++) {
        double keep = wd[i];
        wd[i] = keep + h;
        double up = aux_of(wd, ind, counts, N, C, E, K, coeff);
        wd[i] = keep - h;
        double down = aux_of(wd, ind, counts, N, C, E, K, coeff);
        wd[i] = keep;
        fd_w[i] = (float)(aux_dloss * (up - down) / (2 * h));
    }
    for (int i = 0; i < N * C; i++) {
        double keep = ind[i];
        ind[i] = keep + h;
        double up = aux_of(wd, ind, counts, N, C, E, K, coeff);
        ind[i] = keep - h;
        double down = aux_of(wd, ind, counts, N, C, E, K, coeff);
        ind[i] = keep;
        fd_in[i] = (float)(aux_dloss * (up - down) / (2 * h));
    }
    expect_close(dw, fd_w, E * C, 1e-6, 1e-3, "d aux / d router_w");
    expect_close(din, fd_in, N * C, 1e-6, 1e-3, "d aux / d in");
}

static void capacity_is_the_ceiling_and_nonpositive_means_dropless(void **state) {
    (void)state;
    assert_int_equal(router_capacity(1.0f, 10, 4, 2), 5);  /* 10·2/4 */
    assert_int_equal(router_capacity(1.25f, 10, 4, 1), 4); /* ceil(3.125) */
    assert_true(router_capacity(0.0f, 10, 4, 2) == SIZE_MAX);
    assert_true(router_capacity(-1.0f, 10, 4, 2) == SIZE_MAX);
    /* never wrapped (1e19 · N as size_t was 0: every token dropped), and a positive factor
     * never becomes 0 = no room; N keeps every pair of the call */
    assert_true(router_capacity(1e19f, 1000000, 4, 2) == 1000000);
    assert_true(router_capacity(3.0e38f, 10, 1, 4096) == 10);
    assert_true(router_capacity(1e-40f, 10, 4, 2) == 1);
    assert_true(router_capacity(1.0f, 0, 4, 2) == 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(topk_takes_largest_first_and_lower_index_on_ties),
        cmocka_unit_test(topk_equals_the_k_pass_selection_with_ties_at_every_k),
        cmocka_unit_test(scores_are_the_softmax_of_the_logits_and_sum_to_one),
        cmocka_unit_test(aux_loss_is_the_switch_formula),
        cmocka_unit_test(aux_gradient_matches_finite_differences),
        cmocka_unit_test(capacity_is_the_ceiling_and_nonpositive_means_dropless),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
