/* groups.c — the process groups of a layout, computed from rank coordinates.
 *
 * Every query reduces to two steps: find the rank's coordinates, then vary the coordinates
 * that a kind of group spans (a table below: tp for tp, ep and edp for dp, ...). A rank's
 * number is a mixed-radix number whose digits are its coordinates, so group numbers come
 * from reading the digits a group keeps fixed as one number, which numbers groups in order
 * of their first member without storing any table. Sizes here are tiny (a world of
 * thousands is still microseconds), so clarity wins.
 *
 * Not here: communicators (parallel_state.c), printing (src/cli/groups_cmd.c).
 */
#include "src/runtime/groups.h"

#include <stdio.h>
#include <string.h>

#include "src/core/check.h"
#include "src/core/checked.h"

/* Every spelling of the two rank orders: the long names, and the short names from before
 * context and expert parallelism (the same placement). */
static const struct {
    const char *name;
    pg_order order;
} k_orders[] = {
    {"tp-dp-pp", PG_ORDER_TP_DP_PP},
    {"tp-pp-dp", PG_ORDER_TP_PP_DP},
    {"tp-cp-ep-dp-pp", PG_ORDER_TP_DP_PP},
    {"tp-cp-ep-pp-dp", PG_ORDER_TP_PP_DP},
};

bool pg_layout_make(pg_layout *out, int world, int tp, int cp, int ep, int pp, int vpp,
                    const char *order, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (world < 1 || tp < 1 || pp < 1 || vpp < 1) {
        snprintf(err, errlen,
                 "sizes must be at least 1, got world size %d, tensor-model-parallel-size %d, "
                 "pipeline-model-parallel-size %d, virtual-pipeline-model-parallel-size %d",
                 world, tp, pp, vpp);
        return false;
    }
    if (cp < 1 || ep < 1) {
        snprintf(err, errlen, "%s %d must be at least 1",
                 cp < 1 ? "context-parallel-size" : "expert-model-parallel-size", cp < 1 ? cp : ep);
        return false;
    }
    /* Checked products (src/core/checked.h): one that wraps divides no world. */
    int tcp, tcpp;
    if (!checked_mul_int(tp, cp, &tcp) || !checked_mul_int(tcp, pp, &tcpp) || world % tcpp != 0) {
        if (cp == 1)
            snprintf(err, errlen,
                     "world size %d is not divisible by tensor-model-parallel-size %d × "
                     "pipeline-model-parallel-size %d",
                     world, tp, pp);
        else
            snprintf(err, errlen,
                     "world size %d is not divisible by tensor-model-parallel-size %d × "
                     "context-parallel-size %d × pipeline-model-parallel-size %d",
                     world, tp, cp, pp);
        return false;
    }
    const int dp = world / tcpp;
    if (!pg_ep_divides_dp(ep, dp)) {
        snprintf(err, errlen,
                 "expert-model-parallel-size %d does not divide the data-parallel size %d", ep, dp);
        return false;
    }
    if (vpp > 1 && pp == 1) {
        snprintf(err, errlen,
                 "virtual-pipeline-model-parallel-size %d needs pipeline-model-parallel-size > 1 "
                 "(got 1): interleaving splits each pipeline stage into chunks",
                 vpp);
        return false;
    }
    int o = -1;
    for (size_t i = 0; i < sizeof k_orders / sizeof k_orders[0]; i++)
        if (!order || strcmp(order, k_orders[i].name) == 0) {
            o = (int)k_orders[i].order;
            break;
        }
    if (o < 0) {
        snprintf(err, errlen,
                 "rank order '%s' is not one of tp-dp-pp, tp-pp-dp, tp-cp-ep-dp-pp, tp-cp-ep-pp-dp",
                 order);
        return false;
    }
    out->world = world;
    out->tp = tp;
    out->cp = cp;
    out->pp = pp;
    out->dp = dp;
    out->ep = ep;
    out->edp = dp / ep;
    out->vpp = vpp;
    out->v_placement = false;
    out->order = (pg_order)o;
    if (errlen) err[0] = 0;
    return true;
}

bool pg_ep_divides_dp(int ep, int dp) { return ep >= 1 && dp % ep == 0; }

const char *pg_order_name(pg_order order) {
    return order == PG_ORDER_TP_PP_DP ? "tp-pp-dp" : "tp-dp-pp";
}

const char *pg_layout_order_name(const pg_layout *l) {
    if (l->cp == 1 && l->ep == 1) return pg_order_name(l->order);
    return l->order == PG_ORDER_TP_PP_DP ? "tp-cp-ep-pp-dp" : "tp-cp-ep-dp-pp";
}

