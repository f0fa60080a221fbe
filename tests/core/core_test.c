/* core_test.c — checksums and the counter-based RNG. */
#include <math.h>
#include <string.h>

#include "src/core/crc32.h"
#include "src/core/rng.h"
#include "tests/support/testing.h"

static void crc32_matches_the_standard_check_value(void **state) {
    (void)state;
    assert_int_equal(crc32_update(0, "123456789", 9), 0xCBF43926u);
    uint32_t c = crc32_update(0, "12345", 5);
    assert_int_equal(crc32_update(c, "6789", 4), 0xCBF43926u);
}

static void rng_is_a_pure_function_of_its_counter(void **state) {
    (void)state;
    assert_true(rng_normal(1, 2, 3) == rng_normal(1, 2, 3));
    assert_true(rng_normal(1, 2, 3) != rng_normal(1, 2, 4));
    double s = 0, s2 = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double x = rng_normal(42, 7, (uint64_t)i);
        s += x;
        s2 += x * x;
    }
    assert_true(fabs(s / n) < 0.01);
    assert_true(fabs(s2 / n - 1.0) < 0.02);
    for (int i = 0; i < 1000; i++) {
        float u = rng_uniform(3, 4, (uint64_t)i);
        assert_true(u >= 0.0f && u < 1.0f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc32_matches_the_standard_check_value),
        cmocka_unit_test(rng_is_a_pure_function_of_its_counter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
