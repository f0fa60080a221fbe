/* gpt_test.c — the serial GPT model: gradient, parameter table, initialisation, config checks.
 *
 * The gradient test differentiates the whole model (embedding, two blocks, final norm, tied
 * head, mean cross-entropy over a padded vocabulary) by central differences and compares a
 * random sample of elements of EVERY parameter tensor with gpt_backward. The parameters are
 * not the training initialisation (zero biases, unit norms and 0.02-sized weights would leave
 * many gradients tiny and hide mistakes in the bias and norm paths): every element is drawn
 * at O(0.1..1) scale instead, so every term of the backward pass carries weight.
 *
 * The table tests pin down the layout other modules rely on: contiguous offsets from the
 * chunk's start, element counts equal to the closed-form formula, and serial index maps that
 * are bijections onto the serial tensor when taken over all tensor-parallel ranks.
 *
 * Not here: the kernels one by one (tests/kernels/), tensor-parallel execution (tests/tp/),
 * training equivalence across layouts (tests/train/).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/rng.h"
#include "src/model/gpt.h"
#include "tests/support/testing.h"

/* The tiny model of the gradient test: L=2, C=16, NH=2, T=8, V=64 padded from 50. */
static gpt_config tiny_config(void) {
    gpt_config cfg = {.vocab_size = 64,
                      .real_vocab = 50,
                      .seq_len = 8,
                      .num_layers = 2,
                      .hidden = 16,
                      .num_heads = 2};
    return cfg;
}

static gpt_shard whole_model(const gpt_config *cfg) {
    gpt_shard s = {.tp_size = 1,
                   .tp_rank = 0,
                   .layer_begin = 0,
                   .layer_end = cfg->num_layers,
                   .has_embedding = true,
                   .has_head = true};
    return s;
}

/* ------------------------------------------------------------------ gradient */

typedef struct {
    gpt_chunk *c;
    float *params;
    gpt_acts *a;
    const int32_t *tokens, *targets;
    size_t N;
} model_case;

/* Mean cross-entropy of the batch, summed in double from the per-position losses. */
static double model_loss(const model_case *m) {
    gpt_forward(m->c, m->params, m->a, NULL, m->tokens, m->targets, NULL, NULL, NULL);
    const float *l = gpt_acts_losses(m->a);
    double s = 0.0;
    for (size_t n = 0; n < m->N; n++) s += l[n];
    return s / (double)m->N;
}

/* Test parameters: every tensor random at a scale where all its gradient paths matter. */
static void fill_test_params(const gpt_chunk *c, float *params) {
    for (int i = 0; i < c->nparams; i++) {
        const gpt_param *p = &c->params[i];
        for (size_t k = 0; k < p->numel; k++) {
            float z = rng_normal(77, (uint64_t)i, k);
            float v;
            switch (p->kind) {
            case GPT_LN1_W:
            case GPT_LN2_W:
            case GPT_LNF_W: v = 1.0f + 0.2f * z; break;
            case GPT_WTE: v = 0.5f * z; break;
            case GPT_WPE: v = 0.3f * z; break;
            default: v = (p->cols == 1 ? 0.2f : 0.3f) * z; break; /* biases, matrices */
            }
            params[p->offset + k] = v;
        }
    }
}