const char *pg_kind_name(pg_kind kind) {
    static const char *const names[PG_NKINDS] = {"tp", "dp",  "pp",    "mp",     "embedding", "cp",
                                                 "ep", "edp", "dp_cp", "edp_cp", "tp_cp"};
    CHECK(kind >= 0 && kind < PG_NKINDS, "pg_kind out of range");
    return names[kind];
}

/* exercise 1 begins: rank <-> coordinates (tutorials/exercises/01-rank-coordinates) */
pg_coord pg_coord_of(const pg_layout *l, int rank) {
    CHECK(rank >= 0 && rank < l->world, "rank outside the layout's world");
    pg_coord c;
    c.tp = rank % l->tp;
    int rest = rank / l->tp;
    c.cp = rest % l->cp;
    rest /= l->cp;
    if (l->order == PG_ORDER_TP_DP_PP) {
        c.dp = rest % l->dp;
        c.pp = rest / l->dp;
    } else {
        c.pp = rest % l->pp;
        c.dp = rest / l->pp;
    }
    c.ep = c.dp % l->ep; /* dp = ep + EP·edp: an expert group is EP consecutive dp ranks */
    c.edp = c.dp / l->ep;
    return c;
}

int pg_rank_of(const pg_layout *l, pg_coord c) {
    CHECK(c.tp >= 0 && c.tp < l->tp && c.cp >= 0 && c.cp < l->cp && c.pp >= 0 && c.pp < l->pp &&
              c.dp >= 0 && c.dp < l->dp,
          "coordinate outside the layout");
    if (l->order == PG_ORDER_TP_DP_PP) return c.tp + l->tp * (c.cp + l->cp * (c.dp + l->dp * c.pp));
    return c.tp + l->tp * (c.cp + l->cp * (c.pp + l->pp * c.dp));
}
/* exercise 1 ends */

/* The five coordinates, dp counted as its two parts ep and edp. A rank's number has them
 * as its digits, fastest first, in the order of the layout:
 *
 *   tp-cp-ep-dp-pp   rank = tp + TP·(cp + CP·(ep + EP·(edp + EDP·pp)))
 *   tp-cp-ep-pp-dp   rank = tp + TP·(cp + CP·(pp + PP·(ep + EP·edp)))
 */
typedef enum { DIM_TP, DIM_CP, DIM_EP, DIM_EDP, DIM_PP, NDIMS } pg_dim;

static const pg_dim k_digits[2][NDIMS] = {
    [PG_ORDER_TP_DP_PP] = {DIM_TP, DIM_CP, DIM_EP, DIM_EDP, DIM_PP},
    [PG_ORDER_TP_PP_DP] = {DIM_TP, DIM_CP, DIM_PP, DIM_EP, DIM_EDP},
};

#define DIM_BIT(d) (1u << (d))

/* The coordinates each kind of group spans (the embedding group spans only the two ends of
 * pp, handled apart). */
static const unsigned k_spans[PG_NKINDS] = {
    [PG_TP] = DIM_BIT(DIM_TP),
    [PG_DP] = DIM_BIT(DIM_EP) | DIM_BIT(DIM_EDP),
    [PG_PP] = DIM_BIT(DIM_PP),
    [PG_MP] = DIM_BIT(DIM_TP) | DIM_BIT(DIM_PP),
    [PG_EMBEDDING] = DIM_BIT(DIM_PP),
    [PG_CP] = DIM_BIT(DIM_CP),
    [PG_EP] = DIM_BIT(DIM_EP),
    [PG_EDP] = DIM_BIT(DIM_EDP),
    [PG_DP_CP] = DIM_BIT(DIM_CP) | DIM_BIT(DIM_EP) | DIM_BIT(DIM_EDP),
    [PG_EDP_CP] = DIM_BIT(DIM_CP) | DIM_BIT(DIM_EDP),
    [PG_TP_CP] = DIM_BIT(DIM_TP) | DIM_BIT(DIM_CP),
};

static unsigned spans(pg_kind kind) {
    CHECK(kind >= 0 && kind < PG_NKINDS, "pg_kind out of range");
    return k_spans[kind];
}

static int dim_size(const pg_layout *l, pg_dim d) {
    const int sizes[NDIMS] = {
        [DIM_TP] = l->tp, [DIM_CP] = l->cp, [DIM_EP] = l->ep, [DIM_EDP] = l->edp, [DIM_PP] = l->pp};
    return sizes[d];
}

static int dim_get(pg_coord c, pg_dim d) {
    const int v[NDIMS] = {
        [DIM_TP] = c.tp, [DIM_CP] = c.cp, [DIM_EP] = c.ep, [DIM_EDP] = c.edp, [DIM_PP] = c.pp};
    return v[d];
}

