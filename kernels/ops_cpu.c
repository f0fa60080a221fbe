/* ops_cpu.c — the CPU implementations of kernels/ops.h (see there for the contracts).
 *
 * Matrix products, including the per-head products inside attention, are OpenBLAS sgemm
 * calls; everything else is a plain loop the compiler vectorises. Accumulation order is
 * fixed, so a run is bit-reproducible on the same machine and thread count.
 */
#include "kernels/ops.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void openblas_set_num_threads(int num_threads);

void ops_set_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                    size_t N, size_t C, size_t OC) {
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
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)OC, (int)C, 1.0f, inp,
                (int)C, weight, (int)C, beta, out, (int)OC);
}

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, size_t N, size_t C, size_t OC) {
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
        float *dx = dinp + n * C;
        float m = mean[n], s = rstd[n];
        /* xhat = (x - m) * s;  dxhat = d * w;
         * dx = s * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) */
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
            db[i] += d[i];
            dw[i] += xhat * d[i];
            dx[i] += s * (dxhat - sum_d - xhat * sum_dx);
        }
    }
}

void attention_forward(float *out, float *att, const float *qkv, size_t B, size_t T, size_t NH,
                       size_t HS) {
    const size_t CH = NH * HS;    /* width of Q (and of K, V) */
    const size_t ld = 3 * CH;     /* row stride of qkv */
    const float scale = 1.0f / sqrtf((float)HS);
    for (size_t b = 0; b < B; b++) {
        for (size_t h = 0; h < NH; h++) {
            const float *q = qkv + b * T * ld + h * HS;
            const float *k = q + CH;
            const float *v = q + 2 * CH;
            float *a = att + (b * NH + h) * T * T;   /* (T,T) */
            /* a = scale * q @ k^T */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, (int)T, (int)HS, scale, q,
                        (int)ld, k, (int)ld, 0.0f, a, (int)T);
            /* causal softmax: row t sees 0..t */
            for (size_t t = 0; t < T; t++) {
                float *row = a + t * T;
                float mx = row[0];
                for (size_t j = 1; j <= t; j++) mx = row[j] > mx ? row[j] : mx;
                float sum = 0.0f;
                for (size_t j = 0; j <= t; j++) {
                    row[j] = expf(row[j] - mx);
                    sum += row[j];
                }
                float inv = 1.0f / sum;
                for (size_t j = 0; j <= t; j++) row[j] *= inv;
                for (size_t j = t + 1; j < T; j++) row[j] = 0.0f;
            }
            /* out_bh (T,HS) = a @ v */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)HS, (int)T, 1.0f, a,
                        (int)T, v, (int)ld, 0.0f, out + b * T * CH + h * HS, (int)CH);
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
            float *da = scratch; /* (T,T) */
            /* da = dy @ v^T */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, (int)T, (int)HS, 1.0f, dy,
                        (int)CH, v, (int)ld, 0.0f, da, (int)T);
            /* dv += a^T @ dy */
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)T, (int)HS, (int)T, 1.0f, a,
                        (int)T, dy, (int)CH, 1.0f, dv, (int)ld);
            /* softmax backward, in place: dpre = a * (da - sum(a * da)) * scale */
            for (size_t t = 0; t < T; t++) {
                const float *ar = a + t * T;
                float *dr = da + t * T;
                float s = 0.0f;
                for (size_t j = 0; j <= t; j++) s += ar[j] * dr[j];
                for (size_t j = 0; j <= t; j++) dr[j] = ar[j] * (dr[j] - s) * scale;
                for (size_t j = t + 1; j < T; j++) dr[j] = 0.0f;
            }
            /* dq += dpre @ k;  dk += dpre^T @ q */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)HS, (int)T, 1.0f, da,
                        (int)T, k, (int)ld, 1.0f, dq, (int)ld);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)T, (int)HS, (int)T, 1.0f, da,
                        (int)T, q, (int)ld, 1.0f, dk, (int)ld);
        }
    }
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

void gelu_forward(float *out, const float *inp, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_K * (x + 0.044715f * x * x * x);
        out[i] = 0.5f * x * (1.0f + tanhf(u));
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_K * (x + 0.044715f * x * x * x);
        float th = tanhf(u);
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

void crossentropy_local_max(float *rowmax, const float *logits, size_t N, size_t V,
                            int64_t v_start, int64_t real_vocab) {
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
