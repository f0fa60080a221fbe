/* demo_test.c — README command (1), the demo, as CI runs it: 8 ranks on 2 cores
 * (oversubscribed), TP2 × PP2 × DP2, interleaved 1F1B, ZeRO. It must train (the loss clearly
 * falls), learn its task (the held-out loss of its final line within 0.3 nats of the data's
 * floor, which dataset_loss_floor computes for the default sequence length) and leave the
 * timeline (PNG + Chrome JSON), the groups, ZeRO and loss pictures, and
 * its trace must be causal (no receive before its send, no collective before its last member). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/data/dataset.h"
#include "src/train/config.h"
#include "tests/support/testing.h"

static char g_out[1 << 18];

static void expect_picture(const char *dir, const char *name, long min_bytes) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    if (stat(path, &st) != 0) fail_msg("the demo did not write %s", path);
    if (st.st_size < min_bytes) fail_msg("%s has only %ld bytes", path, (long)st.st_size);
    if (strstr(name, ".png")) {
        FILE *f = fopen(path, "rb");
        unsigned char sig[8] = {0};
        assert_int_equal(fread(sig, 1, 8, f), 8);
        fclose(f);
        assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
    }
    if (!strstr(g_out, path)) fail_msg("the demo did not print the path %s", path);
}

static void the_demo_trains_and_draws_its_pictures(void **state) {
    (void)state;
    const char *dir = test_tmpdir("demo");
    char cmd[8192], run[4400];
    snprintf(run, sizeof run, "%s/run", dir);
    const char *srcdir = getenv("TEST_SRCDIR"), *ws = getenv("TEST_WORKSPACE");
    char script[4400];
    snprintf(script, sizeof script, "%s/%s/tools/demo.sh", srcdir ? srcdir : ".", ws ? ws : ".");
    /* TRIDENT_LAYOUT_CHECK: every picture the demo draws passes the label audit */
    snprintf(cmd, sizeof cmd, "TRIDENT_LAYOUT_CHECK=1 TRIDENT_BIN=%s RUN_DIR=%s bash %s",
             test_trident_path(), run, script);
    int rc = run_capture(cmd, g_out, sizeof g_out);
    if (rc != 0) {
        for (const char *l = strstr(g_out, "layout: "); l; l = strstr(l + 1, "layout: "))
            printf("  %.*s\n", (int)strcspn(l, "\n"), l); /* the label audit's findings */
        printf("%s\n", g_out);
        fail_msg("demo exited %d (its output above)", rc);
    }
    assert_non_null(strstr(g_out, "8 ranks = tensor 2 × pipeline 2 × data 2, schedule interleaved "
                                  "(2 chunks per rank), ZeRO on"));
    const char *done = strstr(g_out, "done: ");
    assert_non_null(done);
    double first = 0, last = 0;
    const char *arrow = strstr(done, "loss ");
    assert_non_null(arrow);
    assert_int_equal(sscanf(arrow, "loss %lf -> %lf", &first, &last), 2);
    printf("  demo loss %.4f -> %.4f\n", first, last);
    assert_true(last < first - 2.0);
    /* The task is learned: "...; held-out loss H (floor F, no-copy baseline N)". */
    const char *held = strstr(done, "held-out loss ");
    assert_non_null(held);
    double held_out = 0;
    assert_int_equal(sscanf(held, "held-out loss %lf", &held_out), 1);
    train_config defaults;
    train_config_defaults(&defaults);
    dataset *data = dataset_open(NULL, defaults.seq_length, (uint64_t)defaults.seed);
    double floor = dataset_loss_floor(data), no_copy = dataset_loss_no_copy(data);
    dataset_close(data);
    printf("  demo held-out loss %.4f, floor %.4f, no-copy baseline %.4f\n", held_out, floor,
           no_copy);
    if (!(held_out <= floor + 0.3))
        fail_msg("the demo did not learn its task: held-out loss %.4f > floor %.4f + 0.3", held_out,
                 floor);
    expect_picture(run, "timeline.png", 10000);
    expect_picture(run, "timeline-replay.png", 10000);
    expect_picture(run, "trace.json", 10000);
    expect_picture(run, "groups.png", 5000);
    expect_picture(run, "zero.png", 5000);
    expect_picture(run, "loss.png", 10000);
    assert_non_null(strstr(g_out, " GFLOP/s (MFU ")); /* model FLOP/s next to tokens/s */
    assert_non_null(strstr(g_out, "bubble (last step): measured"));
    assert_non_null(strstr(g_out, "bubble (last step, replay): measured"));
    assert_non_null(strstr(g_out, "p2p: shared memory")); /* the transport line of the header */
    assert_run_trace_causal(run); /* the timeline it drew is physically possible */
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(the_demo_trains_and_draws_its_pictures)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
