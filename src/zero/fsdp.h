/* fsdp.h — ZeRO-2 and ZeRO-3 (Megatron-FSDP's --data-parallel-sharding-strategy optim_grads
 * and optim_grads_params): the gradients, and with ZeRO-3 the parameters too, kept as this
 * rank's slices of each unit; the model's whole gradient (and parameter) buffer is given back.
 *
 * The layout is shard_ranges.h's UNITS: every unit (wte, wpe, one block, the final norm) cut
 * into dp slices of s_u elements; this rank's slices, one after another, are its shard of
 * S = Σ s_u elements — the gradient shard, the parameter shard (ZeRO-3), and the optimizer's
 * m, v and master weights, all indexed alike (the pieces' local index).
 *
 *   process buffers     params [ wte | wpe | block 0 | ... | lnf ]   ZeRO-2 keeps it; ZeRO-3 not
 *                       grads  (none)
 *   this rank, d        grad shard  [ wte_d | wpe_d | block0_d | ... | lnf_d ]      (S)
 *                       param shard [ the same slices of the parameters ]   ZeRO-3 (S)
 *   work                one bucket: the largest unit padded, dp·max s_u
 *                       ZeRO-3: two gather buffers of that size (in use, prefetched)
 *
 * Gradients (both stages). The model's W asks for a unit's gradients (gpt_hooks.h, SHARDED
 * STORAGE) and gets the bucket, zeroed; when W has written it the bucket is rounded (bf16),
 * reduce-scattered in place over the data-parallel group — each rank keeps the sum of its
 * slice — and added into the gradient shard. Nothing else holds a gradient.
 *
 * GRADIENT ACCUMULATION. With m micro-batches per step, W of a unit runs m times. There are
 * two ways to sum over them: keep a whole gradient buffer until the last micro-batch and
 * reduce-scatter once (ZeRO-1's traffic, but Ψ gradients held — the memory ZeRO-2 exists to
 * save), or reduce-scatter after every micro-batch and accumulate the slices in the shard.
 * This module does the second, as DeepSpeed's ZeRO-2 and Megatron-FSDP do: never more than one
 * bucket beyond the shard, at m times the gradient traffic (m reduce-scatters of Ψ per step
 * instead of one). The sum over micro-batches then happens after the sum over ranks, in
 * another order than the serial run's: equal up to fp32 rounding (1e-5 in the tests). bf16
 * rounds each micro-batch's bucket before its reduce-scatter (the serial run rounds the sum).
 *
 * Parameters (ZeRO-3). Forward and the input-gradient backward B ask for a unit's parameters;
 * the unit is all-gathered from every rank's slice into a gather buffer, read, and given back
 * when the pass is done with it. The same unit is gathered again for B, and again for a full
 * recomputation: 3 gathers of Ψ per micro-batch with recomputation, 2 without. The pass names
 * the unit it reads next; that one is all-gathered on the communication stream
 * (comm_stream.h) while the current unit computes (prefetch, one unit ahead), into the second
 * gather buffer; a prefetch the pass does not take is waited for and dropped. On devices other
 * than the plain CPU every gather blocks: the stream's thread hands MPI the buffers themselves,
 * which only the cpu device lets a thread touch outside a kernel (cpu-guarded traps it; cuda
 * memory is not host memory, and the flags refuse cuda here). The weight
 * gradient W (the split backward of zb-h1 and zbv) reads no weight — dW = dY^T X from the
 * activations and B's hand-over — so nothing is gathered for it; only its gradients are
 * bucketed. After the optimizer's update the gather buffers are stale and dropped.
 *
 * The tied wte: its copies (first and last pipeline stage, or zbv's two chunks on rank 0) are
 * units of equal size, so each rank's slices of them cover the same rows; after the
 * reduce-scatters their slices are summed — over the embedding group, or locally for zbv —
 * instead of the whole gradients before (the sum is linear, so the result is the same).
 *
 * Readers of the whole parameter buffer under ZeRO-3 (checkpoints, tests, the end of a run):
 * zero_fsdp_gather_whole gathers it into a transient buffer at model->params, freed when the
 * next step begins; after a checkpoint load wrote into it, zero_fsdp_take_whole keeps this
 * rank's slices and frees it.
 *
 * Every DP replica runs the same passes over the same layout, so every rank issues the same
 * collectives in the same order (the stream's on its own communicator).
 *
 * The optimizer's step on these shards is distopt_fsdp_step, at the end of fsdp.c.
 *
 * Not here: AdamW on the shard (optimizer_steps.c), the cut (shard_ranges.c).
 */
