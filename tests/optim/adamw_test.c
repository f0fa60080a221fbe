/* adamw_test.c — AdamW, the learning-rate schedule and the clipping factor against numbers
 * worked out by hand in this file (the arithmetic is in the comments), not against another
 * run of the same code.
 *
 * The configuration is the one the trainer builds (src/train/trainer.c), small enough to do
 * on paper: peak lr 0.1, floor 0.01, 2 warm-up iterations, cosine decay ending at 6;
 * beta1 0.9, beta2 0.95, eps 1e-8, weight decay 0.1, gradients clipped to norm 1.
 *
 * Not here: the distributed optimizer (tests/train/ checks that every layout steps like one
 * process) and the device kernels (tests/device/, tests/kernels_cuda/ compare them with this).
 */
#include <math.h>
#include <stdio.h>

#include "src/optim/adamw.h"
#include "tests/support/testing.h"

static const adamw_config k_cfg = {
    .lr = 0.1f,
    .min_lr = 0.01f,
    .warmup_iters = 2,
    .decay_iters = 6,
    .beta1 = 0.9f,
    .beta2 = 0.95f,
    .eps = 1e-8f,
    .weight_decay = 0.1f,
    .clip_grad = 1.0f,
};

static void expect_float(double got, double want, double tol, const char *what) {
    if (fabs(got - want) > tol)
        fail_msg("%s: got %.9g, want %.9g (tolerance %g)", what, got, want, tol);
}

/* it ≤ warmup: lr · it / warmup.  warmup < it < decay: r = (it − warmup) / (decay − warmup),
 * lr(it) = min_lr + ½ (1 + cos πr) (lr − min_lr), with lr − min_lr = 0.09.  it ≥ decay: min_lr. */
static void lr_warms_up_linearly_then_decays_along_a_cosine_to_the_floor(void **state) {
    (void)state;
    const double want[8] = {
        0.0,  /* it 0: 0.1 · 0/2 (before the first step) */
        0.05, /* it 1: 0.1 · 1/2 */
        0.1,  /* it 2: 0.1 · 2/2, the peak */
        0.0868198, /* it 3: r = 1/4, ½(1 + cos π/4) = ½(1 + 0.7071068) = 0.8535534; 0.01 + 0.0768198 */
        0.055, /* it 4: r = 1/2, ½(1 + cos π/2) = 0.5;                        0.01 + 0.045 */
        0.0231802, /* it 5: r = 3/4, ½(1 + cos 3π/4) = ½(1 − 0.7071068) = 0.1464466; 0.01 + 0.0131802 */
        0.01, /* it 6: the end of the decay: the floor */
        0.01, /* it 7: after it, still the floor */
    };
    for (int it = 0; it < 8; it++) {
        char what[32];
        snprintf(what, sizeof what, "lr at iteration %d", it);
        expect_float(adamw_lr_at(&k_cfg, it), want[it], 1e-7, what);
    }
}

/* With no warm-up the cosine starts at iteration 0: r = it / decay. */
static void without_warmup_the_cosine_starts_at_the_peak(void **state) {
    (void)state;
    adamw_config c = k_cfg;
    c.warmup_iters = 0;
    c.decay_iters = 4;
    expect_float(adamw_lr_at(&c, 0), 0.1, 1e-7, "it 0: r = 0, the peak");
    expect_float(adamw_lr_at(&c, 2), 0.055, 1e-7, "it 2: r = 1/2, 0.01 + 0.5 · 0.09");
    expect_float(adamw_lr_at(&c, 4), 0.01, 1e-7, "it 4: the floor");
}

/* factor = clip / (norm + 1e-6) when norm > clip, else 1; clip 0 switches clipping off. */
static void clipping_scales_only_a_norm_above_the_limit(void **state) {
    (void)state;
    expect_float(adamw_clip_factor(&k_cfg, 0.5), 1.0, 0, "norm 0.5 < 1: untouched");
    expect_float(adamw_clip_factor(&k_cfg, 1.0), 1.0, 0, "norm 1 = limit: untouched (not above)");
    expect_float(adamw_clip_factor(&k_cfg, 5.0), 0.19999996, 1e-8, "norm 5: 1 / (5 + 1e-6)");
    expect_float(adamw_clip_factor(&k_cfg, 1e9), 1e-9, 1e-15, "norm 1e9: 1 / (1e9 + 1e-6)");
    expect_float(adamw_clip_factor(&k_cfg, NAN), 1.0, 0, "a NaN norm is left to the loss check");
    adamw_config off = k_cfg;
    off.clip_grad = 0.0f;
    expect_float(adamw_clip_factor(&off, 5.0), 1.0, 0, "clip 0: no clipping");
}

