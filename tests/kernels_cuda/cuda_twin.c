/* cuda_twin.c — see cuda_twin.h. Every twin of a kernel follows one pattern:
 *
 *     d_x = up(x)          for every array argument, inputs AND outputs (so an output the op
 *                          forgets to write, or one it accumulates into, keeps the host's
 *                          initial contents and the comparison with the CPU shows it)
 *     cuda_<op>(&ctx, d_...)
 *     down(out, d_out)     for every output, then free everything
 */
#include "tests/kernels_cuda/cuda_twin.h"

#include <stdlib.h>

#include "kernels/ops_cuda.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/device/device.h"

static cuda_context ctx;

int twin_gpu_count(void) { return cuda_device_count(); }

void twin_init(void) { cuda_context_init(&ctx, 0); }

void twin_shutdown(void) { cuda_context_free(&ctx); }

/* A device copy of host[0..bytes) (NULL for a NULL or empty array). */
static void *up(const void *host, size_t bytes) {
    if (!host || bytes == 0) return NULL;
    void *d = NULL;
    cudaCheck(cudaMalloc(&d, bytes));
    cuda_upload(&ctx, d, host, bytes);
    return d;
}

/* Copies a device result back into host (nothing for NULL), then frees the device copy. */
static void down(void *host, void *dev, size_t bytes) {
    if (!dev) return;
    if (host) cuda_download(&ctx, host, dev, bytes);
    cudaCheck(cudaFree(dev));
}

/* Frees a device input. */
static void drop(const void *dev) {
    if (dev) cudaCheck(cudaFree((void *)dev));
}

#define F(n) ((n) * sizeof(float))
#define H(n) ((n) * sizeof(uint16_t))
#define I(n) ((n) * sizeof(int32_t))

size_t twin_arena_layout(const size_t *counts, size_t n, size_t *offsets) {
    size_t capacity = 0;
    for (size_t i = 0; i < n; i++) capacity += cuda_arena_footprint(F(counts[i]));
    cuda_arena a;
    cuda_arena_init(&a, "test", capacity);
    float **views = malloc((n + 1) * sizeof *views);
    float ***slots = malloc((n + 1) * sizeof *slots);
    for (size_t i = 0; i < n; i++) slots[i] = &views[i];
    cuda_arena_take_floats(&a, slots, counts, n);
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        offsets[i] = (size_t)((char *)views[i] - a.base);
        float *h = malloc(F(counts[i]) + 1);
        for (size_t j = 0; j < counts[i]; j++) h[j] = (float)(i + 1);
        cuda_upload(&ctx, views[i], h, F(counts[i]));
        free(h);
    }
    for (size_t i = 0; i < n; i++) { /* every view still holds its own value: no overlap */
        float *h = malloc(F(counts[i]) + 1);
        cuda_download(&ctx, h, views[i], F(counts[i]));
        for (size_t j = 0; j < counts[i]; j++) ok &= h[j] == (float)(i + 1);
        free(h);
    }
    size_t cap = a.capacity;
    cuda_arena_free(&a);
    free(views);
    free(slots);
    return ok ? cap : 0;
}

void twin_event_times(size_t n, int fills, twin_events *out) {
    float *d = NULL;
    cudaCheck(cudaMalloc((void **)&d, F(n)));
    cuda_fill(&ctx, d, 0.0f, n); /* the first launch pays for loading the module: not timed */
    cuda_context_sync(&ctx);
    out->host_launch = time_now();
    cuda_event_record(&ctx, 0);
    for (int k = 0; k < fills; k++) cuda_fill(&ctx, d, (float)k, n);
    cuda_event_record(&ctx, 1);
    cuda_context_sync(&ctx);
    out->host_done = time_now();
    out->host_idle = time_now();
    cuda_event_record(&ctx, 70);
    out->t_ref = cuda_events_reference(&ctx);
    out->start = cuda_event_time(&ctx, 0);
    out->end = cuda_event_time(&ctx, 1);
    out->idle = cuda_event_time(&ctx, 70);
    cudaCheck(cudaFree(d));
}

