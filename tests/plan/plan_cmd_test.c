/* plan_cmd_test.c — `trident plan` end to end with a calibration file written by hand:
 *   - every layout of the demo's world (8 ranks), fastest first, in under 10 seconds;
 *   - --memory-limit: no row above it, fewer rows than without;
 *   - a row's memory is `trident memory`'s for the same flags (one code path);
 *   - --explain prints the named terms;
 *   - --ranks-per-node: the hosts line names the network's numbers, the table which groups
 *     span hosts (tp 4 on hosts of 2 does, tp 2 does not);
 *   - bad input: one line naming the value, exit 1 (world size, limit, an impossible world,
 *     a corrupt calibration, another model's, none at all, ranks per node);
 *   - --distinct keeps one row per predicted step; --flags-of ROW prints that row's flags alone;
 *   - a --calibrate that fails leaves the good calibration it would replace as it was.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/clock.h"
#include "tests/support/testing.h"

static char g_out[1 << 20];
static char g_cal[4200];

static const char k_calibration[] =
    "trident-plan-calibration 2\nmachine Test CPU\nmodel 4 64 4 64 4 128 0 0\nthreads 1\n"
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

/* trident memory's largest rank for `flags` at 8 ranks is `mb` MB (to the table's 2 decimals). */
static void memory_matches(const char *flags, double mb) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' memory --world-size 8 %s --format json", test_trident_path(),
             flags);
    assert_int_equal(run_capture(cmd, g_out, sizeof g_out), 0);
    /* the ranks' totals come before the ZeRO table's: take the largest of the ranks only */
    double most = 0;
    const char *end = strstr(g_out, "zero_stages_rank0");
    for (const char *p = strstr(g_out, "\"total\":"); p && p < end; p = strstr(p + 1, "\"total\":"))
        if (atof(p + 8) > most) most = atof(p + 8);
    if (abs((int)(most / 1e4 + 0.5) - (int)(mb * 100 + 0.5)) > 0)
        fail_msg("plan says %.2f MB, trident memory %.0f bytes (%s)", mb, most, flags);
}

