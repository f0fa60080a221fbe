/* groups_test.c — the pure group arithmetic: the worked example exactly, invariants over
 * many layouts and both rank orders, and the messages for bad layouts. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "src/runtime/groups.h"
#include "tests/support/testing.h"

static pg_layout make(int world, int tp, int pp, const char *order) {
    pg_layout l;
    char err[256];
    if (!pg_layout_make(&l, world, tp, pp, 1, order, err, sizeof err)) fail_msg("%s", err);
    return l;
}

/* All groups of a kind, flattened, compared with the expected list. */
static void expect_groups(const pg_layout *l, pg_kind kind, int ngroups, int size,
                          const int *want) {
    assert_int_equal(pg_num_groups(l, kind), ngroups);
    assert_int_equal(pg_group_size(l, kind), size);
    int m[64];
    for (int g = 0; g < ngroups; g++) {
        pg_group_members(l, kind, g, m);
        for (int i = 0; i < size; i++) {
            if (m[i] != want[g * size + i])
                fail_msg("%s group %d member %d: got %d want %d", pg_kind_name(kind), g, i, m[i],
                         want[g * size + i]);
        }
    }
}

static void worked_example_16_ranks_tp2_pp4_matches_megatron(void **state) {
    (void)state;
    pg_layout l = make(16, 2, 4, "tp-dp-pp");
    assert_int_equal(l.dp, 2);
    static const int tp[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const int dp[] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
    static const int pp[] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
    static const int mp[] = {0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15};
    static const int emb[] = {0, 12, 1, 13, 2, 14, 3, 15};
    expect_groups(&l, PG_TP, 8, 2, tp);
    expect_groups(&l, PG_DP, 8, 2, dp);
    expect_groups(&l, PG_PP, 4, 4, pp);
    expect_groups(&l, PG_MP, 2, 8, mp);
    expect_groups(&l, PG_EMBEDDING, 4, 2, emb);
}

static void rank_9_of_worked_example_knows_its_place(void **state) {
    (void)state;
    pg_layout l = make(16, 2, 4, NULL);
    pg_coord c = pg_coord_of(&l, 9);
    assert_int_equal(c.tp, 1);
    assert_int_equal(c.dp, 0);
    assert_int_equal(c.pp, 2);
    int m[8], idx = -1;
    assert_int_equal(pg_group_of(&l, PG_PP, 9, m, &idx), 1);
    assert_int_equal(idx, 2);
    assert_int_equal(m[0], 1);
    assert_int_equal(m[3], 13);
    assert_int_equal(pg_next_pp_rank(&l, 9), 13);
    assert_int_equal(pg_prev_pp_rank(&l, 9), 5);
    assert_int_equal(pg_next_pp_rank(&l, 13), 1); /* wraps */
    assert_int_equal(pg_prev_pp_rank(&l, 1), 13);
    assert_false(pg_is_first_stage(&l, 9));
    assert_false(pg_is_last_stage(&l, 9));
    assert_true(pg_is_last_stage(&l, 13));
    assert_true(pg_is_first_stage(&l, 1));
    /* a middle stage is in no embedding group */
    assert_int_equal(pg_group_of(&l, PG_EMBEDDING, 9, m, &idx), -1);
    assert_int_equal(idx, -1);
    assert_int_equal(pg_group_of(&l, PG_EMBEDDING, 13, m, &idx), 1);
    assert_int_equal(idx, 1);
}

static void tp_pp_dp_order_puts_pipeline_before_data(void **state) {
    (void)state;
    pg_layout l = make(8, 2, 2, "tp-pp-dp");
    /* rank = tp + 2·(pp + 2·dp) */
    static const int pp[] = {0, 2, 1, 3, 4, 6, 5, 7};
    static const int dp[] = {0, 4, 1, 5, 2, 6, 3, 7};
    static const int mp[] = {0, 1, 2, 3, 4, 5, 6, 7};
    expect_groups(&l, PG_PP, 4, 2, pp);
    expect_groups(&l, PG_DP, 4, 2, dp);
    expect_groups(&l, PG_MP, 2, 4, mp);
    assert_string_equal(pg_order_name(l.order), "tp-pp-dp");
}

/* Invariants of one layout. */
static void check_invariants(const pg_layout *l) {
    int n = l->world;
    int *m = malloc(sizeof(int) * (size_t)n), *seen = malloc(sizeof(int) * (size_t)n);
    for (int r = 0; r < n; r++) { /* coordinates <-> rank */
        pg_coord c = pg_coord_of(l, r);
        assert_int_equal(pg_rank_of(l, c), r);
        assert_int_equal(pg_next_pp_rank(l, pg_prev_pp_rank(l, r)), r);
    }
    for (int k = 0; k < PG_NKINDS; k++) {
        pg_kind kind = (pg_kind)k;
        int size = pg_group_size(l, kind), ng = pg_num_groups(l, kind);
        memset(seen, 0, sizeof(int) * (size_t)n);
        int first_prev = -1;
        for (int g = 0; g < ng; g++) {
            pg_group_members(l, kind, g, m);
            assert_true(m[0] > first_prev); /* numbered by first member */
            first_prev = m[0];
            for (int i = 0; i < size; i++) {
                assert_true(i == 0 || m[i] > m[i - 1]);
                seen[m[i]]++;
                int mm[64], idx = -1;
                assert_int_equal(pg_group_of(l, kind, m[i], mm, &idx), g);
                assert_int_equal(idx, i);
                assert_memory_equal(mm, m, sizeof(int) * (size_t)size);
            }
            if (kind == PG_TP) /* contiguous ranks */
                for (int i = 0; i < size; i++) assert_int_equal(m[i], m[0] + i);
        }
        for (int r = 0; r < n; r++) {
            if (kind == PG_EMBEDDING) {
                bool end = pg_is_first_stage(l, r) || pg_is_last_stage(l, r);
                assert_int_equal(seen[r], end ? 1 : 0);
            } else {
                assert_int_equal(seen[r], 1); /* exactly one group per kind */
            }
        }
    }
    /* mp × dp covers the world: dp replicas (mp groups) of tp·pp ranks each, and a rank's
     * index in its dp group names its replica. */
    assert_int_equal(pg_num_groups(l, PG_MP) * pg_group_size(l, PG_MP), n);
    assert_int_equal(pg_num_groups(l, PG_MP), l->dp);
    for (int r = 0; r < n; r++) {
        int idx = -1;
        int mpg = pg_group_of(l, PG_MP, r, NULL, NULL);
        pg_group_of(l, PG_DP, r, NULL, &idx);
        assert_int_equal(mpg, idx); /* the dp index names the replica = the mp group */
    }
    free(m);
    free(seen);
}

static void many_layouts_keep_every_invariant(void **state) {
    (void)state;
    static const int sizes[] = {1, 2, 4, 8};
    const char *orders[] = {"tp-dp-pp", "tp-pp-dp"};
    int checked = 0;
    for (int world = 1; world <= 64; world++)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                for (int o = 0; o < 2; o++) {
                    int tp = sizes[a], pp = sizes[b];
                    if (world % (tp * pp)) continue;
                    pg_layout l = make(world, tp, pp, orders[o]);
                    check_invariants(&l);
                    checked++;
                }
    assert_true(checked > 100);
}

static void bad_layouts_are_rejected_with_the_rule(void **state) {
    (void)state;
    pg_layout l;
    char err[256];
    assert_false(pg_layout_make(&l, 8, 3, 1, 1, NULL, err, sizeof err));
    assert_string_equal(err, "world size 8 is not divisible by tensor-model-parallel-size 3 × "
                             "pipeline-model-parallel-size 1");
    assert_false(pg_layout_make(&l, 4, 4, 2, 1, NULL, err, sizeof err));
    assert_non_null(strstr(err, "world size 4 is not divisible by tensor-model-parallel-size 4"));
    assert_false(pg_layout_make(&l, 8, 0, 1, 1, NULL, err, sizeof err));
    assert_non_null(strstr(err, "at least 1"));
    assert_non_null(strstr(err, "tensor-model-parallel-size 0"));
    assert_false(pg_layout_make(&l, 8, 2, 1, 2, NULL, err, sizeof err));
    assert_non_null(strstr(
        err, "virtual-pipeline-model-parallel-size 2 needs pipeline-model-parallel-size > 1"));
    assert_false(pg_layout_make(&l, 8, 2, 2, 1, "dp-tp-pp", err, sizeof err));
    assert_string_equal(err, "rank order 'dp-tp-pp' is not one of tp-dp-pp, tp-pp-dp");
    assert_true(pg_layout_make(&l, 8, 2, 2, 2, "tp-pp-dp", err, sizeof err));
    assert_int_equal(l.vpp, 2);
}

static void one_stage_makes_each_rank_its_own_embedding_group(void **state) {
    (void)state;
    pg_layout l = make(4, 2, 1, NULL);
    static const int emb[] = {0, 1, 2, 3};
    expect_groups(&l, PG_EMBEDDING, 4, 1, emb);
    assert_int_equal(pg_next_pp_rank(&l, 3), 3);
    assert_true(pg_is_first_stage(&l, 3) && pg_is_last_stage(&l, 3));
}

/* zbv's V puts the first and the last stage on pipeline rank 0: the embedding group is that
 * rank alone, the last stage is pp rank 0, pp ranks > 0 are in no embedding group. */
static void the_v_placement_keeps_the_embedding_on_pipeline_rank_0(void **state) {
    (void)state;
    pg_layout l = make(8, 2, 2, NULL);
    l.v_placement = true;
    assert_int_equal(pg_group_size(&l, PG_EMBEDDING), 1);
    assert_int_equal(pg_num_groups(&l, PG_EMBEDDING), 4);
    for (int r = 0; r < 8; r++) {
        int member = -1, index = -1;
        int g = pg_group_of(&l, PG_EMBEDDING, r, &member, &index);
        const bool first = pg_coord_of(&l, r).pp == 0;
        assert_int_equal(g >= 0, first);
        if (first) assert_true(member == r && index == 0);
        assert_int_equal(pg_is_last_stage(&l, r), first);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        /* rank -> coordinates first: exercise 1's first failure names the student's function */
        cmocka_unit_test(rank_9_of_worked_example_knows_its_place),
        cmocka_unit_test(worked_example_16_ranks_tp2_pp4_matches_megatron),
        cmocka_unit_test(tp_pp_dp_order_puts_pipeline_before_data),
        cmocka_unit_test(many_layouts_keep_every_invariant),
        cmocka_unit_test(bad_layouts_are_rejected_with_the_rule),
        cmocka_unit_test(one_stage_makes_each_rank_its_own_embedding_group),
        cmocka_unit_test(the_v_placement_keeps_the_embedding_on_pipeline_rank_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
