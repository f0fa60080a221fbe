/* zero1.c — ZeRO-1 (Rajbhandari et al. 2020, "P_os": the optimizer state partitioned; Megatron's
 * distributed optimizer, --use-distributed-optimizer): one optimizer step.
 *
 * It works on offsets into the model's own buffers, never on copies: distopt_create pads
 * params and grads to the shard layout (local_model_pad, shard_ranges.h), and then, with
 * S = shard_numel and d this rank's place in the data-parallel group,
 *
 *   grads   [ shard 0 | shard 1 | ... | shard dp-1 ]    reduce-scatter in place (comm.h):
 *           [ sum of shard d |  (stale: zeroed before the next backward)  ]
 *   params  [ shard 0 | ... | shard d | ... ]           AdamW on params + d*S (or on the fp32
 *                              ^ d*S                    master shard, then rounded into it)
 *           [ shard 0 | shard 1 | ... | shard dp-1 ]    all-gather in place from params + d*S
 *
 * so a piece of the shard is found at grads + local_start, params + world_start and m, v,
 * master + local_start — and Adam's m and v (and the fp32 master weights) exist for the shard
 * alone: 1/dp of the optimizer state on each rank, for the same traffic as the all-reduce
 * (a reduce-scatter and an all-gather are its two halves).
 *
 * Not here: the cut (shard_ranges.h), AdamW on the shard (optimizer_steps.c), the overlapped
 * variant (overlap.c), ZeRO-1 with expert parallelism (expert_shard.h).
 */
#include "src/zero/distopt_internal.h"

#include "src/device/device.h"

double distopt_zero1_step(dist_optimizer *o, float lr, float inv) {
    float *grads = o->model->grads, *params = o->model->params;
    const size_t S = o->shard.ranges->shard_numel;
    distopt_sum_tied_embedding(o);
    distopt_reduce_scatter(o->g.dp, grads, S, "grads");     /* grads[0, S): Σ over dp of shard d */
    dev_scale(grads, inv, S);                               /* the mean */
    const double norm = distopt_update_shard(o, grads, lr); /* AdamW on params[d·S, (d+1)·S) */
    distopt_all_gather(o->g.dp, params + o->shard.mine->world_start, params, S, "params");
    return norm;
}
