/* embedding_cuda.cu — token (vocab-parallel) and position embeddings, forward and backward,
 * on the GPU (contracts in kernels/ops_cuda.h, CPU twins in kernels/ops_cpu.c).
 *
 * The token backward is the interesting one: many positions can hold the same token, so
 * their dout rows add into the same dwte row. Instead of atomics (fast, but the sum order —
 * and so the last bits — change from run to run), one thread owns one column c and walks
 * the positions in order: dwte[tok_n][c] += dout[n][c] for n = 0, 1, ... That is the CPU's
 * order exactly, so the result is bit-identical to the twin. It parallelises over C only,
 * which is plenty for a reference (C = 768 threads streaming N rows).
 *
 * Masking: a rank holds rows [v_start, v_start+V) of the vocabulary; a token outside that
 * range gives a zero row forward and no gradient backward (src/tp/ all-reduces the rest).
 *
 * Not here: the LM head (a matmul with the same wte) and the all-reduce.
 */
#include "kernels/cuda_common.cuh"

using namespace trident_cuda;

/* out (N,C): one thread per element. */
__global__ void embedding_forward_kernel(float *out, const int32_t *tokens, const float *wte,
                                         size_t N, size_t C, int64_t v_start, size_t V) {
    for (size_t i = global_index(); i < N * C; i += global_stride()) {
        const size_t n = i / C, c = i % C;
        const int64_t r = (int64_t)tokens[n] - v_start;
        out[i] = (r >= 0 && r < (int64_t)V) ? wte[(size_t)r * C + c] : 0.0f;
    }
}

/* One thread per column c, positions in order (see the top of the file). */
__global__ void embedding_backward_kernel(float *dwte, const float *dout, const int32_t *tokens,
                                          size_t N, size_t C, int64_t v_start, size_t V) {
    for (size_t c = global_index(); c < C; c += global_stride()) {
        for (size_t n = 0; n < N; n++) {
            const int64_t r = (int64_t)tokens[n] - v_start;
            if (r >= 0 && r < (int64_t)V) dwte[(size_t)r * C + c] += dout[n * C + c];
        }
    }
}

/* out (B,T,C) += wpe (T,C). */
__global__ void position_forward_kernel(float *out, const float *wpe, size_t B, size_t TC) {
    for (size_t i = global_index(); i < B * TC; i += global_stride()) out[i] += wpe[i % TC];
}

/* dwpe (T,C) += sum_b dout (b,T,C): one thread per (t,c), batch rows in order (as the CPU). */
__global__ void position_backward_kernel(float *dwpe, const float *dout, size_t B, size_t TC) {
    for (size_t i = global_index(); i < TC; i += global_stride()) {
        float acc = dwpe[i];
        for (size_t b = 0; b < B; b++) acc += dout[b * TC + i];
        dwpe[i] = acc;
    }
}

extern "C" void cuda_embedding_forward(const cuda_context *ctx, float *out, const int32_t *tokens,
                                       const float *wte, size_t N, size_t C, int64_t v_start,
                                       size_t V) {
    if (N == 0 || C == 0) return;
    embedding_forward_kernel<<<grid_for(N * C), BLOCK, 0, ctx->stream>>>(out, tokens, wte, N, C,
                                                                         v_start, V);
    cudaCheckLast();
}

extern "C" void cuda_embedding_backward(const cuda_context *ctx, float *dwte, const float *dout,
                                        const int32_t *tokens, size_t N, size_t C, int64_t v_start,
                                        size_t V) {
    if (N == 0 || C == 0) return;
    embedding_backward_kernel<<<grid_for(C, 128), 128, 0, ctx->stream>>>(dwte, dout, tokens, N, C,
                                                                         v_start, V);
    cudaCheckLast();
}

extern "C" void cuda_position_forward(const cuda_context *ctx, float *out, const float *wpe,
                                      size_t B, size_t T, size_t C) {
    if (B * T * C == 0) return;
    position_forward_kernel<<<grid_for(B * T * C), BLOCK, 0, ctx->stream>>>(out, wpe, B, T * C);
    cudaCheckLast();
}

extern "C" void cuda_position_backward(const cuda_context *ctx, float *dwpe, const float *dout,
                                       size_t B, size_t T, size_t C) {
    if (B * T * C == 0) return;
    position_backward_kernel<<<grid_for(T * C), BLOCK, 0, ctx->stream>>>(dwpe, dout, B, T * C);
    cudaCheckLast();
}
