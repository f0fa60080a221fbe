/* generate_test.c — generation as a user runs it, and the loop against its no-cache twin.
 *
 * - the cached loop produces the tokens a loop that recomputes the whole prefix produces;
 * - from one checkpoint (the default model at context 48, trained for 300 steps), greedy generation prints the
 *   same text serially, at tp 2, at pp 2 and at tp 2 × pp 2 (under mpirun); stdout holds the
 *   generated text alone;
 * - sampling with a seed is repeatable, and the same at tp 2 as serially: Gumbel-max (noise is
 *   a function of the global token index), top-k + top-p and top-p alone;
 * - --prompt-file is the same prompt as --prompt;
 * - the context is a hard limit: generation stops there and says so;
 * - bad input (prompt longer than the context, no checkpoint, top-p outside (0, 1], a world that
 *   is not tp × pp, both prompt flags) ends with one clear line and a non-zero status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/infer/generate.h"
#include "src/model/local_model.h"
#include "tests/support/testing.h"

static char g_out[1 << 16];
static char g_dir[4096];
static const char *k_prompt = "fdiecofn=fdiecofn;epii|iipe;elkb";

static void cache_and_no_cache_generate_the_same_tokens(void **state) {
    (void)state;
    gpt_config g = {.vocab_size = gpt_padded_vocab(256, 128, 1),
                    .real_vocab = 256,
                    .seq_len = 40,
                    .num_layers = 2,
                    .hidden = 32,
                    .num_heads = 4};
    local_model *m = local_model_create(&g, 1, 0, 1, 0, 1, NULL, 5);
    int32_t prompt[6] = {'a', 'b', 'c', '=', 'a', 'b'};
    for (int rule = 0; rule < 2; rule++) {
        generate_config cached = {.max_new_tokens = 100,
                                  .sampling = {rule ? 1.0f : 0.0f, 0, 1.0f, 9}};
        generate_config plain = cached;
        plain.no_cache = true;
        int32_t a[100], b[100];
        generate_result ra = generate_run(m, NULL, &cached, prompt, 6, a, NULL, NULL);
        generate_result rb = generate_run(m, NULL, &plain, prompt, 6, b, NULL, NULL);
        /* 40 positions, a 6-token prompt: 35 tokens fit */
        assert_int_equal(ra.new_tokens, 35);
        assert_true(ra.context_full);
        assert_int_equal(rb.new_tokens, 35);
        for (int i = 0; i < 35; i++)
            if (a[i] != b[i])
                fail_msg("rule %d, token %d: cached %d, recomputed %d", rule, i, a[i], b[i]);
    }
    local_model_destroy(m);
}

/* `trident generate ARGS` on np ranks (np 0 = no mpirun; mpirun ends a job that outlives 120 s);
 * stdout only into g_out, unless with_stderr. */
static int gen(int np, const char *args, bool with_stderr) {
    char cmd[16384], prefix[4200];
    if (np) {
        test_mpirun_prefix(prefix, sizeof prefix - 16, np, "");
        strcat(prefix, " --timeout 120");
    }
    snprintf(cmd, sizeof cmd, "%s %s generate %s %s", np ? prefix : "", test_trident_path(), args,
             with_stderr ? "" : "2>/dev/null");
    return run_capture(cmd, g_out, sizeof g_out);
}

static int setup_checkpoint(void **state) {
    (void)state;
    test_mpi_setenv();
    snprintf(g_dir, sizeof g_dir, "%s", test_tmpdir("generate"));
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "%s train --train-iters 300 --no-trace --quiet --run-dir %s/run --save %s/ck "
             "--seq-length 48",
             test_trident_path(), g_dir, g_dir);
    int rc = run_capture(cmd, g_out, sizeof g_out);
    if (rc != 0) fprintf(stderr, "training the checkpoint failed:\n%s\n", g_out);
    return rc;
}

static void greedy_text_is_the_same_on_every_layout(void **state) {
    (void)state;
    char args[8192], serial[4096];
    snprintf(args, sizeof args, "--load %s/ck --prompt '%s' --max-new-tokens 16 --temperature 0",
             g_dir, k_prompt);
    assert_int_equal(gen(0, args, false), 0);
    snprintf(serial, sizeof serial, "%s", g_out);
    printf("  serial greedy: \"%s\"\n", serial);
    assert_int_equal((int)strlen(serial), 16);
    /* a text worth comparing: not one byte repeated */
    int distinct = 0;
    for (int c = 1; c < 256; c++) distinct += strchr(serial, c) != NULL;
    assert_true(distinct >= 3);
    const int layouts[3][2] = {{2, 1}, {1, 2}, {2, 2}};
    for (int i = 0; i < 3; i++) {
        char a[8400];
        snprintf(a, sizeof a,
                 "%s --tensor-model-parallel-size %d --pipeline-model-parallel-size %d", args,
                 layouts[i][0], layouts[i][1]);
        assert_int_equal(gen(layouts[i][0] * layouts[i][1], a, false), 0);
        if (strcmp(g_out, serial) != 0)
            fail_msg("tp %d × pp %d printed \"%s\", serial \"%s\"", layouts[i][0], layouts[i][1],
                     g_out, serial);
    }
}

