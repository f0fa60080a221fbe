/* trainer_cli_test.c — `trident train` and `trident eval` as a user runs them (serial).
 *
 * - the default configuration learns: the loss falls far beyond noise over a few hundred steps;
 * - a run saved halfway and resumed gives bit-identical losses to an uninterrupted run;
 * - eval prints a mean loss for a checkpoint;
 * - bad input gives one clear line naming the problem, a non-zero exit, and overwrites nothing;
 * - --sequence-parallel without tensor parallelism is ignored with a note, as in Megatron;
 * - a run with nothing to do (--train-iters 0, a checkpoint already there) says so, exit 0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/testing.h"

static char g_out[1 << 16];


static int run(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s %s", test_trident_path(), args);
    int rc = run_capture(cmd, g_out, sizeof g_out);
    return rc;
}

static void the_default_model_learns(void **state) {
    (void)state;
    const char *dir = test_tmpdir("learns");
    char args[4400];
    snprintf(args, sizeof args, "train --run-dir %s/run --log-interval 25 --no-trace", dir);
    assert_int_equal(run(args), 0);
    double loss[64];
    int n = read_metric_losses(strcat(strcpy(args, dir), "/run"), loss, 64);
    assert_true(n >= 10);
    /* ln 256 = 5.545 at the start; the synthetic data's letters alone are ln 16 = 2.77. */
    printf("  loss %.4f -> %.4f over %d logged steps\n", loss[0], loss[n - 1], n);
    assert_true(loss[0] > 4.0);
    assert_true(loss[n - 1] < loss[0] - 2.0);
    assert_non_null(strstr(g_out, "done:"));
}

static void resume_is_bit_identical(void **state) {
    (void)state;
    const char *dir = test_tmpdir("resume");
    char a[4400];
    const char *common = "--train-iters 16 --log-interval 1 --no-trace --quiet --lr-warmup-iters 4";
    snprintf(a, sizeof a, "train %s --run-dir %s/full", common, dir);
    assert_int_equal(run(a), 0);
    snprintf(a, sizeof a, "train %s --run-dir %s/first --save %s/ck --save-interval 8", common, dir,
             dir);
    assert_int_equal(run(a), 0);
    /* the save at 8 became "latest" first; remove the final one to resume from 8 */
    snprintf(a, sizeof a, "rm -rf %s/ck/iter_0000016 && echo 8 > %s/ck/latest", dir, dir);
    assert_int_equal(system(a), 0);
    snprintf(a, sizeof a, "train %s --run-dir %s/second --load %s/ck", common, dir, dir);
    assert_int_equal(run(a), 0);
    assert_non_null(strstr(g_out, "done: 8 iterations"));
    double full[32], second[32];
    char p[4400];
    snprintf(p, sizeof p, "%s/full", dir);
    int nf = read_metric_losses(p, full, 32);
    snprintf(p, sizeof p, "%s/second", dir);
    int ns = read_metric_losses(p, second, 32);
    assert_int_equal(nf, 16);
    assert_int_equal(ns, 8);
    for (int i = 0; i < 8; i++) {
        if (full[8 + i] != second[i])
            fail_msg("step %d: uninterrupted %.9g, resumed %.9g", 9 + i, full[8 + i], second[i]);
    }
}

static void eval_scores_a_checkpoint(void **state) {
    (void)state;
    const char *dir = test_tmpdir("eval");
    char a[4400];
    snprintf(a, sizeof a, "train --train-iters 3 --no-trace --quiet --run-dir %s/r --save %s/ck",
             dir, dir);
    assert_int_equal(run(a), 0);
    snprintf(a, sizeof a, "eval --load %s/ck", dir);
    assert_int_equal(run(a), 0);
    const char *p = strstr(g_out, "eval: mean loss ");
    assert_non_null(p);
    double loss = atof(p + strlen("eval: mean loss "));
    assert_true(loss > 1.0 && loss < 6.0);
    snprintf(
        a, sizeof a,
        "printf 'hello trident, this is a small text file for evaluation. %%0300d' 7 > %s/t.txt",
        dir);
    assert_int_equal(system(a), 0);
    snprintf(a, sizeof a, "eval --load %s/ck --data-path %s/t.txt", dir, dir);
    assert_int_equal(run(a), 0);
    assert_non_null(strstr(g_out, "eval: mean loss "));
}

