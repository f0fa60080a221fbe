/* region_test.c — the edges of the tensor-parallel region (src/tp/region.h) at WORLD ranks
 * (binaries for 1, 2 and 4): each function is the layer of src/tp/layers.h it stands for, bit
 * for bit — plain (f and g) or sequence-parallel (g and ḡ) as the region says — and every
 * message it sends carries its trace label and the region's layer. */
#include <stdlib.h>
#include <string.h>

#include "src/device/device.h"
#include "src/runtime/comm.h"
#include "src/tp/layers.h"
#include "src/tp/mappings.h"
#include "src/tp/region.h"
#include "tests/support/testing.h"
#include "tests/tp/tp_fixture.h"

#ifndef WORLD
#define WORLD 2
#endif

/* The label every message must carry until the next expect(), and the messages seen. */
static const char *g_want;
static int g_messages, g_wrong;
static void check_label(const comm_event *e, void *ctx) {
    (void)ctx;
    g_messages++;
    if (!g_want || !e->label || strcmp(e->label, g_want) != 0 || e->layer != 6) g_wrong++;
}
static void expect(const char *label) { g_want = label, g_messages = g_wrong = 0; }
/* The messages since expect() all carried it, and there were some exactly when `sent`. */
static void expect_done(bool sent) {
    assert_int_equal(g_wrong, 0);
    assert_true(sent ? g_messages > 0 : g_messages == 0);
}

typedef struct {
    size_t p, B, Tl, T, N, Nl, C, K;     /* K: the width inside the region (OCl or Cl) */
    float *x, *xl, *w, *bias, *dy, *dyl; /* inputs: whole (N,C), shard (Nl,C), (K,C), (K), ... */
} data;

static data data_new(void) {
    data d = {.p = (size_t)tp_fixture_size(), .B = 2, .Tl = 3, .C = 8, .K = 4};
    d.T = d.Tl * d.p, d.N = d.B * d.T, d.Nl = d.B * d.Tl;
    d.x = tp_fixture_fill(NULL, d.N * d.C, 1, 1.0f);
    d.xl = tp_fixture_fill(NULL, d.Nl * d.C, 2, 1.0f);
    d.w = tp_fixture_fill(NULL, d.K * d.C, 3, 0.5f);
    d.bias = tp_fixture_fill(NULL, d.C > d.K ? d.C : d.K, 4, 0.5f);
    d.dy = tp_fixture_fill(NULL, d.N * d.C, 5, 1.0f);
    d.dyl = tp_fixture_fill(NULL, d.Nl * d.C, 6, 1.0f);
    return d;
}

static void data_free(data *d) {
    free(d->x), free(d->xl), free(d->w), free(d->bias), free(d->dy), free(d->dyl);
}

static float *zeros(size_t n) { return calloc(n, sizeof(float)); }
#define SAME(a, b, n) assert_memory_equal(a, b, (n) * sizeof(float))

