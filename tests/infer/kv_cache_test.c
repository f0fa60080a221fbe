/* kv_cache_test.c — the cached forward computes what the full forward computes.
 *
 * - a prefill of the whole window gives, at every position, the logits gpt_forward gives;
 * - a short prefill then one position at a time (the decode path) gives the same logits;
 * - the same for a pipeline chunk in the middle (x_in -> x_out) chained with a last chunk;
 * - an MoE model (4 experts, top-2, dropless): the blocks run the MoE layer on the new rows,
 *   and prefill + decoding, alone and over two pipeline stages, give gpt_forward's logits;
 * - positions past the context end the process with a message naming them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/rng.h"
#include "src/infer/kv_cache.h"
#include "src/model/gpt.h"
#include "src/model/local_model.h"
#include "tests/support/testing.h"

enum { T = 24, L = 3, C = 32, NH = 4 };

static gpt_config model_config(void) {
    gpt_config g = {.vocab_size = gpt_padded_vocab(256, 128, 1),
                    .real_vocab = 256,
                    .seq_len = T,
                    .num_layers = L,
                    .hidden = C,
                    .num_heads = NH};
    return g;
}

static void tokens_of(int32_t *tok, int n, uint64_t seed) {
    for (int i = 0; i < n; i++) tok[i] = (int32_t)rng_below(seed, 7, (uint64_t)i, 256);
}

/* logits (T, V) of gpt_forward over the whole window of a serial model */
static float *full_logits(const local_model *m, const int32_t *tok) {
    const gpt_chunk *c = &m->chunks[0];
    gpt_acts *a = gpt_acts_create(c, 1, T);
    gpt_forward(c, m->params, a, NULL, tok, tok, NULL, NULL, NULL);
    float *out = malloc((size_t)T * c->Vl * sizeof(float));
    memcpy(out, gpt_acts_logits(a), (size_t)T * c->Vl * sizeof(float));
    gpt_acts_destroy(a);
    return out;
}

static void prefill_matches_full_forward(void **state) {
    (void)state;
    gpt_config g = model_config();
    local_model *m = local_model_create(&g, 1, 0, 1, 0, 1, NULL, 11);
    int32_t tok[T];
    tokens_of(tok, T, 1);
    float *want = full_logits(m, tok);
    const gpt_chunk *c = &m->chunks[0];
    kv_cache *kv = kv_cache_create(c, T);
    float *got = malloc((size_t)T * c->Vl * sizeof(float)), *last = malloc(c->Vl * sizeof(float));
    kv_cache_forward(c, m->params, kv, tok, NULL, NULL, last, got, T, NULL);
    assert_int_equal(kv_cache_length(kv), T);
    expect_close(got, want, (size_t)T * c->Vl, 1e-5, 1e-4, "prefill logits");
    expect_close(last, want + (size_t)(T - 1) * c->Vl, c->Vl, 1e-5, 1e-4, "last position logits");
    free(got);
    free(last);
    free(want);
    kv_cache_destroy(kv);
    local_model_destroy(m);
}

static void decoding_one_position_at_a_time_matches_full_forward(void **state) {
    (void)state;
    gpt_config g = model_config();
    local_model *m = local_model_create(&g, 1, 0, 1, 0, 1, NULL, 12);
    int32_t tok[T];
    tokens_of(tok, T, 2);
    float *want = full_logits(m, tok);
    const gpt_chunk *c = &m->chunks[0];
    const int P = 5;
    kv_cache *kv = kv_cache_create(c, P);
    float *got = malloc((size_t)P * c->Vl * sizeof(float));
    kv_cache_forward(c, m->params, kv, tok, NULL, NULL, NULL, got, P, NULL);
    expect_close(got, want, (size_t)P * c->Vl, 1e-5, 1e-4, "prefill of 5");
    for (int p = P; p < T; p++) {
        kv_cache_forward(c, m->params, kv, tok + p, NULL, NULL, got, NULL, 1, NULL);
        char what[64];
        snprintf(what, sizeof what, "decoded position %d", p);
        expect_close(got, want + (size_t)p * c->Vl, c->Vl, 1e-5, 1e-4, what);
    }
    kv_cache_reset(kv);
    assert_int_equal(kv_cache_length(kv), 0);
    free(got);
    free(want);
    kv_cache_destroy(kv);
    local_model_destroy(m);
}

/* Two pipeline stages in one process: stage 0 (embedding + 2 blocks) hands its (n,C) output to
 * stage 1 (1 block + head), one position at a time after a prefill. */
static void pipeline_stages_chained_match_the_serial_model(void **state) {
    (void)state;
    gpt_config g = model_config();
    const int layers[2] = {2, 1};
    local_model *serial = local_model_create(&g, 1, 0, 1, 0, 1, NULL, 13);
    local_model *s0 = local_model_create(&g, 1, 0, 2, 0, 1, layers, 13);
    local_model *s1 = local_model_create(&g, 1, 0, 2, 1, 1, layers, 13);
    int32_t tok[T];
    tokens_of(tok, T, 3);
    float *want = full_logits(serial, tok);
    const gpt_chunk *c0 = &s0->chunks[0], *c1 = &s1->chunks[0];
    const int P = 4;
    kv_cache *k0 = kv_cache_create(c0, P), *k1 = kv_cache_create(c1, P);
    float *x = calloc((size_t)P * C, sizeof(float)), *logits = malloc(c1->Vl * sizeof(float));
    for (int p = 0; p < T;) {
        int n = p == 0 ? P : 1;
        kv_cache_forward(c0, s0->params, k0, tok + p, NULL, x, NULL, NULL, n, NULL);
        kv_cache_forward(c1, s1->params, k1, NULL, x, NULL, logits, NULL, n, NULL);
        p += n;
        expect_close(logits, want + (size_t)(p - 1) * c1->Vl, c1->Vl, 1e-5, 1e-4, "two stages");
    }
    free(x);
    free(logits);
    free(want);
    kv_cache_destroy(k0);
    kv_cache_destroy(k1);
    local_model_destroy(serial);
    local_model_destroy(s0);
    local_model_destroy(s1);
}