/* Three training steps on three parameters, the way the optimizer takes them: lr from the
 * schedule, the clipping factor from the global gradient norm, weight decay on the two
 * "matrix" entries w[0], w[1] and not on the "bias" b (wd = 0 for vectors).
 *
 *   m = 0.9 m + 0.1 g      v = 0.95 v + 0.05 g²      (g already multiplied by the clip factor)
 *   m̂ = m / (1 − 0.9^t)    v̂ = v / (1 − 0.95^t)
 *   p ← p − lr · (m̂ / (√v̂ + 1e-8) + wd · p)          (eps changes nothing at 7 digits here)
 *
 *            gradients (w0, w1, b)   norm                 clip factor   lr         1−0.9^t  1−0.95^t
 *   step 1   (0.3, 0, −0.4)          √(.09+.16) = 0.5     1             0.05       0.1      0.05
 *   step 2   (0, 3, 4)               √(9+16)    = 5       1/(5+1e-6)≈.2 0.1        0.19     0.0975
 *   step 3   (−0.6, 0, 0.8)          √(.36+.64) = 1       1 (not > 1)   0.0868198  0.271    0.142625
 *
 * Step 1 (bias correction makes the first step ±lr per parameter, plus decay):
 *   w0: m = 0.03,  v = 0.05·0.09 = 0.0045;  m̂ = 0.3,  √v̂ = √0.09 = 0.3;  m̂/√v̂ = 1
 *       p = 1 − 0.05·(1 + 0.1·1) = 1 − 0.055 = 0.945
 *   w1: g = 0, m = v = 0: only decay:  p = −2 − 0.05·(0 + 0.1·(−2)) = −2 + 0.01 = −1.99
 *   b:  m = −0.04, v = 0.05·0.16 = 0.008;  m̂ = −0.4,  √v̂ = 0.4;  m̂/√v̂ = −1
 *       p = 0.5 − 0.05·(−1) = 0.55
 * Step 2 (clipped: g = (0, 0.6, 0.8)):
 *   w0: m = 0.9·0.03 = 0.027,  v = 0.95·0.0045 = 0.004275
 *       m̂ = 0.027/0.19 = 0.1421053,  v̂ = 0.004275/0.0975 = 0.04384615,  √v̂ = 0.2093947
 *       m̂/√v̂ = 0.6786477;  p = 0.945 − 0.1·(0.6786477 + 0.0945) = 0.945 − 0.07731477 = 0.8676852
 *   w1: m = 0.1·0.6 = 0.06,  v = 0.05·0.36 = 0.018
 *       m̂ = 0.06/0.19 = 0.3157895,  v̂ = 0.018/0.0975 = 0.1846154,  √v̂ = 0.4296689
 *       m̂/√v̂ = 0.7349600;  p = −1.99 − 0.1·(0.7349600 − 0.199) = −1.99 − 0.0535960 = −2.0435960
 *   b:  m = 0.9·(−0.04) + 0.08 = 0.044,  v = 0.95·0.008 + 0.05·0.64 = 0.0076 + 0.032 = 0.0396
 *       m̂ = 0.044/0.19 = 0.2315789,  v̂ = 0.0396/0.0975 = 0.4061538,  √v̂ = 0.6373020
 *       m̂/√v̂ = 0.3633740;  p = 0.55 − 0.1·0.3633740 = 0.5136626
 * Step 3 (lr on the cosine):
 *   w0: m = 0.9·0.027 − 0.06 = −0.0357,  v = 0.95·0.004275 + 0.05·0.36 = 0.00406125 + 0.018 = 0.02206125
 *       m̂ = −0.0357/0.271 = −0.1317343,  v̂ = 0.02206125/0.142625 = 0.1546801,  √v̂ = 0.3932939
 *       m̂/√v̂ = −0.3349513;  p = 0.8676852 − 0.0868198·(−0.3349513 + 0.08676852)
 *                             = 0.8676852 + 0.0868198·0.2481828 = 0.8676852 + 0.0215472 = 0.8892324
 *   w1: m = 0.9·0.06 = 0.054,  v = 0.95·0.018 = 0.0171
 *       m̂ = 0.054/0.271 = 0.1992620,  v̂ = 0.0171/0.142625 = 0.1198948,  √v̂ = 0.3462583
 *       m̂/√v̂ = 0.5754721;  p = −2.043596 − 0.0868198·(0.5754721 − 0.2043596)
 *                            = −2.043596 − 0.0868198·0.3711125 = −2.043596 − 0.0322199 = −2.0758159
 *   b:  m = 0.9·0.044 + 0.08 = 0.1196,  v = 0.95·0.0396 + 0.032 = 0.03762 + 0.032 = 0.06962
 *       m̂ = 0.1196/0.271 = 0.4413284,  v̂ = 0.06962/0.142625 = 0.4881332,  √v̂ = 0.6986653
 *       m̂/√v̂ = 0.6316736;  p = 0.5136626 − 0.0868198·0.6316736 = 0.5136626 − 0.0548418 = 0.4588208
 */
