/* bench_device.c — the device suite: a training step on the chosen device (--device; for the
 * GPU, `trident bench --suite device --device cuda`) against the matrix products it is made of,
 * on the same device, side by side in one process:
 *
 *   A. full training steps (trainer_step: data, forward, backward, AdamW) of a GPT-2-small
 *      shaped model -> tokens/s and model FLOP/s (flops_train_per_token of src/model/flops.h:
 *      linear products and the T×T attention products);
 *   B. the model's linear products alone through the same device's GEMM (dev_matmul_forward /
 *      dev_matmul_backward: cuBLAS on cuda, OpenBLAS on the CPU devices): for every linear
 *      layer of every block and the LM head, the forward, the input gradient and the weight
 *      gradient, with the model's exact shapes -> GEMM FLOP/s.
 *
 * model FLOP/s ÷ GEMM FLOP/s says how much of the device's GEMM speed a whole step keeps
 * (target ≥ 0.5). Two rows: fp32, then --bf16, where the trainer sets the device's linear
 * products to bf16 (src/device/device.h: on cuda the operands are cast and the bf16 tensor-core
 * GEMMs run; the CPU devices run their twin) and B times the same dev_matmul_* path, casts
 * included. The attention's products stay fp32 in both. Every timed region ends with
 * device_sync(), so GPU times are kernel times.
 *
 * Not here: multi-rank runs (the other suites), the kernel-by-kernel breakdown (serial suite).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/ops.h"
#include "src/bench/bench.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/device/device.h"
#include "src/model/flops.h"
#include "src/model/gpt.h"
#include "src/runtime/dist.h"
#include "src/train/config.h"
#include "src/train/trainer.h"

typedef struct {
    size_t in, out; /* a linear layer (N, in) -> (N, out) */
    int per_step;   /* how many of it one step runs (layers, or 1 for the head) */
} linear_shape;

/* The attention of every layer alone, forward and backward (Q·Kᵀ, causal softmax, ·V and their
 * gradients, always fp32: dev_attention_*), on buffers of the model's shapes; returns seconds
 * (synchronised). The step's time minus this and the linear products is everything else. */
typedef struct {
    float *qkv, *att, *out, *dout, *dqkv, *scratch;
} attention_buffers;

static attention_buffers attention_buffers_make(size_t B, size_t T, size_t C, size_t NH) {
    attention_buffers a;
    a.qkv = device_alloc(B * T * 3 * C * sizeof(float), "bench attention qkv");
    a.att = device_alloc(B * NH * T * T * sizeof(float), "bench attention probabilities");
    a.out = device_alloc(B * T * C * sizeof(float), "bench attention out");
    a.dout = device_alloc(B * T * C * sizeof(float), "bench attention dout");
    a.dqkv = device_alloc(B * T * 3 * C * sizeof(float), "bench attention dqkv");
    a.scratch = device_alloc(dev_attention_scratch_floats(T, NH) * sizeof(float),
                             "bench attention scratch");
    dev_fill(a.qkv, 0.01f, B * T * 3 * C);
    dev_fill(a.dout, 0.01f, B * T * C);
    return a;
}

static void attention_buffers_free(attention_buffers *a) {
    float *all[] = {a->qkv, a->att, a->out, a->dout, a->dqkv, a->scratch};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) device_free(all[i]);
}

static double time_attention(const attention_buffers *a, int L, size_t B, size_t T, size_t NH,
                             size_t HS) {
    device_sync();
    double t0 = time_now();
    for (int l = 0; l < L; l++) {
        dev_attention_forward(a->out, a->att, a->qkv, B, T, NH, HS);
        dev_attention_backward(a->dqkv, a->dout, a->qkv, a->att, a->scratch, B, T, NH, HS);
    }
    device_sync();
    return time_now() - t0;
}

/* Runs forward + both backward products of every shape once; returns seconds (synchronised). */
static double time_linears(const linear_shape *s, int n, size_t N, float *x, float *w, float *y,
                           float *dx, float *dw) {
    device_sync();
    double t0 = time_now();
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s[i].per_step; k++) {
            dev_matmul_forward(y, x, w, NULL, N, s[i].in, s[i].out);
            dev_matmul_backward(dx, dw, NULL, y, x, w, N, s[i].in, s[i].out);
        }
    device_sync();
    return time_now() - t0;
}

