/* bench_chart_test.c — the benchmark chart: bars are as long as their scores, the target line
 * sits at score 1, information rows have no bar, large scores are clipped; the PNG is written. */
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

#include "tests/support/testing.h"
#include "viz/bench_chart.h"
#include "viz/canvas.h"

/* The label audit of viz/canvas.h found nothing in the picture just drawn. */
static void expect_no_layout_violations(void) {
    char bad[8192];
    if (viz_last_violations(bad, sizeof bad)) fail_msg("%s", bad);
}

static const viz_bench_bar k_bars[] = {
    {"serial: ratio", "0.62", "≥ 0.60", 0.62 / 0.6},
    {"comm: ratio", "1.50", "≤ 1.20", 1.2 / 1.5},
    {"scaling: speed-up", "1.80", "—", NAN},
    {"memory: bytes", "2.000", "2 ± 1%", 9.0},
};

static void bars_are_as_long_as_their_scores(void **state) {
    (void)state;
    viz_bench_layout l;
    viz_bench_chart_layout(k_bars, 4, &l);
    const double unit = l.target_x - l.axis_x0; /* length of score 1 */
    assert_true(unit > 0);
    assert_true(fabs(l.bars[0].w - unit * (0.62 / 0.6)) < 1e-9);
    assert_true(l.bars[0].x + l.bars[0].w > l.target_x); /* passing: ends right of the line */
    assert_true(l.bars[1].x + l.bars[1].w < l.target_x); /* missing: ends left of it */
    assert_true(l.bars[2].w == 0);                       /* information: no bar */
    assert_true(l.clipped[3]);
    assert_true(fabs(l.bars[3].x + l.bars[3].w - l.axis_x1) < 1e-9);
    for (int i = 1; i < 4; i++) assert_true(l.baseline[i] > l.baseline[i - 1]);
    assert_true(l.baseline[3] < l.height);
    viz_bench_layout_free(&l);
}

static void the_chart_is_written_as_png(void **state) {
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/bench.png", test_tmpdir("bench_chart"));
    viz_bench_chart_draw(k_bars, 4, "test", path);
    expect_no_layout_violations();
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 1000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bars_are_as_long_as_their_scores),
        cmocka_unit_test(the_chart_is_written_as_png),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
