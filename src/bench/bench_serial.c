/* bench_serial.c — the serial suite: how close one training step on one core comes to the
 * speed of the matrix products it is made of.
 *
 * Side by side in one process, one BLAS thread, repeated and interleaved:
 *   A. full training steps of a GPT-2-small-sized model (trainer_step: data, forward,
 *      backward, AdamW) -> tokens/s and model FLOP/s (flops_train_per_token of
 *      src/model/flops.h, the usual accounting, counting the whole T×T attention products);
 *   B. OpenBLAS sgemm alone on exactly the model's products: every (M, N, K), transpose and
 *      leading dimension of the forward and backward of every layer, the LM head and the
 *      per-head attention products, as many times as one step runs them.
 * The FLOPs of B are the FLOPs counted in A, so the ratio
 *     model FLOP/s ÷ sgemm FLOP/s = time of B ÷ time of A
 * is the fraction of a step that pure sgemm would need: 1 means no overhead at all.
 * A third measurement times each kind of kernel on the model's shapes (linear products,
 * attention, LayerNorm, GELU) and the optimizer, for the breakdown of where a step goes.
 *
 * Not here: any multi-rank measurement.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "src/bench/bench.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/model/flops.h"
#include "src/model/gpt.h"
#include "src/train/config.h"
#include "src/train/trainer.h"
#include "src/zero/distributed_optimizer.h"

typedef struct {
    int L, C, NH, T, B;
    int repeats;
} serial_setup;

/* One sgemm of the model, run `count` times per layer (or per step for the head). */
typedef struct {
    const char *what;
    CBLAS_TRANSPOSE ta, tb;
    int M, N, K, lda, ldb, ldc;
    float beta;
    int count;
} gemm_shape;

enum {
    MAX_SHAPES = 32,
    LINEAR_SHAPES = 12
}; /* block_shapes: 4 linear layers × 3, then attention */

/* Adds the three products of a linear layer (N,C) -> (N,OC): forward, dinp, dweight. */
static int add_linear(gemm_shape *s, int n, const char *what, int N, int C, int OC) {
    /* out (N,OC) = inp (N,C) @ w(OC,C)^T */
    s[n++] = (gemm_shape){what, CblasNoTrans, CblasTrans, N, OC, C, C, C, OC, 0.0f, 1};
    /* dinp (N,C) += dout (N,OC) @ w (OC,C) */
    s[n++] = (gemm_shape){what, CblasNoTrans, CblasNoTrans, N, C, OC, OC, C, C, 1.0f, 1};
    /* dw (OC,C) += dout^T (OC,N) @ inp (N,C) */
    s[n++] = (gemm_shape){what, CblasTrans, CblasNoTrans, OC, C, N, OC, C, C, 1.0f, 1};
    return n;
}

/* The products of one block (linear layers, then the per-head attention products, which
 * run B·NH times) — as gpt.c and ops_cpu.c compute them, whole T×T squares included. */
static int block_shapes(gemm_shape *s, const serial_setup *c) {
    const int N = c->B * c->T, C = c->C, T = c->T, HS = C / c->NH, ld = 3 * C, bh = c->B * c->NH;
    int n = 0;
    n = add_linear(s, n, "qkv", N, C, 3 * C);
    n = add_linear(s, n, "proj", N, C, C);
    n = add_linear(s, n, "fc", N, C, 4 * C);
    n = add_linear(s, n, "fcproj", N, 4 * C, C);
    /* forward: att (T,T) = q @ k^T;  out (T,HS) = att @ v */
    s[n++] = (gemm_shape){"attention", CblasNoTrans, CblasTrans, T, T, HS, ld, ld, T, 0.0f, bh};
    s[n++] = (gemm_shape){"attention", CblasNoTrans, CblasNoTrans, T, HS, T, T, ld, C, 0.0f, bh};
    /* backward: datt = dy @ v^T; dv = att^T @ dy; dq = datt @ k; dk = datt^T @ q */
    s[n++] = (gemm_shape){"attention", CblasNoTrans, CblasTrans, T, T, HS, C, ld, T, 0.0f, bh};
    s[n++] = (gemm_shape){"attention", CblasTrans, CblasNoTrans, T, HS, T, T, C, ld, 1.0f, bh};
    s[n++] = (gemm_shape){"attention", CblasNoTrans, CblasNoTrans, T, HS, T, T, ld, ld, 1.0f, bh};
    s[n++] = (gemm_shape){"attention", CblasTrans, CblasNoTrans, T, HS, T, T, ld, ld, 1.0f, bh};
    return n;
}