static void plain_edges_are_f_and_g(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    data d = data_new();
    const tp_region r = {tp, false, d.B, d.T, d.T, 0, d.C, 6};
    const bool sent = d.p > 1;
    comm_set_trace_hook(check_label, NULL);
    /* enter: QKV's column-parallel linear after f (no message forward) */
    float *y = zeros(d.N * d.K), *y_ref = zeros(d.N * d.K);
    expect(NULL);
    tp_region_enter_forward(&r, TP_ATTN, y, d.x, d.w, d.bias, d.K);
    expect_done(false);
    tp_column_linear_forward(tp, y_ref, d.x, d.w, d.bias, d.N, d.C, d.K, false);
    SAME(y, y_ref, d.N * d.K);
    float *dx = zeros(d.N * d.C), *dx_ref = zeros(d.N * d.C);
    expect("f bwd attn");
    tp_region_enter_input(&r, TP_ATTN, dx, NULL, d.dy, d.x, d.w, d.K);
    expect_done(sent);
    tp_column_linear_backward(tp, dx_ref, NULL, NULL, d.dy, d.x, d.w, d.N, d.C, d.K, false);
    SAME(dx, dx_ref, d.N * d.C);
    /* exit: proj's row-parallel linear before g */
    float *o = zeros(d.N * d.C), *o_ref = zeros(d.N * d.C);
    expect("g fwd attn");
    tp_region_exit_forward(&r, TP_ATTN, o, y, d.w, d.bias, d.K);
    expect_done(sent);
    tp_row_linear_forward(tp, o_ref, y, d.w, d.bias, d.N, d.K, d.C);
    SAME(o, o_ref, d.N * d.C);
    float *dk = zeros(d.N * d.K), *dk_ref = zeros(d.N * d.K), *kept = zeros(d.N * d.C);
    expect(NULL);
    tp_region_exit_input(&r, TP_ATTN, dk, kept, d.dy, y, d.w, d.K);
    expect_done(false);
    tp_row_linear_backward(tp, dk_ref, NULL, NULL, d.dy, y, d.w, d.N, d.K, d.C);
    SAME(dk, dk_ref, d.N * d.K);
    SAME(kept, d.dy, d.N * d.C); /* g's backward: dY is the residual gradient itself */
    comm_set_trace_hook(NULL, NULL);
    free(y), free(y_ref), free(dx), free(dx_ref), free(o), free(o_ref), free(dk), free(dk_ref);
    free(kept);
    data_free(&d);
}

static void sequence_parallel_edges_are_g_and_gbar(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    data d = data_new();
    const tp_region r = {tp, true, d.B, d.T, d.Tl, (size_t)tp_fixture_rank() * d.Tl, d.C, 6};
    const bool sent = d.p > 1;
    comm_set_trace_hook(check_label, NULL);
    float *y = zeros(d.N * d.K), *y_ref = zeros(d.N * d.K);
    expect("sp g fwd mlp");
    tp_region_enter_forward(&r, TP_MLP, y, d.xl, d.w, d.bias, d.K);
    expect_done(sent);
    tp_column_linear_sp_forward(tp, y_ref, d.xl, d.w, d.bias, d.B, d.Tl, d.C, d.K);
    SAME(y, y_ref, d.N * d.K);
    float *dx = zeros(d.Nl * d.C), *dx_ref = zeros(d.Nl * d.C);
    float *full = zeros(d.N * d.C), *full_ref = zeros(d.N * d.C);
    expect("sp g bwd mlp");
    tp_region_enter_input(&r, TP_MLP, dx, full, y, d.xl, d.w, d.K);
    expect_done(sent);
    tp_column_linear_sp_backward(tp, dx_ref, full_ref, NULL, NULL, y, d.xl, d.w, d.B, d.Tl, d.C,
                                 d.K);
    SAME(dx, dx_ref, d.Nl * d.C);
    SAME(full, full_ref, d.N * d.C);
    float *o = zeros(d.Nl * d.C), *o_ref = zeros(d.Nl * d.C);
    expect("sp gbar fwd mlp");
    tp_region_exit_forward(&r, TP_MLP, o, y, d.w, d.bias, d.K);
    expect_done(sent);
    tp_row_linear_sp_forward(tp, o_ref, y, d.w, d.bias, d.B, d.Tl, d.K, d.C);
    SAME(o, o_ref, d.Nl * d.C);
    float *dk = zeros(d.N * d.K), *dk_ref = zeros(d.N * d.K);
    float *dyf = zeros(d.N * d.C), *dyf_ref = zeros(d.N * d.C);
    expect("sp gbar bwd mlp");
    tp_region_exit_input(&r, TP_MLP, dk, dyf, d.dyl, y, d.w, d.K);
    expect_done(sent);
    tp_row_linear_sp_backward(tp, dk_ref, dyf_ref, NULL, NULL, d.dyl, y, d.w, d.B, d.Tl, d.K, d.C);
    SAME(dk, dk_ref, d.N * d.K);
    SAME(dyf, dyf_ref, d.N * d.C);
    /* W reads what B gathered: the whole input and the whole dY */
    float *dw = zeros(d.K * d.C), *dw_ref = zeros(d.K * d.C);
    tp_region_enter_weight(&r, dw, NULL, y, full, d.xl, d.K);
    dev_matmul_backward(NULL, dw_ref, NULL, y, full, NULL, d.N, d.C, d.K);
    SAME(dw, dw_ref, d.K * d.C);
    memset(dw, 0, d.K * d.C * sizeof(float)), memset(dw_ref, 0, d.K * d.C * sizeof(float));
    tp_region_exit_weight(&r, dw, NULL, dyf, y, d.K);
    dev_matmul_backward(NULL, dw_ref, NULL, dyf, y, NULL, d.N, d.K, d.C);
    SAME(dw, dw_ref, d.K * d.C);
    comm_set_trace_hook(NULL, NULL);
    free(y), free(y_ref), free(dx), free(dx_ref), free(full), free(full_ref), free(o), free(o_ref);
    free(dk), free(dk_ref), free(dyf), free(dyf_ref), free(dw), free(dw_ref);
    data_free(&d);
}

