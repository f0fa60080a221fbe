/* checkpoint_reshard_test.c — checkpoints move between parallel layouts, survive a crash
 * mid-save, and refuse damage; driven through `trident train` under mpirun, as a user runs it.
 *
 * - saved at tp2 × pp2 × dp2 with ZeRO after N steps, loaded at other layouts (pipeline only,
 *   tensor + data without ZeRO, interleaved, tp4 with more vocabulary padding, serial): the
 *   next M steps' losses are those of an uninterrupted N+M-step run at the new layout
 *   (within 1e-5 relative: all layouts compute the same model, up to summation order);
 * - at the same layout the resume is bit-identical (bf16 + ZeRO: master-weight pieces too);
 * - ZeRO-2 and ZeRO-3 (--data-parallel-sharding-strategy optim_grads, optim_grads_params: the
 *   units layout, src/zero/fsdp.h) save pieces like ZeRO-1: a ZeRO-3 checkpoint resumes
 *   bit-identically and continues without ZeRO at another layout, a bf16 ZeRO-2 one resumes
 *   bit-identically, and a ZeRO-1 checkpoint continues under ZeRO-3;
 * - rank 0 dying halfway through writing its file (TRIDENT_TEST_CRASH_IN_SAVE) leaves the
 *   previous iteration as `latest`, and it loads and continues exactly;
 * - a flipped byte, a missing rank file or another model is refused with one line naming it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/testing.h"

/* A small model so that eight ranks on two cores stay quick. */
#define MODEL                                                                                      \
    "--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 16 "                     \
    "--global-batch-size 8 --micro-batch-size 2 --lr-warmup-iters 2 --log-interval 1 "             \
    "--no-trace --quiet"

enum { N_SAVED = 3, N_TOTAL = 6 };

static char g_out[1 << 16];

/* Runs `trident ARGS` on np ranks (np 1: no mpirun) with extra environment ENV. */
static int trident(int np, const char *env, const char *args) {
    char cmd[8192], extra[1024], mpirun[2048];
    snprintf(extra, sizeof extra, TEST_MPI_NO_SINGLE_COPY " %s", env); /* progress-thread path */
    if (np == 1) snprintf(cmd, sizeof cmd, "%s %s %s", env, test_trident_path(), args);
    else
        snprintf(cmd, sizeof cmd, "%s %s %s", test_mpirun_prefix(mpirun, sizeof mpirun, np, extra),
                 test_trident_path(), args);
    return run_capture(cmd, g_out, sizeof g_out);
}

static void must_run(int np, const char *env, const char *args) {
    int rc = trident(np, env, args);
    if (rc != 0) fail_msg("trident %s (np %d) exited %d:\n%s", args, np, rc, g_out);
}

/* A checkpoint at N_SAVED of an N_TOTAL-step run (the learning-rate schedule depends on
 * --train-iters, so the saving run must plan the same length): saved every N_SAVED steps,
 * then the final iteration is dropped and `latest` points back at N_SAVED. */
static void save_at(const char *dir, const char *ck, int np, const char *layout) {
    char a[8192];
    snprintf(a, sizeof a,
             "train " MODEL " %s --train-iters %d --save-interval %d --run-dir %s/saved --save %s",
             layout, N_TOTAL, N_SAVED, dir, ck);
    must_run(np, "", a);
    snprintf(a, sizeof a, "rm -rf %s/iter_%07d && echo %d > %s/latest", ck, N_TOTAL, N_SAVED, ck);
    assert_int_equal(system(a), 0);
}


/* Uninterrupted N_TOTAL steps vs. N_TOTAL - N_SAVED steps loaded from CK, at one layout. */
static void expect_continuation(const char *dir, const char *name, int np, const char *layout,
                                const char *ck, double rtol) {
    char a[8192], run[4400];
    snprintf(a, sizeof a, "train " MODEL " %s --train-iters %d --run-dir %s/%s_full", layout,
             N_TOTAL, dir, name);
    must_run(np, "", a);
    snprintf(a, sizeof a, "train " MODEL " %s --train-iters %d --run-dir %s/%s_loaded --load %s",
             layout, N_TOTAL, dir, name, ck);
    must_run(np, "", a);
    double full[16], loaded[16];
    snprintf(run, sizeof run, "%s/%s_full", dir, name);
    assert_int_equal(read_metric_losses(run, full, 16), N_TOTAL);
    snprintf(run, sizeof run, "%s/%s_loaded", dir, name);
    assert_int_equal(read_metric_losses(run, loaded, 16), N_TOTAL - N_SAVED);
    for (int i = 0; i < N_TOTAL - N_SAVED; i++) {
        double want = full[N_SAVED + i], got = loaded[i];
        if (!(fabs(got - want) <= rtol * fabs(want)))
            fail_msg("%s (%s): step %d: uninterrupted %.9g, loaded %.9g", name, layout,
                     N_SAVED + i + 1, want, got);
    }
    printf("  %-12s %-70s losses %.7f %.7f %.7f match\n", name, layout, loaded[0], loaded[1],
           loaded[2]);
}

