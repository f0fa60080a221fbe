/* axis_test.c — the one tick function of viz/: 1-2-5 steps, ranges widened to whole steps
 * with a bounded number of intervals for any finite values within VIZ_AXIS_LIMIT, and
 * refusals (not loops) for non-finite or overflowing ranges. */
#include "viz/axis.h"

#include <float.h>
#include <math.h>

#include "tests/support/testing.h"

static void steps_are_one_two_five_times_a_power_of_ten(void **state) {
    (void)state;
    assert_true(viz_axis_step(1) == 1);
    assert_true(viz_axis_step(1.5) == 2);
    assert_true(viz_axis_step(3) == 5);
    assert_true(viz_axis_step(7) == 10);
    assert_true(fabs(viz_axis_step(0.003) - 0.005) < 1e-18);
    assert_true(viz_axis_step(0) == 1 && viz_axis_step(-3) == 1);
    assert_true(viz_axis_step(INFINITY) == 1 && viz_axis_step(NAN) == 1);
    assert_true(isfinite(viz_axis_step(DBL_MAX)) && viz_axis_step(4.9e-324) > 0);
}

/* The axis of lo..hi holds both, is finite, and has 1..VIZ_AXIS_MAX_INTERVALS intervals. */
static void expect_axis(double lo, double hi) {
    viz_axis a;
    assert_true(viz_axis_of(lo, hi, 4, &a));
    assert_true(isfinite(a.lo) && isfinite(a.hi) && a.lo < a.hi && a.step > 0);
    assert_true(a.lo <= lo && hi <= a.hi);
    assert_true(a.intervals >= 1 && a.intervals <= VIZ_AXIS_MAX_INTERVALS);
    assert_true(fabs(a.lo + a.intervals * a.step - a.hi) <= 1e-9 * (a.hi - a.lo));
}

static void every_finite_range_within_the_limit_has_a_bounded_axis(void **state) {
    (void)state;
    expect_axis(0, 1);
    expect_axis(2.31, 7.9);
    expect_axis(5, 5);
    expect_axis(0, 0);
    expect_axis(-0.0, 0.0);
    expect_axis(4.9e-324, 4.9e-324); /* denormal: padded by 1 */
    expect_axis(1e-320, 1e-310);
    expect_axis(-VIZ_AXIS_LIMIT, VIZ_AXIS_LIMIT);
    expect_axis(VIZ_AXIS_LIMIT, VIZ_AXIS_LIMIT);
    expect_axis(1e-300, VIZ_AXIS_LIMIT);
    expect_axis(1e20, 1e20 + 1e5);
    viz_axis a;
    assert_true(viz_axis_of(0, 1, 4, &a));
    assert_true(a.lo == 0 && a.hi == 1 && a.step == 0.5 && a.intervals == 2);
}

static void ranges_an_axis_cannot_span_are_refused(void **state) {
    (void)state;
    viz_axis a = {1, 2, 1, 1};
    assert_false(viz_axis_of(-1e308, 1e308, 4, &a)); /* the width overflows */
    assert_false(viz_axis_of(1e308, 1e308, 4, &a));  /* the padding would */
    assert_false(viz_axis_of(-DBL_MAX, 0, 4, &a));
    assert_false(viz_axis_of(0, INFINITY, 4, &a));
    assert_false(viz_axis_of(NAN, 1, 4, &a));
    assert_false(viz_axis_of(2, 1, 4, &a));
    assert_true(a.lo == 1 && a.hi == 2); /* untouched */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(steps_are_one_two_five_times_a_power_of_ten),
        cmocka_unit_test(every_finite_range_within_the_limit_has_a_bounded_axis),
        cmocka_unit_test(ranges_an_axis_cannot_span_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
