/* run_metrics_test.c — metrics.jsonl read back: steps, evaluations, absent values, the layout
 * label, and every kind of bad file named with its line. */
#include "src/trace/run_metrics.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/testing.h"

static void write_file(const char *dir, const char *name, const char *text) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_reads_steps_evals_and_layout(void **state) {
    (void)state;
    const char *dir = test_tmpdir("run_metrics_good");
    write_file(dir, "metrics.jsonl",
               "{\"step\":1,\"loss\":5.5,\"lr\":1.5e-4,\"grad_norm\":3.2,\"tokens_per_sec\":9625.5,"
               "\"peak_activation_bytes\":5660672,\"model_flops_per_s\":1.4e10,\"mfu\":0.44}\n"
               "\n"
               "{\"step\":5,\"loss\":5.2,\"lr\":7.5e-4,\"grad_norm\":-1,\"tokens_per_sec\":25875.1,"
               "\"loss_scale\":65536,\"skipped\":true}\n"
               "{\"step\":5,\"eval_loss\":5.0}\n"
               "{\"note\":\"a line of another kind\",\"x\":null}\n"
               "{ \"step\" : 10 , \"loss\" : 4.7 }\n");
    write_file(dir, "config.json",
               "{\"tensor_model_parallel_size\":2,\"pipeline_model_parallel_size\":2,\"data_"
               "parallel_size\":2,"
               "\"virtual_pipeline_size\":2,\"pipeline_schedule\":\"interleaved\","
               "\"use_distributed_optimizer\":true,\"precision\":\"fp32\"}\n");
    char err[512] = "";
    char withslash[4200];
    snprintf(withslash, sizeof withslash, "%s/", dir);
    run_metrics *m = run_metrics_read(withslash, err, sizeof err);
    if (!m) fail_msg("%s", err);
    assert_string_equal(m->dir, dir);
    assert_int_equal(m->nsteps, 3);
    assert_int_equal(m->nevals, 1);
    assert_int_equal(m->steps[0].step, 1);
    assert_true(m->steps[0].loss == 5.5 && m->steps[0].lr == 1.5e-4 &&
                m->steps[0].grad_norm == 3.2);
    assert_true(m->steps[0].tokens_per_sec == 9625.5 && m->steps[0].mfu == 0.44);
    assert_true(isnan(m->steps[1].grad_norm));         /* -1: the norm was not finite */
    assert_true(isnan(m->steps[1].model_flops_per_s)); /* absent */
    assert_int_equal(m->steps[2].step, 10);
    assert_true(isnan(m->steps[2].lr));
    assert_int_equal(m->evals[0].step, 5);
    assert_true(m->evals[0].loss == 5.0);
    assert_string_equal(m->layout, "tp2×pp2×dp2, interleaved v2, ZeRO");
    run_metrics_free(m);
}

static void test_layout_labels(void **state) {
    (void)state;
    char buf[160];
    assert_true(run_metrics_layout_label(
        "{\"tensor_model_parallel_size\":1,\"pipeline_model_parallel_size\":1,"
        "\"data_parallel_size\":1,\"pipeline_schedule\":\"1f1b\"}",
        buf, sizeof buf));
    assert_string_equal(buf, "serial");
    assert_true(run_metrics_layout_label(
        "{\"tensor_model_parallel_size\":1,\"pipeline_model_parallel_size\":4,"
        "\"data_parallel_size\":1,\"pipeline_schedule\":\"gpipe\","
        "\"virtual_pipeline_size\":1,\"precision\":\"bf16\"}",
        buf, sizeof buf));
    assert_string_equal(buf, "tp1×pp4×dp1, gpipe, bf16");
    assert_true(run_metrics_layout_label(
        "{\"tensor_model_parallel_size\":2,\"pipeline_model_parallel_size\":1,"
        "\"data_parallel_size\":2,\"sequence_parallel\":true,\"use_distributed_optimizer\":true}",
        buf, sizeof buf));
    assert_string_equal(buf, "tp2×pp1×dp2, SP, ZeRO");
    assert_false(run_metrics_layout_label("{\"seed\":3}", buf, sizeof buf));
    assert_false(run_metrics_layout_label("not json", buf, sizeof buf));
    assert_false(run_metrics_layout_label(NULL, buf, sizeof buf));
}

