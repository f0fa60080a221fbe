/* checked_test.c — checked.h: products that would wrap say so, parsed integers keep their range,
 * conversions refuse what is not finite, what lands outside the range and what would become 0. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "src/core/checked.h"
#include "tests/support/testing.h"

static void products_that_wrap_are_refused_and_write_nothing(void **state) {
    (void)state;
    int r = 7;
    assert_false(checked_mul_int(65536, 65536, &r)); /* 2^32: 0 as int */
    assert_false(checked_mul_int(641, 6700417, &r)); /* 2^32 + 1: 1 as int */
    assert_false(checked_mul_int(-65536, 65536, &r));
    assert_int_equal(r, 7);
    assert_true(checked_mul_int(46340, 46340, &r));
    assert_int_equal(r, 2147395600);
    assert_true(checked_mul_int(-1, INT_MAX, &r));
    assert_int_equal(r, -INT_MAX);
    assert_false(checked_add_int(INT_MAX, 1, &r));
    assert_true(checked_add_int(INT_MAX, -1, &r));
    assert_int_equal(r, INT_MAX - 1);
    int64_t q = 0;
    assert_false(checked_mul_i64(INT64_C(1) << 32, INT64_C(1) << 31, &q));
    assert_true(checked_mul_i64(INT64_C(1) << 32, INT64_C(1) << 30, &q));
    assert_true(q == INT64_C(1) << 62);
    size_t z = 0;
    assert_false(checked_mul_size(SIZE_MAX / 2 + 1, 2, &z));
    assert_true(checked_mul_size(SIZE_MAX / 2, 2, &z));
    assert_true(z == SIZE_MAX - 1);
}

static void parsed_integers_outside_their_range_are_never_wrapped(void **state) {
    (void)state;
    int64_t v = -7;
    assert_int_equal(checked_parse_i64("42", NULL, 1, INT_MAX, &v), CHECKED_OK);
    assert_int_equal(v, 42);
    assert_int_equal(checked_parse_i64("-2147483648", NULL, INT_MIN, INT_MAX, &v), CHECKED_OK);
    assert_int_equal(v, INT_MIN);
    v = -7;
    /* 2^32 + 1 is 1 as int, 2^32 is 0: both are out of an int's range */
    assert_int_equal(checked_parse_i64("4294967297", NULL, 1, INT_MAX, &v), CHECKED_OUT_OF_RANGE);
    assert_int_equal(checked_parse_i64("4294967296", NULL, 1, INT_MAX, &v), CHECKED_OUT_OF_RANGE);
    assert_int_equal(checked_parse_i64("99999999999999999999999", NULL, INT64_MIN, INT64_MAX, &v),
                     CHECKED_OUT_OF_RANGE);
    assert_int_equal(checked_parse_i64("-9223372036854775809", NULL, INT64_MIN, INT64_MAX, &v),
                     CHECKED_OUT_OF_RANGE);
    assert_int_equal(checked_parse_i64("0", NULL, 1, 10, &v), CHECKED_OUT_OF_RANGE);
    assert_int_equal(v, -7);
    assert_int_equal(checked_parse_i64("-9223372036854775808", NULL, INT64_MIN, INT64_MAX, &v),
                     CHECKED_OK);
    assert_true(v == INT64_MIN);
    assert_int_equal(checked_parse_i64("", NULL, 0, 9, &v), CHECKED_NOT_INTEGER);
    assert_int_equal(checked_parse_i64("-", NULL, 0, 9, &v), CHECKED_NOT_INTEGER);
    assert_int_equal(checked_parse_i64("1e3", NULL, 0, 9999, &v), CHECKED_NOT_INTEGER);
    assert_int_equal(checked_parse_i64("3 ", NULL, 0, 9, &v), CHECKED_NOT_INTEGER);
}

static void a_list_is_read_one_number_at_a_time_and_the_bad_one_printed_as_typed(void **state) {
    (void)state;
    const char *s = "4294967298,4294967296", *end = NULL;
    int64_t v = 0;
    assert_int_equal(checked_parse_i64(s, &end, 1, INT_MAX, &v), CHECKED_OUT_OF_RANGE);
    assert_int_equal((int)(end - s), 10);
    assert_memory_equal(s, "4294967298", 10);
    const char *t = "3,2";
    assert_int_equal(checked_parse_i64(t, &end, 1, INT_MAX, &v), CHECKED_OK);
    assert_int_equal(v, 3);
    assert_int_equal(*end, ',');
    assert_int_equal(checked_parse_i64(end + 1, &end, 1, INT_MAX, &v), CHECKED_OK);
    assert_int_equal(v, 2);
    assert_int_equal(*end, '\0');
    assert_int_equal(checked_parse_i64(",2", &end, 1, INT_MAX, &v), CHECKED_NOT_INTEGER);
}

