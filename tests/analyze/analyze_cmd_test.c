/* analyze_cmd_test.c — `trident analyze` on real traced runs under mpirun: a 2-stage 1F1B run
 * (4 micro-batches) and a pp 2 × dp 2 run with --overlap-grad-reduce (the stream lane), in
 * both views. On each: the critical path adds up to the step, the causes to every rank's
 * measured bubble (within 1e-9), every factor 1 re-times the replay to its own step (1%), and
 * p2p=0 shortens it by no more than the transfers it removes. Then the command: text, JSON,
 * and one line with exit status 1 for each kind of bad input (nothing written). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/analyze/replan.h"
#include "src/analyze/bubble_causes.h"
#include "src/analyze/critical_path.h"
#include "src/analyze/step_graph.h"
#include "src/analyze/what_if.h"
#include "src/trace/replay.h"
#include "tests/support/testing.h"
#include "viz/timeline_load.h"

static char g_out[1 << 16];
static char g_runs[2][4400];

static void train(const char *run_dir, int np, const char *flags) {
    char cmd[8192], mpirun[2048];
    snprintf(cmd, sizeof cmd,
             "%s %s train --pipeline-model-parallel-size 2 --num-layers 4 --hidden-size 32 "
             "--num-attention-heads 4 --seq-length 16 --micro-batch-size 2 --train-iters 3 "
             "--eval-iters 0 --quiet --run-dir %s %s",
             test_mpirun_prefix(mpirun, sizeof mpirun, np, ""), test_trident_path(), run_dir,
             flags);
    int rc = run_capture(cmd, g_out, sizeof g_out);
    if (rc != 0) fail_msg("%s\nexited %d:\n%s", cmd, rc, g_out);
}

static int setup(void **state) {
    (void)state;
    snprintf(g_runs[0], sizeof g_runs[0], "%s/run", test_tmpdir("analyze_1f1b"));
    train(g_runs[0], 2, "--global-batch-size 8");
    snprintf(g_runs[1], sizeof g_runs[1], "%s/run", test_tmpdir("analyze_overlap"));
    train(g_runs[1], 4, "--global-batch-size 16 --overlap-grad-reduce");
    return 0;
}

/* The sums of one view of one run. */
static void check_view(const trace_run *view, const trace_run *rep, bool is_replay) {
    char err[1024];
    step_graph g;
    if (!step_graph_build(view, -1, &g, err, sizeof err)) fail_msg("%s", err);
    double *t = malloc(2 * (size_t)g.n * sizeof *t);
    step_graph_recorded(&g, t);
    critical_path p;
    critical_path_find(&g, t, &p);
    double sum = 0;
    for (int i = 0; i < p.n; i++) sum += p.seg[i].end - p.seg[i].start;
    if (fabs(sum - g.t_end) > 1e-9) fail_msg("path %.12f != step %.12f", sum, g.t_end);
    viz_timeline *rtl = viz_timeline_from_run(rep, "replay", g.step, err, sizeof err);
    if (!rtl) fail_msg("%s", err);
    bubble_causes bc;
    if (!bubble_causes_measure(g.tl, is_replay ? g.tl : rtl, rep, &bc, err, sizeof err))
        fail_msg("%s", err);
    for (int r = 0; r < bc.nranks; r++) {
        const bc_shares *s = &bc.rank[r];
        double c = s->schedule + s->imbalance + s->communication + s->sharing;
        if (fabs(c - s->measured) * bc.span > 1e-9 * g.t_end)
            fail_msg("rank %d: causes %.12f != measured %.12f", r, c, s->measured);
        if (is_replay) assert_true(s->sharing == 0);
    }
    assert_true(fabs(bc.mean.measured - viz_timeline_bubble(g.tl).measured_total) < 1e-12);
    wi_factor f;
    assert_true(what_if_parse(&g, "p2p=0", &f, err, sizeof err));
    what_if_result w;
    what_if_run(&g, &f, 1, &w);
    if (is_replay && fabs(w.base_step - g.t_end) > 0.01 * g.t_end)
        fail_msg("every factor 1: %.6f ms, the replay's step %.6f ms", 1e3 * w.base_step,
                 1e3 * g.t_end);
    assert_true(w.step <= w.base_step + 1e-12);
    assert_true(w.base_step - w.step <= w.saved_in_all + 1e-12);
    what_if_free(&w);
    bubble_causes_free(&bc);
    viz_timeline_free(rtl);
    critical_path_free(&p);
    free(t);
    step_graph_free(&g);
}

