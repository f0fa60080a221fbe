/* render_cmd_test.c — `trident render` end to end: every output format from a run directory,
 * several runs at once, and bad input (missing directory, bad extension, corrupt trace,
 * unknown step) answered by one clear line, a non-zero exit and no output file; the same for
 * `render --metrics` (loss curves from metrics.jsonl), for `--window A:B` (part of a step) and
 * for `--ideal` / `--critical-path` (drawn over pipeline runs, refused elsewhere). */
#include <stdio.h>
#include <stdlib.h>
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
    if (!strstr(text, "replay: as if each rank had its own core"))
        fail_msg("no replay label in:\n%s", text);
    snprintf(out, sizeof out, "%s/both.png", base);
    snprintf(args, sizeof args, "%s -o %s --replay-and-wall", run, out);
    if (render(args) != 0) fail_msg("--replay-and-wall failed: %s", g_out);
    assert_non_null(strstr(g_out, "(2 runs"));
    assert_true(size_of(out) > 1000);
    snprintf(args, sizeof args, "%s -o %s --replay --replay-and-wall", run, out);
    expect_refusal(args, "exclude each other", "/nonexistent");
}

/* A run directory with metrics.jsonl (steps 1..20, held-out loss every 5) and config.json. */
static void write_metrics_run(const char *dir, int tp, int pp, int dp, double tokens_per_sec) {
    char path[4300];
    snprintf(path, sizeof path, "mkdir -p '%s'", dir);
    assert_int_equal(system(path), 0);
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int step = 1; step <= 20; step++) {
        fprintf(
            f, "{\"step\":%d,\"loss\":%.4f,\"lr\":%g,\"grad_norm\":%.3f,\"tokens_per_sec\":%.1f}\n",
            step, 5.5 - 0.12 * step, 1e-4 * step, 3.0 / step, tokens_per_sec);
        if (step % 5 == 0)
            fprintf(f, "{\"step\":%d,\"eval_loss\":%.4f}\n", step, 5.4 - 0.12 * step);
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/config.json", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"tensor_model_parallel_size\":%d,\"pipeline_model_parallel_size\":%d,"
            "\"data_parallel_size\":%d,\"pipeline_schedule\":\"1f1b\",\"use_distributed_"
            "optimizer\":%s}\n",
            tp, pp, dp, dp > 1 ? "true" : "false");
    fclose(f);
}

/* The first bytes of a file: the format's magic. */
static void expect_magic(const char *path, const char *magic) {
    char head[16] = "";
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("%s was not written", path);
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = 0;
    if (memcmp(head, magic, strlen(magic)) != 0)
        fail_msg("%s does not start with '%s'", path, magic);
}

static void metrics_of_two_runs_in_every_picture_format(void **state) {
    (void)state;
    const char *base = test_tmpdir("render_metrics");
    char serial[4200], three_d[4200], args[9000], out[4300];
    snprintf(serial, sizeof serial, "%s/serial", base);
    snprintf(three_d, sizeof three_d, "%s/3d", base);
    write_metrics_run(serial, 1, 1, 1, 9000);
    write_metrics_run(three_d, 2, 2, 2, 4000);
    const char *exts[] = {"png", "svg", "pdf"}, *magic[] = {"\x89PNG", "<?xml", "%PDF"};
    for (int i = 0; i < 3; i++) {
        snprintf(out, sizeof out, "%s/curves.%s", base, exts[i]);
        snprintf(args, sizeof args, "--metrics %s %s/ -o %s", serial, three_d, out);
        if (render(args) != 0) fail_msg("render --metrics to .%s failed: %s", exts[i], g_out);
        expect_magic(out, magic[i]);
        assert_true(size_of(out) > 2000);
        if (!strstr(g_out, "(curves of 2 runs)") || !strstr(g_out, "  serial — ") ||
            !strstr(g_out, "  tp2×pp2×dp2, 1f1b, ZeRO — "))
            fail_msg("the runs are not named by their layouts: %s", g_out);
    }
    assert_int_equal(render("--help"), 0);
    assert_non_null(strstr(g_out, "--metrics"));
}