static void
three_steps_with_warmup_cosine_clipping_and_decay_match_the_hand_computation(void **state) {
    (void)state;
    float w[2] = {1.0f, -2.0f}, b[1] = {0.5f}; /* decayed "matrix", undecayed "bias" */
    float mw[2] = {0}, vw[2] = {0}, mb[1] = {0}, vb[1] = {0};
    const float grads[3][3] = {{0.3f, 0.0f, -0.4f}, {0.0f, 3.0f, 4.0f}, {-0.6f, 0.0f, 0.8f}};
    const double norms[3] = {0.5, 5.0, 1.0}; /* worked out in the table above */
    const float want_p[3][3] = {
        {0.945f, -1.99f, 0.55f},
        {0.8676852f, -2.0435960f, 0.5136626f},
        {0.8892324f, -2.0758159f, 0.4588208f},
    };
    const float want_lr[3] = {0.05f, 0.1f, 0.0868198f};
    const float want_clip[3] = {1.0f, 0.2f, 1.0f};
    for (int t = 1; t <= 3; t++) {
        const float *g = grads[t - 1];
        float lr = adamw_lr_at(&k_cfg, t);
        float clip = adamw_clip_factor(&k_cfg, norms[t - 1]);
        expect_float(lr, want_lr[t - 1], 1e-7, "lr of the step");
        expect_float(clip, want_clip[t - 1], 1e-6, "clip factor of the step");
        adamw_update(w, g, mw, vw, 2, &k_cfg, lr, k_cfg.weight_decay, t, clip);
        adamw_update(b, g + 2, mb, vb, 1, &k_cfg, lr, 0.0f, t, clip);
        const float got[3] = {w[0], w[1], b[0]};
        char what[48];
        snprintf(what, sizeof what, "parameters after step %d", t);
        expect_close(got, want_p[t - 1], 3, 1e-6, 1e-6, what);
    }
    /* The moments after step 3, from the lines "m = ..., v = ..." above. */
    const float got_m[3] = {mw[0], mw[1], mb[0]}, got_v[3] = {vw[0], vw[1], vb[0]};
    const float want_m[3] = {-0.0357f, 0.054f, 0.1196f},
                want_v[3] = {0.02206125f, 0.0171f, 0.06962f};
    expect_close(got_m, want_m, 3, 1e-7, 1e-6, "first moments after step 3");
    expect_close(got_v, want_v, 3, 1e-8, 1e-6, "second moments after step 3");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lr_warms_up_linearly_then_decays_along_a_cosine_to_the_floor),
        cmocka_unit_test(without_warmup_the_cosine_starts_at_the_peak),
        cmocka_unit_test(clipping_scales_only_a_norm_above_the_limit),
        cmocka_unit_test(
            three_steps_with_warmup_cosine_clipping_and_decay_match_the_hand_computation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