static void test_no_config_means_no_label(void **state) {
    (void)state;
    const char *dir = test_tmpdir("run_metrics_nolabel");
    write_file(dir, "metrics.jsonl", "{\"step\":1,\"loss\":2}\n");
    char err[512];
    run_metrics *m = run_metrics_read(dir, err, sizeof err);
    if (!m) fail_msg("%s", err);
    assert_string_equal(m->layout, "");
    run_metrics_free(m);
}

/* err must contain `want` for a metrics.jsonl holding `text` (NULL: no file at all). */
static void expect_error(const char *text, const char *want) {
    const char *dir = test_tmpdir("run_metrics_bad");
    if (text) write_file(dir, "metrics.jsonl", text);
    char err[512] = "";
    run_metrics *m = run_metrics_read(dir, err, sizeof err);
    if (m) fail_msg("read '%s' without an error", text ? text : "(no file)");
    if (!strstr(err, want)) fail_msg("error '%s' does not say '%s'", err, want);
}

static void test_bad_files_are_named_with_their_line(void **state) {
    (void)state;
    expect_error(NULL, "metrics.jsonl cannot be opened: No such file");
    expect_error("", "the file is empty");
    expect_error("{\"step\":1,\"eval_loss\":2}\n", "no line with a \"loss\"");
    expect_error("{\"step\":1,\"loss\":2}\nnot json\n",
                 "metrics.jsonl:2: not a flat JSON object: expected '{'");
    expect_error("{\"step\":1,\"loss\":}\n", ":1: not a flat JSON object: \"loss\" has no value");
    expect_error("{\"step\":1,\"loss\":2\n", ":1: not a flat JSON object: expected ',' or '}'");
    expect_error("{\"step\":1,\"loss\":2} x\n", "text after '}'");
    expect_error("{\"step\":1,\"loss\":{\"a\":1}}\n", "nested object");
    expect_error("\n{\"loss\":2}\n", ":2: a loss without a \"step\"");
    expect_error("{\"step\":1.5,\"loss\":2}\n", ":1: \"step\" must be a non-negative integer");
    expect_error("{\"step\":-3,\"loss\":2}\n", "non-negative integer");
    expect_error("{\"step\":1,\"loss\":\"low\"}\n", ":1: \"loss\" must be a number");
    expect_error("{\"step\":1,\"loss\":null}\n", "\"loss\" must be a number");
}

/* An MoE run's step lines: moe_tokens (L = 2 layers of E = 3 experts), moe_dropped, the aux
 * loss; a line without them (an eval, a step that did not log them) is not an MoE line. */
static void test_reads_moe_load(void **state) {
    (void)state;
    const char *dir = test_tmpdir("run_metrics_moe");
    write_file(dir, "metrics.jsonl",
               "{\"step\":1,\"loss\":5.5,\"moe_aux_loss\":0.0123,"
               "\"moe_tokens\":[[10, 20, 30],[0,0,60]],\"moe_dropped\":[0, 4]}\n"
               "{\"step\":1,\"eval_loss\":5.4}\n"
               "{\"step\":2,\"loss\":5.4}\n"
               "{\"step\":3,\"loss\":5.3,\"moe_tokens\":[ [ 4294967295 ,0,1 ] , [7,8,9] ] }\n");
    char err[512] = "";
    run_metrics *m = run_metrics_read(dir, err, sizeof err);
    if (!m) fail_msg("%s", err);
    assert_int_equal(m->nsteps, 3);
    assert_int_equal(m->moe_layers, 2);
    assert_int_equal(m->moe_experts, 3);
    assert_int_equal(m->nmoe, 2);
    assert_true(m->steps[0].moe_aux_loss == 0.0123);
    assert_true(isnan(m->steps[1].moe_aux_loss));
    const run_metrics_moe *a = &m->moe[0], *b = &m->moe[1];
    assert_int_equal(a->step, 1);
    assert_int_equal(a->line, 0);
    const uint32_t want_a[6] = {10, 20, 30, 0, 0, 60}, want_b[6] = {4294967295u, 0, 1, 7, 8, 9};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(a->tokens[i], want_a[i]);
        assert_int_equal(b->tokens[i], want_b[i]);
    }
    assert_non_null(a->dropped);
    assert_int_equal(a->dropped[0], 0);
    assert_int_equal(a->dropped[1], 4);
    assert_int_equal(b->step, 3);
    assert_int_equal(b->line, 2);
    assert_null(b->dropped); /* the line gave no moe_dropped */
    run_metrics_free(m);

    /* A run without MoE fields has none. */
    write_file(dir, "metrics.jsonl", "{\"step\":1,\"loss\":2}\n");
    m = run_metrics_read(dir, err, sizeof err);
    if (!m) fail_msg("%s", err);
    assert_int_equal(m->nmoe, 0);
    assert_int_equal(m->moe_layers, 0);
    assert_null(m->moe);
    run_metrics_free(m);
}

