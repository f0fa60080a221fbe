/* elementwise_cuda.cu — the pointwise kernels on the GPU: GELU forward/backward, the
 * residual add and y += x (contracts in kernels/ops_cuda.h, CPU twins in kernels/ops_cpu.c).
 *
 * One thread per element in a grid-stride loop; the formulas are written exactly as in the
 * CPU twin (tanhf, not a faster approximation), so results agree to a few ulps (nvcc may
 * fuse a*b+c into one fma where the CPU rounds twice).
 *
 * Not here: fused variants (bias+GELU and the like).
 */
#include "kernels/cuda_common.cuh"

using namespace trident_cuda;

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

__global__ void gelu_forward_kernel(float *out, const float *inp, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride()) {
        float x = inp[i];
        float u = GELU_K * (x + 0.044715f * x * x * x);
        out[i] = 0.5f * x * (1.0f + tanhf(u));
    }
}

/* dinp += gelu'(x) * dout, gelu'(x) = 0.5 (1 + tanh u) + 0.5 x sech^2(u) du/dx. */
__global__ void gelu_backward_kernel(float *dinp, const float *inp, const float *dout, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride()) {
        float x = inp[i];
        float u = GELU_K * (x + 0.044715f * x * x * x);
        float th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += (0.5f * (1.0f + th) + 0.5f * x * sech2 * du) * dout[i];
    }
}

__global__ void residual_forward_kernel(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride()) out[i] = a[i] + b[i];
}

__global__ void add_inplace_kernel(float *y, const float *x, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride()) y[i] += x[i];
}

extern "C" void cuda_gelu_forward(const cuda_context *ctx, float *out, const float *inp,
                                  size_t n) {
    if (n == 0) return;
    gelu_forward_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(out, inp, n);
    cudaCheckLast();
}

extern "C" void cuda_gelu_backward(const cuda_context *ctx, float *dinp, const float *inp,
                                   const float *dout, size_t n) {
    if (n == 0) return;
    gelu_backward_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(dinp, inp, dout, n);
    cudaCheckLast();
}

extern "C" void cuda_residual_forward(const cuda_context *ctx, float *out, const float *a,
                                      const float *b, size_t n) {
    if (n == 0) return;
    residual_forward_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(out, a, b, n);
    cudaCheckLast();
}

extern "C" void cuda_add_inplace(const cuda_context *ctx, float *y, const float *x, size_t n) {
    if (n == 0) return;
    add_inplace_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(y, x, n);
    cudaCheckLast();
}