static void every_traced_run_adds_up(void **state) {
    (void)state;
    for (int k = 0; k < 2; k++) {
        char err[1024];
        trace_run *run = trace_run_read(g_runs[k], err, sizeof err);
        if (!run) fail_msg("%s", err);
        trace_run *rep = trace_run_replay(run, err, sizeof err);
        if (!rep) fail_msg("%s", err);
        check_view(run, rep, false);
        check_view(rep, rep, true);
        trace_run_free(rep);
        trace_run_free(run);
    }
}

/* Every whole backward of a traced run on the CPU records the share its W parts took
 * (trace_set_weight_share), the replay keeps it, and a zero-bubble schedule is re-planned
 * from it rather than from half the backward. */
static void whole_backwards_record_their_w_share(void **state) {
    (void)state;
    char err[1024];
    trace_run *run = trace_run_read(g_runs[0], err, sizeof err);
    if (!run) fail_msg("%s", err);
    trace_run *rep = trace_run_replay(run, err, sizeof err);
    if (!rep) fail_msg("%s", err);
    for (int view = 0; view < 2; view++) {
        const trace_run *r = view ? rep : run;
        int n = 0;
        for (int k = 0; k < r->nranks; k++)
            for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
                const trace_event *e = trace_file_event(r->ranks[k], i);
                if (e->kind != TRACE_BACKWARD) continue;
                assert_true(e->bytes > 0 && e->bytes < TRACE_WEIGHT_PPM); /* B and W both cost */
                n++;
            }
        assert_true(n > 0);
    }
    replan_result rp;
    if (!replan_step(rep, 1.0, "zb-h1", 0, &rp, err, sizeof err)) fail_msg("%s", err);
    assert_true(rp.weight_inside && !rp.weight_assumed);
    assert_true(rp.weight_share > 0.05 && rp.weight_share < 0.95);
    char note[128];
    assert_non_null(strstr(replan_weight_note(&rp, note, sizeof note), "W measured inside"));
    trace_run_free(rep);
    trace_run_free(run);
}

static int analyze(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s analyze %s", test_trident_path(), args);
    return run_capture(cmd, g_out, sizeof g_out);
}

static void the_command_prints_and_writes_json(void **state) {
    (void)state;
    char args[9000], json[4600];
    snprintf(args, sizeof args, "%s --what-if p2p=0,stage:1=0.5", g_runs[0]);
    if (analyze(args) != 0) fail_msg("%s", g_out);
    assert_non_null(strstr(g_out, "critical path:"));
    assert_non_null(strstr(g_out, "bubble by cause"));
    assert_non_null(strstr(g_out, "what-if p2p=0 stage:1=0.5: step"));
    snprintf(json, sizeof json, "%s/analysis.json", test_tmpdir("analyze_json"));
    snprintf(args, sizeof args, "%s %s --replay -o %s", g_runs[0], g_runs[1], json);
    if (analyze(args) != 0) fail_msg("%s", g_out);
    FILE *f = fopen(json, "r");
    assert_non_null(f);
    static char doc[1 << 20];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = 0;
    fclose(f);
    assert_non_null(strstr(doc, "\"view\": \"replay\""));
    assert_non_null(strstr(doc, "\"critical_path\""));
    assert_non_null(strstr(doc, "\"communication\""));
}

static void bad_input_is_one_line_and_status_1(void **state) {
    (void)state;
    char json[4600], args[9000];
    snprintf(json, sizeof json, "%s/never.json", test_tmpdir("analyze_bad"));
    static const struct {
        const char *fmt, *says;
    } bad[] = {
        {"%s --what-if p2p=-1 -o %s", "the factor must be a number"},
        {"%s --what-if stage:9=1 -o %s", "stage:K needs K in 0..1"},
        {"%s --what-if nothing=1 -o %s", "not a cost to scale"},
        {"%s --step 99 -o %s", "step 99 is not a complete step"},
        {"%s/nowhere -o %s", "nowhere"},
        {"%s -o %s.txt", "analyze writes .json, .png"},
        {"%s -o %s.png %s", "a picture shows one run, got 2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, bad[i].fmt, g_runs[0], json, g_runs[0]);
        int rc = analyze(args);
        if (rc != 1 || !strstr(g_out, bad[i].says) ||
            strchr(g_out, '\n') != g_out + strlen(g_out) - 1)
            fail_msg("analyze %s: exit %d, said:\n%s", args, rc, g_out);
        assert_int_equal(access(json, F_OK), -1);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_traced_run_adds_up),
        cmocka_unit_test(the_command_prints_and_writes_json),
        cmocka_unit_test(whole_backwards_record_their_w_share),
        cmocka_unit_test(bad_input_is_one_line_and_status_1),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
