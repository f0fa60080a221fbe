/* render_cmd_test.c — `trident render` end to end: every output format from a run directory,
 * several runs at once, and bad input (missing directory, bad extension, corrupt trace,
 * unknown step) answered by one clear line, a non-zero exit and no output file. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/testing.h"
#include "tests/viz/pipeline_fixture.h"

static char g_out[16384];

static int render(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s render %s", test_trident_path(), args);
    return run_capture(cmd, g_out, sizeof g_out);
}

static long size_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void every_format_is_written(void **state) {
    (void)state;
    const char *base = test_tmpdir("render");
    char run[4200], run2[4200], args[9000], out[4300];
    snprintf(run, sizeof run, "%s/run1f1b", base);
    snprintf(run2, sizeof run2, "%s/rungpipe", base);
    fixture_run a = fixture_defaults("1f1b", 2, 4, 1), b = fixture_defaults("gpipe", 2, 4, 1);
    fixture_write_run(run, &a);
    fixture_write_run(run2, &b);
    const char *exts[] = {"png", "svg", "pdf", "json", "txt"};
    for (int i = 0; i < 5; i++) {
        snprintf(out, sizeof out, "%s/t.%s", base, exts[i]);
        snprintf(args, sizeof args, "%s %s -o %s --arrows", run, run2, out);
        int rc = render(args);
        if (rc != 0) fail_msg("render to .%s failed (%d): %s", exts[i], rc, g_out);
        assert_true(size_of(out) > 200);
    }
    snprintf(args, sizeof args, "%s --step 0 --output=%s/s0.txt", run, base);
    assert_int_equal(render(args), 0);
    snprintf(out, sizeof out, "%s/s0.txt", base);
    FILE *f = fopen(out, "r");
    char text[8192] = "";
    assert_true(fread(text, 1, sizeof text - 1, f) > 0);
    fclose(f);
    assert_non_null(strstr(text, "step 0"));
    assert_non_null(strstr(text, "stage 1  rank 1"));
    /* Every row says what its time was; the fixture's DP all-reduce waits for the slowest. */
    assert_non_null(strstr(text, "| compute "));
    assert_non_null(strstr(text, "~"));
    assert_non_null(strstr(text, "bubble measured: "));
    assert_non_null(strstr(text, "wait + idle"));
}

/* Runs `args` and expects failure: status != 0, one line naming `needle`, no `out` left. */
static void expect_refusal(const char *args, const char *needle, const char *out) {
    int rc = render(args);
    if (rc == 0) fail_msg("'%s' succeeded", args);
    if (!strstr(g_out, needle) || lines(g_out) != 1)
        fail_msg("'%s': want one line with '%s', got: %s", args, needle, g_out);
    if (strncmp(g_out, "trident render: ", 16) != 0 && strncmp(g_out, "trident: ", 9) != 0)
        fail_msg("unexpected prefix: %s", g_out);
    assert_int_equal(size_of(out), -1);
}

static void bad_input_is_one_line_and_no_file(void **state) {
    (void)state;
    const char *base = test_tmpdir("render_bad");
    char run[4200], out[4300], args[9000];
    snprintf(run, sizeof run, "%s/run", base);
    fixture_run a = fixture_defaults("1f1b", 2, 2, 1);
    fixture_write_run(run, &a);
    snprintf(out, sizeof out, "%s/out.png", base);

    snprintf(args, sizeof args, "%s/missing -o %s", base, out);
    expect_refusal(args, "does not exist", out);

    snprintf(out, sizeof out, "%s/out.bmp", base);
    snprintf(args, sizeof args, "%s -o %s", run, out);
    expect_refusal(args, "the extension must be .png, .svg, .pdf, .json or .txt", out);

    snprintf(out, sizeof out, "%s/out.png", base);
    snprintf(args, sizeof args, "%s", run);
    expect_refusal(args, "-o FILE is required", out);

    snprintf(args, sizeof args, "%s -o %s --step 9", run, out);
    expect_refusal(args, "step 9 is not a complete step", out);

    /* A corrupt rank file: named, with its byte offset. */
    char rank1[4300];
    snprintf(rank1, sizeof rank1, "%s/trace/rank1.trace", run);
    assert_int_equal(truncate(rank1, 100), 0);
    snprintf(args, sizeof args, "%s -o %s", run, out);
    expect_refusal(args, "rank1.trace': truncated at byte 100", out);
    snprintf(out, sizeof out, "%s/out.json", base);
    snprintf(args, sizeof args, "%s -o %s", run, out);
    expect_refusal(args, "rank1.trace': truncated at byte 100", out);
}

/* --replay draws the run re-timed, through the same renderer, under a label saying so;
 * --replay-and-wall stacks the wall clock and the replay. */
static void replay_is_drawn_and_labelled(void **state) {
    (void)state;
    const char *base = test_tmpdir("render_replay");
    char run[4200], args[9000], out[4300];
    snprintf(run, sizeof run, "%s/run", base);
    fixture_run a = fixture_defaults("1f1b", 2, 4, 1);
    fixture_write_run(run, &a);
    snprintf(out, sizeof out, "%s/r.txt", base);
    snprintf(args, sizeof args, "%s -o %s --replay", run, out);
    if (render(args) != 0) fail_msg("--replay failed: %s", g_out);
    FILE *f = fopen(out, "r");
    char text[16384] = "";
    assert_true(fread(text, 1, sizeof text - 1, f) > 0);
    fclose(f);
    if (!strstr(text, "replay: as if each rank had its own core")) fail_msg("no replay label in:\n%s", text);
    snprintf(out, sizeof out, "%s/both.png", base);
    snprintf(args, sizeof args, "%s -o %s --replay-and-wall", run, out);
    if (render(args) != 0) fail_msg("--replay-and-wall failed: %s", g_out);
    assert_non_null(strstr(g_out, "(2 runs"));
    assert_true(size_of(out) > 1000);
    snprintf(args, sizeof args, "%s -o %s --replay --replay-and-wall", run, out);
    expect_refusal(args, "exclude each other", "/nonexistent");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_format_is_written),
        cmocka_unit_test(bad_input_is_one_line_and_no_file),
        cmocka_unit_test(replay_is_drawn_and_labelled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
