/* schedule_cmd_test.c — `trident schedule` end to end: the text grid, the exact JSON shape,
 * pictures in three formats, and one clear line (non-zero exit, no file) for bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/trace/trace.h"
#include "tests/support/testing.h"

static char g_out[1 << 16];

/* Runs `trident schedule <args>`; returns the exit status, output in g_out. */
static int schedule(const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' schedule %s", test_trident_path(), args);
    return run_capture(cmd, g_out, sizeof g_out);
}

static void expect_output(const char *needle) {
    if (!strstr(g_out, needle)) fail_msg("output does not contain '%s':\n%s", needle, g_out);
}

static void squeeze(char *s) { /* drop all whitespace */
    char *w = s;
    for (char *r = s; *r; r++)
        if (*r != ' ' && *r != '\n' && *r != '\t' && *r != '\r') *w++ = *r;
    *w = 0;
}

static void text_prints_the_grid_idle_and_bubbles(void **state) {
    (void)state;
    assert_int_equal(
        schedule("--pipeline-model-parallel-size 4 --num-microbatches 8 --pipeline-schedule 1f1b"),
        0);
    /* default costs: a backward takes twice a forward (two cells) */
    expect_output("rank 0 F0 F1 F2 F3 .  .  .  .  .  .  B0 B0 F4 B1 B1");
    expect_output("rank 3 .  .  .  F0 B0 B0 F1 B1 B1");
    expect_output("makespan 33\n"); /* (m+p-1)(F+B) = 11 * 3 */
    expect_output("27.3%");         /* simulated = (p-1)/(m+p-1) = 3/11 */
    expect_output("(p-1)/(m+p-1) = 27.3%");
    expect_output("(p-1)/m = 37.5%");
    assert_int_equal(
        schedule("--pipeline-model-parallel-size 2 --num-microbatches 2 --pipeline-schedule gpipe "
                 "--forward-cost 1 --backward-cost 2"),
        0);
    /* a backward takes two cells; rank 0 waits for rank 1's backward of 0 */
    expect_output("rank 0 F0 F1 .  .  .  B0 B0 B1 B1\n");
    expect_output("rank 1 .  F0 F1 B0 B0 B1 B1 .  .\n");
}

/* A chunk of the interleaved schedule costs 1/v of a stage: the same work in less time. */
/* zbv: two chunks implied, chunk 1 named c1, W's listed, the zero-bubble textbook line. */
static void zbv_lists_both_chunks_and_its_ws(void **state) {
    (void)state;
    assert_int_equal(
        schedule("--pipeline-model-parallel-size 4 --num-microbatches 8 --pipeline-schedule zbv"),
        0);
    expect_output("v = 2 model chunks per rank");
    expect_output("rank 3 .    .    .    F0c0 F0c1 F1c0");
    expect_output("W0c1");
    expect_output("bubble (simulated): 5.9% of the total time");
    expect_output("bubble (textbook, F = B = W):  (p-1)/(6m+p-1) = 5.9% of the total time, "
                  "(p-1)/(6m) = 6.2% of the ideal time");
}

static void interleaving_is_faster_at_default_costs(void **state) {
    (void)state;
    assert_int_equal(schedule("--pipeline-model-parallel-size 4 --num-microbatches 8 "
                              "--pipeline-schedule interleaved"),
                     0);
    expect_output("costs of one chunk: forward 0.5, backward 1, p2p latency 0");
    expect_output(
        "makespan 28.5\n"); /* 24 of work + (p-1)(F+B)/v = 4.5 of bubble, below 1f1b's 33 */
    expect_output("bubble (simulated): 15.8%");
}

/* --costs-from RUN_DIR: the mean CPU time of one chunk's forward and backward in a run (here
 * 2 ranks time-sharing one core: wall twice the CPU), the first step left out as warm-up. */
