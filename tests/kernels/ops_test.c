/* ops_test.c — every CPU kernel's backward against finite differences, plus forward sanity.
 *
 * Method: for an op out = op(x), take the scalar L = Σ out·R with a fixed random projection
 * R, let the kernel's backward produce dx from dout = R, and compare every element of dx
 * with the central difference (L(x + e) - L(x - e)) / (2e), where the inputs stay float
 * (as the kernels take them) and L is summed in double. The step is e = 1e-3 relative to
 * |x| (at least 1e-3), which is large enough that fp32 rounding of the outputs stays well
 * below the tolerance (2e-2 relative + 1e-4 absolute, scaled by the largest gradient) and
 * small enough that the curvature error is negligible for O(1) inputs.
 *
 * Forward sanity: causal softmax rows sum to 1 with zeros above the diagonal, layernorm
 * rows have mean 0 / variance 1 before the affine, and the vocab-parallel cross-entropy
 * assembled from its three local pieces (tp = 1) equals log-softmax computed directly in
 * double, with padded vocabulary entries getting neither probability nor gradient.
 *
 * Not here: tensor parallelism (tests/tp/) and the whole model (tests/model/).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "src/core/rng.h"
#include "tests/support/testing.h"

/* ------------------------------------------------------------------ helpers */

static float *randn(size_t n, uint64_t stream, float scale) {
    float *x = malloc(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; i++) x[i] = scale * rng_normal(1234, stream, i);
    return x;
}

static float *zeros(size_t n) { return calloc(n + 1, sizeof(float)); }

static double dot(const float *a, const float *b, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
    return s;
}

/* The scalar being differentiated: re-runs a forward and returns Σ out·R in double. */
typedef double (*loss_fn)(void *ctx);

/* Compares grad (n) of x with central differences of f, for every element of x.
 * Tolerance per element: |fd - g| <= atol·scale + rtol·|g|, scale = max(1, max|g|). */
static void check_grad(const char *what, float *x, const float *grad, size_t n, loss_fn f,
                       void *ctx) {
    const double rtol = 2e-2, atol = 1e-4;
    double gmax = 1.0;
    for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(grad[i]));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float x0 = x[i];
        float e = 1e-3f * fmaxf(1.0f, fabsf(x0));
        x[i] = x0 + e;
        double lp = f(ctx);
        x[i] = x0 - e;
        double lm = f(ctx);
        double h = (double)(x0 + e) - (double)(x0 - e); /* the step the floats really took */
        x[i] = x0;
        double fd = (lp - lm) / h, g = grad[i];
        if (!(fabs(fd - g) <= atol * gmax + rtol * fabs(g))) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: analytic %.7g, finite difference %.7g\n", what, i, g,
                        fd);
            bad++;
        }
    }
    if (bad)
        fail_msg("%s: %zu of %zu gradient elements disagree with finite differences", what, bad, n);
}

/* ------------------------------------------------------------------ matmul */

typedef struct {
    size_t N, C, OC;
    float *inp, *w, *b, *out, *R;
} matmul_case;

static double matmul_loss(void *p) {
    matmul_case *m = p;
    matmul_forward(m->out, m->inp, m->w, m->b, m->N, m->C, m->OC);
    return dot(m->out, m->R, m->N * m->OC);
}

