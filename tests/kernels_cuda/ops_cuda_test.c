/* ops_cuda_test.c — every CUDA kernel (kernels/ops_cuda.h) against its CPU twin.
 *
 * Method: random inputs (src/core/rng.h), the CPU op and its CUDA twin called with the same
 * arguments (through tests/kernels_cuda/cuda_twin.h, which copies host arrays to the GPU and
 * back), then expect_close on every output. Outputs start from random values on both sides,
 * which pins down the accumulate (+=) semantics of the backward functions and catches a
 * kernel that forgets to write an element. Sizes are odd on purpose (not multiples of 32).
 *
 * Tolerances (relative, with an absolute floor of rtol * max|want| for values near 0):
 *   elementwise 1e-5; reductions (LayerNorm, cross-entropy sums) 1e-5 .. 1e-4; GEMM and
 *   attention 1e-4; bf16 GEMMs 1e-2 against the CPU on the same bf16-rounded inputs, also
 *   through src/device (its casts into the operand scratch, then the bf16 GEMMs: the device
 *   module's bf16 linear products against their CPU twin, whose fp32 dbias is held to 1e-4).
 *   Embedding and position backward are exact: the kernels add in the CPU's order.
 *   Fill, scale and the bias rows are exact (one operation per element); the double sum of
 *   squares to 1e-12 (only the order of the additions differs), and bit-identical run to run.
 *   Casts are compared bit for bit, NaN only as "is a NaN"; the in-place roundings bit for
 *   bit including NaN payloads. Timing events: ordered, and on the host's clock within 5 ms.
 *
 * Needs a GPU: without one the binary prints why and exits 77 ("skipped"). The Bazel target
 * is tagged gpu + manual, so CI builds it only when asked and never runs it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "src/core/check.h"
#include "src/core/rng.h"
#include "src/optim/adamw.h"
#include "src/precision/convert.h"
#include "tests/kernels_cuda/cuda_twin.h"
#include "tests/support/testing.h"

/* ------------------------------------------------------------------ helpers */

static float *randn(size_t n, uint64_t stream, float scale) {
    float *x = malloc(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; i++) x[i] = scale * rng_normal(42, stream, i);
    return x;
}

static float *copy_of(const float *x, size_t n) {
    float *y = malloc(n * sizeof(float) + 1);
    memcpy(y, x, n * sizeof(float));
    return y;
}

/* expect_close with rtol and an absolute floor of rtol * max|want|. */
static void close_rel(const float *got, const float *want, size_t n, double rtol,
                      const char *what) {
    double mx = 0.0;
    for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(want[i]));
    expect_close(got, want, n, rtol * fmax(mx, 1e-30), rtol, what);
}

static void exact(const float *got, const float *want, size_t n, const char *what) {
    expect_close(got, want, n, 0.0, 0.0, what);
}

/* bf16 bit patterns of x, and x itself rounded to those (what the CPU oracle multiplies). */
static uint16_t *to_bf16(float *x, size_t n) {
    uint16_t *h = malloc(n * sizeof(uint16_t) + 1);
    prec_fp32_to_bf16_array(x, h, n);
    prec_bf16_to_fp32_array(h, x, n);
    return h;
}

/* ------------------------------------------------------------------ matmul */

static void matmul_forward_matches_cpu_with_and_without_bias(void **state) {
    (void)state;
    const size_t shapes[][3] = {{37, 53, 29}, {64, 128, 384}, {5, 1, 7}};
    for (size_t s = 0; s < 3; s++) {
        size_t N = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
        float *inp = randn(N * C, 1, 1.0f), *w = randn(OC * C, 2, 0.1f), *b = randn(OC, 3, 1.0f);
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            float *want = randn(N * OC, 4, 5.0f), *got = copy_of(want, N * OC);
            matmul_forward(want, inp, w, with_bias ? b : NULL, N, C, OC);
            twin_matmul_forward(got, inp, w, with_bias ? b : NULL, N, C, OC);
            close_rel(got, want, N * OC, 1e-4, with_bias ? "matmul out (bias)" : "matmul out");
            free(want), free(got);
        }
        free(inp), free(w), free(b);
    }
}

static void matmul_forward_with_empty_inner_dimension_is_the_bias(void **state) {
    (void)state;
    const size_t N = 4, OC = 6;
    float *b = randn(OC, 3, 1.0f), *want = randn(N * OC, 4, 1.0f), *got = copy_of(want, N * OC);
    float dummy = 0.0f;
    matmul_forward(want, &dummy, &dummy, b, N, 0, OC);
    twin_matmul_forward(got, &dummy, &dummy, b, N, 0, OC);
    exact(got, want, N * OC, "matmul out (C = 0)");
    free(b), free(want), free(got);
}

