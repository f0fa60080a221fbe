/* groups_cmd_test.c — `trident groups` from the outside: text and JSON of the worked
 * example, a picture of sane size, files written whole, and bad layouts refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/testing.h"

static char g_out[1 << 16];

static int run(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s groups %s", test_trident_path(), args);
    return run_capture(cmd, g_out, sizeof g_out);
}

static const char *k_example =
    "--world-size 16 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4";

static void text_lists_every_group_of_the_worked_example(void **state) {
    (void)state;
    char args[512];
    snprintf(args, sizeof args, "%s", k_example);
    assert_int_equal(run(args), 0);
    assert_non_null(strstr(g_out, "world 16 = tp 2 × pp 4 × dp 2"));
    assert_non_null(strstr(g_out, "[0,1] [2,3] [4,5] [6,7] [8,9] [10,11] [12,13] [14,15]"));
    assert_non_null(strstr(g_out, "[0,2] [1,3] [4,6] [5,7] [8,10] [9,11] [12,14] [13,15]"));
    assert_non_null(strstr(g_out, "[0,4,8,12] [1,5,9,13] [2,6,10,14] [3,7,11,15]"));
    assert_non_null(strstr(g_out, "[0,1,4,5,8,9,12,13] [2,3,6,7,10,11,14,15]"));
    assert_non_null(strstr(g_out, "[0,12] [1,13] [2,14] [3,15]"));
}

/* Without --context-parallel-size or --expert-model-parallel-size nothing of them shows. */
/* Megatron's advice: TP inside a node. Across nodes it is said (stderr), once per kind. */
static void tensor_groups_across_nodes_are_warned_about(void **state) {
    (void)state;
    assert_int_equal(run("--world-size 8 --tensor-model-parallel-size 4 "
                         "--pipeline-model-parallel-size 2 --ranks-per-node 2 2>&1"),
                     0);
    assert_non_null(strstr(g_out, "warning: 2 tp groups span nodes at --ranks-per-node 2 (the "
                                  "first: ranks 0..3 on nodes 0..1)"));
    assert_int_equal(run("--world-size 8 --tensor-model-parallel-size 2 "
                         "--pipeline-model-parallel-size 2 --ranks-per-node 2 2>&1"),
                     0);
    assert_null(strstr(g_out, "warning"));
}

static void a_layout_without_context_or_experts_prints_as_before(void **state) {
    (void)state;
    assert_int_equal(run(k_example), 0);
    assert_non_null(strstr(g_out, "layout: world 16 = tp 2 × pp 4 × dp 2, vpp 1, rank order "
                                  "tp-dp-pp, 8 ranks per node\n"));
    assert_non_null(strstr(g_out, "\nrank  node  tp  pp  dp  prev  next\n"));
    assert_null(strstr(g_out, "cp ("));
    assert_null(strstr(g_out, "ep ("));
    assert_null(strstr(g_out, "dp_cp"));
    assert_null(strstr(g_out, "tp_cp"));
    char args[512];
    snprintf(args, sizeof args, "%s --format json", k_example);
    assert_int_equal(run(args), 0);
    assert_null(strstr(g_out, "context_parallel_size"));
    assert_null(strstr(g_out, "\"cp\""));
}

static const char *k_cp_ep = "--world-size 16 --tensor-model-parallel-size 2 "
                             "--context-parallel-size 2 --pipeline-model-parallel-size 2 "
                             "--expert-model-parallel-size 2";

