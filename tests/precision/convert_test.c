/* convert_test.c — fp32 <-> bf16 / fp16: hand-picked roundings, specials, and exhaustive
 * round trips over every 16-bit pattern. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "src/precision/convert.h"
#include "tests/support/testing.h"

static float f_of(uint32_t b) {
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

static uint32_t b_of(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static void fp16_exact_values_and_signs(void **state) {
    (void)state;
    assert_int_equal(prec_fp32_to_fp16(1.0f), 0x3C00);
    assert_int_equal(prec_fp32_to_fp16(-2.0f), 0xC000);
    assert_int_equal(prec_fp32_to_fp16(0.0f), 0x0000);
    assert_int_equal(prec_fp32_to_fp16(-0.0f), 0x8000);
    assert_int_equal(prec_fp32_to_fp16(0.5f), 0x3800);
    assert_int_equal(prec_fp32_to_fp16(0.1f), 0x2E66);
    assert_true(prec_fp16_to_fp32(0x2E66) == 0.0999755859375f);
    assert_true(signbit(prec_fp16_to_fp32(0x8000)));
}

static void fp16_rounds_ties_to_even(void **state) {
    (void)state;
    /* 1 + 2^-11 lies halfway between 1 (even mantissa) and 1 + 2^-10 (odd): down. */
    assert_int_equal(prec_fp32_to_fp16(1.0f + ldexpf(1, -11)), 0x3C00);
    /* 1 + 3*2^-11 lies halfway between 1+2^-10 (odd) and 1+2^-9 (even): up. */
    assert_int_equal(prec_fp32_to_fp16(1.0f + 3 * ldexpf(1, -11)), 0x3C02);
    /* Just above the tie rounds up. */
    assert_int_equal(prec_fp32_to_fp16(nextafterf(1.0f + ldexpf(1, -11), 2.0f)), 0x3C01);
    /* A carry out of the mantissa bumps the exponent: 2 - 2^-12 -> 2.0. */
    assert_int_equal(prec_fp32_to_fp16(2.0f - ldexpf(1, -12)), 0x4000);
}

static void fp16_max_finite_and_overflow_to_inf(void **state) {
    (void)state;
    assert_int_equal(prec_fp32_to_fp16(65504.0f), 0x7BFF);
    assert_int_equal(prec_fp32_to_fp16(65519.0f), 0x7BFF); /* below the midpoint 65520 */
    assert_int_equal(prec_fp32_to_fp16(65520.0f), 0x7C00); /* tie: to the even side, inf */
    assert_int_equal(prec_fp32_to_fp16(-1e6f), 0xFC00);
    assert_int_equal(prec_fp32_to_fp16(3.4e38f), 0x7C00);
    assert_int_equal(prec_fp32_to_fp16(INFINITY), 0x7C00);
    assert_int_equal(prec_fp32_to_fp16(-INFINITY), 0xFC00);
    assert_true(prec_fp16_to_fp32(0x7BFF) == 65504.0f);
    assert_true(isinf(prec_fp16_to_fp32(0x7C00)) && prec_fp16_to_fp32(0x7C00) > 0);
}

static void fp16_subnormals_round_to_even_then_zero(void **state) {
    (void)state;
    assert_int_equal(prec_fp32_to_fp16(ldexpf(1, -14)), 0x0400);    /* smallest normal */
    assert_int_equal(prec_fp32_to_fp16(ldexpf(1023, -24)), 0x03FF); /* largest subnormal */
    assert_int_equal(prec_fp32_to_fp16(ldexpf(1, -24)), 0x0001);    /* smallest subnormal */
    assert_int_equal(prec_fp32_to_fp16(ldexpf(1, -25)), 0x0000);    /* tie 0|1: to 0 */
    assert_int_equal(prec_fp32_to_fp16(ldexpf(3, -26)), 0x0001);    /* 0.75 units: up */
    assert_int_equal(prec_fp32_to_fp16(ldexpf(3, -25)), 0x0002);    /* tie 1|2: to 2 */
    assert_int_equal(prec_fp32_to_fp16(-ldexpf(5, -25)), 0x8002);   /* tie 2|3: to 2 */
    assert_int_equal(prec_fp32_to_fp16(ldexpf(1, -30)), 0x0000);
    assert_int_equal(prec_fp32_to_fp16(-ldexpf(1, -30)), 0x8000);
    assert_int_equal(prec_fp32_to_fp16(f_of(0x00000001u)), 0x0000); /* fp32 subnormal */
    /* 2^-14 - 2^-25 sits halfway between the largest subnormal and the smallest normal. */
    assert_int_equal(prec_fp32_to_fp16(ldexpf(1, -14) - ldexpf(1, -25)), 0x0400);
    assert_true(prec_fp16_to_fp32(0x0001) == ldexpf(1, -24));
    assert_true(prec_fp16_to_fp32(0x83FF) == -ldexpf(1023, -24));
}

