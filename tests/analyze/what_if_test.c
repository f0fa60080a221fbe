/* what_if_test.c — re-timing a hand-timed run (synthetic_run.h): every factor 1 is the step
 * itself, p2p=0 shortens it by at least the path's transfers and at most all of them, a
 * factor names what it should, and bad factors are refused with the rule. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/analyze/what_if.h"
#include "tests/analyze/synthetic_run.h"
#include "tests/support/testing.h"

static void build(const char *name, step_graph *g) {
    char err[512];
    trace_run *run = synthetic_run_load(name);
    if (!step_graph_build(run, -1, g, err, sizeof err)) fail_msg("%s", err);
    trace_run_free(run);
}

static wi_factor parse(const step_graph *g, const char *text) {
    wi_factor f;
    char err[512];
    if (!what_if_parse(g, text, &f, err, sizeof err)) fail_msg("%s", err);
    return f;
}

static void every_factor_one_is_the_step(void **state) {
    (void)state;
    step_graph g;
    build("what_if_identity", &g);
    wi_factor f[2] = {parse(&g, "forward=1"), parse(&g, "p2p=1")};
    what_if_result r;
    what_if_run(&g, f, 2, &r);
    assert_true(fabs(r.step - SYN_STEP) < 1e-12);
    assert_true(fabs(r.bubble - (7.0 + 3.0) / (2 * 13.4)) < 1e-9);
    what_if_free(&r);
    step_graph_free(&g);
}

static void free_messages_shorten_by_the_path_transfers(void **state) {
    (void)state;
    step_graph g;
    build("what_if_p2p", &g);
    wi_factor f = parse(&g, "p2p=0");
    what_if_result r;
    what_if_run(&g, &f, 1, &r);
    const double gain = r.base_step - r.step;
    assert_true(fabs(r.base_step - SYN_STEP) < 1e-12);
    assert_true(fabs(r.step - 13.0 * SYN_MS) < 1e-12);         /* the own-cost plan's makespan */
    assert_true(fabs(r.saved_on_path - 0.4 * SYN_MS) < 1e-12); /* 4 transfers on the path */
    assert_true(fabs(r.saved_in_all - 0.8 * SYN_MS) < 1e-12);  /* 4 messages, both ends */
    assert_true(gain >= r.saved_on_path - 1e-12);
    assert_true(gain <= r.saved_in_all + 1e-12);
    assert_true(r.path.by_kind[CP_TRANSFER] == 0);
    what_if_free(&r);
    step_graph_free(&g);
}

/* Halving the slow stage 1: rank 1's F 1 ms and B 1.5 ms. */
static void a_stage_factor_scales_that_stage_only(void **state) {
    (void)state;
    step_graph g;
    build("what_if_stage", &g);
    wi_factor f = parse(&g, "stage:1=0.5");
    assert_int_equal(f.target, WI_STAGE);
    assert_int_equal(f.index, 1);
    double *dur = malloc((size_t)g.n * sizeof *dur);
    what_if_durations(&g, &f, 1, dur);
    for (int i = 0; i < g.n; i++) {
        const double want = g.nodes[i].rank == 1 && g.nodes[i].cls == VIZ_TC_COMPUTE
                                ? 0.5 * g.nodes[i].dur
                                : g.nodes[i].dur;
        assert_true(fabs(dur[i] - want) < 1e-15);
    }
    free(dur);
    step_graph_free(&g);
}

static void bad_factors_are_refused_with_the_rule(void **state) {
    (void)state;
    step_graph g;
    build("what_if_bad", &g);
    static const struct {
        const char *text, *says;
    } bad[] = {{"p2p", "NAME=FACTOR"},
               {"p2p=-1", "[0, "},
               {"p2p=x", "[0, "},
               {"p2p=inf", "[0, "},
               {"backwards=2", "not a cost"},
               {"stage:2=1", "K in 0..1"},
               {"rank:9=1", "K in 0..1"},
               {"stage=1", "K in 0..1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wi_factor f;
        char err[512];
        if (what_if_parse(&g, bad[i].text, &f, err, sizeof err)) fail_msg("took '%s'", bad[i].text);
        if (!strstr(err, bad[i].says)) fail_msg("'%s': %s", bad[i].text, err);
        assert_non_null(strstr(err, "--what-if"));
    }
    step_graph_free(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_factor_one_is_the_step),
        cmocka_unit_test(free_messages_shorten_by_the_path_transfers),
        cmocka_unit_test(a_stage_factor_scales_that_stage_only),
        cmocka_unit_test(bad_factors_are_refused_with_the_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