static void matmul_backward_matches_finite_differences(void **state) {
    (void)state;
    matmul_case m = {.N = 6, .C = 5, .OC = 7};
    m.inp = randn(m.N * m.C, 1, 1.0f);
    m.w = randn(m.OC * m.C, 2, 0.5f);
    m.b = randn(m.OC, 3, 0.5f);
    m.R = randn(m.N * m.OC, 4, 1.0f);
    m.out = zeros(m.N * m.OC);
    float *dinp = zeros(m.N * m.C), *dw = zeros(m.OC * m.C), *db = zeros(m.OC);
    matmul_backward(dinp, dw, db, m.R, m.inp, m.w, m.N, m.C, m.OC);
    check_grad("matmul dinp", m.inp, dinp, m.N * m.C, matmul_loss, &m);
    check_grad("matmul dweight", m.w, dw, m.OC * m.C, matmul_loss, &m);
    check_grad("matmul dbias", m.b, db, m.OC, matmul_loss, &m);

    /* Backward accumulates: a second call doubles every gradient. */
    float *dinp2 = malloc(m.N * m.C * sizeof(float));
    memcpy(dinp2, dinp, m.N * m.C * sizeof(float));
    matmul_backward(dinp2, NULL, NULL, m.R, m.inp, m.w, m.N, m.C, m.OC);
    for (size_t i = 0; i < m.N * m.C; i++) dinp[i] *= 2.0f;
    expect_close(dinp2, dinp, m.N * m.C, 1e-6, 1e-6, "matmul dinp accumulated twice");

    /* Without bias the output is the plain product. */
    float *out_nb = zeros(m.N * m.OC);
    matmul_forward(out_nb, m.inp, m.w, NULL, m.N, m.C, m.OC);
    matmul_forward(m.out, m.inp, m.w, m.b, m.N, m.C, m.OC);
    for (size_t n = 0; n < m.N; n++)
        for (size_t o = 0; o < m.OC; o++) out_nb[n * m.OC + o] += m.b[o];
    expect_close(out_nb, m.out, m.N * m.OC, 1e-6, 1e-6, "matmul bias is added once per row");
    free(m.inp);
    free(m.w);
    free(m.b);
    free(m.R);
    free(m.out);
    free(dinp);
    free(dw);
    free(db);
    free(dinp2);
    free(out_nb);
}

/* ------------------------------------------------------------------ layernorm */

typedef struct {
    size_t N, C;
    float *inp, *w, *b, *out, *mean, *rstd, *R;
} ln_case;

static double ln_loss(void *p) {
    ln_case *l = p;
    layernorm_forward(l->out, l->mean, l->rstd, l->inp, l->w, l->b, l->N, l->C);
    return dot(l->out, l->R, l->N * l->C);
}

static void layernorm_backward_matches_finite_differences(void **state) {
    (void)state;
    ln_case l = {.N = 5, .C = 8};
    l.inp = randn(l.N * l.C, 10, 1.0f);
    for (size_t i = 0; i < l.N * l.C; i++) l.inp[i] += 0.3f * (float)(i % 3); /* nonzero means */
    l.w = randn(l.C, 11, 0.5f);
    for (size_t i = 0; i < l.C; i++) l.w[i] += 1.0f;
    l.b = randn(l.C, 12, 0.5f);
    l.R = randn(l.N * l.C, 13, 1.0f);
    l.out = zeros(l.N * l.C);
    l.mean = zeros(l.N);
    l.rstd = zeros(l.N);
    ln_loss(&l);
    float *dinp = zeros(l.N * l.C), *dw = zeros(l.C), *db = zeros(l.C);
    layernorm_backward(dinp, dw, db, l.R, l.inp, l.w, l.mean, l.rstd, l.N, l.C);
    check_grad("layernorm dinp", l.inp, dinp, l.N * l.C, ln_loss, &l);
    check_grad("layernorm dw", l.w, dw, l.C, ln_loss, &l);
    check_grad("layernorm db", l.b, db, l.C, ln_loss, &l);
    /* The split backward's halves (B: dinp only, W: dw and db only) give the same bits. */
    float *dinp_b = zeros(l.N * l.C), *dw_w = zeros(l.C), *db_w = zeros(l.C);
    layernorm_backward(dinp_b, NULL, NULL, l.R, l.inp, l.w, l.mean, l.rstd, l.N, l.C);
    layernorm_backward(NULL, dw_w, db_w, l.R, l.inp, NULL, l.mean, l.rstd, l.N, l.C);
    assert_memory_equal(dinp_b, dinp, l.N * l.C * sizeof(float));
    assert_memory_equal(dw_w, dw, l.C * sizeof(float));
    assert_memory_equal(db_w, db, l.C * sizeof(float));
    free(dinp_b);
    free(dw_w);
    free(db_w);
    free(l.inp);
    free(l.w);
    free(l.b);
    free(l.R);
    free(l.out);
    free(l.mean);
    free(l.rstd);
    free(dinp);
    free(dw);
    free(db);
}

