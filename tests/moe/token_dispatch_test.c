/* token_dispatch_test.c — the dispatch plan (a counting sort by expert) against the sort it
 * replaced, and its work bounded by the pairs and the experts: the loop steps it reports, and
 * those of the source-to-expert reordering, stay within c·(pairs + E) at 2048 experts with
 * top-k = E (issue 31: the old sort looped over every expert for every pair). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/moe/token_dispatch.h"
#include "tests/support/testing.h"

static uint64_t g_rng = 88172645463325252ULL;
static uint64_t next_rand(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* The plan as it was: keep or drop in pair order, then every expert scans every pair. */
static size_t plan_by_scans(int32_t *slot, int32_t *perm, int64_t *kept, int64_t *dropped,
                            const int32_t *expert, size_t N, size_t E, int K, size_t capacity) {
    size_t pairs = N * (size_t)K;
    memset(kept, 0, E * sizeof(int64_t));
    *dropped = 0;
    for (size_t i = 0; i < pairs; i++) {
        int32_t e = expert[i];
        slot[i] = (size_t)kept[e] < capacity ? 0 : -1;
        if (slot[i] == 0) kept[e]++;
        else (*dropped)++;
    }
    size_t M = 0;
    for (size_t e = 0; e < E; e++)
        for (size_t i = 0; i < pairs; i++)
            if (expert[i] == (int32_t)e && slot[i] >= 0) {
                slot[i] = (int32_t)M;
                perm[M++] = (int32_t)i;
            }
    return M;
}

/* The reordering as it was: each block's place summed from the counts before it. */
static void order_by_sums(int32_t *order, const int64_t *recv_cnt, int P, int El) {
    size_t src = 0;
    for (int s = 0; s < P; s++)
        for (int l = 0; l < El; l++) {
            size_t dst = 0;
            for (int l2 = 0; l2 < l; l2++)
                for (int s2 = 0; s2 < P; s2++) dst += (size_t)recv_cnt[s2 * El + l2];
            for (int s2 = 0; s2 < s; s2++) dst += (size_t)recv_cnt[s2 * El + l];
            for (int64_t i = 0; i < recv_cnt[s * El + l]; i++) order[src++] = (int32_t)dst++;
        }
}

/* N tokens, K distinct experts each out of E, at a capacity; both plans must agree. */
static void plan_case(size_t N, size_t E, int K, size_t capacity) {
    size_t pairs = N * (size_t)K;
    int32_t *expert = calloc(pairs + 1, sizeof(int32_t)),
            *slot = calloc(pairs + 1, sizeof(int32_t));
    int32_t *perm = calloc(pairs + 1, sizeof(int32_t)), *slot0 = calloc(pairs + 1, sizeof(int32_t));
    int32_t *perm0 = calloc(pairs + 1, sizeof(int32_t));
    int64_t *kept = malloc(E * sizeof(int64_t)), *kept0 = malloc(E * sizeof(int64_t));
    for (size_t t = 0; t < N; t++) { /* K distinct experts per token, from a random one on */
        size_t first = (size_t)(next_rand() % E);
        for (int k = 0; k < K; k++)
            expert[t * (size_t)K + (size_t)k] = (int32_t)((first + (size_t)k) % E);
    }
    int64_t dropped, dropped0;
    size_t M = token_permute_plan(slot, perm, kept, &dropped, expert, N, E, K, capacity, NULL);
    size_t M0 = plan_by_scans(slot0, perm0, kept0, &dropped0, expert, N, E, K, capacity);
    assert_int_equal(M, M0);
    assert_int_equal(dropped, dropped0);
    assert_memory_equal(slot, slot0, pairs * sizeof(int32_t));
    assert_memory_equal(perm, perm0, M * sizeof(int32_t));
    assert_memory_equal(kept, kept0, E * sizeof(int64_t));
    free(expert), free(slot), free(perm), free(slot0), free(perm0), free(kept), free(kept0);
}

static void plan_equals_the_scan_per_expert_stable_in_token_order(void **state) {
    (void)state;
    plan_case(32, 8, 2, SIZE_MAX);
    plan_case(32, 8, 2, 3); /* drops */
    plan_case(17, 5, 1, 1);
    plan_case(9, 64, 64, SIZE_MAX); /* top-k = E */
    plan_case(9, 64, 64, 4);
    plan_case(1, 1, 1, SIZE_MAX);
    plan_case(0, 4, 2, SIZE_MAX); /* no tokens */
}

static void plan_work_is_linear_in_pairs_and_experts(void **state) {
    (void)state;
    enum { N = 32, E = 2048, K = 2048 };
    const size_t pairs = (size_t)N * K;
    int32_t *expert = calloc(pairs + 1, sizeof(int32_t)),
            *slot = calloc(pairs + 1, sizeof(int32_t));
    int32_t *perm = calloc(pairs + 1, sizeof(int32_t));
    int64_t *kept = malloc(E * sizeof(int64_t)), dropped;
    for (size_t t = 0; t < N; t++)
        for (size_t k = 0; k < K; k++) expert[t * K + k] = (int32_t)((t + k) % E);
    size_t steps = 0;
    size_t M = token_permute_plan(slot, perm, kept, &dropped, expert, N, E, K, SIZE_MAX, &steps);
    assert_int_equal(M, pairs);
    assert_true(steps > 0 && steps <= 4 * (pairs + E));
    for (size_t i = 0; i < M; i++) /* rows in expert order, token order inside */
        if (i > 0) {
            int32_t a = perm[i - 1], b = perm[i];
            assert_true(expert[a] < expert[b] || (expert[a] == expert[b] && a < b));
        }
    free(expert), free(slot), free(perm), free(kept);
}

static void expert_order_equals_the_sums_and_its_work_is_linear(void **state) {
    (void)state;
    const int shapes[][2] = {{1, 4}, {2, 3}, {4, 2}, {3, 5}, {1, 2048}, {4, 512}};
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        int P = shapes[c][0], El = shapes[c][1];
        int64_t *cnt = malloc((size_t)P * (size_t)El * sizeof(int64_t));
        size_t R = 0, cursor[4];
        for (int i = 0; i < P * El; i++) R += (size_t)(cnt[i] = (int64_t)(next_rand() % 4));
        int32_t *got = malloc((R + 1) * sizeof(int32_t)), *want = malloc((R + 1) * sizeof(int32_t));
        size_t steps = token_expert_order(got, cnt, P, El, cursor);
        order_by_sums(want, cnt, P, El);
        assert_memory_equal(got, want, R * sizeof(int32_t));
        assert_true(steps <= 3 * ((size_t)P * (size_t)El + R));
        free(cnt), free(got), free(want);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_equals_the_scan_per_expert_stable_in_token_order),
        cmocka_unit_test(plan_work_is_linear_in_pairs_and_experts),
        cmocka_unit_test(expert_order_equals_the_sums_and_its_work_is_linear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
