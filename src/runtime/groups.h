/* groups.h — which ranks talk to which: the process groups of a Megatron layout, as pure data.
 *
 * A job of `world` ranks is a grid tp × cp × dp × pp (tensor, context, data, pipeline), and
 * expert parallelism is carved out of data parallelism: dp = ep × edp, a rank's data-parallel
 * rank is dp_rank = ep_rank + ep · edp_rank, so an expert-parallel group is ep consecutive
 * dp ranks and edp is the expert-data-parallel size. Every rank has coordinates
 * (tp, cp, dp = (ep, edp), pp) and belongs to exactly one group of each kind:
 *
 *   tp         same (cp, dp, pp), tp varies       tensor-parallel all-reduces
 *   dp         same (tp, cp, pp), dp varies       gradient all-reduce / ZeRO (cp excluded)
 *   pp         same (tp, cp, dp), pp varies       activations flow stage to stage
 *   mp         same (cp, dp): all tp × pp ranks   one whole model replica
 *   embedding  first and last rank of a pp group  tied input/output embedding
 *              (pp = 1: the rank alone; pp >= 3: middle stages are in no group;
 *              v_placement (zbv): pp rank 0 alone, it holds the first and the last stage)
 *   cp         same (tp, dp, pp), cp varies       a sequence split; attention trades K/V
 *   ep         same (tp, cp, edp, pp), ep varies  tokens routed to experts (all-to-all)
 *   edp        same (tp, cp, ep, pp), edp varies  copies of one expert shard
 *   dp_cp      same (tp, pp): dp and cp vary      dense gradients are averaged here
 *   edp_cp     same (tp, ep, pp): edp, cp vary    expert gradients are averaged here
 *   tp_cp      same (dp, pp): tp and cp vary      the positions of one micro-batch (MoE with
 *                                                 sequence parallelism counts the switch loss's
 *                                                 statistics here; Megatron's tensor-and-context)
 *
 * The rank order says how coordinates map to global ranks. Tensor is always fastest so a
 * TP group sits on one node (its all-reduces are the hottest traffic), context next:
 *
 *   "tp-cp-ep-dp-pp" (Megatron's default)  rank = tp + TP·(cp + CP·(dp + DP·pp))
 *   "tp-cp-ep-pp-dp"                       rank = tp + TP·(cp + CP·(pp + PP·dp))
 *                        in both:  dp = ep + EP·edp
 * "tp-dp-pp" and "tp-pp-dp" are the same two orders under their names from before cp and ep
 * (with cp = ep = 1 both spellings place every rank alike).
 *
 * Worked example, world 16, tp 2, pp 4 (so dp 2), order tp-dp-pp:
 *   tp  [0,1] [2,3] … [14,15]
 *   dp  [0,2] [1,3] [4,6] [5,7] [8,10] [9,11] [12,14] [13,15]
 *   pp  [0,4,8,12] [1,5,9,13] [2,6,10,14] [3,7,11,15]
 *   mp  [0,1,4,5,8,9,12,13] [2,3,6,7,10,11,14,15]
 *   embedding [0,12] [1,13] [2,14] [3,15]
 *
 * Worked example with context and experts: world 16, tp 2, cp 2, pp 2 (so dp 2), ep 2
 * (so edp 1), order tp-cp-ep-dp-pp; rank = tp + 2·(cp + 2·(dp + 2·pp)):
 *   tp   [0,1] [2,3] [4,5] [6,7] [8,9] [10,11] [12,13] [14,15]
 *   cp   [0,2] [1,3] [4,6] [5,7] [8,10] [9,11] [12,14] [13,15]
 *   dp   [0,4] [1,5] [2,6] [3,7] [8,12] [9,13] [10,14] [11,15]
 *   ep   [0,4] [1,5] [2,6] [3,7] [8,12] [9,13] [10,14] [11,15]   (ep = dp: edp is 1)
 *   edp  [0] [1] … [15]                                           (each rank alone)
 *   pp   [0,8] [1,9] [2,10] [3,11] [4,12] [5,13] [6,14] [7,15]
 *   mp   [0,1,8,9] [2,3,10,11] [4,5,12,13] [6,7,14,15]
 *   dp_cp [0,2,4,6] [1,3,5,7] [8,10,12,14] [9,11,13,15]
 *   tp_cp [0,1,2,3] [4,5,6,7] [8,9,10,11] [12,13,14,15]
 *   edp_cp = cp and embedding = pp here (edp is 1, and two stages are both ends)
 *
 * Conventions: the groups of one kind are numbered in order of their first (smallest)
 * member; members of a group are listed in ascending global rank, which is also ascending
 * order of the coordinates that vary; a rank's index in that list is its rank in the group
 * (for ep, edp and cp that is the coordinate itself).
 *
 * Not here: MPI. This module only computes numbers; src/runtime/parallel_state.h turns
 * them into communicators, and `trident groups` prints or draws them.
 */
#ifndef TRIDENT_RUNTIME_GROUPS_H
#define TRIDENT_RUNTIME_GROUPS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { PG_ORDER_TP_DP_PP, PG_ORDER_TP_PP_DP } pg_order;