/* Row `row` of the 8-rank table: its memory equals trident memory's for its flags. */
static void memory_of_row_is_trident_memorys(int row) {
    char args[4400], needle[32];
    snprintf(args, sizeof args, "--world-size 8 --calibration '%s' --top %d", g_cal, row);
    assert_int_equal(plan(args), 0);
    static double mb[4096];
    assert_int_equal(rows_memory(mb, 4096), row);
    snprintf(needle, sizeof needle, "\n%4d ", row);
    const char *line = strstr(g_out, needle);
    assert_non_null(line);
    char flags[1024];
    const char *f = strstr(line, "  --");
    assert_non_null(f);
    snprintf(flags, sizeof flags, "%.*s", (int)strcspn(f + 2, "\n"), f + 2);
    memory_matches(flags, mb[row - 1]);
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

/* Rows 1, 2, 50 and 500's memory is trident memory's largest rank for the same flags. */
static void memory_is_trident_memorys(void **state) {
    (void)state;
    const int picks[] = {1, 2, 50, 500};
    for (size_t i = 0; i < sizeof picks / sizeof picks[0]; i++)
        memory_of_row_is_trident_memorys(picks[i]);
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

/* The line of the table whose flags are exactly `flags` (then a newline), or fails. */
static const char *row_with_flags(const char *flags) {
    char needle[1100];
    snprintf(needle, sizeof needle, "  %s\n", flags);
    const char *hit = strstr(g_out, needle);
    if (!hit) fail_msg("no row with flags '%s':\n%.3000s", flags, g_out);
    const char *start = hit;
    while (start > g_out && start[-1] != '\n') start--;
    return start;
}

/* Hosts of 2 ranks: tp 4 spans them, tp 2 does not; the numbers the network terms used are
 * printed, and a layout with tp across hosts is ranked below the same with tp inside. */
static void ranks_per_node_marks_groups_across_hosts(void **state) {
    (void)state;
    char args[4400];
    snprintf(args, sizeof args,
             "--world-size 8 --calibration '%s' --top 100000 --ranks-per-node 2 "
             "--inter-node-bandwidth 2 --inter-node-latency 30",
             g_cal);
    assert_int_equal(plan(args), 0);
    expect_output("hosts: 4 of 2 ranks each");
    expect_output("2 GB/s, 30 µs per message step (given, not measured");
    expect_output("across hosts  trident train flags");
    const char *tp4 = row_with_flags("--tensor-model-parallel-size 4");
    const char *tp2 = row_with_flags("--tensor-model-parallel-size 2");
    if (!strstr(tp4, " tp+dp  --")) fail_msg("tp 4 on hosts of 2: %.200s", tp4);
    if (!strstr(tp2, " dp  --")) fail_msg("tp 2 on hosts of 2: %.200s", tp2);
    int r4 = atoi(tp4), r2 = atoi(tp2);
    double step4 = 0, step2 = 0, step_inside = 0;
    sscanf(tp4, "%*d %*f %lf", &step4);
    sscanf(tp2, "%*d %*f %lf", &step2);
    snprintf(args, sizeof args, "--world-size 8 --calibration '%s' --top 100000 --ranks-per-node 4",
             g_cal);
    assert_int_equal(plan(args), 0);
    sscanf(row_with_flags("--tensor-model-parallel-size 4"), "%*d %*f %lf", &step_inside);
    if (!(r4 > r2 && step4 > step2 && step4 > step_inside))
        fail_msg("tp 4 across hosts: row %d, %.3f ms; tp 2 inside: row %d, %.3f ms; tp 4 inside "
                 "hosts of 4: %.3f ms",
                 r4, step4, r2, step2, step_inside);
}

/* The flags of the table's line that starts with row `row` (its text after "  --"). */
static void flags_of_line(const char *line, char *out, size_t cap) {
    const char *f = strstr(line, "  --");
    assert_non_null(f);
    snprintf(out, cap, "%.*s", (int)strcspn(f + 2, "\n"), f + 2);
}

/* --distinct: no two rows predict the same step, and fewer rows than layouts; --flags-of 1 and
 * -1 print the first and the last row's flags and nothing else. */
static void distinct_rows_and_flags_of(void **state) {
    (void)state;
    char args[4400], first[1024], last[1024], got[1024];
    snprintf(args, sizeof args, "--world-size 8 --calibration '%s' --top 100000 --distinct", g_cal);
    assert_int_equal(plan(args), 0);
    expect_output("1446 under the memory limit, ");
    expect_output(" predicted distinctly, predicted in ");
    static double mb[4096];
    const int n = rows_memory(mb, 4096);
    assert_true(n > 1 && n < 1446);
    double prev = 0;
    const char *line = strstr(g_out, "trident train flags\n") + 20;
    for (int i = 0; i < n; i++, line = strchr(line, '\n') + 1) {
        double step;
        assert_int_equal(sscanf(line, "%*d %*f %lf", &step), 1);
        if (i > 0 && !(step > prev)) fail_msg("row %d: step %.3f ms after %.3f", i + 1, step, prev);
        prev = step;
        if (i == 0) flags_of_line(line, first, sizeof first);
        if (i == n - 1) flags_of_line(line, last, sizeof last);
    }
    snprintf(args, sizeof args, "--world-size 8 --calibration '%s' --distinct --flags-of 1", g_cal);
    assert_int_equal(plan(args), 0);
    snprintf(got, sizeof got, "%s\n", first);
    assert_string_equal(g_out, got);
    snprintf(args, sizeof args, "--world-size 8 --calibration '%s' --distinct --flags-of -1",
             g_cal);
    assert_int_equal(plan(args), 0);
    snprintf(got, sizeof got, "%s\n", last);
    assert_string_equal(g_out, got);
}

/* A --calibrate that fails (no mpirun on the PATH for the links worker) exits with one line
 * and leaves the good calibration file byte for byte as it was. */
static void failed_calibration_keeps_the_good_one(void **state) {
    (void)state;
    char cmd[8400], before[4096], after[4096];
    FILE *f = fopen(g_cal, "r");
    assert_non_null(f);
    const size_t n = fread(before, 1, sizeof before - 1, f);
    fclose(f);
    before[n] = 0;
    snprintf(cmd, sizeof cmd,
             "env PATH=/nonexistent '%s' plan --world-size 2 --calibrate --calibration '%s'",
             test_trident_path(), g_cal);
    const int rc = run_capture(cmd, g_out, sizeof g_out);
    if (rc == 0 || rc >= 128) fail_msg("exit %d, want 1 to 127:\n%s", rc, g_out);
    expect_output("the links worker failed");
    f = fopen(g_cal, "r");
    assert_non_null(f);
    const size_t m = fread(after, 1, sizeof after - 1, f);
    fclose(f);
    after[m] = 0;
    assert_string_equal(after, before);
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
    write_file(bad, "trident-plan-calibration 2\nmachine x\ngemm oops\n");
    snprintf(args, sizeof args, "--world-size 2 --calibration '%s'", bad);
    expect_refused(args, "is corrupt at line 3");
    snprintf(args, sizeof args, "--world-size 8 --calibration '%s' --ranks-per-node 3", g_cal);
    expect_refused(args, "--ranks-per-node '3' must be a whole number from 1 to --world-size 8 "
                         "that divides it");
    snprintf(args, sizeof args, "--world-size 8 --calibration '%s' --ranks-per-node 0", g_cal);
    expect_refused(args, "--ranks-per-node '0' must be");
    snprintf(args, sizeof args,
             "--world-size 8 --calibration '%s' --ranks-per-node 4 --inter-node-bandwidth -1",
             g_cal);
    expect_refused(args, "--inter-node-bandwidth '-1' must be a positive number of GB/s");
    snprintf(args, sizeof args, "--world-size 8 --calibration '%s' --flags-of 0", g_cal);
    expect_refused(args, "--flags-of '0' must be a row of the table: 1 to 1446, or -1 to -1446");
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
        cmocka_unit_test(ranks_per_node_marks_groups_across_hosts),
        cmocka_unit_test(failed_calibration_keeps_the_good_one),
        cmocka_unit_test(distinct_rows_and_flags_of),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
