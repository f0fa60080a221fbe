/* cluster_test.c — Trident across hosts, on a simulated cluster (tools/cluster.sh): hosts in
 * their own UTS, network and time namespaces, so that Open MPI sees separate nodes (TCP between
 * them, no shared memory) whose CLOCK_MONOTONIC disagree by seconds.
 *
 * 2 hosts × 2 ranks, host 2's clock 3 s ahead:
 *   - rows of the equivalence matrix with a group across the hosts equal the serial run (the
 *     usual tolerances, tests/train/equivalence.h): TP 2 inside each host × DP 2 across; PP 2
 *     across with 1F1B and zb-h1; ZeRO-1 across; CP 2 across; EP 2 across;
 *   - traced runs (TP 2 × PP 2, 1F1B and zb-h1): the ranks of one host carry one clock offset,
 *     host 2's equals the injected −3 s within its uncertainty (plus the correction the run's
 *     own messages made, trace_run_fix_clocks), and no receive ends before its send began —
 *     with no slack at all, for messages far shorter than a millisecond;
 *   - a rank killed mid-step ends the whole job, and the message names the rank and its host;
 *     the checkpoint saved before it loads, across the hosts.
 * 4 hosts × 2 ranks: the demo's TP 2 × PP 2 × DP 2 layout trains, and its timeline renders.
 *
 * The test itself runs on this machine (the outer process): it brings the cluster up, runs
 * mpirun with the cluster's launch prefix (this binary again, with CLUSTER_TEST_INSIDE set,
 * for the equivalence rows; `trident train` for the traced runs) and takes it down. Where the
 * kernel or the user refuses namespaces, cluster.sh exits 3 with the reason: the test says
 * "SKIPPED" with it and passes — visibly, never silently.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/runtime/dist.h"
#include "src/trace/trace.h"
#include "tests/support/testing.h"
#include "tests/train/equivalence.h"

#define SKEW 3 /* seconds between the hosts' clocks */

/* ---- inside the cluster job: the equivalence rows --------------------------------------- */

static const layout_case k_rows[] = {
    {.tp = 2, .pp = 1, .schedule = "1f1b"},               /* TP2 inside × DP2 across */
    {.tp = 2, .pp = 2, .schedule = "1f1b"},               /* PP2 across, 1F1B */
    {.tp = 2, .pp = 2, .schedule = "zb-h1"},              /* PP2 across, zb-h1 */
    {.tp = 2, .pp = 1, .schedule = "1f1b", .zero = true}, /* ZeRO-1 across */
    {.tp = 2, .pp = 1, .schedule = "1f1b", .cp = 2},      /* CP2 across */
    {.tp = 2,
     .pp = 1,
     .schedule = "1f1b",
     .ep = 2,
     .experts = 4,
     .topk = 2,
     .aux_coeff = 0.01f}, /* EP2 across */
};

static void rows_across_hosts_match_the_serial_run(void **state) {
    (void)state;
    train_config base;
    equivalence_base_config(&base);
    for (size_t i = 0; i < sizeof k_rows / sizeof k_rows[0]; i++)
        equivalence_check(&base, &k_rows[i], 4, 1e-5, k_rows[i].experts ? 2e-5 : 1e-5, 1e-4);
}

