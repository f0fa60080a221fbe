/* layers_test.c — each tensor-parallel layer of src/tp/layers.h against its serial
 * counterpart, outputs and all gradients, at WORLD ranks (binaries for 1, 2 and 4).
 *
 * Every rank computes the serial layer on the whole tensors (plain kernels, no group) and
 * the parallel layer on its slice, then compares its slice of every result. Each test also
 * pins the layer's traffic: which collectives, how many, how many bytes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "src/runtime/comm.h"
#include "src/tp/layers.h"
#include "tests/support/testing.h"
#include "tests/tp/tp_fixture.h"

#ifndef WORLD
#define WORLD 2
#endif

static void expect_traffic(size_t reduces, size_t reduce_bytes, size_t gathers, size_t gather_bytes,
                           const char *what) {
    tp_traffic t = tp_traffic_get();
    if (t.all_reduce_calls != reduces || t.all_reduce_bytes != reduce_bytes ||
        t.all_gather_calls != gathers || t.all_gather_bytes != gather_bytes || t.other_calls ||
        t.reduce_scatter_calls)
        fail_msg("%s: %zu all-reduces (%zu B), %zu all-gathers (%zu B), %zu other; expected %zu "
                 "(%zu B), "
                 "%zu (%zu B), 0",
                 what, t.all_reduce_calls, t.all_reduce_bytes, t.all_gather_calls,
                 t.all_gather_bytes, t.other_calls, reduces, reduce_bytes, gathers, gather_bytes);
}

#define ATOL 1e-5
#define RTOL 1e-4

/* The serial linear Y = X A^T + b and its gradients for dY. A (OC, C). */
typedef struct {
    size_t N, C, OC;
    float *X, *A, *b, *Y, *dY, *dX, *dA, *db;
} serial_linear;

static serial_linear serial_linear_make(size_t N, size_t C, size_t OC) {
    serial_linear s = {.N = N, .C = C, .OC = OC};
    s.X = tp_fixture_fill(NULL, N * C, 1, 1.0f);
    s.A = tp_fixture_fill(NULL, OC * C, 2, 0.5f);
    s.b = tp_fixture_fill(NULL, OC, 3, 0.5f);
    s.dY = tp_fixture_fill(NULL, N * OC, 4, 1.0f);
    s.Y = calloc(N * OC, sizeof(float));
    s.dX = calloc(N * C, sizeof(float));
    s.dA = calloc(OC * C, sizeof(float));
    s.db = calloc(OC, sizeof(float));
    matmul_forward(s.Y, s.X, s.A, s.b, N, C, OC);
    matmul_backward(s.dX, s.dA, s.db, s.dY, s.X, s.A, N, C, OC);
    return s;
}

static void serial_linear_free(serial_linear *s) {
    free(s->X);
    free(s->A);
    free(s->b);
    free(s->Y);
    free(s->dY);
    free(s->dX);
    free(s->dA);
    free(s->db);
}

static void column_parallel_case(bool gather_output) {
    comm_group *tp = tp_fixture_group();
    const size_t p = (size_t)tp_fixture_size(), r = (size_t)tp_fixture_rank();
    const size_t N = 6, C = 8, OC = 16, OCl = OC / p;
    serial_linear s = serial_linear_make(N, C, OC);
    /* Rank r: A_r = rows [r*OCl, (r+1)*OCl) of A (contiguous), b_r likewise. */
    const float *Ar = s.A + r * OCl * C, *br = s.b + r * OCl;
    const size_t out_w = gather_output ? OC : OCl;
    float *out = calloc(N * out_w, sizeof(float)), *want = malloc(N * OCl * sizeof(float));
    tp_traffic_reset();
    tp_column_linear_forward(tp, out, s.X, Ar, br, N, C, OCl, gather_output);
    if (gather_output) {
        expect_close(out, s.Y, N * OC, ATOL, RTOL, "column-parallel Y (gathered)");
        expect_traffic(0, 0, p > 1, p > 1 ? N * OC * sizeof(float) : 0,
                       "column-parallel forward, gathered");
    } else {
        tp_fixture_columns(want, s.Y, N, OC, r * OCl, OCl);
        expect_close(out, want, N * OCl, ATOL, RTOL, "column-parallel Y_r");
        expect_traffic(0, 0, 0, 0, "column-parallel forward");
    }

    /* Backward. dinp starts at 1 to show that it accumulates. */
    float *dout = malloc(N * out_w * sizeof(float));
    if (gather_output) memcpy(dout, s.dY, N * OC * sizeof(float));
    else tp_fixture_columns(dout, s.dY, N, OC, r * OCl, OCl);
    float *dinp = malloc(N * C * sizeof(float)), *dw = calloc(OCl * C, sizeof(float)),
          *db = calloc(OCl, sizeof(float));
    for (size_t i = 0; i < N * C; i++) dinp[i] = 1.0f;
    tp_traffic_reset();
    tp_column_linear_backward(tp, dinp, dw, db, dout, s.X, Ar, N, C, OCl, gather_output);
    float *dX1 = malloc(N * C * sizeof(float));
    for (size_t i = 0; i < N * C; i++) dX1[i] = s.dX[i] + 1.0f;
    expect_close(dinp, dX1, N * C, ATOL, RTOL, "column-parallel dX (whole, accumulated)");
    expect_close(dw, s.dA + r * OCl * C, OCl * C, ATOL, RTOL, "column-parallel dA_r");
    expect_close(db, s.db + r * OCl, OCl, ATOL, RTOL, "column-parallel db_r");
    expect_traffic(p > 1, p > 1 ? N * C * sizeof(float) : 0, 0, 0, "column-parallel backward");
    free(out);
    free(want);
    free(dout);
    free(dinp);
    free(dw);
    free(db);
    free(dX1);
    serial_linear_free(&s);
}

