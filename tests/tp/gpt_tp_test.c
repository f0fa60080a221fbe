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

static chunk_run *run_make(const gpt_config *cfg, int tp_size, int tp_rank, int l0, int l1,
                           bool emb, bool head) {
    chunk_run *r = calloc(1, sizeof *r);
    gpt_shard sh = {tp_size, tp_rank, l0, l1, emb, head};
    char err[256];
    if (!gpt_config_check(cfg, tp_size, err, sizeof err)) fail_msg("%s", err);
    gpt_chunk_init(&r->c, cfg, &sh, 0);
    r->params = malloc(r->c.num_elements * sizeof(float));
    r->grads = calloc(r->c.num_elements, sizeof(float));
    fill_params(&r->c, r->params);
    r->a = gpt_acts_create(&r->c, B, T);
    r->s = gpt_scratch_create(&r->c, B, T);
    return r;
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
    if (bwd.all_gather_calls || bwd.other_calls)
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
        if (fwd.all_gather_calls || fwd.other_calls)
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

int main(int argc, char **argv) {
    mpi_test_launch(argc, argv, WORLD);
    tp_fixture_init(&argc, &argv, WORLD);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_block_chunk_with_embedding_and_head_matches_tp1),
        cmocka_unit_test(middle_chunk_output_and_input_gradient_match_tp1),
        cmocka_unit_test(one_micro_batch_moves_exactly_the_formulas_bytes),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    return tp_fixture_finish(rc);
}