static void layernorm_rows_have_mean_zero_and_unit_variance_before_the_affine(void **state) {
    (void)state;
    const size_t N = 4, C = 32;
    float *inp = randn(N * C, 20, 3.0f);
    for (size_t i = 0; i < N * C; i++) inp[i] += 5.0f;
    float *w = malloc(C * sizeof(float)), *b = zeros(C), *out = zeros(N * C);
    for (size_t i = 0; i < C; i++) w[i] = 1.0f;
    float mean[4], rstd[4];
    layernorm_forward(out, mean, rstd, inp, w, b, N, C);
    for (size_t n = 0; n < N; n++) {
        double m = 0, v = 0, xm = 0;
        for (size_t i = 0; i < C; i++) m += out[n * C + i], xm += inp[n * C + i];
        m /= (double)C;
        xm /= (double)C;
        for (size_t i = 0; i < C; i++) v += (out[n * C + i] - m) * (out[n * C + i] - m);
        v /= (double)C;
        if (fabs(m) > 1e-5) fail_msg("row %zu: mean %.3g after layernorm", n, m);
        if (fabs(v - 1.0) > 1e-3) fail_msg("row %zu: variance %.6g after layernorm", n, v);
        if (fabs(mean[n] - xm) > 1e-4 * fabs(xm))
            fail_msg("row %zu: saved mean %.7g, true %.7g", n, (double)mean[n], xm);
    }
    free(inp);
    free(w);
    free(b);
    free(out);
}

/* ------------------------------------------------------------------ attention */

typedef struct {
    size_t B, T, NH, HS;
    float *qkv, *out, *att, *R;
} att_case;

static double att_loss(void *p) {
    att_case *a = p;
    attention_forward(a->out, a->att, a->qkv, a->B, a->T, a->NH, a->HS);
    return dot(a->out, a->R, a->B * a->T * a->NH * a->HS);
}

static void attention_backward_matches_finite_differences(void **state) {
    (void)state;
    att_case a = {.B = 2, .T = 5, .NH = 2, .HS = 3};
    const size_t CH = a.NH * a.HS, n_qkv = a.B * a.T * 3 * CH, n_out = a.B * a.T * CH;
    a.qkv = randn(n_qkv, 30, 1.0f);
    a.R = randn(n_out, 31, 1.0f);
    a.out = zeros(n_out);
    a.att = zeros(a.B * a.NH * a.T * a.T);
    att_loss(&a);
    float *dqkv = zeros(n_qkv), *scratch = zeros(a.T * a.T);
    attention_backward(dqkv, a.R, a.qkv, a.att, scratch, a.B, a.T, a.NH, a.HS);
    check_grad("attention dqkv", a.qkv, dqkv, n_qkv, att_loss, &a);
    free(a.qkv);
    free(a.R);
    free(a.out);
    free(a.att);
    free(dqkv);
    free(scratch);
}