static void metrics_bad_input_is_one_line_and_no_file(void **state) {
    (void)state;
    const char *base = test_tmpdir("render_metrics_bad");
    char run[4200], empty[4200], out[4300], args[9000], path[4400];
    snprintf(run, sizeof run, "%s/run", base);
    write_metrics_run(run, 1, 1, 1, 1000);
    snprintf(out, sizeof out, "%s/out.png", base);

    snprintf(args, sizeof args, "--metrics %s/missing -o %s", base, out);
    expect_refusal(args, "missing/metrics.jsonl cannot be opened: No such file or directory", out);

    snprintf(empty, sizeof empty, "%s/empty", base);
    write_metrics_run(empty, 1, 1, 1, 1000);
    snprintf(path, sizeof path, "%s/metrics.jsonl", empty);
    assert_int_equal(truncate(path, 0), 0);
    snprintf(args, sizeof args, "--metrics %s %s -o %s", run, empty, out);
    expect_refusal(args, "has no training steps (the file is empty)", out);

    snprintf(path, sizeof path, "%s/metrics.jsonl", empty);
    FILE *f = fopen(path, "w");
    fputs("{\"step\":1,\"loss\":5}\n{\"step\":2,\"loss\":\n", f);
    fclose(f);
    snprintf(args, sizeof args, "--metrics %s -o %s", empty, out);
    expect_refusal(args, "metrics.jsonl:2: not a flat JSON object", out);

    snprintf(out, sizeof out, "%s/out.txt", base);
    snprintf(args, sizeof args, "--metrics %s -o %s", run, out);
    expect_refusal(args, "the extension must be .png, .svg or .pdf", out);

    snprintf(out, sizeof out, "%s/out.png", base);
    snprintf(args, sizeof args, "--metrics %s -o %s --replay", run, out);
    expect_refusal(args, "are for timelines", out);

    /* A failed render leaves a good picture from before as it was. */
    snprintf(args, sizeof args, "--metrics %s -o %s", run, out);
    assert_int_equal(render(args), 0);
    long good = size_of(out);
    snprintf(args, sizeof args, "--metrics %s %s -o %s", run, empty, out);
    assert_int_not_equal(render(args), 0);
    assert_int_equal(size_of(out), good);
    expect_magic(out, "\x89PNG");
}

/* `render --moe-load`: an MoE run's metrics.jsonl drawn in every picture format; a run without
 * moe_tokens, several runs, or a non-picture extension refused with one line and no file. */
static void moe_load_is_drawn_and_a_dense_run_refused(void **state) {
    (void)state;
    const char *base = test_tmpdir("render_moe");
    char moe[4200], dense[4200], path[4300], args[9000], out[4300];
    snprintf(moe, sizeof moe, "%s/moe", base);
    snprintf(dense, sizeof dense, "%s/dense", base);
    write_metrics_run(dense, 1, 1, 1, 1000);
    snprintf(path, sizeof path, "mkdir -p '%s'", moe);
    assert_int_equal(system(path), 0);
    snprintf(path, sizeof path, "%s/metrics.jsonl", moe);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int step = 1; step <= 12; step++)
        fprintf(f,
                "{\"step\":%d,\"loss\":%.3f,\"moe_aux_loss\":0.012,\"moe_tokens\":[[%d,10,10,10],"
                "[10,10,10,10]],\"moe_dropped\":[%d,0]}\n",
                step, 5.0 - 0.1 * step, 10 + step, step % 3);
    fclose(f);
    const char *exts[] = {"png", "svg", "pdf"};
    const char *magic[] = {"\x89PNG", "<?xml", "%PDF"};
    for (int i = 0; i < 3; i++) {
        snprintf(out, sizeof out, "%s/moe_load.%s", base, exts[i]);
        snprintf(args, sizeof args, "--moe-load %s -o %s", moe, out);
        if (render(args) != 0) fail_msg("render --moe-load to .%s failed: %s", exts[i], g_out);
        expect_magic(out, magic[i]);
        assert_true(size_of(out) > 1000);
    }
    assert_non_null(strstr(g_out, "4 experts x 2 layers over 12 logged steps"));

    snprintf(out, sizeof out, "%s/refused.png", base);
    snprintf(args, sizeof args, "--moe-load %s -o %s", dense, out);
    char want[4400];
    snprintf(want, sizeof want,
             "--moe-load %s: %s/metrics.jsonl has no moe_tokens (not an MoE run)", dense, dense);
    expect_refusal(args, want, out);
    snprintf(args, sizeof args, "--moe-load %s %s -o %s", moe, dense, out);
    expect_refusal(args, "--moe-load draws one run, 2 run directories given", out);
    snprintf(args, sizeof args, "--moe-load %s -o %s/x.json", moe, base);
    expect_refusal(args, "--moe-load draws a picture, the extension must be", out);
    snprintf(args, sizeof args, "--moe-load %s --step 3 -o %s", moe, out);
    expect_refusal(args, "--moe-load draws one run's expert load", out);
    assert_int_equal(render("--help"), 0);
    assert_non_null(strstr(g_out, "--moe-load"));
}