void twin_matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                         size_t N, size_t C, size_t OC) {
    float *d_out = up(out, F(N * OC));
    const float *d_inp = up(inp, F(N * C)), *d_w = up(weight, F(OC * C)), *d_b = up(bias, F(OC));
    cuda_matmul_forward(&ctx, d_out, d_inp, d_w, d_b, N, C, OC);
    down(out, d_out, F(N * OC));
    drop(d_inp), drop(d_w), drop(d_b);
}

void twin_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                          const float *inp, const float *weight, size_t N, size_t C, size_t OC) {
    float *d_dinp = up(dinp, F(N * C)), *d_dw = up(dweight, F(OC * C)), *d_db = up(dbias, F(OC));
    const float *d_dout = up(dout, F(N * OC)), *d_inp = up(inp, F(N * C)),
                *d_w = up(weight, F(OC * C));
    cuda_matmul_backward(&ctx, d_dinp, d_dw, d_db, d_dout, d_inp, d_w, N, C, OC);
    down(dinp, d_dinp, F(N * C)), down(dweight, d_dw, F(OC * C)), down(dbias, d_db, F(OC));
    drop(d_dout), drop(d_inp), drop(d_w);
}

void twin_matmul_forward_bf16(float *out, const uint16_t *inp, const uint16_t *weight,
                              const float *bias, size_t N, size_t C, size_t OC) {
    float *d_out = up(out, F(N * OC));
    const uint16_t *d_inp = up(inp, H(N * C)), *d_w = up(weight, H(OC * C));
    const float *d_b = up(bias, F(OC));
    cuda_matmul_forward_bf16(&ctx, d_out, d_inp, d_w, d_b, N, C, OC);
    down(out, d_out, F(N * OC));
    drop(d_inp), drop(d_w), drop(d_b);
}

void twin_matmul_backward_bf16(float *dinp, float *dweight, float *dbias, const uint16_t *dout,
                               const uint16_t *inp, const uint16_t *weight, size_t N, size_t C,
                               size_t OC) {
    float *d_dinp = up(dinp, F(N * C)), *d_dw = up(dweight, F(OC * C)), *d_db = up(dbias, F(OC));
    const uint16_t *d_dout = up(dout, H(N * OC)), *d_inp = up(inp, H(N * C)),
                   *d_w = up(weight, H(OC * C));
    cuda_matmul_backward_bf16(&ctx, d_dinp, d_dw, d_db, d_dout, d_inp, d_w, N, C, OC);
    down(dinp, d_dinp, F(N * C)), down(dweight, d_dw, F(OC * C)), down(dbias, d_db, F(OC));
    drop(d_dout), drop(d_inp), drop(d_w);
}

/* ---- the device module (src/device/device.h) on the cuda device, bf16 products ---------- */

/* cuda as the process's device, bf16 products with the scratch of exactly (N, C, OC). */
static void device_bf16_on(size_t N, size_t C, size_t OC) {
    char err[256];
    if (!device_init(DEVICE_CUDA, 0, err, sizeof err)) die("%s", err);
    device_set_matmul_dtype(PREC_BF16, dev_matmul_operand_elems(N, C, OC));
}

static void device_bf16_off(void) {
    device_set_matmul_dtype(PREC_FP32, 0);
    device_shutdown();
}

/* A device_alloc'ed copy of host (n floats); NULL for NULL. */
static float *dev_up(const float *host, size_t n) {
    if (!host) return NULL;
    float *d = device_alloc(F(n), "twin");
    device_upload(d, host, F(n));
    return d;
}

/* The result back into host (nothing for NULL), then the device copy freed. */
static void dev_down(float *host, float *dev, size_t n) {
    if (!dev) return;
    device_download(host, dev, F(n));
    device_free(dev);
}

void twin_dev_matmul_forward_bf16(float *out, const float *inp, const float *weight,
                                  const float *bias, size_t N, size_t C, size_t OC) {
    device_bf16_on(N, C, OC);
    float *d_out = dev_up(out, N * OC), *d_inp = dev_up(inp, N * C), *d_w = dev_up(weight, OC * C);
    float *d_b = dev_up(bias, OC);
    dev_matmul_forward(d_out, d_inp, d_w, d_b, N, C, OC);
    dev_down(out, d_out, N * OC);
    device_free(d_inp), device_free(d_w), device_free(d_b);
    device_bf16_off();
}

