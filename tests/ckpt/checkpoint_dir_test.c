/* checkpoint_dir_test.c — the checkpoint directory (src/ckpt/checkpoint_dir.h) keeps a
 * loadable `latest` whatever moment a save dies at, refuses rank files of different saves
 * mixed together, refuses a second run saving into the same directory, and saves into a
 * directory that is itself a link (links inside it: tests/core/nofollow_test.c); driven
 * through `trident train` as a user runs it.
 *
 * Crash at every step: for a FRESH save (iteration 2 after iteration 1) and for a REPLACING
 * save (iteration 2 saved again over a complete iteration 2), rank 0 of a 2-rank ZeRO run
 * dies right after each file-system step of the save (TRIDENT_TEST_CRASH_AT); then a serial
 * run loads `latest` (resharding: every rank file is read) and trains one more step. The
 * iteration it resumes at is the one the step table of checkpoint_dir.h promises.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "tests/support/testing.h"

#define MODEL                                                                                      \
    "--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 "                     \
    "--global-batch-size 4 --micro-batch-size 2 --log-interval 1 --no-trace --eval-iters 0"

static char g_out[1 << 16];

/* Runs `trident ARGS` on np ranks (np 1: no mpirun) with extra environment ENV. */
static int trident(int np, const char *env, const char *args) {
    char cmd[8192], mpirun[2048];
    if (np == 1) snprintf(cmd, sizeof cmd, "%s %s %s", env, test_trident_path(), args);
    else
        snprintf(cmd, sizeof cmd, "%s %s %s", test_mpirun_prefix(mpirun, sizeof mpirun, np, env),
                 test_trident_path(), args);
    return run_capture(cmd, g_out, sizeof g_out);
}

static void must_run(int np, const char *env, const char *args) {
    int rc = trident(np, env, args);
    if (rc != 0) fail_msg("trident %s (np %d, %s) exited %d:\n%s", args, np, env, rc, g_out);
}

static int latest_of(const char *ck) {
    char p[4400];
    snprintf(p, sizeof p, "%s/latest", ck);
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    int it = -1;
    if (fscanf(f, "%d", &it) != 1) it = -1;
    fclose(f);
    return it;
}

/* Loads CK serially and trains to iteration 3; returns the iteration it resumed at. */
static int resume_serially(const char *dir, const char *ck) {
    char a[8192];
    snprintf(a, sizeof a, "train " MODEL " --train-iters 3 --run-dir %s/resumed --load %s", dir,
             ck);
    int rc = trident(1, "", a);
    if (rc != 0) fail_msg("loading after the crash failed (exit %d):\n%s", rc, g_out);
    const char *at = strstr(g_out, "resumed from");
    int it = -1;
    if (!at || sscanf(strstr(at, "iteration"), "iteration %d", &it) != 1)
        fail_msg("no 'resumed from ... at iteration N' line:\n%s", g_out);
    return it;
}

static const char *k_steps[] = {"tmp_dir", "rank_file", "written", "aside",
                                "renamed", "latest",    "cleaned"};
enum { NSTEPS = sizeof k_steps / sizeof k_steps[0] };

/* Iteration 1 saved, then rank 0 dies at `step` of saving iteration 2. */
static void crash_in_fresh_save(const char *dir, const char *ck, const char *step) {
    char a[8192], env[256];
    snprintf(a, sizeof a, "rm -rf %s", ck);
    assert_int_equal(system(a), 0);
    snprintf(a, sizeof a,
             "train " MODEL " --use-distributed-optimizer --train-iters 2 --save-interval 1 "
             "--run-dir %s/crashed --save %s",
             dir, ck);
    snprintf(env, sizeof env, "TRIDENT_TEST_CRASH_AT=%s:2", step);
    int rc = trident(2, env, a);
    if (rc == 0) fail_msg("fresh save, step %s: the crash hook did not fire:\n%s", step, g_out);
    if (!strstr(g_out, "rank 0 stops after step"))
        fail_msg("fresh save, step %s: the run failed without the hook:\n%s", step, g_out);
}

static void every_crash_point_of_a_fresh_save_leaves_latest_loadable(void **state) {
    (void)state;
    const char *dir = test_tmpdir("fresh");
    char ck[4400];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    for (int s = 0; s < NSTEPS; s++) {
        if (strcmp(k_steps[s], "aside") == 0) continue; /* nothing to move aside in a fresh save */
        crash_in_fresh_save(dir, ck, k_steps[s]);
        /* `latest` moves to 2 only at its own step */
        const bool published = strcmp(k_steps[s], "latest") == 0 ||
                               strcmp(k_steps[s], "cleaned") == 0;
        assert_int_equal(latest_of(ck), published ? 2 : 1);
        int at = resume_serially(dir, ck);
        printf("  fresh save, crash after %-9s -> latest %d, resumed at %d\n", k_steps[s],
               latest_of(ck), at);
        assert_int_equal(at, published ? 2 : 1);
    }
}

