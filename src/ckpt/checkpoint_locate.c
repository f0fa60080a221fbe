/* checkpoint_locate.c — who holds what, in the saving layout and in the loading one
 * (checkpoint.h; src/ckpt/CHECKPOINTS.md explains the files and resharding):
 *
 *   a rank's coordinates and ZeRO shard      ckpt_coord_of
 *   the optimizer state it holds, as pieces   ckpt_state_parts (src/zero/shard_ranges.h)
 *   where element s of a serial tensor lives  checkpoint_locate (tp), checkpoint_locate_expert (ep)
 *
 * Not here: reading or writing files (checkpoint_save.c, checkpoint_read.c).
 */
#include "src/ckpt/checkpoint_internal.h"

pg_coord ckpt_coord_of(const ckpt_layout *c, int rank, int *shard_index) {
    pg_coord none = {0};
    if (shard_index) *shard_index = 0;
    if (c->world_size <= 1) return none;
    const int cp = c->cp > 1 ? c->cp : 1, ep = c->ep > 1 ? c->ep : 1;
    pg_layout l;
    char err[256];
    CHECK(pg_layout_make(&l, c->world_size, c->tp, cp, ep, c->pp, c->vpp, c->rank_order, err,
                         sizeof err),
          "the trainer checked the layout before saving or loading");
    pg_coord xy = pg_coord_of(&l, rank);
    if (shard_index) *shard_index = xy.dp;
    if (shard_index && cp > 1) pg_group_of(&l, PG_DP_CP, rank, NULL, shard_index);
    return xy;
}

/* This rank's optimizer state as pieces of parameters (src/zero/shard_ranges.h): with ZeRO
 * the pieces of its shard (local_start indexes the shard-sized arrays); without it the one
 * shard of the dp = 1 ranges, whose pieces are whole parameters at their buffer offsets. */
static const zero_shard *state_pieces(const ckpt_layout *c, dist_optimizer *opt, int rank) {
    const zero_ranges *r = distopt_ranges(opt);
    int d = 0;
    if (c->zero) ckpt_coord_of(c, rank, &d);
    CHECK(d >= 0 && d < r->dp, "the data-parallel rank is inside the optimizer's shards");
    return &r->shards[d];
}

int ckpt_state_parts(const ckpt_layout *c, dist_optimizer *opt, int rank,
                     distopt_state_part part[DISTOPT_MAX_PARTS]) {
    const int n = distopt_state_parts(opt, part);
    part[0].pieces = state_pieces(c, opt, rank);
    return n;
}

bool checkpoint_locate(int split, size_t full_rows, size_t full_cols, int tp_size, size_t serial,
                       int *tp_rank, size_t *local) {
    if (full_cols == 0 || serial / full_cols >= full_rows) return false;
    const size_t tp = (size_t)tp_size, row = serial / full_cols, col = serial % full_cols;
    switch ((gpt_split)split) {
    case SPLIT_EXPERTS: /* whole on every TP rank (the ep cut: checkpoint_locate_expert) */
    case SPLIT_NONE:
        *tp_rank = -1;
        *local = serial;
        return true;
    case SPLIT_ROWS: { /* W = [W_0; W_1; ...]: rank r holds rows [r*rows, (r+1)*rows) */
        size_t rows = full_rows / tp;
        *tp_rank = (int)(row / rows);
        *local = (row % rows) * full_cols + col;
        return true;
    }
    case SPLIT_COLS: { /* W = [W_0 | W_1 | ...]: rank r holds columns [r*cols, (r+1)*cols) */
        size_t cols = full_cols / tp;
        *tp_rank = (int)(col / cols);
        *local = row * cols + col % cols;
        return true;
    }
    case SPLIT_QKV: { /* [Q; K; V], each cut by rows: rank r holds [Q_r; K_r; V_r] */
        size_t part_full = full_rows / 3, part = part_full / tp;
        size_t which = row / part_full, within = row % part_full;
        *tp_rank = (int)(within / part);
        *local = (which * part + within % part) * full_cols + col;
        return true;
    }
    }
    return false;
}

bool checkpoint_locate_expert(size_t full_rows, size_t full_cols, int ep_size, size_t serial,
                              int *ep_rank, size_t *local) {
    /* W = [experts 0..El-1; El..2El-1; ...]: ep rank r holds rows [r·rows, (r+1)·rows) */
    if (ep_size < 1 || full_cols == 0 || full_rows % (size_t)ep_size != 0 ||
        serial / full_cols >= full_rows)
        return false;
    const size_t per = full_rows / (size_t)ep_size * full_cols; /* elements per ep rank */
    *ep_rank = (int)(serial / per);
    *local = serial % per;
    return true;
}