static void whole_model_gradient_matches_finite_differences(void **state) {
    (void)state;
    const gpt_config cfg = tiny_config();
    const int B = 2, T = 8;
    const size_t N = (size_t)B * (size_t)T;
    char err[256];
    assert_true(gpt_config_check(&cfg, 1, err, sizeof err));
    gpt_shard sh = whole_model(&cfg);
    gpt_chunk *c = malloc(sizeof *c);
    gpt_chunk_init(c, &cfg, &sh, 0);
    float *params = malloc(c->num_elements * sizeof(float));
    float *grads = calloc(c->num_elements, sizeof(float));
    fill_test_params(c, params);
    int32_t tokens[16], targets[16];
    for (size_t n = 0; n < N; n++) {
        tokens[n] = (int32_t)rng_below(5, 1, n, (uint64_t)cfg.real_vocab);
        targets[n] = (int32_t)rng_below(5, 2, n, (uint64_t)cfg.real_vocab);
    }
    gpt_acts *a = gpt_acts_create(c, B, T);
    gpt_scratch *s = gpt_scratch_create(c, B, T);
    model_case m = {c, params, a, tokens, targets, N};

    float loss = gpt_forward(c, params, a, s, tokens, targets, NULL, NULL, NULL);
    assert_true(fabs(loss - model_loss(&m)) <= 1e-6 * fabs(loss)); /* returns the mean */
    gpt_backward(c, params, grads, a, s, NULL, NULL, 1.0f / (float)N, NULL);

    /* Central differences with a step of 1e-2·max(1,|x|): the loss is computed in fp32
     * (rounding ~1e-6 in a loss near 4), so smaller steps would drown in rounding. */
    size_t checked = 0, bad = 0;
    for (int i = 0; i < c->nparams; i++) {
        const gpt_param *p = &c->params[i];
        const size_t samples = p->numel < 12 ? p->numel : 12;
        double gmax = 0.0;
        for (size_t k = 0; k < p->numel; k++) gmax = fmax(gmax, fabs(grads[p->offset + k]));
        if (!(gmax > 0.0)) fail_msg("%s: the whole gradient is zero", p->name);
        for (size_t j = 0; j < samples; j++) {
            size_t k = samples == p->numel ? j : (size_t)rng_below(9, (uint64_t)i, j, p->numel);
            if (p->kind == GPT_WTE && k / p->cols >= (size_t)cfg.real_vocab)
                k %= (size_t)cfg.real_vocab * p->cols; /* padded rows are checked below */
            float *x = &params[p->offset + k], x0 = *x;
            float e = 1e-2f * fmaxf(1.0f, fabsf(x0));
            *x = x0 + e;
            double lp = model_loss(&m);
            *x = x0 - e;
            double lm = model_loss(&m);
            double h = (double)(x0 + e) - (double)(x0 - e);
            *x = x0;
            double fd = (lp - lm) / h, g = grads[p->offset + k];
            checked++;
            if (!(fabs(fd - g) <= 2e-3 * gmax + 1e-2 * fabs(g))) {
                if (bad < 8)
                    fprintf(stderr,
                            "  %s[%zu]: analytic %.7g, finite difference %.7g (max |g| %.3g)\n",
                            p->name, k, g, fd, gmax);
                bad++;
            }
        }
    }
    if (bad)
        fail_msg("%zu of %zu sampled gradient elements disagree with finite differences", bad,
                 checked);

    /* Padded vocabulary rows of the tied embedding: no token, no probability, no gradient. */
    const gpt_param *wte = gpt_chunk_find(c, GPT_WTE, -1);
    for (size_t r = (size_t)cfg.real_vocab; r < wte->rows; r++)
        for (size_t col = 0; col < wte->cols; col++)
            if (grads[wte->offset + r * wte->cols + col] != 0.0f)
                fail_msg("padded wte row %zu got gradient", r);
    /* ... and changing them leaves the loss bit-identical. */
    double l0 = model_loss(&m);
    for (size_t k = (size_t)cfg.real_vocab * wte->cols; k < wte->numel; k++)
        params[wte->offset + k] += 3.0f;
    assert_true(model_loss(&m) == l0);

    gpt_acts_destroy(a);
    gpt_scratch_destroy(s);
    free(params);
    free(grads);
    free(c);
}

