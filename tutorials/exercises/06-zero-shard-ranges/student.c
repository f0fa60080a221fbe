/* Exercise 6 — ZeRO-1 shard ranges: which pieces of which parameters a data-parallel rank owns,
 * in the three index spaces (world, local, param).
 *
 * This code replaces the region between the "exercise 6" markers of src/zero/shard_ranges.c;
 * that file's includes and its helpers min_sz(a, b), max_sz(a, b) and mallocCheck(bytes) are
 * in scope. Read the top of src/zero/shard_ranges.h (the three index spaces) first.
 *
 * What is filled in already when build_shard(r, d) runs:
 *   r->n_params parameters r->params[p] (.numel elements each), laid end to end in one flat
 *   buffer: parameter p is world indices [r->offsets[p], r->offsets[p] + numel); r->numel is
 *   the total. The buffer is padded to r->padded_numel = r->dp * r->shard_numel, and rank d
 *   owns the world indices [d * shard_numel, (d+1) * shard_numel) — its shard.
 *
 * The contract — fill r->shards[d]:
 *   rank = d; world_start, world_end: the shard's world range;
 *   real_numel: how many of its elements are real (not padding), 0 for a shard of padding only;
 *   n_pieces, pieces: one zero_piece per parameter that meets the shard, in buffer order
 *     (pieces = NULL when there are none; allocate with mallocCheck, zero_ranges_free frees it):
 *       param                    the parameter's index
 *       world_start, world_end   the part of the parameter inside the shard, world indices
 *       local_start, local_end   the same elements as offsets into the shard (0 = world_start)
 *       param_start, param_end   the same elements as offsets into the parameter (0 = its first)
 *     Empty parameters (numel 0) and empty intersections give no piece.
 */
static void build_shard(zero_ranges *r, int d) {
    zero_shard *sh = &r->shards[d];
    sh->rank = d;
    sh->world_start = sh->world_end = 0; /* TODO: the shard's range */
    sh->real_numel = 0;                  /* TODO */
    sh->n_pieces = 0;                    /* TODO: the pieces */
    sh->pieces = NULL;
}
