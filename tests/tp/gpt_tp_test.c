/* gpt_tp_test.c — a GPT chunk at tp = WORLD against the same chunk at tp = 1, and the exact
 * traffic of one micro-batch through it (binaries for WORLD = 1, 2 and 4).
 *
 * Both chunks get the same parameters: every element is a pure function of (kind, layer,
 * serial index), so the TP shard holds exactly its slice of the serial tensors (the TP
 * rank finds its slice through gpt_param_serial_index). Parameters are drawn at O(0.1..1)
 * scale with non-zero biases and non-unit norms, so that a bias added p times or a gradient
 * missing its all-reduce shows up. Compared: the loss and per-position losses, the chunk
 * output and input gradient (a middle chunk), and every parameter gradient element.
 *
 * The same with sequence parallelism (--sequence-parallel, src/model/gpt.h): inputs, outputs
 * and their gradients are this rank's positions of the serial ones; after the LayerNorms'
 * gradients are summed over TP (what the optimizer does), every gradient is the serial one;
 * the traffic is the formula's all-gathers and reduce-scatters; the activations kept shrink
 * by exactly the replicated tensors' (p−1)/p.
 *
 * Not here: multi-step training at several layouts (tests/train/ does that).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/rng.h"
#include "src/model/gpt.h"
#include "src/runtime/comm.h"
#include "tests/support/testing.h"
#include "tests/tp/tp_fixture.h"

#ifndef WORLD
#define WORLD 2
#endif

enum { B = 2, T = 8 };
#define NPOS ((size_t)B * (size_t)T)

static gpt_config test_config(int layers) {
    gpt_config cfg = {.vocab_size = 64,
                      .real_vocab = 50,
                      .seq_len = T,
                      .num_layers = layers,
                      .hidden = 16,
                      .num_heads = 4};
    return cfg;
}

static float test_value(int kind, int layer, size_t si) {
    float z = rng_normal(99, (uint64_t)kind * 1000u + (uint64_t)(layer + 1), si);
    switch (kind) {
    case GPT_LN1_W:
    case GPT_LN2_W:
    case GPT_LNF_W: return 1.0f + 0.2f * z;
    case GPT_WTE: return 0.5f * z;
    case GPT_WPE: return 0.3f * z;
    case GPT_QKV_B:
    case GPT_PROJ_B:
    case GPT_FC_B:
    case GPT_FCPROJ_B:
    case GPT_LN1_B:
    case GPT_LN2_B:
    case GPT_LNF_B: return 0.2f * z;
    default: return 0.3f * z;
    }
}

static void fill_params(const gpt_chunk *c, float *params) {
    for (int i = 0; i < c->nparams; i++) {
        const gpt_param *p = &c->params[i];
        for (size_t k = 0; k < p->numel; k++)
            params[p->offset + k] = test_value(p->kind, p->layer,
                                               gpt_param_serial_index(p, &c->shard, k));
    }
}

/* One chunk with its buffers. */
typedef struct {
    gpt_chunk c;
    float *params, *grads;
    gpt_acts *a;
    gpt_scratch *s;
} chunk_run;

static chunk_run *run_make_sp(const gpt_config *cfg, int tp_size, int tp_rank, int l0, int l1,
                              bool emb, bool head, bool sp) {
    chunk_run *r = calloc(1, sizeof *r);
    gpt_shard sh = {.tp_size = tp_size,
                    .tp_rank = tp_rank,
                    .layer_begin = l0,
                    .layer_end = l1,
                    .has_embedding = emb,
                    .has_head = head};
    char err[256];
    if (!gpt_config_check(cfg, tp_size, err, sizeof err)) fail_msg("%s", err);
    gpt_chunk_init(&r->c, cfg, &sh, 0);
    gpt_chunk_set_sequence_parallel(&r->c, sp);
    r->params = malloc(r->c.num_elements * sizeof(float));
    r->grads = calloc(r->c.num_elements, sizeof(float));
    fill_params(&r->c, r->params);
    r->a = gpt_acts_create(&r->c, B, T);
    r->s = gpt_scratch_create(&r->c, B, T);
    return r;
}

static chunk_run *run_make(const gpt_config *cfg, int tp_size, int tp_rank, int l0, int l1,
                           bool emb, bool head) {
    return run_make_sp(cfg, tp_size, tp_rank, l0, l1, emb, head, false);
}

static void run_free(chunk_run *r) {
    gpt_acts_destroy(r->a);
    gpt_scratch_destroy(r->s);
    free(r->params);
    free(r->grads);
    free(r);
}