/* The embedding leaves the region: g (all-reduce) or ḡ (reduce-scatter) forward, the identity
 * or the all-gather backward. */
static void the_embedding_leaves_the_region(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    data d = data_new();
    const size_t p = d.p, Vl = 5, V = Vl * p;
    const int64_t v_start = (int64_t)(Vl * (size_t)tp_fixture_rank());
    float *wte = tp_fixture_fill(NULL, Vl * d.C, 7, 1.0f); /* this rank's rows */
    int32_t *tokens = malloc(d.N * sizeof(int32_t));
    for (size_t i = 0; i < d.N; i++) tokens[i] = (int32_t)((i * 7) % V);
    for (int sp = 0; sp < 2; sp++) {
        const size_t Tl = sp ? d.Tl : d.T, rows = d.B * Tl;
        const float *dres = sp ? d.dyl : d.dy; /* (rows, C) */
        const tp_region r = {tp, sp, d.B, d.T, Tl, sp ? (size_t)tp_fixture_rank() * Tl : 0, d.C, 6};
        float *x = zeros(rows * d.C), *x_ref = zeros(rows * d.C);
        float *demb = zeros(d.N * d.C), *demb_ref = zeros(d.N * d.C);
        comm_set_trace_hook(check_label, NULL);
        expect(sp ? "sp gbar fwd embed" : "g fwd embed");
        tp_region_embedding_forward(&r, x, tokens, wte, v_start, Vl);
        expect_done(p > 1);
        expect(sp ? "sp gbar bwd embed" : NULL);
        tp_region_embedding_input(&r, demb, dres);
        expect_done(sp && p > 1);
        comm_set_trace_hook(NULL, NULL);
        if (sp) {
            tp_vocab_embedding_sp_forward(tp, x_ref, tokens, wte, d.B, Tl, d.C, v_start, Vl);
            tp_reduce_scatter_to_sequence_region_backward(tp, demb_ref, dres, d.B, Tl, d.C);
            SAME(demb, demb_ref, d.N * d.C);
        } else {
            tp_vocab_embedding_forward(tp, x_ref, tokens, wte, d.N, d.C, v_start, Vl);
            SAME(demb, dres, d.N * d.C); /* g's backward: the identity */
        }
        SAME(x, x_ref, rows * d.C);
        free(x), free(x_ref), free(demb), free(demb_ref);
    }
    free(tokens), free(wte);
    data_free(&d);
}

int main(int argc, char **argv) {
    mpi_test_launch(argc, argv, WORLD);
    tp_fixture_init(&argc, &argv, WORLD);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_edges_are_f_and_g),
        cmocka_unit_test(sequence_parallel_edges_are_g_and_gbar),
        cmocka_unit_test(the_embedding_leaves_the_region),
    };
    return tp_fixture_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