static void a_zero_checkpoint_continues_at_other_layouts(void **state) {
    (void)state;
    const char *dir = test_tmpdir("reshard");
    char ck[4400];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    save_at(dir, ck, 8,
            "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
            "--use-distributed-optimizer");
    expect_continuation(dir, "tp1_pp4_dp2", 8,
                        "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 4 "
                        "--use-distributed-optimizer",
                        ck, 1e-5);
    expect_continuation(dir, "tp2_pp1_dp4", 8,
                        "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 1", ck,
                        1e-5);
    expect_continuation(
        dir, "interleaved", 4,
        "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 "
        "--pipeline-schedule interleaved",
        ck, 1e-5);
    /* tp 4 pads the vocabulary to 512 rows, the saved layout had 256 */
    expect_continuation(dir, "tp4_zero", 4,
                        "--tensor-model-parallel-size 4 --use-distributed-optimizer", ck, 1e-5);
    expect_continuation(dir, "serial", 1, "", ck, 1e-5);
    expect_continuation(dir, "pp2_dp4_zero3", 8,
                        "--pipeline-model-parallel-size 2 "
                        "--data-parallel-sharding-strategy optim_grads_params",
                        ck, 1e-5);
}

static void zero2_and_zero3_checkpoints_resume_and_reshard(void **state) {
    (void)state;
    const char *dir = test_tmpdir("zero23");
    char ck3[4400], ck2[4400];
    snprintf(ck3, sizeof ck3, "%s/ck_zero3", dir);
    snprintf(ck2, sizeof ck2, "%s/ck_zero2", dir);
    const char *z3 = "--pipeline-model-parallel-size 2 "
                     "--data-parallel-sharding-strategy optim_grads_params",
               *z2 = "--data-parallel-sharding-strategy optim_grads --bf16";
    save_at(dir, ck3, 4, z3);
    expect_continuation(dir, "zero3_same", 4, z3, ck3, 0.0);
    expect_continuation(dir, "zero3_to_tp2", 4, "--tensor-model-parallel-size 2", ck3, 1e-5);
    save_at(dir, ck2, 2, z2);
    expect_continuation(dir, "zero2_bf16", 2, z2, ck2, 0.0);
}

/* zbv keeps both wte copies on pipeline rank 0 and saves one: its checkpoint continues at
 * 1f1b, and a 1f1b checkpoint continues at zbv (pp 2, dp 2, ZeRO both ways). */
static void zbv_and_1f1b_checkpoints_load_into_each_other(void **state) {
    (void)state;
    const char *dir = test_tmpdir("zbv");
    char ck[4400], ck1[4400];
    const char *zbv = "--pipeline-model-parallel-size 2 --pipeline-schedule zbv "
                      "--use-distributed-optimizer",
               *one = "--pipeline-model-parallel-size 2 --use-distributed-optimizer";
    snprintf(ck, sizeof ck, "%s/ck_zbv", dir);
    snprintf(ck1, sizeof ck1, "%s/ck_1f1b", dir);
    save_at(dir, ck, 4, zbv);
    expect_continuation(dir, "zbv_to_1f1b", 4, one, ck, 1e-5);
    save_at(dir, ck1, 4, one);
    expect_continuation(dir, "1f1b_to_zbv", 4, zbv, ck1, 1e-5);
}

static void resume_at_the_same_layout_is_bit_identical(void **state) {
    (void)state;
    const char *dir = test_tmpdir("same");
    char ck[4400];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    const char *layout = "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
                         "--use-distributed-optimizer --bf16";
    save_at(dir, ck, 8, layout);
    expect_continuation(dir, "same_bf16", 8, layout, ck, 0.0);
}

