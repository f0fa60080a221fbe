    /* Exercise 5 — one rank's 1F1B plan: warmup, steady one-forward-one-backward, cooldown.
     *
     * This code replaces the region between the "exercise 5" markers INSIDE
     * pp_rank_plan_build() of src/pp/schedule.c (read the top of that file and of schedule.h).
     * It is a run of statements, not a function. In scope at this point:
     *   cfg   the schedule (cfg->p ranks, cfg->m micro-batches, cfg->v chunks per rank)
     *   rank  this pipeline rank, 0 <= rank < p
     *   N     forwards (= backwards) this rank runs: m * v
     *   W     warmup forwards of this rank (pp_warmup: m for GPipe, min(p - rank - 1, m) for
     *         1F1B, Megatron's formula for interleaved)
     *   out   the plan; out->actions has room for 2N actions, out->warmup = out->cooldown = W
     *   n, nf, nb   actions, forwards and backwards pushed so far (all 0)
     *   PUSH(op, kth_fn, counter, phase)   appends one action: op PP_FORWARD with
     *         kth_forward and nf, or PP_BACKWARD with kth_backward and nb (they pick the
     *         (micro-batch, chunk) of the counter-th forward/backward and advance the counter);
     *         phase is PP_WARMUP, PP_STEADY or PP_COOLDOWN.
     *
     * The contract: every schedule here is
     *     W forwards (warmup) | N - W pairs "forward, then backward" (steady) | W backwards (cooldown)
     * so GPipe (W = N) is all forwards then all backwards, and 1F1B keeps at most W + 1
     * micro-batches alive on a rank. After your code, n == 2N, nf == N and nb == N.
     */
    /* TODO: this is GPipe whatever W says; make it warmup / steady / cooldown. */
    for (int i = 0; i < N; i++) PUSH(PP_FORWARD, kth_forward, nf, PP_WARMUP);
    for (int i = 0; i < N; i++) PUSH(PP_BACKWARD, kth_backward, nb, PP_COOLDOWN);