static void backward_accumulates_into_the_gradient_buffer(void **state) {
    (void)state;
    const gpt_config cfg = tiny_config();
    const int B = 2, T = 8;
    gpt_shard sh = whole_model(&cfg);
    gpt_chunk *c = malloc(sizeof *c);
    gpt_chunk_init(c, &cfg, &sh, 0);
    float *params = malloc(c->num_elements * sizeof(float));
    float *g1 = calloc(c->num_elements, sizeof(float)),
          *g2 = calloc(c->num_elements, sizeof(float));
    fill_test_params(c, params);
    int32_t tok[16], tgt[16];
    for (int n = 0; n < 16; n++) tok[n] = (int32_t)(n * 7 % 50), tgt[n] = (int32_t)(n * 3 % 50);
    gpt_acts *a = gpt_acts_create(c, B, T);
    gpt_scratch *s = gpt_scratch_create(c, B, T);
    gpt_forward(c, params, a, s, tok, tgt, NULL, NULL, NULL);
    gpt_backward(c, params, g1, a, s, NULL, NULL, 0.5f, NULL);
    gpt_backward(c, params, g2, a, s, NULL, NULL, 0.5f, NULL);
    gpt_backward(c, params, g2, a, s, NULL, NULL, 0.5f, NULL);
    for (size_t k = 0; k < c->num_elements; k++) g1[k] *= 2.0f;
    expect_close(g2, g1, c->num_elements, 1e-7, 1e-5, "two backwards = twice one backward");
    gpt_acts_destroy(a);
    gpt_scratch_destroy(s);
    free(params);
    free(g1);
    free(g2);
    free(c);
}

/* The split backward of the zero-bubble schedules: B of two micro-batches, then their W's in
 * the other order, gives bit for bit the gradients of two fused backwards in the same
 * W order (each element still sums the same terms in the same order), and B alone leaves
 * the gradient buffer untouched. Checked on a middle chunk (no embedding, no head: dx_in
 * from dx_out) and on the whole model (tied wte: head part and embedding part). */
static void split_backward_b_then_w_equals_the_fused_backward(void **state) {
    (void)state;
    const gpt_config cfg = tiny_config();
    const int B = 2, T = 8;
    const size_t N = (size_t)B * T, C = (size_t)cfg.hidden;
    for (int middle = 0; middle < 2; middle++) {
        gpt_shard sh = whole_model(&cfg);
        if (middle) sh.has_embedding = sh.has_head = false;
        gpt_chunk *c = malloc(sizeof *c);
        gpt_chunk_init(c, &cfg, &sh, 0);
        float *params = malloc(c->num_elements * sizeof(float));
        float *fused = calloc(c->num_elements, sizeof(float)),
              *split = calloc(c->num_elements, sizeof(float));
        fill_test_params(c, params);
        int32_t tok[2][16], tgt[2][16];
        float x_in[2][16 * 16], dx_out[2][16 * 16], dx_fused[2][16 * 16], dx_split[2][16 * 16];
        for (int m = 0; m < 2; m++)
            for (size_t n = 0; n < N; n++) {
                tok[m][n] = (int32_t)((n * 7 + 5 * m) % 50),
                tgt[m][n] = (int32_t)((n * 3 + m) % 50);
                for (size_t k = 0; k < C; k++) {
                    x_in[m][n * C + k] = 0.5f * rng_normal(7, 11 + m, n * C + k);
                    dx_out[m][n * C + k] = 0.1f * rng_normal(7, 21 + m, n * C + k);
                }
            }
        gpt_acts *a[2] = {gpt_acts_create(c, B, T), gpt_acts_create(c, B, T)};
        gpt_scratch *s = gpt_scratch_create(c, B, T);
        gpt_wgrad *wg[2] = {gpt_wgrad_create(c, B, T), gpt_wgrad_create(c, B, T)};
        float *out = middle ? malloc(N * C * sizeof(float)) : NULL;
        /* fused, W order 1 then 0 */
        for (int m = 1; m >= 0; m--) {
            gpt_forward(c, params, a[m], s, tok[m], tgt[m], x_in[m], out, NULL);
            gpt_backward(c, params, fused, a[m], s, dx_out[m], middle ? dx_fused[m] : NULL, 0.25f,
                         NULL);
        }
        /* split: forward 0, 1; B 0, B 1; W 1, W 0 */
        for (int m = 0; m < 2; m++)
            gpt_forward(c, params, a[m], s, tok[m], tgt[m], x_in[m], out, NULL);
        for (int m = 0; m < 2; m++)
            gpt_backward_input(c, params, a[m], s, wg[m], dx_out[m], middle ? dx_split[m] : NULL,
                               0.25f, NULL);
        for (size_t k = 0; k < c->num_elements; k++) assert_true(split[k] == 0.0f);
        for (int m = 1; m >= 0; m--) gpt_backward_weight(c, split, a[m], wg[m]);
        assert_memory_equal(split, fused, c->num_elements * sizeof(float));
        if (middle) assert_memory_equal(dx_split, dx_fused, sizeof dx_fused);
        assert_true(gpt_wgrad_bytes(wg[0]) > 0);
        for (int m = 0; m < 2; m++) gpt_acts_destroy(a[m]), gpt_wgrad_destroy(wg[m]);
        gpt_scratch_destroy(s);
        free(out);
        free(params);
        free(fused);
        free(split);
        free(c);
    }
}