static void nan_stays_nan_in_both_formats(void **state) {
    (void)state;
    uint16_t h = prec_fp32_to_fp16(NAN);
    assert_int_equal(h & 0x7C00, 0x7C00);
    assert_true((h & 0x03FF) != 0);
    assert_true(isnan(prec_fp16_to_fp32(h)));
    /* A NaN whose payload lives only in the low bits must not become inf. */
    float low_payload = f_of(0x7F800001u);
    assert_true(isnan(prec_fp16_to_fp32(prec_fp32_to_fp16(low_payload))));
    assert_true(isnan(prec_bf16_to_fp32(prec_fp32_to_bf16(low_payload))));
    assert_true(isnan(prec_bf16_to_fp32(prec_fp32_to_bf16(-NAN))));
    assert_true(signbit(prec_bf16_to_fp32(prec_fp32_to_bf16(f_of(0xFFC00000u)))));
}

static void bf16_rounds_ties_to_even_and_overflows(void **state) {
    (void)state;
    assert_int_equal(prec_fp32_to_bf16(1.0f), 0x3F80);
    assert_int_equal(prec_fp32_to_bf16(-1.0f), 0xBF80);
    assert_int_equal(prec_fp32_to_bf16(1.0f + ldexpf(1, -8)), 0x3F80);     /* tie: down */
    assert_int_equal(prec_fp32_to_bf16(1.0f + 3 * ldexpf(1, -8)), 0x3F82); /* tie: up */
    assert_int_equal(prec_fp32_to_bf16(nextafterf(1.0f + ldexpf(1, -8), 2)), 0x3F81);
    assert_int_equal(prec_fp32_to_bf16(0.1f), 0x3DCD);
    /* bf16's largest finite is 0x7F7F; fp32's largest finite rounds up past it to inf. */
    assert_int_equal(prec_fp32_to_bf16(prec_bf16_to_fp32(0x7F7F)), 0x7F7F);
    assert_int_equal(prec_fp32_to_bf16(FLT_MAX), 0x7F80);
    assert_int_equal(prec_fp32_to_bf16(INFINITY), 0x7F80);
    assert_int_equal(prec_fp32_to_bf16(-INFINITY), 0xFF80);
    /* Subnormals keep their top bits; the sign of zero survives. */
    assert_int_equal(prec_fp32_to_bf16(f_of(0x00010000u)), 0x0001);
    assert_int_equal(prec_fp32_to_bf16(-0.0f), 0x8000);
    assert_int_equal(b_of(prec_bf16_to_fp32(0x3F81)), 0x3F810000u);
}

static void every_16_bit_pattern_round_trips(void **state) {
    (void)state;
    for (uint32_t p = 0; p < 65536; p++) {
        uint16_t h = (uint16_t)p;
        float f = prec_fp16_to_fp32(h);
        if (isnan(f)) {
            assert_true(isnan(prec_fp16_to_fp32(prec_fp32_to_fp16(f))));
        } else {
            assert_int_equal(prec_fp32_to_fp16(f), h);
        }
        float g = prec_bf16_to_fp32(h);
        if (isnan(g)) {
            assert_true(isnan(prec_bf16_to_fp32(prec_fp32_to_bf16(g))));
        } else {
            assert_int_equal(prec_fp32_to_bf16(g), h);
        }
    }
}

static void rounding_picks_the_nearest_neighbour(void **state) {
    (void)state;
    /* For many values, the fp16 result is at least as close as both neighbours. */
    for (int i = 0; i < 20000; i++) {
        float x = ldexpf((float)(i * 7919 % 100003) / 100003.0f + 0.5f, (i % 40) - 26);
        if (i & 1) x = -x;
        uint16_t h = prec_fp32_to_fp16(x);
        float r = prec_fp16_to_fp32(h);
        if (isinf(r)) continue;
        float up = prec_fp16_to_fp32((uint16_t)(h + 1));
        double err = fabs((double)r - x);
        if (!isinf(up) && !isnan(up)) assert_true(err <= fabs((double)up - x));
        if ((h & 0x7FFF) != 0) {
            float dn = prec_fp16_to_fp32((uint16_t)(h - 1));
            assert_true(err <= fabs((double)dn - x));
        }
    }
}

