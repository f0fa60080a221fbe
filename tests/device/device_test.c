/* device_test.c — src/device/device.h: names, memory, the guard of the cpu-guarded device, the
 * timing markers' CPU twin, every dev_* kernel on cpu-guarded memory against the CPU kernel on
 * host memory (bit for bit: the same code runs, only where the bytes live differs), and the
 * bf16 linear products: on cpu and on cpu-guarded, bit for bit the CPU kernels on operands
 * rounded to bf16 by hand. The cuda device is checked on a GPU by tests/kernels_cuda and
 * tests/train/gpu_train_test (tagged gpu). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "src/core/clock.h"
#include "src/device/device.h"
#include "src/optim/adamw.h"
#include "src/precision/convert.h"
#include "src/precision/loss_scaler.h"
#include "tests/support/testing.h"

static void guarded_on(void) {
    char err[256];
    assert_true(device_init(DEVICE_CPU_GUARDED, -1, err, sizeof err));
    assert_int_equal(device_current(), DEVICE_CPU_GUARDED);
}

static void guarded_off(void) {
    assert_int_equal(device_bytes_in_use(), 0);
    device_shutdown();
    assert_int_equal(device_current(), DEVICE_CPU);
}

static void names_parse_both_ways(void **state) {
    (void)state;
    const device_kind kinds[3] = {DEVICE_CPU, DEVICE_CUDA, DEVICE_CPU_GUARDED};
    for (int i = 0; i < 3; i++) {
        device_kind k;
        assert_true(device_kind_parse(device_kind_name(kinds[i]), &k));
        assert_int_equal(k, kinds[i]);
    }
    device_kind k;
    assert_false(device_kind_parse("gpu", &k));
    assert_false(device_kind_parse("", &k));
    assert_true(device_kind_built(DEVICE_CPU) && device_kind_built(DEVICE_CPU_GUARDED));
}

static void cpu_device_memory_is_plain_host_memory(void **state) {
    (void)state;
    assert_true(device_is_host());
    float *p = device_alloc(100 * sizeof(float), "test");
    for (int i = 0; i < 100; i++) assert_true(p[i] == 0.0f); /* zeroed, readable by the host */
    assert_false(device_owns(p));
    p[3] = 2.0f;
    float back[100];
    device_download(back, p, sizeof back);
    assert_true(back[3] == 2.0f);
    device_free(p);
}

static void guarded_memory_round_trips_and_is_owned(void **state) {
    (void)state;
    guarded_on();
    assert_false(device_is_host());
    enum { n = 3000 };
    float h[n], back[n];
    for (int i = 0; i < n; i++) h[i] = (float)i * 0.5f;
    float *a = device_alloc(n * sizeof(float), "a"), *b = device_alloc(n * sizeof(float), "b");
    assert_true(device_owns(a) && device_owns(a + n - 1) && device_owns(b));
    assert_false(device_owns(h));
    assert_int_equal(device_bytes_in_use(), 2 * n * sizeof(float));
    device_upload(a, h, sizeof h);
    device_copy(b, a, sizeof h);
    device_download(back, b, sizeof back);
    assert_memory_equal(back, h, sizeof h);
    device_zero(b + 10, 5 * sizeof(float));
    device_download(back, b, sizeof back);
    for (int i = 0; i < n; i++) assert_true(back[i] == (i >= 10 && i < 15 ? 0.0f : h[i]));
    /* a fresh allocation is zeroed even where a freed block is reused */
    device_free(b);
    assert_false(device_owns(b));
    float *c = device_alloc(n * sizeof(float), "c");
    device_download(back, c, sizeof back);
    for (int i = 0; i < n; i++) assert_true(back[i] == 0.0f);
    device_free(c);
    device_free(a);
    assert_true(device_bytes_peak() >= 2 * n * sizeof(float));
    guarded_off();
}

static void touch_guarded_memory(const void *arg) {
    (void)arg;
    guarded_on();
    float *p = device_alloc(64, "touched");
    p[1] = 1.0f; /* host code writing device memory: the guard must stop it here */
    exit(0);
}