static void make_tokens(int32_t *tokens, int32_t *targets, int real_vocab) {
    for (size_t n = 0; n < NPOS; n++) {
        tokens[n] = (int32_t)rng_below(3, 1, n, (uint64_t)real_vocab);
        targets[n] = (int32_t)rng_below(3, 2, n, (uint64_t)real_vocab);
    }
    targets[0] = real_vocab - 1; /* the last real token: held by the last TP rank */
    tokens[1] = real_vocab - 1;
}

/* Every local gradient element against the serial gradient at its serial index. */
static void expect_grads_match(const chunk_run *par, const chunk_run *ser) {
    for (int i = 0; i < par->c.nparams; i++) {
        const gpt_param *p = &par->c.params[i];
        const gpt_param *q = gpt_chunk_find(&ser->c, p->kind, p->layer);
        assert_non_null(q);
        float *want = malloc(p->numel * sizeof(float));
        double gmax = 0;
        for (size_t k = 0; k < q->numel; k++) gmax = fmax(gmax, fabs(ser->grads[q->offset + k]));
        for (size_t k = 0; k < p->numel; k++)
            want[k] = ser->grads[q->offset + gpt_param_serial_index(p, &par->c.shard, k)];
        char what[80];
        snprintf(what, sizeof what, "tp %d rank %d grad %s", par->c.shard.tp_size,
                 par->c.shard.tp_rank, p->name);
        expect_close(par->grads + p->offset, want, p->numel, 1e-7 + 1e-5 * gmax, 1e-4, what);
        free(want);
    }
}

static void one_block_chunk_with_embedding_and_head_matches_tp1(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const int p = tp_fixture_size(), r = tp_fixture_rank();
    const gpt_config cfg = test_config(1);
    chunk_run *ser = run_make(&cfg, 1, 0, 0, 1, true, true);
    chunk_run *par = run_make(&cfg, p, r, 0, 1, true, true);
    int32_t tokens[NPOS], targets[NPOS];
    make_tokens(tokens, targets, cfg.real_vocab);

    float ls = gpt_forward(&ser->c, ser->params, ser->a, ser->s, tokens, targets, NULL, NULL, NULL);
    float lp = gpt_forward(&par->c, par->params, par->a, par->s, tokens, targets, NULL, NULL, tp);
    if (!(fabs((double)lp - ls) <= 1e-5 * fabs(ls)))
        fail_msg("loss %.9g at tp %d, %.9g at tp 1", (double)lp, p, (double)ls);
    expect_close(gpt_acts_losses(par->a), gpt_acts_losses(ser->a), NPOS, 1e-6, 1e-5,
                 "per-position losses");

    const float dloss = 1.0f / (float)NPOS;
    gpt_backward(&ser->c, ser->params, ser->grads, ser->a, ser->s, NULL, NULL, dloss, NULL);
    gpt_backward(&par->c, par->params, par->grads, par->a, par->s, NULL, NULL, dloss, tp);
    expect_grads_match(par, ser);
    /* Padded vocabulary rows held by this rank get no gradient. */
    const gpt_param *wte = gpt_chunk_find(&par->c, GPT_WTE, -1);
    for (size_t k = 0; k < wte->numel; k++)
        if (gpt_param_serial_index(wte, &par->c.shard, k) / wte->cols >= (size_t)cfg.real_vocab &&
            par->grads[wte->offset + k] != 0.0f)
            fail_msg("padded wte element %zu got gradient", k);
    run_free(ser);
    run_free(par);
}

/* A middle pipeline chunk (two blocks, no embedding, no head): output and input gradient. */
static void middle_chunk_output_and_input_gradient_match_tp1(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const int p = tp_fixture_size(), r = tp_fixture_rank();
    const gpt_config cfg = test_config(4);
    const size_t C = (size_t)cfg.hidden, n = NPOS * C;
    chunk_run *ser = run_make(&cfg, 1, 0, 1, 3, false, false);
    chunk_run *par = run_make(&cfg, p, r, 1, 3, false, false);
    float *x_in = tp_fixture_fill(NULL, n, 50, 1.0f), *dx_out = tp_fixture_fill(NULL, n, 51, 1.0f);
    float *ys = malloc(n * sizeof(float)), *yp = malloc(n * sizeof(float));
    float *dxs = malloc(n * sizeof(float)), *dxp = malloc(n * sizeof(float));
    gpt_forward(&ser->c, ser->params, ser->a, ser->s, NULL, NULL, x_in, ys, NULL);
    gpt_forward(&par->c, par->params, par->a, par->s, NULL, NULL, x_in, yp, tp);
    expect_close(yp, ys, n, 1e-5, 1e-4, "chunk output");
    gpt_backward(&ser->c, ser->params, ser->grads, ser->a, ser->s, dx_out, dxs, 0.0f, NULL);
    gpt_backward(&par->c, par->params, par->grads, par->a, par->s, dx_out, dxp, 0.0f, tp);
    expect_close(dxp, dxs, n, 1e-5, 1e-4, "chunk input gradient");
    expect_grads_match(par, ser);
    free(x_in);
    free(dx_out);
    free(ys);
    free(yp);
    free(dxs);
    free(dxp);
    run_free(ser);
    run_free(par);
}