static void column_parallel_linear_matches_serial(void **state) {
    (void)state;
    column_parallel_case(false);
}

static void column_parallel_linear_with_gathered_output_matches_serial(void **state) {
    (void)state;
    column_parallel_case(true);
}

static void row_parallel_linear_matches_serial_and_adds_the_bias_once(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const size_t p = (size_t)tp_fixture_size(), r = (size_t)tp_fixture_rank();
    const size_t N = 6, C = 16, OC = 8, Cl = C / p;
    serial_linear s = serial_linear_make(N, C, OC);
    /* Rank r: X_r = columns [r*Cl, (r+1)*Cl) of X, A_r = the same columns of A; b whole. */
    float *Xr = malloc(N * Cl * sizeof(float)), *Ar = malloc(OC * Cl * sizeof(float));
    tp_fixture_columns(Xr, s.X, N, C, r * Cl, Cl);
    tp_fixture_columns(Ar, s.A, OC, C, r * Cl, Cl);
    float *out = calloc(N * OC, sizeof(float));
    tp_traffic_reset();
    tp_row_linear_forward(tp, out, Xr, Ar, s.b, N, Cl, OC);
    expect_close(out, s.Y, N * OC, ATOL, RTOL, "row-parallel Y (bias once)");
    expect_traffic(p > 1, p > 1 ? N * OC * sizeof(float) : 0, 0, 0, "row-parallel forward");

    float *dinp = calloc(N * Cl, sizeof(float)), *dw = calloc(OC * Cl, sizeof(float)),
          *db = calloc(OC, sizeof(float));
    float *want = malloc((N > OC ? N : OC) * C * sizeof(float)); /* holds dX_r, then dA_r */
    tp_traffic_reset();
    tp_row_linear_backward(tp, dinp, dw, db, s.dY, Xr, Ar, N, Cl, OC);
    tp_fixture_columns(want, s.dX, N, C, r * Cl, Cl);
    expect_close(dinp, want, N * Cl, ATOL, RTOL, "row-parallel dX_r");
    tp_fixture_columns(want, s.dA, OC, C, r * Cl, Cl);
    expect_close(dw, want, OC * Cl, ATOL, RTOL, "row-parallel dA_r");
    expect_close(db, s.db, OC, ATOL, RTOL, "row-parallel db (whole on every rank)");
    expect_traffic(0, 0, 0, 0, "row-parallel backward");
    free(Xr);
    free(Ar);
    free(out);
    free(dinp);
    free(dw);
    free(db);
    free(want);
    serial_linear_free(&s);
}

/* Column-parallel then row-parallel without gathering in between, as in the MLP: the whole
 * Y = (X A^T + a) B^T + b with one all-reduce forward and one backward. */