static void host_access_to_guarded_memory_faults_and_says_why(void **state) {
    (void)state;
    char out[1024];
    int rc = run_in_child(touch_guarded_memory, NULL, out, sizeof out);
    assert_int_equal(rc, 128 + 11); /* SIGSEGV */
    assert_non_null(strstr(out, "host code touched device memory"));
}

static void leak_then_shutdown(const void *arg) {
    (void)arg;
    guarded_on();
    (void)device_alloc(64, "leaked");
    device_shutdown();
    exit(0);
}

static void shutting_down_with_live_device_memory_is_an_error(void **state) {
    (void)state;
    char out[1024];
    assert_int_not_equal(run_in_child(leak_then_shutdown, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "still allocated"));
}

static void cuda_without_a_gpu_is_refused_with_a_reason(void **state) {
    (void)state;
    if (device_cuda_count() > 0) skip(); /* a GPU machine: tests/train/gpu_train_test covers it */
    char err[256] = "";
    assert_false(device_init(DEVICE_CUDA, 0, err, sizeof err));
    assert_true(strstr(err, "--device cuda") != NULL);
    assert_true(strstr(err, "no GPU") != NULL || strstr(err, "without CUDA") != NULL);
    assert_int_equal(device_current(), DEVICE_CPU);
}

/* ---- timing markers: the CPU twin ------------------------------------------------------- */

/* On cpu and cpu-guarded a marker is the host clock when it is taken (the kernels ran inside
 * their calls): times follow the takes, lie between host clock reads around them, and ids
 * come back after release; the pool grows past its first slots. */
static void markers_on_the_cpu_devices_are_the_host_clock(void **state) {
    (void)state;
    enum { n = 1 << 16, many = 300 };
    for (int guarded = 0; guarded < 2; guarded++) {
        if (guarded) guarded_on();
        float *x = device_alloc(n * sizeof(float), "test");
        double before = time_now();
        int a = device_marker_take();
        dev_fill(x, 1.0f, n);
        int b = device_marker_take();
        double after = time_now();
        device_marker_sync();
        assert_int_not_equal(a, b);
        double ta = device_marker_time(a), tb = device_marker_time(b);
        assert_true(before <= ta && ta <= tb && tb <= after);
        device_marker_release(b);
        int c = device_marker_take(); /* b's slot again, with the new time */
        assert_int_equal(c, b);
        device_marker_sync();
        assert_true(device_marker_time(c) >= after);
        device_marker_release(a), device_marker_release(c);

        int ids[many];
        for (int i = 0; i < many; i++) ids[i] = device_marker_take();
        device_marker_sync();
        for (int i = 0; i < many; i++) {
            for (int j = 0; j < i; j++) assert_int_not_equal(ids[i], ids[j]);
            if (i) assert_true(device_marker_time(ids[i]) >= device_marker_time(ids[i - 1]));
        }
        for (int i = 0; i < many; i++) device_marker_release(ids[i]);
        device_free(x);
        if (guarded) guarded_off();
    }
}

/* ---- every kernel: cpu-guarded vs the CPU kernel on host memory -------------------------- */

static uint64_t g_seed = 1;
static float rnd(void) {
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((g_seed >> 40) & 0xffffff) / (float)0x1000000 - 0.5f;
}

/* Host buffers and their device twins with the same contents. */
typedef struct {
    float *h, *d;
    size_t n;
} pair;

static pair make(size_t n) {
    pair p = {malloc(n * sizeof(float) + 4), device_alloc(n * sizeof(float), "test"), n};
    for (size_t i = 0; i < n; i++) p.h[i] = rnd();
    device_upload(p.d, p.h, n * sizeof(float));
    return p;
}

static void same(const pair *p, const char *what) {
    float *back = malloc(p->n * sizeof(float) + 4);
    device_download(back, p->d, p->n * sizeof(float));
    if (memcmp(back, p->h, p->n * sizeof(float)) != 0)
        fail_msg("%s: device result differs from the CPU", what);
    free(back);
}

