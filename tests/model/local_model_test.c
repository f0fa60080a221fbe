/* local_model_test.c — the part of the GPT one process holds: chunks at the stages the caller
 * names (the V of zbv included), the tied wte's two copies on one rank, and which of them a
 * checkpoint skips. */
#include <stdlib.h>
#include <string.h>

#include "src/device/device_memory.h"
#include "src/model/local_model.h"
#include "tests/support/testing.h"

static const gpt_config k_cfg = {.vocab_size = 256, .real_vocab = 256, .seq_len = 16, .num_layers = 4, .hidden = 32, .num_heads = 4}; /* V, real V, T, L, C, NH */

/* zbv at p = 2, rank 0: chunk 0 is stage 0 (embedding), chunk 1 is stage 3 (head), one layer
 * each; both hold a wte, equal at initialisation, and only the embedding's counts in the norm. */
static void the_v_puts_embedding_and_head_on_rank_0(void **state) {
    (void)state;
    const int stages[2] = {0, 3};
    local_model *m = local_model_create_staged(&k_cfg, 1, 0, 2, 0, 2, stages, NULL, 7);
    assert_true(m->chunks[0].shard.has_embedding && !m->chunks[0].shard.has_head);
    assert_true(m->chunks[1].shard.has_head && !m->chunks[1].shard.has_embedding);
    assert_int_equal(m->chunks[0].shard.layer_begin, 0);
    assert_int_equal(m->chunks[1].shard.layer_begin, 3);
    const gpt_param *e = m->wte_embedding, *h = m->wte_head;
    assert_true(e && h && e != h);
    assert_true(local_model_is_second_wte(m, h) && !local_model_is_second_wte(m, e));
    float *host = malloc(m->numel * sizeof(float));
    device_download(host, m->params, m->numel * sizeof(float));
    assert_memory_equal(host + e->offset, host + h->offset, e->numel * sizeof(float));
    for (int k = 0; k < m->nparams; k++)
        if (m->plist[k] == h) assert_false(m->in_norm[k]);
    free(host);
    local_model_destroy(m);
}

/* Both copies get the sum of the two gradients; a rank with one copy is left alone. */
static void tied_gradients_are_summed_on_the_rank(void **state) {
    (void)state;
    const int stages[2] = {0, 3};
    local_model *m = local_model_create_staged(&k_cfg, 1, 0, 2, 0, 2, stages, NULL, 7);
    const gpt_param *e = m->wte_embedding, *h = m->wte_head;
    float *g = calloc(m->numel, sizeof(float));
    for (size_t i = 0; i < e->numel; i++) {
        g[e->offset + i] = (float)i;
        g[h->offset + i] = 0.5f;
    }
    device_upload(m->grads, g, m->numel * sizeof(float));
    local_model_sum_tied_grads(m);
    device_download(g, m->grads, m->numel * sizeof(float));
    for (size_t i = 0; i < e->numel; i++) {
        assert_true(g[e->offset + i] == (float)i + 0.5f);
        assert_true(g[h->offset + i] == (float)i + 0.5f);
    }
    free(g);
    local_model_destroy(m);
    local_model *one = local_model_create(&k_cfg, 1, 0, 2, 1, 1, NULL, 7); /* last stage only */
    assert_null(one->wte_embedding);
    assert_false(local_model_is_second_wte(one, one->wte_head));
    local_model_sum_tied_grads(one); /* nothing to do */
    local_model_destroy(one);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_v_puts_embedding_and_head_on_rank_0),
        cmocka_unit_test(tied_gradients_are_summed_on_the_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
