/* calibration_test.c — the calibration file and the numbers read from it:
 *   - written and read back, every field equal;
 *   - refused with one phrase naming what is wrong: not a calibration, another version, a
 *     corrupt line, a missing line, another model;
 *   - the GEMM rate of a shape: exact when measured, else the nearest number of FLOPs;
 *   - the ring's steps and bytes of each link kind, and α, β fitted back from two times;
 *   - the link of a group size: the one measured at the largest size up to it;
 *   - the expert load of ep ranks from a step's token counts;
 *   - the shapes timed for a world size: each layer product at every tp and cp that divides it.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/plan/calibration.h"
#include "src/plan/links.h"
#include "src/train/config.h"
#include "tests/support/testing.h"

static train_config model(void) {
    train_config c;
    train_config_defaults(&c);
    return c;
}

static plan_calibration sample(void) {
    train_config c = model();
    plan_calibration cal;
    memset(&cal, 0, sizeof cal);
    cal.version = PLAN_CALIBRATION_VERSION;
    snprintf(cal.machine, sizeof cal.machine, "Test CPU 3000");
    plan_calibration_model_of(&c, cal.model);
    cal.threads = 1;
    cal.ngemm = 2;
    cal.gemm[0] = (plan_gemm){256, 64, 192, 2e9};
    cal.gemm[1] = (plan_gemm){256, 64, 4096, 8e9};
    cal.elementwise_per_s = 1e8, cal.optimizer_per_s = 5e8;
    cal.block_forward = 6e-4, cal.block_backward = 9e-4;
    cal.head_forward = 3e-4, cal.head_backward = 4e-4;
    cal.nattention = 2;
    cal.attention[0] = (plan_attention){4, 64, 2e-4, 5e-4, 4e-4, 9e-4};
    cal.attention[1] = (plan_attention){2, 64, 1.1e-4, 2.6e-4, 2.1e-4, 4.6e-4};
    for (int k = 0; k < PLAN_NLINKS; k++)
        cal.link[k] = (plan_link){2e-6 * (k + 1), 3e-10, 1e-5, "measured"};
    cal.nring = 1;
    cal.ring[0] = (plan_ring){4, 64, 2, 3e-4, 5e-4};
    cal.nlink_groups = 1;
    cal.link_group[0].g = 4;
    for (int k = 0; k < PLAN_NLINKS; k++) /* p2p: the pair's, as the reader fills it */
        cal.link_group[0].link[k] = k == PLAN_P2P ? cal.link[k]
                                                  : (plan_link){7e-6 * k, 9e-10, 3e-5, "measured"};
    cal.nmoe_load = 2;
    cal.moe_load[0] = (plan_moe_load){2, 1.25};
    cal.moe_load[1] = (plan_moe_load){4, 1.5};
    return cal;
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

/* A file in a fresh directory of the test's own (the path kept until the end). */
static const char *file_in(const char *name) {
    char *path = kept(4200);
    snprintf(path, 4200, "%s/calibration", test_tmpdir(name));
    return path;
}

