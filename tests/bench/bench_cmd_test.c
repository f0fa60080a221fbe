/* bench_cmd_test.c — `trident bench --quick` as a user runs it: the shape of the table, not
 * the timings (the numbers depend on the machine; the columns, suites and files do not).
 *
 * - every suite contributes its rows, each row has five cells and a PASS/MISS/info verdict;
 * - RUN_DIR/bench.md holds the same table plus the commands that measured it, and
 *   RUN_DIR/bench.png is a PNG;
 * - the device suite (not in `all` on the cpu) gives its fp32 and bf16 rows on cpu and
 *   cpu-guarded;
 * - bad flags give one line naming the value, a non-zero exit and no files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/testing.h"

static char g_out[1 << 20];

static int bench(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s bench %s", test_trident_path(), args);
    return run_capture(cmd, g_out, sizeof g_out);
}

/* Number of table rows of `suite` in text (lines "| suite | ..."), checking each row's shape. */
static int count_rows(const char *text, const char *suite) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "| %s | ", suite);
    int n = 0;
    for (const char *line = text; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, prefix, strlen(prefix)) != 0) continue;
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        int pipes = 0;
        for (size_t i = 0; i < len; i++) pipes += line[i] == '|';
        assert_int_equal(pipes, 6);
        char row[1024];
        snprintf(row, sizeof row, "%.*s", (int)len, line);
        assert_true(strstr(row, "| PASS |") || strstr(row, "| MISS |") || strstr(row, "| info |"));
        n++;
    }
    return n;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void quick_run_prints_every_suites_rows(void **state) {
    (void)state;
    const char *dir = test_tmpdir("bench_quick");
    char args[4400];
    snprintf(args, sizeof args, "--quick --run-dir %s/run", dir);
    int rc = bench(args);
    if (rc != 0) printf("%s\n", g_out);
    assert_int_equal(rc, 0);
    snprintf(args, sizeof args, "%s/run", dir); /* the traced runs it measured are causal */
    assert_true(assert_run_traces_causal_under(args) > 0);
    assert_non_null(
        strstr(g_out, "| suite | ratio measured side by side | value | target | verdict |"));
    /* serial: the FLOP/s ratio + attention; pipeline: 6 schedules × 4 (p, m), less dualpipev at
     * p = 4, m = 4 (it needs m >= 2p), + 4 interleaved, 4 zb-h1 and 4 zbv ratios; memory: 2 × 4 + ZeRO + 11 layouts' peak ÷ predicted + 2 ZeRO
     * savings; comm: 2 timings + TP + 2 PP; scaling: 3;
     * trace: 1; zero: dp 2 and 4 × two sizes; generate: 2. */
    assert_int_equal(count_rows(g_out, "serial"), 2);
    assert_int_equal(count_rows(g_out, "pipeline"), 35);
    assert_int_equal(count_rows(g_out, "memory"), 22);
    assert_int_equal(count_rows(g_out, "comm"), 5);
    assert_int_equal(count_rows(g_out, "scaling"), 3);
    assert_int_equal(count_rows(g_out, "trace"), 1);
    assert_int_equal(count_rows(g_out, "zero"), 4);
    assert_int_equal(count_rows(g_out, "overlap"), 5); /* 3 exposed ratios, 2 step times */
    assert_non_null(strstr(g_out, "ZeRO optimizer step ÷ old copying step (dp=4,"));
    assert_int_equal(count_rows(g_out, "generate"), 2); /* KV cache per token + total */
    assert_int_equal(count_rows(g_out, "analyze"),
                     12); /* 4 schedules: p = 2 wall and replay, p = 4 */
    assert_non_null(strstr(g_out, "model FLOP/s ÷ sgemm FLOP/s"));
    /* Counted bytes are exact, whatever the machine. */
    assert_non_null(strstr(
        g_out, "TP bytes per step (tp=2), counted ÷ formula | 1.000000 | 1 exactly | PASS |"));

    char path[4400];
    snprintf(path, sizeof path, "%s/run/bench.md", dir);
    char *md = slurp(path);
    assert_non_null(md);
    assert_int_equal(count_rows(md, "pipeline"), 35);
    assert_non_null(strstr(md, "### commands that measured it"));
    assert_non_null(strstr(md, "mpirun -np 4 trident train --pipeline-model-parallel-size 4"));
    snprintf(path, sizeof path, "%s/run/bench.png", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char magic[8] = {0};
    assert_int_equal(fread(magic, 1, 8, f), 8);
    fclose(f);
    assert_memory_equal(magic, "\x89PNG\r\n\x1a\n", 8);
}

static void one_suite_runs_alone(void **state) {
    (void)state;
    const char *dir = test_tmpdir("bench_comm");
    char args[4400];
    snprintf(args, sizeof args, "--suite comm --quick --run-dir %s/run", dir);
    assert_int_equal(bench(args), 0);
    assert_int_equal(count_rows(g_out, "comm"), 5);
    assert_int_equal(count_rows(g_out, "serial"), 0);
}

/* The plan suite, which `all` leaves out, runs by name (it once did nothing: the suite table
 * counted 11 of 12): with --quick 3 layouts at 2 and 3 at 4 ranks, four judged rows per rank
 * count and four information rows of the 2-rank wall clock, and the scatter picture. */
static void plan_suite_runs_by_name(void **state) {
    (void)state;
    const char *dir = test_tmpdir("bench_plan");
    char args[4400], png[4400];
    snprintf(args, sizeof args, "--suite plan --quick --run-dir %s/run", dir);
    assert_int_equal(bench(args), 0);
    assert_int_equal(count_rows(g_out, "plan"), 12);
    snprintf(png, sizeof png, "%s/run/plan-scatter.png", dir);
    FILE *f = fopen(png, "rb");
    assert_non_null(f);
    fclose(f);
}

/* The device suite on the CPU devices (a GPU runs it with --device cuda): one row per
 * precision, fp32 and bf16 (the trainer's --bf16 sets the device's bf16 linear products), each
 * with its note; cpu-guarded runs the same path on guarded memory. */
static void device_suite_has_an_fp32_and_a_bf16_row(void **state) {
    (void)state;
    const char *dir = test_tmpdir("bench_device");
    const char *devices[2] = {"cpu", "cpu-guarded"};
    for (int i = 0; i < 2; i++) {
        char args[4400];
        snprintf(args, sizeof args, "--suite device --device %s --quick --run-dir %s/run%d",
                 devices[i], dir, i);
        int rc = bench(args);
        if (rc != 0) printf("%s\n", g_out);
        assert_int_equal(rc, 0);
        assert_int_equal(count_rows(g_out, "device"), 2);
        char want[128];
        snprintf(want, sizeof want, "| device | %s fp32: model FLOP/s ÷ GEMM FLOP/s", devices[i]);
        assert_non_null(strstr(g_out, want));
        snprintf(want, sizeof want, "| device | %s bf16: model FLOP/s ÷ GEMM FLOP/s", devices[i]);
        assert_non_null(strstr(g_out, want));
        assert_non_null(strstr(g_out, "operands rounded to bf16 values, OpenBLAS sgemm"));
    }
}

static void bad_flags_name_the_value_and_write_nothing(void **state) {
    (void)state;
    const char *dir = test_tmpdir("bench_bad");
    char args[4400];
    snprintf(args, sizeof args, "--suite fast --run-dir %s/run", dir);
    assert_int_not_equal(bench(args), 0);
    assert_non_null(strstr(g_out, "fast"));
    int lines = 0;
    for (const char *c = g_out; *c; c++) lines += *c == '\n';
    assert_true(lines <= 1); /* one line */
    snprintf(args, sizeof args, "--worker nope --run-dir %s/run", dir);
    assert_int_not_equal(bench(args), 0);
    assert_non_null(strstr(g_out, "--worker nope"));
    char path[4400];
    snprintf(path, sizeof path, "%s/run", dir);
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_flags_name_the_value_and_write_nothing),
        cmocka_unit_test(one_suite_runs_alone),
        cmocka_unit_test(plan_suite_runs_by_name),
        cmocka_unit_test(device_suite_has_an_fp32_and_a_bf16_row),
        cmocka_unit_test(quick_run_prints_every_suites_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
