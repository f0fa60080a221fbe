/* ops_cuda.h — the CUDA twins of kernels/ops.h: the same kernels on device memory.
 *
 * Every `cuda_<op>` has exactly the contract of the CPU `<op>` in kernels/ops.h (same
 * shapes, row-major fp32, backward functions ACCUMULATE (+=) into their d* outputs,
 * crossentropy_backward WRITES), except that every pointer is a device pointer and the
 * first argument is a cuda_context. The CPU functions are the oracle in the tests
 * (tests/kernels_cuda/). Dimension names as in ops.h: B T C OC NH HS V, N = B*T.
 *
 * Execution model: every call is queued on ctx->stream and returns at once; the results
 * are there after cuda_context_sync(ctx) (or any later work on the same stream). The two
 * exceptions return a host value and so wait for the stream: cuda_sumsq and
 * cuda_has_inf_or_nan. Matrix products are cuBLAS calls on the same stream; everything else
 * is a small kernel. Reductions have a fixed order, so a run is reproducible on the same GPU
 * (no atomics).
 *
 *   cuda_context ctx;
 *   cuda_context_init(&ctx, 0);                       // device 0, one stream, one cuBLAS handle
 *   cuda_arena params;
 *   cuda_arena_init(&params, "parameters", bytes);    // ONE cudaMalloc for all parameters
 *   float *wte = cuda_arena_take(&params, V * C * sizeof(float));   // a view into it
 *   cuda_matmul_forward(&ctx, out, inp, wte, NULL, N, C, V);
 *   cuda_context_sync(&ctx);
 *
 * Memory: "one arena per kind" — parameters, gradients, optimizer state and activations each
 * live in one cudaMalloc, cut into views by cuda_arena_take(); gradients use the same table
 * of sizes as parameters, so the optimizer is one flat cuda_adamw_update over the buffer.
 *
 * 16-bit values are raw bit patterns in uint16_t, as in src/precision/convert.h, so this
 * header needs no CUDA half-precision types and stays plain C.
 *
 * Differences from ops.h, all in the signatures below: cuda_attention_backward's scratch is
 * (NH,T,T) floats (all heads of one batch row at once, not one (T,T) head); bf16 GEMMs and
 * the optimizer, casts and checks have no ops.h counterpart (their oracles are
 * src/precision/convert.c, src/precision/loss_scaler.c and src/optim/adamw.c).
 *
 * Not here: communication (src/runtime/comm_nccl.c), ranks, the model's layout of tensors.
 */
#ifndef TRIDENT_KERNELS_OPS_CUDA_H
#define TRIDENT_KERNELS_OPS_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- error checks ------------------------------------------------------------------------
 * cudaCheck(call) / cublasCheck(call): on failure print `file:line: CUDA error in <call>:
 * <message>` and a hint, then end the process (the MPI job, under MPI) via src/core/check.h.
 * cudaCheckLast(): the same for the last kernel launch (bad grid size, missing sm_90 code). */
void cuda_check_(cudaError_t err, const char *what, const char *file, int line);
void cublas_check_(cublasStatus_t st, const char *what, const char *file, int line);
#define cudaCheck(call) cuda_check_((call), #call, __FILE__, __LINE__)
#define cublasCheck(call) cublas_check_((call), #call, __FILE__, __LINE__)
#define cudaCheckLast() cuda_check_(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

/* ---- context ------------------------------------------------------------------------------ */

/* What every call needs: the device, the stream all work is queued on, and a cuBLAS handle
 * bound to that stream (fp32 GEMMs in full fp32: CUBLAS_DEFAULT_MATH, no TF32). The two
 * scratch buffers belong to the reductions that answer on the host (cuda_sumsq,
 * cuda_has_inf_or_nan); they are allocated by cuda_context_init, so one context serves one
 * such call at a time (calls on one stream are in order anyway). */
typedef struct {
    int device;
    cudaStream_t stream;
    cublasHandle_t cublas;
    double *partials;    /* (CUDA_REDUCE_BLOCKS) device doubles: one partial sum per block */
    int *flag;           /* one device int: "an inf or NaN was seen" */
    cudaEvent_t *events; /* (nevents) timing events of cuda_event_record, created as needed */
    size_t nevents;      /* timing events created so far */
    cudaEvent_t ref;     /* cuda_events_reference's event on the idle stream ... */
    double t_ref;        /* ... and the host's time_now() just after it was reached */
} cuda_context;