/* One bad invocation: non-zero exit and the expected words on one line. */
static void expect_error(const char *args, const char *words) {
    int rc = run(args);
    if (rc == 0) fail_msg("'%s' succeeded; expected an error containing '%s'", args, words);
    if (!strstr(g_out, words)) fail_msg("'%s' printed:\n%s\nexpected: '%s'", args, g_out, words);
    /* one line: no stack of messages */
    int lines = 0;
    for (const char *c = g_out; *c; c++) lines += *c == '\n';
    if (lines > 2) fail_msg("'%s' printed %d lines:\n%s", args, lines, g_out);
}

static void bad_input_gives_one_clear_line(void **state) {
    (void)state;
    const char *dir = test_tmpdir("bad");
    char a[4400];
    expect_error("train --no-such-flag 3", "unknown flag '--no-such-flag'");
    expect_error("train --hidden-size 30 --num-attention-heads 4",
                 "--hidden-size 30 is not divisible by --num-attention-heads 4");
    expect_error("train --num-layers abc", "--num-layers expects an integer, got 'abc'");
    snprintf(a, sizeof a, "train --data-path %s/missing.txt --run-dir %s/r", dir, dir);
    expect_error(a, "missing.txt");
    expect_error("train --global-batch-size 10 --micro-batch-size 4",
                 "--global-batch-size 10 is not divisible by --micro-batch-size 4");
    expect_error("train --pipeline-schedule zigzag",
                 "--pipeline-schedule must be one of gpipe|1f1b|interleaved");
    expect_error("train --tensor-model-parallel-size 2", "world size 1 is not divisible");
    /* ZeRO stages: contradicting flags, and what ZeRO-2/3 do not take */
    expect_error("train --use-distributed-optimizer --data-parallel-sharding-strategy no_shard",
                 "shards nothing: give one of them");
    expect_error("train --data-parallel-sharding-strategy optim_grads --fp16",
                 "optim_grads does not support --fp16");
    expect_error("train --data-parallel-sharding-strategy optim_grads_params --overlap-grad-reduce",
                 "optim_grads_params does not take --overlap-grad-reduce");
    expect_error("train --data-parallel-sharding-strategy zero3",
                 "--data-parallel-sharding-strategy must be one of no_shard|optim|optim_grads");
    expect_error("eval", "--load CHECKPOINT_DIR is required");
    snprintf(a, sizeof a, "eval --load %s/nothing", dir);
    expect_error(a, "no checkpoint there");
    expect_error("frobnicate", "unknown subcommand 'frobnicate'");
}

static void a_corrupt_checkpoint_is_refused_and_nothing_is_overwritten(void **state) {
    (void)state;
    const char *dir = test_tmpdir("corrupt");
    char a[4400];
    snprintf(
        a, sizeof a,
        "train --train-iters 2 --log-interval 1 --no-trace --quiet --run-dir %s/r --save %s/ck",
        dir, dir);
    assert_int_equal(run(a), 0);
    char file[4400];
    snprintf(file, sizeof file, "%s/ck/iter_0000002/rank_00000.tck", dir);
    struct stat st;
    assert_int_equal(stat(file, &st), 0);
    /* truncated */
    snprintf(a, sizeof a, "cp %s %s.good && truncate -s %ld %s", file, file, (long)st.st_size / 2,
             file);
    assert_int_equal(system(a), 0);
    snprintf(a, sizeof a,
             "train --train-iters 4 --no-trace --quiet --run-dir %s/r2 --load %s/ck --save %s/ck",
             dir, dir, dir);
    expect_error(a, "truncated");
    snprintf(a, sizeof a, "%s/r2/metrics.jsonl", dir);
    assert_int_not_equal(stat(a, &st), 0); /* the failed run wrote no metrics file */
    /* one flipped byte in the middle */
    snprintf(a, sizeof a,
             "cp %s.good %s && printf '\\x55' | dd of=%s bs=1 seek=%ld conv=notrunc status=none",
             file, file, file, (long)st.st_size > 0 ? 4000L : 4000L);
    assert_int_equal(system(a), 0);
    snprintf(a, sizeof a, "eval --load %s/ck", dir);
    expect_error(a, "checkpoint");
    /* the run directory's earlier metrics are untouched by a failing run */
    snprintf(a, sizeof a, "%s/r/metrics.jsonl", dir);
    assert_int_equal(stat(a, &st), 0);
    assert_true(st.st_size > 0);
}

