/* crossentropy_cuda.cu — the vocab-parallel cross-entropy pieces on the GPU (contracts in
 * kernels/ops.h and kernels/ops_cuda.h, CPU twins in kernels/ops_cpu.c).
 *
 *   local_max    rowmax[n]  = max over this rank's real columns        (then all-reduce MAX)
 *   local_sums   sumexp[n]  = sum exp(logit - rowmax);  target_logit    (then all-reduce SUM)
 *   loss         loss[n]    = log(sumexp) + rowmax - target_logit
 *   backward     dlogits    = softmax * dloss - [v == target] * dloss   (written, not added)
 *
 * Row kernels use one block per row (a vocabulary shard is thousands of columns: one warp
 * would be too few threads), reduced in a fixed tree (block_max / block_sum).
 *
 * Padding: columns whose global index is >= real_vocab exist only to make V divisible by the
 * tensor-parallel size; they are left out of every sum and get a zero gradient. A rank may
 * hold only padding (R = 0 real columns): its rowmax is -inf and its sums are 0.
 *
 * Not here: the all-reduces between the steps (src/tp/).
 */
#include "kernels/cuda_common.cuh"

using namespace trident_cuda;

/* Number of real (non-padding) columns among the V starting at global index v_start. */
static size_t real_cols(size_t V, int64_t v_start, int64_t real_vocab) {
    int64_t r = real_vocab - v_start;
    if (r <= 0) return 0;
    return (size_t)r < V ? (size_t)r : V;
}

__global__ void crossentropy_max_kernel(float *rowmax, const float *logits, size_t N, size_t V,
                                        size_t R) {
    __shared__ float shared[WARP];
    for (size_t n = blockIdx.x; n < N; n += gridDim.x) {
        const float *l = logits + n * V;
        float mx = -INFINITY;
        for (size_t v = threadIdx.x; v < R; v += blockDim.x) mx = fmaxf(mx, l[v]);
        mx = block_max(mx, shared);
        if (threadIdx.x == 0) rowmax[n] = mx;
    }
}

__global__ void crossentropy_sums_kernel(float *sumexp, float *target_logit, const float *logits,
                                         const float *rowmax, const int32_t *targets, size_t N,
                                         size_t V, int64_t v_start, size_t R) {
    __shared__ float shared[WARP];
    for (size_t n = blockIdx.x; n < N; n += gridDim.x) {
        const float *l = logits + n * V;
        const float mx = rowmax[n];
        float s = 0.0f;
        for (size_t v = threadIdx.x; v < R; v += blockDim.x) s += expf(l[v] - mx);
        s = block_sum(s, shared);
        if (threadIdx.x == 0) {
            sumexp[n] = s;
            const int64_t t = (int64_t)targets[n] - v_start;
            target_logit[n] = (t >= 0 && t < (int64_t)R) ? l[t] : 0.0f;
        }
    }
}

__global__ void crossentropy_loss_kernel(float *loss, const float *sumexp, const float *rowmax,
                                         const float *target_logit, size_t N) {
    for (size_t n = global_index(); n < N; n += global_stride())
        loss[n] = logf(sumexp[n]) + rowmax[n] - target_logit[n];
}

__global__ void crossentropy_backward_kernel(float *dlogits, const float *logits,
                                             const float *rowmax, const float *sumexp,
                                             const int32_t *targets, const float *dloss, size_t N,
                                             size_t V, int64_t v_start, size_t R) {
    for (size_t n = blockIdx.x; n < N; n += gridDim.x) {
        const float *l = logits + n * V;
        float *d = dlogits + n * V;
        const float mx = rowmax[n], inv = 1.0f / sumexp[n], g = dloss[n];
        const int64_t t = (int64_t)targets[n] - v_start;
        for (size_t v = threadIdx.x; v < V; v += blockDim.x) {
            float x = 0.0f;
            if (v < R) {
                x = expf(l[v] - mx) * inv * g;
                if ((int64_t)v == t) x -= g;
            }
            d[v] = x;
        }
    }
}

/* One block per row (grid-stride over rows beyond the grid limit we choose). */
static unsigned grid_rows(size_t N) { return (unsigned)(N < (1u << 30) ? N : (1u << 30)); }

extern "C" void cuda_crossentropy_local_max(const cuda_context *ctx, float *rowmax,
                                            const float *logits, size_t N, size_t V,
                                            int64_t v_start, int64_t real_vocab) {
    if (N == 0) return;
    size_t R = real_cols(V, v_start, real_vocab);
    crossentropy_max_kernel<<<grid_rows(N), BLOCK, 0, ctx->stream>>>(rowmax, logits, N, V, R);
    cudaCheckLast();
}

extern "C" void cuda_crossentropy_local_sums(const cuda_context *ctx, float *sumexp,
                                             float *target_logit, const float *logits,
                                             const float *rowmax, const int32_t *targets, size_t N,
                                             size_t V, int64_t v_start, int64_t real_vocab) {
    if (N == 0) return;
    size_t R = real_cols(V, v_start, real_vocab);
    crossentropy_sums_kernel<<<grid_rows(N), BLOCK, 0, ctx->stream>>>(
        sumexp, target_logit, logits, rowmax, targets, N, V, v_start, R);
    cudaCheckLast();
}

extern "C" void cuda_crossentropy_loss(const cuda_context *ctx, float *loss, const float *sumexp,
                                       const float *rowmax, const float *target_logit, size_t N) {
    if (N == 0) return;
    crossentropy_loss_kernel<<<grid_for(N), BLOCK, 0, ctx->stream>>>(loss, sumexp, rowmax,
                                                                     target_logit, N);
    cudaCheckLast();
}

extern "C" void cuda_crossentropy_backward(const cuda_context *ctx, float *dlogits,
                                           const float *logits, const float *rowmax,
                                           const float *sumexp, const int32_t *targets,
                                           const float *dloss, size_t N, size_t V, int64_t v_start,
                                           int64_t real_vocab) {
    if (N == 0 || V == 0) return;
    size_t R = real_cols(V, v_start, real_vocab);
    crossentropy_backward_kernel<<<grid_rows(N), BLOCK, 0, ctx->stream>>>(
        dlogits, logits, rowmax, sumexp, targets, dloss, N, V, v_start, R);
    cudaCheckLast();
}