static void seeded_sampling_repeats_and_matches_tp(void **state) {
    (void)state;
    char args[8192], first[4096];
    snprintf(args, sizeof args,
             "--load %s/ck --prompt '%s' --max-new-tokens 12 --temperature 0.8 --seed 7", g_dir,
             k_prompt);
    assert_int_equal(gen(0, args, false), 0);
    snprintf(first, sizeof first, "%s", g_out);
    assert_int_equal(gen(0, args, false), 0);
    assert_string_equal(g_out, first);
    char a[8400];
    snprintf(a, sizeof a, "%s --tensor-model-parallel-size 2", args);
    assert_int_equal(gen(2, a, false), 0);
    assert_string_equal(g_out, first);
    /* top-k and top-p: the shards' candidates are gathered and ordered the same way as the
     * serial run's, and the same draw picks among them */
    const char *rules[2] = {"--top-k 5 --top-p 0.9", "--top-p 0.8"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s %s", args, rules[i]);
        assert_int_equal(gen(0, a, false), 0);
        snprintf(first, sizeof first, "%s", g_out);
        assert_int_equal((int)strlen(first), 12);
        snprintf(a, sizeof a, "%s %s --tensor-model-parallel-size 2", args, rules[i]);
        assert_int_equal(gen(2, a, false), 0);
        if (strcmp(g_out, first) != 0)
            fail_msg("%s: tp 2 printed \"%s\", serial \"%s\"", rules[i], g_out, first);
    }
}

static void a_prompt_file_is_the_same_prompt(void **state) {
    (void)state;
    char args[8192], want[4096], path[4200];
    snprintf(args, sizeof args, "--load %s/ck --prompt '%s' --max-new-tokens 8 --temperature 0",
             g_dir, k_prompt);
    assert_int_equal(gen(0, args, false), 0);
    snprintf(want, sizeof want, "%s", g_out);
    snprintf(path, sizeof path, "%s/prompt.txt", g_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(k_prompt, f);
    fclose(f);
    snprintf(args, sizeof args, "--load %s/ck --prompt-file %s --max-new-tokens 8 --temperature 0",
             g_dir, path);
    assert_int_equal(gen(0, args, false), 0);
    assert_string_equal(g_out, want);
    /* a file whose size reads 0 but holds bytes (/proc) is read to its end, not "empty" */
    snprintf(args, sizeof args,
             "--load %s/ck --prompt-file /proc/sys/kernel/ostype --max-new-tokens 2 "
             "--temperature 0",
             g_dir);
    assert_int_equal(gen(0, args, true), 0);
    assert_non_null(strstr(g_out, "; prompt 6 bytes,")); /* "Linux\n" */
}

static void the_context_is_a_hard_stop(void **state) {
    (void)state;
    char args[8192];
    /* 32-byte prompt, context 48: 17 tokens fit */
    snprintf(args, sizeof args, "--load %s/ck --prompt '%s' --max-new-tokens 100 --temperature 0",
             g_dir, k_prompt);
    assert_int_equal(gen(0, args, true), 0);
    assert_non_null(
        strstr(g_out, "stopped after 17 new tokens: the context of 48 positions is full"));
    assert_non_null(strstr(g_out, "tokens/s"));
}

static void expect_refused(int np, const char *args, const char *message) {
    assert_int_not_equal(gen(np, args, true), 0);
    if (!strstr(g_out, message))
        fail_msg("`generate %s`: expected \"%s\", got:\n%s", args, message, g_out);
}

static void bad_input_is_refused_clearly(void **state) {
    (void)state;
    char a[8192], long_prompt[64];
    memset(long_prompt, 'a', 49);
    long_prompt[49] = 0;
    snprintf(a, sizeof a, "--load %s/ck --prompt %s", g_dir, long_prompt);
    expect_refused(0, a, "the prompt has 49 bytes, more than the model's context of 48 positions");
    snprintf(a, sizeof a, "--load %s/nothing --prompt abc", g_dir);
    expect_refused(0, a, "is not a directory");
    snprintf(a, sizeof a, "--load %s/run --prompt abc", g_dir);
    expect_refused(0, a, "holds no checkpoint");
    snprintf(a, sizeof a, "--load %s/ck --prompt abc --top-p 0", g_dir);
    expect_refused(0, a, "--top-p 0 must be in (0, 1]");
    snprintf(a, sizeof a, "--load %s/ck --prompt abc --top-p 1.5", g_dir);
    expect_refused(0, a, "--top-p 1.5 must be in (0, 1]");
    snprintf(a, sizeof a, "--load %s/ck --prompt abc --temperature -1", g_dir);
    expect_refused(0, a, "--temperature -1 must be");
    snprintf(a, sizeof a, "--load %s/ck --prompt abc --prompt-file /etc/hostname", g_dir);
    expect_refused(0, a, "exactly one of --prompt TEXT and --prompt-file FILE");
    snprintf(a, sizeof a, "--load %s/ck --prompt abc --max-new-tokens 0", g_dir);
    expect_refused(0, a, "--max-new-tokens 0 must be at least 1");
    snprintf(a, sizeof a, "--load %s/ck --prompt abc --tensor-model-parallel-size 2", g_dir);
    expect_refused(3, a, "3 ranks, but --tensor-model-parallel-size 2");
    /* the shape comes from the checkpoint: its rule names the saved value, not a flag */
    snprintf(a, sizeof a, "--load %s/ck --prompt abc --tensor-model-parallel-size 3", g_dir);
    char want[4400];
    snprintf(want, sizeof want,
             "the model saved in '%s/ck' does not fit this layout: num_attention_heads", g_dir);
    expect_refused(3, a, want);
    assert_null(strstr(g_out, "--num-attention-heads"));
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cache_and_no_cache_generate_the_same_tokens),
        cmocka_unit_test(greedy_text_is_the_same_on_every_layout),
        cmocka_unit_test(seeded_sampling_repeats_and_matches_tp),
        cmocka_unit_test(a_prompt_file_is_the_same_prompt),
        cmocka_unit_test(the_context_is_a_hard_stop),
        cmocka_unit_test(bad_input_is_refused_clearly),
    };
    return cmocka_run_group_tests(tests, setup_checkpoint, NULL);
}