/* ------------------------------------------------------------------ parameter table */

/* Elements of one chunk in closed form. Per block, serially:
 *   ln1 2C + qkv (3C·C + 3C) + proj (C·C + C) + ln2 2C + fc (4C·C + 4C) + fcproj (C·4C + C)
 *   = 12C² + 13C.
 * Under tensor parallelism the split tensors shrink by tp and the replicated ones do not:
 *   12C²/tp (all four matrices) + 7C/tp (qkv_b, fc_b) + 6C (two norms, proj_b, fcproj_b).
 * Embedding: wte V/tp·C (on the first and the last stage), wpe T·C (first stage only);
 * head: lnf 2C (last stage only). */
static size_t formula_elements(const gpt_config *cfg, const gpt_shard *sh) {
    const size_t C = (size_t)cfg->hidden, V = (size_t)cfg->vocab_size, T = (size_t)cfg->seq_len;
    const size_t tp = (size_t)sh->tp_size, L = (size_t)(sh->layer_end - sh->layer_begin);
    size_t n = L * (12 * C * C / tp + 7 * C / tp + 6 * C);
    if (sh->has_embedding || sh->has_head) n += V / tp * C;
    if (sh->has_embedding) n += T * C;
    if (sh->has_head) n += 2 * C;
    return n;
}