/* The model with 4 experts per block, top-2 routing, dropless (a token's experts do not depend
 * on the other tokens of the call, so one position at a time routes as the whole window does). */
static gpt_config moe_model_config(void) {
    gpt_config g = model_config();
    g.num_experts = 4;
    g.moe_topk = 2;
    g.moe_aux_loss_coeff = 0.01f;
    return g;
}

static void an_moe_model_decodes_as_its_full_forward(void **state) {
    (void)state;
    gpt_config g = moe_model_config();
    local_model *m = local_model_create(&g, 1, 0, 1, 0, 1, NULL, 15);
    int32_t tok[T];
    tokens_of(tok, T, 5);
    float *want = full_logits(m, tok);
    const gpt_chunk *c = &m->chunks[0];
    const int P = 6;
    kv_cache *kv = kv_cache_create(c, P);
    float *got = malloc((size_t)P * c->Vl * sizeof(float));
    kv_cache_forward(c, m->params, kv, tok, NULL, NULL, NULL, got, P, NULL);
    expect_close(got, want, (size_t)P * c->Vl, 1e-5, 1e-4, "MoE prefill of 6");
    for (int p = P; p < T;) { /* 1 position, then 3 (fewer rows than the work space), ... */
        const int n = (p % 2 == 0 && p + 3 <= T) ? 3 : 1;
        kv_cache_forward(c, m->params, kv, tok + p, NULL, NULL, NULL, got, n, NULL);
        char what[64];
        snprintf(what, sizeof what, "MoE positions %d..%d", p, p + n - 1);
        expect_close(got, want + (size_t)p * c->Vl, (size_t)n * c->Vl, 1e-5, 1e-4, what);
        p += n;
    }
    free(got);
    free(want);
    kv_cache_destroy(kv);
    local_model_destroy(m);
}

static void moe_pipeline_stages_chained_match_the_serial_model(void **state) {
    (void)state;
    gpt_config g = moe_model_config();
    const int layers[2] = {1, 2};
    local_model *serial = local_model_create(&g, 1, 0, 1, 0, 1, NULL, 16);
    local_model *s0 = local_model_create(&g, 1, 0, 2, 0, 1, layers, 16);
    local_model *s1 = local_model_create(&g, 1, 0, 2, 1, 1, layers, 16);
    int32_t tok[T];
    tokens_of(tok, T, 6);
    float *want = full_logits(serial, tok);
    const gpt_chunk *c0 = &s0->chunks[0], *c1 = &s1->chunks[0];
    const int P = 4;
    kv_cache *k0 = kv_cache_create(c0, P), *k1 = kv_cache_create(c1, P);
    float *x = calloc((size_t)P * C, sizeof(float)), *logits = malloc(c1->Vl * sizeof(float));
    for (int p = 0; p < T;) {
        int n = p == 0 ? P : 1;
        kv_cache_forward(c0, s0->params, k0, tok + p, NULL, x, NULL, NULL, n, NULL);
        kv_cache_forward(c1, s1->params, k1, NULL, x, NULL, logits, NULL, n, NULL);
        p += n;
        expect_close(logits, want + (size_t)(p - 1) * c1->Vl, c1->Vl, 1e-5, 1e-4, "two MoE stages");
    }
    free(x);
    free(logits);
    free(want);
    kv_cache_destroy(k0);
    kv_cache_destroy(k1);
    local_model_destroy(serial);
    local_model_destroy(s0);
    local_model_destroy(s1);
}

static void overflow(const void *arg) {
    (void)arg;
    gpt_config g = model_config();
    local_model *m = local_model_create(&g, 1, 0, 1, 0, 1, NULL, 14);
    kv_cache *kv = kv_cache_create(&m->chunks[0], T);
    int32_t tok[T + 1] = {0};
    float *logits = malloc(m->chunks[0].Vl * sizeof(float));
    kv_cache_forward(&m->chunks[0], m->params, kv, tok, NULL, NULL, logits, NULL, T, NULL);
    kv_cache_forward(&m->chunks[0], m->params, kv, tok, NULL, NULL, logits, NULL, 1, NULL);
}

static void a_position_past_the_context_is_refused(void **state) {
    (void)state;
    char out[4096];
    int rc = run_in_child(overflow, NULL, out, sizeof out);
    assert_int_not_equal(rc, 0);
    if (!strstr(out, "exceed the model's context of 24 positions")) fail_msg("message: %s", out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prefill_matches_full_forward),
        cmocka_unit_test(decoding_one_position_at_a_time_matches_full_forward),
        cmocka_unit_test(pipeline_stages_chained_match_the_serial_model),
        cmocka_unit_test(a_position_past_the_context_is_refused),
        cmocka_unit_test(an_moe_model_decodes_as_its_full_forward),
        cmocka_unit_test(moe_pipeline_stages_chained_match_the_serial_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
