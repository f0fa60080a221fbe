/* expert_shard.h — the optimizer step with expert parallelism (MoE, ep > 1; not with ZeRO-2/3
 * or the overlap flags: the flags refuse them).
 *
 * The experts' tensors (SPLIT_EXPERTS) differ between the ranks of dp: the ranks holding the
 * same experts are expert_dp (edp × cp), those holding the other experts ep. So an expert's
 * gradient is summed over expert_dp, not dp, and the experts' part of the norm over ep.
 *
 * Without ZeRO every tensor is all-reduced on its own: the experts' over expert_dp, every
 * other over dp.
 *
 * With ZeRO-1 (Megatron's expert-data-parallel sharding) the ranks of dp hold DIFFERENT
 * experts at the same offsets, so the expert tensors cannot share the dense tensors' cut.
 * They are sharded over expert_dp, as Megatron does, in a layout of their own — the expert
 * tensors laid end to end, padded (the other tensors are there with size 0, so pieces keep
 * the model's parameter indices):
 *
 *   model grads  [ wte | wpe | ln | attn | router | EXPERTS | ln | ... | EXPERTS | ... | pad ]
 *                                                    \ copied /              \ copied /
 *   buffer       [ EXPERTS | EXPERTS | ... | pad ] = [ shard 0 | ... | shard edp·cp-1 ]
 *
 *   1. the experts' gradients are copied into the buffer, which is reduce-scattered over
 *      expert_dp; the model's buffer is reduce-scattered over dp as without experts, but the
 *      dense ranges hold no expert piece (zero_ranges_drop), so what lands there is never read;
 *   2. AdamW on both shards' pieces (each with its own m, v and master); the norm group (the
 *      world) counts each expert shard once;
 *   3. the updated expert pieces are written into the buffer at their place, which is
 *      all-gathered over expert_dp, the model's buffer over dp (which leaves other ranks'
 *      experts in the expert tensors), and the experts are copied back from the buffer.
 * The dense shard's state keeps the expert tensors' positions (unused): the price of working
 * in place on a buffer that interleaves the two kinds. A checkpoint saves the two shards as
 * two parts (distopt_state_parts).
 *
 * Not here: the dense shard's step (zero1.c), the steps both share (optimizer_steps.c).
 */
#ifndef TRIDENT_ZERO_EXPERT_SHARD_H
#define TRIDENT_ZERO_EXPERT_SHARD_H

#include "src/zero/distopt_internal.h"

/* ZeRO-1's shard of the experts. */
struct zero_experts {
    comm_group *group;   /* expert_dp: the ranks holding the same experts */
    distopt_shard shard; /* over expert_dp, in the packed layout (shard.packed) */
    float *buffer;       /* (shard.ranges->padded_numel) the experts packed: their gradients,
                            then their parameters */
};

/* The experts' layout over expert_dp, its buffer and Adam moments; the dense layout loses its
 * expert pieces. */
zero_experts *zero_experts_create(local_model *m, zero_ranges *dense, comm_group *expert_dp);
void zero_experts_destroy(zero_experts *x); /* NULL is fine */
/* Adds the buffer (to grads), the master weights and the Adam moments of the experts' shard. */
void zero_experts_add_bytes(const zero_experts *x, distopt_memory *mem);

#endif /* TRIDENT_ZERO_EXPERT_SHARD_H */