static void costs_come_from_a_run(void **state) {
    (void)state;
    const char *dir = test_tmpdir("schedule_cmd_costs");
    for (int k = 0; k < 2; k++) {
        trace_header h = {0};
        h.rank = k, h.world_size = 2, h.tp = 1, h.pp = 2, h.dp = 1, h.vpp = 1, h.pp_rank = k;
        h.num_microbatches = 2;
        strcpy(h.schedule, "1f1b");
        strcpy(h.run_id, "costs");
        h.config_json = "{}";
        trace_recorder *t = trace_create(&h, 64);
        double now = 0;
        for (int step = 0; step < 2; step++)
            for (int i = 0; i < 4; i++) {
                double cpu = i < 2 ? 0.010 : 0.020;
                if (step == 0) cpu *= 5; /* warm-up: left out */
                trace_record(t, i < 2 ? TRACE_FORWARD : TRACE_BACKWARD, step, i % 2, 0, now,
                             now + 2 * cpu);
                ((trace_event *)trace_event_at(t, trace_num_events(t) - 1))->cpu = cpu;
                now += 2 * cpu;
            }
        char path[4200];
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, k);
        trace_write(t, path);
        trace_destroy(t);
    }
    char args[4400];
    snprintf(args, sizeof args, "--costs-from '%s'", dir);
    assert_int_equal(schedule(args), 0);
    expect_output("p = 2 pipeline ranks, m = 2 micro-batches"); /* the run's layout */
    expect_output("costs of one chunk: forward 0.01, backward 0.02, p2p latency 0");
    expect_output("mean of 4 forwards and 4 backwards");
    expect_output("from thread CPU time");
}

/* --compare: several schedules at the same sizes and costs, their grids one after the other
 * (or one stacked picture); a bad name or a schedule that refuses the sizes is named. */
static void compare_lists_every_schedule(void **state) {
    (void)state;
    assert_int_equal(schedule("--pipeline-model-parallel-size 4 --num-microbatches 8 "
                              "--compare 1f1b,zb-h1,zbv,dualpipev"),
                     0);
    expect_output("1f1b schedule: p = 4 pipeline ranks, m = 8 micro-batches");
    expect_output("zb-h1 schedule: p = 4");
    expect_output("zbv schedule: p = 4");
    expect_output("dualpipev schedule: p = 4");
    char args[4400];
    snprintf(args, sizeof args,
             "--pipeline-model-parallel-size 4 --num-microbatches 8 --compare 1f1b,zbv -o "
             "%s/cmp.png",
             test_tmpdir("schedule_cmd_compare"));
    assert_int_equal(schedule(args), 0);
    expect_output("(2 schedules, p = 4, m = 8: 1f1b 27.3%, zbv 5.9%)");
    assert_int_not_equal(
        schedule("--pipeline-model-parallel-size 4 --num-microbatches 8 --compare 1f1b,zigzag"), 0);
    expect_output("unknown schedule 'zigzag'");
    assert_int_not_equal(
        schedule("--pipeline-model-parallel-size 4 --num-microbatches 4 --compare 1f1b,dualpipev"),
        0);
    expect_output("dualpipev: m = 4 micro-batches is fewer than 2p = 8");
}