static void matmul_backward_accumulates_like_cpu(void **state) {
    (void)state;
    const size_t N = 45, C = 67, OC = 33;
    float *inp = randn(N * C, 1, 1.0f), *w = randn(OC * C, 2, 0.1f), *dout = randn(N * OC, 3, 1.0f);
    float *dinp = randn(N * C, 4, 1.0f), *dw = randn(OC * C, 5, 1.0f), *db = randn(OC, 6, 1.0f);
    float *g_dinp = copy_of(dinp, N * C), *g_dw = copy_of(dw, OC * C), *g_db = copy_of(db, OC);
    matmul_backward(dinp, dw, db, dout, inp, w, N, C, OC);
    twin_matmul_backward(g_dinp, g_dw, g_db, dout, inp, w, N, C, OC);
    close_rel(g_dinp, dinp, N * C, 1e-4, "matmul dinp");
    close_rel(g_dw, dw, OC * C, 1e-4, "matmul dweight");
    close_rel(g_db, db, OC, 1e-5, "matmul dbias");
    /* only dweight wanted: the NULLs are skipped */
    matmul_backward(NULL, dw, NULL, dout, inp, w, N, C, OC);
    twin_matmul_backward(NULL, g_dw, NULL, dout, inp, w, N, C, OC);
    close_rel(g_dw, dw, OC * C, 1e-4, "matmul dweight (dweight only)");
    free(inp), free(w), free(dout), free(dinp), free(dw), free(db);
    free(g_dinp), free(g_dw), free(g_db);
}

/* The bf16 GEMMs on bf16 bit patterns, and the device module's bf16 products (src/device:
 * its casts of the fp32 operands into the operand scratch, then the same GEMMs), both against
 * the CPU kernels on the operands rounded to bf16: the cpu device's bf16 path. dbias: the
 * kernel's sums the bf16 dout, the device's the fp32 dout (held to the fp32 GEMM's 1e-4). */
static void matmul_bf16_and_the_device_bf16_path_match_cpu_on_rounded_inputs(void **state) {
    (void)state;
    const size_t N = 64, C = 96, OC = 80;
    float *inp = randn(N * C, 1, 1.0f), *w = randn(OC * C, 2, 0.1f), *dout = randn(N * OC, 3, 1.0f);
    float *b = randn(OC, 4, 1.0f);
    float *f_inp = copy_of(inp, N * C), *f_w = copy_of(w, OC * C), *f_dout = copy_of(dout, N * OC);
    uint16_t *inp16 = to_bf16(inp, N * C), *w16 = to_bf16(w, OC * C);
    uint16_t *dout16 = to_bf16(dout, N * OC); /* inp, w, dout now hold the rounded values */

    float *want = randn(N * OC, 5, 1.0f), *got = copy_of(want, N * OC),
          *dgot = copy_of(want, N * OC);
    matmul_forward(want, inp, w, b, N, C, OC);
    twin_matmul_forward_bf16(got, inp16, w16, b, N, C, OC);
    close_rel(got, want, N * OC, 1e-2, "bf16 matmul out");
    twin_dev_matmul_forward_bf16(dgot, f_inp, f_w, b, N, C, OC);
    close_rel(dgot, want, N * OC, 1e-2, "device bf16 matmul out");

    float *dinp = randn(N * C, 6, 1.0f), *dw = randn(OC * C, 7, 1.0f), *db = randn(OC, 8, 1.0f);
    float *g_dinp = copy_of(dinp, N * C), *g_dw = copy_of(dw, OC * C), *g_db = copy_of(db, OC);
    float *d_dinp = copy_of(dinp, N * C), *d_dw = copy_of(dw, OC * C), *d_db = copy_of(db, OC);
    float *f_db = copy_of(db, OC);
    matmul_backward(NULL, NULL, f_db, f_dout, NULL, NULL, N, C, OC); /* dbias of the fp32 dout */
    matmul_backward(dinp, dw, db, dout, inp, w, N, C, OC);
    twin_matmul_backward_bf16(g_dinp, g_dw, g_db, dout16, inp16, w16, N, C, OC);
    close_rel(g_dinp, dinp, N * C, 1e-2, "bf16 matmul dinp");
    close_rel(g_dw, dw, OC * C, 1e-2, "bf16 matmul dweight");
    close_rel(g_db, db, OC, 1e-2, "bf16 matmul dbias");
    twin_dev_matmul_backward_bf16(d_dinp, d_dw, d_db, f_dout, f_inp, f_w, N, C, OC);
    close_rel(d_dinp, dinp, N * C, 1e-2, "device bf16 matmul dinp");
    close_rel(d_dw, dw, OC * C, 1e-2, "device bf16 matmul dweight");
    close_rel(d_db, f_db, OC, 1e-4, "device bf16 matmul dbias (fp32 dout)");
    free(inp), free(w), free(dout), free(b), free(inp16), free(w16), free(dout16);
    free(f_inp), free(f_w), free(f_dout), free(want), free(got), free(dgot);
    free(dinp), free(dw), free(db), free(g_dinp), free(g_dw), free(g_db);
    free(d_dinp), free(d_dw), free(d_db), free(f_db);
}