static void column_then_row_parallel_is_the_serial_two_layer_product(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const size_t p = (size_t)tp_fixture_size(), r = (size_t)tp_fixture_rank();
    const size_t N = 4, C = 8, H = 16, Hl = H / p;
    float *X = tp_fixture_fill(NULL, N * C, 10, 1.0f), *A = tp_fixture_fill(NULL, H * C, 11, 0.5f);
    float *a = tp_fixture_fill(NULL, H, 12, 0.5f), *Bw = tp_fixture_fill(NULL, C * H, 13, 0.5f);
    float *b = tp_fixture_fill(NULL, C, 14, 0.5f), *dY = tp_fixture_fill(NULL, N * C, 15, 1.0f);
    float *Hs = calloc(N * H, sizeof(float)), *Ys = calloc(N * C, sizeof(float));
    float *dHs = calloc(N * H, sizeof(float)), *dXs = calloc(N * C, sizeof(float));
    matmul_forward(Hs, X, A, a, N, C, H);
    matmul_forward(Ys, Hs, Bw, b, N, H, C);
    matmul_backward(dHs, NULL, NULL, dY, Hs, Bw, N, H, C);
    matmul_backward(dXs, NULL, NULL, dHs, X, A, N, C, H);

    float *Br = malloc(C * Hl * sizeof(float)), *Hr = calloc(N * Hl, sizeof(float)),
          *Y = calloc(N * C, sizeof(float));
    tp_fixture_columns(Br, Bw, C, H, r * Hl, Hl);
    tp_traffic_reset();
    tp_column_linear_forward(tp, Hr, X, A + r * Hl * C, a + r * Hl, N, C, Hl, false);
    tp_row_linear_forward(tp, Y, Hr, Br, b, N, Hl, C);
    expect_close(Y, Ys, N * C, ATOL, RTOL, "two-layer output");
    float *dHr = calloc(N * Hl, sizeof(float)), *dX = calloc(N * C, sizeof(float));
    tp_row_linear_backward(tp, dHr, NULL, NULL, dY, Hr, Br, N, Hl, C);
    tp_column_linear_backward(tp, dX, NULL, NULL, dHr, X, A + r * Hl * C, N, C, Hl, false);
    expect_close(dX, dXs, N * C, ATOL, RTOL, "two-layer dX");
    expect_traffic(2 * (p > 1), p > 1 ? 2 * N * C * sizeof(float) : 0, 0, 0,
                   "two-layer forward+backward");
    free(X);
    free(A);
    free(a);
    free(Bw);
    free(b);
    free(dY);
    free(Hs);
    free(Ys);
    free(dHs);
    free(dXs);
    free(Br);
    free(Hr);
    free(Y);
    free(dHr);
    free(dX);
}

static void vocab_parallel_embedding_matches_serial(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const size_t p = (size_t)tp_fixture_size(), r = (size_t)tp_fixture_rank();
    const size_t N = 12, C = 6, V = 32, Vl = V / p;
    const int64_t real = 27, v_start = (int64_t)(r * Vl);
    int32_t tokens[12];
    for (size_t n = 0; n < N; n++) tokens[n] = (int32_t)((n * 11 + 3) % (size_t)real);
    tokens[0] = (int32_t)real - 1;
    tokens[1] = 0;
    float *wte = tp_fixture_fill(NULL, V * C, 20, 1.0f),
          *dout = tp_fixture_fill(NULL, N * C, 21, 1.0f);
    float *ys = calloc(N * C, sizeof(float)), *dwte_s = calloc(V * C, sizeof(float));
    embedding_forward(ys, tokens, wte, N, C, 0, V);
    embedding_backward(dwte_s, dout, tokens, N, C, 0, V);

    float *y = calloc(N * C, sizeof(float)), *dwte = calloc(Vl * C, sizeof(float));
    tp_traffic_reset();
    tp_vocab_embedding_forward(tp, y, tokens, wte + (size_t)v_start * C, N, C, v_start, Vl);
    expect_close(y, ys, N * C, 0, 0, "vocab-parallel embedding (exactly one rank adds each row)");
    expect_traffic(p > 1, p > 1 ? N * C * sizeof(float) : 0, 0, 0, "embedding forward");
    tp_traffic_reset();
    tp_vocab_embedding_backward(tp, dwte, dout, tokens, N, C, v_start, Vl);
    expect_close(dwte, dwte_s + (size_t)v_start * C, Vl * C, 0, 0, "vocab-parallel dwte slice");
    expect_traffic(0, 0, 0, 0, "embedding backward");
    free(wte);
    free(dout);
    free(ys);
    free(dwte_s);
    free(y);
    free(dwte);
}