static void every_crash_point_of_a_replacing_save_leaves_latest_loadable(void **state) {
    (void)state;
    const char *dir = test_tmpdir("replace");
    char ck[4400], a[8192], env[256];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    for (int s = 0; s < NSTEPS; s++) {
        snprintf(a, sizeof a, "rm -rf %s", ck);
        assert_int_equal(system(a), 0);
        snprintf(a, sizeof a,
                 "train " MODEL " --use-distributed-optimizer --train-iters 2 --run-dir %s/first "
                 "--save %s",
                 dir, ck);
        must_run(2, "", a);
        /* the same iteration again, from scratch: its one save replaces iter_0000002/ */
        snprintf(a, sizeof a,
                 "train " MODEL " --use-distributed-optimizer --train-iters 2 --run-dir %s/again "
                 "--save %s",
                 dir, ck);
        snprintf(env, sizeof env, "TRIDENT_TEST_CRASH_AT=%s:1", k_steps[s]);
        int rc = trident(2, env, a);
        if (rc == 0 || !strstr(g_out, "rank 0 stops after step"))
            fail_msg("replacing save, step %s: exit %d, the hook did not fire:\n%s", k_steps[s], rc,
                     g_out);
        assert_int_equal(latest_of(ck), 2);
        int at = resume_serially(dir, ck);
        printf("  replacing save, crash after %-9s -> latest 2, resumed at %d\n", k_steps[s], at);
        assert_int_equal(at, 2);
    }
}

/* With ZeRO every rank file holds a shard of the optimizer state, so a serial load reads
 * both; without it rank 0's file has everything and rank 1's is never opened (a file that a
 * load does not read cannot mix anything into the model). */
static void rank_files_of_different_saves_are_refused(void **state) {
    (void)state;
    const char *dir = test_tmpdir("mixed");
    char a[8192];
    for (int k = 0; k < 2; k++) {
        snprintf(a, sizeof a,
                 "train " MODEL " --use-distributed-optimizer --seed %d --train-iters 1 "
                 "--run-dir %s/run%d --save %s/ck%d",
                 1 + k, dir, k, dir, k);
        must_run(2, "", a);
    }
    snprintf(a, sizeof a, "cp %s/ck1/iter_0000001/rank_00001.tck %s/ck0/iter_0000001/", dir, dir);
    assert_int_equal(system(a), 0);
    snprintf(a, sizeof a, "train " MODEL " --train-iters 2 --run-dir %s/r --load %s/ck0", dir, dir);
    int rc = trident(1, "", a);
    if (rc == 0 || !strstr(g_out, "rank files of different saves are mixed"))
        fail_msg("a mixed checkpoint was not refused (exit %d):\n%s", rc, g_out);
    assert_non_null(strstr(g_out, "rank_00001.tck"));
}

static void a_second_run_saving_into_the_same_directory_is_refused(void **state) {
    (void)state;
    const char *dir = test_tmpdir("locked");
    char a[8192], lock[4400];
    snprintf(a, sizeof a, "mkdir -p %s/ck", dir);
    assert_int_equal(system(a), 0);
    snprintf(lock, sizeof lock, "%s/ck/.lock", dir);
    int fd = open(lock, O_RDWR | O_CREAT, 0644); /* this process plays the other run */
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
    snprintf(a, sizeof a, "train " MODEL " --train-iters 1 --run-dir %s/r --save %s/ck", dir, dir);
    int rc = trident(2, "", a);
    if (rc == 0 || !strstr(g_out, "another run is saving into this directory"))
        fail_msg("a second saver was not refused (exit %d):\n%s", rc, g_out);
    if (strstr(g_out, "step ")) fail_msg("it trained before refusing:\n%s", g_out);
    close(fd); /* the lock goes with it: now the run may save */
    must_run(2, "", a);
    snprintf(lock, sizeof lock, "%s/ck", dir);
    assert_int_equal(latest_of(lock), 1);
}

/* The directory the user names may itself be a link (src/core/nofollow.h): a save, and a
 * re-save of the same iteration (aside, rename, cleanup), go into its target. */
static void a_save_directory_that_is_itself_a_link_is_saved_into(void **state) {
    (void)state;
    const char *dir = test_tmpdir("linked_save");
    char a[8192], ck[4400];
    snprintf(a, sizeof a, "mkdir -p %s/real && ln -s %s/real %s/ck", dir, dir, dir);
    assert_int_equal(system(a), 0);
    snprintf(a, sizeof a, "train " MODEL " --train-iters 1 --run-dir %s/r --save %s/ck", dir, dir);
    must_run(1, "", a);
    must_run(1, "", a); /* iteration 1 again: the earlier one moved aside and removed */
    snprintf(ck, sizeof ck, "%s/real", dir);
    assert_int_equal(latest_of(ck), 1);
    snprintf(a, sizeof a,
             "test -L %s/ck && test -f %s/real/iter_0000001/rank_00000.tck && ! test -e "
             "%s/real/iter_0000001.old",
             dir, dir, dir);
    assert_int_equal(system(a), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_crash_point_of_a_fresh_save_leaves_latest_loadable),
        cmocka_unit_test(every_crash_point_of_a_replacing_save_leaves_latest_loadable),
        cmocka_unit_test(rank_files_of_different_saves_are_refused),
        cmocka_unit_test(a_second_run_saving_into_the_same_directory_is_refused),
        cmocka_unit_test(a_save_directory_that_is_itself_a_link_is_saved_into),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