/* Traffic of one micro-batch (N = B·T positions, hidden C, L blocks) through a chunk at
 * tp = p > 1, all on the TP group and all of it all-reduces of fp32 (4 bytes):
 *
 *   forward   embedding  g          1 × N·C      (first stage)
 *             per block  g, g       2 × N·C      (after proj, after fcproj)
 *             head       max, target logit, sum-exp   3 × N   (last stage)
 *   backward  head       f          1 × N·C      (gradient of the final norm's output)
 *             per block  f, f       2 × N·C      (before fc, before qkv)
 *             embedding  -          nothing      (g's backward is the identity)
 *
 * A whole chunk: forward 2L + 4 calls, 4·(N·C·(2L + 1) + 3N) bytes;
 *                backward 2L + 1 calls, 4·N·C·(2L + 1) bytes.
 * At tp = 1 nothing moves at all. No all-gather ever: the logits stay split. */
static void expect_chunk_traffic(bool emb, bool head, int L, size_t C, size_t fwd_calls_seen,
                                 size_t fwd_bytes_seen, tp_traffic bwd, const char *what) {
    const size_t p = (size_t)tp_fixture_size(), N = NPOS, f = sizeof(float);
    size_t fc = 2 * (size_t)L + (emb ? 1 : 0) + (head ? 3 : 0);
    size_t fb = f * (N * C * (2 * (size_t)L + (emb ? 1 : 0)) + (head ? 3 * N : 0));
    size_t bc = 2 * (size_t)L + (head ? 1 : 0);
    size_t bb = f * N * C * (2 * (size_t)L + (head ? 1 : 0));
    if (p == 1) fc = fb = bc = bb = 0;
    if (fwd_calls_seen != fc || fwd_bytes_seen != fb)
        fail_msg("%s forward: %zu all-reduces, %zu bytes; formula %zu, %zu", what, fwd_calls_seen,
                 fwd_bytes_seen, fc, fb);
    if (bwd.all_reduce_calls != bc || bwd.all_reduce_bytes != bb)
        fail_msg("%s backward: %zu all-reduces, %zu bytes; formula %zu, %zu", what,
                 bwd.all_reduce_calls, bwd.all_reduce_bytes, bc, bb);
    if (bwd.all_gather_calls || bwd.reduce_scatter_calls || bwd.other_calls)
        fail_msg("%s backward: unexpected collectives", what);
}