/* ------------------------------------------------------------------ layernorm */

static void layernorm_forward_and_backward_match_cpu(void **state) {
    (void)state;
    const size_t N = 41, C = 100;
    float *inp = randn(N * C, 1, 2.0f), *w = randn(C, 2, 1.0f), *b = randn(C, 3, 1.0f);
    for (size_t i = 0; i < N * C; i++) inp[i] += 3.0f; /* a non-zero mean to subtract */
    float *out = randn(N * C, 4, 1.0f), *mean = randn(N, 5, 1.0f), *rstd = randn(N, 6, 1.0f);
    float *g_out = copy_of(out, N * C), *g_mean = copy_of(mean, N), *g_rstd = copy_of(rstd, N);
    layernorm_forward(out, mean, rstd, inp, w, b, N, C);
    twin_layernorm_forward(g_out, g_mean, g_rstd, inp, w, b, N, C);
    close_rel(g_out, out, N * C, 1e-5, "layernorm out");
    close_rel(g_mean, mean, N, 1e-5, "layernorm mean");
    close_rel(g_rstd, rstd, N, 1e-5, "layernorm rstd");

    float *dout = randn(N * C, 7, 1.0f);
    float *dinp = randn(N * C, 8, 1.0f), *dw = randn(C, 9, 1.0f), *db = randn(C, 10, 1.0f);
    float *g_dinp = copy_of(dinp, N * C), *g_dw = copy_of(dw, C), *g_db = copy_of(db, C);
    layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
    twin_layernorm_backward(g_dinp, g_dw, g_db, dout, inp, w, mean, rstd, N, C);
    close_rel(g_dinp, dinp, N * C, 1e-4, "layernorm dinp");
    close_rel(g_dw, dw, C, 1e-4, "layernorm dw");
    close_rel(g_db, db, C, 1e-5, "layernorm db");
    free(inp), free(w), free(b), free(out), free(mean), free(rstd), free(g_out), free(g_mean);
    free(g_rstd), free(dout), free(dinp), free(dw), free(db), free(g_dinp), free(g_dw), free(g_db);
}

/* ------------------------------------------------------------------ attention */

static void attention_forward_and_backward_match_cpu(void **state) {
    (void)state;
    const size_t shapes[][4] = {{2, 37, 3, 16}, {1, 70, 2, 8}, {3, 1, 4, 5}}; /* B T NH HS */
    for (size_t s = 0; s < 3; s++) {
        size_t B = shapes[s][0], T = shapes[s][1], NH = shapes[s][2], HS = shapes[s][3];
        size_t CH = NH * HS, nqkv = B * T * 3 * CH, natt = B * NH * T * T;
        float *qkv = randn(nqkv, 1, 1.0f);
        float *out = randn(B * T * CH, 2, 1.0f), *att = randn(natt, 3, 1.0f);
        float *g_out = copy_of(out, B * T * CH), *g_att = copy_of(att, natt);
        attention_forward(out, att, qkv, B, T, NH, HS);
        twin_attention_forward(g_out, g_att, qkv, B, T, NH, HS);
        close_rel(g_att, att, natt, 1e-4, "attention att");
        close_rel(g_out, out, B * T * CH, 1e-4, "attention out");

        float *dout = randn(B * T * CH, 4, 1.0f), *dqkv = randn(nqkv, 5, 1.0f);
        float *g_dqkv = copy_of(dqkv, nqkv), *scratch = malloc(T * T * sizeof(float));
        attention_backward(dqkv, dout, qkv, att, scratch, B, T, NH, HS);
        twin_attention_backward(g_dqkv, dout, qkv, att, B, T, NH, HS);
        close_rel(g_dqkv, dqkv, nqkv, 1e-4, "attention dqkv");
        free(qkv), free(out), free(att), free(g_out), free(g_att), free(dout), free(dqkv);
        free(g_dqkv), free(scratch);
    }
}