static void attention_is_causal_in_forward_and_backward(void **state) {
    (void)state;
    const size_t B = 2, T = 6, NH = 2, HS = 4, CH = NH * HS, t0 = 2;
    float *qkv = randn(B * T * 3 * CH, 40, 1.0f);
    float *out = zeros(B * T * CH), *att = zeros(B * NH * T * T);
    attention_forward(out, att, qkv, B, T, NH, HS);
    /* Softmax rows sum to 1 and never look ahead. */
    for (size_t bh = 0; bh < B * NH; bh++)
        for (size_t t = 0; t < T; t++) {
            const float *row = att + (bh * T + t) * T;
            double s = 0;
            for (size_t j = 0; j < T; j++) {
                if (j > t && row[j] != 0.0f)
                    fail_msg("att[%zu][%zu][%zu] = %g looks ahead", bh, t, j, (double)row[j]);
                if (row[j] < 0.0f) fail_msg("negative probability");
                s += row[j];
            }
            if (fabs(s - 1.0) > 1e-5) fail_msg("softmax row (%zu, %zu) sums to %.7g", bh, t, s);
        }
    /* Outputs at t <= t0 depend only on positions <= t0: changing later q, k, v changes nothing. */
    float *out2 = zeros(B * T * CH), *att2 = zeros(B * NH * T * T),
          *qkv2 = malloc(B * T * 3 * CH * sizeof(float));
    memcpy(qkv2, qkv, B * T * 3 * CH * sizeof(float));
    for (size_t b = 0; b < B; b++)
        for (size_t t = t0 + 1; t < T; t++)
            for (size_t k = 0; k < 3 * CH; k++) qkv2[(b * T + t) * 3 * CH + k] += 7.0f;
    attention_forward(out2, att2, qkv2, B, T, NH, HS);
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t <= t0; t++)
            for (size_t k = 0; k < CH; k++)
                if (out2[(b * T + t) * CH + k] != out[(b * T + t) * CH + k])
                    fail_msg("output at position %zu changed when a later position changed", t);
    /* A loss on positions <= t0 only gives no gradient to positions > t0. */
    float *dout = zeros(B * T * CH), *dqkv = zeros(B * T * 3 * CH), *scratch = zeros(T * T);
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t <= t0; t++)
            for (size_t k = 0; k < CH; k++) dout[(b * T + t) * CH + k] = 1.0f + (float)k;
    attention_backward(dqkv, dout, qkv, att, scratch, B, T, NH, HS);
    size_t nonzero_past = 0;
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++)
            for (size_t k = 0; k < 3 * CH; k++) {
                float g = dqkv[(b * T + t) * 3 * CH + k];
                if (t > t0 && g != 0.0f)
                    fail_msg("future position %zu got gradient %g", t, (double)g);
                if (t <= t0 && g != 0.0f) nonzero_past++;
            }
    assert_true(nonzero_past > 0);
    free(qkv);
    free(out);
    free(att);
    free(out2);
    free(att2);
    free(qkv2);
    free(dout);
    free(dqkv);
    free(scratch);
}

/* ------------------------------------------------------------------ gelu */

typedef struct {
    size_t n;
    float *inp, *out, *R;
} gelu_case;

static double gelu_loss(void *p) {
    gelu_case *g = p;
    gelu_forward(g->out, g->inp, g->n);
    return dot(g->out, g->R, g->n);
}

static void gelu_backward_matches_finite_differences(void **state) {
    (void)state;
    gelu_case g = {.n = 64};
    g.inp = randn(g.n, 50, 2.0f);
    g.R = randn(g.n, 51, 1.0f);
    g.out = zeros(g.n);
    float *dinp = zeros(g.n);
    gelu_backward(dinp, g.inp, g.R, g.n);
    check_grad("gelu dinp", g.inp, dinp, g.n, gelu_loss, &g);
    /* Known values of the tanh approximation. */
    float x[3] = {0.0f, 1.0f, -1.0f}, y[3];
    gelu_forward(y, x, 3);
    float want[3] = {0.0f, 0.841192f, -0.158808f};
    expect_close(y, want, 3, 1e-5, 1e-5, "gelu(0), gelu(1), gelu(-1)");
    free(g.inp);
    free(g.R);
    free(g.out);
    free(dinp);
}

/* ------------------------------------------------------------------ embedding, position */

typedef struct {
    size_t N, C, V;
    int64_t v_start;
    int32_t *tokens;
    float *wte, *out, *R;
} emb_case;

static double emb_loss(void *p) {
    emb_case *e = p;
    embedding_forward(e->out, e->tokens, e->wte, e->N, e->C, e->v_start, e->V);
    return dot(e->out, e->R, e->N * e->C);
}

