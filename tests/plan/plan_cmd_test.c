/* plan_cmd_test.c — `trident plan` end to end with a calibration file written by hand:
 *   - every layout of the demo's world (8 ranks), fastest first, in under 10 seconds;
 *   - --memory-limit: no row above it, fewer rows than without;
 *   - a row's memory is `trident memory`'s for the same flags (one code path);
 *   - --explain prints the named terms;
 *   - bad input: one line naming the value, exit 1 (world size, limit, an impossible world,
 *     a corrupt calibration, another model's, none at all).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/clock.h"
#include "tests/support/testing.h"

static char g_out[1 << 20];
static char g_cal[4200];

static const char k_calibration[] =
    "trident-plan-calibration 1\nmachine Test CPU\nmodel 4 64 4 64 4 128 0 0\nthreads 1\n"
    "gemm 256 64 192 4e9\ngemm 64 16 64 2e9\nelementwise 1e8\noptimizer 5e8\n"
    "block 6e-4 9e-4\nhead 3e-4 4e-4\nlink p2p 5e-6 3e-10 0 measured\n"
    "link all-reduce 5e-6 4e-10 0 measured\nlink reduce-scatter 5e-6 5e-10 0 measured\n"
    "link all-gather 5e-6 3e-10 0 measured\nlink all-to-all 5e-6 4e-10 0 measured\nend\n";

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state) {
    (void)state;
    snprintf(g_cal, sizeof g_cal, "%s/calibration", test_tmpdir("plan-cmd"));
    write_file(g_cal, k_calibration);
    return 0;
}

static int plan(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' plan %s", test_trident_path(), args);
    return run_capture(cmd, g_out, sizeof g_out);
}

static void expect_output(const char *needle) {
    if (!strstr(g_out, needle)) fail_msg("output does not contain '%s':\n%.3000s", needle, g_out);
}

/* The table's rows: memory MB (column 7) of each, and how many. */
static int rows_memory(double *mb, int cap) {
    int n = 0;
    for (const char *p = strstr(g_out, "trident train flags\n"); p && (p = strchr(p, '\n'));) {
        p++;
        int row;
        double tps, step, comp, comm, bub, mem;
        if (sscanf(p, "%d %lf %lf %lf %lf %lf %lf", &row, &tps, &step, &comp, &comm, &bub, &mem) !=
            7)
            break;
        if (n < cap) mb[n] = mem;
        n++;
    }
    return n;
}

static void lists_every_layout_of_8_ranks_fast(void **state) {
    (void)state;
    char args[4400];
    snprintf(args, sizeof args, "--world-size 8 --calibration '%s' --top 100000", g_cal);
    const double t0 = time_now();
    assert_int_equal(plan(args), 0);
    assert_true(time_now() - t0 < 10);
    expect_output("trident plan: 1446 layouts train accepts on 8 ranks, 1446 under the memory");
    static double mb[4096];
    assert_int_equal(rows_memory(mb, 4096), 1446);
}

static void memory_limit_drops_layouts_over_it(void **state) {
    (void)state;
    char args[4400];
    snprintf(args, sizeof args, "--world-size 8 --calibration '%s' --top 100000 --memory-limit 6e6",
             g_cal);
    assert_int_equal(plan(args), 0);
    static double mb[4096];
    const int n = rows_memory(mb, 4096);
    assert_true(n > 0 && n < 1446);
    for (int i = 0; i < n; i++)
        if (mb[i] > 6.0) fail_msg("row %d holds %.2f MB, over the limit of 6 MB", i + 1, mb[i]);
}

