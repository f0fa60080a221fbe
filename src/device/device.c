/* device.c — see device.h: the kernels of the current device.
 *
 * Every dev_* call branches once on the device: cuda goes to kernels/ops_cuda.h (CUDA builds
 * only), the two CPU devices to kernels/ops.h, with the cpu-guarded pages open around the
 * call (device_memory.h). Memory itself is device_memory.c. At the end, the timing markers:
 * ids handed out here for every device, the CPU twin's times, cuda's events by the same id.
 */
#include "src/device/device.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/optim/adamw.h"
#include "src/precision/loss_scaler.h"

#ifdef TRIDENT_CUDA
#define ON_CUDA (device_current() == DEVICE_CUDA)
#define CTX (device_cuda_context())
#endif

void device_set_threads(int n) { ops_set_threads(n); }

/* ---------------------------------------------------------------- kernels
 *
 * KERNEL(cuda call, cpu call): the CUDA twin on the cuda device, else the CPU kernel with the
 * guarded pages open. */
#ifdef TRIDENT_CUDA
#define KERNEL(cuda_call, cpu_call)                                                                \
    do {                                                                                           \
        if (ON_CUDA) {                                                                             \
            cuda_call;                                                                             \
        } else {                                                                                   \
            device_guard_open();                                                                   \
            cpu_call;                                                                              \
            device_guard_close();                                                                  \
        }                                                                                          \
    } while (0)
#else
#define KERNEL(cuda_call, cpu_call)                                                                \
    do {                                                                                           \
        device_guard_open();                                                                       \
        cpu_call;                                                                                  \
        device_guard_close();                                                                      \
    } while (0)
#endif

/* ---------------------------------------------------------------- the linear products
 *
 * fp32: one kernel. bf16: the operands are rounded into the scratch first, laid out as
 *
 *   forward   | inp (N·C)  | weight (OC·C) |
 *   backward  | dout (N·OC) | weight (OC·C), for dinp; then inp (N·C), for dweight |
 *
 * (cuda: bf16 bit patterns; the CPU devices: bf16 values as floats). On cuda the second cast
 * of the backward overwrites the weight after the dinp GEMM read it: one stream, in order. */

static struct {
    prec_dtype dtype; /* PREC_FP32 or PREC_BF16 */
    void *scratch;    /* bf16: device_alloc'ed, `elems` operand values */
    size_t elems;
} g_mm = {PREC_FP32, NULL, 0};

size_t dev_matmul_operand_elems(size_t N, size_t C, size_t OC) {
    const size_t fwd = N * C + OC * C, bwd = N * OC + (OC * C > N * C ? OC * C : N * C);
    return fwd > bwd ? fwd : bwd;
}

size_t device_matmul_scratch_bytes(prec_dtype t, size_t elems) {
    if (t != PREC_BF16) return 0;
    return elems * (device_current() == DEVICE_CUDA ? sizeof(uint16_t) : sizeof(float));
}

void device_set_matmul_dtype(prec_dtype t, size_t operand_elems) {
    CHECK(t == PREC_FP32 || t == PREC_BF16,
          "the linear products run in fp32 or bf16 (fp16 runs keep fp32 products)");
    if (t == PREC_BF16 && g_mm.dtype == PREC_BF16 && g_mm.elems >= operand_elems) return;
    device_free(g_mm.scratch);
    g_mm.scratch = NULL;
    g_mm.elems = 0;
    g_mm.dtype = t;
    if (t == PREC_FP32) return;
    g_mm.scratch = device_alloc(device_matmul_scratch_bytes(t, operand_elems),
                                "bf16 matmul operands");
    g_mm.elems = operand_elems;
}

prec_dtype device_matmul_dtype(void) { return g_mm.dtype; }

/* x (n) rounded to bf16 into the scratch from element `at`: what the bf16 GEMM (cuda) or the
 * fp32 sgemm (the CPU twin) multiplies. Inside device_guard_open (cpu-guarded). */