static void embedding_backward_matches_finite_differences_and_masks_other_rows(void **state) {
    (void)state;
    /* This "rank" holds rows [8, 14) of a 20-row vocabulary; tokens cover all of it. */
    emb_case e = {.N = 12, .C = 4, .V = 6, .v_start = 8};
    int32_t tokens[12] = {0, 8, 9, 13, 14, 19, 8, 10, 7, 11, 13, 2};
    e.tokens = tokens;
    e.wte = randn(e.V * e.C, 60, 1.0f);
    e.R = randn(e.N * e.C, 61, 1.0f);
    e.out = zeros(e.N * e.C);
    float *dwte = zeros(e.V * e.C);
    embedding_backward(dwte, e.R, tokens, e.N, e.C, e.v_start, e.V);
    check_grad("embedding dwte", e.wte, dwte, e.V * e.C, emb_loss, &e);
    /* Forward: rows in range are the table row, rows outside are exactly zero. */
    emb_loss(&e);
    for (size_t n = 0; n < e.N; n++) {
        int64_t r = tokens[n] - e.v_start;
        for (size_t c = 0; c < e.C; c++) {
            float want = (r >= 0 && r < (int64_t)e.V) ? e.wte[(size_t)r * e.C + c] : 0.0f;
            if (e.out[n * e.C + c] != want)
                fail_msg("embedding row %zu (token %d) col %zu", n, tokens[n], c);
        }
    }
    /* Row 12 - 8 = 4 is never used: no gradient. Row 0 (token 8) is used twice: sum of both. */
    for (size_t c = 0; c < e.C; c++) {
        assert_true(dwte[4 * e.C + c] == 0.0f);
        float want = e.R[1 * e.C + c] + e.R[6 * e.C + c];
        assert_true(fabsf(dwte[0 * e.C + c] - want) <= 1e-6f);
    }
    free(e.wte);
    free(e.R);
    free(e.out);
    free(dwte);
}

typedef struct {
    size_t B, T, C;
    float *wpe, *base, *out, *R;
} pos_case;

static double pos_loss(void *p) {
    pos_case *q = p;
    memcpy(q->out, q->base, q->B * q->T * q->C * sizeof(float));
    position_forward(q->out, q->wpe, q->B, q->T, q->C);
    return dot(q->out, q->R, q->B * q->T * q->C);
}

static void position_backward_matches_finite_differences(void **state) {
    (void)state;
    pos_case q = {.B = 3, .T = 4, .C = 5};
    size_t n = q.B * q.T * q.C;
    q.wpe = randn(q.T * q.C, 70, 1.0f);
    q.base = randn(n, 71, 1.0f);
    q.R = randn(n, 72, 1.0f);
    q.out = zeros(n);
    float *dwpe = zeros(q.T * q.C);
    position_backward(dwpe, q.R, q.B, q.T, q.C);
    check_grad("position dwpe", q.wpe, dwpe, q.T * q.C, pos_loss, &q);
    free(q.wpe);
    free(q.base);
    free(q.R);
    free(q.out);
    free(dwpe);
}

static void residual_and_add_inplace_add(void **state) {
    (void)state;
    float a[3] = {1, 2, 3}, b[3] = {10, 20, 30}, out[3], want[3] = {11, 22, 33};
    residual_forward(out, a, b, 3);
    expect_close(out, want, 3, 0, 0, "residual");
    add_inplace(a, b, 3);
    expect_close(a, want, 3, 0, 0, "add_inplace");
}

/* The small helpers replace plain loops elsewhere (optimizer, device layer): they must give
 * the very bits those loops give. */
static void fill_scale_sum_squares_and_bias_rows_equal_their_plain_loops(void **state) {
    (void)state;
    const size_t n = 1003, N = 7, OC = 129;
    float *x = randn(n, 40, 3.0f), *want = malloc(n * sizeof(float));
    memcpy(want, x, n * sizeof(float));
    scale_inplace(x, 0.3f, n);
    for (size_t i = 0; i < n; i++) want[i] *= 0.3f;
    expect_close(x, want, n, 0, 0, "scale_inplace");

    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * (double)x[i];
    double got = sum_squares(x, n);
    if (memcmp(&got, &s, sizeof s) != 0) fail_msg("sum_squares %.17g, loop %.17g", got, s);
    assert_true(sum_squares(x, 0) == 0.0);

    fill_value(x, -0.1f, n);
    for (size_t i = 0; i < n; i++) want[i] = -0.1f;
    expect_close(x, want, n, 0, 0, "fill_value");

    float *y = randn(N * OC, 41, 1.0f), *bias = randn(OC, 42, 1.0f);
    float *ywant = malloc(N * OC * sizeof(float));
    memcpy(ywant, y, N * OC * sizeof(float));
    add_bias_rows(y, bias, N, OC);
    for (size_t r = 0; r < N; r++) add_inplace(ywant + r * OC, bias, OC);
    expect_close(y, ywant, N * OC, 0, 0, "add_bias_rows");
    free(x), free(want), free(y), free(bias), free(ywant);
}