/* A run with nothing to do says so in one line and exits 0 (resuming a finished run is not an
 * error), never "loss nan -> nan"; it writes no metrics, having no loss to report. */
static void a_run_with_nothing_to_do_says_so(void **state) {
    (void)state;
    const char *dir = test_tmpdir("nothing");
    const char *tiny = "--num-layers 1 --hidden-size 8 --num-attention-heads 1 --seq-length 4 "
                       "--global-batch-size 1 --micro-batch-size 1 --no-trace";
    char a[4400];
    snprintf(a, sizeof a, "train %s --train-iters 0 --run-dir %s/zero", tiny, dir);
    assert_int_equal(run(a), 0);
    assert_non_null(strstr(g_out, "trident train: nothing to do: --train-iters 0 trains no step"));
    assert_null(strstr(g_out, "nan"));
    struct stat st;
    snprintf(a, sizeof a, "%s/zero/metrics.jsonl", dir);
    assert_int_not_equal(stat(a, &st), 0);
    snprintf(a, sizeof a, "train %s --quiet --train-iters 2 --run-dir %s/r --save %s/ck", tiny, dir,
             dir);
    assert_int_equal(run(a), 0);
    snprintf(a, sizeof a, "train %s --quiet --train-iters 2 --run-dir %s/again --load %s/ck", tiny,
             dir, dir);
    assert_int_equal(run(a), 0);
    char want[4400];
    snprintf(want, sizeof want,
             "trident train: nothing to do: the checkpoint '%s/ck' is at iteration 2 and "
             "--train-iters is 2 (raise --train-iters to train on)",
             dir);
    if (!strstr(g_out, want)) fail_msg("expected '%s', got:\n%s", want, g_out);
    assert_null(strstr(g_out, "nan"));
    /* one line, and the checkpoint is untouched: a later --train-iters trains on from it */
    int lines = 0;
    for (const char *p = g_out; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 1);
    snprintf(a, sizeof a, "train %s --quiet --train-iters 3 --run-dir %s/more --load %s/ck", tiny,
             dir, dir);
    assert_int_equal(run(a), 0);
    assert_null(strstr(g_out, "nothing to do"));
}

static void sequence_parallel_at_tp_1_is_ignored_with_a_note(void **state) {
    (void)state;
    const char *dir = test_tmpdir("sp_tp1");
    char a[4400];
    snprintf(a, sizeof a,
             "train --sequence-parallel --num-layers 1 --hidden-size 16 --seq-length 8 "
             "--train-iters 2 --quiet --no-trace --run-dir %s/r",
             dir);
    assert_int_equal(run(a), 0);
    if (!strstr(g_out, "note: --sequence-parallel ignored: --tensor-model-parallel-size is 1"))
        fail_msg("no note that --sequence-parallel is ignored at tp 1:\n%s", g_out);
    snprintf(a, sizeof a, "%s/r/config.json", dir);
    FILE *f = fopen(a, "r");
    assert_non_null(f);
    size_t n = fread(g_out, 1, sizeof g_out - 1, f);
    g_out[n] = 0;
    fclose(f);
    assert_non_null(strstr(g_out, "\"sequence_parallel\":false"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_input_gives_one_clear_line),
        cmocka_unit_test(resume_is_bit_identical),
        cmocka_unit_test(eval_scores_a_checkpoint),
        cmocka_unit_test(a_corrupt_checkpoint_is_refused_and_nothing_is_overwritten),
        cmocka_unit_test(the_default_model_learns),
        cmocka_unit_test(sequence_parallel_at_tp_1_is_ignored_with_a_note),
        cmocka_unit_test(a_run_with_nothing_to_do_says_so),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
