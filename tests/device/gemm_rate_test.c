/* gemm_rate_test.c — the sgemm rate: the TRIDENT_GEMM_RATE override and its bad values, the
 * per-machine cache (measured once, then read back), and what a job of several ranks sharing
 * a few cores is compared with. No timing is asserted beyond "a positive rate". */
#include "src/device/gemm_rate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testing.h"

static void test_override_wins(void **state) {
    (void)state;
    setenv("TRIDENT_GEMM_RATE", "2.5e10", 1);
    gemm_rate r = gemm_rate_get(1, 64, 32, 128);
    unsetenv("TRIDENT_GEMM_RATE");
    assert_true(r.flops_per_s == 2.5e10);
    assert_string_equal(r.source, "TRIDENT_GEMM_RATE");
}

static void get_with_bad_override(const void *arg) {
    setenv("TRIDENT_GEMM_RATE", (const char *)arg, 1);
    gemm_rate_get(1, 64, 32, 128);
    exit(0);
}

static void test_bad_override_names_the_value(void **state) {
    (void)state;
    const char *bad[] = {"fast", "-3", "0", "1e10x"};
    for (int i = 0; i < 4; i++) {
        char out[4096];
        int rc = run_in_child(get_with_bad_override, bad[i], out, sizeof out);
        assert_int_not_equal(rc, 0);
        char want[64];
        snprintf(want, sizeof want, "TRIDENT_GEMM_RATE='%s'", bad[i]);
        if (!strstr(out, want)) fail_msg("no '%s' in: %s", want, out);
    }
}

static void test_measured_once_then_cached(void **state) {
    (void)state;
    const char *dir = test_tmpdir("gemm_rate_cache");
    setenv("XDG_CACHE_HOME", dir, 1);
    unsetenv("TRIDENT_GEMM_RATE");
    gemm_rate a = gemm_rate_get(1, 32, 16, 64);
    assert_string_equal(a.source, "measured");
    assert_true(a.flops_per_s > 0);
    gemm_rate b = gemm_rate_get(1, 32, 16, 64);
    assert_string_equal(b.source, "cached");
    assert_true(fabs(b.flops_per_s - a.flops_per_s) <= 1e-5 * a.flops_per_s); /* %.6g */
    gemm_rate c = gemm_rate_get(1, 32, 16, 32); /* another shape: its own line */
    assert_string_equal(c.source, "measured");
    char path[4096];
    assert_true(gemm_rate_cache_path(path, sizeof path));
    char want[4200];
    snprintf(want, sizeof want, "%s/trident/gemm-rate", dir);
    assert_string_equal(path, want);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    int lines = 0, ours = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        if (strstr(line, "| threads 1 | 32x16x64\t")) ours++;
    }
    fclose(f);
    assert_int_equal(lines, 2);
    assert_int_equal(ours, 1);
    unsetenv("XDG_CACHE_HOME");
}

static void test_job_peak_counts_the_cores_not_the_ranks(void **state) {
    (void)state;
    gemm_rate r = {.flops_per_s = 10.0, .threads = 1};
    assert_true(gemm_rate_job_peak(&r, 8, 2) == 20.0); /* 8 ranks on 2 cores: 2 at once */
    assert_true(gemm_rate_job_peak(&r, 1, 2) == 10.0); /* one rank: one process's rate */
    r.threads = 4;
    assert_true(gemm_rate_job_peak(&r, 2, 2) == 10.0); /* 4 threads on 2 cores: one at once */
    r.threads = 2;
    assert_true(gemm_rate_job_peak(&r, 4, 8) == 40.0);
    assert_true(gemm_rate_cores() >= 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_override_wins),
        cmocka_unit_test(test_bad_override_names_the_value),
        cmocka_unit_test(test_measured_once_then_cached),
        cmocka_unit_test(test_job_peak_counts_the_cores_not_the_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