/* ------------------------------------------------------------------ cross-entropy */

/* The three local pieces with tp = 1: the whole (padded) vocabulary on one rank. */
typedef struct {
    size_t N, V;
    int64_t real;
    int32_t *targets;
    float *logits, *rowmax, *sumexp, *tlogit, *loss, *R;
} ce_case;

static void ce_forward(ce_case *c) {
    crossentropy_local_max(c->rowmax, c->logits, c->N, c->V, 0, c->real);
    crossentropy_local_sums(c->sumexp, c->tlogit, c->logits, c->rowmax, c->targets, c->N, c->V, 0,
                            c->real);
    crossentropy_loss(c->loss, c->sumexp, c->rowmax, c->tlogit, c->N);
}

static double ce_loss(void *p) {
    ce_case *c = p;
    ce_forward(c);
    return dot(c->loss, c->R, c->N);
}

static ce_case ce_make(void) {
    ce_case c = {.N = 6, .V = 16, .real = 11};
    c.targets = calloc(c.N, sizeof(int32_t));
    for (size_t n = 0; n < c.N; n++) c.targets[n] = (int32_t)((n * 5 + 1) % (size_t)c.real);
    c.targets[c.N - 1] = (int32_t)c.real - 1; /* the last real entry */
    c.logits = randn(c.N * c.V, 80, 2.0f);
    /* Padding entries hold large junk: it must not matter. */
    for (size_t n = 0; n < c.N; n++)
        for (size_t v = (size_t)c.real; v < c.V; v++) c.logits[n * c.V + v] = 50.0f + (float)v;
    c.rowmax = zeros(c.N);
    c.sumexp = zeros(c.N);
    c.tlogit = zeros(c.N);
    c.loss = zeros(c.N);
    c.R = randn(c.N, 81, 1.0f);
    return c;
}

static void ce_free(ce_case *c) {
    free(c->targets);
    free(c->logits);
    free(c->rowmax);
    free(c->sumexp);
    free(c->tlogit);
    free(c->loss);
    free(c->R);
}

static void crossentropy_equals_direct_log_softmax_and_ignores_padding(void **state) {
    (void)state;
    ce_case c = ce_make();
    ce_forward(&c);
    for (size_t n = 0; n < c.N; n++) {
        const float *l = c.logits + n * c.V;
        double mx = -INFINITY, s = 0;
        for (int64_t v = 0; v < c.real; v++) mx = fmax(mx, l[v]);
        for (int64_t v = 0; v < c.real; v++) s += exp((double)l[v] - mx);
        double want = log(s) + mx - (double)l[c.targets[n]];
        if (fabs(c.loss[n] - want) > 1e-5 * fmax(1.0, fabs(want)))
            fail_msg("loss[%zu] = %.8g, direct log-softmax %.8g", n, (double)c.loss[n], want);
        /* Probabilities from the pieces: padding gets none, real ones sum to 1. */
        double psum = 0;
        for (size_t v = 0; v < c.V; v++) {
            double p = (int64_t)v < c.real ? exp((double)l[v] - c.rowmax[n]) / c.sumexp[n] : 0.0;
            psum += p;
        }
        if (fabs(psum - 1.0) > 1e-5) fail_msg("probabilities of row %zu sum to %.7g", n, psum);
    }
    /* Changing a padded logit changes no loss. */
    float before[6];
    memcpy(before, c.loss, sizeof before);
    c.logits[0 * c.V + (size_t)c.real] = -3.0f;
    c.logits[2 * c.V + c.V - 1] = 1e4f;
    ce_forward(&c);
    expect_close(c.loss, before, c.N, 0, 0, "loss after changing padded logits");
    ce_free(&c);
}

