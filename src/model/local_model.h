/* local_model.h — the part of the GPT that this process holds, in one pair of buffers.
 *
 * With pipeline size p, v model chunks per rank and L layers, the model is cut into
 * S = p·v virtual stages of L/S blocks (or explicit sizes). Which stage each chunk is comes
 * from the caller (the schedule's placement, src/pp/schedule.h pp_stage: c·p + r round robin,
 * or the V of zbv, where rank 0 holds stage 0 and stage 2p−1). Stage 0 holds the embeddings,
 * stage S−1 the final norm and the tied head (its own copy of wte when S > 1).
 *
 * The tied wte's two copies get the same gradient (the sum of both) before every update, so
 * with the same initial value and the same optimizer they stay equal:
 *   - copies on two ranks (every layout but zbv): the embedding group all-reduces the two
 *     gradients (src/zero/optimizer_steps.c);
 *   - both copies on this rank (zbv: stage 0 and stage 2p−1 on pipeline rank 0):
 *     local_model_sum_tied_grads adds them here, no message (the executor calls it after
 *     the step's last W). Keeping two copies rather than aliasing one buffer keeps every
 *     chunk's parameters a contiguous view, like every other layout, and the head copy out of
 *     the norm (in_norm) and out of checkpoints of this rank (src/ckpt: the names clash).
 *
 *   params: [ chunk 0 params | chunk 1 params | ... | padding ]   (one fp32 buffer)
 *   grads:  same layout
 *
 * The padding (numel .. numel_padded) is there for the ZeRO-1 optimizer: it lays the two
 * buffers out to its shard layout (src/zero/shard_ranges.h) with local_model_pad, so that
 * the reduce-scatter, the update of its shard and the all-gather work in place at shard
 * offsets. Padding elements start at zero, stay zero, never count in a norm and never reach
 * a checkpoint; without ZeRO there is none (numel_padded == numel).
 *
 * ZeRO-2 and ZeRO-3 (src/zero/fsdp.h) keep gradients, and with ZeRO-3 parameters, as shards
 * of their own and give these buffers back (local_model_release): grads, or params, is then
 * NULL, and the model reaches the units through the storage hooks (src/model/gpt_hooks.h).
 *
 * Each parameter also says whether it counts in the global gradient norm on this rank:
 * a replicated tensor (LayerNorm, row-parallel bias, wpe) only on TP rank 0, and the
 * head's copy of wte not at all when the first stage holds the original.
 */
#ifndef TRIDENT_MODEL_LOCAL_MODEL_H
#define TRIDENT_MODEL_LOCAL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/model/gpt.h"
#include "src/model/gpt_hooks.h"

typedef struct {
    gpt_config cfg;
    int tp_size, tp_rank, pp_size, pp_rank, vpp;
    int nchunks;              /* vpp */
    gpt_chunk *chunks;        /* (nchunks) */
    int *chunk_stage;         /* (nchunks) the virtual stage of each chunk */
    size_t numel;             /* parameters in the buffers (the real count, without padding) */
    size_t numel_padded;      /* length of the buffers: numel, or the ZeRO layout's padded length */
    float *params;            /* (numel_padded) device memory (src/device/device.h); NULL
                                 while ZeRO-3 holds shards only */
    float *grads;             /* (numel_padded) device memory; NULL with ZeRO-2/3 */
    int nparams;              /* tensors over all chunks, in buffer order */
    const gpt_param **plist;  /* (nparams) */
    const gpt_shard **pshard; /* (nparams) the shard each tensor belongs to */
    bool *in_norm;            /* (nparams) */
    const gpt_param *wte_embedding; /* wte on the first stage (NULL elsewhere) */
    const gpt_param *wte_head; /* wte on the last stage (NULL elsewhere; == embedding if both) */
    gpt_hooks hooks; /* the optimizer's, which every chunk points to (local_model_set_hooks) */
} local_model;

/* Blocks of each virtual stage: an even split of L over S stages when stage_layers is NULL
 * (L must be divisible by S), else stage_layers[s] for s in 0..S-1 (each 1 ..
 * GPT_MAX_BLOCKS_PER_CHUNK, sum L). Returns false with a message naming the values and the
 * rule. */