#ifndef TRIDENT_ZERO_FSDP_H
#define TRIDENT_ZERO_FSDP_H

#include <stdbool.h>
#include <stddef.h>

#include "src/model/local_model.h"
#include "src/precision/convert.h"
#include "src/zero/shard_ranges.h"

typedef struct comm_group comm_group;
typedef struct zero_fsdp zero_fsdp;

typedef struct {
    int stage;        /* 2: gradients sharded; 3: parameters too */
    prec_dtype dtype; /* gradients are rounded to it before each reduce-scatter (not fp16) */
    bool prefetch;    /* ZeRO-3: gather the next unit on a communication stream */
} zero_fsdp_config;

/* The UNITS layout of this rank's buffer over dp ranks (gpt_param_starts_unit), with the
 * optimizer's flags per parameter. Free with zero_ranges_free. */
zero_ranges *zero_fsdp_ranges(const local_model *m, int dp, size_t align);
/* The same cut of the n parameters plist (in buffer order) without a model: the one
 * `trident memory` prices (src/train/memory_predict.c). in_norm may be NULL (all false). */
zero_ranges *zero_fsdp_ranges_of(const gpt_param *const *plist, const bool *in_norm, int n, int dp,
                                 size_t align);
/* Elements of one work buffer (the gradient bucket, each ZeRO-3 gather buffer): the largest
 * unit padded, dp · max s_u. */
size_t zero_fsdp_bucket_numel(const zero_ranges *r);
/* Bytes of the work buffers a stage 2 (one bucket) or 3 (and two gather buffers) holds. */
size_t zero_fsdp_work_bytes(const zero_ranges *r, int stage);

/* Takes the model's gradients (and with ZeRO-3 its parameters: their slices are copied into
 * the parameter shard first) and installs the storage hooks; r is kept, not copied.
 * Collective over dp (the prefetch stream duplicates its communicator). The model's buffers
 * are given back before the rest is allocated, so start-up never holds more than a step:
 * ZeRO-3's one transient is the whole parameters beside the parameter shard. */
zero_fsdp *zero_fsdp_create(local_model *m, const zero_ranges *r, comm_group *dp,
                            const zero_fsdp_config *cfg);
void zero_fsdp_destroy(zero_fsdp *f); /* removes the hooks; NULL is fine */

/* (S) the gradient shard: the reduce-scattered buckets of this step, summed. */
float *zero_fsdp_grads(zero_fsdp *f);
/* (S) ZeRO-3's parameter shard (device memory); NULL with ZeRO-2. */
float *zero_fsdp_params(zero_fsdp *f);

/* A new step: the gradient shard is zeroed; ZeRO-3 drops a whole-parameter copy. */
void zero_fsdp_zero_grads(zero_fsdp *f);
/* The tied wte's two copies (tie on this rank, summed over `embedding`; or tie and tie2 both
 * on this rank) get the sum of their gradient slices. */
void zero_fsdp_sum_tied(zero_fsdp *f, comm_group *embedding, const gpt_param *tie,
                        const gpt_param *tie2);
/* After the update. ZeRO-2: every unit's slices are all-gathered into model->params.
 * ZeRO-3: gathered or prefetched units are dropped (the next pass gathers the new values). */
void zero_fsdp_params_updated(zero_fsdp *f);

/* ZeRO-3: model->params = every parameter, gathered into a transient buffer (freed by
 * zero_fsdp_zero_grads, zero_fsdp_take_whole or destroy). ZeRO-2: nothing to do. */
void zero_fsdp_gather_whole(zero_fsdp *f);
/* ZeRO-3: the transient buffer was written (a checkpoint load): this rank's slices of it
 * become the parameter shard, and it is freed. */
void zero_fsdp_take_whole(zero_fsdp *f);

/* Bytes held: the gradient shard, the parameter shard (ZeRO-3; 0 with ZeRO-2) and the work
 * buffers (the bucket, and ZeRO-3's two gather buffers). */
void zero_fsdp_bytes(const zero_fsdp *f, size_t *grads, size_t *params, size_t *work);

#endif /* TRIDENT_ZERO_FSDP_H */