static const void *bf16_operand(size_t at, const float *x, size_t n) {
#ifdef TRIDENT_CUDA
    if (ON_CUDA) {
        uint16_t *h = (uint16_t *)g_mm.scratch + at;
        cuda_fp32_to_bf16(CTX, h, x, n);
        return h;
    }
#endif
    float *f = (float *)g_mm.scratch + at;
    if (n) memcpy(f, x, n * sizeof(float));
    prec_round_array(PREC_BF16, f, n);
    return f;
}

static void bf16_operands_fit(size_t elems) {
    if (elems > g_mm.elems)
        die("dev_matmul in bf16: a product of %zu operand values, but the scratch holds %zu "
            "(device_set_matmul_dtype sizes it for the largest linear of the model: "
            "dev_matmul_operand_elems)",
            elems, g_mm.elems);
}

void dev_matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                        size_t N, size_t C, size_t OC) {
    if (g_mm.dtype == PREC_FP32) {
        KERNEL(cuda_matmul_forward(CTX, out, inp, weight, bias, N, C, OC),
               matmul_forward(out, inp, weight, bias, N, C, OC));
        return;
    }
    bf16_operands_fit(N * C + OC * C);
    device_guard_open();
    const void *x = bf16_operand(0, inp, N * C), *w = bf16_operand(N * C, weight, OC * C);
    KERNEL(cuda_matmul_forward_bf16(CTX, out, x, w, bias, N, C, OC),
           matmul_forward(out, x, w, bias, N, C, OC));
    device_guard_close();
}

void dev_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, size_t N, size_t C, size_t OC) {
    if (g_mm.dtype == PREC_FP32) {
        KERNEL(cuda_matmul_backward(CTX, dinp, dweight, dbias, dout, inp, weight, N, C, OC),
               matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC));
        return;
    }
    if (N == 0 || C == 0 || OC == 0) return; /* nothing to add, as in fp32 */
    const size_t w_elems = dinp ? OC * C : 0, x_elems = dweight ? N * C : 0;
    bf16_operands_fit(N * OC + (w_elems > x_elems ? w_elems : x_elems)); /* dout, then w or x */
    device_guard_open();
    const void *d = (dinp || dweight) ? bf16_operand(0, dout, N * OC) : NULL;
    if (dinp) {
        const void *w = bf16_operand(N * OC, weight, OC * C);
        KERNEL(cuda_matmul_backward_bf16(CTX, dinp, NULL, NULL, d, NULL, w, N, C, OC),
               matmul_backward(dinp, NULL, NULL, d, NULL, w, N, C, OC));
    }
    if (dweight) {
        const void *x = bf16_operand(N * OC, inp, N * C);
        KERNEL(cuda_matmul_backward_bf16(CTX, NULL, dweight, NULL, d, x, NULL, N, C, OC),
               matmul_backward(NULL, dweight, NULL, d, x, NULL, N, C, OC));
    }
    if (dbias) /* from the fp32 dout */
        KERNEL(cuda_matmul_backward(CTX, NULL, NULL, dbias, dout, NULL, NULL, N, C, OC),
               matmul_backward(NULL, NULL, dbias, dout, NULL, NULL, N, C, OC));
    device_guard_close();
}

void dev_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                           const float *b, size_t N, size_t C) {
    KERNEL(cuda_layernorm_forward(CTX, out, mean, rstd, inp, w, b, N, C),
           layernorm_forward(out, mean, rstd, inp, w, b, N, C));
}

void dev_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, size_t N,
                            size_t C) {
    KERNEL(cuda_layernorm_backward(CTX, dinp, dw, db, dout, inp, w, mean, rstd, N, C),
           layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C));
}

void dev_attention_forward(float *out, float *att, const float *qkv, size_t B, size_t T, size_t NH,
                           size_t HS) {
    KERNEL(cuda_attention_forward(CTX, out, att, qkv, B, T, NH, HS),
           attention_forward(out, att, qkv, B, T, NH, HS));
}

