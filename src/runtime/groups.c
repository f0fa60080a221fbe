/* groups.c — the process groups of a layout, computed from rank coordinates.
 *
 * Every query reduces to two steps: find the rank's coordinates, then vary the one
 * coordinate that a kind of group spans (all of tp and pp for mp). Group numbers come from
 * counting "leaders" (ranks that are the smallest member of their group) below a group's
 * leader, which numbers groups in order of their first member without storing any table.
 * Sizes here are tiny (a world of thousands is still microseconds), so clarity wins.
 *
 * Not here: communicators (parallel_state.c), printing (src/cli/groups_cmd.c).
 */
#include "src/runtime/groups.h"

#include <stdio.h>
#include <string.h>

#include "src/core/check.h"

bool pg_layout_make(pg_layout *out, int world, int tp, int pp, int vpp, const char *order,
                    char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (world < 1 || tp < 1 || pp < 1 || vpp < 1) {
        snprintf(err, errlen,
                 "sizes must be at least 1, got world size %d, tensor-model-parallel-size %d, "
                 "pipeline-model-parallel-size %d, virtual-pipeline-model-parallel-size %d",
                 world, tp, pp, vpp);
        return false;
    }
    if ((long)tp * pp > world || world % (tp * pp) != 0) {
        snprintf(err, errlen,
                 "world size %d is not divisible by tensor-model-parallel-size %d × "
                 "pipeline-model-parallel-size %d",
                 world, tp, pp);
        return false;
    }
    if (vpp > 1 && pp == 1) {
        snprintf(err, errlen,
                 "virtual-pipeline-model-parallel-size %d needs pipeline-model-parallel-size > 1 "
                 "(got 1): interleaving splits each pipeline stage into chunks",
                 vpp);
        return false;
    }
    pg_order o;
    if (!order || strcmp(order, "tp-dp-pp") == 0) o = PG_ORDER_TP_DP_PP;
    else if (strcmp(order, "tp-pp-dp") == 0) o = PG_ORDER_TP_PP_DP;
    else {
        snprintf(err, errlen, "rank order '%s' is not one of tp-dp-pp, tp-pp-dp", order);
        return false;
    }
    out->world = world;
    out->tp = tp;
    out->pp = pp;
    out->dp = world / (tp * pp);
    out->vpp = vpp;
    out->v_placement = false;
    out->order = o;
    if (errlen) err[0] = 0;
    return true;
}

const char *pg_order_name(pg_order order) {
    return order == PG_ORDER_TP_PP_DP ? "tp-pp-dp" : "tp-dp-pp";
}

const char *pg_kind_name(pg_kind kind) {
    static const char *const names[PG_NKINDS] = {"tp", "dp", "pp", "mp", "embedding"};
    CHECK(kind >= 0 && kind < PG_NKINDS, "pg_kind out of range");
    return names[kind];
}

/* exercise 1 begins: rank <-> coordinates (tutorials/exercises/01-rank-coordinates) */
pg_coord pg_coord_of(const pg_layout *l, int rank) {
    CHECK(rank >= 0 && rank < l->world, "rank outside the layout's world");
    pg_coord c;
    c.tp = rank % l->tp;
    int rest = rank / l->tp;
    if (l->order == PG_ORDER_TP_DP_PP) {
        c.dp = rest % l->dp;
        c.pp = rest / l->dp;
    } else {
        c.pp = rest % l->pp;
        c.dp = rest / l->pp;
    }
    return c;
}

int pg_rank_of(const pg_layout *l, pg_coord c) {
    CHECK(c.tp >= 0 && c.tp < l->tp && c.pp >= 0 && c.pp < l->pp && c.dp >= 0 && c.dp < l->dp,
          "coordinate outside the layout");
    if (l->order == PG_ORDER_TP_DP_PP) return c.tp + l->tp * (c.dp + l->dp * c.pp);
    return c.tp + l->tp * (c.pp + l->pp * c.dp);
}
/* exercise 1 ends */

int pg_group_size(const pg_layout *l, pg_kind kind) {
    switch (kind) {
    case PG_TP: return l->tp;
    case PG_DP: return l->dp;
    case PG_PP: return l->pp;
    case PG_MP: return l->tp * l->pp;
    case PG_EMBEDDING: return l->pp == 1 || l->v_placement ? 1 : 2;
    default: break;
    }
    CHECK(0, "pg_kind out of range");
    return 0;
}

int pg_num_groups(const pg_layout *l, pg_kind kind) {
    if (kind == PG_EMBEDDING) return l->tp * l->dp; /* one per pipeline group */
    return l->world / pg_group_size(l, kind);
}

/* The members of the group of kind `kind` that contains `rank`, ascending; returns false
 * when the rank is in no such group (embedding, middle pipeline stages). */
static bool members_of(const pg_layout *l, pg_kind kind, int rank, int *m) {
    pg_coord c = pg_coord_of(l, rank), v = c;
    switch (kind) {
    case PG_TP:
        for (v.tp = 0; v.tp < l->tp; v.tp++) m[v.tp] = pg_rank_of(l, v);
        return true;
    case PG_DP:
        for (v.dp = 0; v.dp < l->dp; v.dp++) m[v.dp] = pg_rank_of(l, v);
        return true;
    case PG_PP:
        for (v.pp = 0; v.pp < l->pp; v.pp++) m[v.pp] = pg_rank_of(l, v);
        return true;
    case PG_MP: {
        /* All (tp, pp) with this dp, ascending by global rank: in both orders a rank grows
         * with pp (the slower of the two) and then with tp. */
        int k = 0;
        for (v.pp = 0; v.pp < l->pp; v.pp++)
            for (v.tp = 0; v.tp < l->tp; v.tp++) m[k++] = pg_rank_of(l, v);
        return true;
    }
    case PG_EMBEDDING:
        if (c.pp != 0 && (c.pp != l->pp - 1 || l->v_placement)) return false;
        v.pp = 0;
        m[0] = pg_rank_of(l, v);
        if (l->pp > 1 && !l->v_placement) {
            v.pp = l->pp - 1;
            m[1] = pg_rank_of(l, v);
        }
        return true;
    default: break;
    }
    CHECK(0, "pg_kind out of range");
    return false;
}