static void a_crash_mid_save_leaves_the_previous_checkpoint_loadable(void **state) {
    (void)state;
    const char *dir = test_tmpdir("crash");
    char a[8192], ck[4400], p[4400];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    const char *layout = "--use-distributed-optimizer"; /* dp 2, ZeRO */
    /* saves at 3 (the first) and 6 (the second, where rank 0 dies halfway through its file) */
    snprintf(a, sizeof a,
             "train " MODEL
             " %s --train-iters %d --save-interval %d --run-dir %s/crashed --save %s",
             layout, N_TOTAL, N_SAVED, dir, ck);
    int rc = trident(2, "TRIDENT_TEST_CRASH_IN_SAVE=2", a);
    if (rc == 0) fail_msg("the crash hook did not fire:\n%s", g_out);
    assert_non_null(strstr(g_out, "rank 0 stops after step rank_file of save 2"));
    snprintf(p, sizeof p, "%s/latest", ck);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    int latest = -1;
    assert_int_equal(fscanf(f, "%d", &latest), 1);
    fclose(f);
    assert_int_equal(latest, N_SAVED);
    struct stat st;
    snprintf(p, sizeof p, "%s/iter_%07d", ck, N_TOTAL);
    assert_int_not_equal(stat(p, &st), 0); /* the crashed iteration never became visible */
    snprintf(p, sizeof p, "%s/iter_%07d.tmp", ck, N_TOTAL);
    assert_int_equal(stat(p, &st), 0); /* ... its half-written directory is left behind */
    expect_continuation(dir, "after_crash", 2, layout, ck, 0.0);
    /* saving the crashed iteration again replaces the leftover */
    snprintf(a, sizeof a,
             "train " MODEL " %s --train-iters %d --run-dir %s/again --load %s --save %s", layout,
             N_TOTAL, dir, ck, ck);
    must_run(2, "", a);
    snprintf(p, sizeof p, "%s/iter_%07d/rank_00001.tck", ck, N_TOTAL);
    assert_int_equal(stat(p, &st), 0);
    snprintf(p, sizeof p, "%s/iter_%07d.tmp", ck, N_TOTAL);
    assert_int_not_equal(stat(p, &st), 0);
}

/* A failing load: non-zero exit and the expected words. */
static void expect_refusal(int np, const char *args, const char *words) {
    int rc = trident(np, "", args);
    if (rc == 0) fail_msg("'%s' succeeded; expected an error containing '%s'", args, words);
    if (!strstr(g_out, words)) fail_msg("'%s' printed:\n%s\nexpected: '%s'", args, g_out, words);
}

static void damage_is_refused_naming_the_file(void **state) {
    (void)state;
    const char *dir = test_tmpdir("damage");
    char a[8192], ck[4400], file[4400];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    snprintf(a, sizeof a,
             "train " MODEL " --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
             "--use-distributed-optimizer --train-iters 1 --run-dir %s/saved --save %s",
             dir, ck);
    must_run(8, "", a);
    snprintf(file, sizeof file, "%s/iter_0000001/rank_00005.tck", ck);
    snprintf(a, sizeof a,
             "cp %s %s.good && printf '\\x55' | dd of=%s bs=1 seek=3000 conv=notrunc status=none",
             file, file, file);
    assert_int_equal(system(a), 0);
    snprintf(a, sizeof a, "train " MODEL " --train-iters 2 --run-dir %s/r --load %s", dir, ck);
    expect_refusal(1, a, "rank_00005.tck': tensor");
    assert_non_null(strstr(g_out, "checksum mismatch"));
    /* at another parallel layout too, on the ranks that need that file */
    snprintf(a, sizeof a,
             "train " MODEL
             " --pipeline-model-parallel-size 4 --train-iters 2 --run-dir %s/r --load %s",
             dir, ck);
    expect_refusal(4, a, "rank_00005.tck");
    /* a missing rank file */
    snprintf(a, sizeof a, "mv %s.good %s.moved && rm %s", file, file, file);
    assert_int_equal(system(a), 0);
    snprintf(a, sizeof a, "train " MODEL " --train-iters 2 --run-dir %s/r --load %s", dir, ck);
    expect_refusal(1, a, "rank_00005.tck");
    snprintf(a, sizeof a, "mv %s.moved %s", file, file);
    assert_int_equal(system(a), 0);
    /* another model */
    snprintf(a, sizeof a,
             "train " MODEL " --hidden-size 64 --train-iters 2 --run-dir %s/r --load %s", dir, ck);
    expect_refusal(1, a, "the checkpoint has hidden_size = 32 but this run has 64");
    /* and the intact checkpoint still loads serially */
    snprintf(a, sizeof a, "train " MODEL " --train-iters 2 --run-dir %s/ok --load %s", dir, ck);
    must_run(1, "", a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_zero_checkpoint_continues_at_other_layouts),
        cmocka_unit_test(resume_at_the_same_layout_is_bit_identical),
        cmocka_unit_test(zero2_and_zero3_checkpoints_resume_and_reshard),
        cmocka_unit_test(zbv_and_1f1b_checkpoints_load_into_each_other),
        cmocka_unit_test(a_crash_mid_save_leaves_the_previous_checkpoint_loadable),
        cmocka_unit_test(damage_is_refused_naming_the_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
