/* metrics_log_test.c — metrics.jsonl's lines (src/train/metrics_log.h): each is one flat JSON
 * object that src/trace/run_metrics.h reads back, and a step or evaluation whose value is not
 * finite stops with one line naming the value and the iteration before anything is written. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/trace/run_metrics.h"
#include "src/train/config.h"
#include "src/train/metrics_log.h"
#include "tests/support/testing.h"

/* A finished step of a 1-layer, 2-expert fp16 run. */
static step_result a_step(void) {
    static const int64_t counts[3] = {3, 5, 1}; /* (L·E) tokens, then (L) dropped */
    step_result s = {.loss = 5.5f,
                     .grad_norm = 1.25,
                     .lr = 1e-3f,
                     .loss_scale = 65536.0f,
                     .peak_activation_bytes = 4096,
                     .loss_rank = -1,
                     .aux_loss = 0.02f,
                     .moe_tokens = counts,
                     .moe_dropped = counts + 2};
    return s;
}

static train_config a_config(void) {
    train_config c;
    train_config_defaults(&c);
    c.num_layers = 1;
    c.num_experts = 2;
    c.fp16 = true;
    return c;
}

/* Every kind of line reads back through run_metrics (the reader the curves are drawn by); a
 * throughput that is not finite (no time elapsed) is null, not `inf`. */
static void every_line_reads_back(void **state) {
    (void)state;
    const char *dir = test_tmpdir("metrics_log");
    char path[4400];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    const train_config c = a_config();
    step_result s = a_step();
    metrics_log_step(f, &c, 1, &s, INFINITY, INFINITY, 1e9);
    s.grad_norm = INFINITY; /* an fp16 step skipped for it: written as the mark -1 */
    s.skipped = true;
    metrics_log_step(f, &c, 2, &s, 100.0, 1e6, 1e9);
    metrics_log_eval(f, 2, 5.25f);
    const zero_memory_rank m = {.total = 1000};
    metrics_log_memory(f, 2, 0, &m, 900);
    fclose(f);
    char err[512], text[8192];
    run_metrics *rm = run_metrics_read(dir, err, sizeof err);
    if (!rm) fail_msg("%s", err);
    assert_int_equal(rm->nsteps, 2);
    assert_int_equal(rm->nevals, 1);
    assert_true(rm->steps[0].loss == 5.5);
    assert_true(isnan(rm->steps[0].tokens_per_sec));
    assert_true(isnan(rm->steps[1].grad_norm));
    assert_true(fabs(rm->steps[0].moe_aux_loss - 0.02) < 1e-7);
    assert_int_equal(rm->moe_experts, 2);
    run_metrics_free(rm);
    f = fopen(path, "r");
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    assert_null(strstr(text, "inf"));
    assert_non_null(strstr(text, "\"tokens_per_sec\":null"));
    assert_non_null(strstr(text, "\"loss_scale\":65536,\"skipped\":true"));
}

typedef struct {
    step_result s;
    float eval_loss;
    int eval; /* 1: check the evaluation instead */
} check_case;

static void run_check(const void *arg) {
    const check_case *k = arg;
    const train_config c = a_config();
    if (k->eval) metrics_check_eval(3, k->eval_loss);
    else metrics_check_step(&c, 3, &k->s);
    printf("passed\n");
    fflush(stdout);
}

/* One line naming the value and the iteration, exit 1; a skipped fp16 step's non-finite norm
 * is the loss scaler's business and passes. */
static void a_value_that_is_not_finite_stops_the_run(void **state) {
    (void)state;
    char out[4096];
    struct {
        check_case k;
        const char *want;
    } cases[] = {
        {{.s = a_step()}, "passed"},
        {{.s = a_step()}, "aux loss is inf at iteration 3: --moe-aux-loss-coeff"},
        {{.s = a_step()}, "the loss became nan at iteration 3"},
        {{.s = a_step()}, "the gradient norm is inf at iteration 3 (loss 5.5)"},
        {{.s = a_step()}, "passed"},
        {{.eval = 1, .eval_loss = NAN}, "the held-out loss is nan at iteration 3"},
    };
    cases[1].k.s.aux_loss = INFINITY;
    cases[2].k.s.loss = NAN;
    cases[3].k.s.grad_norm = INFINITY;
    cases[4].k.s.grad_norm = INFINITY;
    cases[4].k.s.skipped = true;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int rc = run_in_child(run_check, &cases[i].k, out, sizeof out);
        if (!strstr(out, cases[i].want))
            fail_msg("case %zu: want '%s', got '%s'", i, cases[i].want, out);
        const bool passes = strcmp(cases[i].want, "passed") == 0;
        if (passes ? rc != 0 : rc != 1) fail_msg("case %zu: exit %d", i, rc);
        int lines = 0;
        for (const char *p = out; *p; p++) lines += *p == '\n';
        assert_int_equal(lines, 1);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_line_reads_back),
        cmocka_unit_test(a_value_that_is_not_finite_stops_the_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
