/* overlap.h — overlapped gradient reduction (--overlap-grad-reduce) and parameter all-gather
 * (--overlap-param-gather), bucket by bucket, on a communication stream (comm_stream.h).
 *
 * Gradients. The buckets of the gradient buffer (shard_ranges.h) fill up in the reverse of
 * the forward order while the last micro-batch's backward runs; the model reports each
 * weight's gradient final as soon as W computes it (src/model/gpt_hooks.h) and a bucket's
 * collective is queued on the stream as soon as all its elements are:
 *
 *   backward (last mb)  ── blk 3 W ── blk 2 W ── blk 1 W ── blk 0 W ── emb W ── | finish
 *   stream                         ── bucket 3 ───── bucket 2 ──── bucket 1 ──  ── bucket 0
 *
 *   without ZeRO   all-reduce of the bucket, in place;
 *   with ZeRO      reduce-scatter of the bucket with UNEVEN counts (bucket ∩ shard d for each
 *                  DP rank d) into a shard-sized buffer of its own: reducing in place, as the
 *                  whole-buffer step does, would move partial sums over buckets the backward
 *                  has not finished. At finish it is copied to grads[0, S), where the
 *                  optimizer reads the shard (one copy of S floats).
 * The ZeRO layout stays the whole-buffer one ([shard 0 | shard 1 | ...]); a bucket simply
 * straddles the shards it touches. A bucket holding a tied wte (first and last pipeline stage)
 * is never queued early: its two copies must be summed over the embedding group first, so it
 * waits for finish, where the optimizer sums them and then queues it. bf16 gradients are
 * rounded bucket by bucket just before their collective (the whole-buffer step rounds them
 * all at once: the same values). fp16 is refused by the flag check: its overflow check needs
 * every local gradient before any reduction.
 *
 * Parameters (ZeRO only). After the update each bucket's all-gather (uneven: bucket ∩ shards,
 * in place) is queued in forward order, and the model's params_needed hook waits for the
 * buckets holding a layer just before that layer's first forward of the next step. Anything
 * else that reads parameters calls zero_overlap_wait_params first.
 *
 * Every DP replica queues the same collectives in the same order (same layout, same plan),
 * as MPI requires on the stream's communicator.
 *
 * The optimizer's step with these flags is distopt_overlap_step, at the end of overlap.c.
 *
 * Not here: AdamW on the shard (optimizer_steps.c), the thread (comm_stream.c).
 */
#ifndef TRIDENT_ZERO_OVERLAP_H
#define TRIDENT_ZERO_OVERLAP_H

#include <stdbool.h>

#include "src/model/local_model.h"
#include "src/precision/convert.h"
#include "src/zero/shard_ranges.h"

typedef struct comm_group comm_group;
typedef struct zero_overlap zero_overlap;

typedef struct {
    bool grads;            /* --overlap-grad-reduce */
    bool params;           /* --overlap-param-gather (needs zero) */
    bool zero;             /* --use-distributed-optimizer: reduce-scatter, not all-reduce */
    const gpt_param *tie;  /* this rank's tied wte, summed over the embedding group (or NULL) */
    const gpt_param *tie2; /* zbv: the second copy on this same rank (local_model.h), or NULL:
                              its sum with `tie` happens after the backward, so it waits too */
    prec_dtype dtype;      /* gradients are rounded to it before their reduction */
} zero_overlap_config;

/* Installs the model hooks; collective over dp (the stream duplicates its communicator).
 * r is the optimizer's layout (kept, not copied). */
zero_overlap *zero_overlap_create(local_model *m, const zero_ranges *r, comm_group *dp,
                                  const zero_overlap_config *cfg);
void zero_overlap_destroy(zero_overlap *o); /* removes the hooks; NULL is fine */

/* At the optimizer step. Gradients: queues every bucket not queued yet — after rounding them,
 * and after calling sum_tie(ctx) on the tied wte's rounded gradient — and waits for all; with
 * ZeRO the reduced shard is then at grads[0, S). Then the next step may report again. */
void zero_overlap_finish_grads(zero_overlap *o, void (*sum_tie)(void *ctx), void *ctx);
/* Queues the all-gather of every bucket (after the update of this rank's shard). */
void zero_overlap_launch_params(zero_overlap *o);
/* Waits for every queued all-gather: all parameters are in place on return. */
void zero_overlap_wait_params(zero_overlap *o);

#endif /* TRIDENT_ZERO_OVERLAP_H */