void twin_dev_matmul_backward_bf16(float *dinp, float *dweight, float *dbias, const float *dout,
                                   const float *inp, const float *weight, size_t N, size_t C,
                                   size_t OC) {
    device_bf16_on(N, C, OC);
    float *d_dinp = dev_up(dinp, N * C), *d_dw = dev_up(dweight, OC * C), *d_db = dev_up(dbias, OC);
    float *d_dout = dev_up(dout, N * OC), *d_inp = dev_up(inp, N * C),
          *d_w = dev_up(weight, OC * C);
    dev_matmul_backward(d_dinp, d_dw, d_db, d_dout, d_inp, d_w, N, C, OC);
    dev_down(dinp, d_dinp, N * C), dev_down(dweight, d_dw, OC * C), dev_down(dbias, d_db, OC);
    device_free(d_dout), device_free(d_inp), device_free(d_w);
    device_bf16_off();
}

void twin_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                            const float *b, size_t N, size_t C) {
    float *d_out = up(out, F(N * C)), *d_mean = up(mean, F(N)), *d_rstd = up(rstd, F(N));
    const float *d_inp = up(inp, F(N * C)), *d_w = up(w, F(C)), *d_b = up(b, F(C));
    cuda_layernorm_forward(&ctx, d_out, d_mean, d_rstd, d_inp, d_w, d_b, N, C);
    down(out, d_out, F(N * C)), down(mean, d_mean, F(N)), down(rstd, d_rstd, F(N));
    drop(d_inp), drop(d_w), drop(d_b);
}

void twin_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                             const float *w, const float *mean, const float *rstd, size_t N,
                             size_t C) {
    float *d_dinp = up(dinp, F(N * C)), *d_dw = up(dw, F(C)), *d_db = up(db, F(C));
    const float *d_dout = up(dout, F(N * C)), *d_inp = up(inp, F(N * C)), *d_w = up(w, F(C)),
                *d_mean = up(mean, F(N)), *d_rstd = up(rstd, F(N));
    cuda_layernorm_backward(&ctx, d_dinp, d_dw, d_db, d_dout, d_inp, d_w, d_mean, d_rstd, N, C);
    down(dinp, d_dinp, F(N * C)), down(dw, d_dw, F(C)), down(db, d_db, F(C));
    drop(d_dout), drop(d_inp), drop(d_w), drop(d_mean), drop(d_rstd);
}

void twin_attention_forward(float *out, float *att, const float *qkv, size_t B, size_t T, size_t NH,
                            size_t HS) {
    const size_t CH = NH * HS;
    float *d_out = up(out, F(B * T * CH)), *d_att = up(att, F(B * NH * T * T));
    const float *d_qkv = up(qkv, F(B * T * 3 * CH));
    cuda_attention_forward(&ctx, d_out, d_att, d_qkv, B, T, NH, HS);
    down(out, d_out, F(B * T * CH)), down(att, d_att, F(B * NH * T * T));
    drop(d_qkv);
}

void twin_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                             size_t B, size_t T, size_t NH, size_t HS) {
    const size_t CH = NH * HS;
    float *d_dqkv = up(dqkv, F(B * T * 3 * CH));
    const float *d_dout = up(dout, F(B * T * CH)), *d_qkv = up(qkv, F(B * T * 3 * CH)),
                *d_att = up(att, F(B * NH * T * T));
    float *d_scratch = NULL;
    cudaCheck(cudaMalloc((void **)&d_scratch, F(NH * T * T)));
    cuda_attention_backward(&ctx, d_dqkv, d_dout, d_qkv, d_att, d_scratch, B, T, NH, HS);
    down(dqkv, d_dqkv, F(B * T * 3 * CH));
    drop(d_dout), drop(d_qkv), drop(d_att), drop(d_scratch);
}

void twin_gelu_forward(float *out, const float *inp, size_t n) {
    float *d_out = up(out, F(n));
    const float *d_inp = up(inp, F(n));
    cuda_gelu_forward(&ctx, d_out, d_inp, n);
    down(out, d_out, F(n));
    drop(d_inp);
}

void twin_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
    float *d_dinp = up(dinp, F(n));
    const float *d_inp = up(inp, F(n)), *d_dout = up(dout, F(n));
    cuda_gelu_backward(&ctx, d_dinp, d_inp, d_dout, n);
    down(dinp, d_dinp, F(n));
    drop(d_inp), drop(d_dout);
}

