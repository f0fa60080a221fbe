/* groups_test.c — the pure group arithmetic: the worked examples exactly, invariants over
 * many layouts (with context and expert parallelism too) and both rank orders, every group
 * against a brute-force oracle, and the messages for bad layouts. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "src/runtime/groups.h"
#include "tests/support/testing.h"

static pg_layout make(int world, int tp, int pp, const char *order) {
    pg_layout l;
    char err[256];
    if (!pg_layout_make(&l, world, tp, 1, 1, pp, 1, order, err, sizeof err)) fail_msg("%s", err);
    return l;
}

static pg_layout make_5d(int world, int tp, int cp, int ep, int pp, const char *order) {
    pg_layout l;
    char err[256];
    if (!pg_layout_make(&l, world, tp, cp, ep, pp, 1, order, err, sizeof err)) fail_msg("%s", err);
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

/* Groups across nodes: tp 2 inside nodes of 2 ranks never; tp 4 always; the dp groups of
 * tp 2 × dp 2 on 2-rank nodes always (each pair is one node's rank and the other's). */
static void groups_spanning_nodes_are_counted(void **state) {
    (void)state;
    pg_layout l;
    char err[256];
    int node_of[8], first;
    for (int r = 0; r < 8; r++) node_of[r] = r / 2;
    assert_true(pg_layout_make(&l, 8, 2, 1, 1, 2, 1, "tp-dp-pp", err, sizeof err));
    assert_int_equal(pg_groups_spanning_nodes(&l, PG_TP, node_of, &first), 0);
    assert_int_equal(first, -1);
    assert_int_equal(pg_groups_spanning_nodes(&l, PG_DP, node_of, &first), 4);
    assert_int_equal(first, 0);
    assert_true(pg_layout_make(&l, 8, 4, 1, 1, 2, 1, "tp-dp-pp", err, sizeof err));
    assert_int_equal(pg_groups_spanning_nodes(&l, PG_TP, node_of, &first), 2);
    for (int r = 0; r < 8; r++) node_of[r] = r / 4; /* 4 ranks per node: tp 4 fits */
    assert_int_equal(pg_groups_spanning_nodes(&l, PG_TP, node_of, &first), 0);
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

/* The second worked example of groups.h: tp 2, cp 2, pp 2, dp 2 = ep 2 × edp 1. */
static void worked_example_with_context_and_experts_matches_the_header(void **state) {
    (void)state;
    pg_layout l = make_5d(16, 2, 2, 2, 2, "tp-cp-ep-dp-pp");
    assert_int_equal(l.dp, 2);
    assert_int_equal(l.edp, 1);
    static const int tp[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static const int cp[] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
    static const int dp[] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15};
    static const int pp[] = {0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15};
    static const int mp[] = {0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15};
    static const int dp_cp[] = {0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};
    expect_groups(&l, PG_TP, 8, 2, tp);
    expect_groups(&l, PG_CP, 8, 2, cp);
    expect_groups(&l, PG_DP, 8, 2, dp);
    expect_groups(&l, PG_EP, 8, 2, dp); /* edp 1: the expert group is the whole dp group */
    expect_groups(&l, PG_EDP, 16, 1, tp);
    expect_groups(&l, PG_PP, 8, 2, pp);
    expect_groups(&l, PG_MP, 4, 4, mp);
    expect_groups(&l, PG_EMBEDDING, 8, 2, pp);
    expect_groups(&l, PG_DP_CP, 4, 4, dp_cp);
    expect_groups(&l, PG_EDP_CP, 8, 2, cp);
    expect_groups(&l, PG_TP_CP, 4, 4, tp); /* tp and cp fastest: 4 consecutive ranks */
    assert_string_equal(pg_layout_order_name(&l), "tp-cp-ep-dp-pp");
    assert_string_equal(pg_order_name(l.order), "tp-dp-pp");
    /* rank 13 = 1 + 2·(0 + 2·(1 + 2·1)) */
    pg_coord c = pg_coord_of(&l, 13);
    assert_true(c.tp == 1 && c.cp == 0 && c.dp == 1 && c.pp == 1 && c.ep == 1 && c.edp == 0);
}

/* With edp > 1 an expert group is ep consecutive dp ranks, and edp strides over them:
 * world 16, cp 2, dp 8 = ep 2 × edp 4, so rank = cp + 2·dp and dp = ep + 2·edp. */
static void expert_groups_are_consecutive_data_parallel_ranks(void **state) {
    (void)state;
    pg_layout l = make_5d(16, 1, 2, 2, 1, NULL);
    assert_int_equal(l.edp, 4);
    static const int dp[] = {0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15};
    static const int ep[] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
    static const int edp[] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
    static const int edp_cp[] = {0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15};
    static const int dp_cp[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    expect_groups(&l, PG_DP, 2, 8, dp);
    expect_groups(&l, PG_EP, 8, 2, ep);
    expect_groups(&l, PG_EDP, 4, 4, edp);
    expect_groups(&l, PG_EDP_CP, 2, 8, edp_cp);
    expect_groups(&l, PG_DP_CP, 1, 16, dp_cp);
    /* rank 11: cp 1, dp 5 = ep 1 + 2·edp 2; its index in each group is that coordinate */
    int idx = -1;
    assert_int_equal(pg_group_of(&l, PG_EP, 11, NULL, &idx), 5);
    assert_int_equal(idx, 1);
    assert_int_equal(pg_group_of(&l, PG_EDP, 11, NULL, &idx), 3);
    assert_int_equal(idx, 2);
    assert_int_equal(pg_group_of(&l, PG_CP, 11, NULL, &idx), 5);
    assert_int_equal(idx, 1);
}

/* tp-cp-ep-pp-dp: pipeline right after context, data slowest. */
static void pipeline_before_data_keeps_context_second(void **state) {
    (void)state;
    pg_layout l = make_5d(16, 2, 2, 2, 2, "tp-cp-ep-pp-dp");
    /* rank = tp + 2·(cp + 2·(pp + 2·dp)) */
    static const int pp[] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15};
    static const int dp[] = {0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15};
    static const int dp_cp[] = {0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15};
    expect_groups(&l, PG_PP, 8, 2, pp);
    expect_groups(&l, PG_DP, 8, 2, dp);
    expect_groups(&l, PG_EP, 8, 2, dp);
    expect_groups(&l, PG_DP_CP, 4, 4, dp_cp);
    assert_string_equal(pg_layout_order_name(&l), "tp-cp-ep-pp-dp");
    pg_layout s = make_5d(16, 2, 2, 2, 2, "tp-pp-dp"); /* the short name: the same placement */
    assert_memory_equal(&s, &l, sizeof l);
}

/* Invariants of one layout. */
static void check_invariants(const pg_layout *l) {
    int n = l->world;
    int *m = malloc(sizeof(int) * (size_t)n), *seen = malloc(sizeof(int) * (size_t)n);
    int *mm = malloc(sizeof(int) * (size_t)n);
    for (int r = 0; r < n; r++) { /* coordinates <-> rank */
        pg_coord c = pg_coord_of(l, r);
        assert_int_equal(pg_rank_of(l, c), r);
        assert_int_equal(c.dp, c.ep + l->ep * c.edp);
        assert_true(c.cp >= 0 && c.cp < l->cp && c.ep < l->ep && c.edp < l->edp);
        assert_int_equal(pg_next_pp_rank(l, pg_prev_pp_rank(l, r)), r);
        /* a rank's index in its cp, ep, edp, dp, tp, pp group is that coordinate */
        const pg_kind kinds[6] = {PG_CP, PG_EP, PG_EDP, PG_DP, PG_TP, PG_PP};
        const int coords[6] = {c.cp, c.ep, c.edp, c.dp, c.tp, c.pp};
        for (int k = 0; k < 6; k++) {
            int idx = -1;
            pg_group_of(l, kinds[k], r, NULL, &idx);
            assert_int_equal(idx, coords[k]);
        }
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
                int idx = -1;
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
    /* mp × dp × cp covers the world: dp·cp model replicas (mp groups) of tp·pp ranks each,
     * and a rank's indices in its cp and dp groups name its replica. */
    assert_int_equal(pg_num_groups(l, PG_MP) * pg_group_size(l, PG_MP), n);
    assert_int_equal(pg_num_groups(l, PG_MP), l->dp * l->cp);
    for (int r = 0; r < n; r++) {
        int idx = -1, cidx = -1;
        int mpg = pg_group_of(l, PG_MP, r, NULL, NULL);
        pg_group_of(l, PG_DP, r, NULL, &idx);
        pg_group_of(l, PG_CP, r, NULL, &cidx);
        assert_int_equal(mpg, cidx + l->cp * idx); /* (cp, dp) names the replica */
    }
    /* the gradient groups are unions: dp_cp holds the rank's dp and cp groups, edp_cp its edp
     * and cp groups, and dp holds its ep and edp groups */
    assert_int_equal(pg_group_size(l, PG_DP_CP), l->dp * l->cp);
    assert_int_equal(pg_group_size(l, PG_EDP_CP), l->edp * l->cp);
    assert_int_equal(pg_group_size(l, PG_EP) * pg_group_size(l, PG_EDP), l->dp);
    static const pg_kind whole[4] = {PG_DP_CP, PG_DP_CP, PG_EDP_CP, PG_EDP_CP};
    static const pg_kind part[4] = {PG_DP, PG_CP, PG_EDP, PG_CP};
    int *big = malloc(sizeof(int) * (size_t)n);
    for (int r = 0; r < n; r++)
        for (int k = 0; k < 4; k++) {
            pg_group_of(l, whole[k], r, big, NULL);
            pg_group_of(l, part[k], r, m, NULL);
            for (int i = 0; i < pg_group_size(l, part[k]); i++) {
                bool found = false;
                for (int j = 0; j < pg_group_size(l, whole[k]); j++) found |= big[j] == m[i];
                if (!found)
                    fail_msg("rank %d: %s member %d is not in its %s group", r,
                             pg_kind_name(part[k]), m[i], pg_kind_name(whole[k]));
            }
        }
    free(big);
    free(m);
    free(mm);
    free(seen);
}

/* The oracle: coordinates straight from the formulas of groups.h, and a group as every rank
 * that agrees with `rank` on the coordinates the kind keeps fixed (a scan of the world). */
typedef struct {
    int tp, cp, ep, edp, pp;
} ref_coord;

static ref_coord ref_coord_of(const pg_layout *l, int rank) {
    ref_coord c;
    c.tp = rank % l->tp;
    int rest = rank / l->tp, dp;
    c.cp = rest % l->cp;
    rest /= l->cp;
    if (l->order == PG_ORDER_TP_DP_PP) dp = rest % l->dp, c.pp = rest / l->dp;
    else c.pp = rest % l->pp, dp = rest / l->pp;
    c.ep = dp % l->ep;
    c.edp = dp / l->ep;
    return c;
}

static int ref_group(const pg_layout *l, pg_kind kind, int rank, int *m) {
    /* which coordinates vary, in the order tp cp ep edp pp */
    static const bool varies[PG_NKINDS][5] = {
        [PG_TP] = {1, 0, 0, 0, 0},        [PG_DP] = {0, 0, 1, 1, 0},
        [PG_PP] = {0, 0, 0, 0, 1},        [PG_MP] = {1, 0, 0, 0, 1},
        [PG_EMBEDDING] = {0, 0, 0, 0, 1}, [PG_CP] = {0, 1, 0, 0, 0},
        [PG_EP] = {0, 0, 1, 0, 0},        [PG_EDP] = {0, 0, 0, 1, 0},
        [PG_DP_CP] = {0, 1, 1, 1, 0},     [PG_EDP_CP] = {0, 1, 0, 1, 0},
        [PG_TP_CP] = {1, 1, 0, 0, 0},
    };
    ref_coord a = ref_coord_of(l, rank);
    const bool end = a.pp == 0 || (a.pp == l->pp - 1 && !l->v_placement);
    if (kind == PG_EMBEDDING && !end) return 0; /* a middle stage holds no embedding */
    const int av[5] = {a.tp, a.cp, a.ep, a.edp, a.pp};
    int n = 0;
    for (int s = 0; s < l->world; s++) {
        ref_coord b = ref_coord_of(l, s);
        const int bv[5] = {b.tp, b.cp, b.ep, b.edp, b.pp};
        bool same = true;
        for (int d = 0; d < 5; d++) same &= varies[kind][d] || av[d] == bv[d];
        if (kind == PG_EMBEDDING) same &= b.pp == 0 || (b.pp == l->pp - 1 && !l->v_placement);
        if (same) m[n++] = s;
    }
    return n;
}

static void every_group_matches_a_scan_of_the_world(void **state) {
    (void)state;
    const char *orders[] = {"tp-dp-pp", "tp-pp-dp", "tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp"};
    int m[64], want[64], checked = 0;
    for (int world = 1; world <= 48; world++)
        for (int tp = 1; tp <= 4; tp *= 2)
            for (int cp = 1; cp <= 3; cp++)
                for (int pp = 1; pp <= 4; pp++)
                    for (int ep = 1; ep <= 4; ep *= 2)
                        for (int o = 0; o < 4; o++) {
                            if (world % (tp * cp * pp) || (world / (tp * cp * pp)) % ep) continue;
                            pg_layout l = make_5d(world, tp, cp, ep, pp, orders[o]);
                            for (int k = 0; k < PG_NKINDS; k++)
                                for (int r = 0; r < world; r++) {
                                    const int n = ref_group(&l, (pg_kind)k, r, want);
                                    if (n == 0) {
                                        assert_int_equal(pg_group_of(&l, (pg_kind)k, r, m, NULL),
                                                         -1);
                                        continue;
                                    }
                                    assert_int_equal(n, pg_group_size(&l, (pg_kind)k));
                                    assert_true(pg_group_of(&l, (pg_kind)k, r, m, NULL) >= 0);
                                    if (memcmp(m, want, sizeof(int) * (size_t)n) != 0)
                                        fail_msg("world %d tp %d cp %d ep %d pp %d %s: the %s "
                                                 "group of rank %d differs from the scan",
                                                 world, tp, cp, ep, pp, orders[o],
                                                 pg_kind_name((pg_kind)k), r);
                                }
                            checked++;
                        }
    assert_true(checked > 300);
}

/* cp = ep = 1 is the layout from before context and expert parallelism: the old order names
 * and the new ones agree field by field, and the old names stay. */
static void without_context_or_experts_the_layout_is_the_old_one(void **state) {
    (void)state;
    static const char *const names[2][2] = {{"tp-dp-pp", "tp-cp-ep-dp-pp"},
                                            {"tp-pp-dp", "tp-cp-ep-pp-dp"}};
    for (int world = 1; world <= 32; world++)
        for (int tp = 1; tp <= 8; tp *= 2)
            for (int pp = 1; pp <= 8; pp *= 2)
                for (int o = 0; o < 2; o++) {
                    if (world % (tp * pp)) continue;
                    pg_layout a = make(world, tp, pp, names[o][0]);
                    pg_layout b = make_5d(world, tp, 1, 1, pp, names[o][1]);
                    assert_memory_equal(&a, &b, sizeof a);
                    assert_int_equal(a.cp, 1);
                    assert_int_equal(a.ep, 1);
                    assert_int_equal(a.edp, a.dp);
                    assert_string_equal(pg_layout_order_name(&a), names[o][0]);
                    for (int r = 0; r < world; r++) { /* the old formulas */
                        pg_coord c = pg_coord_of(&a, r);
                        int old = o == 0 ? c.tp + tp * (c.dp + a.dp * c.pp)
                                         : c.tp + tp * (c.pp + pp * c.dp);
                        assert_int_equal(old, r);
                        assert_true(c.cp == 0 && c.ep == 0 && c.edp == c.dp);
                    }
                    /* the new kinds degenerate: cp, ep alone; edp = dp_cp = edp_cp = dp;
                     * tp_cp = tp */
                    assert_int_equal(pg_group_size(&a, PG_CP), 1);
                    assert_int_equal(pg_group_size(&a, PG_EP), 1);
                    int m1[32], m2[32];
                    for (int g = 0; g < pg_num_groups(&a, PG_TP); g++) {
                        pg_group_members(&a, PG_TP, g, m1);
                        pg_group_members(&a, PG_TP_CP, g, m2);
                        assert_memory_equal(m1, m2, sizeof(int) * (size_t)a.tp);
                    }
                    for (int g = 0; g < pg_num_groups(&a, PG_DP); g++) {
                        pg_group_members(&a, PG_DP, g, m1);
                        const pg_kind same[3] = {PG_EDP, PG_DP_CP, PG_EDP_CP};
                        for (int k = 0; k < 3; k++) {
                            pg_group_members(&a, same[k], g, m2);
                            assert_memory_equal(m1, m2, sizeof(int) * (size_t)a.dp);
                        }
                    }
                }
    assert_string_equal(pg_kind_name(PG_CP), "cp");
    assert_string_equal(pg_kind_name(PG_EP), "ep");
    assert_string_equal(pg_kind_name(PG_EDP), "edp");
    assert_string_equal(pg_kind_name(PG_DP_CP), "dp_cp");
    assert_string_equal(pg_kind_name(PG_EDP_CP), "edp_cp");
    assert_string_equal(pg_kind_name(PG_TP_CP), "tp_cp");
    assert_int_equal(PG_EMBEDDING, 4); /* old kinds keep their numbers */
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
    /* with context and expert parallelism: cp 2 or 3, ep 2 or 4 where it divides dp */
    int with = 0;
    for (int world = 2; world <= 64; world++)
        for (int a = 0; a < 3; a++)
            for (int cp = 1; cp <= 3; cp++)
                for (int ep = 1; ep <= 4; ep *= 2)
                    for (int o = 0; o < 2; o++) {
                        int tp = sizes[a], pp = sizes[2 - a];
                        if (cp == 1 && ep == 1) continue;
                        if (world % (tp * cp * pp) || (world / (tp * cp * pp)) % ep) continue;
                        pg_layout l = make_5d(world, tp, cp, ep, pp, orders[o]);
                        check_invariants(&l);
                        with++;
                    }
    assert_true(with > 50);
}

static void bad_layouts_are_rejected_with_the_rule(void **state) {
    (void)state;
    pg_layout l;
    char err[256];
    assert_false(pg_layout_make(&l, 8, 3, 1, 1, 1, 1, NULL, err, sizeof err));
    assert_string_equal(err, "world size 8 is not divisible by tensor-model-parallel-size 3 × "
                             "pipeline-model-parallel-size 1");
    assert_false(pg_layout_make(&l, 4, 4, 1, 1, 2, 1, NULL, err, sizeof err));
    assert_non_null(strstr(err, "world size 4 is not divisible by tensor-model-parallel-size 4"));
    assert_false(pg_layout_make(&l, 8, 0, 1, 1, 1, 1, NULL, err, sizeof err));
    assert_non_null(strstr(err, "at least 1"));
    assert_non_null(strstr(err, "tensor-model-parallel-size 0"));
    assert_false(pg_layout_make(&l, 8, 2, 1, 1, 1, 2, NULL, err, sizeof err));
    assert_non_null(strstr(
        err, "virtual-pipeline-model-parallel-size 2 needs pipeline-model-parallel-size > 1"));
    assert_false(pg_layout_make(&l, 8, 2, 1, 1, 2, 1, "dp-tp-pp", err, sizeof err));
    assert_string_equal(
        err,
        "rank order 'dp-tp-pp' is not one of tp-dp-pp, tp-pp-dp, tp-cp-ep-dp-pp, tp-cp-ep-pp-dp");
    assert_true(pg_layout_make(&l, 8, 2, 1, 1, 2, 2, "tp-pp-dp", err, sizeof err));
    assert_int_equal(l.vpp, 2);
    /* context and expert parallelism */
    assert_false(pg_layout_make(&l, 8, 2, 3, 1, 1, 1, NULL, err, sizeof err));
    assert_string_equal(err, "world size 8 is not divisible by tensor-model-parallel-size 2 × "
                             "context-parallel-size 3 × pipeline-model-parallel-size 1");
    assert_false(pg_layout_make(&l, 8, 2, 1, 3, 1, 1, NULL, err, sizeof err));
    assert_string_equal(err,
                        "expert-model-parallel-size 3 does not divide the data-parallel size 4");
    assert_false(pg_layout_make(&l, 16, 2, 2, 8, 2, 1, NULL, err, sizeof err));
    assert_string_equal(err,
                        "expert-model-parallel-size 8 does not divide the data-parallel size 2");
    assert_false(pg_layout_make(&l, 8, 1, 0, 1, 1, 1, NULL, err, sizeof err));
    assert_string_equal(err, "context-parallel-size 0 must be at least 1");
    assert_false(pg_layout_make(&l, 8, 1, 1, -2, 1, 1, NULL, err, sizeof err));
    assert_string_equal(err, "expert-model-parallel-size -2 must be at least 1");
    assert_false(pg_layout_make(&l, 1 << 30, 1 << 20, 1 << 20, 1, 1 << 20, 1, NULL, err,
                                sizeof err)); /* products past int */
    assert_non_null(strstr(err, "is not divisible by"));
    /* products that wrap as int (to 0, 1 and -1) divide no world (src/core/checked.h) */
    assert_false(pg_layout_make(&l, 8, 65536, 1, 1, 65536, 1, NULL, err, sizeof err));
    assert_false(pg_layout_make(&l, 1, 641, 1, 1, 6700417, 1, NULL, err, sizeof err));
    assert_false(pg_layout_make(&l, 1, 65535, 1, 1, 65537, 1, NULL, err, sizeof err));
    assert_false(pg_layout_make(&l, 4, 4, 1073741824, 1, 1, 1, NULL, err, sizeof err));
    assert_string_equal(err, "world size 4 is not divisible by tensor-model-parallel-size 4 × "
                             "context-parallel-size 1073741824 × pipeline-model-parallel-size 1");
    assert_true(pg_layout_make(&l, 16, 2, 2, 2, 2, 1, "tp-cp-ep-pp-dp", err, sizeof err));
    assert_true(l.cp == 2 && l.ep == 2 && l.dp == 2 && l.edp == 1 && l.order == PG_ORDER_TP_PP_DP);
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
        cmocka_unit_test(groups_spanning_nodes_are_counted),
        cmocka_unit_test(worked_example_16_ranks_tp2_pp4_matches_megatron),
        cmocka_unit_test(tp_pp_dp_order_puts_pipeline_before_data),
        cmocka_unit_test(worked_example_with_context_and_experts_matches_the_header),
        cmocka_unit_test(expert_groups_are_consecutive_data_parallel_ranks),
        cmocka_unit_test(pipeline_before_data_keeps_context_second),
        cmocka_unit_test(many_layouts_keep_every_invariant),
        cmocka_unit_test(every_group_matches_a_scan_of_the_world),
        cmocka_unit_test(without_context_or_experts_the_layout_is_the_old_one),
        cmocka_unit_test(bad_layouts_are_rejected_with_the_rule),
        cmocka_unit_test(one_stage_makes_each_rank_its_own_embedding_group),
        cmocka_unit_test(the_v_placement_keeps_the_embedding_on_pipeline_rank_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
