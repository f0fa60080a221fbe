/* region.h — the tensor-parallel region of a GPT block as a model chunk runs it: where it is
 * entered and where it is left, plain or with sequence parallelism, forward, B and W.
 *
 * Inside the region each rank holds its heads and its slice of the MLP; outside it the
 * residual stream is whole (plain TP) or cut along the sequence (SP). A linear enters the
 * region (column-parallel: QKV, fc, the LM head) and a linear leaves it (row-parallel: proj,
 * fcproj; the vocab-parallel embedding), and the conjugate operators of src/tp/mappings.h sit
 * at those two edges (Megatron's names, tensor_parallel/mappings.py):
 *
 *           enter: before QKV, fc, the head          exit: after proj, fcproj, the embedding
 *   TP      f = copy_to_tensor_model_parallel_region  g = reduce_from_tensor_model_parallel_region
 *             identity fwd, all-reduce bwd              all-reduce fwd, identity bwd
 *   SP      g = gather_from_sequence_parallel_region  ḡ = reduce_scatter_to_sequence_parallel_region
 *             all-gather fwd, reduce-scatter bwd        reduce-scatter fwd, all-gather bwd
 *
 *   x (B·Tl,C) ─LN─> enter: X A_iᵀ ─> this rank's heads, or MLP slice ─> exit: Σ_i Y_i B_iᵀ ─> + x
 *
 * Each function below is one such linear with its operator (src/tp/layers.h), and the trace
 * label of the collective it runs (src/runtime/comm_label.h: "g fwd attn", "sp gbar bwd mlp",
 * ...): the model calls tp_region_enter_forward where the paper draws f, and never asks
 * whether sequence parallelism is on. The three passes of the split backward (gpt.h):
 *   forward  the linear and its operator
 *   input    (B) the layer's input gradient, through the operator's backward; with SP the
 *            entering linear also all-gathers its input again for W (in_full)
 *   weight   (W) the weight gradient from what B left: never communicates
 *
 * Not here: the layers and operators themselves (layers.h, mappings.h), attention and the
 * block around them (src/model/gpt_block.c).
 */
#ifndef TRIDENT_TP_REGION_H
#define TRIDENT_TP_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct comm_group comm_group;

/* The region of one micro-batch through one layer of a chunk. */
typedef struct {
    comm_group *tp;         /* the tensor-parallel group (NULL or size 1: serial) */
    bool sequence_parallel; /* the edges are g and ḡ (SP) rather than f and g */
    size_t B, T;            /* B sequences of T positions: N = B·T rows inside the region */
    size_t Tl;              /* positions of each sequence a rank holds outside it: T, or T/tp */
    size_t first;           /* the first of them: tp_rank·Tl with SP, else 0 */
    size_t C;               /* the hidden size: width of the residual stream */
    int layer;              /* global block index labelling the collectives (-1: embedding, head) */
} tp_region;

/* Which layer a region's collective belongs to: the last word of its trace label. */
typedef enum { TP_ATTN, TP_MLP, TP_HEAD, TP_EMBED } tp_site;

/* ENTER: the column-parallel linear after f (SP: g). in (B·Tl,C) outside the region;
 * out (N,OCl) = X A_iᵀ + b_i inside it (weight (OCl,C), bias (OCl) or NULL). */
void tp_region_enter_forward(const tp_region *r, tp_site site, float *out, const float *in,
                             const float *weight, const float *bias, size_t OCl);
/* B: dinp (B·Tl,C) += its input gradient, summed by f's backward (all-reduce) or reduced-
 * scattered by g's (SP), which also writes in_full (N,C) with the input all-gathered again. */
void tp_region_enter_input(const tp_region *r, tp_site site, float *dinp, float *in_full,
                           const float *dout, const float *in, const float *weight, size_t OCl);
/* W: dweight (OCl,C), dbias (or NULL) += from dout (N,OCl) and the whole input: in_full when B
 * gathered it (SP), else in. */
void tp_region_enter_weight(const tp_region *r, float *dweight, float *dbias, const float *dout,
                            const float *in_full, const float *in, size_t OCl);

/* EXIT: the row-parallel linear before g (SP: ḡ). in (N,Cl) inside the region; out
 * (B·Tl,C) = the sum over ranks of X_i A_iᵀ (at this rank's positions with SP), plus the bias
 * once (weight (C,Cl), bias (C)). */
void tp_region_exit_forward(const tp_region *r, tp_site site, float *out, const float *in,
                            const float *weight, const float *bias, size_t Cl);
/* B: dout_full (N,C) = dY from the residual gradient dres (B·Tl,C): a copy (g's backward is the
 * identity) or all-gathered (ḡ's); dinp (N,Cl) += dY A_i. W reads dout_full. */
void tp_region_exit_input(const tp_region *r, tp_site site, float *dinp, float *dout_full,
                          const float *dres, const float *in, const float *weight, size_t Cl);
/* W: dweight (C,Cl), dbias (C) += from dout_full (N,C) and in (N,Cl). */
void tp_region_exit_weight(const tp_region *r, float *dweight, float *dbias, const float *dout_full,
                           const float *in, size_t Cl);

/* The embedding leaves the region too: out (B·Tl,C) = the vocab-parallel lookup of tokens (N)
 * in wte (Vl,C) = rows [v_start, v_start + Vl), summed by g (SP: ḡ). */
void tp_region_embedding_forward(const tp_region *r, float *out, const int32_t *tokens,
                                 const float *wte, int64_t v_start, size_t Vl);
/* B of that exit: demb (N,C) = the gradient of every position, dres (B·Tl,C) copied (g's
 * backward) or all-gathered (ḡ's); the embedding's W reads it. */
void tp_region_embedding_input(const tp_region *r, float *demb, const float *dres);

#endif /* TRIDENT_TP_REGION_H */
