/* reduce_cuda.cu — whole-array reductions whose answer comes back to the host: the sum of
 * squares (gradient norms) and the inf/NaN check (fp16 loss scaling). Contracts in
 * kernels/ops_cuda.h; CPU twins sum_squares (kernels/ops_cpu.c) and prec_has_inf_or_nan
 * (src/precision/loss_scaler.c).
 *
 * The sum of squares has a fixed order, so the same input gives the same double every run:
 *
 *   x (n):  block b, thread t sums x[i] for i = b*BLOCK + t + k*(blocks*BLOCK), k = 0, 1, ...
 *   block b: its BLOCK thread sums -> a tree in shared memory -> ctx->partials[b]
 *   host:    sum = partials[0] + partials[1] + ... (block order)
 *
 * The number of blocks depends on n only (at most CUDA_REDUCE_BLOCKS), never on the GPU.
 * Both functions wait for the stream: they return a host value.
 *
 * Not here: reductions along rows or columns of a matrix (LayerNorm, dbias: in their ops).
 */
#include "kernels/cuda_common.cuh"

using namespace trident_cuda;

/* partials[blockIdx.x] = sum of x[i]^2 over this block's grid-stride slice, in double.
 * A product of two floats is exact in double, so fma contraction cannot change it. */
__global__ void sumsq_kernel(double *partials, const float *x, size_t n) {
    __shared__ double sh[BLOCK];
    double s = 0.0;
    for (size_t i = global_index(); i < n; i += global_stride()) s += (double)x[i] * (double)x[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half /= 2) { /* fixed tree: sh[t] += sh[t + half] */
        if ((int)threadIdx.x < half) sh[threadIdx.x] += sh[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = sh[0];
}

/* *flag = 1 when any element is inf or NaN (exponent bits all ones). Every writer stores
 * the same value, so a plain store is enough; the host cleared the flag first. */
__global__ void inf_or_nan_kernel(int *flag, const float *x, size_t n) {
    bool bad = false;
    for (size_t i = global_index(); i < n; i += global_stride())
        bad |= (__float_as_uint(x[i]) & 0x7f800000u) == 0x7f800000u;
    if (bad) *flag = 1;
}

extern "C" double cuda_sumsq(const cuda_context *ctx, const float *x, size_t n) {
    if (n == 0) return 0.0;
    unsigned blocks = grid_for(n);
    if (blocks > CUDA_REDUCE_BLOCKS) blocks = CUDA_REDUCE_BLOCKS;
    sumsq_kernel<<<blocks, BLOCK, 0, ctx->stream>>>(ctx->partials, x, n);
    cudaCheckLast();
    double partials[CUDA_REDUCE_BLOCKS];
    cuda_download(ctx, partials, ctx->partials, blocks * sizeof(double)); /* waits */
    double s = 0.0;
    for (unsigned b = 0; b < blocks; b++) s += partials[b];
    return s;
}

extern "C" bool cuda_has_inf_or_nan(const cuda_context *ctx, const float *x, size_t n) {
    if (n == 0) return false;
    cudaCheck(cudaMemsetAsync(ctx->flag, 0, sizeof(int), ctx->stream));
    unsigned blocks = grid_for(n);
    if (blocks > CUDA_REDUCE_BLOCKS) blocks = CUDA_REDUCE_BLOCKS;
    inf_or_nan_kernel<<<blocks, BLOCK, 0, ctx->stream>>>(ctx->flag, x, n);
    cudaCheckLast();
    int flag = 0;
    cuda_download(ctx, &flag, ctx->flag, sizeof flag); /* waits */
    return flag != 0;
}
