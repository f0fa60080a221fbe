/* enumerate_test.c — the planner's layouts are exactly the layouts `trident train` accepts:
 *   - every enumerated layout, written as train flags and parsed back, passes
 *     train_config_check and comes back with the same flags (no two are the same layout);
 *   - the other way: every candidate of a wider space (each size 1..world whether it divides
 *     or not, every schedule name with every --num-layers-per-virtual-pipeline-stage, ZeRO
 *     stages, recomputation, sequence parallelism, overlap flags) that train_config_check
 *     accepts is among the enumerated ones;
 * at world sizes 1, 2, 4 and 8 for the default model, and 4 for an MoE model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/plan/enumerate.h"
#include "src/train/config.h"
#include "src/zero/memory_plan.h"
#include "tests/support/testing.h"

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The flags of every layout, sorted (malloc'd strings). */
static char **keys_of(const plan_layouts *l) {
    char **k = calloc((size_t)l->n + 1, sizeof *k);
    for (int i = 0; i < l->n; i++) {
        char buf[1024];
        plan_layout_flags(&l->items[i], buf, sizeof buf);
        k[i] = strdup(buf);
    }
    qsort(k, (size_t)l->n, sizeof *k, cmp_str);
    return k;
}

static void free_keys(char **k, int n) {
    for (int i = 0; i < n; i++) free(k[i]);
    free(k);
}

/* Buffers a configuration points into stay until the program ends, then are freed (before the
 * leak checker of a sanitizer build looks). */
static char **g_kept;
static int g_nkept;
static void free_kept(void) {
    for (int i = 0; i < g_nkept; i++) free(g_kept[i]);
    free(g_kept);
}
static char *kept(size_t bytes) {
    if (g_nkept == 0) atexit(free_kept);
    g_kept = realloc(g_kept, (size_t)(g_nkept + 1) * sizeof *g_kept);
    return g_kept[g_nkept++] = malloc(bytes);
}

/* Parses "model flags" as train does (words split at spaces); the words are kept (the
 * configuration points into them). */
static void parse_flags(train_config *c, const char *model, const char *flags) {
    char *line = kept(2048), *argv[128];
    snprintf(line, 2048, "%s %s", model, flags);
    int argc = 0;
    for (char *t = strtok(line, " "); t && argc < 128; t = strtok(NULL, " ")) argv[argc++] = t;
    train_config_defaults(c);
    train_config_parse(c, "train", argc, argv);
}

static void each_layout_is_accepted_and_unique(const char *model, int world) {
    train_config base;
    parse_flags(&base, model, "");
    plan_layouts l;
    plan_enumerate(&base, world, &l);
    assert_true(l.n > 0);
    char **k = keys_of(&l);
    for (int i = 0; i + 1 < l.n; i++)
        if (strcmp(k[i], k[i + 1]) == 0) fail_msg("layout listed twice: %s", k[i]);
    for (int i = 0; i < l.n; i++) {
        train_config c;
        parse_flags(&c, model, k[i]);
        c.predict_only = true;
        char err[512], again[1024];
        if (!train_config_check(&c, world, err, sizeof err))
            fail_msg("world %d: train refuses '%s': %s", world, k[i], err);
        plan_layout_flags(&c, again, sizeof again);
        if (strcmp(again, k[i]) != 0) fail_msg("'%s' parsed back as '%s'", k[i], again);
    }
    free_keys(k, l.n);
    plan_layouts_free(&l);
}

/* The wider space, brute force: every accepted candidate's flags must be enumerated. */
static void check_options(train_config c, int world, char **k, int n, int *accepted) {
    static const char *const rec[] = {NULL, "selective", "full"};
    for (int stage = 0; stage < 4; stage++)
        for (int r = 0; r < 3; r++)
            for (int bits = 0; bits < 8; bits++) {
                train_config t = c;
                t.use_distributed_optimizer = stage == 1;
                t.data_parallel_sharding_strategy = stage >= 2 ? zero_stage_strategy(stage) : NULL;
                t.recompute_granularity = rec[r];
                t.recompute_method = r == 2 ? "uniform" : NULL;
                t.recompute_num_layers = r == 2 ? 1 : 0;
                t.sequence_parallel = bits & 1;
                t.overlap_grad_reduce = (bits >> 1) & 1;
                t.overlap_param_gather = (bits >> 2) & 1;
                char err[512], key[1024], *p = key;
                if (!train_config_check(&t, world, err, sizeof err)) continue;
                (*accepted)++;
                plan_layout_flags(&t, key, sizeof key);
                if (!bsearch(&p, k, (size_t)n, sizeof *k, cmp_str))
                    fail_msg("world %d: train accepts '%s', the planner does not list it", world,
                             key);
            }
}