static double shape_flops(const gemm_shape *g) {
    return 2.0 * g->M * (double)g->N * g->K * g->count;
}

/* Elements an operand needs: rows × ld of its stored (row-major) form. */
static size_t operand_elems(int trans, int rows, int cols, int ld) {
    return (size_t)(trans ? cols : rows) * (size_t)ld;
}

typedef struct {
    float *a, *b, *c;
} gemm_buffers;

static gemm_buffers gemm_buffers_make(const gemm_shape *s, int n) {
    size_t na = 1, nb = 1, nc = 1;
    for (int i = 0; i < n; i++) {
        size_t x = operand_elems(s[i].ta == CblasTrans, s[i].M, s[i].K, s[i].lda);
        size_t y = operand_elems(s[i].tb == CblasTrans, s[i].K, s[i].N, s[i].ldb);
        size_t z = (size_t)s[i].M * (size_t)s[i].ldc;
        na = x > na ? x : na;
        nb = y > nb ? y : nb;
        nc = z > nc ? z : nc;
    }
    gemm_buffers g = {mallocCheck(na * sizeof(float)), mallocCheck(nb * sizeof(float)),
                      callocCheck(nc, sizeof(float))};
    for (size_t i = 0; i < na; i++) g.a[i] = (float)((i * 7919u) % 1000u) * 1e-3f - 0.5f;
    for (size_t i = 0; i < nb; i++) g.b[i] = (float)((i * 104729u) % 1000u) * 1e-3f - 0.5f;
    return g;
}

static void gemm_buffers_free(gemm_buffers *g) {
    free(g->a);
    free(g->b);
    free(g->c);
}

/* Seconds to run the shapes, each `count` times. */
static double time_shapes(const gemm_shape *s, int n, gemm_buffers *g) {
    double t0 = time_now();
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s[i].count; k++)
            cblas_sgemm(CblasRowMajor, s[i].ta, s[i].tb, s[i].M, s[i].N, s[i].K, 1.0f, g->a,
                        s[i].lda, g->b, s[i].ldb, s[i].beta, g->c, s[i].ldc);
    return time_now() - t0;
}

/* ---- the breakdown: each kind of kernel on the model's shapes, per step ---------------- */

typedef struct {
    double linear, attention, layernorm, gelu;
} kernel_times;