static void drop(pair *p) {
    free(p->h);
    device_free(p->d);
}

static void every_kernel_on_guarded_memory_equals_the_cpu_kernel(void **state) {
    (void)state;
    guarded_on();
    const size_t B = 2, T = 5, NH = 2, HS = 3, C = NH * HS, N = B * T, OC = 7, V = 11;
    pair inp = make(N * C), w = make(OC * C), bias = make(OC), out = make(N * OC);
    pair dinp = make(N * C), dw = make(OC * C), db = make(OC), dout = make(N * OC);
    dev_matmul_forward(out.d, inp.d, w.d, bias.d, N, C, OC);
    matmul_forward(out.h, inp.h, w.h, bias.h, N, C, OC);
    same(&out, "matmul_forward");
    dev_matmul_backward(dinp.d, dw.d, db.d, dout.d, inp.d, w.d, N, C, OC);
    matmul_backward(dinp.h, dw.h, db.h, dout.h, inp.h, w.h, N, C, OC);
    same(&dinp, "matmul_backward dinp");
    same(&dw, "matmul_backward dweight");
    same(&db, "matmul_backward dbias");
    dev_add_bias_rows(out.d, bias.d, N, OC);
    add_bias_rows(out.h, bias.h, N, OC);
    same(&out, "add_bias_rows");

    pair lw = make(C), lb = make(C), lo = make(N * C), mean = make(N), rstd = make(N);
    dev_layernorm_forward(lo.d, mean.d, rstd.d, inp.d, lw.d, lb.d, N, C);
    layernorm_forward(lo.h, mean.h, rstd.h, inp.h, lw.h, lb.h, N, C);
    same(&lo, "layernorm_forward");
    same(&rstd, "layernorm_forward rstd");
    dev_layernorm_backward(dinp.d, lw.d, lb.d, lo.d, inp.d, lw.d, mean.d, rstd.d, N, C);
    layernorm_backward(dinp.h, lw.h, lb.h, lo.h, inp.h, lw.h, mean.h, rstd.h, N, C);
    same(&dinp, "layernorm_backward");

    pair qkv = make(N * 3 * C), att = make(B * NH * T * T), ay = make(N * C),
         dqkv = make(N * 3 * C);
    pair scratch = make(dev_attention_scratch_floats(T, NH));
    dev_attention_forward(ay.d, att.d, qkv.d, B, T, NH, HS);
    attention_forward(ay.h, att.h, qkv.h, B, T, NH, HS);
    same(&ay, "attention_forward");
    same(&att, "attention_forward probabilities");
    dev_attention_backward(dqkv.d, ay.d, qkv.d, att.d, scratch.d, B, T, NH, HS);
    attention_backward(dqkv.h, ay.h, qkv.h, att.h, scratch.h, B, T, NH, HS);
    same(&dqkv, "attention_backward");

    dev_gelu_forward(lo.d, inp.d, N * C);
    gelu_forward(lo.h, inp.h, N * C);
    same(&lo, "gelu_forward");
    dev_gelu_backward(dinp.d, inp.d, lo.d, N * C);
    gelu_backward(dinp.h, inp.h, lo.h, N * C);
    same(&dinp, "gelu_backward");
    dev_add_inplace(dinp.d, lo.d, N * C);
    add_inplace(dinp.h, lo.h, N * C);
    same(&dinp, "add_inplace");

    int32_t tok[10] = {0, 3, 10, 5, 4, 9, 1, 2, 8, 7};
    int32_t *dtok = device_alloc(sizeof tok, "tokens");
    device_upload(dtok, tok, sizeof tok);
    pair wte = make(V * C), wpe = make(T * C), emb = make(N * C);
    dev_embedding_forward(emb.d, dtok, wte.d, N, C, 4, 6);
    embedding_forward(emb.h, tok, wte.h, N, C, 4, 6);
    same(&emb, "embedding_forward");
    dev_position_forward(emb.d, wpe.d, B, T, C);
    position_forward(emb.h, wpe.h, B, T, C);
    same(&emb, "position_forward");
    dev_embedding_backward(wte.d, emb.d, dtok, N, C, 4, 6);
    embedding_backward(wte.h, emb.h, tok, N, C, 4, 6);
    same(&wte, "embedding_backward");
    dev_position_backward(wpe.d, emb.d, B, T, C);
    position_backward(wpe.h, emb.h, B, T, C);
    same(&wpe, "position_backward");

    pair logits = make(N * V), rowmax = make(N), sumexp = make(N), tl = make(N), loss = make(N),
         dloss = make(N), dlogits = make(N * V);
    dev_crossentropy_local_max(rowmax.d, logits.d, N, V, 0, 9);
    crossentropy_local_max(rowmax.h, logits.h, N, V, 0, 9);
    same(&rowmax, "crossentropy_local_max");
    dev_crossentropy_local_sums(sumexp.d, tl.d, logits.d, rowmax.d, dtok, N, V, 0, 9);
    crossentropy_local_sums(sumexp.h, tl.h, logits.h, rowmax.h, tok, N, V, 0, 9);
    same(&sumexp, "crossentropy_local_sums");
    same(&tl, "crossentropy target logits");
    dev_crossentropy_loss(loss.d, sumexp.d, rowmax.d, tl.d, N);
    crossentropy_loss(loss.h, sumexp.h, rowmax.h, tl.h, N);
    same(&loss, "crossentropy_loss");
    dev_crossentropy_backward(dlogits.d, logits.d, rowmax.d, sumexp.d, dtok, dloss.d, N, V, 0, 9);
    crossentropy_backward(dlogits.h, logits.h, rowmax.h, sumexp.h, tok, dloss.h, N, V, 0, 9);
    same(&dlogits, "crossentropy_backward");
    double s = 0.0;
    for (size_t i = 0; i < N; i++) s += loss.h[i];
    assert_true(dev_sum(loss.d, N) == s);
    device_free(dtok);

    /* optimizer and precision */
    dev_fill(dloss.d, 0.25f, N);
    fill_value(dloss.h, 0.25f, N);
    same(&dloss, "fill");
    dev_scale(dw.d, 0.5f, dw.n);
    scale_inplace(dw.h, 0.5f, dw.n);
    same(&dw, "scale");
    assert_true(dev_sumsq(dw.d, dw.n) == sum_squares(dw.h, dw.n));
    adamw_config cfg = {
        .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};
    pair m = make(w.n), v = make(w.n);
    for (size_t i = 0; i < v.n; i++) v.h[i] = fabsf(v.h[i]);
    device_upload(v.d, v.h, v.n * sizeof(float));
    dev_adamw_update(w.d, dw.d, m.d, v.d, w.n, &cfg, 1e-3f, 0.1f, 3, 0.7f);
    adamw_update(w.h, dw.h, m.h, v.h, w.n, &cfg, 1e-3f, 0.1f, 3, 0.7f);
    same(&w, "adamw parameters");
    same(&v, "adamw second moments");
    dev_round(PREC_BF16, w.d, w.n);
    prec_round_array(PREC_BF16, w.h, w.n);
    same(&w, "round to bf16");
    dev_round(PREC_FP16, m.d, m.n);
    prec_round_array(PREC_FP16, m.h, m.n);
    same(&m, "round to fp16");
    assert_false(dev_has_inf_or_nan(w.d, w.n));
    float inf = INFINITY;
    device_upload(w.d + 17, &inf, sizeof inf);
    assert_true(dev_has_inf_or_nan(w.d, w.n));

    pair *all[] = {&inp, &w,      &bias,   &out,    &dinp, &dw,   &db,    &dout,    &lw,  &lb,
                   &lo,  &mean,   &rstd,   &qkv,    &att,  &ay,   &dqkv,  &scratch, &wte, &wpe,
                   &emb, &logits, &rowmax, &sumexp, &tl,   &loss, &dloss, &dlogits, &m,   &v};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
    guarded_off();
}

