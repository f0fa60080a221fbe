/* layernorm_cuda.cu — LayerNorm forward and backward on the GPU (contracts in
 * kernels/ops_cuda.h, CPU twin in kernels/ops_cpu.c).
 *
 * Forward: one warp per row; the mean, then the variance around it (two passes over the
 * row, as the CPU does, rather than E[x^2] - E[x]^2, which cancels badly).
 * Backward: one warp per row for dinp (it needs two sums over the row), then a separate
 * column-sum kernel for dw and db, which sum over the N rows — two kernels instead of
 * atomics, so the result does not depend on the order blocks run in.
 *
 * Not here: fused residual+LayerNorm (a later optimisation; this is the readable version).
 */
#include "kernels/cuda_common.cuh"

using namespace trident_cuda;

static const float LN_EPS = 1e-5f; /* as ops_cpu.c */

__global__ void layernorm_forward_kernel(float *out, float *mean, float *rstd, const float *inp,
                                         const float *w, const float *b, size_t N, size_t C) {
    const size_t row = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    if (row >= N) return; /* the whole warp leaves together */
    const float *x = inp + row * C;
    float s = 0.0f;
    for (size_t i = lane; i < C; i += WARP) s += x[i];
    const float m = warp_sum(s) / (float)C;
    float v = 0.0f;
    for (size_t i = lane; i < C; i += WARP) {
        float d = x[i] - m;
        v += d * d;
    }
    const float rs = 1.0f / sqrtf(warp_sum(v) / (float)C + LN_EPS);
    float *o = out + row * C;
    for (size_t i = lane; i < C; i += WARP) o[i] = (x[i] - m) * rs * w[i] + b[i];
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = rs;
    }
}

/* dinp (row) += rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dout * w. */
__global__ void layernorm_backward_dinp_kernel(float *dinp, const float *dout, const float *inp,
                                               const float *w, const float *mean, const float *rstd,
                                               size_t N, size_t C) {
    const size_t row = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    if (row >= N) return;
    const float *d = dout + row * C;
    const float *x = inp + row * C;
    float *dx = dinp + row * C;
    const float m = mean[row], s = rstd[row];
    float sum_d = 0.0f, sum_dx = 0.0f;
    for (size_t i = lane; i < C; i += WARP) {
        float xhat = (x[i] - m) * s;
        float dxhat = d[i] * w[i];
        sum_d += dxhat;
        sum_dx += dxhat * xhat;
    }
    sum_d = warp_sum(sum_d) / (float)C;
    sum_dx = warp_sum(sum_dx) / (float)C;
    for (size_t i = lane; i < C; i += WARP) {
        float xhat = (x[i] - m) * s;
        float dxhat = d[i] * w[i];
        dx[i] += s * (dxhat - sum_d - xhat * sum_dx);
    }
}

/* db (C) += sum_n dout;  dw (C) += sum_n xhat * dout. Block (COLS, ROWS_T), grid over columns. */
__global__ void layernorm_backward_dwdb_kernel(float *dw, float *db, const float *dout,
                                               const float *inp, const float *mean,
                                               const float *rstd, size_t N, size_t C) {
    __shared__ float part_w[ROWS_T][COLS];
    __shared__ float part_b[ROWS_T][COLS];
    const size_t col = (size_t)blockIdx.x * COLS + threadIdx.x;
    const int x = threadIdx.x, y = threadIdx.y;
    float sw = 0.0f, sb = 0.0f;
    if (col < C) {
        for (size_t n = y; n < N; n += ROWS_T) {
            float d = dout[n * C + col];
            sb += d;
            sw += (inp[n * C + col] - mean[n]) * rstd[n] * d;
        }
    }
    part_w[y][x] = sw;
    part_b[y][x] = sb;
    __syncthreads();
    for (int h = ROWS_T / 2; h > 0; h /= 2) {
        if (y < h) {
            part_w[y][x] += part_w[y + h][x];
            part_b[y][x] += part_b[y + h][x];
        }
        __syncthreads();
    }
    if (y == 0 && col < C) {
        dw[col] += part_w[0][x];
        db[col] += part_b[0][x];
    }
}

extern "C" void cuda_layernorm_forward(const cuda_context *ctx, float *out, float *mean,
                                       float *rstd, const float *inp, const float *w,
                                       const float *b, size_t N, size_t C) {
    if (N == 0) return;
    layernorm_forward_kernel<<<grid_for_rows(N), BLOCK, 0, ctx->stream>>>(out, mean, rstd, inp, w,
                                                                          b, N, C);
    cudaCheckLast();
}

extern "C" void cuda_layernorm_backward(const cuda_context *ctx, float *dinp, float *dw, float *db,
                                        const float *dout, const float *inp, const float *w,
                                        const float *mean, const float *rstd, size_t N, size_t C) {
    if (N == 0 || C == 0) return;
    if (dinp) { /* the input-gradient part (B of a split backward) */
        layernorm_backward_dinp_kernel<<<grid_for_rows(N), BLOCK, 0, ctx->stream>>>(
            dinp, dout, inp, w, mean, rstd, N, C);
        cudaCheckLast();
    }
    if (dw) { /* the weight-gradient part (W) */
        dim3 block(COLS, ROWS_T);
        layernorm_backward_dwdb_kernel<<<(unsigned)((C + COLS - 1) / COLS), block, 0,
                                         ctx->stream>>>(dw, db, dout, inp, mean, rstd, N, C);
        cudaCheckLast();
    }
}