/* groups.h's second worked example, from the command line. */
static void context_and_expert_groups_are_listed_when_above_one(void **state) {
    (void)state;
    assert_int_equal(run(k_cp_ep), 0);
    assert_non_null(strstr(g_out, "layout: world 16 = tp 2 × cp 2 × pp 2 × dp 2 (ep 2 × edp 1), "
                                  "vpp 1, rank order tp-cp-ep-dp-pp"));
    assert_non_null(strstr(g_out, "\ncp (context parallel"));
    assert_non_null(strstr(g_out, "[0,2] [1,3] [4,6] [5,7] [8,10] [9,11] [12,14] [13,15]"));
    assert_non_null(strstr(g_out, "\nep (expert parallel"));
    assert_non_null(strstr(g_out, "[0,4] [1,5] [2,6] [3,7] [8,12] [9,13] [10,14] [11,15]"));
    assert_non_null(strstr(g_out, "\nedp (expert data parallel"));
    assert_non_null(strstr(g_out, "16 groups of 1\n  [0] [1] [2]"));
    assert_non_null(strstr(g_out, "\ndp_cp ("));
    assert_non_null(strstr(g_out, "[0,2,4,6] [1,3,5,7] [8,10,12,14] [9,11,13,15]"));
    assert_non_null(strstr(g_out, "\nedp_cp ("));
    /* the tensor × context group the MoE switch loss counts over, right after cp */
    assert_non_null(strstr(g_out, "\ntp_cp (tensor × context parallel"));
    assert_non_null(
        strstr(g_out, "4 groups of 4\n  [0,1,2,3] [4,5,6,7] [8,9,10,11] [12,13,14,15]"));
    assert_true(strstr(g_out, "\ncp (") < strstr(g_out, "\ntp_cp (") &&
                strstr(g_out, "\ntp_cp (") < strstr(g_out, "\ndp ("));
    assert_non_null(strstr(g_out, "rank  node  tp  cp  pp  dp  ep  edp  prev  next\n"));
    /* rank 13: tp 1, cp 0, pp 1, dp 1 = ep 1 + 2·edp 0; its pipeline neighbour is 5 */
    assert_non_null(strstr(g_out, "\n  13     1   1   0   1   1   1    0     5     5\n"));
    /* only cp above 1: no expert groups, and edp_cp (= dp_cp) is not repeated */
    assert_int_equal(run("--world-size 8 --context-parallel-size 2"), 0);
    assert_non_null(strstr(g_out, "world 8 = tp 1 × cp 2 × pp 1 × dp 4, vpp 1"));
    assert_non_null(strstr(g_out, "\ndp_cp ("));
    assert_null(strstr(g_out, "\nep ("));
    assert_null(strstr(g_out, "\nedp_cp ("));
    /* JSON: the sizes and every coordinate */
    char args[512];
    snprintf(args, sizeof args, "%s --rank-order tp-cp-ep-pp-dp --format json", k_cp_ep);
    assert_int_equal(run(args), 0);
    assert_non_null(strstr(g_out,
                           "\"context_parallel_size\": 2, \"expert_model_parallel_size\": 2, "
                           "\"expert_data_parallel_size\": 1, \"rank_order\": "
                           "\"tp-cp-ep-pp-dp\""));
    assert_non_null(strstr(g_out, "\"dp_cp\": [[0,2,8,10], [1,3,9,11], [4,6,12,14], [5,7,13,15]]"));
    assert_non_null(strstr(g_out, "\"tp_cp\": [[0,1,2,3], [4,5,6,7], [8,9,10,11], [12,13,14,15]]"));
    assert_non_null(strstr(g_out, "{\"rank\": 13, \"node\": 1, \"tp\": 1, \"pp\": 1, \"dp\": 1, "
                                  "\"cp\": 0, \"ep\": 1, \"edp\": 0}"));
}

