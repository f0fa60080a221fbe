/* sampler_test.c — the sampling rules on one shard (the multi-rank exchange is exercised by
 * generate_test, where every layout must print the serial text).
 *
 * - greedy picks the largest real logit, the lowest index on a tie, never a padding entry;
 * - top-k 1 and a tiny top-p are greedy at any temperature;
 * - Gumbel-max and top-k (k = V) both draw with softmax(logit / T) frequencies;
 * - the same seed and step give the same token; bad settings are named;
 * - a real logit that is not finite stops generation with one line naming the token, whatever
 *   the sampling rule, where it used to end in the internal check "picked a padding token".
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/infer/sampler.h"
#include "tests/support/testing.h"

enum { V = 8, PADDED = 10 };
static const float k_logits[PADDED] = {0.5f,  2.0f, -1.0f, 2.0f, 1.0f, 0.0f,
                                       -3.0f, 1.5f, 9.0f,  9.0f}; /* the last two are padding */

static void greedy_takes_the_first_largest_real_logit(void **state) {
    (void)state;
    sampler_config s = {0.0f, 0, 1.0f, 1};
    for (uint64_t step = 0; step < 5; step++)
        assert_int_equal(sampler_pick(&s, k_logits, PADDED, 0, V, step, NULL), 1);
    /* a shard that starts at global index 4 names global indices */
    assert_int_equal(sampler_pick(&s, k_logits + 4, 4, 4, V, 0, NULL), 7);
}

static void top_k_one_and_a_tiny_top_p_are_greedy(void **state) {
    (void)state;
    sampler_config k1 = {1.5f, 1, 1.0f, 7}, p = {1.5f, 0, 1e-6f, 7};
    for (uint64_t step = 0; step < 20; step++) {
        assert_int_equal(sampler_pick(&k1, k_logits, PADDED, 0, V, step, NULL), 1);
        assert_int_equal(sampler_pick(&p, k_logits, PADDED, 0, V, step, NULL), 1);
    }
}

static void draws_follow_the_softmax(void **state) {
    (void)state;
    const float temp = 2.0f;
    double want[V], z = 0.0;
    for (int i = 0; i < V; i++) z += (want[i] = exp(k_logits[i] / temp));
    for (int i = 0; i < V; i++) want[i] /= z;
    const sampler_config rules[3] = {
        {temp, 0, 1.0f, 3}, {temp, V, 1.0f, 3}, {temp, 0, 0.9999999f, 3}};
    const char *names[3] = {"gumbel-max", "top-k = V", "top-p ~ 1"};
    for (int r = 0; r < 3; r++) {
        enum { DRAWS = 20000 };
        double got[V] = {0};
        for (uint64_t step = 0; step < DRAWS; step++) {
            int32_t t = sampler_pick(&rules[r], k_logits, PADDED, 0, V, step, NULL);
            assert_true(t >= 0 && t < V);
            got[t] += 1.0 / DRAWS;
        }
        for (int i = 0; i < V; i++)
            if (fabs(got[i] - want[i]) > 0.015)
                fail_msg("%s: token %d drawn %.4f of the time, softmax says %.4f", names[r], i,
                         got[i], want[i]);
    }
}

static void top_k_and_top_p_keep_only_their_set(void **state) {
    (void)state;
    sampler_config k2 = {1.0f, 2, 1.0f, 5}; /* tokens 1 and 3 (both 2.0) */
    sampler_config p = {1.0f, 0, 0.5f, 5};  /* mass of 1 and 3 is above half */
    for (uint64_t step = 0; step < 200; step++) {
        int32_t a = sampler_pick(&k2, k_logits, PADDED, 0, V, step, NULL);
        int32_t b = sampler_pick(&p, k_logits, PADDED, 0, V, step, NULL);
        assert_true(a == 1 || a == 3);
        assert_true(b == 1 || b == 3);
    }
}

static void the_same_seed_and_step_give_the_same_token(void **state) {
    (void)state;
    sampler_config a = {1.0f, 0, 1.0f, 42}, b = {1.0f, 0, 1.0f, 43};
    int differ = 0;
    for (uint64_t step = 0; step < 50; step++) {
        int32_t x = sampler_pick(&a, k_logits, PADDED, 0, V, step, NULL);
        assert_int_equal(x, sampler_pick(&a, k_logits, PADDED, 0, V, step, NULL));
        differ += x != sampler_pick(&b, k_logits, PADDED, 0, V, step, NULL);
    }
    assert_true(differ > 0);
}

static void bad_settings_are_named(void **state) {
    (void)state;
    char err[256];
    sampler_config ok = {0.7f, 40, 0.9f, 1};
    assert_true(sampler_config_check(&ok, 256, err, sizeof err));
    sampler_config p0 = {1.0f, 0, 0.0f, 1}, p2 = {1.0f, 0, 1.5f, 1}, t = {-1.0f, 0, 1.0f, 1},
                   k = {1.0f, 300, 1.0f, 1};
    assert_false(sampler_config_check(&p0, 256, err, sizeof err));
    assert_non_null(strstr(err, "--top-p 0 must be in (0, 1]"));
    assert_false(sampler_config_check(&p2, 256, err, sizeof err));
    assert_non_null(strstr(err, "--top-p 1.5"));
    assert_false(sampler_config_check(&t, 256, err, sizeof err));
    assert_non_null(strstr(err, "--temperature -1"));
    assert_false(sampler_config_check(&k, 256, err, sizeof err));
    assert_non_null(strstr(err, "--top-k 300"));
    sampler_config tiny = {1e-30f, 0, 1.0f, 1};
    assert_false(sampler_config_check(&tiny, 256, err, sizeof err));
    assert_non_null(strstr(err, "must be 0 (greedy) or at least 0.01"));
}

typedef struct {
    sampler_config s;
    float bad; /* put at real token 5 */
} nonfinite_case;

static void pick_with_a_bad_logit(const void *arg) {
    const nonfinite_case *k = arg;
    float logits[PADDED];
    memcpy(logits, k_logits, sizeof logits);
    logits[5] = k->bad;
    printf("picked %d\n", (int)sampler_pick(&k->s, logits, PADDED, 0, V, 2, NULL));
}

static void a_logit_that_is_not_finite_stops_generation(void **state) {
    (void)state;
    const sampler_config rules[4] = {
        {0.0f, 0, 1.0f, 1}, {1.0f, 0, 1.0f, 1}, {1.0f, 3, 1.0f, 1}, {1.0f, 0, 0.9f, 1}};
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    char out[4096];
    for (int r = 0; r < 4; r++)
        for (int b = 0; b < 3; b++) {
            const nonfinite_case k = {rules[r], bad[b]};
            assert_int_equal(run_in_child(pick_with_a_bad_logit, &k, out, sizeof out), 1);
            if (!strstr(out, "trident generate: the logit of token 5 is not finite at generation "
                             "step 2"))
                fail_msg("rule %d, logit %g: %s", r, (double)bad[b], out);
            assert_null(strstr(out, "padding"));
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(greedy_takes_the_first_largest_real_logit),
        cmocka_unit_test(top_k_one_and_a_tiny_top_p_are_greedy),
        cmocka_unit_test(draws_follow_the_softmax),
        cmocka_unit_test(top_k_and_top_p_keep_only_their_set),
        cmocka_unit_test(the_same_seed_and_step_give_the_same_token),
        cmocka_unit_test(bad_settings_are_named),
        cmocka_unit_test(a_logit_that_is_not_finite_stops_generation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
