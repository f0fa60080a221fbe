/* device.h — where this process keeps its tensors and runs its kernels.
 *
 * Three devices, chosen once per process with --device:
 *
 *   cpu          host memory, the CPU kernels of kernels/ops.h (the reference; the default)
 *   cuda         GPU memory, the CUDA twins of kernels/ops_cuda.h (CUDA builds only)
 *   cpu-guarded  the CPU kernels, but every tensor lives in memory the host may NOT touch
 *                outside a kernel: the pages are mprotect()ed while host code runs, so any
 *                host read or write of "device" memory faults at once and names the address.
 *                It exists to check, without a GPU, that the GPU path moves every byte it
 *                should (uploads, downloads, host staging for MPI) and no other: a run on
 *                cpu-guarded computes exactly what a cpu run computes (the same kernels), so
 *                the tests compare the two bit for bit.
 *
 * The model, the tensor-parallel layers, the pipeline executor and the optimizer never call a
 * kernel or memcpy/memset on tensors directly; they call the dev_* functions below, which
 * run the kernel of the current device (one branch per call), and device_* for memory
 * (src/device/device_memory.h, its own library without BLAS, included here):
 *
 *   device_init(DEVICE_CUDA, dist_bind_device(), err, sizeof err);  // once, after dist_init()
 *   float *w = device_alloc(n * sizeof(float), "parameters");  // zeroed, device memory
 *   device_upload(w, host_w, n * sizeof(float));
 *   dev_matmul_forward(out, inp, w, NULL, N, C, OC);           // same contract as ops.h
 *
 * THE PRECISION OF THE LINEAR PRODUCTS. dev_matmul_forward / dev_matmul_backward compute in
 * fp32 unless the process asks for bf16, as mixed-precision training does (Megatron's --bf16):
 *
 *   device_set_matmul_dtype(PREC_BF16, elems);   // trainer_create with --bf16
 *   dev_matmul_forward(out, inp, w, bias, N, C, OC);
 *       // out = round_bf16(inp) @ round_bf16(w)^T + bias: fp32 accumulation, fp32 out
 *   device_set_matmul_dtype(PREC_FP32, 0);       // trainer_destroy: fp32 again
 *
 * It is process-wide, like the device itself, and only these two functions read it. With bf16
 * every product rounds its operands (inp, weight; backward: dout, weight for dinp, inp for
 * dweight) to bf16 in a device scratch and multiplies those:
 *   cuda         cuda_fp32_to_bf16 casts into the scratch (bit patterns), then the bf16
 *                cuBLAS GEMMs of kernels/ops_cuda.h (tensor cores, fp32 accumulation);
 *   cpu devices  the twin: prec_round_array on copies in the scratch (bf16 values kept as
 *                floats), then the same fp32 sgemm. A product of two bf16 values is exact in
 *                fp32, so the twin equals the GPU up to the order of the sums; cpu-guarded
 *                equals cpu bit for bit, as for every kernel.
 * The bias and dbias stay fp32 (dbias sums the fp32 dout). The scratch comes from
 * device_alloc ("bf16 matmul operands", so the memory prediction counts it), sized once for
 * the largest product the caller will run: dev_matmul_operand_elems(N, C, OC) elements,
 * maximised over its linears, device_matmul_scratch_bytes(PREC_BF16, elems) bytes. Setting bf16
 * again keeps the larger scratch; fp32 frees it. A product larger than the scratch dies.
 * Not in bf16: the attention's strided batched products (dev_attention_*: fp32 always) and
 * fp16 runs (--fp16 rounds parameters and gradients only; its products stay fp32).
 *
 * Communication needs nothing from the caller: comm.c asks device_owns(buf) and, for a
 * buffer in device memory on an MPI group, stages it through host memory (download, MPI,
 * upload); on an NCCL group device buffers go to NCCL directly.
 *
 * Contracts of the dev_* kernels: exactly those of kernels/ops.h (shapes, `+=` in backward),
 * on pointers returned by device_alloc (host pointers on the cpu device). Calls are ordered
 * (one CUDA stream); results that come back to the host (dev_sum, dev_sumsq,
 * dev_has_inf_or_nan, device_download) wait for everything queued before them.
 *
 * Not here: which GPU a rank gets (dist_bind_device in src/runtime/dist.c: local rank modulo
 * the GPUs visible), kernels themselves (kernels/), communication (src/runtime/comm.c).
 */
#ifndef TRIDENT_DEVICE_DEVICE_H
#define TRIDENT_DEVICE_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/device/device_memory.h"
#include "src/precision/convert.h"

struct adamw_config; /* src/optim/adamw.h: only the kernel's implementation needs its fields */

/* Threads of the CPU kernels (BLAS) of this process, at least 1; the CUDA kernels ignore it. */
void device_set_threads(int n);

/* The precision of dev_matmul_forward / dev_matmul_backward from now on (see THE PRECISION OF
 * THE LINEAR PRODUCTS above): PREC_BF16 with a scratch for products of up to operand_elems
 * elements (kept if the one held is larger), or PREC_FP32 (frees it; operand_elems unused). */
void device_set_matmul_dtype(prec_dtype t, size_t operand_elems);
prec_dtype device_matmul_dtype(void);
/* Operand elements one bf16 product of the linear (N,C) -> (N,OC) holds in the scratch at
 * once: the forward's inp and weight, N·C + OC·C; the backward's dout with weight (for dinp),
 * then with inp (for dweight) in the same place, N·OC + max(OC·C, N·C). The larger of the two. */