/* --window A:B: a stack of two runs drawn through the same window (PNG and text); every bad
 * value refused with one line naming the flag, and no file. The fixture's steps last 16.5 ms. */
static void window_draws_part_of_the_step_and_bad_values_are_refused(void **state) {
    (void)state;
    const char *base = test_tmpdir("render_window");
    char run[4200], run2[4200], args[9000], out[4300];
    snprintf(run, sizeof run, "%s/run1f1b", base);
    snprintf(run2, sizeof run2, "%s/rungpipe", base);
    fixture_run a = fixture_defaults("1f1b", 2, 4, 1), b = fixture_defaults("gpipe", 2, 4, 1);
    fixture_write_run(run, &a);
    fixture_write_run(run2, &b);
    snprintf(out, sizeof out, "%s/zoom.png", base);
    snprintf(args, sizeof args, "%s %s -o %s --step 0 --window 2:6.5 --arrows", run, run2, out);
    if (render(args) != 0) fail_msg("--window failed: %s", g_out);
    expect_magic(out, "\x89PNG");
    assert_true(size_of(out) > 2000);
    snprintf(out, sizeof out, "%s/zoom.txt", base);
    snprintf(args, sizeof args, "%s %s -o %s --step 0 --window=10:99", run, run2, out);
    if (render(args) != 0) fail_msg("--window to .txt failed: %s", g_out);
    FILE *f = fopen(out, "r");
    char text[16384] = "";
    assert_true(fread(text, 1, sizeof text - 1, f) > 0);
    fclose(f);
    /* The same window for both runs, its end clipped to the longer step. */
    const char *t1 = strstr(text, ", window 10-"), *t2 = t1 ? strstr(t1 + 1, ", window 10-") : NULL;
    if (!t1 || !t2 || !strstr(text, "ms of step 0, "))
        fail_msg("no window in the titles:\n%s", text);

    snprintf(out, sizeof out, "%s/refused.png", base);
    const struct {
        const char *value, *needle;
    } bad[] = {
        {"abc", "--window 'abc' is not A:B (two numbers: milliseconds from the step's start"},
        {"5", "--window '5' is not A:B"},
        {"1:2:3", "--window '1:2:3' is not A:B"},
        {"1:", "--window '1:' is not A:B"},
        {"nan:3", "--window 'nan:3' is not A:B"},
        {"-1:5", "--window -1:5 starts before the step (A = -1 ms"},
        {"5:5", "--window 5:5 is empty (A must be less than B)"},
        {"6:2", "--window 6:2 is empty (A must be less than B)"},
        {"16.5:40", "--window 16.5:40 starts at or after the end of the step (step 0 is 16.500 ms"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "%s -o %s --step 0 --window %s", run, out, bad[i].value);
        expect_refusal(args, bad[i].needle, out);
    }
    snprintf(args, sizeof args, "%s -o %s/t.json --window 1:2", run, base);
    expect_refusal(args, "--window 1:2 is for pictures and text; a .json Chrome trace holds", out);
    snprintf(args, sizeof args, "%s/t.json", base);
    assert_int_equal(size_of(args), -1);
    snprintf(args, sizeof args, "--metrics %s -o %s --window 1:2", run, out);
    expect_refusal(args, "--window 1:2 is for timelines; --metrics draws", out);
    snprintf(args, sizeof args, "--moe-load %s -o %s --window 1:2", run, out);
    expect_refusal(args, "--window 1:2 is for timelines; --moe-load draws", out);
    assert_int_equal(render("--help"), 0);
    assert_non_null(strstr(g_out, "--window A:B draws only the milliseconds [A, B) of the step"));
}

/* --build K on a run's timeline: a PDF of K pages or K numbered frames (the names in the
 * output), --title on top; bad K, a .json build or a bad title: one line, no file. */
