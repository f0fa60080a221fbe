/* recompute_test.c — activation recomputation (src/model/gpt.h, ACTIVATION RECOMPUTATION):
 * the same bits, fewer bytes.
 *
 * Bits: for selective, full uniform (groups of 1, 2 and all 4 blocks) and full block (the
 * first 1 and 3 blocks), two micro-batches run forward, forward, backward, backward, so that
 * the second forward overwrites the shared work space before the first backward reads it;
 * and through the split backward F, F, B, B, W, W, so that the second B overwrites it before
 * the first W. Losses, every gradient element and the input gradients must EQUAL those of
 * the same sequence without recomputation (memcmp, not a tolerance), on the whole model
 * (embedding, tied head) and on a middle chunk (input and output gradients through the
 * pipeline's messages).
 *
 * Bytes: gpt_acts_bytes against what each setting says it keeps, written out here once more
 * (the saving is real: the buffers that are not kept are not allocated).
 *
 * Not here: tensor and pipeline parallel runs with recomputation (tests/train/equivalence_test),
 * the flags and their rules (src/train/config.c).
 */
#include <stdlib.h>
#include <string.h>

#include "src/core/rng.h"
#include "src/model/gpt.h"
#include "tests/support/testing.h"

enum { B = 2, T = 8, L = 4, C = 16, NH = 2, N = B * T, NMB = 2 };

static gpt_config config(void) {
    gpt_config cfg = {.vocab_size = 64,
                      .real_vocab = 50,
                      .seq_len = T,
                      .num_layers = L,
                      .hidden = C,
                      .num_heads = NH};
    return cfg;
}

static const struct {
    const char *name;
    gpt_recompute rc;
} k_settings[] = {
    {"selective", {GPT_RECOMPUTE_SELECTIVE, GPT_RECOMPUTE_UNIFORM, 0}},
    {"full uniform 1", {GPT_RECOMPUTE_FULL, GPT_RECOMPUTE_UNIFORM, 1}},
    {"full uniform 2", {GPT_RECOMPUTE_FULL, GPT_RECOMPUTE_UNIFORM, 2}},
    {"full uniform 4", {GPT_RECOMPUTE_FULL, GPT_RECOMPUTE_UNIFORM, 4}},
    {"full block 1", {GPT_RECOMPUTE_FULL, GPT_RECOMPUTE_BLOCK, 1}},
    {"full block 3", {GPT_RECOMPUTE_FULL, GPT_RECOMPUTE_BLOCK, 3}},
};
#define NSETTINGS (sizeof k_settings / sizeof k_settings[0])

/* What one run produces: the losses, the gradient buffer, the input gradients. */
typedef struct {
    float loss[NMB];
    float *grads;
    float dx_in[NMB][N * C];
    size_t acts_bytes, scratch_bytes, wgrad_bytes;
} outcome;

/* Two micro-batches through chunk c with recomputation rc: fused (F F B B) or split
 * (F F B B W W, the W's in the other order). */
