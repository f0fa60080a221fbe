/* Exercise 1 — a rank's place in the grid: global rank <-> (tp, cp, dp, pp) coordinates.
 *
 * This code replaces the region between the "exercise 1" markers of src/runtime/groups.c;
 * that file's includes (src/runtime/groups.h, src/core/check.h) are in scope. Every group
 * (tp, cp, dp, ep, edp, pp, ...), the neighbours in the pipeline and `trident groups` are
 * derived from these two functions, so the tests check the groups, not just the numbers.
 *
 * The contract (src/runtime/groups.h):
 *   A layout l has l->world = l->tp * l->cp * l->pp * l->dp ranks. Tensor-parallel is
 *   always the FASTEST-varying coordinate (a TP group sits on one node), context-parallel
 *   next. l->order says which of the other two comes after:
 *     PG_ORDER_TP_DP_PP (Megatron's default)  rank = tp + l->tp * (cp + l->cp * (dp + l->dp * pp))
 *     PG_ORDER_TP_PP_DP                       rank = tp + l->tp * (cp + l->cp * (pp + l->pp * dp))
 *   The data-parallel rank splits into expert-parallel parts: dp = ep + l->ep * edp.
 *   Worked example: world 16, tp 2, pp 4, dp 2 (cp = ep = 1), order tp-dp-pp: rank 9 is
 *   tp 1, dp 0, pp 2 (and cp 0, ep 0, edp 0).
 *   With tp 2, cp 2, pp 2, dp 2, ep 2: rank 13 is tp 1, cp 0, dp 1, pp 1, ep 1, edp 0.
 *
 *   pg_coord_of(l, rank): all six coordinates of a global rank, 0 <= rank < l->world.
 *   pg_rank_of(l, c):     the global rank of coordinates c (the inverse of pg_coord_of); it
 *                         reads tp, cp, dp and pp (ep and edp are parts of dp).
 *   Both stop the program with CHECK(cond, "hint") on an argument outside the layout.
 */
pg_coord pg_coord_of(const pg_layout *l, int rank) {
    CHECK(rank >= 0 && rank < l->world, "rank outside the layout's world");
    pg_coord c = {0}; /* TODO: compute tp, cp, dp, pp, then ep and edp, from rank and l->order */
    return c;
}

int pg_rank_of(const pg_layout *l, pg_coord c) {
    CHECK(c.tp >= 0 && c.tp < l->tp && c.cp >= 0 && c.cp < l->cp && c.pp >= 0 && c.pp < l->pp &&
              c.dp >= 0 && c.dp < l->dp,
          "coordinate outside the layout");
    return 0; /* TODO: the inverse of pg_coord_of */
}
