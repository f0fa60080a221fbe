/* ops_cpu.c — the CPU implementations of kernels/ops.h (see there for the contracts).
 *
 * Matrix products, including the per-head products inside attention, are OpenBLAS sgemm
 * calls; everything else is a plain loop the compiler vectorises. Accumulation order is
 * fixed, so a run is bit-reproducible on the same machine and thread count.
 *
 * Two things keep the non-matmul work small (`trident bench --suite serial` measures it):
 *   - exp (softmax, GELU's tanh) is exp_approx() below: a branch-free polynomial the
 *     compiler vectorises, within 2 ulp of expf, instead of a libm call per element;
 *   - causal attention works in blocks of ATT_BLOCK query rows: block i only needs keys
 *     0 .. end of block i, so the products skip (almost) all of the masked upper triangle:
 *
 *         keys ->   [##      ]   rows 0..63    : scores against keys 0..63
 *                   [####    ]   rows 64..127  : keys 0..127
 *                   [######  ]   ...             (# computed, blank never touched by sgemm)
 *                   [########]
 */
#include "kernels/ops.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void openblas_set_num_threads(int num_threads);

/* Comparisons of floats may raise the "invalid" flag on a NaN, so by default GCC keeps the
 * clamps below as branches, which stops loops from vectorising. Nothing here reads the
 * floating-point flags; results are the same bit for bit. */
#pragma GCC optimize("no-trapping-math")

/* exp(x) to within 2 ulp for |x| < 87 (clamped beyond: exp(-87.3) ~ 1e-38, exp(88.3) ~ 2e38).
 * x = n·ln2 + r with |r| <= ln2/2; exp(r) by its Taylor polynomial to r^7 (error < 1e-8 relative
 * there), then 2^n goes straight into the exponent bits. No branches, no calls: loops over it
 * vectorise. */
static inline float exp_approx(float x) {
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    const float shifter =
        12582912.0f;             /* 1.5·2^23: adding it rounds to an integer in the low bits */
    x = x > -87.3f ? x : -87.3f; /* written as max and min so loops stay branch-free */
    x = x < 88.3f ? x : 88.3f;
    float t = x * log2e + shifter;
    float n = t - shifter;
    int32_t ti, si;
    memcpy(&ti, &t, sizeof ti);
    const float sh = shifter;
    memcpy(&si, &sh, sizeof si);
    int32_t ni = ti - si; /* n as an integer */
    float r = (x - n * ln2_hi) - n * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t pi;
    memcpy(&pi, &p, sizeof pi);
    pi += (int32_t)((uint32_t)ni << 23);
    memcpy(&p, &pi, sizeof p);
    return p;
}

/* tanh(u) = 1 − 2 / (1 + e^{2u}): exact at ±infinity, absolute error ~1e-7 near 0. */
static inline float tanh_approx(float u) { return 1.0f - 2.0f / (1.0f + exp_approx(2.0f * u)); }

