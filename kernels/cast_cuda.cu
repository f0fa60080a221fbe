/* cast_cuda.cu — fp32 <-> bf16 and fp32 <-> fp16 on the GPU (CPU twins in
 * src/precision/convert.c; 16-bit values are raw bit patterns in uint16_t there and here).
 *
 * The hardware conversions (__float2bfloat16_rn, __float2half_rn: the PTX cvt.rn
 * instructions) round to nearest, ties to even, overflow fp16 to inf and produce fp16
 * subnormals, as convert.h's rules ask; widening is exact. The one difference from the CPU
 * twin: a NaN becomes the canonical NaN (its payload is not kept) — still a NaN.
 *
 * The in-place roundings (x = widen(narrow(x)), cuda_round_to_bf16/fp16) keep even that:
 * they treat a NaN by hand exactly as convert.c does, so their bits equal
 * prec_round_array's for every input.
 *
 * Not here: choosing which tensors live in which format (the trainer does).
 */
#include "kernels/cuda_common.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

using namespace trident_cuda;

/* The four conversions on one value (raw 16-bit patterns, as in convert.h). */
__device__ __forceinline__ uint16_t bf16_of(float x) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}
__device__ __forceinline__ float float_of_bf16(uint16_t h) {
    return __bfloat162float(__ushort_as_bfloat16(h));
}
__device__ __forceinline__ uint16_t fp16_of(float x) {
    return __half_as_ushort(__float2half_rn(x));
}
__device__ __forceinline__ float float_of_fp16(uint16_t h) {
    return __half2float(__ushort_as_half(h));
}

__device__ __forceinline__ bool is_nan_bits(uint32_t b) { return (b & 0x7fffffffu) > 0x7f800000u; }

/* A NaN through convert.c's narrowing and widening: sign and the payload bits the 16-bit
 * format keeps stay, the quiet bit (0x00400000 in fp32) is set, the dropped bits are 0.
 *   bf16: ((b >> 16) | 0x0040) << 16                          = (b & 0xffff0000) | 0x00400000
 *   fp16: sign | 0x7f800000 | ((0x0200 | (man >> 13)) << 13)   = (b & 0xffffe000) | 0x00400000 */
__device__ __forceinline__ float round_bf16(float x) {
    uint32_t b = __float_as_uint(x);
    if (is_nan_bits(b)) return __uint_as_float((b & 0xffff0000u) | 0x00400000u);
    return float_of_bf16(bf16_of(x));
}
__device__ __forceinline__ float round_fp16(float x) {
    uint32_t b = __float_as_uint(x);
    if (is_nan_bits(b)) return __uint_as_float((b & 0xffffe000u) | 0x00400000u);
    return float_of_fp16(fp16_of(x));
}

__global__ void fp32_to_bf16_kernel(uint16_t *out, const float *in, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride()) out[i] = bf16_of(in[i]);
}

__global__ void bf16_to_fp32_kernel(float *out, const uint16_t *in, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride()) out[i] = float_of_bf16(in[i]);
}

__global__ void fp32_to_fp16_kernel(uint16_t *out, const float *in, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride()) out[i] = fp16_of(in[i]);
}

__global__ void fp16_to_fp32_kernel(float *out, const uint16_t *in, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride()) out[i] = float_of_fp16(in[i]);
}

__global__ void round_to_bf16_kernel(float *x, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride()) x[i] = round_bf16(x[i]);
}

__global__ void round_to_fp16_kernel(float *x, size_t n) {
    for (size_t i = global_index(); i < n; i += global_stride()) x[i] = round_fp16(x[i]);
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

extern "C" void cuda_round_to_bf16(const cuda_context *ctx, float *x, size_t n) {
    if (n == 0) return;
    round_to_bf16_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(x, n);
    cudaCheckLast();
}

extern "C" void cuda_round_to_fp16(const cuda_context *ctx, float *x, size_t n) {
    if (n == 0) return;
    round_to_fp16_kernel<<<grid_for(n), BLOCK, 0, ctx->stream>>>(x, n);
    cudaCheckLast();
}
