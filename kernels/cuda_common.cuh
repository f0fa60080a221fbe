/* cuda_common.cuh — shared by every CUDA file in kernels/: includes, launch shapes, reductions.
 *
 * Internal to the CUDA kernel library (never included by C code). Kernels here follow two
 * launch shapes:
 *   - elementwise: a grid-stride loop over n elements, BLOCK threads per block;
 *   - row-wise: one warp (32 threads) per row of a matrix, ROWS_PER_BLOCK rows per block,
 *     the row reduced with warp shuffles in a fixed order (reproducible run to run).
 * Column reductions (sums over the N rows, e.g. dbias) use one thread column per output
 * column and a fixed tree in shared memory — never atomics — so results do not depend on
 * scheduling.
 *
 * Not here: any particular op.
 */
#ifndef TRIDENT_KERNELS_CUDA_COMMON_CUH
#define TRIDENT_KERNELS_CUDA_COMMON_CUH

/* The C library headers first, so that check.h's own includes are already seen outside the
 * extern "C" block below (libstdc++'s <stdlib.h> must not be read with C linkage). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/ops_cuda.h"

extern "C" {
#include "src/core/check.h"
}

namespace trident_cuda {

constexpr int BLOCK = 256; /* threads per block, elementwise kernels */
constexpr int WARP = 32;
constexpr int ROWS_PER_BLOCK = BLOCK / WARP; /* row-wise kernels: one warp per row */

/* Blocks for a grid-stride loop over n elements (at least 1, at most 2^30: the loop covers
 * the rest). */
static inline unsigned grid_for(size_t n, int block = BLOCK) {
    size_t g = (n + (size_t)block - 1) / (size_t)block;
    if (g < 1) g = 1;
    if (g > (1u << 30)) g = 1u << 30;
    return (unsigned)g;
}

/* Blocks for one warp per row over `rows` rows. */
static inline unsigned grid_for_rows(size_t rows) { return grid_for(rows, ROWS_PER_BLOCK); }

/* cuBLAS takes int sizes; the model's sizes fit, but say so loudly if one does not. */
static inline int blas_int(size_t x) {
    CHECK(x <= (size_t)0x7fffffff, "matrix dimension too large for cuBLAS (int)");
    return (int)x;
}

__device__ __forceinline__ size_t global_index() {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ size_t global_stride() { return (size_t)gridDim.x * blockDim.x; }

/* Sum / max over the 32 lanes of a warp; every lane gets the result (butterfly order). */
__device__ __forceinline__ float warp_sum(float x) {
    for (int off = WARP / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}
__device__ __forceinline__ float warp_max(float x) {
    for (int off = WARP / 2; off > 0; off /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
    return x;
}

/* Sum / max over the whole block (blockDim.x a multiple of 32, at most 1024); every thread
 * gets the result. `shared` holds 32 floats. Ends with a barrier, so it may be called again. */
__device__ __forceinline__ float block_sum(float x, float *shared) {
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    const int nwarps = blockDim.x / WARP;
    x = warp_sum(x);
    if (lane == 0) shared[warp] = x;
    __syncthreads();
    x = lane < nwarps ? shared[lane] : 0.0f;
    x = warp_sum(x);
    __syncthreads();
    return x;
}
__device__ __forceinline__ float block_max(float x, float *shared) {
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    const int nwarps = blockDim.x / WARP;
    x = warp_max(x);
    if (lane == 0) shared[warp] = x;
    __syncthreads();
    x = lane < nwarps ? shared[lane] : -INFINITY;
    x = warp_max(x);
    __syncthreads();
    return x;
}

/* Column sums over rows, the shape of dbias: grid.x covers columns COLS at a time, the block
 * is (COLS, ROWS_T); thread (x, y) sums rows y, y+ROWS_T, ... of column x, then the ROWS_T
 * partial sums of a column are added in a fixed tree. */
constexpr int COLS = 32;
constexpr int ROWS_T = 16;


/* ---- row-major GEMMs on column-major cuBLAS -------------------------------------------------
 *
 * cuBLAS is column-major; Trident's tensors are row-major. The bytes of a row-major (R,K)
 * matrix X with leading dimension ld are exactly the column-major (K,R) matrix X^T with the
 * same ld. So the row-major product
 *
 *     Y (M,N) = op(A) (M,K) @ op(B) (K,N)          [+ beta * Y]
 *
 * is, read column-major, Y^T = op(B)^T @ op(A)^T: the SAME call with the operands swapped
 * (B first), the transpose flags kept as they are, and m, n swapped:
 *
 *     cublasGemmEx(opB, opA, m = N, n = M, k = K, B, ldb, A, lda, Y, ldy)
 *
 * rowmajor_gemm() does that once, so every call site below reads like the CPU's
 * cblas_sgemm(CblasRowMajor, ...) line it mirrors, with the same sizes and leading
 * dimensions. `in_type` is CUDA_R_32F (plain fp32: CUBLAS_COMPUTE_32F, no TF32) or
 * CUDA_R_16BF (bf16 inputs on the tensor cores, fp32 accumulation); Y is always fp32. */
static inline void rowmajor_gemm(const cuda_context *ctx, cudaDataType in_type,
                                 cublasOperation_t opA, cublasOperation_t opB, size_t M, size_t N,
                                 size_t K, float alpha, const void *A, size_t lda, const void *B,
                                 size_t ldb, float beta, float *Y, size_t ldy) {
    cublasCheck(cublasGemmEx(ctx->cublas, opB, opA, blas_int(N), blas_int(M), blas_int(K), &alpha,
                             B, in_type, blas_int(ldb), A, in_type, blas_int(lda), &beta, Y,
                             CUDA_R_32F, blas_int(ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* `count` independent row-major products at once: the i-th uses A + i*strideA,
 * B + i*strideB, Y + i*strideY (strides in elements). Same mapping as rowmajor_gemm(). */
static inline void rowmajor_gemm_batched(const cuda_context *ctx, cublasOperation_t opA,
                                         cublasOperation_t opB, size_t M, size_t N, size_t K,
                                         float alpha, const float *A, size_t lda, size_t strideA,
                                         const float *B, size_t ldb, size_t strideB, float beta,
                                         float *Y, size_t ldy, size_t strideY, size_t count) {
    cublasCheck(cublasGemmStridedBatchedEx(
        ctx->cublas, opB, opA, blas_int(N), blas_int(M), blas_int(K), &alpha, B, CUDA_R_32F,
        blas_int(ldb), (long long)strideB, A, CUDA_R_32F, blas_int(lda), (long long)strideA, &beta,
        Y, CUDA_R_32F, blas_int(ldy), (long long)strideY, blas_int(count), CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
}

constexpr cublasOperation_t NO_TRANS = CUBLAS_OP_N;
constexpr cublasOperation_t TRANS = CUBLAS_OP_T;

} /* namespace trident_cuda */

#endif /* TRIDENT_KERNELS_CUDA_COMMON_CUH */
