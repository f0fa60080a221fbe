/* ops.h — the numerical kernels of a GPT, forward and backward, on the CPU.
 *
 * Every op is a plain C function over fp32 arrays in row-major order, with its shapes in
 * the comment above it. Dimension names are fixed across Trident:
 *   B batch (micro-batch size), T sequence length, C hidden size, OC output channels,
 *   NH attention heads (held by this rank), HS head size, V vocabulary rows (held by this rank).
 * `N` is B*T, the number of token positions. Backward functions ACCUMULATE (+=) into
 * their d* outputs, so gradients add up over micro-batches without extra copies.
 *
 * The CUDA twins in kernels/ops_cuda.h have the same contracts on device memory; these CPU
 * functions are their oracle in the tests. Matrix products go through OpenBLAS sgemm.
 *
 * Not here: anything about ranks or communication. The vocab-parallel pieces take the
 * slice of the vocabulary they hold as [v_start, v_start + V) and return partial results;
 * the tensor-parallel layer (src/tp/) combines them across ranks.
 */
#ifndef TRIDENT_KERNELS_OPS_H
#define TRIDENT_KERNELS_OPS_H

#include <stddef.h>
#include <stdint.h>

/* Single-threaded BLAS by default (one rank per core; results independent of thread count). */
void ops_set_threads(int n);

/* out (N,OC) = inp (N,C) @ weight(OC,C)^T + bias (OC); bias may be NULL. */
void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, size_t N,
                    size_t C, size_t OC);
/* dinp (N,C) += dout @ weight;  dweight (OC,C) += dout^T @ inp;  dbias (OC) += sum_n dout.
 * Any of dinp, dweight, dbias may be NULL (not wanted). */
void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, size_t N, size_t C, size_t OC);

/* out (N,C) = (inp - mean) * rstd * w + b, per row; mean, rstd (N) are kept for backward. */
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, size_t N, size_t C);
/* dinp (N,C) += d/dinp;  dw, db (C) += d/dw, d/db. dinp may be NULL (only the weight part,
 * the W of a split backward; w is then unused), or dw and db both NULL (only the input part). */
void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *mean, const float *rstd, size_t N, size_t C);

/* Causal self-attention over NH heads of size HS.
 * qkv (B,T,3*NH*HS) holds [Q | K | V], each (NH*HS) wide, head h at columns h*HS.
 * att (B,NH,T,T) keeps the softmax probabilities (row t attends to 0..t; the rest is 0).
 * out (B,T,NH*HS). */
void attention_forward(float *out, float *att, const float *qkv, size_t B, size_t T, size_t NH,
                       size_t HS);
/* dqkv (B,T,3*NH*HS) += ...; scratch is (T,T) floats of work space. */
void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                        float *scratch, size_t B, size_t T, size_t NH, size_t HS);

/* GELU, tanh approximation (as GPT-2). out, inp (n). */
void gelu_forward(float *out, const float *inp, size_t n);
void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);

/* out (n) = a + b. */
void residual_forward(float *out, const float *a, const float *b, size_t n);
/* y (n) += x. */
void add_inplace(float *y, const float *x, size_t n);

/* x (n) = value. */
void fill_value(float *x, float value, size_t n);
/* x (n) *= s, element by element in index order. */
void scale_inplace(float *x, float s, size_t n);
/* Sum of x[i]^2 over x (n), each square and the running sum in double, in index order. */
double sum_squares(const float *x, size_t n);
/* x (N,OC) += bias (OC) on every row: add_inplace(x + n*OC, bias, OC) for n = 0..N-1. */
void add_bias_rows(float *x, const float *bias, size_t N, size_t OC);

/* Token embedding for the rows [v_start, v_start+V) this rank holds:
 * out (N,C) = wte[tok - v_start] when tok is in range, else 0 (masked). */
void embedding_forward(float *out, const int32_t *tokens, const float *wte, size_t N, size_t C,
                       int64_t v_start, size_t V);
/* dwte (V,C) += dout rows of the tokens in range. */
void embedding_backward(float *dwte, const float *dout, const int32_t *tokens, size_t N, size_t C,
                        int64_t v_start, size_t V);
/* out (B,T,C) += wpe (T,C) for every batch row; dwpe (T,C) += sum over B of dout. */
void position_forward(float *out, const float *wpe, size_t B, size_t T, size_t C);
void position_backward(float *dwpe, const float *dout, size_t B, size_t T, size_t C);

/* Vocab-parallel cross-entropy, in three local steps around the all-reduces:
 *   1. crossentropy_local_max: rowmax (N) = max over the real entries of logits (N,V);
 *      entries at global index >= real_vocab (padding) are ignored everywhere.
 *   2. (all-reduce MAX of rowmax)  crossentropy_local_sums: given the global max,
 *      sumexp (N) = sum exp(logit - max); target_logit (N) = logit of the target when the
 *      target is in this rank's range, else 0.
 *   3. (all-reduce SUM of both)  loss (N) = log(sumexp) + max - target_logit.
 *   backward: dlogits (N,V) = (exp(logit - max) / sumexp - [v == target]) * dloss[n];
 *      padding entries get 0. Writes (not accumulates) dlogits. */
void crossentropy_local_max(float *rowmax, const float *logits, size_t N, size_t V, int64_t v_start,
                            int64_t real_vocab);
void crossentropy_local_sums(float *sumexp, float *target_logit, const float *logits,
                             const float *rowmax, const int32_t *targets, size_t N, size_t V,
                             int64_t v_start, int64_t real_vocab);
void crossentropy_loss(float *loss, const float *sumexp, const float *rowmax,
                       const float *target_logit, size_t N);
void crossentropy_backward(float *dlogits, const float *logits, const float *rowmax,
                           const float *sumexp, const int32_t *targets, const float *dloss,
                           size_t N, size_t V, int64_t v_start, int64_t real_vocab);

#endif /* TRIDENT_KERNELS_OPS_H */
