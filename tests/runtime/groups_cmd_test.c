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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_lists_every_group_of_the_worked_example),
        cmocka_unit_test(json_has_the_five_kinds_and_the_layout),
        cmocka_unit_test(output_files_follow_their_extension),
        cmocka_unit_test(bad_layouts_exit_nonzero_naming_the_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