static void arrays_and_in_place_rounding(void **state) {
    (void)state;
    float in[5] = {1.0f, -2.5f, 65504.0f, 1e-8f, 1.0f + ldexpf(1, -9)};
    uint16_t h[5];
    float out[5];
    prec_fp32_to_fp16_array(in, h, 5);
    prec_fp16_to_fp32_array(h, out, 5);
    for (int i = 0; i < 5; i++) assert_true(out[i] == prec_round(PREC_FP16, in[i]));
    prec_fp32_to_bf16_array(in, h, 5);
    prec_bf16_to_fp32_array(h, out, 5);
    for (int i = 0; i < 5; i++) assert_true(out[i] == prec_round(PREC_BF16, in[i]));
    float x[5];
    memcpy(x, in, sizeof x);
    prec_round_array(PREC_FP32, x, 5);
    assert_memory_equal(x, in, sizeof x);
    prec_round_array(PREC_BF16, x, 5);
    assert_true(x[4] == 1.0f); /* 1 + 2^-9 is below bf16's half-ulp at 1 */
    assert_true(x[1] == -2.5f);
}

/* prec_round_array's bf16 loop (branch-free, vectorised) gives prec_round's bits for every
 * input: every 2^32 pattern in steps of 251 (a prime: every residue of the low 16 bits,
 * ties, carries into the exponent, infinities and NaN payloads all come up), plus the
 * patterns around each rounding boundary of a few exponents. */
static void bf16_array_rounding_equals_prec_round_bit_for_bit(void **state) {
    (void)state;
    enum { CHUNK = 4096 };
    static float x[CHUNK];
    static uint32_t want[CHUNK];
    size_t bad = 0, n = 0;
    uint64_t p = 0;
    for (;;) {
        n = 0;
        for (; n < CHUNK && p <= 0xffffffffull; p += 251, n++) {
            x[n] = f_of((uint32_t)p);
            want[n] = b_of(prec_round(PREC_BF16, x[n]));
        }
        prec_round_array(PREC_BF16, x, n);
        for (size_t i = 0; i < n; i++) bad += b_of(x[i]) != want[i];
        if (p > 0xffffffffull) break;
    }
    const uint32_t edges[] = {0x3f800000u, 0xbf800000u, 0x7f7f0000u, 0x00010000u, 0x7f800000u};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
        for (uint32_t low = 0x7ff0u; low <= 0x8010u; low++)
            for (uint32_t odd = 0; odd < 2; odd++) {
                float y = f_of(edges[e] + (odd << 16) + low);
                const uint32_t w = b_of(prec_round(PREC_BF16, y));
                prec_round_array(PREC_BF16, &y, 1);
                bad += b_of(y) != w;
            }
    assert_int_equal(bad, 0);
}

static void dtype_names_parse_and_sizes(void **state) {
    (void)state;
    prec_dtype t;
    assert_true(prec_dtype_parse("bf16", &t) && t == PREC_BF16);
    assert_true(prec_dtype_parse("fp16", &t) && t == PREC_FP16);
    assert_true(prec_dtype_parse("fp32", &t) && t == PREC_FP32);
    assert_false(prec_dtype_parse("fp8", &t));
    assert_string_equal(prec_dtype_name(PREC_BF16), "bf16");
    assert_int_equal(prec_dtype_bytes(PREC_FP32), 4);
    assert_int_equal(prec_dtype_bytes(PREC_FP16), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fp16_exact_values_and_signs),
        cmocka_unit_test(fp16_rounds_ties_to_even),
        cmocka_unit_test(fp16_max_finite_and_overflow_to_inf),
        cmocka_unit_test(fp16_subnormals_round_to_even_then_zero),
        cmocka_unit_test(nan_stays_nan_in_both_formats),
        cmocka_unit_test(bf16_rounds_ties_to_even_and_overflows),
        cmocka_unit_test(every_16_bit_pattern_round_trips),
        cmocka_unit_test(rounding_picks_the_nearest_neighbour),
        cmocka_unit_test(arrays_and_in_place_rounding),
        cmocka_unit_test(bf16_array_rounding_equals_prec_round_bit_for_bit),
        cmocka_unit_test(dtype_names_parse_and_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
