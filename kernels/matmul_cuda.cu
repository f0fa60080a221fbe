/* matmul_cuda.cu — the linear layer on the GPU: cuda_matmul_forward/backward in fp32 and with
 * bf16 inputs (see kernels/ops_cuda.h for the contracts, kernels/ops_cpu.c for the twins).
 *
 * The products are cuBLAS GEMMs through rowmajor_gemm() (cuda_common.cuh explains the
 * row-major -> column-major mapping); each call mirrors one cblas_sgemm line of the CPU
 * version. The bias is two small kernels: a broadcast add after the forward GEMM, and a
 * column sum of dout for dbias.
 *
 * Not here: the tensor-parallel split of the weight (src/tp/).
 */
#include "kernels/cuda_common.cuh"

#include <cuda_bf16.h>

using namespace trident_cuda;

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

/* out (N,OC) += bias (OC) on every row. */
__global__ void bias_add_kernel(float *out, const float *bias, size_t N, size_t OC) {
    for (size_t i = global_index(); i < N * OC; i += global_stride()) out[i] += bias[i % OC];
}

/* dbias (OC) += sum over the N rows of dout (N,OC); block (COLS, ROWS_T), grid over columns. */
template <typename T>
__global__ void column_sum_kernel(float *dbias, const T *dout, size_t N, size_t OC) {
    __shared__ float part[ROWS_T][COLS];
    const size_t col = (size_t)blockIdx.x * COLS + threadIdx.x;
    float s = 0.0f;
    if (col < OC)
        for (size_t n = threadIdx.y; n < N; n += ROWS_T) s += to_float(dout[n * OC + col]);
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    for (int h = ROWS_T / 2; h > 0; h /= 2) {
        const int y = (int)threadIdx.y, x = (int)threadIdx.x;
        if (y < h) part[y][x] += part[y + h][x];
        __syncthreads();
    }
    if (threadIdx.y == 0 && col < OC) dbias[col] += part[0][threadIdx.x];
}

template <typename T>
static void column_sum(const cuda_context *ctx, float *dbias, const T *dout, size_t N, size_t OC) {
    dim3 block(COLS, ROWS_T);
    unsigned grid = (unsigned)((OC + COLS - 1) / COLS);
    column_sum_kernel<T><<<grid, block, 0, ctx->stream>>>(dbias, dout, N, OC);
    cudaCheckLast();
}

/* The forward of both precisions: out = inp @ weight^T (+ bias). */
static void matmul_forward_any(const cuda_context *ctx, cudaDataType in_type, float *out,
                               const void *inp, const void *weight, const float *bias, size_t N,
                               size_t C, size_t OC) {
    if (N == 0 || OC == 0) return;
    if (C == 0) {
        /* an empty sum: k = 0 is kept away from cuBLAS */
        cuda_zero(ctx, out, N * OC * sizeof(float));
    } else {
        /* out (N,OC) = inp (N,C) @ weight (OC,C)^T */
        rowmajor_gemm(ctx, in_type, NO_TRANS, TRANS, N, OC, C, 1.0f, inp, C, weight, C, 0.0f, out,
                      OC);
    }
    if (bias) {
        bias_add_kernel<<<grid_for(N * OC), BLOCK, 0, ctx->stream>>>(out, bias, N, OC);
        cudaCheckLast();
    }
}

/* The backward products of both precisions (dbias is done by the caller, typed). */
static void matmul_backward_any(const cuda_context *ctx, cudaDataType in_type, float *dinp,
                                float *dweight, const void *dout, const void *inp,
                                const void *weight, size_t N, size_t C, size_t OC) {
    /* dinp (N,C) += dout (N,OC) @ weight (OC,C) */
    if (dinp)
        rowmajor_gemm(ctx, in_type, NO_TRANS, NO_TRANS, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f,
                      dinp, C);
    /* dweight (OC,C) += dout (N,OC)^T @ inp (N,C) */
    if (dweight)
        rowmajor_gemm(ctx, in_type, TRANS, NO_TRANS, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f,
                      dweight, C);
}

extern "C" void cuda_matmul_forward(const cuda_context *ctx, float *out, const float *inp,
                                    const float *weight, const float *bias, size_t N, size_t C,
                                    size_t OC) {
    matmul_forward_any(ctx, CUDA_R_32F, out, inp, weight, bias, N, C, OC);
}

extern "C" void cuda_matmul_backward(const cuda_context *ctx, float *dinp, float *dweight,
                                     float *dbias, const float *dout, const float *inp,
                                     const float *weight, size_t N, size_t C, size_t OC) {
    if (N == 0 || C == 0 || OC == 0) return; /* as the CPU twin: nothing to add */
    matmul_backward_any(ctx, CUDA_R_32F, dinp, dweight, dout, inp, weight, N, C, OC);
    if (dbias) column_sum<float>(ctx, dbias, dout, N, OC);
}

extern "C" void cuda_matmul_forward_bf16(const cuda_context *ctx, float *out, const uint16_t *inp,
                                         const uint16_t *weight, const float *bias, size_t N,
                                         size_t C, size_t OC) {
    matmul_forward_any(ctx, CUDA_R_16BF, out, inp, weight, bias, N, C, OC);
}

extern "C" void cuda_matmul_backward_bf16(const cuda_context *ctx, float *dinp, float *dweight,
                                          float *dbias, const uint16_t *dout, const uint16_t *inp,
                                          const uint16_t *weight, size_t N, size_t C, size_t OC) {
    if (N == 0 || C == 0 || OC == 0) return;
    matmul_backward_any(ctx, CUDA_R_16BF, dinp, dweight, dout, inp, weight, N, C, OC);
    if (dbias) column_sum<__nv_bfloat16>(ctx, dbias, (const __nv_bfloat16 *)dout, N, OC);
}