static void float_to_integer_refuses_other_meanings(void **state) {
    (void)state;
    int64_t v = -7;
    assert_int_equal(checked_to_i64(NAN, CHECKED_CEIL, 0, 100, &v), CHECKED_NOT_FINITE);
    assert_int_equal(checked_to_i64(INFINITY, CHECKED_CEIL, 0, 100, &v), CHECKED_NOT_FINITE);
    assert_int_equal(checked_to_i64(1e30, CHECKED_CEIL, 0, INT64_MAX, &v), CHECKED_OUT_OF_RANGE);
    assert_int_equal(checked_to_i64(9223372036854775808.0, CHECKED_FLOOR, 0, INT64_MAX, &v),
                     CHECKED_OUT_OF_RANGE);
    assert_int_equal(checked_to_i64(-1e30, CHECKED_FLOOR, INT64_MIN, 0, &v), CHECKED_OUT_OF_RANGE);
    /* a positive value that rounds to 0 would mean "none" or "forever" */
    assert_int_equal(checked_to_i64(1e-50, CHECKED_FLOOR, 0, 100, &v), CHECKED_BECOMES_ZERO);
    assert_int_equal(checked_to_i64(0.4, CHECKED_NEAREST, 0, 100, &v), CHECKED_BECOMES_ZERO);
    assert_int_equal(checked_to_i64(101, CHECKED_NEAREST, 0, 100, &v), CHECKED_OUT_OF_RANGE);
    assert_int_equal(v, -7);
    assert_int_equal(checked_to_i64(1e-50, CHECKED_CEIL, 0, 100, &v), CHECKED_OK);
    assert_int_equal(v, 1);
    assert_int_equal(checked_to_i64(3.125, CHECKED_CEIL, 0, 100, &v), CHECKED_OK);
    assert_int_equal(v, 4);
    assert_int_equal(checked_to_i64(2.5, CHECKED_NEAREST, 0, 100, &v), CHECKED_OK);
    assert_int_equal(v, 2); /* to even */
    assert_int_equal(checked_to_i64(-3.5, CHECKED_FLOOR, -10, 0, &v), CHECKED_OK);
    assert_int_equal(v, -4);
    assert_int_equal(checked_to_i64(0.0, CHECKED_FLOOR, 0, 0, &v), CHECKED_OK);
    assert_int_equal(v, 0);
}

static void double_to_float_refuses_inf_and_underflow_to_zero(void **state) {
    (void)state;
    float f = 7.0f;
    assert_int_equal(checked_to_float(NAN, &f), CHECKED_NOT_FINITE);
    assert_int_equal(checked_to_float(1e300, &f), CHECKED_OUT_OF_RANGE);
    assert_int_equal(checked_to_float(-1e39, &f), CHECKED_OUT_OF_RANGE);
    assert_int_equal(checked_to_float(1e-50, &f), CHECKED_BECOMES_ZERO);
    assert_int_equal(checked_to_float(-1e-46, &f), CHECKED_BECOMES_ZERO);
    assert_true(f == 7.0f);
    assert_int_equal(checked_to_float(0.0, &f), CHECKED_OK);
    assert_true(f == 0.0f);
    assert_int_equal(checked_to_float(1e-45, &f), CHECKED_OK); /* the smallest denormal */
    assert_true(f > 0.0f);
    assert_int_equal(checked_to_float(FLT_MAX, &f), CHECKED_OK);
    assert_true(f == FLT_MAX);
}

static void every_status_has_its_rule_in_words(void **state) {
    (void)state;
    assert_string_equal(checked_why(CHECKED_OK), "");
    assert_string_equal(checked_why(CHECKED_NOT_INTEGER), "is not an integer");
    assert_string_equal(checked_why(CHECKED_OUT_OF_RANGE), "is out of range");
    assert_string_equal(checked_why(CHECKED_NOT_FINITE), "is not a finite number");
    assert_string_equal(checked_why(CHECKED_BECOMES_ZERO), "is not 0 but would become 0");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(products_that_wrap_are_refused_and_write_nothing),
        cmocka_unit_test(parsed_integers_outside_their_range_are_never_wrapped),
        cmocka_unit_test(a_list_is_read_one_number_at_a_time_and_the_bad_one_printed_as_typed),
        cmocka_unit_test(float_to_integer_refuses_other_meanings),
        cmocka_unit_test(double_to_float_refuses_inf_and_underflow_to_zero),
        cmocka_unit_test(every_status_has_its_rule_in_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