/* ---- bf16 linear products: the CPU twin of the bf16 GEMMs -------------------------------- */

/* x (n) rounded to bf16 values, a fresh copy (the hand-rounded operands of the reference). */
static float *rounded(const float *x, size_t n) {
    float *r = malloc(n * sizeof(float) + 4);
    memcpy(r, x, n * sizeof(float));
    prec_round_array(PREC_BF16, r, n);
    return r;
}

static float *random_floats(size_t n) {
    float *x = malloc(n * sizeof(float) + 4);
    for (size_t i = 0; i < n; i++) x[i] = rnd();
    return x;
}

static void bf16_products_round_their_operands_by_hand_example(void **state) {
    (void)state;
    /* 1 + 2^-9 is 1 in bf16 (7 mantissa bits), 3 + 2^-8 is 3: the product is 3 exactly, where
     * fp32 gives 3.0117...; the bias (0.25 + 2^-20) is added in fp32, unrounded */
    float inp = 1.0f + 0x1p-9f, w = 3.0f + 0x1p-8f, bias = 0.25f + 0x1p-20f, out = 0.0f;
    dev_matmul_forward(&out, &inp, &w, &bias, 1, 1, 1);
    assert_true(out == inp * w + bias); /* fp32 by default */
    device_set_matmul_dtype(PREC_BF16, dev_matmul_operand_elems(1, 1, 1));
    assert_int_equal(device_matmul_dtype(), PREC_BF16);
    dev_matmul_forward(&out, &inp, &w, &bias, 1, 1, 1);
    assert_true(out == 3.0f + bias);
    /* backward: dinp += round(dout) round(w), dweight += round(dout) round(inp), dbias += dout */
    float dout = 0.5f + 0x1p-12f, dinp = 0.0f, dw = 0.0f, db = 0.0f;
    dev_matmul_backward(&dinp, &dw, &db, &dout, &inp, &w, 1, 1, 1);
    assert_true(dinp == 1.5f && dw == 0.5f && db == dout);
    assert_true(inp == 1.0f + 0x1p-9f && w == 3.0f + 0x1p-8f); /* operands are not rounded */
    device_set_matmul_dtype(PREC_FP32, 0);
    assert_int_equal(device_matmul_dtype(), PREC_FP32);
    assert_int_equal(device_bytes_in_use(), 0);
}