/* ------------------------------------------------------------------ elementwise */

static void gelu_residual_and_add_match_cpu(void **state) {
    (void)state;
    const size_t n = 10007;
    float *x = randn(n, 1, 3.0f), *y = randn(n, 2, 1.0f), *d = randn(n, 3, 1.0f);
    float *out = randn(n, 4, 1.0f), *g_out = copy_of(out, n);
    gelu_forward(out, x, n);
    twin_gelu_forward(g_out, x, n);
    close_rel(g_out, out, n, 1e-5, "gelu out");

    float *dinp = randn(n, 5, 1.0f), *g_dinp = copy_of(dinp, n);
    gelu_backward(dinp, x, d, n);
    twin_gelu_backward(g_dinp, x, d, n);
    close_rel(g_dinp, dinp, n, 1e-5, "gelu dinp");

    residual_forward(out, x, y, n);
    twin_residual_forward(g_out, x, y, n);
    exact(g_out, out, n, "residual out");

    add_inplace(out, d, n);
    twin_add_inplace(g_out, d, n);
    exact(g_out, out, n, "add_inplace y");
    free(x), free(y), free(d), free(out), free(g_out), free(dinp), free(g_dinp);
}

static void fill_scale_and_bias_rows_match_cpu_bit_for_bit(void **state) {
    (void)state;
    const size_t n = 10007;
    float *x = randn(n, 1, 3.0f), *g_x = copy_of(x, n);
    scale_inplace(x, 0.3f, n); /* not a power of two: every product rounds */
    twin_scale(g_x, 0.3f, n);
    exact(g_x, x, n, "scale x");
    fill_value(x, -0.1f, n);
    twin_fill(g_x, -0.1f, n);
    exact(g_x, x, n, "fill x");

    const size_t shapes[][2] = {{37, 129}, {1, 5}, {300, 1}}; /* N OC */
    for (size_t s = 0; s < 3; s++) {
        size_t N = shapes[s][0], OC = shapes[s][1];
        float *y = randn(N * OC, 2, 1.0f), *bias = randn(OC, 3, 1.0f), *g_y = copy_of(y, N * OC);
        add_bias_rows(y, bias, N, OC);
        twin_add_bias_rows(g_y, bias, N, OC);
        exact(g_y, y, N * OC, "add_bias_rows x");
        free(y), free(bias), free(g_y);
    }
    free(x), free(g_x);
}

/* ------------------------------------------------------------------ reductions */

static void sumsq_matches_cpu_in_double_and_repeats_exactly(void **state) {
    (void)state;
    /* one element; fewer than one block; more than CUDA_REDUCE_BLOCKS blocks' worth */
    const size_t sizes[] = {1, 1000, 100003, (1u << 20) + 7};
    for (size_t k = 0; k < 4; k++) {
        size_t n = sizes[k];
        float *x = randn(n, 20 + k, 2.0f);
        double want = sum_squares(x, n), got = twin_sumsq(x, n), again = twin_sumsq(x, n);
        if (!(fabs(got - want) <= 1e-12 * want))
            fail_msg("sumsq n=%zu: got %.17g want %.17g", n, got, want);
        if (memcmp(&got, &again, sizeof got) != 0)
            fail_msg("sumsq n=%zu: %.17g then %.17g (order not fixed)", n, got, again);
        free(x);
    }
    float dummy = 1.0f;
    assert_true(twin_sumsq(&dummy, 0) == 0.0);
}

static void has_inf_or_nan_finds_one_bad_element(void **state) {
    (void)state;
    const size_t n = 300007;
    float *x = randn(n, 1, 1e30f); /* large but finite (squares would overflow: not asked) */
    assert_false(twin_has_inf_or_nan(x, n));
    const size_t where[] = {0, 4099, n - 1};
    const float bad[] = {INFINITY, -INFINITY, NAN};
    for (size_t w = 0; w < 3; w++) {
        for (size_t b = 0; b < 3; b++) {
            float keep = x[where[w]];
            x[where[w]] = bad[b];
            if (!twin_has_inf_or_nan(x, n))
                fail_msg("%g at %zu of %zu not found", (double)bad[b], where[w], n);
            x[where[w]] = keep;
        }
    }
    assert_false(twin_has_inf_or_nan(x, n)); /* the flag is cleared between calls */
    x[0] = NAN;
    assert_false(twin_has_inf_or_nan(x, 0)); /* nothing to look at */
    free(x);
}