void ops_set_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, size_t N,
                    size_t C, size_t OC) {
    if (N == 0 || OC == 0) return;
    float beta = 0.0f;
    if (bias) {
        for (size_t n = 0; n < N; n++) memcpy(out + n * OC, bias, OC * sizeof(float));
        beta = 1.0f;
    }
    if (C == 0) {
        if (!bias) memset(out, 0, N * OC * sizeof(float));
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)OC, (int)C, 1.0f, inp, (int)C,
                weight, (int)C, beta, out, (int)OC);
}

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, size_t N, size_t C, size_t OC) {
    if (N == 0 || C == 0 || OC == 0) return;
    if (dinp)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)C, (int)OC, 1.0f, dout,
                    (int)OC, weight, (int)C, 1.0f, dinp, (int)C);
    if (dweight)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)OC, (int)C, (int)N, 1.0f, dout,
                    (int)OC, inp, (int)C, 1.0f, dweight, (int)C);
    if (dbias) {
        for (size_t n = 0; n < N; n++) {
            const float *d = dout + n * OC;
            for (size_t o = 0; o < OC; o++) dbias[o] += d[o];
        }
    }
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, size_t N, size_t C) {
    const float eps = 1e-5f;
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C;
        float m = 0.0f;
        for (size_t i = 0; i < C; i++) m += x[i];
        m /= (float)C;
        float v = 0.0f;
        for (size_t i = 0; i < C; i++) {
            float d = x[i] - m;
            v += d * d;
        }
        v /= (float)C;
        float s = 1.0f / sqrtf(v + eps);
        float *o = out + n * C;
        for (size_t i = 0; i < C; i++) o[i] = (x[i] - m) * s * w[i] + b[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *mean, const float *rstd, size_t N, size_t C) {
    for (size_t n = 0; n < N; n++) {
        const float *d = dout + n * C;
        const float *x = inp + n * C;
        float m = mean[n], s = rstd[n];
        if (dw) /* the weight-gradient part (W of a split backward) */
            for (size_t i = 0; i < C; i++) {
                float xhat = (x[i] - m) * s;
                db[i] += d[i];
                dw[i] += xhat * d[i];
            }
        if (!dinp) continue;
        /* the input-gradient part (B): xhat = (x - m) * s;  dxhat = d * w;
         * dx = s * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) */
        float *dx = dinp + n * C;
        float sum_d = 0.0f, sum_dx = 0.0f;
        for (size_t i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            float dxhat = d[i] * w[i];
            sum_d += dxhat;
            sum_dx += dxhat * xhat;
        }
        sum_d /= (float)C;
        sum_dx /= (float)C;
        for (size_t i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            float dxhat = d[i] * w[i];
            dx[i] += s * (dxhat - sum_d - xhat * sum_dx);
        }
    }
}

/* Query rows per block of the causal products (see the picture at the top). */
#define ATT_BLOCK 64

/* Causal softmax of row t of the scores, in place: entries 0..t become probabilities, the
 * entries t+1 .. n-1 become 0. */
static void causal_softmax_row(float *row, size_t t, size_t n) {
    float mx = row[0];
    for (size_t j = 1; j <= t; j++) mx = row[j] > mx ? row[j] : mx;
    for (size_t j = 0; j <= t; j++) row[j] = exp_approx(row[j] - mx); /* vectorised */
    float sum = 0.0f;
    for (size_t j = 0; j <= t; j++) sum += row[j];
    const float inv = 1.0f / sum;
    for (size_t j = 0; j <= t; j++) row[j] *= inv;
    for (size_t j = t + 1; j < n; j++) row[j] = 0.0f;
}

void attention_forward(float *out, float *att, const float *qkv, size_t B, size_t T, size_t NH,
                       size_t HS) {
    const size_t CH = NH * HS; /* width of Q (and of K, V) */
    const size_t ld = 3 * CH;  /* row stride of qkv */
    const float scale = 1.0f / sqrtf((float)HS);
    for (size_t b = 0; b < B; b++) {
        for (size_t h = 0; h < NH; h++) {
            const float *q = qkv + b * T * ld + h * HS;
            const float *k = q + CH;
            const float *v = q + 2 * CH;
            float *a = att + (b * NH + h) * T * T; /* (T,T) */
            float *o = out + b * T * CH + h * HS;  /* (T,HS), row stride CH */
            for (size_t r0 = 0; r0 < T; r0 += ATT_BLOCK) {
                const size_t r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, nr = r1 - r0;
                /* a[r0:r1, 0:r1] = scale * q[r0:r1] @ k[0:r1]^T */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nr, (int)r1, (int)HS,
                            scale, q + r0 * ld, (int)ld, k, (int)ld, 0.0f, a + r0 * T, (int)T);
                for (size_t t = r0; t < r1; t++) causal_softmax_row(a + t * T, t, T);
                /* o[r0:r1] = a[r0:r1, 0:r1] @ v[0:r1] */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)HS, (int)r1,
                            1.0f, a + r0 * T, (int)T, v, (int)ld, 0.0f, o + r0 * CH, (int)CH);
            }
        }
    }
}

void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                        float *scratch, size_t B, size_t T, size_t NH, size_t HS) {
    const size_t CH = NH * HS;
    const size_t ld = 3 * CH;
    const float scale = 1.0f / sqrtf((float)HS);
    for (size_t b = 0; b < B; b++) {
        for (size_t h = 0; h < NH; h++) {
            const float *q = qkv + b * T * ld + h * HS;
            const float *k = q + CH;
            const float *v = q + 2 * CH;
            float *dq = dqkv + b * T * ld + h * HS;
            float *dk = dq + CH;
            float *dv = dq + 2 * CH;
            const float *a = att + (b * NH + h) * T * T;
            const float *dy = dout + b * T * CH + h * HS;
            float *da = scratch; /* (T,T); row block [r0,r1) uses columns 0..r1-1 */
            for (size_t r0 = 0; r0 < T; r0 += ATT_BLOCK) {
                const size_t r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, nr = r1 - r0;
                const float *ab = a + r0 * T;
                float *db = da + r0 * T;
                /* da[r0:r1, 0:r1] = dy[r0:r1] @ v[0:r1]^T */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nr, (int)r1, (int)HS,
                            1.0f, dy + r0 * CH, (int)CH, v, (int)ld, 0.0f, db, (int)T);
                /* dv[0:r1] += a[r0:r1, 0:r1]^T @ dy[r0:r1] */
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)r1, (int)HS, (int)nr,
                            1.0f, ab, (int)T, dy + r0 * CH, (int)CH, 1.0f, dv, (int)ld);
                /* softmax backward, in place: dpre = a * (da - sum(a * da)) * scale */
                for (size_t t = r0; t < r1; t++) {
                    const float *ar = a + t * T;
                    float *dr = da + t * T;
                    float s = 0.0f;
                    for (size_t j = 0; j <= t; j++) s += ar[j] * dr[j];
                    for (size_t j = 0; j <= t; j++) dr[j] = ar[j] * (dr[j] - s) * scale;
                    for (size_t j = t + 1; j < r1; j++) dr[j] = 0.0f;
                }
                /* dq[r0:r1] += dpre[r0:r1, 0:r1] @ k[0:r1];  dk[0:r1] += dpre[r0:r1, 0:r1]^T @ q[r0:r1] */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)HS, (int)r1,
                            1.0f, db, (int)T, k, (int)ld, 1.0f, dq + r0 * ld, (int)ld);
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)r1, (int)HS, (int)nr,
                            1.0f, db, (int)T, q + r0 * ld, (int)ld, 1.0f, dk, (int)ld);
            }
        }
    }
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