/* forward and backward in bf16 on the current device against the CPU kernels on hand-rounded
 * copies, bit for bit; the scratch is exactly the largest product's, counted by its label */
static void bf16_products_equal_the_rounded_reference_here(void) {
    const size_t N = 13, C = 9, OC = 21;
    float *x = random_floats(N * C), *w = random_floats(OC * C), *b = random_floats(OC);
    float *dy = random_floats(N * OC);
    float *rx = rounded(x, N * C), *rw = rounded(w, OC * C), *rdy = rounded(dy, N * OC);
    const size_t elems = dev_matmul_operand_elems(N, C, OC);
    assert_int_equal(elems, N * OC + OC * C); /* the backward's dout, then weight */
    device_set_matmul_dtype(PREC_BF16, elems);
    assert_int_equal(device_bytes_in_use_of("bf16 matmul operands"), elems * sizeof(float));
    pair xd = make(N * C), wd = make(OC * C), bd = make(OC), dyd = make(N * OC);
    device_upload(xd.d, x, N * C * sizeof(float));
    device_upload(wd.d, w, OC * C * sizeof(float));
    device_upload(bd.d, b, OC * sizeof(float));
    device_upload(dyd.d, dy, N * OC * sizeof(float));
    pair out = make(N * OC), dx = make(N * C), dw = make(OC * C), db = make(OC);
    pair dx2 = make(N * C), dw2 = make(OC * C);
    dev_matmul_forward(out.d, xd.d, wd.d, bd.d, N, C, OC);
    matmul_forward(out.h, rx, rw, b, N, C, OC);
    same(&out, "bf16 matmul_forward");
    dev_matmul_backward(dx.d, dw.d, db.d, dyd.d, xd.d, wd.d, N, C, OC);
    matmul_backward(dx.h, dw.h, NULL, rdy, rx, rw, N, C, OC);
    matmul_backward(NULL, NULL, db.h, dy, NULL, NULL, N, C, OC); /* dbias: the fp32 dout */
    same(&dx, "bf16 matmul_backward dinp");
    same(&dw, "bf16 matmul_backward dweight");
    same(&db, "bf16 matmul_backward dbias");
    /* one gradient at a time, as the tensor-parallel layers call it (no inp for dinp) */
    dev_matmul_backward(dx2.d, NULL, NULL, dyd.d, NULL, wd.d, N, C, OC);
    dev_matmul_backward(NULL, dw2.d, NULL, dyd.d, xd.d, NULL, N, C, OC);
    matmul_backward(dx2.h, dw2.h, NULL, rdy, rx, rw, N, C, OC);
    same(&dx2, "bf16 matmul_backward dinp alone");
    same(&dw2, "bf16 matmul_backward dweight alone");
    /* the products really are bf16: the fp32 forward differs */
    float *fp32 = malloc(N * OC * sizeof(float));
    matmul_forward(fp32, x, w, b, N, C, OC);
    assert_true(memcmp(fp32, out.h, N * OC * sizeof(float)) != 0);
    device_set_matmul_dtype(PREC_FP32, 0);
    assert_int_equal(device_bytes_in_use_of("bf16 matmul operands"), 0);
    pair *all[] = {&xd, &wd, &bd, &dyd, &out, &dx, &dw, &db, &dx2, &dw2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
    free(x), free(w), free(b), free(dy), free(rx), free(rw), free(rdy), free(fp32);
}

static void bf16_products_on_the_cpu_equal_the_hand_rounded_reference(void **state) {
    (void)state;
    bf16_products_equal_the_rounded_reference_here();
    assert_int_equal(device_bytes_in_use(), 0);
}

/* cpu-guarded: the same numbers (bit for bit, as for every kernel), and the casts into the
 * scratch run with the guard open (a host touch would fault). */
static void bf16_products_on_guarded_memory_equal_the_cpu_bit_for_bit(void **state) {
    (void)state;
    guarded_on();
    bf16_products_equal_the_rounded_reference_here();
    guarded_off();
}

static void grow_then_overflow(const void *arg) {
    (void)arg;
    device_set_matmul_dtype(PREC_BF16, dev_matmul_operand_elems(4, 4, 4));
    device_set_matmul_dtype(PREC_BF16, 1); /* a smaller request keeps the larger scratch */
    float x[64] = {0}, w[64] = {0}, y[64];
    dev_matmul_forward(y, x, w, NULL, 4, 4, 4);
    dev_matmul_forward(y, x, w, NULL, 8, 4, 4); /* 8·4 + 4·4 = 48 > 32: too large */
    exit(0);
}

static void a_bf16_product_larger_than_the_scratch_dies_naming_it(void **state) {
    (void)state;
    char out[1024];
    assert_int_not_equal(run_in_child(grow_then_overflow, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "a product of 48 operand values, but the scratch holds 32"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_parse_both_ways),
        cmocka_unit_test(cpu_device_memory_is_plain_host_memory),
        cmocka_unit_test(guarded_memory_round_trips_and_is_owned),
        cmocka_unit_test(host_access_to_guarded_memory_faults_and_says_why),
        cmocka_unit_test(shutting_down_with_live_device_memory_is_an_error),
        cmocka_unit_test(cuda_without_a_gpu_is_refused_with_a_reason),
        cmocka_unit_test(markers_on_the_cpu_devices_are_the_host_clock),
        cmocka_unit_test(every_kernel_on_guarded_memory_equals_the_cpu_kernel),
        cmocka_unit_test(bf16_products_round_their_operands_by_hand_example),
        cmocka_unit_test(bf16_products_on_the_cpu_equal_the_hand_rounded_reference),
        cmocka_unit_test(bf16_products_on_guarded_memory_equal_the_cpu_bit_for_bit),
        cmocka_unit_test(a_bf16_product_larger_than_the_scratch_dies_naming_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