static void parameter_table_is_contiguous_and_counts_match_the_formula(void **state) {
    (void)state;
    gpt_config cfg = {.vocab_size = 128,
                      .real_vocab = 100,
                      .seq_len = 12,
                      .num_layers = 4,
                      .hidden = 32,
                      .num_heads = 4};
    const size_t C = 32, V = 128, T = 12, L = 4;
    /* The serial count, written out once more without the tp terms. */
    gpt_shard serial = whole_model(&cfg);
    gpt_chunk *c = malloc(sizeof *c);
    gpt_chunk_init(c, &cfg, &serial, 0);
    assert_int_equal(c->num_elements, V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C);
    assert_int_equal(c->nparams, 2 + 12 * (int)L + 2);

    const gpt_shard shards[] = {
        {1, 0, 0, 4, true, true, 1, 0},  {2, 1, 0, 4, true, true, 1, 0},
        {4, 3, 0, 4, true, true, 1, 0},  {2, 0, 0, 2, true, false, 1, 0},
        {2, 1, 2, 4, false, true, 1, 0}, {4, 2, 1, 3, false, false, 1, 0},
        {1, 0, 3, 4, false, true, 1, 0},
    };
    for (size_t si = 0; si < sizeof shards / sizeof shards[0]; si++) {
        const gpt_shard *sh = &shards[si];
        const size_t base = 1000 + 17 * si; /* a chunk need not start at 0 */
        gpt_chunk_init(c, &cfg, sh, base);
        size_t off = base, sum = 0;
        for (int i = 0; i < c->nparams; i++) {
            const gpt_param *p = &c->params[i];
            if (p->offset != off)
                fail_msg("shard %zu: %s starts at %zu, expected %zu", si, p->name, p->offset, off);
            assert_int_equal(p->numel, p->rows * p->cols);
            size_t tp = (size_t)sh->tp_size;
            size_t want_rows = (p->split == SPLIT_ROWS || p->split == SPLIT_QKV) ? p->full_rows / tp
                                                                                 : p->full_rows;
            size_t want_cols = p->split == SPLIT_COLS ? p->full_cols / tp : p->full_cols;
            assert_int_equal(p->rows, want_rows);
            assert_int_equal(p->cols, want_cols);
            off += p->numel;
            sum += p->numel;
        }
        assert_int_equal(c->num_elements, sum);
        if (c->num_elements != formula_elements(&cfg, sh))
            fail_msg("shard %zu (tp %d, layers [%d,%d)): %zu elements, formula says %zu", si,
                     sh->tp_size, sh->layer_begin, sh->layer_end, c->num_elements,
                     formula_elements(&cfg, sh));
        /* Every block tensor is there, with its name and layer. */
        for (int l = sh->layer_begin; l < sh->layer_end; l++)
            for (int k = GPT_LN1_W; k <= GPT_FCPROJ_B; k++) {
                const gpt_param *p = gpt_chunk_find(c, k, l);
                assert_non_null(p);
                char prefix[24];
                snprintf(prefix, sizeof prefix, "blocks.%d.", l);
                assert_true(strncmp(p->name, prefix, strlen(prefix)) == 0);
            }
        assert_true((gpt_chunk_find(c, GPT_WPE, -1) != NULL) == sh->has_embedding);
        assert_true((gpt_chunk_find(c, GPT_LNF_W, -1) != NULL) == sh->has_head);
        assert_null(gpt_chunk_find(c, GPT_QKV_W, sh->layer_end));
    }
    free(c);
}

static void serial_index_maps_are_bijections_over_the_tp_ranks(void **state) {
    (void)state;
    gpt_config cfg = {.vocab_size = 64,
                      .real_vocab = 50,
                      .seq_len = 8,
                      .num_layers = 1,
                      .hidden = 16,
                      .num_heads = 4};
    gpt_chunk *c = malloc(sizeof *c);
    int seen_split[4] = {0};
    for (int tp = 2; tp <= 4; tp *= 2) {
        gpt_shard sh0 = {tp, 0, 0, 1, true, true, 1, 0};
        gpt_chunk_init(c, &cfg, &sh0, 0);
        const int nparams = c->nparams;
        for (int i = 0; i < nparams; i++) {
            gpt_chunk_init(c, &cfg, &sh0, 0);
            const gpt_param p0 = c->params[i];
            const size_t full = p0.full_rows * p0.full_cols;
            int *hits = calloc(full, sizeof(int));
            for (int r = 0; r < tp; r++) {
                gpt_shard sh = sh0;
                sh.tp_rank = r;
                gpt_chunk_init(c, &cfg, &sh, 0);
                const gpt_param *p = &c->params[i];
                for (size_t k = 0; k < p->numel; k++) {
                    size_t s = gpt_param_serial_index(p, &sh, k);
                    if (s >= full)
                        fail_msg("tp %d rank %d %s[%zu] -> %zu outside %zu", tp, r, p->name, k, s,
                                 full);
                    if (p->split == SPLIT_NONE && s != k)
                        fail_msg("replicated %s[%zu] -> %zu", p->name, k, s);
                    hits[s]++;
                }
            }
            int want = p0.split == SPLIT_NONE ? tp : 1; /* replicated: every rank holds all */
            for (size_t s = 0; s < full; s++)
                if (hits[s] != want)
                    fail_msg("tp %d %s: serial element %zu held %d times, expected %d", tp, p0.name,
                             s, hits[s], want);
            seen_split[p0.split] = 1;
            free(hits);
        }
    }
    assert_true(seen_split[SPLIT_NONE] && seen_split[SPLIT_ROWS] && seen_split[SPLIT_COLS] &&
                seen_split[SPLIT_QKV]);

    /* The pictures, at C = 16, tp = 2, rank 1:
     *   SPLIT_QKV  local rows [Q_1; K_1; V_1] (8 each) -> serial rows 8.., 24.., 40..
     *   SPLIT_ROWS local row 0 of fc_w (32 of 64 rows) -> serial row 32
     *   SPLIT_COLS local col 0 of proj_w (8 of 16 cols) -> serial col 8 */
    gpt_shard sh = {.tp_size = 2,
                    .tp_rank = 1,
                    .layer_begin = 0,
                    .layer_end = 1,
                    .has_embedding = true,
                    .has_head = true};
    gpt_chunk_init(c, &cfg, &sh, 0);
    const gpt_param *qkv = gpt_chunk_find(c, GPT_QKV_W, 0), *fc = gpt_chunk_find(c, GPT_FC_W, 0);
    const gpt_param *proj = gpt_chunk_find(c, GPT_PROJ_W, 0),
                    *qkvb = gpt_chunk_find(c, GPT_QKV_B, 0);
    assert_int_equal(gpt_param_serial_index(qkv, &sh, 0), 8 * 16);
    assert_int_equal(gpt_param_serial_index(qkv, &sh, 8 * 16 + 3), 24 * 16 + 3);
    assert_int_equal(gpt_param_serial_index(qkv, &sh, 16 * 16 + 5), 40 * 16 + 5);
    assert_int_equal(gpt_param_serial_index(qkvb, &sh, 9), 25);
    assert_int_equal(gpt_param_serial_index(fc, &sh, 1), 32 * 16 + 1);
    assert_int_equal(gpt_param_serial_index(proj, &sh, 8 + 2), 1 * 16 + 8 + 2);
    free(c);
}