/* ------------------------------------------------------------------ embeddings */

/* Tokens in [0, 2 * (v_start + V)): some in the shard [v_start, v_start + V), some not. */
static void embedding_shard(size_t N, size_t C, size_t V, int64_t v_start) {
    int32_t *tokens = mallocCheck(N * sizeof(int32_t));
    for (size_t n = 0; n < N; n++)
        tokens[n] = (int32_t)rng_below(42, 9, n, 2 * ((uint64_t)v_start + V));
    float *wte = randn(V * C, 1, 1.0f);
    float *out = randn(N * C, 2, 1.0f), *g_out = copy_of(out, N * C);
    embedding_forward(out, tokens, wte, N, C, v_start, V);
    twin_embedding_forward(g_out, tokens, wte, N, C, v_start, V);
    exact(g_out, out, N * C, "embedding out");

    /* many positions share a token: their rows add up, in position order on both sides */
    float *dout = randn(N * C, 3, 1.0f), *dwte = randn(V * C, 4, 1.0f);
    float *g_dwte = copy_of(dwte, V * C);
    embedding_backward(dwte, dout, tokens, N, C, v_start, V);
    twin_embedding_backward(g_dwte, dout, tokens, N, C, v_start, V);
    exact(g_dwte, dwte, V * C, "embedding dwte");
    free(tokens), free(wte), free(out), free(g_out), free(dout), free(dwte), free(g_dwte);
}

static void embedding_masks_tokens_outside_the_shard(void **state) {
    (void)state;
    embedding_shard(300, 70, 20, 10); /* this rank holds tokens 10..29; two tiles of positions */
    /* columns beyond one block's span (4 x 256), a tile cut short, a shard starting at 0 */
    embedding_shard(777, 1100, 9, 0);
}

static void position_embedding_matches_cpu(void **state) {
    (void)state;
    const size_t B = 3, T = 17, C = 40;
    float *wpe = randn(T * C, 1, 1.0f), *out = randn(B * T * C, 2, 1.0f);
    float *g_out = copy_of(out, B * T * C);
    position_forward(out, wpe, B, T, C);
    twin_position_forward(g_out, wpe, B, T, C);
    exact(g_out, out, B * T * C, "position out");
    float *dout = randn(B * T * C, 3, 1.0f), *dwpe = randn(T * C, 4, 1.0f);
    float *g_dwpe = copy_of(dwpe, T * C);
    position_backward(dwpe, dout, B, T, C);
    twin_position_backward(g_dwpe, dout, B, T, C);
    exact(g_dwpe, dwpe, T * C, "position dwpe");
    free(wpe), free(out), free(g_out), free(dout), free(dwpe), free(g_dwpe);
}

/* ------------------------------------------------------------------ cross-entropy */

/* One shard [v_start, v_start+V) of a vocabulary of real_vocab entries; targets anywhere in
 * [0, real_vocab + 8), so some are in the shard, some elsewhere, some on padding. */
