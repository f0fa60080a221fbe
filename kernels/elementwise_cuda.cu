/* elementwise_cuda.cu — the pointwise kernels on the GPU: GELU forward/backward, the
 * residual add, y += x, fill, scale and the bias added to every row (contracts in
 * kernels/ops_cuda.h, CPU twins in kernels/ops_cpu.c).
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

__global__ void fill_kernel(float *x, float value, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride()) x[i] = value;
}

__global__ void scale_kernel(float *x, float s, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride()) x[i] *= s;
}

/* x (N,OC) viewed as N*OC elements: element i is column i % OC. One add per element, as in
 * the CPU's row loop, so the result is the same bit for bit. */
__global__ void add_bias_rows_kernel(float *x, const float *bias, size_t N, size_t OC) {
    for (size_t i = global_index(); i < N * OC; i += global_stride()) x[i] += bias[i % OC];
}

extern "C" void cuda_gelu_forward(const cuda_context *ctx, float *out, const float *inp, size_t n) {
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

extern "C" void cuda_fill(const cuda_context *ctx, float *x, float value, size_t n) {
    if (n == 0) return;
    fill_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(x, value, n);
    cudaCheckLast();
}

extern "C" void cuda_scale(const cuda_context *ctx, float *x, float s, size_t n) {
    if (n == 0) return;
    scale_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(x, s, n);
    cudaCheckLast();
}

extern "C" void cuda_add_bias_rows(const cuda_context *ctx, float *x, const float *bias, size_t N,
                                   size_t OC) {
    if (N == 0 || OC == 0) return;
    add_bias_rows_kernel<<<grid_for(N * OC), BLOCK, 0, ctx->stream>>>(x, bias, N, OC);
    cudaCheckLast();
}