static void test_bad_moe_fields_are_named_with_their_line(void **state) {
    (void)state;
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[[1,2,3],[4,5]]}\n",
                 ":1: layer 1 of \"moe_tokens\" has 2 experts, layer 0 has 3 (ragged)");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[[1,2],[3,4]]}\n"
                 "{\"step\":2,\"loss\":2,\"moe_tokens\":[[1,2,3],[3,4,5]]}\n",
                 ":2: layer 0 of \"moe_tokens\" has 3 experts, the first MoE line has 2");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[[1,2]]}\n"
                 "{\"step\":2,\"loss\":2,\"moe_tokens\":[[1,2],[3,4]]}\n",
                 ":2: \"moe_tokens\" has 2 layers, the first MoE line had 1");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[[1,-2]]}\n",
                 ":1: layer 0 of \"moe_tokens\" holds -2: counts are non-negative integers");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[[1,2.5]]}\n", "holds 2.5");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[[1,4294967296]]}\n", "holds 4.29497e+09");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[]}\n", "\"moe_tokens\" has no layers");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[[]]}\n", "has 0 experts (1 to 4096)");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[1,2]}\n",
                 "layer 0 of \"moe_tokens\" must be an array of counts");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[[[1]]]}\n",
                 "\"moe_tokens\" is not an array of numbers (at most two deep)");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[[\"a\"]]}\n", "not an array of numbers");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[[1,2]],\"moe_dropped\":[1,2]}\n",
                 ":1: \"moe_dropped\" has 2 counts for 1 layers");
    expect_error("{\"step\":1,\"loss\":2,\"moe_dropped\":[1]}\n",
                 ":1: \"moe_dropped\" without \"moe_tokens\"");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":7}\n", "\"moe_tokens\" must be an array");
    expect_error("{\"step\":1,\"loss\":2,\"moe_tokens\":[[1,2]\n", "not a flat JSON object");
    expect_error("{\"step\":1,\"loss\":2,\"other\":[1,2]}\n", "\"other\" holds a nested array");
    /* 4097 layers of one expert: over the bound */
    static char big[4097 * 4 + 128];
    int n = snprintf(big, sizeof big, "{\"step\":1,\"loss\":2,\"moe_tokens\":[");
    for (int l = 0; l < 4097; l++)
        n += snprintf(big + n, sizeof big - (size_t)n, "%s[0]", l ? "," : "");
    snprintf(big + n, sizeof big - (size_t)n, "]}\n");
    expect_error(big, "\"moe_tokens\" has more than 4096 layers");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_steps_evals_and_layout),
        cmocka_unit_test(test_layout_labels),
        cmocka_unit_test(test_no_config_means_no_label),
        cmocka_unit_test(test_bad_files_are_named_with_their_line),
        cmocka_unit_test(test_reads_moe_load),
        cmocka_unit_test(test_bad_moe_fields_are_named_with_their_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
