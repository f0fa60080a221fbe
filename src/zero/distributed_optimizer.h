/* distributed_optimizer.h — one optimizer step for any layout: gradient synchronisation
 * across data-parallel ranks, gradient clipping, and AdamW, with ZeRO stage 0 to 3
 * (Megatron-FSDP's --data-parallel-sharding-strategy no_shard | optim | optim_grads |
 * optim_grads_params; --use-distributed-optimizer is optim, ZeRO-1).
 *
 * The order inside a step (it matters, see the tied embedding):
 *   1. tied embedding: the first and last pipeline stage each hold wte; their gradients are
 *      summed over the embedding group, so both copies see the full gradient;
 *   2. data parallel: without ZeRO, the gradient buffer is all-reduced (in buckets) and
 *      divided by dp; with ZeRO-1 it is reduce-scattered IN PLACE so DP rank d gets the
 *      summed gradient of its shard only (src/zero/shard_ranges.h), divided by dp;
 *      then, with sequence parallelism, the parameters that each tensor-parallel rank saw on
 *      its sequence shard only (gpt_param.sequence_parallel: the LayerNorms) get the sum over
 *      the TP group — on this rank's pieces of them, which its TP peers hold alike (their
 *      buffers have the same layout), so it works the same with or without ZeRO;
 *   3. the global gradient norm over every parameter counted once (TP replicas and the
 *      head's wte copy excluded), summed over the ranks that hold different parts;
 *   4. AdamW: without ZeRO on the whole buffer; with ZeRO on the shard's pieces only — the
 *      fp32 master weights and Adam moments exist for the shard alone — then the updated
 *      parameters are all-gathered from their owners, in place.
 * With --overlap-grad-reduce, step 2 happens bucket by bucket during the backward (the tied
 * embedding's buckets only after step 1, at the step), and with --overlap-param-gather the
 * all-gather of step 4 finishes during the next forward: src/zero/overlap.h.
 * With ZeRO the shards are offsets into the model's own buffers, which distopt_create pads to
 * the shard layout (local_model_pad): no step copies a whole buffer (the picture is at the
 * top of zero1.c). After a ZeRO step the gradient buffer holds this rank's reduced shard at
 * its start and stale values elsewhere; the next backward zeroes it.
 * With one process all of this is the serial AdamW step.
 *
 * ZeRO-2 and ZeRO-3 (src/zero/fsdp.h): the model keeps no gradient buffer (ZeRO-3 no
 * parameter buffer either); each unit's gradients are reduce-scattered during the backward,
 * micro-batch by micro-batch, into a gradient shard of the UNITS layout (shard_ranges.h), so
 * step 2 is done when the step begins and step 1 becomes the sum of the tied wte's two
 * slices. Steps 3 and 4 are ZeRO-1's on that shard; after the update ZeRO-2 all-gathers the
 * parameters unit by unit, ZeRO-3 gathers nothing (the next passes gather what they read).
 * Neither takes --overlap-grad-reduce, --overlap-param-gather or --fp16 (the flags refuse
 * them: config.c says why).
 *
 * Mixed precision (--bf16, --fp16): the model's parameters and gradients hold values
 * representable in 16 bits (rounded with round-to-nearest-even; the CPU kernels compute in
 * fp32, like tensor cores accumulate in fp32). The optimizer keeps fp32 master weights — for
 * the whole buffer without ZeRO, for its shard only with ZeRO — updates them, and writes
 * them back rounded. fp16 also scales the loss (src/precision/loss_scaler.h): gradients
 * arrive multiplied by the scale, are checked for inf/NaN on every rank, and the step is
 * skipped (and the scale lowered) on overflow.
 *
 * Each way through these steps is one function in the file of its idea (distopt_internal.h):
 * data_parallel.c (no ZeRO), zero1.c (reduce-scatter → AdamW on the shard → all-gather),
 * overlap.c, fsdp.c (ZeRO-2/3) and expert_shard.c (expert parallelism, whose experts get a
 * shard of their own over expert_dp: expert_shard.h).
 */
#ifndef TRIDENT_ZERO_DISTRIBUTED_OPTIMIZER_H
#define TRIDENT_ZERO_DISTRIBUTED_OPTIMIZER_H

#include <stdbool.h>
#include <stddef.h>

#include "src/optim/adamw.h"
#include "src/precision/convert.h"
#include "src/precision/loss_scaler.h"
#include "src/model/local_model.h"
#include "src/zero/shard_ranges.h"

typedef struct comm_group comm_group;

typedef struct {
    comm_group *dp;        /* data-parallel group (NULL = 1) */
    comm_group *norm;      /* ranks whose norm pieces differ: model-parallel (TP×PP), or the
                              whole world with ZeRO (NULL = 1) */
    comm_group *embedding; /* first + last pipeline stage (NULL or size 1 = no tie to sync) */
    comm_group *tp;        /* sequence parallelism: the tensor-parallel group that sums the
                              sequence_parallel parameters' gradients (NULL = none) */
    bool zero;             /* --use-distributed-optimizer: ZeRO-1 (when zero_stage is 0) */
    int zero_stage;        /* 0: as `zero` says; 1, 2 or 3: the stage (overrides `zero`) */
    size_t bucket_numel;   /* all-reduce bucket size without ZeRO (0 = one bucket) */
    comm_group *world;     /* every rank: agrees on fp16 overflow (NULL = 1) */
    prec_dtype dtype;      /* PREC_FP32, PREC_BF16 or PREC_FP16 */
    bool overlap_grads;    /* --overlap-grad-reduce: buckets reduced during the backward
                              (src/zero/overlap.h; not with fp16) */
    bool overlap_params;   /* --overlap-param-gather (ZeRO): gathers finish during the next
                              forward */
    /* Expert parallelism (src/zero/expert_shard.h): the ranks holding the same experts
     * (edp × cp) and those holding the other experts. NULL: no expert parallelism. */
    comm_group *expert_dp, *ep;
} distopt_groups;

