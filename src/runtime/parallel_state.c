/* parallel_state.c — turns the numbers of groups.c into communicators for this rank.
 * One comm_group_split per kind, in the same order on every rank; the group's number is the
 * split colour and its member list (ascending) fixes the rank order inside the group. */
#include "src/runtime/parallel_state.h"

#include <stdio.h>
#include <stdlib.h>

#include "src/core/check.h"
#include "src/runtime/dist.h"

static comm_group *make_group(const pg_layout *l, pg_kind kind, int rank, comm_backend backend) {
    int size = pg_group_size(l, kind);
    int *members = mallocCheck(sizeof(int) * (size_t)size);
    int number = pg_group_of(l, kind, rank, members, NULL);
    comm_group *g = number >= 0
                        ? comm_group_split(pg_kind_name(kind), number, members, size, backend)
                        : comm_group_split(pg_kind_name(kind), 0, NULL, 0, backend);
    free(members);
    return g;
}

parallel_state *ps_create_with(const pg_layout *l, int world_rank, comm_backend backend) {
    if (l->world != dist_world_size()) { /* every rank sees the same mismatch: one message */
        char context[48] = "";
        if (l->cp > 1) snprintf(context, sizeof context, " × context %d", l->cp);
        dist_fail_all("the layout needs world size %d (tensor %d%s × pipeline %d × data %d) but "
                      "this job has %d "
                      "rank%s: launch with mpirun -np %d",
                      l->world, l->tp, context, l->pp, l->dp, dist_world_size(),
                      dist_world_size() == 1 ? "" : "s", l->world);
    }
    CHECK(world_rank == dist_rank(), "ps_create takes this process's own rank");
    parallel_state *ps = callocCheck(1, sizeof *ps);
    ps->layout = *l;
    ps->world_rank = world_rank;
    pg_coord c = pg_coord_of(l, world_rank);
    ps->tp_rank = c.tp;
    ps->pp_rank = c.pp;
    ps->dp_rank = c.dp;
    ps->cp_rank = c.cp;
    ps->ep_rank = c.ep;
    ps->edp_rank = c.edp;
    ps->next_pp_rank = pg_next_pp_rank(l, world_rank);
    ps->prev_pp_rank = pg_prev_pp_rank(l, world_rank);
    ps->is_first_stage = pg_is_first_stage(l, world_rank);
    ps->is_last_stage = pg_is_last_stage(l, world_rank);
    ps->world = comm_group_world(backend);
    ps->tp = make_group(l, PG_TP, world_rank, backend);
    ps->pp = make_group(l, PG_PP, world_rank, backend);
    ps->dp = make_group(l, PG_DP, world_rank, backend);
    ps->mp = make_group(l, PG_MP, world_rank, backend);
    ps->embedding = make_group(l, PG_EMBEDDING, world_rank, backend);
    ps->cp = make_group(l, PG_CP, world_rank, backend);
    ps->ep = make_group(l, PG_EP, world_rank, backend);
    ps->edp = make_group(l, PG_EDP, world_rank, backend);
    ps->dp_cp = make_group(l, PG_DP_CP, world_rank, backend);
    ps->edp_cp = make_group(l, PG_EDP_CP, world_rank, backend);
    ps->tp_cp = make_group(l, PG_TP_CP, world_rank, backend);
    CHECK(comm_rank(ps->tp) == ps->tp_rank && comm_rank(ps->pp) == ps->pp_rank &&
              comm_rank(ps->dp) == ps->dp_rank && comm_rank(ps->cp) == ps->cp_rank &&
              comm_rank(ps->ep) == ps->ep_rank && comm_rank(ps->edp) == ps->edp_rank,
          "group ranks must equal the coordinates");
    return ps;
}

parallel_state *ps_create(const pg_layout *l, int world_rank) {
    return ps_create_with(l, world_rank, COMM_MPI);
}

void ps_destroy(parallel_state *ps) {
    if (!ps) return;
    comm_group_destroy(ps->tp_cp);
    comm_group_destroy(ps->edp_cp);
    comm_group_destroy(ps->dp_cp);
    comm_group_destroy(ps->edp);
    comm_group_destroy(ps->ep);
    comm_group_destroy(ps->cp);
    comm_group_destroy(ps->embedding);
    comm_group_destroy(ps->mp);
    comm_group_destroy(ps->dp);
    comm_group_destroy(ps->pp);
    comm_group_destroy(ps->tp);
    comm_group_destroy(ps->world);
    free(ps);
}