/* The model the suite trains: GPT-2 small on a GPU; a small model on the CPU devices (and
 * with --quick). */
typedef struct {
    int L, C, NH, T, B, repeats;
} device_setup;

static device_setup device_setup_of(const bench_ctx *ctx, bool gpu) {
    device_setup d = {12, 768, 12, 1024, 8, 10};
    if (!gpu || ctx->quick) d = (device_setup){4, 256, 4, 128, 4, 5};
    if (ctx->quick) d = (device_setup){2, 64, 4, 32, 2, 3};
    return d;
}

/* Device buffers big enough for every shape: x (N, in), y (N, out), w (in, out), gradients. */
typedef struct {
    float *x, *y, *dx, *w, *dw;
} linear_buffers;

static linear_buffers linear_buffers_make(const linear_shape *shapes, int n, size_t N) {
    size_t max_in = 0, max_out = 0, max_w = 0;
    for (int i = 0; i < n; i++) {
        if (shapes[i].in > max_in) max_in = shapes[i].in;
        if (shapes[i].out > max_out) max_out = shapes[i].out;
        if (shapes[i].in * shapes[i].out > max_w) max_w = shapes[i].in * shapes[i].out;
    }
    linear_buffers b;
    b.x = device_alloc(N * max_in * sizeof(float), "bench inputs");
    b.y = device_alloc(N * max_out * sizeof(float), "bench outputs");
    b.dx = device_alloc(N * max_in * sizeof(float), "bench input gradients");
    b.w = device_alloc(max_w * sizeof(float), "bench weights");
    b.dw = device_alloc(max_w * sizeof(float), "bench weight gradients");
    dev_fill(b.x, 0.01f, N * max_in);
    dev_fill(b.w, 0.02f, max_w);
    return b;
}

static void linear_buffers_free(linear_buffers *b) {
    device_free(b->x);
    device_free(b->y);
    device_free(b->dx);
    device_free(b->w);
    device_free(b->dw);
}

/* One row: a training step in `prec` (fp32, or --bf16: bf16 linear products) against the
 * model's linear products alone in the same precision (the trainer set it on the device). */