static void run(const gpt_config *cfg, bool middle, const gpt_recompute *rc, bool split,
                outcome *o) {
    gpt_shard sh = {.tp_size = 1, .tp_rank = 0, .layer_begin = 0, .layer_end = L, .has_embedding = !middle, .has_head = !middle};
    gpt_chunk *c = malloc(sizeof *c);
    gpt_chunk_init(c, cfg, &sh, 0);
    gpt_chunk_set_recompute(c, rc);
    float *params = malloc(c->num_elements * sizeof(float));
    for (size_t k = 0; k < c->num_elements; k++) params[k] = 0.3f * rng_normal(3, 1, k);
    for (int l = 0; l < L; l++) /* norms near 1, so that every path carries weight */
        for (int kind = GPT_LN1_W; kind <= GPT_LN2_W; kind += GPT_LN2_W - GPT_LN1_W) {
            const gpt_param *p = gpt_chunk_find(c, kind, l);
            for (size_t k = 0; k < p->numel; k++) params[p->offset + k] += 1.0f;
        }
    o->grads = calloc(c->num_elements, sizeof(float));
    int32_t tok[NMB][N], tgt[NMB][N];
    static float x_in[NMB][N * C], dx_out[NMB][N * C], out[N * C];
    for (int m = 0; m < NMB; m++)
        for (size_t n = 0; n < N; n++) {
            tok[m][n] = (int32_t)rng_below(5, 1 + (uint64_t)m, n, 50);
            tgt[m][n] = (int32_t)rng_below(5, 3 + (uint64_t)m, n, 50);
            for (size_t k = 0; k < C; k++) {
                x_in[m][n * C + k] = 0.5f * rng_normal(7, 11 + (uint64_t)m, n * C + k);
                dx_out[m][n * C + k] = 0.1f * rng_normal(7, 21 + (uint64_t)m, n * C + k);
            }
        }
    gpt_acts *a[NMB];
    gpt_wgrad *wg[NMB];
    gpt_scratch *s = gpt_scratch_create(c, B, T);
    for (int m = 0; m < NMB; m++)
        a[m] = gpt_acts_create(c, B, T), wg[m] = gpt_wgrad_create(c, B, T);
    for (int m = 0; m < NMB; m++)
        o->loss[m] = gpt_forward(c, params, a[m], s, tok[m], tgt[m], x_in[m], middle ? out : NULL,
                                 NULL);
    for (int m = 0; m < NMB; m++) {
        float *dx = middle ? o->dx_in[m] : NULL;
        if (split) gpt_backward_input(c, params, a[m], s, wg[m], dx_out[m], dx, 0.25f, NULL);
        else gpt_backward(c, params, o->grads, a[m], s, dx_out[m], dx, 0.25f, NULL);
    }
    for (int m = NMB - 1; split && m >= 0; m--) gpt_backward_weight(c, o->grads, a[m], wg[m]);
    o->acts_bytes = gpt_acts_bytes(a[0]);
    o->scratch_bytes = gpt_scratch_bytes(s);
    o->wgrad_bytes = gpt_wgrad_bytes(wg[0]);
    for (int m = 0; m < NMB; m++) gpt_acts_destroy(a[m]), gpt_wgrad_destroy(wg[m]);
    gpt_scratch_destroy(s);
    free(params);
    free(c);
}

static size_t numel(const gpt_config *cfg, bool middle) {
    gpt_shard sh = {.tp_size = 1, .tp_rank = 0, .layer_begin = 0, .layer_end = L, .has_embedding = !middle, .has_head = !middle};
    gpt_chunk *c = malloc(sizeof *c);
    gpt_chunk_init(c, cfg, &sh, 0);
    size_t n = c->num_elements;
    free(c);
    return n;
}

static void recomputation_gives_the_same_bits(void **state) {
    (void)state;
    const gpt_config cfg = config();
    const gpt_recompute none = {GPT_RECOMPUTE_NONE, GPT_RECOMPUTE_UNIFORM, 0};
    static outcome want, got;
    for (int middle = 0; middle < 2; middle++)
        for (int split = 0; split < 2; split++) {
            const size_t n = numel(&cfg, middle);
            memset(&want, 0, sizeof want);
            run(&cfg, middle, &none, split, &want);
            for (size_t k = 0; k < NSETTINGS; k++) {
                memset(&got, 0, sizeof got);
                run(&cfg, middle, &k_settings[k].rc, split, &got);
                const char *where = middle ? "middle chunk" : "whole model";
                const char *how = split ? "split B/W" : "fused";
                if (memcmp(got.loss, want.loss, sizeof want.loss) != 0)
                    fail_msg("%s, %s, %s: losses %.9g %.9g, without %.9g %.9g", k_settings[k].name,
                             where, how, got.loss[0], got.loss[1], want.loss[0], want.loss[1]);
                for (size_t e = 0; e < n; e++)
                    if (memcmp(&got.grads[e], &want.grads[e], sizeof(float)) != 0)
                        fail_msg("%s, %s, %s: gradient element %zu is %.9g, without %.9g",
                                 k_settings[k].name, where, how, e, got.grads[e], want.grads[e]);
                if (memcmp(got.dx_in, want.dx_in, sizeof want.dx_in) != 0)
                    fail_msg("%s, %s, %s: input gradients differ", k_settings[k].name, where, how);
                if (!(got.acts_bytes < want.acts_bytes))
                    fail_msg("%s: %zu activation bytes, not fewer than %zu", k_settings[k].name,
                             got.acts_bytes, want.acts_bytes);
                free(got.grads);
            }
            free(want.grads);
        }
}

/* ------------------------------------------------------------------ bytes */