static void crossentropy_shard(size_t N, size_t V, int64_t v_start, int64_t real_vocab) {
    int32_t *tgt = malloc(N * sizeof(int32_t));
    for (size_t n = 0; n < N; n++) tgt[n] = (int32_t)rng_below(42, 11, n, (uint64_t)real_vocab + 8);
    float *logits = randn(N * V, 1, 3.0f);
    float *mx = randn(N, 2, 1.0f), *g_mx = copy_of(mx, N);
    crossentropy_local_max(mx, logits, N, V, v_start, real_vocab);
    twin_crossentropy_local_max(g_mx, logits, N, V, v_start, real_vocab);
    if (real_vocab <= v_start) { /* only padding here: the max of nothing */
        for (size_t n = 0; n < N; n++) assert_true(isinf(g_mx[n]) && g_mx[n] < 0);
        for (size_t n = 0; n < N; n++) mx[n] = g_mx[n] = 0.5f; /* as if all-reduced elsewhere */
    } else {
        exact(g_mx, mx, N, "crossentropy rowmax");
    }
    float *se = randn(N, 3, 1.0f), *tl = randn(N, 4, 1.0f);
    float *g_se = copy_of(se, N), *g_tl = copy_of(tl, N);
    crossentropy_local_sums(se, tl, logits, mx, tgt, N, V, v_start, real_vocab);
    twin_crossentropy_local_sums(g_se, g_tl, logits, mx, tgt, N, V, v_start, real_vocab);
    close_rel(g_se, se, N, 1e-5, "crossentropy sumexp");
    exact(g_tl, tl, N, "crossentropy target_logit");
    if (real_vocab <= v_start) /* a real run would have sums from the other ranks */
        for (size_t n = 0; n < N; n++) se[n] = g_se[n] = 2.0f;

    float *loss = randn(N, 5, 1.0f), *g_loss = copy_of(loss, N);
    crossentropy_loss(loss, se, mx, tl, N);
    twin_crossentropy_loss(g_loss, se, mx, tl, N);
    close_rel(g_loss, loss, N, 1e-5, "crossentropy loss");

    float *dloss = randn(N, 6, 1.0f), *dl = randn(N * V, 7, 9.0f), *g_dl = copy_of(dl, N * V);
    crossentropy_backward(dl, logits, mx, se, tgt, dloss, N, V, v_start, real_vocab);
    twin_crossentropy_backward(g_dl, logits, mx, se, tgt, dloss, N, V, v_start, real_vocab);
    close_rel(g_dl, dl, N * V, 1e-5, "crossentropy dlogits");
    for (size_t n = 0; n < N; n++) /* padding columns: zero gradient */
        for (int64_t v = real_vocab - v_start; v < (int64_t)V; v++)
            if (v >= 0) assert_true(g_dl[n * V + (size_t)v] == 0.0f);
    free(tgt), free(logits), free(mx), free(g_mx), free(se), free(tl), free(g_se), free(g_tl);
    free(loss), free(g_loss), free(dloss), free(dl), free(g_dl);
}

static void crossentropy_pieces_match_cpu_and_ignore_padding(void **state) {
    (void)state;
    crossentropy_shard(33, 50, 100, 140);  /* last shard: 40 real columns, 10 padding */
    crossentropy_shard(19, 3001, 0, 5000); /* a wide shard with no padding */
    crossentropy_shard(7, 16, 48, 40);     /* a shard of padding only */
}

/* ------------------------------------------------------------------ optimizer */

static void adamw_step_matches_cpu(void **state) {
    (void)state;
    const size_t n = 5003;
    adamw_config cfg = {
        .lr = 3e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};
    float *p = randn(n, 1, 1.0f), *g = randn(n, 2, 1.0f), *m = randn(n, 3, 0.1f);
    float *v = randn(n, 4, 0.1f);
    for (size_t i = 0; i < n; i++) v[i] = v[i] * v[i]; /* second moments are >= 0 */
    float *gp = copy_of(p, n), *gm = copy_of(m, n), *gv = copy_of(v, n);
    for (int t = 1; t <= 3; t++) {
        adamw_update(p, g, m, v, n, &cfg, 1e-3f, cfg.weight_decay, t, 0.5f);
        twin_adamw_update(gp, g, gm, gv, n, cfg.beta1, cfg.beta2, cfg.eps, 1e-3f, cfg.weight_decay,
                          t, 0.5f);
    }
    close_rel(gm, m, n, 1e-5, "adamw m");
    close_rel(gv, v, n, 1e-5, "adamw v");
    close_rel(gp, p, n, 1e-5, "adamw p");
    free(p), free(g), free(m), free(v), free(gp), free(gm), free(gv);
}

/* ------------------------------------------------------------------ casts */