void twin_residual_forward(float *out, const float *a, const float *b, size_t n) {
    float *d_out = up(out, F(n));
    const float *d_a = up(a, F(n)), *d_b = up(b, F(n));
    cuda_residual_forward(&ctx, d_out, d_a, d_b, n);
    down(out, d_out, F(n));
    drop(d_a), drop(d_b);
}

void twin_add_inplace(float *y, const float *x, size_t n) {
    float *d_y = up(y, F(n));
    const float *d_x = up(x, F(n));
    cuda_add_inplace(&ctx, d_y, d_x, n);
    down(y, d_y, F(n));
    drop(d_x);
}

void twin_fill(float *x, float value, size_t n) {
    float *d_x = up(x, F(n));
    cuda_fill(&ctx, d_x, value, n);
    down(x, d_x, F(n));
}

void twin_scale(float *x, float s, size_t n) {
    float *d_x = up(x, F(n));
    cuda_scale(&ctx, d_x, s, n);
    down(x, d_x, F(n));
}

void twin_add_bias_rows(float *x, const float *bias, size_t N, size_t OC) {
    float *d_x = up(x, F(N * OC));
    const float *d_bias = up(bias, F(OC));
    cuda_add_bias_rows(&ctx, d_x, d_bias, N, OC);
    down(x, d_x, F(N * OC));
    drop(d_bias);
}

double twin_sumsq(const float *x, size_t n) {
    const float *d_x = up(x, F(n));
    double s = cuda_sumsq(&ctx, d_x, n);
    drop(d_x);
    return s;
}

bool twin_has_inf_or_nan(const float *x, size_t n) {
    const float *d_x = up(x, F(n));
    bool bad = cuda_has_inf_or_nan(&ctx, d_x, n);
    drop(d_x);
    return bad;
}

void twin_embedding_forward(float *out, const int32_t *tokens, const float *wte, size_t N, size_t C,
                            int64_t v_start, size_t V) {
    float *d_out = up(out, F(N * C));
    const int32_t *d_tok = up(tokens, I(N));
    const float *d_wte = up(wte, F(V * C));
    cuda_embedding_forward(&ctx, d_out, d_tok, d_wte, N, C, v_start, V);
    down(out, d_out, F(N * C));
    drop(d_tok), drop(d_wte);
}

void twin_embedding_backward(float *dwte, const float *dout, const int32_t *tokens, size_t N,
                             size_t C, int64_t v_start, size_t V) {
    float *d_dwte = up(dwte, F(V * C));
    const float *d_dout = up(dout, F(N * C));
    const int32_t *d_tok = up(tokens, I(N));
    cuda_embedding_backward(&ctx, d_dwte, d_dout, d_tok, N, C, v_start, V);
    down(dwte, d_dwte, F(V * C));
    drop(d_dout), drop(d_tok);
}

void twin_position_forward(float *out, const float *wpe, size_t B, size_t T, size_t C) {
    float *d_out = up(out, F(B * T * C));
    const float *d_wpe = up(wpe, F(T * C));
    cuda_position_forward(&ctx, d_out, d_wpe, B, T, C);
    down(out, d_out, F(B * T * C));
    drop(d_wpe);
}

void twin_position_backward(float *dwpe, const float *dout, size_t B, size_t T, size_t C) {
    float *d_dwpe = up(dwpe, F(T * C));
    const float *d_dout = up(dout, F(B * T * C));
    cuda_position_backward(&ctx, d_dwpe, d_dout, B, T, C);
    down(dwpe, d_dwpe, F(T * C));
    drop(d_dout);
}

void twin_crossentropy_local_max(float *rowmax, const float *logits, size_t N, size_t V,
                                 int64_t v_start, int64_t real_vocab) {
    float *d_max = up(rowmax, F(N));
    const float *d_logits = up(logits, F(N * V));
    cuda_crossentropy_local_max(&ctx, d_max, d_logits, N, V, v_start, real_vocab);
    down(rowmax, d_max, F(N));
    drop(d_logits);
}