static void one_micro_batch_moves_exactly_the_formulas_bytes(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const int p = tp_fixture_size(), r = tp_fixture_rank();
    const gpt_config cfg = test_config(3);
    const size_t n = NPOS * (size_t)cfg.hidden;
    int32_t tokens[NPOS], targets[NPOS];
    make_tokens(tokens, targets, cfg.real_vocab);
    float *x = tp_fixture_fill(NULL, n, 60, 1.0f), *y = malloc(n * sizeof(float)),
          *dx = malloc(n * sizeof(float));
    struct {
        int l0, l1;
        bool emb, head;
        const char *name;
    } cases[] = {
        {0, 3, true, true, "whole 3-block chunk"},   {0, 1, false, false, "1 middle block"},
        {0, 3, false, false, "3 middle blocks"},     {0, 2, true, false, "first stage, 2 blocks"},
        {1, 3, false, true, "last stage, 2 blocks"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        chunk_run *par = run_make(&cfg, p, r, cases[i].l0, cases[i].l1, cases[i].emb,
                                  cases[i].head);
        tp_traffic_reset();
        gpt_forward(&par->c, par->params, par->a, par->s, tokens, targets, x,
                    cases[i].head ? NULL : y, tp);
        tp_traffic fwd = tp_traffic_get();
        size_t counter_bytes = comm_bytes_collective(tp), counter_calls = comm_calls(tp);
        if (fwd.all_gather_calls || fwd.reduce_scatter_calls || fwd.other_calls)
            fail_msg("%s forward: collectives other than all-reduce", cases[i].name);
        if (p > 1 &&
            (counter_bytes != fwd.all_reduce_bytes || counter_calls != fwd.all_reduce_calls))
            fail_msg("%s: group counters (%zu B, %zu calls) disagree with the trace", cases[i].name,
                     counter_bytes, counter_calls);
        tp_traffic_reset();
        gpt_backward(&par->c, par->params, par->grads, par->a, par->s, y, cases[i].emb ? NULL : dx,
                     1.0f, tp);
        tp_traffic bwd = tp_traffic_get();
        expect_chunk_traffic(cases[i].emb, cases[i].head, cases[i].l1 - cases[i].l0,
                             (size_t)cfg.hidden, fwd.all_reduce_calls, fwd.all_reduce_bytes, bwd,
                             cases[i].name);
        /* Blocks alone: exactly two all-reduces forward (g, g) and two backward (f, f) each. */
        const size_t blocks = (size_t)(cases[i].l1 - cases[i].l0);
        if (p > 1 && !cases[i].emb && !cases[i].head &&
            (fwd.all_reduce_calls != 2 * blocks || bwd.all_reduce_calls != 2 * blocks))
            fail_msg("%s: %zu forward and %zu backward all-reduces for %zu blocks", cases[i].name,
                     fwd.all_reduce_calls, bwd.all_reduce_calls, blocks);
        run_free(par);
    }
    free(x);
    free(y);
    free(dx);
}

/* ---------------------------------------------------------------- sequence parallelism */

/* This rank's positions (B, T/p, C) of a whole (B, T, C). */
static void own_positions(float *out, const float *whole, size_t C) {
    const size_t p = (size_t)tp_fixture_size(), r = (size_t)tp_fixture_rank(), Tl = T / p;
    for (size_t b = 0; b < B; b++)
        memcpy(out + b * Tl * C, whole + (b * T + r * Tl) * C, Tl * C * sizeof(float));
}

/* What the optimizer does first with sequence parallelism: the gradients of the parameters
 * marked sequence_parallel (each rank's sum over its own positions) summed over TP. */
static void sum_sequence_parallel_grads(chunk_run *r, comm_group *tp) {
    for (int i = 0; i < r->c.nparams; i++) {
        const gpt_param *p = &r->c.params[i];
        const bool layernorm = p->kind == GPT_LN1_W || p->kind == GPT_LN1_B ||
                               p->kind == GPT_LN2_W || p->kind == GPT_LN2_B ||
                               p->kind == GPT_LNF_W || p->kind == GPT_LNF_B;
        if (p->sequence_parallel != (layernorm && tp_fixture_size() > 1))
            fail_msg("%s: marked sequence_parallel %d", p->name, p->sequence_parallel);
        if (p->sequence_parallel)
            comm_all_reduce(tp, r->grads + p->offset, p->numel, COMM_FLOAT32, COMM_SUM);
    }
}

static void sequence_parallel_chunk_with_embedding_and_head_matches_tp1(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const int p = tp_fixture_size(), r = tp_fixture_rank();
    const gpt_config cfg = test_config(2);
    chunk_run *ser = run_make(&cfg, 1, 0, 0, 2, true, true);
    chunk_run *par = run_make_sp(&cfg, p, r, 0, 2, true, true, true);
    assert_int_equal(par->c.features.sequence_parallel, p > 1); /* off at tp 1, as in Megatron */
    int32_t tokens[NPOS], targets[NPOS];
    make_tokens(tokens, targets, cfg.real_vocab);
    float ls = gpt_forward(&ser->c, ser->params, ser->a, ser->s, tokens, targets, NULL, NULL, NULL);
    float lp = gpt_forward(&par->c, par->params, par->a, par->s, tokens, targets, NULL, NULL, tp);
    if (!(fabs((double)lp - ls) <= 1e-5 * fabs(ls)))
        fail_msg("loss %.9g at tp %d with sequence parallelism, %.9g at tp 1", (double)lp, p,
                 (double)ls);
    expect_close(gpt_acts_losses(par->a), gpt_acts_losses(ser->a), NPOS, 1e-6, 1e-5,
                 "per-position losses (every position, on every rank)");
    const float dloss = 1.0f / (float)NPOS;
    gpt_backward(&ser->c, ser->params, ser->grads, ser->a, ser->s, NULL, NULL, dloss, NULL);
    gpt_backward(&par->c, par->params, par->grads, par->a, par->s, NULL, NULL, dloss, tp);
    sum_sequence_parallel_grads(par, tp);
    expect_grads_match(par, ser);
    run_free(ser);
    run_free(par);
}

/* A middle chunk: it gets and gives this rank's positions, forward and backward. */
static void sequence_parallel_middle_chunk_works_on_its_positions(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const int p = tp_fixture_size(), r = tp_fixture_rank();
    const gpt_config cfg = test_config(4);
    const size_t C = (size_t)cfg.hidden, n = NPOS * C, nl = n / (size_t)p;
    chunk_run *ser = run_make(&cfg, 1, 0, 1, 3, false, false);
    chunk_run *par = run_make_sp(&cfg, p, r, 1, 3, false, false, true);
    assert_int_equal(gpt_residual_rows(&par->c, B, T), NPOS / (size_t)p);
    float *x_in = tp_fixture_fill(NULL, n, 50, 1.0f), *dx_out = tp_fixture_fill(NULL, n, 51, 1.0f);
    float *ys = malloc(n * 4), *dxs = malloc(n * 4), *want = malloc(nl * 4);
    float *x_mine = malloc(nl * 4), *dy_mine = malloc(nl * 4), *yp = malloc(nl * 4);
    float *dxp = malloc(nl * 4);
    own_positions(x_mine, x_in, C);
    own_positions(dy_mine, dx_out, C);
    gpt_forward(&ser->c, ser->params, ser->a, ser->s, NULL, NULL, x_in, ys, NULL);
    gpt_forward(&par->c, par->params, par->a, par->s, NULL, NULL, x_mine, yp, tp);
    own_positions(want, ys, C);
    expect_close(yp, want, nl, 1e-5, 1e-4, "chunk output at this rank's positions");
    gpt_backward(&ser->c, ser->params, ser->grads, ser->a, ser->s, dx_out, dxs, 0.0f, NULL);
    gpt_backward(&par->c, par->params, par->grads, par->a, par->s, dy_mine, dxp, 0.0f, tp);
    own_positions(want, dxs, C);
    expect_close(dxp, want, nl, 1e-5, 1e-4, "chunk input gradient at this rank's positions");
    sum_sequence_parallel_grads(par, tp);
    expect_grads_match(par, ser);
    free(x_in), free(dx_out), free(ys), free(dxs), free(want);
    free(x_mine), free(dy_mine), free(yp), free(dxp);
    run_free(ser);
    run_free(par);
}

/* Traffic of one micro-batch with sequence parallelism at tp = p > 1. Every event counts a
 * whole (N,C) buffer (comm.h: the gathered or the scattered one), 4·N·C bytes:
 *
 *   forward   embedding  ḡ                         1 reduce-scatter
 *             per block  g, ḡ, g, ḡ                2 all-gathers, 2 reduce-scatters
 *             head       g; max, target, sum-exp   1 all-gather; 3 all-reduces of N
 *   backward  head       g's backward + regather   1 reduce-scatter, 1 all-gather
 *             per block  ḡ's backward (dY) ×2,     4 all-gathers, 2 reduce-scatters
 *                        g's backward ×2 + the inputs of qkv and fc gathered again for W
 *             embedding  ḡ's backward              1 all-gather
 *
 * Forward it moves what plain TP moves (a reduce-scatter plus an all-gather is an
 * all-reduce); backward the two gathers of the column-parallel inputs are extra, the price
 * of keeping only the shard (Korthikanti et al. do the same). */
static void sequence_parallel_micro_batch_moves_exactly_the_formulas_bytes(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const int p = tp_fixture_size(), r = tp_fixture_rank();
    const gpt_config cfg = test_config(3);
    const size_t C = (size_t)cfg.hidden, n = NPOS * C, nl = n / (size_t)p, on = p > 1;
    int32_t tokens[NPOS], targets[NPOS];
    make_tokens(tokens, targets, cfg.real_vocab);
    float *x = tp_fixture_fill(NULL, nl, 60, 1.0f), *y = malloc(nl * 4), *dx = malloc(nl * 4);
    const struct {
        int l0, l1;
        bool emb, head;
    } cases[] = {{0, 3, true, true}, {0, 2, false, false}};
    for (int i = 0; i < 2; i++) {
        chunk_run *par = run_make_sp(&cfg, p, r, cases[i].l0, cases[i].l1, cases[i].emb,
                                     cases[i].head, true);
        const size_t L = (size_t)(cases[i].l1 - cases[i].l0), e = cases[i].emb, h = cases[i].head;
        tp_traffic_reset();
        gpt_forward(&par->c, par->params, par->a, par->s, tokens, targets, x, h ? NULL : y, tp);
        tp_traffic f = tp_traffic_get();
        tp_traffic_reset();
        gpt_backward(&par->c, par->params, par->grads, par->a, par->s, y, e ? NULL : dx, 1.0f, tp);
        tp_traffic b = tp_traffic_get();
        const size_t want[8] = {on * (2 * L + h),
                                on * (2 * L + e),
                                on * 3 * h,
                                on * (4 * L + h + e),
                                on * (2 * L + h),
                                0,
                                0,
                                0};
        const size_t got[8] = {f.all_gather_calls, f.reduce_scatter_calls, f.all_reduce_calls,
                               b.all_gather_calls, b.reduce_scatter_calls, b.all_reduce_calls,
                               f.other_calls,      b.other_calls};
        for (int k = 0; k < 8; k++)
            if (got[k] != want[k])
                fail_msg("chunk %d: count %d of [fwd ag, rs, ar, bwd ag, rs, ar, other] is %zu, "
                         "formula %zu",
                         i, k, got[k], want[k]);
        if (f.all_gather_bytes != f.all_gather_calls * n * 4 ||
            f.reduce_scatter_bytes != f.reduce_scatter_calls * n * 4 ||
            b.all_gather_bytes != b.all_gather_calls * n * 4 ||
            b.reduce_scatter_bytes != b.reduce_scatter_calls * n * 4 ||
            f.all_reduce_bytes != f.all_reduce_calls * NPOS * 4)
            fail_msg("chunk %d: an event is not of the whole (N,C) (or N) buffer", i);
        run_free(par);
    }
    free(x), free(y), free(dx);
}

/* The activations kept per micro-batch shrink by what sequence parallelism cuts: the block
 * inputs, LayerNorm outputs, x_mid and the LayerNorm statistics (and the head's LNf), from
 * N to N/p rows; the TP region (qkv, att, atty, fch, fch_gelu) and the logits stay. */
static size_t r16(size_t n) { return (n + 15) / 16 * 16; } /* the activation cursor's rounding */

static void sequence_parallel_keeps_the_replicated_activations_on_1_over_p(void **state) {
    (void)state;
    const int p = tp_fixture_size(), r = tp_fixture_rank();
    const gpt_config cfg = test_config(3);
    const size_t C = (size_t)cfg.hidden, L = 3, N = NPOS, Nr = N / (size_t)p;
    chunk_run *tpr = run_make(&cfg, p, r, 0, 3, true, true);
    chunk_run *spr = run_make_sp(&cfg, p, r, 0, 3, true, true, true);
    /* per block x, ln1, x_mid, ln2 (rows × C) and 4 statistics (rows); plus x[L], LNf and its
     * two statistics */
    const size_t whole = (L * 4 + 2) * r16(N * C) + (L * 4 + 2) * r16(N);
    const size_t shard = (L * 4 + 2) * r16(Nr * C) + (L * 4 + 2) * r16(Nr);
    const size_t a = gpt_acts_bytes(tpr->a), b = gpt_acts_bytes(spr->a);
    if (a - b != 4 * (whole - shard))
        fail_msg("tp %d: %zu activation bytes without sequence parallelism, %zu with: saved %zu, "
                 "expected %zu",
                 p, a, b, a - b, 4 * (whole - shard));
    run_free(tpr);
    run_free(spr);
}

int main(int argc, char **argv) {
    mpi_test_launch(argc, argv, WORLD);
    tp_fixture_init(&argc, &argv, WORLD);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_block_chunk_with_embedding_and_head_matches_tp1),
        cmocka_unit_test(middle_chunk_output_and_input_gradient_match_tp1),
        cmocka_unit_test(one_micro_batch_moves_exactly_the_formulas_bytes),
        cmocka_unit_test(sequence_parallel_chunk_with_embedding_and_head_matches_tp1),
        cmocka_unit_test(sequence_parallel_middle_chunk_works_on_its_positions),
        cmocka_unit_test(sequence_parallel_micro_batch_moves_exactly_the_formulas_bytes),
        cmocka_unit_test(sequence_parallel_keeps_the_replicated_activations_on_1_over_p),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    return tp_fixture_finish(rc);
}
