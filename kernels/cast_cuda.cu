/* cast_cuda.cu — fp32 <-> bf16 and fp32 <-> fp16 on the GPU (CPU twins in
 * src/precision/convert.c; 16-bit values are raw bit patterns in uint16_t there and here).
 *
 * The hardware conversions (__float2bfloat16_rn, __float2half_rn: the PTX cvt.rn
 * instructions) round to nearest, ties to even, overflow fp16 to inf and produce fp16
 * subnormals, as convert.h's rules ask; widening is exact. The one difference from the CPU
 * twin: a NaN becomes the canonical NaN (its payload is not kept) — still a NaN.
 *
 * Not here: choosing which tensors live in which format (the trainer does).
 */
#include "kernels/cuda_common.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

using namespace trident_cuda;

__global__ void fp32_to_bf16_kernel(uint16_t *out, const float *in, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride())
        out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in[i]));
}

__global__ void bf16_to_fp32_kernel(float *out, const uint16_t *in, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride())
        out[i] = __bfloat162float(__ushort_as_bfloat16(in[i]));
}

__global__ void fp32_to_fp16_kernel(uint16_t *out, const float *in, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride())
        out[i] = __half_as_ushort(__float2half_rn(in[i]));
}

__global__ void fp16_to_fp32_kernel(float *out, const uint16_t *in, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride())
        out[i] = __half2float(__ushort_as_half(in[i]));
}

extern "C" void cuda_fp32_to_bf16(const cuda_context *ctx, uint16_t *out, const float *in,
                                  size_t n) {
    if (n == 0) return;
    fp32_to_bf16_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(out, in, n);
    cudaCheckLast();
}

extern "C" void cuda_bf16_to_fp32(const cuda_context *ctx, float *out, const uint16_t *in,
                                  size_t n) {
    if (n == 0) return;
    bf16_to_fp32_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(out, in, n);
    cudaCheckLast();
}

extern "C" void cuda_fp32_to_fp16(const cuda_context *ctx, uint16_t *out, const float *in,
                                  size_t n) {
    if (n == 0) return;
    fp32_to_fp16_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(out, in, n);
    cudaCheckLast();
}

extern "C" void cuda_fp16_to_fp32(const cuda_context *ctx, float *out, const uint16_t *in,
                                  size_t n) {
    if (n == 0) return;
    fp16_to_fp32_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(out, in, n);
    cudaCheckLast();
}
