/* embedding_cuda.cu — token (vocab-parallel) and position embeddings, forward and backward,
 * on the GPU (contracts in kernels/ops_cuda.h, CPU twins in kernels/ops_cpu.c).
 *
 * The token backward is the interesting one: many positions can hold the same token, so
 * their dout rows add into the same dwte row. Instead of atomics (fast, but the sum order —
 * and so the last bits — change from run to run), one block owns one row of dwte (one token)
 * and walks the positions in order, 256 tokens at a time through shared memory; where
 * position n holds its token, each thread adds dout[n] into the columns it owns, kept in
 * registers: dwte[tok][c] += dout[n][c] for n = 0, 1, ... That is the CPU's order exactly,
 * so the result is bit-identical to the twin, and the V rows run in parallel. (The first
 * version had one thread per column walk all N positions with a read-modify-write of dwte
 * in memory each time: C threads, N dependent steps, milliseconds per call.)
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

/* One block per row of dwte (token v_start + blockIdx.x), positions in order (see the top of
 * the file). A thread owns columns c0 + k*blockDim.x + threadIdx.x, k < EMB_COLS, of each
 * span of EMB_COLS*blockDim.x columns; their sums stay in registers. */
constexpr int EMB_COLS = 4;
__global__ void embedding_backward_kernel(float *dwte, const float *dout, const int32_t *tokens,
                                          size_t N, size_t C, int64_t v_start) {
    __shared__ int32_t tile[BLOCK];
    const int64_t token = v_start + (int64_t)blockIdx.x;
    float *row = dwte + (size_t)blockIdx.x * C;
    const size_t span = (size_t)blockDim.x * EMB_COLS;
    for (size_t c0 = 0; c0 < C; c0 += span) {
        float acc[EMB_COLS];
#pragma unroll
        for (int k = 0; k < EMB_COLS; k++) {
            const size_t c = c0 + (size_t)k * blockDim.x + threadIdx.x;
            acc[k] = c < C ? row[c] : 0.0f;
        }
        for (size_t base = 0; base < N; base += blockDim.x) {
            const size_t m = N - base < blockDim.x ? N - base : blockDim.x;
            __syncthreads(); /* everyone is done with the previous tile */
            if (threadIdx.x < m) tile[threadIdx.x] = tokens[base + threadIdx.x];
            __syncthreads();
            for (size_t j = 0; j < m; j++) {
                if ((int64_t)tile[j] != token) continue; /* the same branch for the whole block */
                const float *d = dout + (base + j) * C;
#pragma unroll
                for (int k = 0; k < EMB_COLS; k++) {
                    const size_t c = c0 + (size_t)k * blockDim.x + threadIdx.x;
                    if (c < C) acc[k] += d[c];
                }
            }
        }
#pragma unroll
        for (int k = 0; k < EMB_COLS; k++) {
            const size_t c = c0 + (size_t)k * blockDim.x + threadIdx.x;
            if (c < C) row[c] = acc[k];
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
    if (N == 0 || C == 0 || V == 0) return;
    CHECK(V <= 0x7fffffffu, "embedding_backward: one block per vocabulary row, at most 2^31 - 1");
    embedding_backward_kernel<<<(unsigned)V, BLOCK, 0, ctx->stream>>>(dwte, dout, tokens, N, C,
                                                                      v_start);
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