void dev_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                            float *scratch, size_t B, size_t T, size_t NH, size_t HS) {
    KERNEL(cuda_attention_backward(CTX, dqkv, dout, qkv, att, scratch, B, T, NH, HS),
           attention_backward(dqkv, dout, qkv, att, scratch, B, T, NH, HS));
}

size_t dev_attention_scratch_floats(size_t T, size_t NH) {
    /* the CPU works one head at a time, the GPU on all heads of a batch row at once */
    return device_current() == DEVICE_CUDA ? NH * T * T : T * T;
}

void dev_gelu_forward(float *out, const float *inp, size_t n) {
    KERNEL(cuda_gelu_forward(CTX, out, inp, n), gelu_forward(out, inp, n));
}

void dev_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
    KERNEL(cuda_gelu_backward(CTX, dinp, inp, dout, n), gelu_backward(dinp, inp, dout, n));
}

void dev_add_inplace(float *y, const float *x, size_t n) {
    KERNEL(cuda_add_inplace(CTX, y, x, n), add_inplace(y, x, n));
}

void dev_add_bias_rows(float *x, const float *bias, size_t N, size_t OC) {
    KERNEL(cuda_add_bias_rows(CTX, x, bias, N, OC), add_bias_rows(x, bias, N, OC));
}

void dev_embedding_forward(float *out, const int32_t *tokens, const float *wte, size_t N, size_t C,
                           int64_t v_start, size_t V) {
    KERNEL(cuda_embedding_forward(CTX, out, tokens, wte, N, C, v_start, V),
           embedding_forward(out, tokens, wte, N, C, v_start, V));
}

void dev_embedding_backward(float *dwte, const float *dout, const int32_t *tokens, size_t N,
                            size_t C, int64_t v_start, size_t V) {
    KERNEL(cuda_embedding_backward(CTX, dwte, dout, tokens, N, C, v_start, V),
           embedding_backward(dwte, dout, tokens, N, C, v_start, V));
}

void dev_position_forward(float *out, const float *wpe, size_t B, size_t T, size_t C) {
    KERNEL(cuda_position_forward(CTX, out, wpe, B, T, C), position_forward(out, wpe, B, T, C));
}

void dev_position_backward(float *dwpe, const float *dout, size_t B, size_t T, size_t C) {
    KERNEL(cuda_position_backward(CTX, dwpe, dout, B, T, C),
           position_backward(dwpe, dout, B, T, C));
}

void dev_crossentropy_local_max(float *rowmax, const float *logits, size_t N, size_t V,
                                int64_t v_start, int64_t real_vocab) {
    KERNEL(cuda_crossentropy_local_max(CTX, rowmax, logits, N, V, v_start, real_vocab),
           crossentropy_local_max(rowmax, logits, N, V, v_start, real_vocab));
}

void dev_crossentropy_local_sums(float *sumexp, float *target_logit, const float *logits,
                                 const float *rowmax, const int32_t *targets, size_t N, size_t V,
                                 int64_t v_start, int64_t real_vocab) {
    KERNEL(cuda_crossentropy_local_sums(CTX, sumexp, target_logit, logits, rowmax, targets, N, V,
                                        v_start, real_vocab),
           crossentropy_local_sums(sumexp, target_logit, logits, rowmax, targets, N, V, v_start,
                                   real_vocab));
}

void dev_crossentropy_loss(float *loss, const float *sumexp, const float *rowmax,
                           const float *target_logit, size_t N) {
    KERNEL(cuda_crossentropy_loss(CTX, loss, sumexp, rowmax, target_logit, N),
           crossentropy_loss(loss, sumexp, rowmax, target_logit, N));
}

void dev_crossentropy_backward(float *dlogits, const float *logits, const float *rowmax,
                               const float *sumexp, const int32_t *targets, const float *dloss,
                               size_t N, size_t V, int64_t v_start, int64_t real_vocab) {
    KERNEL(cuda_crossentropy_backward(CTX, dlogits, logits, rowmax, sumexp, targets, dloss, N, V,
                                      v_start, real_vocab),
           crossentropy_backward(dlogits, logits, rowmax, sumexp, targets, dloss, N, V, v_start,
                                 real_vocab));
}