/* Row 1's memory is trident memory's largest rank for the same flags. */
static void memory_is_trident_memorys(void **state) {
    (void)state;
    char args[4400];
    snprintf(args, sizeof args, "--world-size 8 --calibration '%s' --top 1", g_cal);
    assert_int_equal(plan(args), 0);
    double mb[1];
    assert_int_equal(rows_memory(mb, 1), 1);
    const char *row = strstr(g_out, "\n   1 ");
    assert_non_null(row);
    char flags[1024];
    const char *f = strstr(row, "  --");
    assert_non_null(f);
    snprintf(flags, sizeof flags, "%.*s", (int)strcspn(f + 2, "\n"), f + 2);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' memory --world-size 8 %s --format json", test_trident_path(),
             flags);
    assert_int_equal(run_capture(cmd, g_out, sizeof g_out), 0);
    /* the ranks' totals come before the ZeRO table's: take the largest of the ranks only */
    double most = 0;
    const char *end = strstr(g_out, "zero_stages_rank0");
    for (const char *p = strstr(g_out, "\"total\":"); p && p < end; p = strstr(p + 1, "\"total\":"))
        if (atof(p + 8) > most) most = atof(p + 8);
    if (abs((int)(most / 1e4 + 0.5) - (int)(mb[0] * 100 + 0.5)) > 0)
        fail_msg("plan says %.2f MB, trident memory %.0f bytes (%s)", mb[0], most, flags);
}

static void explain_names_the_terms(void **state) {
    (void)state;
    char args[4400];
    snprintf(args, sizeof args, "--world-size 2 --calibration '%s' --explain 1", g_cal);
    assert_int_equal(plan(args), 0);
    const char *terms[] = {"layer_gemm", "attention_gemm", "elementwise", "tp_comm",
                           "cp_comm",    "ep_comm",        "recompute",   "pipeline",
                           "bubble",     "dp_comm",        "optimizer",   "step"};
    for (size_t i = 0; i < sizeof terms / sizeof terms[0]; i++) expect_output(terms[i]);
}

static void expect_refused(const char *args, const char *phrase) {
    const int rc = plan(args);
    if (rc == 0 || rc >= 128) fail_msg("'%s': exit %d, want 1 to 127", args, rc);
    expect_output(phrase);
    if (strchr(g_out, '\n') != g_out + strlen(g_out) - 1)
        fail_msg("'%s': more than one line:\n%s", args, g_out);
}

static void bad_input_gets_one_line(void **state) {
    (void)state;
    char args[4400], bad[4200];
    expect_refused("--world-size 0", "--world-size 0 must be 1 to 1024");
    snprintf(args, sizeof args, "--world-size 3 --calibration '%s'", g_cal);
    expect_refused(args, "no layout of this model runs on --world-size 3 ranks");
    snprintf(args, sizeof args, "--world-size 2 --calibration '%s' --memory-limit lots", g_cal);
    expect_refused(args, "--memory-limit 'lots' must be a positive number of bytes");
    snprintf(args, sizeof args, "--world-size 2 --calibration '%s' --num-layers 8", g_cal);
    expect_refused(args, "was made for another model (layers 4");
    snprintf(bad, sizeof bad, "%s/calibration", test_tmpdir("plan-cmd-corrupt"));
    write_file(bad, "trident-plan-calibration 1\nmachine x\ngemm oops\n");
    snprintf(args, sizeof args, "--world-size 2 --calibration '%s'", bad);
    expect_refused(args, "is corrupt at line 3");
    snprintf(args, sizeof args, "--world-size 2 --calibration '%s' --memory-limit 1", g_cal);
    expect_refused(args, "no layout fits --memory-limit 1 bytes per rank");
    char env[4400];
    snprintf(env, sizeof env, "env XDG_CACHE_HOME='%s' '%s' plan --world-size 2",
             test_tmpdir("plan-cmd-empty-cache"), test_trident_path());
    const int rc = run_capture(env, g_out, sizeof g_out);
    assert_true(rc > 0 && rc < 128);
    expect_output("no calibration of this machine for this model");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lists_every_layout_of_8_ranks_fast),
        cmocka_unit_test(memory_limit_drops_layouts_over_it),
        cmocka_unit_test(memory_is_trident_memorys),
        cmocka_unit_test(explain_names_the_terms),
        cmocka_unit_test(bad_input_gets_one_line),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