/* Blocks of the fixed-order reductions, hence the length of ctx->partials. */
#define CUDA_REDUCE_BLOCKS 1024

/* Number of GPUs visible to this process; 0 when there is none or no driver (never dies). */
int cuda_device_count(void);
/* Selects `device`, creates the stream and the cuBLAS handle. Dies when the device is absent. */
void cuda_context_init(cuda_context *ctx, int device);
void cuda_context_free(cuda_context *ctx);
/* Waits until everything queued on ctx->stream has finished (and reports its errors). */
void cuda_context_sync(const cuda_context *ctx);

/* Copies on ctx->stream; they return when the copy is done (host memory is pageable). */
void cuda_upload(const cuda_context *ctx, void *dev_dst, const void *host_src, size_t bytes);
void cuda_download(const cuda_context *ctx, void *host_dst, const void *dev_src, size_t bytes);
/* dev[0..bytes) = 0, queued on ctx->stream. */
void cuda_zero(const cuda_context *ctx, void *dev, size_t bytes);

/* ---- timing events: when the stream reached a point, on the host clock -------------------
 *
 *   cuda_event_record(&ctx, 0);            // queued on ctx.stream; returns at once
 *   cuda_matmul_forward(&ctx, ...);
 *   cuda_event_record(&ctx, 1);
 *   cuda_events_reference(&ctx);           // waits for the stream, then takes the reference
 *   double t = cuda_event_time(&ctx, 1) - cuda_event_time(&ctx, 0);   // the GEMM's seconds
 *
 * The context's timing event i is created the first time it is recorded (the pool grows) and
 * destroyed with the context; recording it again reuses it. The reference pair is taken on
 * the idle stream: the event ctx->ref is recorded and waited for, then time_now()
 * (src/core/clock.h) is read: t_ref (late by the wait's wake-up, microseconds). An event's
 * time is then t_ref minus cudaEventElapsedTime(event, ref), i.e. the host time at which the
 * stream reached it, with the event timer's resolution (about 0.5 us). Valid for events
 * recorded before the last cuda_events_reference. src/device/device.h hands out the ids. */
void cuda_event_record(cuda_context *ctx, size_t i);
/* Returns t_ref. */
double cuda_events_reference(cuda_context *ctx);
double cuda_event_time(const cuda_context *ctx, size_t i);

/* ---- arena: one cudaMalloc per kind of memory, handed out as views -----------------------
 *
 *   base                                               base + capacity
 *   | view 0 |pad| view 1 |pad| view 2 | ...   free ...  |
 *   '-- used --------------------------'
 *
 * Every view starts on a 256-byte boundary (cuBLAS and vector loads like aligned data).
 * Views are never freed one by one: cuda_arena_reset() forgets them all (activations of the
 * next step), cuda_arena_free() returns the one allocation. */
typedef struct {
    const char *name; /* "parameters", "gradients", ... (in error messages) */
    char *base;       /* device memory, (capacity) bytes */
    size_t capacity;
    size_t used;
} cuda_arena;

/* Bytes a view of `bytes` occupies in an arena (rounded up to the alignment): sum this over a
 * table of sizes to size the arena exactly. */
size_t cuda_arena_footprint(size_t bytes);
void cuda_arena_init(cuda_arena *a, const char *name, size_t capacity);
/* The next `bytes` of the arena (device pointer); dies when the arena is too small. */
void *cuda_arena_take(cuda_arena *a, size_t bytes);
/* Cuts n float views out of the arena, views[i] of counts[i] floats (llm.c's table of sizes). */
void cuda_arena_take_floats(cuda_arena *a, float **views[], const size_t *counts, size_t n);
void cuda_arena_reset(cuda_arena *a);
void cuda_arena_free(cuda_arena *a);

/* ---- matrix products (cuBLAS) ------------------------------------------------------------- */

/* out (N,OC) = inp (N,C) @ weight(OC,C)^T + bias (OC); bias may be NULL. */
void cuda_matmul_forward(const cuda_context *ctx, float *out, const float *inp, const float *weight,
                         const float *bias, size_t N, size_t C, size_t OC);
