/* loss_scaler_test.c — the dynamic loss scaler: skip on overflow, hysteresis, floor,
 * growth, and recovery from an injected overflow in a simulated fp16 backward pass. */
#include <math.h>
#include <stdbool.h>

#include "src/precision/convert.h"
#include "src/precision/loss_scaler.h"
#include "tests/support/testing.h"

static void starts_at_two_to_the_sixteen_with_megatron_defaults(void **state) {
    (void)state;
    prec_scaler s;
    prec_scaler_init(&s, 0);
    assert_true(s.scale == 65536.0f);
    assert_int_equal(s.growth_interval, 1000);
    assert_int_equal(s.hysteresis, 2);
    assert_true(s.min_scale == 1.0f);
    prec_scaler_init(&s, 128);
    assert_true(s.scale == 128.0f);
}

static void overflow_skips_and_second_overflow_halves(void **state) {
    (void)state;
    prec_scaler s;
    prec_scaler_init(&s, 0);
    assert_false(prec_scaler_update(&s, true)); /* skipped, hysteresis absorbs it */
    assert_true(s.scale == 65536.0f);
    assert_true(prec_scaler_update(&s, false));
    assert_false(prec_scaler_update(&s, true)); /* second overflow since growth: halve */
    assert_true(s.scale == 32768.0f);
    assert_false(prec_scaler_update(&s, true)); /* and every further one until growth */
    assert_true(s.scale == 16384.0f);
    assert_int_equal(s.skipped, 3);
    assert_int_equal(s.steps, 4);
}

static void hysteresis_one_halves_every_overflow(void **state) {
    (void)state;
    prec_scaler s;
    prec_scaler_init(&s, 1024);
    s.hysteresis = 1;
    prec_scaler_reset_trackers(&s);
    assert_false(prec_scaler_update(&s, true));
    assert_true(s.scale == 512.0f);
}

static void scale_never_drops_below_min(void **state) {
    (void)state;
    prec_scaler s;
    prec_scaler_init(&s, 4);
    s.min_scale = 2;
    for (int i = 0; i < 10; i++) assert_false(prec_scaler_update(&s, true));
    assert_true(s.scale == 2.0f);
}

static void grows_after_growth_interval_clean_steps(void **state) {
    (void)state;
    prec_scaler s;
    prec_scaler_init(&s, 0);
    for (int i = 0; i < 999; i++) assert_true(prec_scaler_update(&s, false));
    assert_true(s.scale == 65536.0f);
    assert_true(prec_scaler_update(&s, false));
    assert_true(s.scale == 131072.0f);
    /* An overflow restarts the count. */
    for (int i = 0; i < 500; i++) prec_scaler_update(&s, false);
    prec_scaler_update(&s, true);
    for (int i = 0; i < 999; i++) prec_scaler_update(&s, false);
    assert_true(s.scale == 131072.0f);
    prec_scaler_update(&s, false);
    assert_true(s.scale == 262144.0f);
}

static void detects_inf_and_nan_anywhere(void **state) {
    (void)state;
    float g[7] = {0, 1, -3, 1e30f, -0.0f, 5, 6};
    assert_false(prec_has_inf_or_nan(g, 7));
    g[6] = INFINITY;
    assert_true(prec_has_inf_or_nan(g, 7));
    assert_false(prec_has_inf_or_nan(g, 6));
    g[6] = 0;
    g[0] = NAN;
    assert_true(prec_has_inf_or_nan(g, 7));
    assert_false(prec_has_inf_or_nan(g, 0));
}

/* A backward pass that produces gradient `true_grad * scale` in fp16. */
static bool scaled_fp16_backward_overflows(float true_grad, float scale) {
    float g = prec_round(PREC_FP16, true_grad * scale);
    return prec_has_inf_or_nan(&g, 1);
}

static void recovers_from_an_injected_overflow(void **state) {
    (void)state;
    prec_scaler s;
    prec_scaler_init(&s, 0);
    s.growth_interval = 10;
    /* A gradient of 4: any scale >= 16380 overflows fp16 (4 * 16384 = 65536 -> inf). */
    int applied = 0, skipped = 0;
    for (int step = 0; step < 12; step++) {
        bool ovf = scaled_fp16_backward_overflows(4.0f, s.scale);
        if (prec_scaler_update(&s, ovf)) applied++;
        else skipped++;
    }
    /* 65536: skip (hysteresis), skip+halve -> 32768, skip+halve -> 16384, skip+halve -> 8192,
     * then 8 clean steps. */
    assert_int_equal(skipped, 4);
    assert_int_equal(applied, 8);
    assert_true(s.scale == 8192.0f);
    /* Two more clean steps complete the growth interval: the scale grows again ... */
    prec_scaler_update(&s, scaled_fp16_backward_overflows(4.0f, s.scale));
    prec_scaler_update(&s, scaled_fp16_backward_overflows(4.0f, s.scale));
    assert_true(s.scale == 16384.0f);
    /* ... overflows once (absorbed by the refilled hysteresis), then drops back. */
    assert_false(prec_scaler_update(&s, scaled_fp16_backward_overflows(4.0f, s.scale)));
    assert_true(s.scale == 16384.0f);
    assert_false(prec_scaler_update(&s, scaled_fp16_backward_overflows(4.0f, s.scale)));
    assert_true(s.scale == 8192.0f);
    assert_true(prec_scaler_update(&s, scaled_fp16_backward_overflows(4.0f, s.scale)));
}

/* The scale's one range, [1, 2^24]: what a saved scale must be in (checkpoint loads refuse
 * the rest), and where growth stops, so a scale the scaler makes always reads back. */
static void the_scale_stays_in_its_range(void **state) {
    (void)state;
    assert_true(prec_scale_valid(1.0) && prec_scale_valid(65536.0));
    assert_true(prec_scale_valid(PREC_SCALE_MAX));
    const double bad[] = {0.0, 0.5, -1.0, 1e-300, 16777216.0 * 2, 1e300, INFINITY, NAN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (prec_scale_valid(bad[i])) fail_msg("scale %g accepted", bad[i]);
    prec_scaler s;
    prec_scaler_init(&s, (float)PREC_SCALE_MAX);
    s.growth_interval = 1;
    for (int i = 0; i < 4; i++) assert_true(prec_scaler_update(&s, false));
    assert_true(s.scale == (float)PREC_SCALE_MAX);
    assert_true(prec_scale_valid(s.scale));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(starts_at_two_to_the_sixteen_with_megatron_defaults),
        cmocka_unit_test(overflow_skips_and_second_overflow_halves),
        cmocka_unit_test(hysteresis_one_halves_every_overflow),
        cmocka_unit_test(scale_never_drops_below_min),
        cmocka_unit_test(grows_after_growth_interval_clean_steps),
        cmocka_unit_test(detects_inf_and_nan_anywhere),
        cmocka_unit_test(recovers_from_an_injected_overflow),
        cmocka_unit_test(the_scale_stays_in_its_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