static void vocab_parallel_cross_entropy_matches_serial_without_gathering_logits(void **state) {
    (void)state;
    comm_group *tp = tp_fixture_group();
    const size_t p = (size_t)tp_fixture_size(), r = (size_t)tp_fixture_rank();
    /* V = 32 padded from 27: with 4 ranks the last one holds 3 real entries and 5 padding. */
    const size_t N = 10, V = 32, Vl = V / p;
    const int64_t real = 27, v_start = (int64_t)(r * Vl);
    int32_t targets[10];
    for (size_t n = 0; n < N; n++) targets[n] = (int32_t)((n * 7 + 2) % (size_t)real);
    targets[0] = (int32_t)real - 1; /* held by the last rank */
    float *logits = tp_fixture_fill(NULL, N * V, 30, 2.0f);
    for (size_t n = 0; n < N; n++)
        for (size_t v = (size_t)real; v < V; v++) logits[n * V + v] = 100.0f; /* junk padding */
    float *dloss = tp_fixture_fill(NULL, N, 31, 1.0f);

    /* Serial: the same layer with no group over the whole vocabulary. */
    float loss_s[10], stats_s[30], *dl_s = malloc(N * V * sizeof(float));
    tp_vocab_cross_entropy_forward(NULL, loss_s, stats_s, logits, targets, N, V, 0, real);
    tp_vocab_cross_entropy_backward(NULL, dl_s, stats_s, logits, targets, dloss, N, V, 0, real);
    /* ... which is log-softmax over the real entries, in double. */
    for (size_t n = 0; n < N; n++) {
        double mx = -INFINITY, se = 0;
        for (int64_t v = 0; v < real; v++) mx = fmax(mx, logits[n * V + (size_t)v]);
        for (int64_t v = 0; v < real; v++) se += exp((double)logits[n * V + (size_t)v] - mx);
        double want = log(se) + mx - logits[n * V + (size_t)targets[n]];
        if (fabs(loss_s[n] - want) > 1e-5 * fmax(1.0, want))
            fail_msg("serial loss[%zu] %.7g vs %.7g", n, (double)loss_s[n], want);
    }

    float *lg = malloc(N * Vl * sizeof(float)), *dl = malloc(N * Vl * sizeof(float)),
          *want = malloc(N * Vl * sizeof(float));
    float loss[10], stats[30];
    tp_fixture_columns(lg, logits, N, V, (size_t)v_start, Vl);
    tp_traffic_reset();
    tp_vocab_cross_entropy_forward(tp, loss, stats, lg, targets, N, Vl, v_start, real);
    expect_close(loss, loss_s, N, 1e-6, 1e-5, "vocab-parallel loss");
    /* Three all-reduces of N floats (max, target logit, sum of exponentials); no gather. */
    expect_traffic(3 * (p > 1), p > 1 ? 3 * N * sizeof(float) : 0, 0, 0, "cross-entropy forward");
    tp_traffic_reset();
    tp_vocab_cross_entropy_backward(tp, dl, stats, lg, targets, dloss, N, Vl, v_start, real);
    tp_fixture_columns(want, dl_s, N, V, (size_t)v_start, Vl);
    expect_close(dl, want, N * Vl, 1e-6, 1e-5, "vocab-parallel dlogits slice");
    expect_traffic(0, 0, 0, 0, "cross-entropy backward");
    for (size_t n = 0; n < N; n++)
        for (size_t v = 0; v < Vl; v++)
            if ((int64_t)v + v_start >= real && dl[n * Vl + v] != 0.0f)
                fail_msg("padded entry %lld got gradient", (long long)((int64_t)v + v_start));
    free(logits);
    free(dloss);
    free(dl_s);
    free(lg);
    free(dl);
    free(want);
}

int main(int argc, char **argv) {
    mpi_test_launch(argc, argv, WORLD);
    tp_fixture_init(&argc, &argv, WORLD);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(column_parallel_linear_matches_serial),
        cmocka_unit_test(column_parallel_linear_with_gathered_output_matches_serial),
        cmocka_unit_test(row_parallel_linear_matches_serial_and_adds_the_bias_once),
        cmocka_unit_test(column_then_row_parallel_is_the_serial_two_layer_product),
        cmocka_unit_test(vocab_parallel_embedding_matches_serial),
        cmocka_unit_test(vocab_parallel_cross_entropy_matches_serial_without_gathering_logits),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    return tp_fixture_finish(rc);
}
