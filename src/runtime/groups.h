/* groups.h — which ranks talk to which: the process groups of a Megatron layout, as pure data.
 *
 * A job of `world` ranks is a grid tp × pp × dp. Every rank has coordinates
 * (tp_rank, pp_rank, dp_rank) and belongs to exactly one group of each kind:
 *
 *   tp         same (pp, dp), tp_rank varies     tensor-parallel all-reduces
 *   dp         same (tp, pp), dp_rank varies     gradient all-reduce / ZeRO
 *   pp         same (tp, dp), pp_rank varies     activations flow stage to stage
 *   mp         same dp (all tp × pp ranks)       one whole model replica
 *   embedding  first and last rank of a pp group tied input/output embedding
 *              (pp = 1: the rank alone; pp >= 3: middle stages are in no group;
 *              v_placement (zbv): pp rank 0 alone, it holds the first and the last stage)
 *
 * The rank order says how coordinates map to global ranks. Tensor is always fastest so a
 * TP group sits on one node (its all-reduces are the hottest traffic):
 *
 *   "tp-dp-pp" (Megatron's default)  rank = tp_rank + tp·(dp_rank + dp·pp_rank)
 *   "tp-pp-dp"                       rank = tp_rank + tp·(pp_rank + pp·dp_rank)
 *
 * Worked example, world 16, tp 2, pp 4 (so dp 2), order tp-dp-pp:
 *   tp  [0,1] [2,3] … [14,15]
 *   dp  [0,2] [1,3] [4,6] [5,7] [8,10] [9,11] [12,14] [13,15]
 *   pp  [0,4,8,12] [1,5,9,13] [2,6,10,14] [3,7,11,15]
 *   mp  [0,1,4,5,8,9,12,13] [2,3,6,7,10,11,14,15]
 *   embedding [0,12] [1,13] [2,14] [3,15]
 *
 * Conventions: the groups of one kind are numbered in order of their first (smallest)
 * member; members of a group are listed in ascending global rank, which is also ascending
 * order of the coordinate that varies; a rank's index in that list is its rank in the group.
 *
 * Not here: MPI. This module only computes numbers; src/runtime/parallel_state.h turns
 * them into communicators, and `trident groups` prints or draws them.
 */
#ifndef TRIDENT_RUNTIME_GROUPS_H
#define TRIDENT_RUNTIME_GROUPS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { PG_ORDER_TP_DP_PP, PG_ORDER_TP_PP_DP } pg_order;

typedef enum { PG_TP, PG_DP, PG_PP, PG_MP, PG_EMBEDDING, PG_NKINDS } pg_kind;

typedef struct {
    int world;        /* number of ranks = tp · pp · dp */
    int tp, pp, dp;   /* tensor, pipeline, data parallel sizes (dp is derived) */
    int vpp;          /* virtual pipeline size (model chunks per stage); 1 = not interleaved */
    bool v_placement; /* zbv's V: stages 0 and S-1 both on pp rank 0 (pg_layout_make: false;
                       * the caller sets it for --pipeline-schedule zbv) */
    pg_order order;
} pg_layout;

typedef struct {
    int tp, pp, dp;
} pg_coord;

/* Validates and fills a layout. order is "tp-dp-pp" or "tp-pp-dp" (NULL = "tp-dp-pp").
 * On a bad layout returns false and writes one sentence naming the values and the rule
 * into err, e.g. "world size 8 is not divisible by tensor-model-parallel-size 3 ×
 * pipeline-model-parallel-size 1". */
bool pg_layout_make(pg_layout *out, int world, int tp, int pp, int vpp, const char *order,
                    char *err, size_t errlen);

const char *pg_order_name(pg_order order); /* "tp-dp-pp" / "tp-pp-dp" */
const char *pg_kind_name(pg_kind kind);    /* "tp" "dp" "pp" "mp" "embedding" */

/* Coordinates of a global rank, and back. */
pg_coord pg_coord_of(const pg_layout *l, int rank);
int pg_rank_of(const pg_layout *l, pg_coord c);

/* How many groups of a kind, and how many ranks in each (embedding: 1 when pp = 1 or with the
 * V placement, else 2). */
int pg_num_groups(const pg_layout *l, pg_kind kind);
int pg_group_size(const pg_layout *l, pg_kind kind);

/* Members of group number `index` of a kind, ascending, into members[pg_group_size]. */
void pg_group_members(const pg_layout *l, pg_kind kind, int index, int *members);

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