static float *randoms(size_t n, float scale) {
    float *x = mallocCheck(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        x[i] = scale * ((float)((i * 2654435761u) % 2001u) / 1000.0f - 1.0f);
    return x;
}

/* One block's kernels once, timed per kind, then × L (plus the head's product). */
static kernel_times time_kernels(const serial_setup *c, int V) {
    const size_t B = (size_t)c->B, T = (size_t)c->T, C = (size_t)c->C, N = B * T,
                 NH = (size_t)c->NH;
    const size_t HS = C / NH, big = N * 4 * C;
    float *x = randoms(big, 1.0f), *y = randoms(big, 0.5f), *dy = randoms(big, 0.01f);
    float *w = randoms(4 * C * C + (size_t)V * C, 0.02f),
          *dw = callocCheck(4 * C * C + (size_t)V * C, sizeof(float));
    float *bias = randoms(4 * C, 0.1f), *dbias = callocCheck(4 * C, sizeof(float));
    float *out = callocCheck(big > N * (size_t)V ? big : N * (size_t)V, sizeof(float));
    float *mean = mallocCheck(N * sizeof(float)), *rstd = mallocCheck(N * sizeof(float));
    float *att = callocCheck(B * NH * T * T, sizeof(float)),
          *scratch = callocCheck(T * T, sizeof(float));
    float *qkv = randoms(N * 3 * C, 0.5f), *dqkv = callocCheck(N * 3 * C, sizeof(float));
    kernel_times k = {0};
    double t;
    /* linear layers: qkv, proj, fc, fcproj — forward and backward */
    const size_t ins[4] = {C, C, C, 4 * C}, outs[4] = {3 * C, C, 4 * C, C};
    t = time_now();
    for (int i = 0; i < 4; i++) {
        matmul_forward(out, x, w, bias, N, ins[i], outs[i]);
        matmul_backward(y, dw, dbias, dy, x, w, N, ins[i], outs[i]);
    }
    k.linear = (time_now() - t) * c->L;
    t = time_now();
    matmul_forward(out, x, w, NULL, N, C, (size_t)V);
    matmul_backward(y, dw, NULL, dy, x, w, N, C, (size_t)V);
    k.linear += time_now() - t;
    t = time_now();
    attention_forward(out, att, qkv, B, T, NH, HS);
    attention_backward(dqkv, dy, qkv, att, scratch, B, T, NH, HS);
    k.attention = (time_now() - t) * c->L;
    t = time_now();
    for (int i = 0; i < 2; i++) {
        layernorm_forward(out, mean, rstd, x, w, bias, N, C);
        layernorm_backward(y, dw, dbias, dy, x, w, mean, rstd, N, C);
    }
    k.layernorm = (time_now() - t) * c->L;
    t = time_now();
    layernorm_forward(out, mean, rstd, x, w, bias, N, C);
    layernorm_backward(y, dw, dbias, dy, x, w, mean, rstd, N, C);
    k.layernorm += time_now() - t;
    t = time_now();
    gelu_forward(out, x, N * 4 * C);
    gelu_backward(y, x, dy, N * 4 * C);
    k.gelu = (time_now() - t) * c->L;
    free(x), free(y), free(dy), free(w), free(dw), free(bias), free(dbias), free(out);
    free(mean), free(rstd), free(att), free(scratch), free(qkv), free(dqkv);
    return k;
}

/* ---- the suite --------------------------------------------------------------------------- */

/* The trainer of the suite: a serial GPT of the setup's shape, one BLAS thread. */
static trainer *serial_trainer(const serial_setup *s, train_config *tc) {
    return bench_serial_trainer(tc, s->L, s->C, s->NH, s->T, s->B, NULL, false, "bench serial");
}

trainer *bench_serial_trainer(train_config *tc, int L, int C, int NH, int T, int B,
                              const char *device, bool bf16, const char *who) {
    train_config_defaults(tc);
    tc->bf16 = bf16;
    tc->num_layers = L;
    tc->hidden_size = C;
    tc->num_attention_heads = NH;
    tc->seq_length = T;
    tc->micro_batch_size = B;
    tc->global_batch_size = B;
    tc->train_iters = 1000;
    tc->lr_warmup_iters = 10;
    tc->no_trace = true;
    if (device) tc->device = device;
    char err[512];
    if (!train_config_check(tc, 1, err, sizeof err)) die("%s: %s", who, err);
    ops_set_threads(1);
    return trainer_create(tc, NULL);
}

/* Medians of the interleaved repeats: a step, sgemm on its shapes, the kernels alone. */
typedef struct {
    double step, ref, opt, attn_gemm; /* step; sgemm on all shapes; AdamW; the T×T sgemm parts */
    double lin, att, ln, gelu;        /* kernels timed alone (kernel_times) */
} serial_times;

static serial_times time_serial(const serial_setup *s, trainer *t, int padded_vocab,
                                gemm_shape *layer, int nlayer, gemm_shape *head, int nhead) {
    gemm_buffers gb = gemm_buffers_make(layer, nlayer);
    gemm_buffers gh = gemm_buffers_make(head, nhead);
    /* Warm up both (first-touch of the model's buffers, BLAS's own buffers). */
    int it = 1;
    trainer_step(t, it++);
    time_shapes(layer, nlayer, &gb);

    double *step = mallocCheck((size_t)s->repeats * sizeof(double));
    double *ref = mallocCheck((size_t)s->repeats * sizeof(double));
    double *opt = mallocCheck((size_t)s->repeats * sizeof(double));
    double *attn_gemm = mallocCheck((size_t)s->repeats * sizeof(double));
    kernel_times *kt = mallocCheck((size_t)s->repeats * sizeof(kernel_times));
    for (int r = 0; r < s->repeats; r++) {
        double t0 = time_now();
        trainer_step(t, it++);
        step[r] = time_now() - t0;
        ref[r] = time_shapes(layer, nlayer, &gb) * s->L + time_shapes(head, nhead, &gh);
        attn_gemm[r] = time_shapes(layer + LINEAR_SHAPES, nlayer - LINEAR_SHAPES, &gb) * s->L;
        t0 = time_now();
        distopt_step(trainer_optimizer(t), it);
        opt[r] = time_now() - t0;
        kt[r] = time_kernels(s, padded_vocab);
    }
    serial_times st = {.step = bench_median(step, s->repeats),
                       .ref = bench_median(ref, s->repeats),
                       .opt = bench_median(opt, s->repeats),
                       .attn_gemm = bench_median(attn_gemm, s->repeats)};
    double col[4][64];
    for (int r = 0; r < s->repeats; r++) {
        col[0][r] = kt[r].linear;
        col[1][r] = kt[r].attention;
        col[2][r] = kt[r].layernorm;
        col[3][r] = kt[r].gelu;
    }
    st.lin = bench_median(col[0], s->repeats), st.att = bench_median(col[1], s->repeats);
    st.ln = bench_median(col[2], s->repeats), st.gelu = bench_median(col[3], s->repeats);
    free(step), free(ref), free(opt), free(attn_gemm), free(kt);
    gemm_buffers_free(&gb);
    gemm_buffers_free(&gh);
    return st;
}

void bench_serial(bench_ctx *ctx) {
    serial_setup s = ctx->quick ? (serial_setup){2, 128, 4, 64, 2, 2}
                                : (serial_setup){12, 768, 12, 256, 1, 5};
    train_config tc;
    trainer *t = serial_trainer(&s, &tc);
    const gpt_config g = {.vocab_size = tc.padded_vocab,
                          .real_vocab = 256,
                          .seq_len = s.T,
                          .num_layers = s.L,
                          .hidden = s.C,
                          .num_heads = s.NH};
    const double tokens = (double)s.B * s.T;
    const double flops_per_step = flops_train_per_token(&g) * tokens;

    gemm_shape layer[MAX_SHAPES], head[3];
    int nlayer = block_shapes(layer, &s);
    int nhead = add_linear(head, 0, "head", s.B * s.T, s.C, tc.padded_vocab);
    double gemm_flops = 0;
    for (int i = 0; i < nlayer; i++) gemm_flops += shape_flops(&layer[i]) * s.L;
    for (int i = 0; i < nhead; i++) gemm_flops += shape_flops(&head[i]);
    const serial_times st = time_serial(&s, t, tc.padded_vocab, layer, nlayer, head, nhead);
    const double t_step = st.step, t_ref = st.ref, t_opt = st.opt, t_attn_gemm = st.attn_gemm;
    const double t_lin = st.lin, t_att = st.att, t_ln = st.ln, t_gelu = st.gelu;

    const double model_rate = flops_per_step / t_step, gemm_rate = gemm_flops / t_ref;
    const double ratio = model_rate / gemm_rate;
    char metric[160];
    snprintf(metric, sizeof metric,
             "model FLOP/s ÷ sgemm FLOP/s on the model's own shapes (L=%d C=%d T=%d B=%d)", s.L,
             s.C, s.T, s.B);
    bench_row_min(ctx->report, "serial", metric, ratio, "%.2f", 0.6);
    bench_row_info(
        ctx->report, "serial",
        "attention kernels (causal blocks + softmax) ÷ sgemm of the full T×T products alone",
        t_att / t_attn_gemm, "%.3f");

    bench_note(
        ctx->report, "serial",
        "model: %d layers, hidden %d, %d heads, sequence length %d, micro-batch %d, vocabulary 256 "
        "bytes padded to %d; one BLAS thread; median of %d interleaved repeats",
        s.L, s.C, s.NH, s.T, s.B, tc.padded_vocab, s.repeats);
    bench_note(ctx->report, "serial",
               "training step (forward + backward + AdamW): %.3f s = %.1f tokens/s = %.2f GFLOP/s "
               "of model "
               "FLOPs (%.3g FLOP/token)",
               t_step, tokens / t_step, model_rate / 1e9, flops_train_per_token(&g));
    bench_note(ctx->report, "serial",
               "sgemm alone on the same %d shapes (%.3g FLOP per step, equal to the model count): "
               "%.3f s = "
               "%.2f GFLOP/s",
               nlayer + nhead, gemm_flops, t_ref, gemm_rate / 1e9);
    const double parts = t_lin + t_att + t_ln + t_gelu + t_opt;
    bench_note(ctx->report, "serial",
               "where a step goes (kernels timed alone on the model's shapes, share of the step): "
               "linear-layer GEMMs %.1f%%, attention with its softmax %.1f%% (the full T×T sgemm "
               "products alone "
               "would be %.1f%%), LayerNorm %.1f%%, GELU %.1f%%, AdamW %.1f%%, the rest "
               "(residuals, embedding, "
               "loss, copies, memsets) %.1f%%",
               100 * t_lin / t_step, 100 * t_att / t_step, 100 * t_attn_gemm / t_step,
               100 * t_ln / t_step, 100 * t_gelu / t_step, 100 * t_opt / t_step,
               100 * (t_step - parts) / t_step);
    bench_command(ctx->report,
                  "trident bench --suite serial%s   (in process: trainer_step vs cblas_sgemm)",
                  ctx->quick ? " --quick" : "");
    trainer_destroy(t);
}