/* dinp (N,C) += dout @ weight;  dweight (OC,C) += dout^T @ inp;  dbias (OC) += sum_n dout.
 * Any of dinp, dweight, dbias may be NULL. */
void cuda_matmul_backward(const cuda_context *ctx, float *dinp, float *dweight, float *dbias,
                          const float *dout, const float *inp, const float *weight, size_t N,
                          size_t C, size_t OC);
/* The same products with bf16 inputs (uint16_t bit patterns), fp32 accumulation on the
 * tensor cores (cublasGemmEx, CUBLAS_COMPUTE_32F) and fp32 outputs and bias:
 * out (N,OC) = inp_bf16 (N,C) @ weight_bf16 (OC,C)^T + bias (OC). */
void cuda_matmul_forward_bf16(const cuda_context *ctx, float *out, const uint16_t *inp,
                              const uint16_t *weight, const float *bias, size_t N, size_t C,
                              size_t OC);
/* dinp (N,C) += dout @ weight;  dweight (OC,C) += dout^T @ inp;  dbias (OC) += sum_n dout,
 * with dout, inp, weight in bf16 and the fp32 outputs accumulated in fp32. */
void cuda_matmul_backward_bf16(const cuda_context *ctx, float *dinp, float *dweight, float *dbias,
                               const uint16_t *dout, const uint16_t *inp, const uint16_t *weight,
                               size_t N, size_t C, size_t OC);

/* ---- LayerNorm ---------------------------------------------------------------------------- */

/* out (N,C) = (inp - mean) * rstd * w + b, per row; mean, rstd (N) are kept for backward. */
void cuda_layernorm_forward(const cuda_context *ctx, float *out, float *mean, float *rstd,
                            const float *inp, const float *w, const float *b, size_t N, size_t C);
/* dinp (N,C) +=, dw (C) +=, db (C) += (see ops.h). */
void cuda_layernorm_backward(const cuda_context *ctx, float *dinp, float *dw, float *db,
                             const float *dout, const float *inp, const float *w, const float *mean,
                             const float *rstd, size_t N, size_t C);

/* ---- causal self-attention ----------------------------------------------------------------
 * qkv (B,T,3*NH*HS) = [Q | K | V], head h at columns h*HS of each; att (B,NH,T,T) keeps the
 * softmax probabilities (0 above the diagonal); out (B,T,NH*HS). */
void cuda_attention_forward(const cuda_context *ctx, float *out, float *att, const float *qkv,
                            size_t B, size_t T, size_t NH, size_t HS);
/* dqkv (B,T,3*NH*HS) += ...; scratch is (NH,T,T) floats of device work space. */
void cuda_attention_backward(const cuda_context *ctx, float *dqkv, const float *dout,
                             const float *qkv, const float *att, float *scratch, size_t B, size_t T,
                             size_t NH, size_t HS);

/* ---- elementwise -------------------------------------------------------------------------- */

/* GELU, tanh approximation. out = gelu(inp);  dinp += gelu'(inp) * dout.  All (n). */
void cuda_gelu_forward(const cuda_context *ctx, float *out, const float *inp, size_t n);
void cuda_gelu_backward(const cuda_context *ctx, float *dinp, const float *inp, const float *dout,
                        size_t n);
/* out (n) = a + b;  y (n) += x. */
void cuda_residual_forward(const cuda_context *ctx, float *out, const float *a, const float *b,
                           size_t n);
void cuda_add_inplace(const cuda_context *ctx, float *y, const float *x, size_t n);
/* x (n) = value;  x (n) *= s. */
void cuda_fill(const cuda_context *ctx, float *x, float value, size_t n);
void cuda_scale(const cuda_context *ctx, float *x, float s, size_t n);
/* x (N,OC) += bias (OC) on every row (ops.h add_bias_rows). */
void cuda_add_bias_rows(const cuda_context *ctx, float *x, const float *bias, size_t N, size_t OC);

/* ---- reductions to the host (these two wait for the stream) ------------------------------- */