/* ---------------------------------------------------------------- optimizer and precision */

void dev_fill(float *x, float value, size_t n) {
    KERNEL(cuda_fill(CTX, x, value, n), fill_value(x, value, n));
}

void dev_scale(float *x, float s, size_t n) {
    KERNEL(cuda_scale(CTX, x, s, n), scale_inplace(x, s, n));
}

double dev_sum(const float *x, size_t n) {
    /* Small vectors (per-position losses): the host adds them, in index order, everywhere. */
    const float *h = x;
    float *copy = NULL;
    if (device_current() == DEVICE_CUDA) {
        copy = mallocCheck(n * sizeof(float) + 1);
        device_download(copy, x, n * sizeof(float));
        h = copy;
    }
    double s = 0.0;
    device_guard_open();
    for (size_t i = 0; i < n; i++) s += h[i];
    device_guard_close();
    free(copy);
    return s;
}

double dev_sumsq(const float *x, size_t n) {
    double s = 0.0;
    KERNEL(s = cuda_sumsq(CTX, x, n), s = sum_squares(x, n));
    return s;
}

bool dev_has_inf_or_nan(const float *x, size_t n) {
    bool bad = false;
    KERNEL(bad = cuda_has_inf_or_nan(CTX, x, n), bad = prec_has_inf_or_nan(x, n));
    return bad;
}

void dev_round(prec_dtype t, float *x, size_t n) {
    if (t == PREC_FP32) return;
    KERNEL(t == PREC_BF16 ? cuda_round_to_bf16(CTX, x, n) : cuda_round_to_fp16(CTX, x, n),
           prec_round_array(t, x, n));
}

void dev_adamw_update(float *p, const float *gr, float *m, float *v, size_t n,
                      const adamw_config *cfg, float lr, float wd, int t, float grad_scale) {
    KERNEL(cuda_adamw_update(CTX, p, gr, m, v, n, cfg->beta1, cfg->beta2, cfg->eps, lr, wd, t,
                             grad_scale),
           adamw_update(p, gr, m, v, n, cfg, lr, wd, t, grad_scale));
}

/* ---------------------------------------------------------------- timing markers
 *
 * An id is a slot: a released one if any, else the next new one. The CPU devices keep each
 * slot's host time here; cuda records the context's timing event of the same number (the
 * context creates its events as ids first appear, and destroys them with itself). */
static struct {
    double *host;  /* (cap) CPU devices: time_now() when marker i was taken */
    int *released; /* (cap) ids given back, nfree of them: taken again first */
    int cap, next, nfree;
} mk;

int device_marker_take(void) {
    if (mk.nfree == 0 && mk.next == mk.cap) {
        int cap = mk.cap ? 2 * mk.cap : 64;
        double *host = mallocCheck((size_t)cap * sizeof *host);
        int *released = mallocCheck((size_t)cap * sizeof *released);
        if (mk.cap) memcpy(host, mk.host, (size_t)mk.cap * sizeof *host);
        free(mk.host), free(mk.released);
        mk.host = host, mk.released = released, mk.cap = cap;
    }
    int m = mk.nfree ? mk.released[--mk.nfree] : mk.next++;
#ifdef TRIDENT_CUDA
    if (ON_CUDA) {
        cuda_event_record(CTX, (size_t)m);
        return m;
    }
#endif
    mk.host[m] = time_now();
    return m;
}

void device_marker_sync(void) {
#ifdef TRIDENT_CUDA
    if (ON_CUDA) cuda_events_reference(CTX);
#endif
}

double device_marker_time(int m) {
    CHECK(m >= 0 && m < mk.next, "device_marker_time of an id device_marker_take did not return");
#ifdef TRIDENT_CUDA
    if (ON_CUDA) return cuda_event_time(CTX, (size_t)m);
#endif
    return mk.host[m];
}

void device_marker_release(int m) {
    CHECK(m >= 0 && m < mk.next && mk.nfree < mk.next,
          "device_marker_release of an id not taken, or released twice");
    mk.released[mk.nfree++] = m;
}
