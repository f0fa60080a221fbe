/* memory_cmd_test.c — `trident memory` end to end, and what `trident train` writes of it:
 *   - the text: layout, one row per rank, the ZeRO table (stage in use starred), the
 *     Korthikanti table whose Trident formula equals the model's layout;
 *   - JSON with every rank, pictures in three formats, --data-parallel-sharding-strategy;
 *   - MoE, expert- and context-parallel layouts: cp and ep columns, no refusal; the ZeRO
 *     table's Nd is dp × cp, and a cp 2 run with the distributed optimizer starts;
 *   - bad input: one line naming the value, exit 1, no file;
 *   - a 2-rank `trident train` writes one metrics.jsonl record per rank whose predicted bytes
 *     are `trident memory`'s and whose measured peak is within 5% of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/testing.h"

static char g_out[1 << 18];

static int memory(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' memory %s", test_trident_path(), args);
    return run_capture(cmd, g_out, sizeof g_out);
}

static void expect_output(const char *needle) {
    if (!strstr(g_out, needle)) fail_msg("output does not contain '%s':\n%s", needle, g_out);
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

#define LAYOUT_8                                                                                   \
    "--world-size 8 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "              \
    "--use-distributed-optimizer --bf16 --pipeline-schedule zb-h1"

static void text_lists_every_rank_and_both_tables(void **state) {
    (void)state;
    assert_int_equal(memory(LAYOUT_8), 0);
    expect_output("trident memory: 8 ranks = tensor 2 × pipeline 2 × data 2, schedule zb-h1, "
                  "ZeRO-1 (optim), bf16");
    expect_output("ZeRO-1: Adam m, v and the fp32 master sharded over DP");
    expect_output("rank  tp  pp  dp  parameters   gradients  master weights");
    expect_output("B->W hand-over");
    for (int r = 0; r < 8; r++) {
        char row[32];
        snprintf(row, sizeof row, "\n%4d  %2d  %2d  %2d", r, r % 2, r / 4, (r / 2) % 2);
        expect_output(row); /* rank order tp-dp-pp: tp fastest, then dp, then pp */
    }
    expect_output("* ZeRO-1   optim");
    expect_output("  ZeRO-3   optim_grads_params");
    expect_output("paper (2 + 2 + 12 bytes");
    expect_output("no parallelism             sbh(34 + 5as/h)");
    expect_output("full recompute             2sbh (the layer's input)");
    /* s = 64, b = 4, h = 64, a = 4, t = 2: Trident's formula is what the layout allocates */
    expect_output("TP + sequence parallel     (sbh/t)(34 + 5as/h)               442368  "
                  "(sbh/t)(64 + 4as/h) + 16sb/t             657408       657408");
}

static void json_and_pictures_and_stages(void **state) {
    (void)state;
    const char *dir = test_tmpdir("memory_cmd");
    char args[4400], path[4400];
    assert_int_equal(memory(LAYOUT_8 " --format json"), 0);
    assert_int_equal(count(g_out, "{\"rank\":"), 8);
    expect_output("\"zero_stage\": 1");
    expect_output("\"data_parallel_sharding_strategy\": \"optim\"");
    expect_output("\"activations_per_layer\"");
    const char *ext[] = {"png", "svg", "pdf", "json", "txt"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/bill.%s", dir, ext[i]);
        snprintf(args, sizeof args, LAYOUT_8 " -o %s", path);
        assert_int_equal(memory(args), 0);
        expect_output("wrote ");
        assert_true(access(path, F_OK) == 0);
    }
    /* ZeRO-3 shards the parameters too: rank 0's parameter column drops by about dp */
    assert_int_equal(memory("--world-size 4 --data-parallel-sharding-strategy optim_grads_params"),
                     0);
    expect_output("ZeRO-3 (optim_grads_params)");
    expect_output("* ZeRO-3   optim_grads_params");
    expect_output("parameters, gradients, Adam m, v and master sharded over DP");
}

#define LAYOUT_5D                                                                                  \
    "--world-size 8 --tensor-model-parallel-size 2 --context-parallel-size 2 --num-experts 4 "     \
    "--moe-router-topk 2 --expert-model-parallel-size 2"

/* MoE, expert and context parallelism are predicted (memory_test.c measures them): the
 * rank rows gain cp and ep coordinates, in text, JSON and the picture's labels. */
