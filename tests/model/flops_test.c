/* flops_test.c — the FLOP count of flops.h against a count made by hand, and against the
 * model's own parameter table (every matrix used in a product costs 6 FLOPs per weight per
 * token in training). */
#include "src/model/flops.h"
#include "src/model/gpt.h"

#include <math.h>

#include "tests/support/testing.h"

/* L = 2, C = 8, T = 4, V = 16, counted product by product:
 *   qkv 2·8·24 = 384, proj 2·8·8 = 128, fc 2·8·32 = 512, fcproj 2·32·8 = 512  -> 1536
 *   scores 2·4·8 = 64, mix 2·4·8 = 64                                          ->  128
 *   two layers 2·(1536 + 128) = 3328, head 2·8·16 = 256                 forward 3584
 *   training = 3 · 3584 = 10752 */
static void test_hand_count_of_a_tiny_model(void **state) {
    (void)state;
    gpt_config g = {.vocab_size = 16,
                    .real_vocab = 16,
                    .seq_len = 4,
                    .num_layers = 2,
                    .hidden = 8,
                    .num_heads = 2};
    assert_true(flops_forward_per_token(&g) == 3584.0);
    assert_true(flops_train_per_token(&g) == 10752.0);
}

/* The same model with E = 4 experts, top-2, counted by hand: per layer qkv 384 + proj 128, two
 * experts' fc 2·8·32 = 512 and fcproj 512 each (2048), the router 2·4·8 = 64, attention 128
 *   -> 2752; two layers 5504, head 256                                    forward 5760
 *   training = 3 · 5760 = 17280 (the one count bench, trainer and MFU all use) */
static void test_hand_count_of_a_tiny_moe_model(void **state) {
    (void)state;
    gpt_config g = {.vocab_size = 16,
                    .real_vocab = 16,
                    .seq_len = 4,
                    .num_layers = 2,
                    .hidden = 8,
                    .num_heads = 2,
                    .num_experts = 4,
                    .moe_topk = 2};
    assert_true(flops_forward_per_token(&g) == 5760.0);
    assert_true(flops_train_per_token(&g) == 17280.0);
}

/* The weight part, from the model's own parameter table: the train count minus the attention
 * term 12·L·T·C is 6 FLOPs per token for every weight of a matrix product (qkv, proj, fc,
 * fcproj matrices and the tied wte; biases, LayerNorms and wpe are not products). */
static void test_weight_part_is_six_per_matrix_weight(void **state) {
    (void)state;
    gpt_config g = {.vocab_size = 64,
                    .real_vocab = 60,
                    .seq_len = 16,
                    .num_layers = 3,
                    .hidden = 32,
                    .num_heads = 4};
    gpt_shard whole = {.tp_size = 1,
                       .tp_rank = 0,
                       .layer_begin = 0,
                       .layer_end = g.num_layers,
                       .has_embedding = true,
                       .has_head = true};
    static gpt_chunk c; /* large: off the stack */
    gpt_chunk_init(&c, &g, &whole, 0);
    double N = 0;
    for (int i = 0; i < c.nparams; i++) {
        int k = c.params[i].kind;
        if (k == GPT_WTE || k == GPT_QKV_W || k == GPT_PROJ_W || k == GPT_FC_W || k == GPT_FCPROJ_W)
            N += (double)c.params[i].numel;
    }
    assert_true(N == 12.0 * g.num_layers * g.hidden * g.hidden + (double)g.vocab_size * g.hidden);
    double attention = 12.0 * g.num_layers * g.seq_len * g.hidden;
    assert_true(flops_train_per_token(&g) == 6.0 * N + attention);
}

/* Megatron's per-iteration formula 72·B·T·L·C²·(1 + T/(6C) + V/(12·L·C)), per token. */
static void test_agrees_with_megatron_formula(void **state) {
    (void)state;
    gpt_config g = {.vocab_size = 512,
                    .real_vocab = 256,
                    .seq_len = 128,
                    .num_layers = 4,
                    .hidden = 128,
                    .num_heads = 4};
    double L = 4, C = 128, T = 128, V = 512;
    double megatron = 72.0 * L * C * C * (1.0 + T / (6.0 * C) + V / (12.0 * L * C));
    assert_true(fabs(flops_train_per_token(&g) - megatron) <= 1e-9 * megatron);
}

/* MoE: top-K routing runs K experts' MLPs per token, plus the router's product; one expert
 * with top-1 costs the dense model plus the router. */
static void test_moe_counts_the_experts_a_token_uses(void **state) {
    (void)state;
    gpt_config d = {.vocab_size = 64,
                    .real_vocab = 64,
                    .seq_len = 8,
                    .num_layers = 2,
                    .hidden = 16,
                    .num_heads = 2};
    gpt_config m1 = d, m2 = d;
    m1.num_experts = 1, m1.moe_topk = 1;
    m2.num_experts = 8, m2.moe_topk = 2;
    const double C = 16, L = 2, E = 8;
    assert_true(fabs(flops_forward_per_token(&m1) - flops_forward_per_token(&d) - L * 2 * C) <
                1e-6);
    assert_true(fabs(flops_forward_per_token(&m2) - flops_forward_per_token(&d) -
                     L * (16 * C * C + 2 * E * C)) < 1e-6);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_count_of_a_tiny_model),
        cmocka_unit_test(test_hand_count_of_a_tiny_moe_model),
        cmocka_unit_test(test_weight_part_is_six_per_matrix_weight),
        cmocka_unit_test(test_agrees_with_megatron_formula),
        cmocka_unit_test(test_moe_counts_the_experts_a_token_uses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