static void every_accepted_layout_is_enumerated(const char *model, int world) {
    static const char *const sched[] = {"gpipe", "1f1b", "interleaved",
                                        "zb-h1", "zbv",  "dualpipev"};
    train_config base;
    parse_flags(&base, model, "");
    base.predict_only = true;
    plan_layouts l;
    plan_enumerate(&base, world, &l);
    char **k = keys_of(&l);
    int accepted = 0;
    for (int tp = 1; tp <= world; tp++)
        for (int cp = 1; tp * cp <= world; cp++)
            for (int pp = 1; tp * cp * pp <= world; pp++)
                for (int ep = 1; ep <= world; ep++)
                    for (int s = 0; s < 6; s++)
                        for (int v = 0; v <= base.num_layers; v++) {
                            train_config c = base;
                            c.tensor_model_parallel_size = tp, c.context_parallel_size = cp;
                            c.pipeline_model_parallel_size = pp, c.expert_model_parallel_size = ep;
                            c.pipeline_schedule = sched[s];
                            c.num_layers_per_virtual_pipeline_stage = v;
                            check_options(c, world, k, l.n, &accepted);
                        }
    /* the brute force renames 1f1b with chunks to interleaved: it may find a layout twice */
    assert_true(accepted >= l.n);
    free_keys(k, l.n);
    plan_layouts_free(&l);
}

#define DENSE "--num-layers 4"
#define MOE "--num-layers 4 --num-experts 4 --moe-router-topk 2"

static void dense_world_1_2(void **state) {
    (void)state;
    for (int w = 1; w <= 2; w++) {
        each_layout_is_accepted_and_unique(DENSE, w);
        every_accepted_layout_is_enumerated(DENSE, w);
    }
}

static void dense_world_4(void **state) {
    (void)state;
    each_layout_is_accepted_and_unique(DENSE, 4);
    every_accepted_layout_is_enumerated(DENSE, 4);
}

static void dense_world_8(void **state) {
    (void)state;
    each_layout_is_accepted_and_unique(DENSE, 8);
    every_accepted_layout_is_enumerated(DENSE, 8);
}

static void moe_world_4(void **state) {
    (void)state;
    each_layout_is_accepted_and_unique(MOE, 4);
    every_accepted_layout_is_enumerated(MOE, 4);
}

/* The flags of a layout are train's, ready to paste. */
static void flags_are_trains(void **state) {
    (void)state;
    train_config c;
    parse_flags(&c, DENSE,
                "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
                "--num-layers-per-virtual-pipeline-stage 1 --use-distributed-optimizer "
                "--sequence-parallel --recompute-granularity selective");
    c.predict_only = true;
    char err[512], buf[1024];
    assert_true(train_config_check(&c, 8, err, sizeof err));
    plan_layout_flags(&c, buf, sizeof buf);
    assert_string_equal(buf, "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
                             "--pipeline-schedule interleaved "
                             "--num-layers-per-virtual-pipeline-stage 1 "
                             "--use-distributed-optimizer --recompute-granularity selective "
                             "--sequence-parallel");
}

/* The pictures' short names: sizes above 1, the schedule where there is a pipeline, then
 * ZeRO, SP, recomputation, overlap; the defaults at one rank are "one rank". */
static void short_names(void **state) {
    (void)state;
    const struct {
        const char *flags;
        int world;
        const char *name;
    } cases[] = {
        {"--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
         "--num-layers-per-virtual-pipeline-stage 1 --use-distributed-optimizer "
         "--sequence-parallel --recompute-granularity selective",
         8, "TP2 PP2 DP2 interleaved v2 · ZeRO-1 · SP · recompute selective"},
        {"--context-parallel-size 4 --use-distributed-optimizer "
         "--overlap-grad-reduce --overlap-param-gather",
         8, "CP4 DP2 · ZeRO-1 · overlap grad+param"},
        {"--pipeline-schedule gpipe", 2, "DP2 gpipe"},
        {"", 1, "one rank"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        train_config c;
        parse_flags(&c, DENSE, cases[i].flags);
        c.predict_only = true;
        char err[512], buf[256];
        if (!train_config_check(&c, cases[i].world, err, sizeof err)) fail_msg("%s", err);
        plan_layout_name(&c, buf, sizeof buf);
        assert_string_equal(buf, cases[i].name);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dense_world_1_2),  cmocka_unit_test(dense_world_4),
        cmocka_unit_test(dense_world_8),    cmocka_unit_test(moe_world_4),
        cmocka_unit_test(flags_are_trains), cmocka_unit_test(short_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
