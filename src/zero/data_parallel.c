/* data_parallel.c — the optimizer step without ZeRO: every rank gets the whole summed gradient
 * (an all-reduce over dp, bucket by bucket: shard_ranges.h's buckets), and every rank runs
 * AdamW on every parameter, keeping the whole optimizer state (PyTorch's DDP, Megatron's
 * DistributedDataParallel without --use-distributed-optimizer).
 *
 * Not here: the overlapped variant (overlap.c), expert parallelism (expert_shard.h), ZeRO
 * (zero1.c).
 */
#include "src/zero/distopt_internal.h"

#include "src/device/device.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_label.h"

double distopt_data_parallel_step(dist_optimizer *o, float lr, float inv) {
    local_model *m = o->model;
    const zero_ranges *r = o->shard.ranges;
    distopt_sum_tied_embedding(o);
    if (o->dp_size > 1) {
        comm_label_set("grads", -1);
        for (int b = 0; b < r->n_buckets; b++) {
            const zero_bucket *bk = &r->buckets[b];
            comm_all_reduce(o->g.dp, m->grads + bk->world_start, bk->world_end - bk->world_start,
                            COMM_FLOAT32, COMM_SUM);
        }
        comm_label_clear();
    }
    if (inv != 1.0f) dev_scale(m->grads, inv, m->numel); /* the mean */
    return distopt_update_shard(o, m->grads, lr);        /* the one shard: every parameter */
}