/* Sets one coordinate; dp follows its parts. */
static void dim_set(const pg_layout *l, pg_coord *c, pg_dim d, int value) {
    switch (d) {
    case DIM_TP: c->tp = value; break;
    case DIM_CP: c->cp = value; break;
    case DIM_EP: c->ep = value; break;
    case DIM_EDP: c->edp = value; break;
    case DIM_PP: c->pp = value; break;
    default: CHECK(0, "dimension out of range");
    }
    c->dp = c->ep + l->ep * c->edp;
}

int pg_group_size(const pg_layout *l, pg_kind kind) {
    if (kind == PG_EMBEDDING) return l->pp == 1 || l->v_placement ? 1 : 2;
    const unsigned span = spans(kind);
    int size = 1;
    for (int d = 0; d < NDIMS; d++)
        if (span & DIM_BIT(d)) size *= dim_size(l, (pg_dim)d);
    return size;
}

int pg_num_groups(const pg_layout *l, pg_kind kind) {
    if (kind == PG_EMBEDDING) return l->world / l->pp; /* one per pipeline group */
    return l->world / pg_group_size(l, kind);
}

/* The members of the group of kind `kind` that contains `rank`, ascending; returns false
 * when the rank is in no such group (embedding, middle pipeline stages). */
static bool members_of(const pg_layout *l, pg_kind kind, int rank, int *m) {
    const pg_coord c = pg_coord_of(l, rank);
    pg_coord v = c;
    if (kind == PG_EMBEDDING) {
        if (c.pp != 0 && (c.pp != l->pp - 1 || l->v_placement)) return false;
        v.pp = 0;
        m[0] = pg_rank_of(l, v);
        if (l->pp > 1 && !l->v_placement) {
            v.pp = l->pp - 1;
            m[1] = pg_rank_of(l, v);
        }
        return true;
    }
    /* Member i: i read as a mixed-radix number over the spanned digits, fastest first. A
     * rank grows with every digit, so counting i up lists the members in ascending order. */
    const pg_dim *digit = k_digits[l->order];
    const unsigned span = spans(kind);
    const int size = pg_group_size(l, kind);
    for (int i = 0; i < size; i++) {
        int rest = i;
        for (int k = 0; k < NDIMS; k++) {
            if (!(span & DIM_BIT(digit[k]))) continue;
            const int n = dim_size(l, digit[k]);
            dim_set(l, &v, digit[k], rest % n);
            rest /= n;
        }
        m[i] = pg_rank_of(l, v);
    }
    return true;
}

/* Number of the group that holds `rank` = how many groups have a smaller first member.
 * Ordering first members by rank orders them by their fixed digits, slowest first: the
 * number is the fixed digits read as one mixed-radix number (O(1), not a scan). */
static int group_number(const pg_layout *l, pg_kind kind, int rank) {
    const pg_coord c = pg_coord_of(l, rank);
    const pg_dim *digit = k_digits[l->order];
    const unsigned span = spans(kind);
    int n = 0;
    for (int k = NDIMS - 1; k >= 0; k--)
        if (!(span & DIM_BIT(digit[k]))) n = n * dim_size(l, digit[k]) + dim_get(c, digit[k]);
    return n;
}

void pg_group_members(const pg_layout *l, pg_kind kind, int index, int *members) {
    CHECK(index >= 0 && index < pg_num_groups(l, kind), "group index out of range");
    /* The inverse of group_number: the fixed digits from the index, the spanned ones 0. */
    const pg_dim *digit = k_digits[l->order];
    const unsigned span = spans(kind);
    pg_coord c = {0};
    for (int k = 0; k < NDIMS; k++) {
        if (span & DIM_BIT(digit[k])) continue;
        const int n = dim_size(l, digit[k]);
        dim_set(l, &c, digit[k], index % n);
        index /= n;
    }
    const int leader = pg_rank_of(l, c);
    CHECK(members_of(l, kind, leader, members) && members[0] == leader,
          "group numbering is inconsistent");
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

int pg_groups_spanning_nodes(const pg_layout *l, pg_kind kind, const int *node_of, int *first) {
    const int n = pg_num_groups(l, kind), size = pg_group_size(l, kind);
    int *m = mallocCheck(sizeof(int) * (size_t)size), spanning = 0;
    *first = -1;
    for (int g = 0; g < n; g++) {
        pg_group_members(l, kind, g, m);
        bool one = true;
        for (int i = 1; i < size && one; i++) one = node_of[m[i]] == node_of[m[0]];
        if (one) continue;
        if (spanning++ == 0) *first = g;
    }
    free(m);
    return spanning;
}
