/* zigzag_test.c — the zig-zag layout of src/cp/zigzag.h: every position on exactly one rank,
 * two chunks per rank (a front one and its mirror at the back), slicing that undoes itself,
 * and flag checks that name the flags. Pure numbers: no MPI. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/cp/zigzag.h"
#include "tests/support/testing.h"

static void every_position_is_held_by_exactly_one_rank(void **state) {
    (void)state;
    const size_t Ts[] = {2, 8, 16, 48};
    for (int cp = 1; cp <= 8; cp *= 2) {
        for (size_t k = 0; k < sizeof Ts / sizeof Ts[0]; k++) {
            const size_t T = Ts[k];
            if (cp > 1 && T % (2 * (size_t)cp) != 0) continue;
            int *seen = calloc(T, sizeof(int));
            for (int r = 0; r < cp; r++)
                for (size_t t = 0; t < T / (size_t)cp; t++) {
                    size_t pos = cp_global_position(r, cp, T, t);
                    assert_true(pos < T);
                    seen[pos]++;
                }
            for (size_t p = 0; p < T; p++) assert_int_equal(seen[p], 1);
            free(seen);
        }
    }
}

static void rank_r_holds_chunk_r_then_chunk_2cp_minus_1_minus_r(void **state) {
    (void)state;
    /* The picture of zigzag.h: cp = 2, T = 8. */
    const size_t want0[] = {0, 1, 6, 7}, want1[] = {2, 3, 4, 5};
    for (size_t t = 0; t < 4; t++) {
        assert_int_equal(cp_global_position(0, 2, 8, t), want0[t]);
        assert_int_equal(cp_global_position(1, 2, 8, t), want1[t]);
    }
    /* cp = 4, T = 32: chunks of 4; rank 1 holds chunks 1 and 6. */
    for (size_t t = 0; t < 8; t++)
        assert_int_equal(cp_global_position(1, 4, 32, t), t < 4 ? 4 + t : 24 + (t - 4));
    /* cp = 1 is the identity, for odd T too. */
    for (size_t t = 0; t < 7; t++) assert_int_equal(cp_global_position(0, 1, 7, t), t);
}

static void slice_then_unslice_rebuilds_the_whole_tensor(void **state) {
    (void)state;
    const size_t B = 3, T = 16, C = 5;
    float *whole = malloc(B * T * C * sizeof(float)), *back = malloc(B * T * C * sizeof(float));
    int32_t *tok = malloc(B * T * sizeof(int32_t));
    for (size_t i = 0; i < B * T * C; i++) whole[i] = (float)i;
    for (size_t i = 0; i < B * T; i++) tok[i] = (int32_t)(1000 + i);
    for (int cp = 1; cp <= 8; cp *= 2) {
        const size_t Tl = T / (size_t)cp;
        float *part = malloc(B * Tl * C * sizeof(float));
        int32_t *tpart = malloc(B * Tl * sizeof(int32_t));
        for (size_t i = 0; i < B * T * C; i++) back[i] = -1.0f;
        for (int r = 0; r < cp; r++) {
            cp_slice_rows(part, whole, B, T, C, r, cp);
            cp_slice_tokens(tpart, tok, B, T, r, cp);
            for (size_t b = 0; b < B; b++)
                for (size_t t = 0; t < Tl; t++) {
                    const size_t g = b * T + cp_global_position(r, cp, T, t);
                    assert_int_equal(tpart[b * Tl + t], tok[g]);
                    for (size_t c = 0; c < C; c++)
                        assert_true(part[(b * Tl + t) * C + c] == whole[g * C + c]);
                }
            cp_unslice_rows(back, part, B, T, C, r, cp);
        }
        expect_close(back, whole, B * T * C, 0, 0, "unsliced from every rank");
        free(part);
        free(tpart);
    }
    free(whole);
    free(back);
    free(tok);
}

static void unslice_writes_only_this_ranks_rows(void **state) {
    (void)state;
    const size_t B = 2, T = 8, C = 3, Tl = 4;
    float whole[2 * 8 * 3], part[2 * 4 * 3];
    for (size_t i = 0; i < B * T * C; i++) whole[i] = -7.0f;
    for (size_t i = 0; i < B * Tl * C; i++) part[i] = 1.0f;
    cp_unslice_rows(whole, part, B, T, C, 0, 2); /* rank 0 of 2: positions 0 1 6 7 */
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            const bool mine = t < 2 || t >= 6;
            for (size_t c = 0; c < C; c++)
                assert_true(whole[(b * T + t) * C + c] == (mine ? 1.0f : -7.0f));
        }
}

static void check_names_both_flags_and_the_rule(void **state) {
    (void)state;
    char err[256] = "";
    assert_true(cp_check(8, 1, err, sizeof err));
    assert_true(cp_check(7, 1, err, sizeof err)); /* cp = 1: any length */
    assert_true(cp_check(8, 4, err, sizeof err));
    assert_true(cp_check(1024, 8, err, sizeof err));

    assert_false(cp_check(12, 4, err, sizeof err)); /* divisible by 4 but not by 8 */
    assert_non_null(strstr(err, "--seq-length 12"));
    assert_non_null(strstr(err, "--context-parallel-size"));
    assert_non_null(strstr(err, "8"));

    err[0] = '\0';
    assert_false(cp_check(9, 2, err, sizeof err));
    assert_non_null(strstr(err, "--seq-length 9"));

    err[0] = '\0';
    assert_false(cp_check(8, 0, err, sizeof err));
    assert_non_null(strstr(err, "--context-parallel-size 0"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_position_is_held_by_exactly_one_rank),
        cmocka_unit_test(rank_r_holds_chunk_r_then_chunk_2cp_minus_1_minus_r),
        cmocka_unit_test(slice_then_unslice_rebuilds_the_whole_tensor),
        cmocka_unit_test(unslice_writes_only_this_ranks_rows),
        cmocka_unit_test(check_names_both_flags_and_the_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