typedef struct dist_optimizer dist_optimizer;

/* With ZeRO-1, pads model->params and model->grads to the shard layout (their pointers
 * change: take them from the model after this call); with ZeRO-2/3 takes them away (grads, and
 * with ZeRO-3 params, become NULL). */
dist_optimizer *distopt_create(local_model *model, const adamw_config *cfg,
                               const distopt_groups *g);
void distopt_destroy(dist_optimizer *o);

typedef struct {
    double grad_norm; /* before clipping */
    float lr;
    bool skipped;     /* fp16 overflow: no update this step */
    float loss_scale; /* the scale the NEXT backward must use (1 unless fp16) */
} distopt_stats;

/* Synchronises the gradients in model->grads and updates model->params for iteration `it`
 * (1-based: learning rate schedule and Adam bias correction). */
distopt_stats distopt_step(dist_optimizer *o, int it);

/* The loss scale the backward pass must multiply the loss by (1 unless fp16). */
float distopt_loss_scale(const dist_optimizer *o);
/* With --overlap-param-gather the step returns before every parameter has arrived (the next
 * forward waits for each layer's own). Whatever else reads model->params — checkpoints,
 * evaluation outside the executor, generation, the end of a run, tests — calls this first
 * (or distopt_whole_params, which ZeRO-3 needs). Cheap when nothing is pending. */
void distopt_wait_params(dist_optimizer *o);
/* Before a step's backward: zeroes the gradients (the model's buffer, or the ZeRO-2/3 shard);
 * with ZeRO-3 frees a whole-parameter copy made by distopt_whole_params. */
void distopt_zero_grads(dist_optimizer *o);
/* model->params with every parameter in it, for readers of the whole buffer (checkpoints,
 * tests, generation): distopt_wait_params, and with ZeRO-3 an all-gather of every unit into a
 * transient buffer, freed when the next step begins (collective over dp). Returns it. */
float *distopt_whole_params(dist_optimizer *o);
/* After something wrote into distopt_whole_params' buffer (a checkpoint load): ZeRO-3 keeps
 * this rank's slices of it as its parameter shard and frees it. Nothing for other stages. */
void distopt_params_loaded(dist_optimizer *o);
/* The ZeRO stage, 0 to 3. */
int distopt_stage(const dist_optimizer *o);

/* Bytes this rank holds for the model's state, as allocated. Storage is fp32 for every
 * precision (bf16/fp16 values are fp32 floats rounded to 16 bits; the paper counts 2 bytes):
 *   stage      params      grads        master (bf16/fp16)   adam (m + v)   work
 *   0          4Ψ          4Ψ           4Ψ                   8Ψ             -
 *   1          4P          4P           4S                   8S             -
 *   1 + ep     4P          4P + 4X      4(S + Sx)            8(S + Sx)      -
 *   2          4Ψ          4S           4S                   8S             4B
 *   3          4S          4S           4S                   8S             12B
 * Ψ = parameters of this rank (model->numel), P = ZeRO-1's padded buffer (dp·S1), S the
 * shard (ZeRO-1: P/dp; ZeRO-2/3: Σ of the units' slices, shard_ranges.h UNITS), B = the
 * bucket, dp × the largest unit's slice (ZeRO-3 adds two parameter gather buffers of B).
 * With expert parallelism X = the experts' packed buffer (padded to a multiple of expert_dp ·
 * 64), Sx = X / expert_dp their shard; the dense shard S still spans the experts' positions. */
typedef struct {
    size_t params, grads, master, adam, work;
} distopt_memory;
distopt_memory distopt_memory_held(const dist_optimizer *o);

/* Test hook: the next step sees an inf in its gradients (fp16 recovery test). */
void distopt_inject_overflow(dist_optimizer *o);
/* fp32 master weights (numel without ZeRO, shard with ZeRO; the dense shard with experts),
 * NULL in fp32 runs; device memory. */
float *distopt_master(dist_optimizer *o, size_t *n);
prec_scaler *distopt_scaler(dist_optimizer *o);

/* The ranges (world/local/param) used with ZeRO; the dp = 1 layout without it. */
const zero_ranges *distopt_ranges(const dist_optimizer *o);
/* Optimizer-state bytes this rank holds: Adam m and v (of both shards with experts). */
size_t distopt_state_bytes(const dist_optimizer *o);

/* The Adam moments for checkpoints: this rank's m and v (shard-sized with ZeRO); device memory. */
float *distopt_moment(dist_optimizer *o, int which /* 0 = m, 1 = v */, size_t *n);
int distopt_step_count(const dist_optimizer *o);

/* This rank's optimizer state, part by part (checkpoints): one part, or with ZeRO-1 and
 * expert parallelism two — the dense shard over dp (distopt_moment's, distopt_master's), then
 * the expert shard over expert_dp. A part's pieces index its arrays by local_start; device
 * memory. Returns the number of parts. */
#define DISTOPT_MAX_PARTS 2
typedef struct {
    const zero_shard *pieces;
    float *m, *v;  /* (n) Adam moments */
    float *master; /* (n) fp32 master weights; NULL in fp32 runs */
    size_t n;
} distopt_state_part;
int distopt_state_parts(dist_optimizer *o, distopt_state_part parts[DISTOPT_MAX_PARTS]);
void distopt_set_step_count(dist_optimizer *o, int t);

#endif /* TRIDENT_ZERO_DISTRIBUTED_OPTIMIZER_H */
