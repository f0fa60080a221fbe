/* Exercise 5 — what makes 1F1B and the interleaved schedule: how many forwards each rank runs
 * before its first backward (the warm-up count W), and in which order a rank with v model
 * chunks runs its forwards.
 *
 * This code replaces the region between the "exercise 5" markers of src/pp/schedule.c: two
 * static functions (read the top of that file and of schedule.h first). In scope: min_int(a, b),
 * and in the pp_config: kind (PP_1F1B, PP_ZB_H1 or PP_INTERLEAVED here), p ranks, m
 * micro-batches, v chunks per rank (v = 1 except interleaved; m is a multiple of p there).
 *
 * What is given: pp_rank_plan_build() puts every schedule of this file together from your two
 * answers — W forwards, then N − W pairs (forward, backward), then W backwards, N = m·v — and
 * the k-th backward runs the micro-batch of the k-th forward on the mirrored chunk v−1−c.
 * GPipe is the case W = N. So the schedule is decided here.
 *
 * 1. warmup_1f1b_or_interleaved(cfg, rank): W of `rank`. Its first backward needs micro-batch
 *    0's loss, so micro-batch 0 must first go forward through every later stage and its
 *    gradient come back. 1F1B starts backwards as early as that allows and so holds the fewest
 *    micro-batches: how many forwards can rank r run before that gradient can reach it? (Rank
 *    p−1 computes the loss itself.) The interleaved schedule: a micro-batch visits every rank
 *    v times (chunk c of rank r is virtual stage c·p + r), and Megatron warms up with one full
 *    round of the first v−1 chunks, (v−1)·p forwards, plus twice 1F1B's count (the doubled term
 *    keeps a chunk's next forward ready while a backward runs). Never more than N.
 * 2. kth_forward(cfg, k, &mb, &chunk): the micro-batch and chunk of the rank's k-th forward,
 *    0 <= k < m·v. One chunk: micro-batch k. Interleaved: p micro-batches through chunk 0,
 *    the same p through chunk 1, ..., through chunk v−1, then the next p micro-batches. Why p
 *    at a time? After its chunk-0 forward, micro-batch 0 returns to this rank for chunk 1
 *    after passing the other p−1 ranks: p forwards later.
 *
 * The tests (tests/pp/schedule_test.c) compare whole plans with Megatron's and check W for
 * every kind, rank and size: tutorials/exercises/05-one-f-one-b/checks.txt.
 */
static int warmup_1f1b_or_interleaved(const pp_config *cfg, int rank) {
    (void)rank;
    /* TODO: this is GPipe's W (every forward first), whatever the schedule. */
    return cfg->m * cfg->v;
}

static void kth_forward(const pp_config *cfg, int k, int *mb, int *chunk) {
    /* TODO: this runs every micro-batch through chunk 0, then every one through chunk 1, ...
     * (right for one chunk; not the interleaved order). */
    *chunk = k / cfg->m;
    *mb = k % cfg->m;
}
