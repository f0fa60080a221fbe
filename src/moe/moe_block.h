/* moe_block.h — the mixture-of-experts layer as a block of the GPT runs it, in place of the
 * dense MLP: the layer of moe_layer.h with what a model chunk adds around it.
 *
 *   - the switch loss's counts are shared by the ranks that hold the other positions of the
 *     same sequences (moe_forward's stats_group): the tensor-parallel group with sequence
 *     parallelism (each TP rank routes its own positions), the context-parallel group with
 *     context parallelism, the tp × cp group with both; none when a rank holds whole sequences;
 *   - the switch loss weighs in the objective as one micro-batch's mean loss: its gradient is
 *     dloss (the LM loss's, per position) times the micro-batch's positions, which are this
 *     rank's rows times the ranks of that group;
 *   - the all-to-alls of the dispatch are labelled for the trace ("ep a2a fwd moe", "ep a2a bwd
 *     moe") with the block's layer.
 *
 * Not here: the layer (moe_layer.h), where its tensors sit in the model's buffer (the model).
 */
#ifndef TRIDENT_MOE_MOE_BLOCK_H
#define TRIDENT_MOE_MOE_BLOCK_H

#include <stdbool.h>
#include <stddef.h>

#include "src/moe/moe_layer.h"

/* One block's layer, for one pass. */
typedef struct {
    moe_config cfg;
    comm_group *ep;    /* the expert-parallel group (NULL: every expert here) */
    comm_group *stats; /* the ranks sharing the switch loss's counts (NULL: none) */
    int layer;         /* global block index, labelling the all-to-alls */
} moe_block;

/* The block's layer for a chunk whose sequences are cut by tensor parallelism with sequence
 * parallelism (tp, sequence_parallel), by context parallelism (cp; NULL: none) or by both
 * (tp_cp, the tp × cp group; NULL unless both). */
moe_block moe_block_make(const moe_config *m, comm_group *ep, comm_group *tp,
                         bool sequence_parallel, comm_group *cp, comm_group *tp_cp, int layer);

/* moe_forward on this rank's N rows: out (N,C) = the layer of in (N,C). Returns the switch
 * loss of the whole micro-batch. */
float moe_block_forward(const moe_block *b, const moe_params *p, moe_acts *a, float *out,
                        const float *in, size_t N, size_t C);
/* moe_backward: dinp (N,C) +=, grads +=, from dout (N,C); dloss: d(objective)/d(the loss at one
 * position), from which the switch loss's weight follows (above). */
void moe_block_backward(const moe_block *b, const moe_params *p, moe_grads *g, moe_acts *a,
                        float *dinp, const float *dout, const float *in, float dloss, size_t N,
                        size_t C);

#endif /* TRIDENT_MOE_MOE_BLOCK_H */