void gelu_forward(float *out, const float *inp, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_K * (x + 0.044715f * x * x * x);
        out[i] = 0.5f * x * (1.0f + tanh_approx(u));
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_K * (x + 0.044715f * x * x * x);
        float th = tanh_approx(u);
        float sech2 = 1.0f - th * th;
        float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += (0.5f * (1.0f + th) + 0.5f * x * sech2 * du) * dout[i];
    }
}

void residual_forward(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void add_inplace(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

void fill_value(float *x, float value, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = value;
}

void scale_inplace(float *x, float s, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

/* Strictly in index order: without -ffast-math the compiler may not reorder the double adds. */
double sum_squares(const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * (double)x[i];
    return s;
}

void add_bias_rows(float *x, const float *bias, size_t N, size_t OC) {
    for (size_t n = 0; n < N; n++) add_inplace(x + n * OC, bias, OC);
}

void embedding_forward(float *out, const int32_t *tokens, const float *wte, size_t N, size_t C,
                       int64_t v_start, size_t V) {
    for (size_t n = 0; n < N; n++) {
        int64_t r = (int64_t)tokens[n] - v_start;
        if (r >= 0 && r < (int64_t)V) memcpy(out + n * C, wte + (size_t)r * C, C * sizeof(float));
        else memset(out + n * C, 0, C * sizeof(float));
    }
}

void embedding_backward(float *dwte, const float *dout, const int32_t *tokens, size_t N, size_t C,
                        int64_t v_start, size_t V) {
    for (size_t n = 0; n < N; n++) {
        int64_t r = (int64_t)tokens[n] - v_start;
        if (r >= 0 && r < (int64_t)V) add_inplace(dwte + (size_t)r * C, dout + n * C, C);
    }
}

void position_forward(float *out, const float *wpe, size_t B, size_t T, size_t C) {
    for (size_t b = 0; b < B; b++) add_inplace(out + b * T * C, wpe, T * C);
}

void position_backward(float *dwpe, const float *dout, size_t B, size_t T, size_t C) {
    for (size_t b = 0; b < B; b++) add_inplace(dwpe, dout + b * T * C, T * C);
}

/* Number of real (non-padding) entries among the V columns starting at global index v_start. */
static size_t real_cols(size_t V, int64_t v_start, int64_t real_vocab) {
    int64_t r = real_vocab - v_start;
    if (r <= 0) return 0;
    return (size_t)r < V ? (size_t)r : V;
}

void crossentropy_local_max(float *rowmax, const float *logits, size_t N, size_t V, int64_t v_start,
                            int64_t real_vocab) {
    size_t R = real_cols(V, v_start, real_vocab);
    for (size_t n = 0; n < N; n++) {
        const float *l = logits + n * V;
        float mx = -INFINITY;
        for (size_t v = 0; v < R; v++) mx = l[v] > mx ? l[v] : mx;
        rowmax[n] = mx;
    }
}

void crossentropy_local_sums(float *sumexp, float *target_logit, const float *logits,
                             const float *rowmax, const int32_t *targets, size_t N, size_t V,
                             int64_t v_start, int64_t real_vocab) {
    size_t R = real_cols(V, v_start, real_vocab);
    for (size_t n = 0; n < N; n++) {
        const float *l = logits + n * V;
        float mx = rowmax[n], s = 0.0f;
        for (size_t v = 0; v < R; v++) s += expf(l[v] - mx);
        sumexp[n] = s;
        int64_t t = (int64_t)targets[n] - v_start;
        target_logit[n] = (t >= 0 && t < (int64_t)R) ? l[t] : 0.0f;
    }
}

void crossentropy_loss(float *loss, const float *sumexp, const float *rowmax,
                       const float *target_logit, size_t N) {
    for (size_t n = 0; n < N; n++) loss[n] = logf(sumexp[n]) + rowmax[n] - target_logit[n];
}

void crossentropy_backward(float *dlogits, const float *logits, const float *rowmax,
                           const float *sumexp, const int32_t *targets, const float *dloss,
                           size_t N, size_t V, int64_t v_start, int64_t real_vocab) {
    size_t R = real_cols(V, v_start, real_vocab);
    for (size_t n = 0; n < N; n++) {
        const float *l = logits + n * V;
        float *d = dlogits + n * V;
        float mx = rowmax[n], inv = 1.0f / sumexp[n], g = dloss[n];
        for (size_t v = 0; v < R; v++) d[v] = expf(l[v] - mx) * inv * g;
        for (size_t v = R; v < V; v++) d[v] = 0.0f;
        int64_t t = (int64_t)targets[n] - v_start;
        if (t >= 0 && t < (int64_t)R) d[t] -= g;
    }
}