static size_t r16(size_t n) { return (n + 15) & ~(size_t)15; } /* a view: 64-byte aligned */

/* Floats of everything one block keeps (att separately), as gpt_internal.h lists them. */
static size_t block_floats(void) {
    const size_t n = N, cl = C; /* tp 1 */
    return r16(n * C) + 2 * r16(n) + r16(3 * n * cl) + r16(n * cl) + r16(n * C) + r16(n * C) +
           2 * r16(n) + 2 * r16(4 * n * cl);
}

static size_t expected_bytes(const gpt_recompute *rc, bool middle) {
    const size_t att = r16((size_t)B * NH * T * T), x = r16((size_t)N * C);
    const size_t head = middle ? 0 : x + 2 * r16(N) + r16((size_t)N * 64) + r16(3 * N) + r16(N);
    /* only the head's LN reads the chunk's output: a middle chunk sends it on from its
     * scratch; the tokens are the embedding's, the targets the head's */
    const size_t kept_out = middle ? 0 : x;
    size_t f = head + (middle ? 0 : 2 * r16(N));
    const int n = rc->num_layers;
    switch (rc->granularity) {
    case GPT_RECOMPUTE_NONE: f += L * x + kept_out + L * (block_floats() + att); break;
    case GPT_RECOMPUTE_SELECTIVE: f += L * x + kept_out + L * block_floats(); break;
    case GPT_RECOMPUTE_FULL:
        if (rc->method == GPT_RECOMPUTE_UNIFORM) f += (size_t)(L / n) * x + kept_out;
        else f += L * x + kept_out + (size_t)(L - n) * (block_floats() + att);
        break;
    }
    return f * sizeof(float);
}

static void activation_bytes_are_what_each_setting_keeps(void **state) {
    (void)state;
    const gpt_config cfg = config();
    for (int middle = 0; middle < 2; middle++) {
        gpt_shard sh = {.tp_size = 1, .tp_rank = 0, .layer_begin = 0, .layer_end = L, .has_embedding = !middle, .has_head = !middle};
        gpt_chunk *c = malloc(sizeof *c);
        gpt_chunk_init(c, &cfg, &sh, 0);
        const gpt_recompute none = {GPT_RECOMPUTE_NONE, GPT_RECOMPUTE_UNIFORM, 0};
        for (int k = -1; k < (int)NSETTINGS; k++) {
            const gpt_recompute *rc = k < 0 ? &none : &k_settings[k].rc;
            gpt_chunk_set_recompute(c, rc);
            gpt_acts *a = gpt_acts_create(c, B, T);
            if (gpt_acts_bytes(a) != expected_bytes(rc, middle))
                fail_msg("%s, %s: %zu activation bytes, expected %zu",
                         k < 0 ? "none" : k_settings[k].name, middle ? "middle" : "whole",
                         gpt_acts_bytes(a), expected_bytes(rc, middle));
            gpt_acts_destroy(a);
        }
        free(c);
    }
}

static void settings_outside_the_chunk_are_refused(void **state) {
    (void)state;
    char err[256];
    const gpt_recompute zero = {GPT_RECOMPUTE_FULL, GPT_RECOMPUTE_BLOCK, 0};
    const gpt_recompute five = {GPT_RECOMPUTE_FULL, GPT_RECOMPUTE_UNIFORM, 5};
    const gpt_recompute three = {GPT_RECOMPUTE_FULL, GPT_RECOMPUTE_UNIFORM, 3};
    assert_false(gpt_recompute_check(&zero, 4, err, sizeof err));
    assert_non_null(strstr(err, "--recompute-num-layers 0 is outside 1..4"));
    assert_false(gpt_recompute_check(&five, 4, err, sizeof err));
    assert_non_null(strstr(err, "--recompute-num-layers 5 is outside 1..4"));
    assert_false(gpt_recompute_check(&three, 4, err, sizeof err));
    assert_non_null(strstr(err, "does not divide the 4 layers"));
    assert_true(gpt_recompute_check(&three, 6, err, sizeof err));
    assert_true(gpt_recompute_check(&k_settings[0].rc, 1, err, sizeof err)); /* selective */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(recomputation_gives_the_same_bits),
        cmocka_unit_test(activation_bytes_are_what_each_setting_keeps),
        cmocka_unit_test(settings_outside_the_chunk_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