static int inside(int argc, char **argv) {
    const char *r = getenv("OMPI_COMM_WORLD_RANK"); /* cmocka's lines from rank 0 only */
    if (r && atoi(r) != 0 && !freopen("/dev/null", "w", stdout)) perror("freopen");
    dist_init(&argc, &argv);
    const struct CMUnitTest tests[] = {cmocka_unit_test(rows_across_hosts_match_the_serial_run)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dist_finalize();
    return rc;
}

/* ---- outside: the cluster, the runs, their traces --------------------------------------- */

static char g_launch[2048]; /* mpirun options of the cluster that is up */
static char g_dir[4096];    /* scratch: run directories */

/* Brings up n hosts; false (and the reason printed) where namespaces are refused. */
static bool cluster_up(int n, int skew) {
    char cmd[8192], out[4096];
    snprintf(cmd, sizeof cmd, "TRIDENT_CLUSTER_DIR=%s/cluster bash %s up %d --skew %d 2>&1", g_dir,
             test_runfile("tools/cluster.sh"), n, skew);
    int st = run_capture(cmd, out, sizeof out);
    if (st == 3) {
        printf("SKIPPED: %s", out);
        return false;
    }
    if (st != 0) fail_msg("cluster.sh up %d failed (%d): %s", n, st, out);
    const char *l = strstr(out, "launch: mpirun ");
    if (!l) fail_msg("cluster.sh printed no launch line: %s", out);
    snprintf(g_launch, sizeof g_launch, "%.*s", (int)strcspn(l + 15, "\n"), l + 15);
    printf("%s", out);
    return true;
}

static void cluster_down(void) {
    char cmd[8192], out[1024];
    snprintf(cmd, sizeof cmd, "TRIDENT_CLUSTER_DIR=%s/cluster bash %s down 2>&1", g_dir,
             test_runfile("tools/cluster.sh"));
    run_capture(cmd, out, sizeof out);
}

/* mpirun across the cluster: np ranks of `program args`; its output into out. */
static int across(int np, const char *env, const char *program, const char *args, char *out,
                  size_t cap) {
    char prefix[2048], cmd[16384];
    test_mpirun_prefix(prefix, sizeof prefix, np, "");
    /* test_mpirun_prefix ends "mpirun -np N --oversubscribe": the cluster's options follow */
    snprintf(cmd, sizeof cmd, "%s %s --timeout 300 %s %s %s 2>&1", prefix, g_launch, env, program,
             args);
    return run_capture(cmd, out, cap);
}

/* Receives ending before their send began, on the run's clocks, without slack. */
static int backwards(const trace_run *r) {
    double *sent = calloc((size_t)r->nflows + 1, sizeof(double));
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < r->nranks; k++) {
            const double off = trace_file_header(r->ranks[k])->clock_offset;
            for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
                const trace_event *e = trace_file_event(r->ranks[k], i);
                const int f = r->flow[k][i];
                if (f < 0) continue;
                if (pass == 0 && e->kind == TRACE_SEND) sent[f] = e->t_start + off;
                if (pass == 1 && e->kind == TRACE_RECV) n += e->t_end + off < sent[f];
            }
        }
    free(sent);
    return n;
}

/* A traced TP 2 × PP 2 run across the 2 hosts: one offset per host, the injected skew, causal. */
static void traced_run_is_aligned_and_causal(const char *schedule) {
    char args[4096], out[1 << 16], err[1024], dir[4200];
    snprintf(dir, sizeof dir, "%s/traced-%s", g_dir, schedule);
    snprintf(args, sizeof args,
             "train --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
             "--pipeline-schedule %s --num-layers 4 --hidden-size 32 --num-attention-heads 4 "
             "--seq-length 16 --train-iters 2 --eval-iters 0 --run-dir %s",
             schedule, dir);
    if (across(4, "", test_trident_path(), args, out, sizeof out) != 0)
        fail_msg("traced %s run across hosts failed:\n%s", schedule, out);
    if (!strstr(out, "2 hosts: node1 (ranks 0-1), node2 (ranks 2-3)"))
        fail_msg("the start-up printout names no hosts:\n%s", out);
    trace_run *r = trace_run_read(dir, err, sizeof err);
    if (!r) fail_msg("%s", err);
    for (int k = 0; k < 4; k++) {
        const trace_header *h = trace_file_header(r->ranks[k]);
        const double measured = h->clock_offset - r->clock_fix[k];
        const double want = k < 2 ? 0.0 : -SKEW;
        printf("  %s rank %d on %s: offset %+.6f s (measured %+.6f ± %.1f us, fixed by %+.1f us)\n",
               schedule, k, h->host, h->clock_offset, measured, 1e6 * h->clock_uncertainty,
               1e6 * r->clock_fix[k]);
        assert_string_equal(h->host, k < 2 ? "node1" : "node2");
        if (fabs(measured - want) > h->clock_uncertainty + 1e-6)
            fail_msg("rank %d measured %+.6f s, the injected skew is %+d s (uncertainty %.1f us)",
                     k, measured, (int)want, 1e6 * h->clock_uncertainty);
    }
    for (int k = 1; k < 4; k++) /* one host, one offset */
        if (k != 2)
            assert_true(trace_file_header(r->ranks[k])->clock_offset ==
                        trace_file_header(r->ranks[k & ~1])->clock_offset);
    assert_int_equal(r->clock_fix_left, 0);
    assert_int_equal(backwards(r), 0);
    if (!trace_run_check_causality(r, err, sizeof err)) fail_msg("%s", err);
    printf("  %s: %d message pairs, none backwards; clocks fixed by up to %.1f us\n", schedule,
           r->nflows, 1e6 * r->clock_fix_most);
    trace_run_free(r);
}