bool local_model_partition(int num_layers, int nstages, const int *stage_layers, int *begin_out,
                           char *err, size_t errlen);

/* The chunks of this rank are the virtual stages chunk_stage[0..nchunks-1] of S = pp_size ·
 * nchunks (the schedule's placement, pp_stage). */
local_model *local_model_create_staged(const gpt_config *cfg, int tp_size, int tp_rank, int pp_size,
                                       int pp_rank, int nchunks, const int *chunk_stage,
                                       const int *stage_layers, uint64_t seed);
/* The same with the experts of MoE blocks cut over ep_size expert-parallel ranks (this rank
 * holds experts [ep_rank·E/ep_size, ..), gpt.h MIXTURE OF EXPERTS). */
local_model *local_model_create_experts(const gpt_config *cfg, int tp_size, int tp_rank,
                                        int ep_size, int ep_rank, int pp_size, int pp_rank, int vpp,
                                        const int *chunk_stage, const int *stage_layers,
                                        uint64_t seed);
/* The same without a gradient buffer (grads NULL), for ZeRO-2/3, which keep the gradients as
 * shards of their own (src/zero/fsdp.h): a whole buffer never exists, not even at start-up. */
local_model *local_model_create_sharded(const gpt_config *cfg, int tp_size, int tp_rank,
                                        int pp_size, int pp_rank, int nchunks,
                                        const int *chunk_stage, const int *stage_layers,
                                        uint64_t seed);
/* One chunk per rank (vpp must be 1): chunk 0 is stage pp_rank. */
local_model *local_model_create(const gpt_config *cfg, int tp_size, int tp_rank, int pp_size,
                                int pp_rank, int vpp, const int *stage_layers, uint64_t seed);
/* Activation recomputation for every chunk of this rank (src/model/gpt.h, ACTIVATION
 * RECOMPUTATION), before the activations and work spaces of its chunks are created. */
void local_model_set_recompute(local_model *m, const gpt_recompute *rc);
/* Sequence parallelism (--sequence-parallel; gpt.h, SEQUENCE PARALLELISM) for every chunk of
 * this rank, before their activations and work spaces are created; off while tp_size is 1. */
void local_model_set_sequence_parallel(local_model *m, bool on);
/* Context parallelism's group (NULL or size 1: none) and, for an MoE model, the expert-parallel
 * group its experts were cut for (gpt_chunk_set_context_parallel / _expert_parallel), before
 * any activations are created; moe_stats: gpt_features.moe_stats (NULL unless sequence and
 * context parallelism are both on: the tp × cp ranks of a micro-batch). */
void local_model_set_groups(local_model *m, comm_group *cp, comm_group *ep, comm_group *moe_stats);
/* The optimizer's hooks on every chunk of this model (copied; NULL removes them): what
 * overlapped communication and ZeRO-2/3 install (src/model/gpt_hooks.h). */
void local_model_set_hooks(local_model *m, const gpt_hooks *h);
/* Both wte copies on this rank (zbv): each gets the sum of the two gradients. Nothing to do
 * when this rank holds one copy or none, or no gradient buffer (ZeRO-2/3 sum the shards). */
void local_model_sum_tied_grads(local_model *m);
/* Whether p is the head's copy of wte on a rank that holds the embedding's too (zbv). Equal
 * to the first, with equal optimizer state: checkpoints save the first only and load both
 * from it (src/ckpt matches tensors by name). */
bool local_model_is_second_wte(const local_model *m, const gpt_param *p);
void local_model_destroy(local_model *m);
/* Zeroes the whole gradient buffer, padding included (nothing when there is none). */
void local_model_zero_grads(local_model *m);
/* Frees the gradient buffer (grads = NULL), and the parameter buffer too with `params`
 * (params = NULL): for an optimizer that keeps them as shards (ZeRO-2/3). */
void local_model_release(local_model *m, bool params);
/* Grows params and grads to numel_padded elements (>= numel), the new tail zero and the
 * gradients all zero; done once, before training (the ZeRO optimizer calls it when it is
 * created). */
void local_model_pad(local_model *m, size_t numel_padded);

#endif /* TRIDENT_MODEL_LOCAL_MODEL_H */