void twin_crossentropy_local_sums(float *sumexp, float *target_logit, const float *logits,
                                  const float *rowmax, const int32_t *targets, size_t N, size_t V,
                                  int64_t v_start, int64_t real_vocab) {
    float *d_sum = up(sumexp, F(N)), *d_tl = up(target_logit, F(N));
    const float *d_logits = up(logits, F(N * V)), *d_max = up(rowmax, F(N));
    const int32_t *d_tgt = up(targets, I(N));
    cuda_crossentropy_local_sums(&ctx, d_sum, d_tl, d_logits, d_max, d_tgt, N, V, v_start,
                                 real_vocab);
    down(sumexp, d_sum, F(N)), down(target_logit, d_tl, F(N));
    drop(d_logits), drop(d_max), drop(d_tgt);
}

void twin_crossentropy_loss(float *loss, const float *sumexp, const float *rowmax,
                            const float *target_logit, size_t N) {
    float *d_loss = up(loss, F(N));
    const float *d_sum = up(sumexp, F(N)), *d_max = up(rowmax, F(N)),
                *d_tl = up(target_logit, F(N));
    cuda_crossentropy_loss(&ctx, d_loss, d_sum, d_max, d_tl, N);
    down(loss, d_loss, F(N));
    drop(d_sum), drop(d_max), drop(d_tl);
}

void twin_crossentropy_backward(float *dlogits, const float *logits, const float *rowmax,
                                const float *sumexp, const int32_t *targets, const float *dloss,
                                size_t N, size_t V, int64_t v_start, int64_t real_vocab) {
    float *d_dl = up(dlogits, F(N * V));
    const float *d_logits = up(logits, F(N * V)), *d_max = up(rowmax, F(N)),
                *d_sum = up(sumexp, F(N)), *d_dloss = up(dloss, F(N));
    const int32_t *d_tgt = up(targets, I(N));
    cuda_crossentropy_backward(&ctx, d_dl, d_logits, d_max, d_sum, d_tgt, d_dloss, N, V, v_start,
                               real_vocab);
    down(dlogits, d_dl, F(N * V));
    drop(d_logits), drop(d_max), drop(d_sum), drop(d_dloss), drop(d_tgt);
}

void twin_adamw_update(float *p, const float *g, float *m, float *v, size_t n, float beta1,
                       float beta2, float eps, float lr, float wd, int t, float grad_scale) {
    float *d_p = up(p, F(n)), *d_m = up(m, F(n)), *d_v = up(v, F(n));
    const float *d_g = up(g, F(n));
    cuda_adamw_update(&ctx, d_p, d_g, d_m, d_v, n, beta1, beta2, eps, lr, wd, t, grad_scale);
    down(p, d_p, F(n)), down(m, d_m, F(n)), down(v, d_v, F(n));
    drop(d_g);
}

void twin_fp32_to_bf16(uint16_t *out, const float *in, size_t n) {
    uint16_t *d_out = up(out, H(n));
    const float *d_in = up(in, F(n));
    cuda_fp32_to_bf16(&ctx, d_out, d_in, n);
    down(out, d_out, H(n));
    drop(d_in);
}

void twin_bf16_to_fp32(float *out, const uint16_t *in, size_t n) {
    float *d_out = up(out, F(n));
    const uint16_t *d_in = up(in, H(n));
    cuda_bf16_to_fp32(&ctx, d_out, d_in, n);
    down(out, d_out, F(n));
    drop(d_in);
}

void twin_fp32_to_fp16(uint16_t *out, const float *in, size_t n) {
    uint16_t *d_out = up(out, H(n));
    const float *d_in = up(in, F(n));
    cuda_fp32_to_fp16(&ctx, d_out, d_in, n);
    down(out, d_out, H(n));
    drop(d_in);
}

void twin_fp16_to_fp32(float *out, const uint16_t *in, size_t n) {
    float *d_out = up(out, F(n));
    const uint16_t *d_in = up(in, H(n));
    cuda_fp16_to_fp32(&ctx, d_out, d_in, n);
    down(out, d_out, F(n));
    drop(d_in);
}

void twin_round_to_bf16(float *x, size_t n) {
    float *d_x = up(x, F(n));
    cuda_round_to_bf16(&ctx, d_x, n);
    down(x, d_x, F(n));
}

void twin_round_to_fp16(float *x, size_t n) {
    float *d_x = up(x, F(n));
    cuda_round_to_fp16(&ctx, d_x, n);
    down(x, d_x, F(n));
}