static void crossentropy_backward_matches_finite_differences(void **state) {
    (void)state;
    ce_case c = ce_make();
    ce_forward(&c);
    float *dlogits = malloc(c.N * c.V * sizeof(float));
    for (size_t i = 0; i < c.N * c.V; i++) dlogits[i] = 123.0f; /* written, not accumulated */
    crossentropy_backward(dlogits, c.logits, c.rowmax, c.sumexp, c.targets, c.R, c.N, c.V, 0,
                          c.real);
    check_grad("crossentropy dlogits", c.logits, dlogits, c.N * c.V, ce_loss, &c);
    for (size_t n = 0; n < c.N; n++) {
        double rowsum = 0;
        for (size_t v = 0; v < c.V; v++) {
            float d = dlogits[n * c.V + v];
            if ((int64_t)v >= c.real && d != 0.0f)
                fail_msg("padded entry (%zu, %zu) got gradient %g", n, v, (double)d);
            rowsum += d;
        }
        /* softmax - onehot sums to 0 over the row */
        if (fabs(rowsum) > 1e-5 * fmax(1.0, fabs(c.R[n])))
            fail_msg("row %zu: dlogits sum to %.3g", n, rowsum);
    }
    free(dlogits);
    ce_free(&c);
}

/* Split over two "ranks" by hand: the pieces combine to the tp = 1 result. */
static void crossentropy_pieces_combine_across_vocabulary_slices(void **state) {
    (void)state;
    ce_case c = ce_make();
    ce_forward(&c);
    const size_t N = c.N, V = c.V, Vl = V / 2;
    float *part = malloc(N * Vl * sizeof(float));
    float mx[2][6], se[2][6], tl[2][6], gmax[6], gse[6], gtl[6], loss[6];
    for (size_t r = 0; r < 2; r++) {
        for (size_t n = 0; n < N; n++)
            memcpy(part + n * Vl, c.logits + n * V + r * Vl, Vl * sizeof(float));
        crossentropy_local_max(mx[r], part, N, Vl, (int64_t)(r * Vl), c.real);
    }
    for (size_t n = 0; n < N; n++) gmax[n] = fmaxf(mx[0][n], mx[1][n]);
    for (size_t r = 0; r < 2; r++) {
        for (size_t n = 0; n < N; n++)
            memcpy(part + n * Vl, c.logits + n * V + r * Vl, Vl * sizeof(float));
        crossentropy_local_sums(se[r], tl[r], part, gmax, c.targets, N, Vl, (int64_t)(r * Vl),
                                c.real);
    }
    for (size_t n = 0; n < N; n++) gse[n] = se[0][n] + se[1][n], gtl[n] = tl[0][n] + tl[1][n];
    crossentropy_loss(loss, gse, gmax, gtl, N);
    expect_close(loss, c.loss, N, 1e-6, 1e-5, "loss from two vocabulary slices");
    free(part);
    ce_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matmul_backward_matches_finite_differences),
        cmocka_unit_test(layernorm_backward_matches_finite_differences),
        cmocka_unit_test(layernorm_rows_have_mean_zero_and_unit_variance_before_the_affine),
        cmocka_unit_test(attention_backward_matches_finite_differences),
        cmocka_unit_test(attention_is_causal_in_forward_and_backward),
        cmocka_unit_test(gelu_backward_matches_finite_differences),
        cmocka_unit_test(embedding_backward_matches_finite_differences_and_masks_other_rows),
        cmocka_unit_test(position_backward_matches_finite_differences),
        cmocka_unit_test(residual_and_add_inplace_add),
        cmocka_unit_test(fill_scale_sum_squares_and_bias_rows_equal_their_plain_loops),
        cmocka_unit_test(crossentropy_equals_direct_log_softmax_and_ignores_padding),
        cmocka_unit_test(crossentropy_backward_matches_finite_differences),
        cmocka_unit_test(crossentropy_pieces_combine_across_vocabulary_slices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