static float bits_to_float(uint32_t b) {
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* Values that exercise every rounding rule: ties both ways, fp16 overflow and subnormals,
 * fp32 subnormals, signed zeros, infinities, NaN — then random values over many scales. */
static float *cast_inputs(size_t *count) {
    static const uint32_t special[] = {
        0x00000000u, 0x80000000u, 0x3f800000u,
        0xbf800000u, 0x3f808000u, /* 1 + 2^-8: bf16 tie, stays 1 (even) */
        0x3f818000u,              /* bf16 tie, rounds up to the even neighbour */
        0x3f808001u,              /* just above a tie: rounds up */
        0x3f801000u,              /* 1 + 2^-11: fp16 tie, stays 1 */
        0x3f803000u,              /* fp16 tie, rounds up */
        0x477fe000u,              /* 65504: the largest fp16 */
        0x477fefffu,              /* just below 65520: rounds to 65504 */
        0x477ff000u,              /* 65520: rounds to inf */
        0x33800000u,              /* 2^-24: the smallest fp16 subnormal */
        0x33000000u,              /* 2^-25: tie between 0 and 2^-24, goes to 0 */
        0x33400000u,              /* 1.5 * 2^-25: rounds to 2^-24 */
        0x387fc000u,              /* just below the smallest fp16 normal */
        0x00000001u,              /* the smallest fp32 subnormal */
        0x007fffffu,              /* the largest fp32 subnormal */
        0x7f7fffffu,              /* FLT_MAX: bf16 rounds it to inf */
        0x7f800000u, 0xff800000u, 0x7fc00000u,
        0xffc00001u, 0x7f800001u,
    };
    size_t ns = sizeof special / sizeof special[0], nr = 4000;
    float *x = malloc((ns + nr) * sizeof(float));
    for (size_t i = 0; i < ns; i++) x[i] = bits_to_float(special[i]);
    for (size_t i = 0; i < nr; i++) /* magnitudes 2^-30 .. 2^20 */
        x[ns + i] = rng_normal(42, 12, i) * ldexpf(1.0f, (int)rng_below(42, 13, i, 51) - 30);
    *count = ns + nr;
    return x;
}

static void expect_same_bits16(const uint16_t *got, const uint16_t *want, const float *in, size_t n,
                               const char *what) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(in[i])) continue; /* checked separately: NaN payloads may differ */
        if (got[i] != want[i]) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: input %.9g: got 0x%04x want 0x%04x\n", what, i,
                        (double)in[i], got[i], want[i]);
            bad++;
        }
    }
    if (bad) fail_msg("%s: %zu of %zu values round differently", what, bad, n);
}

static void casts_round_to_nearest_even_like_cpu(void **state) {
    (void)state;
    size_t n;
    float *x = cast_inputs(&n);
    uint16_t *want = malloc(n * sizeof(uint16_t)), *got = malloc(n * sizeof(uint16_t));

    prec_fp32_to_bf16_array(x, want, n);
    twin_fp32_to_bf16(got, x, n);
    expect_same_bits16(got, want, x, n, "fp32->bf16");
    for (size_t i = 0; i < n; i++)
        if (isnan(x[i])) assert_true(isnan(prec_bf16_to_fp32(got[i])));

    prec_fp32_to_fp16_array(x, want, n);
    twin_fp32_to_fp16(got, x, n);
    expect_same_bits16(got, want, x, n, "fp32->fp16");
    for (size_t i = 0; i < n; i++)
        if (isnan(x[i])) assert_true(isnan(prec_fp16_to_fp32(got[i])));
    free(x), free(want), free(got);
}

/* Bit for bit against prec_round_array, NaN payloads included (the kernels keep them as
 * convert.c does). */
static void round_in_place_equals_prec_round_array_bit_for_bit(void **state) {
    (void)state;
    size_t n;
    float *x = cast_inputs(&n);
    for (int fmt = 0; fmt < 2; fmt++) {
        float *want = copy_of(x, n), *got = copy_of(x, n);
        prec_round_array(fmt ? PREC_FP16 : PREC_BF16, want, n);
        if (fmt) twin_round_to_fp16(got, n);
        else twin_round_to_bf16(got, n);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t g, w, in;
            memcpy(&g, &got[i], sizeof g), memcpy(&w, &want[i], sizeof w);
            memcpy(&in, &x[i], sizeof in);
            if (g != w) {
                if (bad < 5)
                    fprintf(stderr, "  round_to_%s[%zu]: input 0x%08x: got 0x%08x want 0x%08x\n",
                            fmt ? "fp16" : "bf16", i, in, g, w);
                bad++;
            }
        }
        if (bad) fail_msg("round_to_%s: %zu of %zu values differ", fmt ? "fp16" : "bf16", bad, n);
        free(want), free(got);
    }
    free(x);
}