/* New kinds go last, so the number of an old kind never changes. */
typedef enum {
    PG_TP,
    PG_DP,
    PG_PP,
    PG_MP,
    PG_EMBEDDING,
    PG_CP,
    PG_EP,
    PG_EDP,
    PG_DP_CP,
    PG_EDP_CP,
    PG_TP_CP,
    PG_NKINDS
} pg_kind;

typedef struct {
    int world;        /* number of ranks = tp · cp · pp · dp */
    int tp, pp, dp;   /* tensor, pipeline, data parallel sizes (dp is derived) */
    int cp, ep, edp;  /* context parallel; expert parallel, which divides dp; edp = dp / ep */
    int vpp;          /* virtual pipeline size (model chunks per stage); 1 = not interleaved */
    bool v_placement; /* zbv's V: stages 0 and S-1 both on pp rank 0 (pg_layout_make: false;
                       * the caller sets it for --pipeline-schedule zbv) */
    pg_order order;
} pg_layout;

/* A rank's coordinates. dp is the whole data-parallel rank; ep and edp are its two parts
 * (ep = dp % EP, edp = dp / EP), filled by pg_coord_of and not read by pg_rank_of. */
typedef struct {
    int tp, pp, dp;
    int cp, ep, edp;
} pg_coord;

/* Validates and fills a layout: tensor, context, expert and pipeline parallel sizes (the data-
 * parallel size is what is left of the world; cp = ep = 1 for a tp × pp × dp layout), in the
 * order of the rank order's name. order is "tp-cp-ep-dp-pp" or "tp-cp-ep-pp-dp", or their
 * short names "tp-dp-pp" and "tp-pp-dp" (NULL = "tp-cp-ep-dp-pp"). On a bad layout returns
 * false and writes one sentence naming the values and the rule into err, e.g. "world size 8
 * is not divisible by tensor-model-parallel-size 2 × context-parallel-size 3 ×
 * pipeline-model-parallel-size 1", "expert-model-parallel-size 3 does not divide the
 * data-parallel size 4" (pg_ep_divides_dp). */
bool pg_layout_make(pg_layout *out, int world, int tp, int cp, int ep, int pp, int vpp,
                    const char *order, char *err, size_t errlen);

/* Expert parallelism's rule on a layout: an expert group is ep consecutive data-parallel ranks,
 * so ep must divide the data-parallel size dp. The one place the rule is decided:
 * pg_layout_make refuses a layout that breaks it, and `trident train` asks here first, to name
 * its flags in the message. */
bool pg_ep_divides_dp(int ep, int dp);

const char *pg_order_name(pg_order order); /* "tp-dp-pp" / "tp-pp-dp" */
/* The order's name for this layout: "tp-cp-ep-dp-pp" / "tp-cp-ep-pp-dp" when cp or ep > 1,
 * else pg_order_name's. */
const char *pg_layout_order_name(const pg_layout *l);
/* "tp" "dp" "pp" "mp" "embedding" "cp" "ep" "edp" "dp_cp" "edp_cp" "tp_cp" */
const char *pg_kind_name(pg_kind kind);

/* Coordinates of a global rank, and back (pg_rank_of reads tp, cp, dp and pp). */
pg_coord pg_coord_of(const pg_layout *l, int rank);
int pg_rank_of(const pg_layout *l, pg_coord c);

/* How many groups of a kind, and how many ranks in each (embedding: 1 when pp = 1 or with the
 * V placement, else 2). */
int pg_num_groups(const pg_layout *l, pg_kind kind);
int pg_group_size(const pg_layout *l, pg_kind kind);

/* Members of group number `index` of a kind, ascending, into members[pg_group_size]. */
void pg_group_members(const pg_layout *l, pg_kind kind, int index, int *members);

/* How many groups of a kind have members on more than one node, node_of[r] being rank r's
 * node (r / ranks-per-node for a plan, the real host for a run: src/runtime/hosts.h); the
 * first such group's index in *first (-1 when none). Megatron keeps tensor- and context-
 * parallel groups inside a node: their collectives run every layer. */
int pg_groups_spanning_nodes(const pg_layout *l, pg_kind kind, const int *node_of, int *first);

/* The group of `rank`: fills members[pg_group_size] and *index_in_group (its rank in the
 * group), returns the group's number. Returns -1 (members untouched, *index_in_group = -1)
 * when the rank is in no group of that kind — only possible for embedding. Either output
 * pointer may be NULL. */
int pg_group_of(const pg_layout *l, pg_kind kind, int rank, int *members, int *index_in_group);

/* Pipeline neighbours (global ranks, wrapping around: the last stage's next is the first).
 * pg_is_last_stage: the rank holding the last stage (pp rank 0 with the V placement). */
int pg_next_pp_rank(const pg_layout *l, int rank);
int pg_prev_pp_rank(const pg_layout *l, int rank);
bool pg_is_first_stage(const pg_layout *l, int rank);
bool pg_is_last_stage(const pg_layout *l, int rank);

#endif /* TRIDENT_RUNTIME_GROUPS_H */
