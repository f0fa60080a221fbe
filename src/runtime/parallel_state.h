/* parallel_state.h — this rank's view of the layout: its coordinates, its neighbours and one
 * communicator per kind of group (the counterpart of Megatron's parallel_state).
 *
 *   pg_layout l;  pg_layout_make(&l, dist_world_size(), tp, 1, 1, pp, 1, "tp-dp-pp", err, sizeof err);
 *   parallel_state *ps = ps_create(&l, dist_rank());
 *   comm_all_reduce(ps->tp, x, n, COMM_FLOAT32, COMM_SUM);
 *   if (!ps->is_last_stage) comm_send(ps->pp, act, n, COMM_FLOAT32, ps->pp_rank + 1, tag);
 *   ps_destroy(ps);
 *
 * Every rank must call ps_create (it splits MPI_COMM_WORLD once per kind, and a split is
 * collective even for ranks that end up in no group). Without MPI (a plain serial run) the
 * layout must have world 1 and all groups are local size-1 groups.
 *
 * The embedding group: ranks of the first and last pipeline stage (both hold the tied
 * word embedding). A rank of a middle stage (pp >= 3) is in no embedding group and gets
 * embedding == NULL — deliberately not a size-1 group, which would wrongly suggest the rank
 * holds an embedding. With pp = 1 every rank is its own (size-1) embedding group.
 *
 * Context and expert parallelism (groups.h): cp, ep, edp, dp_cp, edp_cp and tp_cp are always
 * built, as size-1 groups when their dimension is 1 (tp_cp: the tp group's ranks when cp = 1).
 * Dense gradients are averaged over dp_cp (dp when cp = 1), expert gradients over edp_cp; ep
 * carries the tokens' all-to-all; tp_cp shares the switch loss's statistics when MoE runs with
 * sequence and context parallelism.
 *
 * Group ranks equal coordinates: comm_rank(ps->tp) == tp_rank, comm_rank(ps->pp) == pp_rank,
 * comm_rank(ps->dp) == dp_rank, comm_rank(ps->cp) == cp_rank, comm_rank(ps->ep) == ep_rank,
 * comm_rank(ps->edp) == edp_rank.
 *
 * Not here: how the groups are computed (groups.h), how bytes move (comm.h).
 */
#ifndef TRIDENT_RUNTIME_PARALLEL_STATE_H
#define TRIDENT_RUNTIME_PARALLEL_STATE_H

#include <stdbool.h>

#include "src/runtime/comm.h"
#include "src/runtime/groups.h"

typedef struct {
    pg_layout layout;
    int world_rank;
    int tp_rank, pp_rank, dp_rank;
    int cp_rank, ep_rank, edp_rank; /* dp_rank = ep_rank + ep · edp_rank */
    int next_pp_rank, prev_pp_rank; /* global ranks of the pipeline neighbours (wrapping) */
    bool is_first_stage, is_last_stage;
    comm_group *world, *tp, *pp, *dp, *mp;
    comm_group *embedding; /* NULL on middle pipeline stages, see above */
    comm_group *cp, *ep, *edp, *dp_cp, *edp_cp, *tp_cp;
} parallel_state;

/* Builds every group with the MPI backend (host memory). Collective over the world. */
parallel_state *ps_create(const pg_layout *l, int world_rank);
/* The same with a chosen backend (COMM_NCCL for device buffers in a CUDA build). */
parallel_state *ps_create_with(const pg_layout *l, int world_rank, comm_backend backend);
/* Waits for outstanding sends and frees every group. Every rank calls it. */
void ps_destroy(parallel_state *ps);

#endif /* TRIDENT_RUNTIME_PARALLEL_STATE_H */