static const char *write_text(const char *name, const char *text) {
    const char *path = file_in(name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void written_and_read_back(void **state) {
    (void)state;
    plan_calibration a = sample(), b;
    const char *path = file_in("cal-roundtrip");
    plan_calibration_write(&a, path);
    train_config c = model();
    char err[512];
    assert_true(plan_calibration_read(path, &c, &b, err, sizeof err));
    assert_string_equal(b.machine, a.machine);
    assert_memory_equal(b.model, a.model, sizeof a.model);
    assert_int_equal(b.ngemm, 2);
    assert_true(b.gemm[1].OC == 4096 && b.gemm[1].flops_per_s == 8e9);
    assert_true(fabs(b.block_backward - 9e-4) < 1e-12 && fabs(b.head_forward - 3e-4) < 1e-12);
    const plan_attention *at = plan_calibration_attention(&b, 2, 64);
    assert_int_equal(b.nattention, 2);
    assert_true(at && fabs(at->fwd - 1.1e-4) < 1e-15 && fabs(at->bwd - 2.6e-4) < 1e-15);
    assert_true(fabs(at->ring_fwd - 2.1e-4) < 1e-15 && fabs(at->ring_bwd - 4.6e-4) < 1e-15);
    assert_null(plan_calibration_attention(&b, 1, 64));
    assert_true(fabs(b.link[PLAN_ALL_TO_ALL].alpha - 1e-5) < 1e-15);
    assert_string_equal(b.link[PLAN_P2P].source, "measured");
    assert_true(fabs(b.link[PLAN_P2P].sync - 1e-5) < 1e-15);
    const plan_ring *ring = plan_calibration_ring(&b, 4, 64, 2);
    assert_true(ring && fabs(ring->fwd - 3e-4) < 1e-15 && fabs(ring->bwd - 5e-4) < 1e-15);
    assert_null(plan_calibration_ring(&b, 4, 64, 4));
    assert_int_equal(b.nlink_groups, 1);
    assert_memory_equal(&b.link_group[0], &a.link_group[0], sizeof a.link_group[0]);
    assert_int_equal(b.nmoe_load, 2);
    assert_true(plan_calibration_moe_load(&b, 4) == 1.5 &&
                plan_calibration_moe_load(&b, 2) == 1.25);
    assert_true(plan_calibration_moe_load(&b, 1) == 1 && plan_calibration_moe_load(&b, 8) == 1);
}

/* Two layers of four experts: the first balanced (factor 1 at every ep), the second sends 3, 1,
 * 0, 0 tokens — ep 2: ranks get 4 and 0 of a mean 2 (2); ep 4: 3 of a mean 1 (3). The factor
 * is the mean over layers: 1.5 at ep 2, 2 at ep 4; ep 1 is always 1. */
static void expert_load_of_counts(void **state) {
    (void)state;
    const uint32_t tokens[8] = {5, 5, 5, 5, 3, 1, 0, 0};
    assert_true(fabs(plan_moe_load_factor(tokens, 2, 4, 1) - 1) < 1e-15);
    assert_true(fabs(plan_moe_load_factor(tokens, 2, 4, 2) - 1.5) < 1e-15);
    assert_true(fabs(plan_moe_load_factor(tokens, 2, 4, 4) - 2) < 1e-15);
    const uint32_t none[4] = {0, 0, 0, 0}; /* a layer that routed nothing counts as balanced */
    assert_true(plan_moe_load_factor(none, 1, 4, 2) == 1);
}

static void expect_refused(const char *name, const char *text, const char *phrase) {
    const char *path = write_text(name, text);
    train_config c = model();
    plan_calibration cal;
    char err[1024];
    if (plan_calibration_read(path, &c, &cal, err, sizeof err))
        fail_msg("%s: read, should be refused", name);
    if (!strstr(err, phrase)) fail_msg("%s: '%s' does not say '%s'", name, err, phrase);
}

static void bad_files_are_named(void **state) {
    (void)state;
    expect_refused("cal-not", "hello\n", "is not a plan calibration");
    expect_refused("cal-version", "trident-plan-calibration 99\n", "version 99");
    expect_refused("cal-corrupt", "trident-plan-calibration 2\ngemm 1 2 x 4\nend\n",
                   "is corrupt at line 2");
    expect_refused("cal-short", "trident-plan-calibration 2\nmachine x\n", "is corrupt");
    expect_refused("cal-old", "trident-plan-calibration 1\nmachine x\n", "version 1");
    expect_refused("cal-load-ep", "trident-plan-calibration 2\nmoe-load 1 1.2\nend\n",
                   "is corrupt at line 2");
    expect_refused("cal-load-below", "trident-plan-calibration 2\nmoe-load 2 0.5\nend\n",
                   "is corrupt at line 2");
    /* another model: a good file of the sample, then read for 8 layers */
    plan_calibration a = sample();
    const char *path = file_in("cal-other-model");
    plan_calibration_write(&a, path);
    train_config c = model();
    c.num_layers = 8;
    plan_calibration b;
    char err[1024];
    assert_false(plan_calibration_read(path, &c, &b, err, sizeof err));
    assert_non_null(strstr(err, "another model (layers 4"));
    assert_non_null(strstr(err, "this one (layers 8"));
}

static void gemm_rate_exact_else_nearest(void **state) {
    (void)state;
    plan_calibration cal = sample();
    assert_true(plan_calibration_gemm_rate(&cal, 256, 64, 192) == 2e9);
    assert_true(plan_calibration_gemm_rate(&cal, 256, 64, 256) == 2e9);   /* nearer 192 */
    assert_true(plan_calibration_gemm_rate(&cal, 256, 128, 4096) == 8e9); /* nearer 4096 */
}

static void links_shape_and_fit(void **state) {
    (void)state;
    double s, w;
    plan_link_shape(PLAN_ALL_REDUCE, 4, 1000, &s, &w);
    assert_true(s == 6 && w == 1500);
    plan_link_shape(PLAN_ALL_TO_ALL, 4, 1000, &s, &w);
    assert_true(s == 3 && w == 750);
    plan_link_shape(PLAN_P2P, 2, 1000, &s, &w);
    assert_true(s == 1 && w == 1000);
    /* times made from α = 5 µs, β = 0.5 ns/byte at the worker's two sizes come back */
    for (int k = 0; k < PLAN_NLINKS; k++) {
        double s0, w0, s1, w1;
        plan_link_shape(k, 2, PLAN_LINK_SMALL, &s0, &w0);
        plan_link_shape(k, 2, PLAN_LINK_LARGE, &s1, &w1);
        plan_link l;
        const double t0 = 5e-6 * s0 + 5e-10 * w0;
        plan_links_fit(k, 2, t0, 5e-6 * s1 + 5e-10 * w1, t0 + 7e-5, &l);
        assert_true(fabs(l.sync - 7e-5) < 1e-12);
        assert_true(fabs(l.alpha - 5e-6) < 1e-12 && fabs(l.beta - 5e-10) < 1e-18);
        assert_string_equal(l.source, "measured");
        /* on 4 ranks the ring's steps and wire bytes of 4 */
        plan_link_shape(k, 4, PLAN_LINK_SMALL, &s0, &w0);
        plan_link_shape(k, 4, PLAN_LINK_LARGE, &s1, &w1);
        plan_links_fit(k, 4, 5e-6 * s0 + 5e-10 * w0, 5e-6 * s1 + 5e-10 * w1, 0, &l);
        assert_true(fabs(l.alpha - 5e-6) < 1e-12 && fabs(l.beta - 5e-10) < 1e-18 && l.sync == 0);
    }
}

/* Two measurements of the links: each kind and size keeps the fit whose large message is
 * faster, and the smaller sync of the two. */
static void the_faster_of_two_link_measurements(void **state) {
    (void)state;
    plan_calibration a = sample(), b = sample();
    b.link[PLAN_ALL_REDUCE].beta = 1e-10, b.link[PLAN_ALL_REDUCE].sync = 5e-5; /* faster, later */
    b.link_group[0].link[PLAN_ALL_GATHER].beta = 5e-9;                         /* slower */
    b.link_group[0].link[PLAN_ALL_GATHER].sync = 1e-6;
    plan_links_keep_faster(&a, &b);
    assert_true(a.link[PLAN_ALL_REDUCE].beta == 1e-10 && a.link[PLAN_ALL_REDUCE].sync == 1e-5);
    assert_true(a.link_group[0].link[PLAN_ALL_GATHER].beta == 9e-10);
    assert_true(a.link_group[0].link[PLAN_ALL_GATHER].sync == 1e-6);
    assert_true(a.link[PLAN_P2P].beta == 3e-10); /* the same in both */
}

/* A group of g ranks takes the link measured at the largest size up to g: 2 for 2 and 3, 4
 * for 4 to 7, 8 from 8 on; p2p always the pair's. Reading: a link-at of p2p, of 2 ranks or of
 * more than 8 is not a line of the file. */
static void links_by_group_size(void **state) {
    (void)state;
    plan_calibration cal = sample();
    cal.nlink_groups = 2;
    cal.link_group[1] = cal.link_group[0];
    cal.link_group[1].g = 8;
    cal.link_group[1].link[PLAN_ALL_REDUCE].alpha = 4e-5;
    const plan_link_kind ar = PLAN_ALL_REDUCE;
    assert_true(plan_calibration_link(&cal, ar, 2).alpha == cal.link[ar].alpha);
    assert_true(plan_calibration_link(&cal, ar, 3).alpha == cal.link[ar].alpha);
    assert_true(plan_calibration_link(&cal, ar, 4).alpha == 7e-6);
    assert_true(plan_calibration_link(&cal, ar, 7).alpha == 7e-6);
    assert_true(plan_calibration_link(&cal, ar, 64).alpha == 4e-5);
    assert_true(plan_calibration_link(&cal, PLAN_P2P, 8).alpha == cal.link[PLAN_P2P].alpha);
    expect_refused("cal-link-p2p", "trident-plan-calibration 2\nlink-at 4 p2p 1 1 0 m\nend\n",
                   "is corrupt at line 2");
    expect_refused("cal-link-2", "trident-plan-calibration 2\nlink-at 2 all-reduce 1 1 0 m\n",
                   "is corrupt at line 2");
    expect_refused("cal-link-16", "trident-plan-calibration 2\nlink-at 16 all-reduce 1 1 0 m\n",
                   "is corrupt at line 2");
}

static bool has(const plan_gemm *g, int n, size_t N, size_t C, size_t OC) {
    for (int i = 0; i < n; i++)
        if (g[i].N == N && g[i].C == C && g[i].OC == OC) return true;
    return false;
}

static void shapes_cover_every_tp_and_cp(void **state) {
    (void)state;
    train_config c = model(); /* B 4, T 64, C 64, NH 4, vocabulary divisible by 128 */
    plan_gemm g[PLAN_MAX_GEMMS];
    const int n = plan_calibration_shapes(&c, 4, g, PLAN_MAX_GEMMS);
    assert_true(has(g, n, 256, 64, 192));     /* qkv, tp 1 */
    assert_true(has(g, n, 256, 64, 48));      /* qkv, tp 4 */
    assert_true(has(g, n, 128, 32, 64));      /* proj, tp 2, cp 2 */
    assert_true(has(g, n, 64, 256, 64));      /* fcproj, tp 1, cp 4 */
    assert_true(has(g, n, 256, 64, 128));     /* head: 256 tokens padded to 256, ÷ tp 2 */
    assert_true(has(g, n, 64, 16, 64));       /* one head's Q·Kᵀ */
    assert_false(has(g, n, 256, 64, 85));     /* fc at tp 3: 3 does not divide 4 */
    assert_false(has(g, n, 512, 256, 64));    /* no experts: no expert's fcproj */
    c.num_experts = 4, c.moe_router_topk = 2; /* 256 tokens × top-2 over 4 experts */
    const int m = plan_calibration_shapes(&c, 4, g, PLAN_MAX_GEMMS);
    assert_true(has(g, m, 256, 64, 4));   /* the router */
    assert_true(has(g, m, 128, 64, 256)); /* an expert's fc, ep 1: 128 rows */
    assert_true(has(g, m, 512, 64, 256)); /* ep 4: 4 ranks' tokens reach its one expert */
    assert_true(has(g, m, 512, 256, 64)); /* ep 4: 4 ranks' tokens reach its one expert */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(written_and_read_back),
        cmocka_unit_test(bad_files_are_named),
        cmocka_unit_test(gemm_rate_exact_else_nearest),
        cmocka_unit_test(links_shape_and_fit),
        cmocka_unit_test(shapes_cover_every_tp_and_cp),
        cmocka_unit_test(expert_load_of_counts),
        cmocka_unit_test(links_by_group_size),
        cmocka_unit_test(the_faster_of_two_link_measurements),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