static void widening_is_exact_for_every_16_bit_pattern(void **state) {
    (void)state;
    const size_t n = 65536;
    uint16_t *h = malloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++) h[i] = (uint16_t)i;
    float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    for (int fmt = 0; fmt < 2; fmt++) {
        if (fmt == 0) {
            prec_bf16_to_fp32_array(h, want, n);
            twin_bf16_to_fp32(got, h, n);
        } else {
            prec_fp16_to_fp32_array(h, want, n);
            twin_fp16_to_fp32(got, h, n);
        }
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            if (isnan(want[i])) {
                bad += !isnan(got[i]);
            } else {
                bad += memcmp(&got[i], &want[i], sizeof(float)) != 0;
            }
        }
        if (bad)
            fail_msg("%s->fp32: %zu of 65536 patterns widen differently", fmt ? "fp16" : "bf16",
                     bad);
    }
    free(h), free(want), free(got);
}

/* ------------------------------------------------------------------ timing events */

/* Events around 8 fills of 256 MiB: the second is reached later than the first, by at least
 * the time to write 2 GiB at 10 TB/s (more than any GPU's memory bandwidth), and both lie
 * within the host's clock reads around the work; an event on the idle stream reads as the
 * host clock at its record, within a few ms (src/device/device.h's markers, the trace's
 * device clock, are these events). */
static void events_time_kernels_on_the_host_clock(void **state) {
    (void)state;
    const size_t n = (size_t)1 << 26;
    const int fills = 8;
    twin_events e;
    twin_event_times(n, fills, &e);
    const double bytes = (double)fills * (double)n * sizeof(float), slack = 1e-3;
    printf("  events: %d fills of %zu floats took %.3f ms on the stream (%.0f GB/s), %.3f ms on "
           "the host; an event on the idle stream reads %+.1f us from the host clock\n",
           fills, n, 1e3 * (e.end - e.start), 1e-9 * bytes / (e.end - e.start),
           1e3 * (e.host_done - e.host_launch), 1e6 * (e.idle - e.host_idle));
    assert_true(e.end - e.start >= bytes / 1e13);
    assert_true(e.start >= e.host_launch - slack && e.end <= e.host_done + slack);
    assert_true(fabs(e.idle - e.host_idle) <= 5e-3);
    assert_true(e.idle <= e.t_ref + 1e-6 && e.t_ref >= e.host_idle);
}

/* ------------------------------------------------------------------ arena */

static void arena_views_are_aligned_and_disjoint(void **state) {
    (void)state;
    const size_t counts[] = {1, 100, 64, 3, 0, 65};
    size_t offsets[6];
    size_t cap = twin_arena_layout(counts, 6, offsets);
    /* 4 B -> 256, 400 B -> 512, 256 B -> 256, 12 B -> 256, 0 B -> 0, 260 B -> 512 */
    const size_t want[] = {0, 256, 768, 1024, 1280, 1280};
    for (size_t i = 0; i < 6; i++) assert_int_equal(offsets[i], want[i]);
    assert_int_equal(cap, 1792);
}

int main(void) {
    if (twin_gpu_count() == 0) {
        printf("ops_cuda_test: no GPU visible (nvidia-smi, CUDA_VISIBLE_DEVICES); skipped\n");
        return 77;
    }
    twin_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matmul_forward_matches_cpu_with_and_without_bias),
        cmocka_unit_test(matmul_forward_with_empty_inner_dimension_is_the_bias),
        cmocka_unit_test(matmul_backward_accumulates_like_cpu),
        cmocka_unit_test(matmul_bf16_and_the_device_bf16_path_match_cpu_on_rounded_inputs),
        cmocka_unit_test(layernorm_forward_and_backward_match_cpu),
        cmocka_unit_test(attention_forward_and_backward_match_cpu),
        cmocka_unit_test(gelu_residual_and_add_match_cpu),
        cmocka_unit_test(fill_scale_and_bias_rows_match_cpu_bit_for_bit),
        cmocka_unit_test(sumsq_matches_cpu_in_double_and_repeats_exactly),
        cmocka_unit_test(has_inf_or_nan_finds_one_bad_element),
        cmocka_unit_test(embedding_masks_tokens_outside_the_shard),
        cmocka_unit_test(position_embedding_matches_cpu),
        cmocka_unit_test(crossentropy_pieces_match_cpu_and_ignore_padding),
        cmocka_unit_test(adamw_step_matches_cpu),
        cmocka_unit_test(casts_round_to_nearest_even_like_cpu),
        cmocka_unit_test(round_in_place_equals_prec_round_array_bit_for_bit),
        cmocka_unit_test(widening_is_exact_for_every_16_bit_pattern),
        cmocka_unit_test(arena_views_are_aligned_and_disjoint),
        cmocka_unit_test(events_time_kernels_on_the_host_clock),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    twin_shutdown();
    return failed;
}