static void moe_cp_ep_layouts_list_cp_and_ep(void **state) {
    (void)state;
    assert_int_equal(memory(LAYOUT_5D), 0);
    if (strstr(g_out, "not predicted")) fail_msg("refused:\n%s", g_out);
    expect_output("trident memory: 8 ranks = tensor 2 × context 2 × pipeline 1 × data 2 (expert 2 "
                  "× expert-data 1), schedule 1f1b");
    expect_output("mixture of experts: 4 experts, top-2, dropless; 2 experts per expert-parallel "
                  "rank");
    expect_output("rank  tp  pp  dp  cp  ep  parameters");
    for (int r = 0; r < 8; r++) { /* tp-cp-ep-dp-pp: tp fastest, then cp, then dp; ep = dp % 2 */
        char row[48];
        const int dp = r / 4;
        snprintf(row, sizeof row, "\n%4d  %2d  %2d  %2d  %2d  %2d", r, r % 2, 0, dp, (r / 2) % 2,
                 dp % 2);
        expect_output(row);
    }
    expect_output("(tp 0, pp 0, dp 0, cp 0, ep 0)");
    assert_int_equal(memory(LAYOUT_5D " --format json"), 0);
    assert_int_equal(count(g_out, "{\"rank\":"), 8);
    expect_output("\"context_parallel_size\": 2");
    expect_output("\"expert_model_parallel_size\": 2");
    expect_output("{\"rank\":6,\"tp\":0,\"pp\":0,\"dp\":1,\"cp\":1,\"ep\":1,");
    char path[4400], args[4600];
    snprintf(path, sizeof path, "%s/bill5d.png", test_tmpdir("memory_cmd_5d"));
    snprintf(args, sizeof args, LAYOUT_5D " -o %s", path);
    assert_int_equal(memory(args), 0);
    assert_true(access(path, F_OK) == 0);
    /* without cp or ep the listing keeps its three coordinates */
    assert_int_equal(memory("--world-size 2 --num-experts 4 --format json"), 0);
    assert_true(strstr(g_out, "\"cp\":") == NULL);
    expect_output("\"num_experts\": 4");
}

static void refuse(const char *args, const char *needle) {
    const char *dir = test_tmpdir("memory_bad");
    char full[4400];
    snprintf(full, sizeof full, "%s -o %s/never.txt", args, dir);
    if (strstr(args, "-o ")) snprintf(full, sizeof full, "%s", args);
    int rc = memory(full);
    if (rc != 1 || !strstr(g_out, needle))
        fail_msg("'%s': exit %d, wanted 1 and '%s' in:\n%s", args, rc, needle, g_out);
    assert_int_equal(count(g_out, "\n"), 1); /* one line */
    char path[4400];
    snprintf(path, sizeof path, "%s/never.txt", dir);
    assert_true(access(path, F_OK) != 0);
}

static void bad_input_gets_one_line(void **state) {
    (void)state;
    refuse("", "--world-size 0 must be at least 1");
    refuse("--world-size 6 --tensor-model-parallel-size 4", "world size 6 is not divisible");
    refuse("--world-size 2000000", "above 1048576 ranks");
    refuse("--world-size 2000 -o x.png", "pictures take at most 1024");
    refuse("--world-size 2 -o bill.bmp", "must end in .png, .svg, .pdf, .json or .txt");
    refuse("--world-size 2 --format json -o bill.txt", "--format json does not match");
    refuse("--world-size 2 --data-parallel-sharding-strategy zero9", "zero9");
    refuse("--world-size 2 --use-distributed-optimizer --data-parallel-sharding-strategy no_shard",
           "no_shard shards nothing");
    refuse("--world-size 1 --seq-length 1000000000", "predictions stop at 1e+18 bytes");
    refuse("--world-size 2 --pipeline-model-parallel-size 2 --stage-layers 1,x",
           "trident memory: --stage-layers '1,x'");
    /* never wrapped (src/core/checked.h): a count past int, a sum past int, a product that is 0
     * as int (it was SIGFPE) */
    refuse("--world-size 2 --pipeline-model-parallel-size 2 --num-layers 2 --stage-layers "
           "4294967297,1",
           "--stage-layers '4294967297,1': 4294967297 is not a layer count");
    refuse("--world-size 2 --pipeline-model-parallel-size 2 --num-layers 2 --stage-layers "
           "2147483647,2147483647",
           "adds up to 4294967294 layers but --num-layers is 2");
    refuse("--world-size 8 --tensor-model-parallel-size 65536 --pipeline-model-parallel-size 65536",
           "world size 8 is not divisible by --tensor-model-parallel-size 65536 × "
           "--pipeline-model-parallel-size 65536");
    refuse("--world-size 1048576 --micro-batch-size 4096 --global-batch-size 4096",
           "--global-batch-size 4096 is not divisible by --micro-batch-size 4096 × data-parallel "
           "size 1048576");
}

