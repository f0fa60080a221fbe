/* attention_cuda.cu — causal self-attention forward and backward on the GPU (contracts in
 * kernels/ops_cuda.h, CPU twin in kernels/ops_cpu.c).
 *
 * The same algorithm as the CPU twin, with the NH per-head sgemm calls of one batch row
 * turned into ONE strided-batched cuBLAS call: head h of batch row b starts at
 *
 *   qkv + b*T*3CH + h*HS          (Q; K is + CH, V is + 2CH; rows are 3CH apart)
 *
 * so consecutive heads are HS floats apart — a constant stride — while consecutive batch rows
 * are not a multiple of it; hence a loop over b and a batch over h. Per (b,h):
 *
 *   forward                             backward
 *   att = scale * q @ k^T  (T,T)        da   = dy @ v^T           (scratch, (T,T) per head)
 *   att = causal_softmax(att)           dv  += att^T @ dy
 *   out = att @ v          (T,HS)       dpre = att * (da - rowsum(att * da)) * scale
 *                                       dq  += dpre @ k ;  dk += dpre^T @ q
 *
 * The softmax and its backward are one warp per row of a (T,T) matrix. The full (T,T)
 * product is computed and the part above the diagonal overwritten with zeros: simple, and
 * the same numbers as the CPU. Not here: flash attention (no (T,T) matrix at all) — a
 * deliberate omission; this file is the readable reference.
 */
#include "kernels/cuda_common.cuh"

using namespace trident_cuda;

/* Row t of every (T,T) block in place: softmax over columns 0..t, zeros after. rows = B*NH*T. */
__global__ void causal_softmax_kernel(float *att, size_t rows, size_t T) {
    const size_t r = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    if (r >= rows) return;
    const size_t t = r % T; /* position of this query row */
    float *row = att + r * T;
    float mx = -INFINITY;
    for (size_t j = lane; j <= t; j += WARP) mx = fmaxf(mx, row[j]);
    mx = warp_max(mx);
    float sum = 0.0f;
    for (size_t j = lane; j <= t; j += WARP) {
        float e = expf(row[j] - mx);
        row[j] = e;
        sum += e;
    }
    const float inv = 1.0f / warp_sum(sum);
    for (size_t j = lane; j <= t; j += WARP) row[j] *= inv;
    for (size_t j = t + 1 + lane; j < T; j += WARP) row[j] = 0.0f;
}

/* In place on da (NH,T,T) of one batch row: da = att * (da - sum_j att*da) * scale on the
 * causal part, 0 above it. rows = NH*T. */
__global__ void causal_softmax_backward_kernel(float *da, const float *att, size_t rows, size_t T,
                                               float scale) {
    const size_t r = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    if (r >= rows) return;
    const size_t t = r % T;
    const float *a = att + r * T;
    float *d = da + r * T;
    float s = 0.0f;
    for (size_t j = lane; j <= t; j += WARP) s += a[j] * d[j];
    s = warp_sum(s);
    for (size_t j = lane; j <= t; j += WARP) d[j] = a[j] * (d[j] - s) * scale;
    for (size_t j = t + 1 + lane; j < T; j += WARP) d[j] = 0.0f;
}

extern "C" void cuda_attention_forward(const cuda_context *ctx, float *out, float *att,
                                       const float *qkv, size_t B, size_t T, size_t NH, size_t HS) {
    if (B == 0 || T == 0 || NH == 0 || HS == 0) return;
    const size_t CH = NH * HS; /* width of Q (and of K, V) */
    const size_t ld = 3 * CH;  /* row stride of qkv */
    const float scale = 1.0f / sqrtf((float)HS);
    for (size_t b = 0; b < B; b++) {
        const float *q = qkv + b * T * ld; /* head 0; head h is + h*HS */
        const float *k = q + CH;
        float *a = att + b * NH * T * T; /* (NH,T,T) */
        /* a_h (T,T) = scale * q_h (T,HS) @ k_h (T,HS)^T, for every head h */
        rowmajor_gemm_batched(ctx, NO_TRANS, TRANS, T, T, HS, scale, q, ld, HS, k, ld, HS, 0.0f, a,
                              T, T * T, NH);
    }
    const size_t rows = B * NH * T;
    causal_softmax_kernel<<<grid_for_rows(rows), BLOCK, 0, ctx->stream>>>(att, rows, T);
    cudaCheckLast();
    for (size_t b = 0; b < B; b++) {
        const float *v = qkv + b * T * ld + 2 * CH;
        const float *a = att + b * NH * T * T;
        /* out_h (T,HS) = a_h (T,T) @ v_h (T,HS), written at columns h*HS of out (B,T,CH) */
        rowmajor_gemm_batched(ctx, NO_TRANS, NO_TRANS, T, HS, T, 1.0f, a, T, T * T, v, ld, HS, 0.0f,
                              out + b * T * CH, CH, HS, NH);
    }
}

extern "C" void cuda_attention_backward(const cuda_context *ctx, float *dqkv, const float *dout,
                                        const float *qkv, const float *att, float *scratch,
                                        size_t B, size_t T, size_t NH, size_t HS) {
    if (B == 0 || T == 0 || NH == 0 || HS == 0) return;
    const size_t CH = NH * HS;
    const size_t ld = 3 * CH;
    const float scale = 1.0f / sqrtf((float)HS);
    const size_t rows = NH * T;
    for (size_t b = 0; b < B; b++) {
        const float *q = qkv + b * T * ld;
        const float *k = q + CH;
        const float *v = q + 2 * CH;
        float *dq = dqkv + b * T * ld;
        float *dk = dq + CH;
        float *dv = dq + 2 * CH;
        const float *a = att + b * NH * T * T;
        const float *dy = dout + b * T * CH;
        float *da = scratch; /* (NH,T,T): the next b reuses it after these calls (one stream) */
        /* da_h (T,T) = dy_h (T,HS) @ v_h (T,HS)^T */
        rowmajor_gemm_batched(ctx, NO_TRANS, TRANS, T, T, HS, 1.0f, dy, CH, HS, v, ld, HS, 0.0f, da,
                              T, T * T, NH);
        /* dv_h (T,HS) += a_h (T,T)^T @ dy_h (T,HS) */
        rowmajor_gemm_batched(ctx, TRANS, NO_TRANS, T, HS, T, 1.0f, a, T, T * T, dy, CH, HS, 1.0f,
                              dv, ld, HS, NH);
        /* softmax backward, in place: da becomes dpre */
        causal_softmax_backward_kernel<<<grid_for_rows(rows), BLOCK, 0, ctx->stream>>>(da, a, rows,
                                                                                       T, scale);
        cudaCheckLast();
        /* dq_h (T,HS) += dpre_h (T,T) @ k_h (T,HS) */
        rowmajor_gemm_batched(ctx, NO_TRANS, NO_TRANS, T, HS, T, 1.0f, da, T, T * T, k, ld, HS,
                              1.0f, dq, ld, HS, NH);
        /* dk_h (T,HS) += dpre_h (T,T)^T @ q_h (T,HS) */
        rowmajor_gemm_batched(ctx, TRANS, NO_TRANS, T, HS, T, 1.0f, da, T, T * T, q, ld, HS, 1.0f,
                              dk, ld, HS, NH);
    }
}