/* The smallest member of rank's group, or -1 when the rank is in none. A global rank grows
 * with every coordinate in both orders, so the smallest member has the varying ones at 0. */
static int leader_of(const pg_layout *l, pg_kind kind, int rank) {
    pg_coord c = pg_coord_of(l, rank);
    switch (kind) {
    case PG_TP: c.tp = 0; break;
    case PG_DP: c.dp = 0; break;
    case PG_PP: c.pp = 0; break;
    case PG_MP:
        c.tp = 0;
        c.pp = 0;
        break;
    case PG_EMBEDDING:
        if (c.pp != 0 && (c.pp != l->pp - 1 || l->v_placement)) return -1;
        c.pp = 0;
        break;
    default: CHECK(0, "pg_kind out of range");
    }
    return pg_rank_of(l, c);
}

/* A rank's coordinates as the digits of its number, fastest first, and their radices. */
static void digits_of(const pg_layout *l, pg_coord c, int d[3], int radix[3]) {
    const bool dp_second = l->order == PG_ORDER_TP_DP_PP;
    d[0] = c.tp, radix[0] = l->tp;
    d[1] = dp_second ? c.dp : c.pp, radix[1] = dp_second ? l->dp : l->pp;
    d[2] = dp_second ? c.pp : c.dp, radix[2] = dp_second ? l->pp : l->dp;
}

/* Which digits vary inside a group of `kind` (the leader has them at 0). */
static void varying(const pg_layout *l, pg_kind kind, bool v[3]) {
    const bool dp_second = l->order == PG_ORDER_TP_DP_PP;
    const bool vtp = kind == PG_TP || kind == PG_MP;
    const bool vpp = kind == PG_PP || kind == PG_MP || kind == PG_EMBEDDING;
    const bool vdp = kind == PG_DP;
    v[0] = vtp;
    v[1] = dp_second ? vdp : vpp;
    v[2] = dp_second ? vpp : vdp;
}

/* Number of the group led by `leader` = how many leaders are smaller. A rank grows with
 * every digit, so ordering leaders by rank orders them by their fixed digits, slowest first:
 * the number is the fixed digits read as one mixed-radix number (O(1), not a scan). */
static int group_number(const pg_layout *l, pg_kind kind, int leader) {
    int d[3], radix[3], n = 0;
    bool v[3];
    digits_of(l, pg_coord_of(l, leader), d, radix);
    varying(l, kind, v);
    for (int i = 2; i >= 0; i--)
        if (!v[i]) n = n * radix[i] + d[i];
    return n;
}

void pg_group_members(const pg_layout *l, pg_kind kind, int index, int *members) {
    CHECK(index >= 0 && index < pg_num_groups(l, kind), "group index out of range");
    /* The inverse of group_number: the fixed digits from the index, the varying ones 0. */
    int d[3], radix[3];
    bool v[3];
    digits_of(l, pg_coord_of(l, 0), d, radix);
    varying(l, kind, v);
    for (int i = 0; i < 3; i++) {
        d[i] = v[i] ? 0 : index % radix[i];
        if (!v[i]) index /= radix[i];
    }
    const bool dp_second = l->order == PG_ORDER_TP_DP_PP;
    pg_coord c = {.tp = d[0], .dp = dp_second ? d[1] : d[2], .pp = dp_second ? d[2] : d[1]};
    int leader = pg_rank_of(l, c);
    CHECK(leader_of(l, kind, leader) == leader, "group numbering is inconsistent");
    members_of(l, kind, leader, members);
}

int pg_group_of(const pg_layout *l, pg_kind kind, int rank, int *members, int *index_in_group) {
    int size = pg_group_size(l, kind);
    int *m = mallocCheck(sizeof(int) * (size_t)size);
    int number = -1, pos = -1;
    if (members_of(l, kind, rank, m)) {
        for (int i = 0; i < size; i++)
            if (m[i] == rank) pos = i;
        number = group_number(l, kind, m[0]);
        if (members) memcpy(members, m, sizeof(int) * (size_t)size);
    }
    if (index_in_group) *index_in_group = pos;
    free(m);
    return number;
}

int pg_next_pp_rank(const pg_layout *l, int rank) {
    pg_coord c = pg_coord_of(l, rank);
    c.pp = (c.pp + 1) % l->pp;
    return pg_rank_of(l, c);
}

int pg_prev_pp_rank(const pg_layout *l, int rank) {
    pg_coord c = pg_coord_of(l, rank);
    c.pp = (c.pp + l->pp - 1) % l->pp;
    return pg_rank_of(l, c);
}

bool pg_is_first_stage(const pg_layout *l, int rank) { return pg_coord_of(l, rank).pp == 0; }

bool pg_is_last_stage(const pg_layout *l, int rank) {
    return pg_coord_of(l, rank).pp == (l->v_placement ? 0 : l->pp - 1);
}
