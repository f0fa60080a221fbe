/* moe_config_test.c — the one rule set of an MoE configuration (src/moe/moe_config.h): each
 * rule refuses with the flags' words, the first broken one is named, and what the flags of
 * `trident train`, a checkpoint and the layer accept is the same (0 = dropless, a negative
 * capacity factor refused everywhere). */
#include <math.h>
#include <string.h>

#include "src/moe/moe_config.h"
#include "tests/support/testing.h"

/* False, and err holds want. */
static void expect_refused(moe_config m, const char *want) {
    char err[256] = "";
    if (moe_config_check(&m, err, sizeof err)) fail_msg("accepted, want '%s'", want);
    if (!strstr(err, want)) fail_msg("'%s', want '%s'", err, want);
}

static void every_rule_names_its_flags(void **state) {
    (void)state;
    expect_refused((moe_config){-1, 1, 0, 0, 1, 0},
                   "--num-experts -1 must be between 0 (a dense MLP) and 4096");
    expect_refused((moe_config){MOE_MAX_EXPERTS + 1, 1, 0, 0, 1, 0}, "--num-experts 4097");
    expect_refused((moe_config){4, 2, 0, 0, 0, 0},
                   "--expert-model-parallel-size 0 must be at least 1");
    expect_refused((moe_config){0, 2, 0, 0, 2, 0},
                   "--expert-model-parallel-size 2 needs experts: give --num-experts");
    expect_refused((moe_config){0, 1, 0, 0, 1, 0},
                   "--moe-router-topk 1 needs experts: give --num-experts");
    expect_refused((moe_config){4, 2, 0, 0, 2, 2},
                   "expert-parallel rank 2 is outside --expert-model-parallel-size 2");
    expect_refused((moe_config){4, 0, 0, 0, 1, 0},
                   "--moe-router-topk 0 must be between 1 and --num-experts 4");
    expect_refused((moe_config){4, 5, 0, 0, 1, 0},
                   "--moe-router-topk 5 must be between 1 and --num-experts 4");
    expect_refused((moe_config){4, 2, -1, 0, 1, 0},
                   "--moe-aux-loss-coeff -1 must be finite and not negative");
    expect_refused((moe_config){4, 2, 0, INFINITY, 1, 0},
                   "--moe-expert-capacity-factor inf must be finite and not negative");
    expect_refused((moe_config){3, 2, 0, 0, 2, 1},
                   "--num-experts 3 is not divisible by --expert-model-parallel-size 2 (each "
                   "expert-parallel rank holds whole experts)");
}

/* A negative capacity factor is refused (it used to be dropless for the layer and refused by
 * the flags); 0 is dropless, any positive factor drops over capacity. */
static void capacity_is_zero_for_dropless_and_never_negative(void **state) {
    (void)state;
    expect_refused((moe_config){4, 2, 0, -0.5f, 1, 0},
                   "--moe-expert-capacity-factor -0.5 must be finite and not negative "
                   "(0 = dropless)");
    /* above experts / top-k nothing more is kept: a factor past the bound is refused, not
     * wrapped into a capacity of 0 */
    expect_refused((moe_config){4, 2, 0, 1e19f, 1, 0},
                   "--moe-expert-capacity-factor 1e+19 must be at most 4096");
    char err[256];
    assert_true(moe_config_check(&(moe_config){4, 2, 0, 4096.0f, 1, 0}, err, sizeof err));
    assert_true(moe_config_check(&(moe_config){4, 2, 0.01f, 0.0f, 2, 1}, err, sizeof err));
    assert_true(moe_config_check(&(moe_config){4, 2, 0.01f, 1.25f, 4, 3}, err, sizeof err));
    assert_true(moe_config_check(&(moe_config){1, 1, 0, 0, 1, 0}, err, sizeof err));
}

/* A dense model (no experts) keeps every MoE default; the first setting that is not a default
 * is refused as needing experts, with the words --expert-model-parallel-size alone gets. */
static void a_dense_model_takes_no_moe_setting(void **state) {
    (void)state;
    char err[256];
    const moe_config dense = {
        0, MOE_DEFAULT_TOPK, MOE_DEFAULT_AUX_LOSS_COEFF, MOE_DEFAULT_CAPACITY_FACTOR, 1, 0};
    assert_true(moe_config_check(&dense, err, sizeof err));
    moe_config m = dense;
    m.topk = 5;
    expect_refused(m, "--moe-router-topk 5 needs experts: give --num-experts");
    m = dense;
    m.aux_loss_coeff = -5;
    expect_refused(m, "--moe-aux-loss-coeff -5 needs experts: give --num-experts");
    m = dense;
    m.capacity_factor = 1.5f;
    expect_refused(m, "--moe-expert-capacity-factor 1.5 needs experts: give --num-experts");
    m = dense;
    m.capacity_factor = NAN;
    expect_refused(m, "--moe-expert-capacity-factor nan needs experts");
    m = dense;
    m.ep_size = 2;
    m.topk = 5; /* the layout first, as before */
    expect_refused(m, "--expert-model-parallel-size 2 needs experts: give --num-experts");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_rule_names_its_flags),
        cmocka_unit_test(capacity_is_zero_for_dropless_and_never_negative),
        cmocka_unit_test(a_dense_model_takes_no_moe_setting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