/* The records `trident train` writes, against `trident memory` for the same flags. */
static void train_records_predicted_and_measured_per_rank(void **state) {
    (void)state;
    const char *flags = "--pipeline-model-parallel-size 2 --pipeline-schedule zbv "
                        "--recompute-granularity selective";
    char run[4400], args[8192], out[1 << 16];
    snprintf(run, sizeof run, "%s/run", test_tmpdir("memory_train"));
    snprintf(args, sizeof args, "train %s --train-iters 2 --no-trace --run-dir %s", flags, run);
    int rc = test_run_job(2, "", test_trident_path(), args, out, sizeof out, NULL);
    if (rc != 0) fail_msg("train failed:\n%s", out);
    if (!strstr(out, "measured ÷ predicted within 0.0% on every rank"))
        fail_msg("no memory summary line:\n%s", out);
    snprintf(args, sizeof args, "--world-size 2 %s --format json", flags);
    assert_int_equal(memory(args), 0);
    char path[4500];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    int records = 0;
    while (fgets(line, sizeof line, f)) {
        int step, rank;
        unsigned long long pred, peak;
        const char *p = strstr(line, "\"rank\":");
        if (!p) continue;
        assert_int_equal(sscanf(line, "{\"step\":%d,\"rank\":%d", &step, &rank), 2);
        assert_int_equal(sscanf(strstr(line, "\"memory_predicted_bytes\":"),
                                "\"memory_predicted_bytes\":%llu,\"memory_peak_bytes\":%llu", &pred,
                                &peak),
                         2);
        assert_int_equal(step, 2);
        assert_true(peak >= 0.95 * pred && peak <= 1.05 * pred);
        char want[96]; /* the same number in trident memory's JSON for that rank */
        snprintf(want, sizeof want, "\"rank\":%d,", rank);
        const char *r = strstr(g_out, want);
        assert_non_null(r);
        snprintf(want, sizeof want, "\"total\":%llu,", pred);
        const char *t = strstr(r, want);
        assert_true(t && t < strstr(r, "}"));
        records++;
    }
    fclose(f);
    assert_int_equal(records, 2);
}

/* Context parallelism shards the optimizer over dp × cp: the ZeRO table says so, and a
 * distributed-optimizer run with cp 2 starts (its banner once sized the shards by dp alone and
 * aborted: "shards of ... elements on 1 ranks cannot hold ..."). */
static void context_parallel_shards_over_dp_times_cp(void **state) {
    (void)state;
    assert_int_equal(memory("--world-size 8 --context-parallel-size 2 --use-distributed-optimizer"),
                     0);
    expect_output("Nd = dp × cp 8");
    char run[4400], args[8192], out[1 << 16];
    snprintf(run, sizeof run, "%s/run", test_tmpdir("memory_cp_zero"));
    snprintf(args, sizeof args,
             "train --context-parallel-size 2 --use-distributed-optimizer --train-iters 1 "
             "--no-trace --run-dir %s",
             run);
    const int rc = test_run_job(2, "", test_trident_path(), args, out, sizeof out, NULL);
    if (rc != 0 || !strstr(out, "step     1/1")) fail_msg("train failed:\n%s", out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_lists_every_rank_and_both_tables),
        cmocka_unit_test(json_and_pictures_and_stages),
        cmocka_unit_test(bad_input_gets_one_line),
        cmocka_unit_test(moe_cp_ep_layouts_list_cp_and_ep),
        cmocka_unit_test(train_records_predicted_and_measured_per_rank),
        cmocka_unit_test(context_parallel_shards_over_dp_times_cp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