static void device_row(bench_ctx *ctx, device_kind dk, const device_setup *d, prec_dtype prec) {
    const bool gpu = dk == DEVICE_CUDA, bf16 = prec == PREC_BF16;
    const int L = d->L, C = d->C, NH = d->NH, T = d->T, B = d->B, repeats = d->repeats;
    train_config tc;
    trainer *t = bench_serial_trainer(&tc, L, C, NH, T, B, ctx->device, bf16, "bench device");
    CHECK(device_matmul_dtype() == prec, "the trainer sets the precision of its products");
    const gpt_config g = {.vocab_size = tc.padded_vocab,
                          .real_vocab = 256,
                          .seq_len = T,
                          .num_layers = L,
                          .hidden = C,
                          .num_heads = NH};
    const size_t N = (size_t)B * (size_t)T;
    const double tokens = (double)N, flops_per_step = flops_train_per_token(&g) * tokens;

    const linear_shape shapes[5] = {
        {(size_t)C, 3 * (size_t)C, L},           /* qkv */
        {(size_t)C, (size_t)C, L},               /* attention projection */
        {(size_t)C, 4 * (size_t)C, L},           /* fc */
        {4 * (size_t)C, (size_t)C, L},           /* fc projection */
        {(size_t)C, (size_t)tc.padded_vocab, 1}, /* LM head */
    };
    double gemm_flops = 0;
    for (int i = 0; i < 5; i++)
        gemm_flops += 6.0 * (double)N * (double)shapes[i].in * (double)shapes[i].out *
                      shapes[i].per_step;
    linear_buffers lb = linear_buffers_make(shapes, 5, N);
    attention_buffers ab = attention_buffers_make((size_t)B, (size_t)T, (size_t)C, (size_t)NH);
    const size_t HS = (size_t)(C / NH);

    int it = 1;
    trainer_step(t, it++); /* warm-up: first touches, cuBLAS handles and workspaces */
    time_linears(shapes, 5, N, lb.x, lb.w, lb.y, lb.dx, lb.dw);
    time_attention(&ab, L, (size_t)B, (size_t)T, (size_t)NH, HS);
    double *step = mallocCheck((size_t)repeats * sizeof(double));
    double *ref = mallocCheck((size_t)repeats * sizeof(double));
    double *att = mallocCheck((size_t)repeats * sizeof(double));
    for (int r = 0; r < repeats; r++) {
        device_sync();
        double t0 = time_now();
        trainer_step(t, it++);
        device_sync();
        step[r] = time_now() - t0;
        ref[r] = time_linears(shapes, 5, N, lb.x, lb.w, lb.y, lb.dx, lb.dw);
        att[r] = time_attention(&ab, L, (size_t)B, (size_t)T, (size_t)NH, HS);
    }
    const double t_step = bench_median(step, repeats), t_ref = bench_median(ref, repeats);
    const double t_att = bench_median(att, repeats);
    const double model_rate = flops_per_step / t_step, gemm_rate = gemm_flops / t_ref;
    char metric[160];
    snprintf(metric, sizeof metric,
             "%s %s: model FLOP/s ÷ GEMM FLOP/s on its linear shapes (L=%d C=%d T=%d B=%d)",
             device_kind_name(dk), prec_dtype_name(prec), L, C, T, B);
    bench_row_min(ctx->report, "device", metric, model_rate / gemm_rate, "%.2f", 0.5);
    const char *gemm = !bf16 ? (gpu ? "cuBLAS fp32, no TF32" : "OpenBLAS, one thread")
                       : gpu ? "operands cast to bf16, cuBLAS bf16 tensor cores, fp32 accumulation"
                             : "operands rounded to bf16 values, OpenBLAS sgemm, one thread";
    bench_note(ctx->report, "device",
               "device %s, %s (%s); training step (forward + backward + AdamW%s): %.4f s = %.0f "
               "tokens/s = %.2f GFLOP/s of model FLOPs; the model's linear GEMMs alone (%.3g "
               "FLOP): %.4f s = %.2f GFLOP/s; median of %d interleaved repeats",
               device_kind_name(dk), prec_dtype_name(prec), gemm,
               bf16 ? ", --bf16: attention products fp32" : ", fp32", t_step, tokens / t_step,
               model_rate / 1e9, gemm_flops, t_ref, gemm_rate / 1e9, repeats);
    bench_note(ctx->report, "device",
               "device %s, %s: where the step's %.4f s go — linear products %.4f s (%.0f%%), "
               "attention alone (Q·Kᵀ, causal softmax, ·V and their gradients, fp32, %d layers) "
               "%.4f s (%.0f%%), everything else (LayerNorm, GELU, embeddings, loss, AdamW, "
               "casts, launches) %.4f s (%.0f%%)",
               device_kind_name(dk), prec_dtype_name(prec), t_step, t_ref, 100 * t_ref / t_step, L,
               t_att, 100 * t_att / t_step, t_step - t_ref - t_att,
               100 * (t_step - t_ref - t_att) / t_step);
    free(step);
    free(ref);
    free(att);
    attention_buffers_free(&ab);
    linear_buffers_free(&lb);
    trainer_destroy(t);
}

void bench_device(bench_ctx *ctx) {
    device_kind dk;
    CHECK(device_kind_parse(ctx->device, &dk), "device name checked by the flag parser");
    char err[512];
    if (!device_init(dk, dk == DEVICE_CUDA ? dist_bind_device() : -1, err, sizeof err))
        die("trident bench --suite device: %s", err);
    const device_setup d = device_setup_of(ctx, dk == DEVICE_CUDA);
    device_row(ctx, dk, &d, PREC_FP32);
    device_row(ctx, dk, &d, PREC_BF16);
    bench_command(ctx->report,
                  "trident bench --suite device --device %s%s   (in process: trainer_step vs "
                  "dev_matmul_*, fp32 then --bf16)",
                  device_kind_name(dk), ctx->quick ? " --quick" : "");
    device_shutdown();
}
