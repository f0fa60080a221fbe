/* moe_layer_test.c — the MoE layer at the world size given as argv[1] ("0": a plain run
 * without mpirun; 2 and 4 under mpirun), against references computed here:
 *   - E = 1, K = 1 is the dense GPT MLP of kernels/ops.h, forward and backward;
 *   - E = 4, K = 2, with and without a capacity factor, against a naive per-token reference
 *     in double (loop over tokens, over their chosen experts, do the MLP); the backward
 *     against central finite differences of that reference;
 *   - expert parallelism at P = world size against P = 1 on each rank's own tokens, the
 *     bytes on the ep group against moe_forward_bytes / moe_backward_bytes, and the aux loss
 *     over a stats group against the aux loss of all ranks' tokens at once. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "src/moe/moe_layer.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"
#include "tests/support/testing.h"

static comm_group *g_world;

static uint64_t g_rng;
static void seed(uint64_t s) { g_rng = 0x9E3779B97F4A7C15ULL * (s + 1); }
static float frand(void) { /* uniform in [-1, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static void fill(float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * frand();
}
static float *alloc_floats(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

/* Parameters of all E experts (P = 1 layout), the same on every rank for the same seed. */
static float *make_params(const moe_config *m, size_t C, uint64_t s) {
    size_t E = (size_t)m->num_experts, El = E / (size_t)m->ep_size;
    float *base = alloc_floats(moe_param_floats(C, E, El));
    moe_grads v = moe_grads_view(m, base, C);
    seed(s);
    fill(v.router_w, E * C, 1.0f);
    fill(v.fc_w, El * 4 * C * C, 0.4f);
    fill(v.fc_b, El * 4 * C, 0.1f);
    fill(v.fcproj_w, El * C * 4 * C, 0.4f);
    fill(v.fcproj_b, El * C, 0.1f);
    return base;
}

/* ------------------------------------------------------------------ (a) the dense MLP */

static void one_expert_top1_is_the_dense_mlp(void **state) {
    (void)state;
    const size_t N = 10, C = 8;
    moe_config m = {1, 1, 0.01f, 0.0f, 1, 0};
    float *pbuf = make_params(&m, C, 1), *gbuf = alloc_floats(moe_param_floats(C, 1, 1));
    moe_params p = moe_params_view(&m, pbuf, C);
    moe_grads g = moe_grads_view(&m, gbuf, C);
    float *in = alloc_floats(N * C), *dout = alloc_floats(N * C), *out = alloc_floats(N * C);
    float *dinp = alloc_floats(N * C);
    fill(in, N * C, 1.0f);
    fill(dout, N * C, 1.0f);
    moe_acts *a = moe_acts_create(&m, N, C);
    float aux = moe_forward(&m, NULL, NULL, &p, a, out, in, N, C);
    moe_backward(&m, NULL, &p, &g, a, dinp, dout, in, 1.0f, N, C);

    /* the dense MLP, straight from kernels/ops.h */
    float *h_pre = alloc_floats(N * 4 * C), *h = alloc_floats(N * 4 * C), *y = alloc_floats(N * C);
    matmul_forward(h_pre, in, p.fc_w, p.fc_b, N, C, 4 * C);
    gelu_forward(h, h_pre, N * 4 * C);
    matmul_forward(y, h, p.fcproj_w, p.fcproj_b, N, 4 * C, C);
    expect_close(out, y, N * C, 0, 0, "forward (bit for bit)");
    float want_aux = 0.01f; /* one expert: P = N, n = N */
    expect_close(&aux, &want_aux, 1, 0, 1e-6, "aux loss");

    float *dh = alloc_floats(N * 4 * C), *dh_pre = alloc_floats(N * 4 * C),
          *dx = alloc_floats(N * C), *rg = alloc_floats(moe_param_floats(C, 1, 1));
    moe_grads r = moe_grads_view(&m, rg, C);
    matmul_backward(dh, r.fcproj_w, r.fcproj_b, dout, h, p.fcproj_w, N, 4 * C, C);
    gelu_backward(dh_pre, h_pre, dh, N * 4 * C);
    matmul_backward(dx, r.fc_w, r.fc_b, dh_pre, in, p.fc_w, N, C, 4 * C);
    expect_close(dinp, dx, N * C, 1e-6, 0, "dinp");
    expect_close(g.fc_w, r.fc_w, 4 * C * C, 1e-6, 0, "d fc_w");
    expect_close(g.fc_b, r.fc_b, 4 * C, 1e-6, 0, "d fc_b");
    expect_close(g.fcproj_w, r.fcproj_w, C * 4 * C, 1e-6, 0, "d fcproj_w");
    expect_close(g.fcproj_b, r.fcproj_b, C, 1e-6, 0, "d fcproj_b");
    expect_close(g.router_w, r.router_w, C, 0, 0, "d router_w (a constant score: zero)");
    assert_int_equal(moe_acts_expert_counts(a)[0], (int64_t)N);
    assert_int_equal(moe_acts_dropped(a), 0);
    moe_acts_destroy(a);
    free(pbuf), free(gbuf), free(in), free(dout), free(out), free(dinp), free(h_pre), free(h);
    free(y), free(dh), free(dh_pre), free(dx), free(rg);
}