static void build_cuts_a_timeline_into_pages(void **state) {
    (void)state;
    const char *base = test_tmpdir("render_build");
    char run[4200], out[4300], args[9000];
    snprintf(run, sizeof run, "%s/run", base);
    fixture_run a = fixture_defaults("1f1b", 2, 4, 1);
    fixture_write_run(run, &a);
    snprintf(out, sizeof out, "%s/deck.pdf", base);
    snprintf(args, sizeof args, "%s -o %s --build 5 --title 'One step, five slides'", run, out);
    if (render(args) != 0) fail_msg("%s", g_out);
    assert_non_null(strstr(g_out, "wrote "));
    assert_non_null(strstr(g_out, "deck.pdf (5 pages)"));
    assert_int_equal(test_pdf_pages(out), 5);
    snprintf(out, sizeof out, "%s/frame.png", base);
    snprintf(args, sizeof args, "%s -o %s --build 2", run, out);
    if (render(args) != 0) fail_msg("%s", g_out);
    assert_non_null(strstr(g_out, "frame-02.png (2 frames)"));
    snprintf(out, sizeof out, "%s/frame-01.png", base);
    assert_true(size_of(out) > 1000);
    snprintf(out, sizeof out, "%s/frame-02.png", base);
    assert_true(size_of(out) > 1000);

    snprintf(out, sizeof out, "%s/bad.pdf", base);
    snprintf(args, sizeof args, "%s -o %s --build 65", run, out);
    expect_refusal(args, "--build 65 must be between 1 and 64", out);
    snprintf(out, sizeof out, "%s/bad.json", base);
    snprintf(args, sizeof args, "%s -o %s --build 4", run, out);
    expect_refusal(args, "must end in .pdf", out);
    snprintf(out, sizeof out, "%s/bad.png", base);
    snprintf(args, sizeof args, "%s -o %s --title \"$(printf 'a\\nb')\"", run, out);
    expect_refusal(args, "control character", out);
}

/* --ideal and --critical-path draw over a pipeline run's picture; they are refused, one line each, for text and Chrome traces,
 * the curves, and (--ideal) a run without pipeline parallelism. */
static void ideal_and_critical_path_are_drawn_and_refused_where_meaningless(void **state) {
    (void)state;
    const char *base = test_tmpdir("render_ideal");
    char run[4200], flat[4200], args[9000], out[4300];
    snprintf(run, sizeof run, "%s/run", base);
    fixture_run a = fixture_defaults("1f1b", 2, 4, 1);
    fixture_write_run(run, &a);
    /* both alone and together with the replay (the slides theme: pictures_test.c) */
    static const char *ok[] = {"--critical-path", "--ideal --critical-path --replay"};
    for (int i = 0; i < 2; i++) {
        snprintf(out, sizeof out, "%s/ok%d.png", base, i);
        snprintf(args, sizeof args, "%s -o %s %s", run, out, ok[i]);
        if (render(args) != 0) fail_msg("'%s' failed: %s", args, g_out);
        assert_true(size_of(out) > 1000);
    }
    snprintf(out, sizeof out, "%s/x.txt", base);
    snprintf(args, sizeof args, "%s -o %s --ideal", run, out);
    expect_refusal(args, "--ideal draws on a picture", out);
    snprintf(out, sizeof out, "%s/x.json", base);
    snprintf(args, sizeof args, "%s -o %s --critical-path", run, out);
    expect_refusal(args, "--critical-path draws on a picture", out);
    snprintf(out, sizeof out, "%s/x.png", base);
    snprintf(args, sizeof args, "--metrics %s -o %s --ideal", run, out);
    expect_refusal(args, "--ideal and --critical-path are for timelines", out);
    snprintf(flat, sizeof flat, "%s/flat", base);
    fixture_run b = fixture_defaults("1f1b", 1, 2, 1);
    fixture_write_run(flat, &b);
    snprintf(args, sizeof args, "%s -o %s --ideal", flat, out);
    expect_refusal(args, "needs pipeline parallelism, pp >= 2", out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_format_is_written),
        cmocka_unit_test(bad_input_is_one_line_and_no_file),
        cmocka_unit_test(replay_is_drawn_and_labelled),
        cmocka_unit_test(metrics_of_two_runs_in_every_picture_format),
        cmocka_unit_test(metrics_bad_input_is_one_line_and_no_file),
        cmocka_unit_test(moe_load_is_drawn_and_a_dense_run_refused),
        cmocka_unit_test(window_draws_part_of_the_step_and_bad_values_are_refused),
        cmocka_unit_test(build_cuts_a_timeline_into_pages),
        cmocka_unit_test(ideal_and_critical_path_are_drawn_and_refused_where_meaningless),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