size_t dev_matmul_operand_elems(size_t N, size_t C, size_t OC);
/* Bytes of the operand scratch for `elems` on the current device: 2 a value on cuda (bf16),
 * 4 on the CPU devices (bf16 values as floats); 0 for PREC_FP32. */
size_t device_matmul_scratch_bytes(prec_dtype t, size_t elems);

/* ---- kernels: the contracts of kernels/ops.h ------------------------------------------ */

/* The linear layer in the precision set above (fp32 unless device_set_matmul_dtype). */
void dev_matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                        size_t N, size_t C, size_t OC);
void dev_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, size_t N, size_t C, size_t OC);
void dev_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                           const float *b, size_t N, size_t C);
void dev_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, size_t N,
                            size_t C);
void dev_attention_forward(float *out, float *att, const float *qkv, size_t B, size_t T, size_t NH,
                           size_t HS);
/* scratch: dev_attention_scratch_floats(T, NH) floats of device memory. */
void dev_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                            float *scratch, size_t B, size_t T, size_t NH, size_t HS);
size_t dev_attention_scratch_floats(size_t T, size_t NH);
void dev_gelu_forward(float *out, const float *inp, size_t n);
void dev_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
void dev_add_inplace(float *y, const float *x, size_t n);
/* x (N,OC) += bias (OC) on every row. */
void dev_add_bias_rows(float *x, const float *bias, size_t N, size_t OC);
void dev_embedding_forward(float *out, const int32_t *tokens, const float *wte, size_t N, size_t C,
                           int64_t v_start, size_t V);
void dev_embedding_backward(float *dwte, const float *dout, const int32_t *tokens, size_t N,
                            size_t C, int64_t v_start, size_t V);
void dev_position_forward(float *out, const float *wpe, size_t B, size_t T, size_t C);
void dev_position_backward(float *dwpe, const float *dout, size_t B, size_t T, size_t C);
void dev_crossentropy_local_max(float *rowmax, const float *logits, size_t N, size_t V,
                                int64_t v_start, int64_t real_vocab);
void dev_crossentropy_local_sums(float *sumexp, float *target_logit, const float *logits,
                                 const float *rowmax, const int32_t *targets, size_t N, size_t V,
                                 int64_t v_start, int64_t real_vocab);
void dev_crossentropy_loss(float *loss, const float *sumexp, const float *rowmax,
                           const float *target_logit, size_t N);
void dev_crossentropy_backward(float *dlogits, const float *logits, const float *rowmax,
                               const float *sumexp, const int32_t *targets, const float *dloss,
                               size_t N, size_t V, int64_t v_start, int64_t real_vocab);

/* ---- kernels of the optimizer and of mixed precision ---------------------------------- */

/* x (n) = value. */
void dev_fill(float *x, float value, size_t n);
/* x (n) *= s. */
void dev_scale(float *x, float s, size_t n);
/* Sum of x (n), in double, in index order (the host adds: the same order on every device). */
double dev_sum(const float *x, size_t n);
/* Sum of squares of x (n) in double (fixed order on a given device; the CPU's is index order). */
double dev_sumsq(const float *x, size_t n);
/* Whether any of x (n) is inf or NaN (fp16 loss scaling). */
bool dev_has_inf_or_nan(const float *x, size_t n);
/* x (n) = the nearest value of format t, in place (prec_round_array on the device). */
void dev_round(prec_dtype t, float *x, size_t n);
/* adamw_update (src/optim/adamw.h) on device memory. */
void dev_adamw_update(float *p, const float *g, float *m, float *v, size_t n,
                      const struct adamw_config *cfg, float lr, float wd, int t, float grad_scale);

/* ---- timing markers: when the device reached a point of its queue ----------------------
 *
 * The dev_* calls above only queue work on a GPU, so the host clock around them times the
 * launches. A marker is a point in the device's queue; its time is when the device got there
 * (the work queued before it had finished), on the host's clock (time_now() seconds,
 * src/core/clock.h). The trace's device clock (src/trace/trace.h) is these four functions:
 *
 *   int a = device_marker_take();      // queued now, no wait
 *   dev_matmul_forward(...);
 *   int b = device_marker_take();
 *   device_marker_sync();               // waits for the device
 *   double kernel_s = device_marker_time(b) - device_marker_time(a);
 *   device_marker_release(a), device_marker_release(b);
 *
 * cuda: a marker is a timing event of the context (kernels/ops_cuda.h: cuda_event_record),
 * created once and reused by id; device_marker_sync waits for the stream and takes a fresh
 * host/device reference pair (an event recorded on the idle stream, waited for, and the host
 * clock read), and a marker's time is the reference's host time minus the event time from the
 * marker to the reference. The CPU devices run each kernel inside its call, so a marker is
 * the host clock when it is taken (device time = host time) and the sync does nothing.
 * A marker's time is valid once a device_marker_sync after its take has returned, until its
 * release. Ids are small integers, reused after release. */
int device_marker_take(void);
void device_marker_sync(void);
double device_marker_time(int marker);
void device_marker_release(int marker);

#endif /* TRIDENT_DEVICE_DEVICE_H */