/* Sum of x[i]^2 over x (n), in double (ops.h sum_squares). Fixed order: a fixed grid of at
 * most CUDA_REDUCE_BLOCKS blocks, each sums a grid-stride slice into one double with a tree
 * in shared memory; the host adds the block partials in block order. Reproducible run to
 * run on the same GPU; differs from the CPU's sequential sum by rounding only (~1e-15). */
double cuda_sumsq(const cuda_context *ctx, const float *x, size_t n);
/* Whether any of x (n) is inf or NaN (src/precision/loss_scaler.c prec_has_inf_or_nan). */
bool cuda_has_inf_or_nan(const cuda_context *ctx, const float *x, size_t n);

/* ---- embeddings (vocab-parallel: this rank holds rows [v_start, v_start+V)) --------------- */

/* out (N,C) = wte[tok - v_start] when tok is in range, else 0. tokens (N) on the device. */
void cuda_embedding_forward(const cuda_context *ctx, float *out, const int32_t *tokens,
                            const float *wte, size_t N, size_t C, int64_t v_start, size_t V);
/* dwte (V,C) += dout rows of the tokens in range (summed in position order, like the CPU). */
void cuda_embedding_backward(const cuda_context *ctx, float *dwte, const float *dout,
                             const int32_t *tokens, size_t N, size_t C, int64_t v_start, size_t V);
/* out (B,T,C) += wpe (T,C) for every batch row;  dwpe (T,C) += sum over B of dout. */
void cuda_position_forward(const cuda_context *ctx, float *out, const float *wpe, size_t B,
                           size_t T, size_t C);
void cuda_position_backward(const cuda_context *ctx, float *dwpe, const float *dout, size_t B,
                            size_t T, size_t C);

/* ---- vocab-parallel cross-entropy (the three local steps of ops.h) ------------------------ */

void cuda_crossentropy_local_max(const cuda_context *ctx, float *rowmax, const float *logits,
                                 size_t N, size_t V, int64_t v_start, int64_t real_vocab);
void cuda_crossentropy_local_sums(const cuda_context *ctx, float *sumexp, float *target_logit,
                                  const float *logits, const float *rowmax, const int32_t *targets,
                                  size_t N, size_t V, int64_t v_start, int64_t real_vocab);
void cuda_crossentropy_loss(const cuda_context *ctx, float *loss, const float *sumexp,
                            const float *rowmax, const float *target_logit, size_t N);
/* Writes (not accumulates) dlogits (N,V); padding entries get 0. */
void cuda_crossentropy_backward(const cuda_context *ctx, float *dlogits, const float *logits,
                                const float *rowmax, const float *sumexp, const int32_t *targets,
                                const float *dloss, size_t N, size_t V, int64_t v_start,
                                int64_t real_vocab);

/* ---- optimizer ---------------------------------------------------------------------------- */

/* One AdamW step on n parameters, the formula of src/optim/adamw.c:
 *   g' = g * grad_scale;  m = b1 m + (1-b1) g';  v = b2 v + (1-b2) g'^2
 *   p -= lr * ( m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + wd * p )
 * t is the 1-based step. The bias corrections are computed on the host with powf, as there. */
void cuda_adamw_update(const cuda_context *ctx, float *p, const float *g, float *m, float *v,
                       size_t n, float beta1, float beta2, float eps, float lr, float wd, int t,
                       float grad_scale);

/* ---- number formats (round to nearest, ties to even; NaN stays NaN, inf stays inf) -------- */

void cuda_fp32_to_bf16(const cuda_context *ctx, uint16_t *out, const float *in, size_t n);
void cuda_bf16_to_fp32(const cuda_context *ctx, float *out, const uint16_t *in, size_t n);
void cuda_fp32_to_fp16(const cuda_context *ctx, uint16_t *out, const float *in, size_t n);
void cuda_fp16_to_fp32(const cuda_context *ctx, float *out, const uint16_t *in, size_t n);
/* x (n) = the nearest bf16 / fp16 value of x, kept as fp32, in place: the same bits as
 * prec_round_array(PREC_BF16 / PREC_FP16, x, n), NaN payloads included. */
void cuda_round_to_bf16(const cuda_context *ctx, float *x, size_t n);
void cuda_round_to_fp16(const cuda_context *ctx, float *x, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* TRIDENT_KERNELS_OPS_CUDA_H */