static void tp_shard_initialisation_is_the_slice_of_the_serial_init(void **state) {
    (void)state;
    gpt_config cfg = {.vocab_size = 64,
                      .real_vocab = 50,
                      .seq_len = 8,
                      .num_layers = 2,
                      .hidden = 16,
                      .num_heads = 4};
    const uint64_t seed = 1234;
    gpt_shard ssh = whole_model(&cfg);
    gpt_chunk *serial = malloc(sizeof *serial), *c = malloc(sizeof *c);
    gpt_chunk_init(serial, &cfg, &ssh, 0);
    float *sp = malloc(serial->num_elements * sizeof(float));
    gpt_chunk_init_params(serial, sp, seed);
    const gpt_shard shards[] = {{2, 0, 0, 2, true, true, 1, 0},
                                {2, 1, 0, 2, true, true, 1, 0},
                                {4, 2, 0, 2, true, true, 1, 0},
                                {4, 3, 1, 2, false, true, 1, 0},
                                {1, 0, 1, 2, false, false, 1, 0}};
    for (size_t si = 0; si < sizeof shards / sizeof shards[0]; si++) {
        const size_t base = 5;
        gpt_chunk_init(c, &cfg, &shards[si], base);
        float *buf = malloc((base + c->num_elements) * sizeof(float));
        gpt_chunk_init_params(c, buf, seed);
        for (int i = 0; i < c->nparams; i++) {
            const gpt_param *p = &c->params[i];
            const gpt_param *q = gpt_chunk_find(serial, p->kind, p->layer);
            assert_non_null(q);
            for (size_t k = 0; k < p->numel; k++) {
                float want = sp[q->offset + gpt_param_serial_index(p, &shards[si], k)];
                if (buf[p->offset + k] != want)
                    fail_msg("shard %zu %s[%zu] = %g, serial slice %g", si, p->name, k,
                             (double)buf[p->offset + k], (double)want);
            }
        }
        free(buf);
    }
    /* The serial init itself: unit norm weights, zero biases, small random matrices. */
    const gpt_param *lnw = gpt_chunk_find(serial, GPT_LN1_W, 1),
                    *fcb = gpt_chunk_find(serial, GPT_FC_B, 0);
    const gpt_param *qkv = gpt_chunk_find(serial, GPT_QKV_W, 0);
    for (size_t k = 0; k < lnw->numel; k++) assert_true(sp[lnw->offset + k] == 1.0f);
    for (size_t k = 0; k < fcb->numel; k++) assert_true(sp[fcb->offset + k] == 0.0f);
    double ss = 0;
    for (size_t k = 0; k < qkv->numel; k++) ss += (double)sp[qkv->offset + k] * sp[qkv->offset + k];
    double std = sqrt(ss / (double)qkv->numel);
    if (std < 0.015 || std > 0.025) fail_msg("qkv_w init std %.4f, expected about 0.02", std);
    free(sp);
    free(serial);
    free(c);
}