static void json_has_the_five_kinds_and_the_layout(void **state) {
    (void)state;
    char args[512];
    snprintf(args, sizeof args, "%s --format json", k_example);
    assert_int_equal(run(args), 0);
    assert_int_equal(g_out[0], '{');
    assert_non_null(strstr(g_out,
                           "\"layout\": {\"world_size\": 16, \"tensor_model_parallel_size\": 2, "
                           "\"pipeline_model_parallel_size\": 4, \"data_parallel_size\": 2"));
    assert_non_null(strstr(g_out, "\"rank_order\": \"tp-dp-pp\""));
    assert_non_null(
        strstr(g_out, "\"tp\": [[0,1], [2,3], [4,5], [6,7], [8,9], [10,11], [12,13], [14,15]]"));
    assert_non_null(
        strstr(g_out, "\"dp\": [[0,2], [1,3], [4,6], [5,7], [8,10], [9,11], [12,14], [13,15]]"));
    assert_non_null(strstr(g_out, "\"pp\": [[0,4,8,12], [1,5,9,13], [2,6,10,14], [3,7,11,15]]"));
    assert_non_null(strstr(g_out, "\"mp\": [[0,1,4,5,8,9,12,13], [2,3,6,7,10,11,14,15]]"));
    assert_non_null(strstr(g_out, "\"embedding\": [[0,12], [1,13], [2,14], [3,15]]"));
    /* balanced brackets and braces: a cheap structural check */
    int sq = 0, br = 0;
    for (const char *p = g_out; *p; p++) {
        sq += (*p == '[') - (*p == ']');
        br += (*p == '{') - (*p == '}');
        assert_true(sq >= 0 && br >= 0);
    }
    assert_int_equal(sq, 0);
    assert_int_equal(br, 0);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void output_files_follow_their_extension(void **state) {
    (void)state;
    const char *dir = test_tmpdir("groups_cmd");
    char args[4096], path[4200];
    const char *exts[] = {"png", "svg", "pdf", "json", "txt"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/g.%s", dir, exts[i]);
        snprintf(args, sizeof args, "%s --rank-order tp-pp-dp -o %s", k_example, path);
        assert_int_equal(run(args), 0);
        assert_true(file_size(path) > 200);
    }
    snprintf(path, sizeof path, "%s/g.png", dir);
    FILE *f = fopen(path, "rb");
    unsigned char h[24];
    assert_int_equal(fread(h, 1, 24, f), 24);
    fclose(f);
    assert_memory_equal(h, "\x89PNG", 4);
    unsigned w = (unsigned)h[16] << 24 | h[17] << 16 | h[18] << 8 | h[19];
    unsigned ht = (unsigned)h[20] << 24 | h[21] << 16 | h[22] << 8 | h[23];
    assert_true(w >= 800 && w <= 3000);
    assert_true(ht >= 300 && ht <= 3000);
    snprintf(path, sizeof path, "%s/g.json", dir);
    f = fopen(path, "rb");
    char buf[256] = {0};
    assert_true(fread(buf, 1, sizeof buf - 1, f) > 0);
    fclose(f);
    assert_non_null(strstr(buf, "\"rank_order\": \"tp-pp-dp\""));
    /* no temporary left behind */
    snprintf(args, sizeof args, "ls %s | grep -c tmp", dir);
    run_capture(args, buf, sizeof buf);
    assert_int_equal(atoi(buf), 0);
}

static void bad_layouts_exit_nonzero_naming_the_rule(void **state) {
    (void)state;
    assert_int_not_equal(run("--world-size 8 --tensor-model-parallel-size 3"), 0);
    assert_non_null(strstr(g_out, "trident groups: world size 8 is not divisible by "
                                  "tensor-model-parallel-size 3 × pipeline-model-parallel-size 1"));
    assert_int_not_equal(run("--world-size 8 --virtual-pipeline-model-parallel-size 2"), 0);
    assert_non_null(strstr(g_out, "needs pipeline-model-parallel-size > 1"));
    assert_int_not_equal(run("--tensor-model-parallel-size 2"), 0);
    assert_non_null(strstr(g_out, "--world-size is required"));
    assert_int_not_equal(run("--world-size 4 --rank-order pp-tp-dp"), 0);
    assert_non_null(strstr(g_out, "--rank-order must be one of tp-dp-pp|tp-pp-dp"));
    const char *dir = test_tmpdir("groups_bad");
    char args[4200], path[4200];
    snprintf(path, sizeof path, "%s/g.bmp", dir);
    snprintf(args, sizeof args, "--world-size 4 -o %s", path);
    assert_int_not_equal(run(args), 0);
    assert_non_null(strstr(g_out, "must end in .png, .svg, .pdf, .json or .txt"));
    assert_true(file_size(path) < 0);
}

static void bad_context_or_expert_sizes_name_the_flag_and_the_rule(void **state) {
    (void)state;
    const char *dir = test_tmpdir("groups_bad_cp_ep");
    char args[4200], path[4200];
    snprintf(path, sizeof path, "%s/g.png", dir);
    static const char *const cases[][2] = {
        {"--world-size 8 --tensor-model-parallel-size 2 --context-parallel-size 3",
         "trident groups: world size 8 is not divisible by tensor-model-parallel-size 2 × "
         "context-parallel-size 3 × pipeline-model-parallel-size 1"},
        {"--world-size 8 --tensor-model-parallel-size 2 --expert-model-parallel-size 3",
         "trident groups: expert-model-parallel-size 3 does not divide the data-parallel size 4"},
        {"--world-size 8 --context-parallel-size 0",
         "trident groups: context-parallel-size 0 must be at least 1"},
        {"--world-size 8 --expert-model-parallel-size -1",
         "trident groups: expert-model-parallel-size -1 must be at least 1"},
        {"--world-size 8 --context-parallel-size two",
         "--context-parallel-size expects an integer, got 'two'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, "%s -o %s", cases[i][0], path);
        assert_int_not_equal(run(args), 0);
        if (!strstr(g_out, cases[i][1]))
            fail_msg("'%s' printed '%s', want '%s'", cases[i][0], g_out, cases[i][1]);
        assert_true(file_size(path) < 0); /* nothing written */
    }
}

/* A picture with the new groups is drawn, of sane size, in every format. */
static void context_and_expert_groups_are_drawn(void **state) {
    (void)state;
    const char *dir = test_tmpdir("groups_cmd_cp_ep");
    char args[4200], path[4200];
    const char *exts[] = {"png", "svg", "pdf"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/g.%s", dir, exts[i]);
        snprintf(args, sizeof args, "%s -o %s", k_cp_ep, path);
        assert_int_equal(run(args), 0);
        assert_true(file_size(path) > 200);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_lists_every_group_of_the_worked_example),
        cmocka_unit_test(tensor_groups_across_nodes_are_warned_about),
        cmocka_unit_test(a_layout_without_context_or_experts_prints_as_before),
        cmocka_unit_test(context_and_expert_groups_are_listed_when_above_one),
        cmocka_unit_test(json_has_the_five_kinds_and_the_layout),
        cmocka_unit_test(output_files_follow_their_extension),
        cmocka_unit_test(bad_layouts_exit_nonzero_naming_the_rule),
        cmocka_unit_test(bad_context_or_expert_sizes_name_the_flag_and_the_rule),
        cmocka_unit_test(context_and_expert_groups_are_drawn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