static void json_is_exactly_the_action_lists(void **state) {
    (void)state;
    assert_int_equal(
        schedule("--pipeline-model-parallel-size 2 --num-microbatches 2 --format json"), 0);
    squeeze(g_out);
    assert_string_equal(
        g_out, "{\"0\":[\"F0\",\"F1\",\"B0\",\"B1\"],\"1\":[\"F0\",\"B0\",\"F1\",\"B1\"]}");
    assert_int_equal(
        schedule(
            "--pipeline-model-parallel-size 2 --num-microbatches 2 --pipeline-schedule interleaved "
            "--format=json"),
        0);
    squeeze(g_out);
    assert_string_equal(
        g_out, "{\"0\":[\"F0c0\",\"F1c0\",\"F0c1\",\"F1c1\",\"B0c1\",\"B1c1\",\"B0c0\",\"B1c0\"],"
               "\"1\":[\"F0c0\",\"F1c0\",\"F0c1\",\"B0c1\",\"F1c1\",\"B1c1\",\"B0c0\",\"B1c0\"]}");
    /* -o x.json writes the same document to the file */
    const char *dir = test_tmpdir("schedule_cmd_json");
    char args[4400], path[4200];
    snprintf(path, sizeof path, "%s/s.json", dir);
    snprintf(args, sizeof args, "--pipeline-model-parallel-size 2 --num-microbatches 2 -o '%s'",
             path);
    assert_int_equal(schedule(args), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(g_out, 1, sizeof g_out - 1, f);
    g_out[n] = 0;
    fclose(f);
    squeeze(g_out);
    assert_string_equal(
        g_out, "{\"0\":[\"F0\",\"F1\",\"B0\",\"B1\"],\"1\":[\"F0\",\"B0\",\"F1\",\"B1\"]}");
}

static void pictures_are_written_in_three_formats(void **state) {
    (void)state;
    const char *dir = test_tmpdir("schedule_cmd_pictures");
    const char *ext[3] = {"png", "svg", "pdf"};
    const char *magic[3] = {"\x89PNG", "<?xml", "%PDF"};
    for (int i = 0; i < 3; i++) {
        char path[4200], args[4400];
        snprintf(path, sizeof path, "%s/sched.%s", dir, ext[i]);
        snprintf(
            args, sizeof args,
            "--pipeline-model-parallel-size 4 --num-microbatches 8 --pipeline-schedule interleaved "
            "--virtual-stages 2 --backward-cost 2 -o '%s'",
            path);
        assert_int_equal(schedule(args), 0);
        FILE *f = fopen(path, "rb");
        if (!f) fail_msg("%s was not written: %s", path, g_out);
        char head[8] = {0};
        assert_true(fread(head, 1, 5, f) >= 4);
        fseek(f, 0, SEEK_END);
        assert_true(ftell(f) > 1000);
        fclose(f);
        assert_memory_equal(head, magic[i], strlen(magic[i]));
    }
    char ls[4400];
    snprintf(ls, sizeof ls, "ls '%s' | grep -c tmp", dir);
    run_capture(ls, g_out, sizeof g_out);
    assert_int_equal(atoi(g_out), 0); /* no temporaries left behind */
}

static void expect_failure(const char *args, const char *needle) {
    int st = schedule(args);
    if (st == 0) fail_msg("'%s' succeeded but should fail", args);
    expect_output(needle);
}

static void bad_input_fails_with_one_clear_line(void **state) {
    (void)state;
    expect_failure(
        "--pipeline-model-parallel-size 4 --num-microbatches 6 --pipeline-schedule interleaved",
        "trident schedule: m = 6 micro-batches is not a multiple of the pipeline size p = 4");
    expect_failure(
        "--pipeline-model-parallel-size 4 --num-microbatches 8 --pipeline-schedule interleaved "
        "--virtual-stages 1",
        "v = 1");
    expect_failure("--pipeline-model-parallel-size 4 --num-microbatches 8 --virtual-stages 2",
                   "needs the interleaved schedule");
    expect_failure("--num-microbatches 8", "--pipeline-model-parallel-size 0 must be at least 1");
    expect_failure("--pipeline-model-parallel-size 2 --num-microbatches 0",
                   "--num-microbatches 0 must be at least 1");
    expect_failure(
        "--pipeline-model-parallel-size 2 --num-microbatches 2 --pipeline-schedule zigzag",
        "--pipeline-schedule must be one of gpipe|1f1b|interleaved|zb-h1|zbv|dualpipev, got "
        "'zigzag'");
    expect_failure("--pipeline-model-parallel-size 2 --num-microbatches 2 --backward-cost -1",
                   "--backward-cost -1 must be positive");
    const char *dir = test_tmpdir("schedule_cmd_bad");
    char args[4400], path[4200];
    snprintf(path, sizeof path, "%s/x.bmp", dir);
    snprintf(args, sizeof args, "--pipeline-model-parallel-size 2 --num-microbatches 2 -o '%s'",
             path);
    expect_failure(args, "must end in .png, .svg, .pdf, .json or .txt");
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/x.png", dir);
    snprintf(args, sizeof args,
             "--pipeline-model-parallel-size 2 --num-microbatches 2 --format json -o '%s'", path);
    expect_failure(args, "--format json does not match the output");
    assert_int_equal(access(path, F_OK), -1);
}

/* --build K: one PDF of K pages, or K numbered frames named in the output; with --compare
 * too; nothing else left in the directory (no staged frames, no temporaries). */
static void build_writes_k_pages_or_k_frames(void **state) {
    (void)state;
    const char *dir = test_tmpdir("schedule_cmd_build");
    char args[4400], path[4200];
    snprintf(path, sizeof path, "%s/deck.pdf", dir);
    snprintf(args, sizeof args,
             "--pipeline-model-parallel-size 4 --num-microbatches 8 --build 4 --theme slides "
             "-o '%s'",
             path);
    assert_int_equal(schedule(args), 0);
    expect_output("(4 pages)");
    assert_int_equal(test_pdf_pages(path), 4);
    snprintf(path, sizeof path, "%s/frame.png", dir);
    snprintf(args, sizeof args,
             "--pipeline-model-parallel-size 4 --num-microbatches 8 --compare 1f1b,zb-h1 "
             "--build 3 --arrows --title 'Fill and drain' -o '%s'",
             path);
    assert_int_equal(schedule(args), 0);
    expect_output("frame-01.png .. ");
    expect_output("frame-03.png (3 frames)");
    for (int k = 1; k <= 3; k++) {
        snprintf(path, sizeof path, "%s/frame-%02d.png", dir, k);
        if (access(path, F_OK) != 0) fail_msg("%s missing: %s", path, g_out);
    }
    snprintf(args, sizeof args, "ls '%s' | wc -l", dir);
    run_capture(args, g_out, sizeof g_out);
    assert_int_equal(atoi(g_out), 4); /* deck.pdf and three frames, nothing staged */
}

/* Bad --build, --title or a picture flag without a picture: one line, nothing written. */
static void bad_picture_flags_fail_with_one_clear_line(void **state) {
    (void)state;
    const char *dir = test_tmpdir("schedule_cmd_bad_build");
    char args[4400], path[4200];
    const char *base = "--pipeline-model-parallel-size 2 --num-microbatches 2";
    snprintf(path, sizeof path, "%s/d.pdf", dir);
    snprintf(args, sizeof args, "%s --build 0 -o '%s'", base, path);
    expect_failure(args, "--build 0 must be between 1 and 64");
    snprintf(args, sizeof args, "%s --build 65 -o '%s'", base, path);
    expect_failure(args, "--build 65 must be between 1 and 64");
    snprintf(args, sizeof args, "%s --build four -o '%s'", base, path);
    expect_failure(args, "--build 'four' is not a number of pages (1 to 64)");
    snprintf(args, sizeof args, "%s --title '' -o '%s'", base, path);
    expect_failure(args, "--title expects a non-empty value");
    snprintf(args, sizeof args, "%s --title \"$(printf 'a\\tb')\" -o '%s'", base, path);
    expect_failure(args, "--title has a control character (byte 0x09 at 1)");
    snprintf(args, sizeof args, "%s --title \"$(printf 'x%%.0s' $(seq 121))\" -o '%s'", base, path);
    expect_failure(args, "is 121 bytes");
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/d.txt", dir);
    snprintf(args, sizeof args, "%s --build 4 -o '%s'", base, path);
    expect_failure(args, "are for pictures");
    expect_failure("--pipeline-model-parallel-size 2 --num-microbatches 2 --arrows",
                   "without -o the schedule is printed as text");
    assert_int_equal(access(path, F_OK), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_prints_the_grid_idle_and_bubbles),
        cmocka_unit_test(zbv_lists_both_chunks_and_its_ws),
        cmocka_unit_test(compare_lists_every_schedule),
        cmocka_unit_test(interleaving_is_faster_at_default_costs),
        cmocka_unit_test(costs_come_from_a_run),
        cmocka_unit_test(json_is_exactly_the_action_lists),
        cmocka_unit_test(pictures_are_written_in_three_formats),
        cmocka_unit_test(bad_input_fails_with_one_clear_line),
        cmocka_unit_test(build_writes_k_pages_or_k_frames),
        cmocka_unit_test(bad_picture_flags_fail_with_one_clear_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