static void two_hosts(void **state) {
    (void)state;
    if (!cluster_up(2, SKEW)) return;
    char self[4096] = "", out[1 << 16];
    if (readlink("/proc/self/exe", self, sizeof self - 1) <= 0) fail_msg("no /proc/self/exe");
    const int st = across(4, "-x CLUSTER_TEST_INSIDE=1", self, "", out, sizeof out);
    printf("%s", out);
    if (st != 0) fail_msg("equivalence rows across hosts failed");
    traced_run_is_aligned_and_causal("1f1b");
    traced_run_is_aligned_and_causal("zb-h1");
    /* a rank killed mid-step (about 55 operations a step: the 150th is in step 3, after two
     * checkpoints): the job ends, naming the rank and its host; the last checkpoint loads */
    char args[4096], ckpt[4200];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt", g_dir);
    snprintf(args, sizeof args,
             "train --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
             "--train-iters 5 --no-trace --distributed-timeout-minutes 0.2 --save %s "
             "--save-interval 1 --run-dir %s/killed",
             ckpt, g_dir);
    const int killed = across(4, "-x TRIDENT_TEST_FAULT=kill:2:150", test_trident_path(), args, out,
                              sizeof out);
    assert_int_not_equal(killed, 0);
    if (!strstr(out, "trident[rank 2 on node2]")) fail_msg("no rank and host named:\n%s", out);
    snprintf(args, sizeof args,
             "train --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
             "--train-iters 5 --no-trace --load %s --run-dir %s/resumed",
             ckpt, g_dir);
    if (across(4, "", test_trident_path(), args, out, sizeof out) != 0)
        fail_msg("the checkpoint saved before the kill does not load:\n%s", out);
    const char *resumed = strstr(out, "resumed from ");
    if (!resumed) fail_msg("the run did not resume:\n%s", out);
    printf("  after the kill: %.*s\n", (int)strcspn(resumed, "\n"), resumed);
    cluster_down();
}

static void four_hosts_train_the_demo_layout(void **state) {
    (void)state;
    if (!cluster_up(4, 2)) return;
    char args[4096], out[1 << 16], dir[4200], png[4300];
    snprintf(dir, sizeof dir, "%s/demo4", g_dir);
    snprintf(args, sizeof args,
             "train --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
             "--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 16 "
             "--global-batch-size 16 --train-iters 2 --eval-iters 0 --run-dir %s",
             dir);
    if (across(8, "", test_trident_path(), args, out, sizeof out) != 0)
        fail_msg("the demo layout on 4 hosts failed:\n%s", out);
    assert_non_null(strstr(out, "4 hosts: node1 (ranks 0-1), node2 (ranks 2-3), node3 (ranks "
                                "4-5), node4 (ranks 6-7)"));
    snprintf(png, sizeof png, "%s/timeline-4-hosts.png", g_dir);
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "%s render %s -o %s 2>&1", test_trident_path(), dir, png);
    if (run_capture(cmd, out, sizeof out) != 0) fail_msg("render failed: %s", out);
    struct stat st;
    assert_true(stat(png, &st) == 0 && st.st_size > 0);
    cluster_down();
}

int main(int argc, char **argv) {
    if (getenv("CLUSTER_TEST_INSIDE")) return inside(argc, argv);
    snprintf(g_dir, sizeof g_dir, "%s", test_tmpdir("cluster"));
    test_mpi_setenv();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_hosts),
        cmocka_unit_test(four_hosts_train_the_demo_layout),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    cluster_down();
    return rc;
}