/* ------------------------------------------------------------------ (b) a naive reference */

static double gelu_d(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* The layer token by token in double, for all E experts (P = 1 layout in w). Returns the aux
 * loss; out (N,C); counts (E) before dropping and *dropped as the layer reports them. */
static double naive_forward(const moe_config *m, const double *w, const double *in, size_t N,
                            size_t C, double *out, int64_t *counts, int64_t *dropped) {
    size_t E = (size_t)m->num_experts, K = (size_t)m->topk, H = 4 * C;
    const double *rw = w, *fc_w = rw + E * C, *fc_b = fc_w + E * H * C, *pw = fc_b + E * H,
                 *pb = pw + E * C * H;
    double *s = calloc(N * E, sizeof(double)), P[8] = {0}, h[64];
    int *pick = calloc(N * K, sizeof(int)), kept[8] = {0};
    for (size_t e = 0; e < E; e++) counts[e] = 0;
    for (size_t t = 0; t < N; t++) {
        double max = -1e300, z = 0.0;
        for (size_t e = 0; e < E; e++) {
            double l = 0.0;
            for (size_t c = 0; c < C; c++) l += in[t * C + c] * rw[e * C + c];
            s[t * E + e] = l;
            max = l > max ? l : max;
        }
        for (size_t e = 0; e < E; e++) z += exp(s[t * E + e] - max);
        for (size_t e = 0; e < E; e++) {
            s[t * E + e] = exp(s[t * E + e] - max) / z;
            P[e] += s[t * E + e];
        }
        for (size_t k = 0; k < K; k++) { /* the best not yet picked, lower index on ties */
            int best = -1;
            for (size_t e = 0; e < E; e++) {
                int taken = 0;
                for (size_t j = 0; j < k; j++) taken |= pick[t * K + j] == (int)e;
                if (!taken && (best < 0 || s[t * E + e] > s[t * E + (size_t)best])) best = (int)e;
            }
            pick[t * K + k] = best;
            counts[best]++;
        }
    }
    double cap = m->capacity_factor > 0 ? ceil((double)m->capacity_factor * N * K / E) : 1e300;
    *dropped = 0;
    for (size_t t = 0; t < N; t++) {
        for (size_t c = 0; c < C; c++) out[t * C + c] = 0.0;
        for (size_t k = 0; k < K; k++) {
            int e = pick[t * K + k];
            if (kept[e] >= cap) {
                (*dropped)++;
                continue;
            }
            kept[e]++;
            for (size_t j = 0; j < H; j++) {
                double a = fc_b[(size_t)e * H + j];
                for (size_t c = 0; c < C; c++)
                    a += in[t * C + c] * fc_w[((size_t)e * H + j) * C + c];
                h[j] = gelu_d(a);
            }
            for (size_t c = 0; c < C; c++) {
                double y = pb[(size_t)e * C + c];
                for (size_t j = 0; j < H; j++) y += h[j] * pw[((size_t)e * C + c) * H + j];
                out[t * C + c] += s[t * E + (size_t)e] * y;
            }
        }
    }
    double aux = 0.0;
    for (size_t e = 0; e < E; e++) aux += P[e] * (double)counts[e];
    aux *= m->aux_loss_coeff * (double)E / ((double)N * N * K);
    free(s);
    free(pick);
    return aux;
}

/* The objective the backward differentiates: Σ dout · out + aux_dloss · aux. */
static double objective(const moe_config *m, const double *w, const double *in, size_t N, size_t C,
                        const float *dout, double aux_dloss) {
    double *out = calloc(N * C, sizeof(double)), sum = 0.0;
    int64_t counts[8], dropped;
    double aux = naive_forward(m, w, in, N, C, out, counts, &dropped);
    for (size_t i = 0; i < N * C; i++) sum += dout[i] * out[i];
    free(out);
    return sum + aux_dloss * aux;
}

/* Central differences of the objective along every entry of x (n of them). */
static void finite_differences(float *fd, double *x, size_t n, const moe_config *m, const double *w,
                               const double *in, size_t N, size_t C, const float *dout,
                               double aux_dloss) {
    const double h = 1e-5;
    for (size_t i = 0; i < n; i++) {
        double keep = x[i];
        x[i] = keep + h;
        double up = objective(m, w, in, N, C, dout, aux_dloss);
        x[i] = keep - h;
        double down = objective(m, w, in, N, C, dout, aux_dloss);
        x[i] = keep;
        fd[i] = (float)((up - down) / (2 * h));
    }
}

static void four_experts_top2_match_the_naive_reference(void **state) {
    (void)state;
    const size_t N = 12, C = 4, E = 4;
    const float factors[2] = {0.0f, 0.75f}; /* dropless; capacity ceil(0.75·12·2/4) = 5 */
    for (int f = 0; f < 2; f++) {
        moe_config m = {(int)E, 2, 0.05f, factors[f], 1, 0};
        size_t np = moe_param_floats(C, E, E);
        float *pbuf = make_params(&m, C, 2), *gbuf = alloc_floats(np);
        moe_params p = moe_params_view(&m, pbuf, C);
        moe_grads g = moe_grads_view(&m, gbuf, C);
        float *in = alloc_floats(N * C), *dout = alloc_floats(N * C), *out = alloc_floats(N * C),
              *dinp = alloc_floats(N * C), *want = alloc_floats(N * C);
        fill(in, N * C, 1.0f);
        fill(dout, N * C, 1.0f);
        const float aux_dloss = 0.8f;
        moe_acts *a = moe_acts_create(&m, N, C);
        float aux = moe_forward(&m, NULL, NULL, &p, a, out, in, N, C);
        moe_backward(&m, NULL, &p, &g, a, dinp, dout, in, aux_dloss, N, C);

        double *w = calloc(np, sizeof(double)), *ind = calloc(N * C, sizeof(double));
        double *ref = calloc(N * C, sizeof(double));
        for (size_t i = 0; i < np; i++) w[i] = pbuf[i];
        for (size_t i = 0; i < N * C; i++) ind[i] = in[i];
        int64_t counts[8], dropped;
        float want_aux = (float)naive_forward(&m, w, ind, N, C, ref, counts, &dropped);
        for (size_t i = 0; i < N * C; i++) want[i] = (float)ref[i];
        expect_close(out, want, N * C, 1e-6, 1e-5, "forward vs naive");
        expect_close(&aux, &want_aux, 1, 0, 1e-5, "aux vs naive");
        for (size_t e = 0; e < E; e++) assert_int_equal(moe_acts_expert_counts(a)[e], counts[e]);
        assert_int_equal(moe_acts_dropped(a), dropped);
        if (factors[f] > 0) assert_true(dropped > 0); /* the capacity really bites */

        float *fd_w = alloc_floats(np), *fd_in = alloc_floats(N * C);
        finite_differences(fd_w, w, np, &m, w, ind, N, C, dout, aux_dloss);
        finite_differences(fd_in, ind, N * C, &m, w, ind, N, C, dout, aux_dloss);
        expect_close(gbuf, fd_w, np, 2e-5, 1e-3, "grads vs finite differences");
        expect_close(dinp, fd_in, N * C, 2e-5, 1e-3, "dinp vs finite differences");
        moe_acts_destroy(a);
        free(pbuf), free(gbuf), free(in), free(dout), free(out), free(dinp), free(want), free(w);
        free(ind), free(ref), free(fd_w), free(fd_in);
    }
}

/* ------------------------------------------------------------------ (c) expert parallelism */

/* This rank's slice of the full (P = 1) parameters: the router whole, experts [r·El, +El). */
static void slice_params(float *dst, const moe_config *mp, const float *full, const moe_config *m1,
                         size_t C) {
    moe_params f = moe_params_view(m1, full, C);
    moe_grads d = moe_grads_view(mp, dst, C);
    size_t E = (size_t)m1->num_experts, El = E / (size_t)mp->ep_size, e0 = (size_t)mp->ep_rank * El;
    memcpy(d.router_w, f.router_w, E * C * sizeof(float));
    memcpy(d.fc_w, f.fc_w + e0 * 4 * C * C, El * 4 * C * C * sizeof(float));
    memcpy(d.fc_b, f.fc_b + e0 * 4 * C, El * 4 * C * sizeof(float));
    memcpy(d.fcproj_w, f.fcproj_w + e0 * C * 4 * C, El * C * 4 * C * sizeof(float));
    memcpy(d.fcproj_b, f.fcproj_b + e0 * C, El * C * sizeof(float));
}

/* The tokens (and output gradients) of rank r: different on every rank. */
static void tokens_of(int r, float *in, float *dout, size_t n) {
    seed(1000 + (uint64_t)r);
    fill(in, n, 1.0f);
    fill(dout, n, 1.0f);
}

static void expert_parallel_matches_all_experts_on_one_rank(void **state) {
    (void)state;
    const size_t N = 10, C = 8, E = 4;
    int P = comm_size(g_world), r = comm_rank(g_world);
    if (E % (size_t)P) skip();
    const float factors[2] = {0.0f, 1.0f};
    for (int f = 0; f < 2; f++) {
        moe_config m1 = {(int)E, 2, 0.01f, factors[f], 1, 0};
        moe_config mp = {(int)E, 2, 0.01f, factors[f], P, r};
        size_t n1 = moe_param_floats(C, E, E), npp = moe_param_floats(C, E, E / (size_t)P);
        float *full = make_params(&m1, C, 3), *mine = alloc_floats(npp);
        slice_params(mine, &mp, full, &m1, C);
        float *g1buf = alloc_floats(n1), *gpbuf = alloc_floats(npp);
        moe_params p1 = moe_params_view(&m1, full, C), pp = moe_params_view(&mp, mine, C);
        moe_grads g1 = moe_grads_view(&m1, g1buf, C), gp = moe_grads_view(&mp, gpbuf, C);
        float *in = alloc_floats(N * C), *dout = alloc_floats(N * C);
        float *out1 = alloc_floats(N * C), *outp = alloc_floats(N * C);
        float *dinp1 = alloc_floats(N * C), *dinpp = alloc_floats(N * C);
        tokens_of(r, in, dout, N * C);

        /* reference: every expert here, this rank's tokens */
        moe_acts *a1 = moe_acts_create(&m1, N, C);
        float aux1 = moe_forward(&m1, NULL, NULL, &p1, a1, out1, in, N, C);
        moe_backward(&m1, NULL, &p1, &g1, a1, dinp1, dout, in, 1.0f, N, C);

        /* expert parallel over the world, bytes counted on the ep group */
        moe_acts *ap = moe_acts_create(&mp, N, C);
        size_t b0 = comm_bytes_collective(g_world);
        float auxp = moe_forward(&mp, g_world, NULL, &pp, ap, outp, in, N, C);
        size_t b1 = comm_bytes_collective(g_world);
        moe_backward(&mp, g_world, &pp, &gp, ap, dinpp, dout, in, 1.0f, N, C);
        size_t b2 = comm_bytes_collective(g_world);
        assert_int_equal(b1 - b0, moe_forward_bytes(ap));
        assert_int_equal(b2 - b1, moe_backward_bytes(ap));
        if (P > 1) assert_true(moe_forward_bytes(ap) > 0);

        expect_close(outp, out1, N * C, 1e-6, 1e-5, "out: ep vs one rank");
        expect_close(&auxp, &aux1, 1, 0, 0, "aux: ep vs one rank");
        expect_close(dinpp, dinp1, N * C, 1e-6, 1e-5, "dinp: ep vs one rank");
        expect_close(gp.router_w, g1.router_w, E * C, 1e-6, 1e-5, "d router_w: this rank's tokens");
        for (size_t e = 0; e < E; e++)
            assert_int_equal(moe_acts_expert_counts(ap)[e], moe_acts_expert_counts(a1)[e]);
        assert_int_equal(moe_acts_dropped(ap), moe_acts_dropped(a1));

        /* an expert's gradient is the sum over every rank's tokens routed to it */
        comm_all_reduce(g_world, g1buf, n1, COMM_FLOAT32, COMM_SUM);
        size_t El = E / (size_t)P, e0 = (size_t)r * El;
        expect_close(gp.fc_w, g1.fc_w + e0 * 4 * C * C, El * 4 * C * C, 1e-6, 1e-5, "d fc_w");
        expect_close(gp.fc_b, g1.fc_b + e0 * 4 * C, El * 4 * C, 1e-6, 1e-5, "d fc_b");
        expect_close(gp.fcproj_w, g1.fcproj_w + e0 * C * 4 * C, El * C * 4 * C, 1e-6, 1e-5,
                     "d fcproj_w");
        expect_close(gp.fcproj_b, g1.fcproj_b + e0 * C, El * C, 1e-6, 1e-5, "d fcproj_b");

        moe_acts_destroy(a1);
        moe_acts_destroy(ap);
        free(full), free(mine), free(g1buf), free(gpbuf), free(in), free(dout), free(out1);
        free(outp), free(dinp1), free(dinpp);
    }
}

/* With a stats group the aux loss is that of the whole micro-batch: every rank's tokens. */
static void aux_loss_over_a_stats_group_is_that_of_all_tokens(void **state) {
    (void)state;
    const size_t N = 6, C = 8, E = 4;
    int P = comm_size(g_world), r = comm_rank(g_world);
    moe_config m = {(int)E, 2, 0.02f, 0.0f, 1, 0};
    float *pbuf = make_params(&m, C, 4);
    moe_params p = moe_params_view(&m, pbuf, C);
    float *all_in = alloc_floats((size_t)P * N * C), *all_out = alloc_floats((size_t)P * N * C);
    float *dout = alloc_floats(N * C), *out = alloc_floats(N * C);
    for (int q = 0; q < P; q++) tokens_of(q, all_in + (size_t)q * N * C, dout, N * C);
    moe_acts *a_all = moe_acts_create(&m, (size_t)P * N, C), *a = moe_acts_create(&m, N, C);
    float want = moe_forward(&m, NULL, NULL, &p, a_all, all_out, all_in, (size_t)P * N, C);
    float got = moe_forward(&m, NULL, g_world, &p, a, out, all_in + (size_t)r * N * C, N, C);
    expect_close(&got, &want, 1, 0, 1e-5, "aux over the stats group");
    moe_acts_destroy(a_all);
    moe_acts_destroy(a);
    free(pbuf), free(all_in), free(all_out), free(dout), free(out);
}

static void config_check_names_the_flags(void **state) {
    (void)state;
    char err[200];
    moe_config ok = {8, 2, 0.01f, 0.0f, 4, 3};
    assert_true(moe_config_check(&ok, err, sizeof err));
    moe_config bad_ep = {6, 2, 0.01f, 0.0f, 4, 0};
    assert_false(moe_config_check(&bad_ep, err, sizeof err));
    assert_non_null(strstr(err, "--expert-model-parallel-size"));
    moe_config bad_k = {4, 5, 0.01f, 0.0f, 1, 0};
    assert_false(moe_config_check(&bad_k, err, sizeof err));
    assert_non_null(strstr(err, "--moe-router-topk"));
    moe_config bad_e = {0, 1, 0.01f, 0.0f, 1, 0};
    assert_false(moe_config_check(&bad_e, err, sizeof err));
    assert_non_null(strstr(err, "--num-experts"));
    moe_config bad_c = {4, 1, -1.0f, 0.0f, 1, 0};
    assert_false(moe_config_check(&bad_c, err, sizeof err));
    assert_non_null(strstr(err, "--moe-aux-loss-coeff"));
    /* the worst case grows with P: P·N·K rows on the expert side */
    assert_true(moe_acts_bytes_of(&ok, 16, 8) >
                moe_acts_bytes_of(&(moe_config){8, 2, 0.01f, 0.0f, 1, 0}, 16, 8));
}

int main(int argc, char **argv) {
    int np = argc > 1 ? atoi(argv[1]) : 0;
    if (np > 0) mpi_test_launch(argc, argv, np);
    dist_init(&argc, &argv);
    if (np > 0 && dist_world_size() != np)
        fail_msg("launched with %d ranks, expected %d", dist_world_size(), np);
    g_world = comm_group_world(COMM_MPI);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_expert_top1_is_the_dense_mlp),
        cmocka_unit_test(four_experts_top2_match_the_naive_reference),
        cmocka_unit_test(expert_parallel_matches_all_experts_on_one_rank),
        cmocka_unit_test(aux_loss_over_a_stats_group_is_that_of_all_tokens),
        cmocka_unit_test(config_check_names_the_flags),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    comm_group_destroy(g_world);
    dist_finalize();
    return failed;
}