/* ------------------------------------------------------------------ config checks */

static void expect_rejected(gpt_config cfg, int tp, const char *const *must_contain) {
    char err[512] = "";
    if (gpt_config_check(&cfg, tp, err, sizeof err))
        fail_msg("config with hidden %d heads %d vocab %d/%d tp %d was accepted", cfg.hidden,
                 cfg.num_heads, cfg.vocab_size, cfg.real_vocab, tp);
    for (const char *const *s = must_contain; *s; s++)
        if (!strstr(err, *s)) fail_msg("message \"%s\" does not name \"%s\"", err, *s);
}

static void bad_configs_are_rejected_with_messages_naming_the_values(void **state) {
    (void)state;
    char err[512];
    gpt_config ok = tiny_config();
    assert_true(gpt_config_check(&ok, 1, err, sizeof err));
    assert_true(gpt_config_check(&ok, 2, err, sizeof err));

    gpt_config c = ok;
    c.num_heads = 3; /* 16 % 3 != 0 */
    expect_rejected(c, 1, (const char *const[]){"hidden-size 16", "num-attention-heads 3", NULL});
    c = ok; /* 2 heads cannot be split over 4 ranks */
    expect_rejected(
        c, 4, (const char *const[]){"num-attention-heads 2", "tensor-model-parallel-size 4", NULL});
    c = ok;
    c.vocab_size = 50; /* not padded to a multiple of tp 4 */
    c.num_heads = 4;
    expect_rejected(c, 4, (const char *const[]){"50", "4", NULL});
    c = ok;
    c.vocab_size = 48; /* smaller than the real vocabulary */
    expect_rejected(c, 1, (const char *const[]){"48", "50", NULL});
    c = ok;
    c.num_layers = 0;
    expect_rejected(c, 1, (const char *const[]){"num-layers 0", NULL});

    /* Padding: up to a multiple of divisible_by · tp. */
    assert_int_equal(gpt_padded_vocab(50, 16, 1), 64);
    assert_int_equal(gpt_padded_vocab(50, 16, 4), 64);
    assert_int_equal(gpt_padded_vocab(256, 64, 2), 256);
    assert_int_equal(gpt_padded_vocab(257, 64, 2), 384);
    /* never wrapped: 65536 × 65536 is 0 as int, 2^30 × 2 is past int */
    assert_int_equal(gpt_padded_vocab(256, 65536, 65536), -1);
    assert_int_equal(gpt_padded_vocab(256, 1073741824, 2), -1);
    assert_int_equal(gpt_padded_vocab(256, 2147483647, 1), 2147483647);
    assert_int_equal(gpt_padded_vocab(256, 1073741824, 1), 1073741824);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(whole_model_gradient_matches_finite_differences),
        cmocka_unit_test(backward_accumulates_into_the_gradient_buffer),
        cmocka_unit_test(split_backward_b_then_w_equals_the_fused_backward),
        cmocka_unit_test(parameter_table_is_contiguous_and_counts_match_the_formula),
        cmocka_unit_test(serial_index_maps_are_bijections_over_the_tp_ranks),
        cmocka_unit_test(tp_shard_initialisation_is_the_slice_of_the_serial_init),
        cmocka_unit_test(bad_configs_are_rejected_with_messages_naming_the_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
