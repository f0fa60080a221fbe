/* cuda_twin.h — the CUDA kernels behind a plain host-memory C API, for the tests.
 *
 * Each twin_<op> has the signature of the CPU <op> in kernels/ops.h (or of its oracle in
 * src/precision/ and src/optim/), on HOST arrays: it copies every input — and the current
 * contents of every output that the op accumulates into — to the GPU, runs cuda_<op> from
 * kernels/ops_cuda.h, waits, and copies the outputs back. A test can thus call the CPU op and
 * its twin with the same arguments and compare the arrays.
 *
 * Why a separate library: this header needs no CUDA header, so the cmocka test translation
 * unit never meets the CUDA includes (cuda_twin.c is the only file that does).
 *
 * Not here: performance (every call allocates and copies; see tools/gpu/gemm_bench.c).
 */
#ifndef TRIDENT_TESTS_KERNELS_CUDA_CUDA_TWIN_H
#define TRIDENT_TESTS_KERNELS_CUDA_CUDA_TWIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* GPUs visible to this process (0 without a GPU or driver; never dies). */
int twin_gpu_count(void);
/* The one context all twins use (device 0); twin_shutdown() releases it. */
void twin_init(void);
void twin_shutdown(void);

/* Arena check: builds an arena sized by cuda_arena_footprint over views of counts[i] floats,
 * takes the views, and writes view i's offset from the base into offsets[i]; then writes
 * value i+1 through every view and reads it back. Returns the arena's capacity in bytes, or
 * 0 when a read-back value was wrong. */
size_t twin_arena_layout(const size_t *counts, size_t n, size_t *offsets);

/* Timing events (cuda_event_*): `fills` cuda_fill calls of n floats between two events, then
 * an event recorded on the idle stream (number 70, so the pool grows past its first 64),
 * then the reference. Host times are time_now() seconds, read where the names say. */
typedef struct {
    double host_launch, host_done; /* before the first fill was queued; after the stream's sync */
    double start, end;             /* the two events' times: when the stream reached them */
    double host_idle, idle;        /* just before the idle event was recorded; its time */
    double t_ref;                  /* the reference pair's host time */
} twin_events;
void twin_event_times(size_t n, int fills, twin_events *out);

void twin_matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                         size_t N, size_t C, size_t OC);
void twin_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                          const float *inp, const float *weight, size_t N, size_t C, size_t OC);
void twin_matmul_forward_bf16(float *out, const uint16_t *inp, const uint16_t *weight,
                              const float *bias, size_t N, size_t C, size_t OC);
void twin_matmul_backward_bf16(float *dinp, float *dweight, float *dbias, const uint16_t *dout,
                               const uint16_t *inp, const uint16_t *weight, size_t N, size_t C,
                               size_t OC);

/* The device module's bf16 linear products on the cuda device (src/device/device.h: a cuda
 * device_init, device_set_matmul_dtype(PREC_BF16) with a scratch of exactly this product's
 * dev_matmul_operand_elems, then dev_matmul_forward / dev_matmul_backward: casts into the
 * scratch and the bf16 GEMMs), on host fp32 arrays, as the other twins. Their CPU twin is the
 * CPU kernel on operands rounded to bf16 (prec_round_array), the cpu device's bf16 path. */
void twin_dev_matmul_forward_bf16(float *out, const float *inp, const float *weight,
                                  const float *bias, size_t N, size_t C, size_t OC);
void twin_dev_matmul_backward_bf16(float *dinp, float *dweight, float *dbias, const float *dout,
                                   const float *inp, const float *weight, size_t N, size_t C,
                                   size_t OC);

void twin_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                            const float *b, size_t N, size_t C);
void twin_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                             const float *w, const float *mean, const float *rstd, size_t N,
                             size_t C);

void twin_attention_forward(float *out, float *att, const float *qkv, size_t B, size_t T, size_t NH,
                            size_t HS);
/* The (NH,T,T) device scratch is allocated inside. */
void twin_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                             size_t B, size_t T, size_t NH, size_t HS);

void twin_gelu_forward(float *out, const float *inp, size_t n);
void twin_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
void twin_residual_forward(float *out, const float *a, const float *b, size_t n);
void twin_add_inplace(float *y, const float *x, size_t n);
void twin_fill(float *x, float value, size_t n);
void twin_scale(float *x, float s, size_t n);
void twin_add_bias_rows(float *x, const float *bias, size_t N, size_t OC);

/* The reductions that answer on the host (oracles: sum_squares, prec_has_inf_or_nan). */
double twin_sumsq(const float *x, size_t n);
bool twin_has_inf_or_nan(const float *x, size_t n);

void twin_embedding_forward(float *out, const int32_t *tokens, const float *wte, size_t N, size_t C,
                            int64_t v_start, size_t V);
void twin_embedding_backward(float *dwte, const float *dout, const int32_t *tokens, size_t N,
                             size_t C, int64_t v_start, size_t V);
void twin_position_forward(float *out, const float *wpe, size_t B, size_t T, size_t C);
void twin_position_backward(float *dwpe, const float *dout, size_t B, size_t T, size_t C);

void twin_crossentropy_local_max(float *rowmax, const float *logits, size_t N, size_t V,
                                 int64_t v_start, int64_t real_vocab);
void twin_crossentropy_local_sums(float *sumexp, float *target_logit, const float *logits,
                                  const float *rowmax, const int32_t *targets, size_t N, size_t V,
                                  int64_t v_start, int64_t real_vocab);
void twin_crossentropy_loss(float *loss, const float *sumexp, const float *rowmax,
                            const float *target_logit, size_t N);
void twin_crossentropy_backward(float *dlogits, const float *logits, const float *rowmax,
                                const float *sumexp, const int32_t *targets, const float *dloss,
                                size_t N, size_t V, int64_t v_start, int64_t real_vocab);

void twin_adamw_update(float *p, const float *g, float *m, float *v, size_t n, float beta1,
                       float beta2, float eps, float lr, float wd, int t, float grad_scale);

void twin_fp32_to_bf16(uint16_t *out, const float *in, size_t n);
void twin_bf16_to_fp32(float *out, const uint16_t *in, size_t n);
void twin_fp32_to_fp16(uint16_t *out, const float *in, size_t n);
void twin_fp16_to_fp32(float *out, const uint16_t *in, size_t n);
/* x (n) rounded in place (oracle: prec_round_array). */
void twin_round_to_bf16(float *x, size_t n);
void twin_round_to_fp16(float *x, size_t n);

#endif /* TRIDENT_TESTS_KERNELS_CUDA_CUDA_TWIN_H */
