/* layers.h — the tensor-parallel layers of Megatron as small functions, forward and backward.
 *
 * Each layer is the serial op (kernels/ops.h) on this rank's slice of the weight, with the
 * conjugate operators of src/tp/mappings.h around it. The GPT block (src/model/gpt_block.c)
 * calls them through src/tp/region.h, which picks plain or sequence-parallel and labels the
 * messages, and the tests hold each layer against its serial counterpart. p is the size of the
 * TP group, i this rank's place in it; a NULL group (or size 1) is the serial layer.
 *
 * Column-parallel linear: the weight is split along the OUTPUT dimension (rows of A).
 *
 *        A (OC, C) = | A_0 |   rank i holds A_i (OC/p, C) and b_i (OC/p)
 *                    | A_1 |
 *                    | ... |          X ──f──> Y_i = X A_i^T + b_i ──[gather]──> Y = [Y_0 | Y_1 | ...]
 *                    | A_p-1|
 *
 *   The input X (N, C) is whole on every rank (f: identity forward). Backward, every rank
 *   has a partial dX = dY_i A_i; f's backward all-reduces them into the whole dX.
 *   With gather_output the ranks all-gather Y (N, OC); without it each keeps Y_i (N, OC/p),
 *   as QKV and fc do — their output feeds a row-parallel layer directly.
 *
 * Row-parallel linear: the weight is split along the INPUT dimension (columns of A).
 *
 *        A (OC, C) = [ A_0 | A_1 | ... | A_p-1 ]   rank i holds A_i (OC, C/p); b (OC) on all
 *        X (N, C)  = [ X_0 | X_1 | ... | X_p-1 ]   rank i holds X_i (N, C/p) (already split)
 *
 *        X_i ──> X_i A_i^T ──g──> Σ_i X_i A_i^T + b = Y (N, OC) on every rank
 *
 *   The bias is added ONCE, after the all-reduce (adding it before would count it p times).
 *   Backward, g is the identity: every rank gets the whole dY and computes dX_i = dY A_i,
 *   dA_i = dY^T X_i, and the whole db (the same on every rank).
 *
 * Vocab-parallel embedding: wte (V, C) split by rows; rank i holds [v_start, v_start + V/p).
 *   A token outside the slice looks up zeros; g (all-reduce) sums the one real row in.
 *   Backward: g's identity, then each rank adds the rows of the tokens it holds.
 *
 * Vocab-parallel cross-entropy: logits (N, V) split by columns the same way; the full
 * logits are never gathered. Forward, three all-reduces of N floats: the row max (MAX),
 * then the sum of exponentials and the target's logit (SUM). Entries at global index
 * >= real_vocab are padding: no probability, no gradient. Backward needs no communication.
 *
 * Backward functions ACCUMULATE (+=) into dinp, dweight, dbias, like the kernels; the
 * cross-entropy backward WRITES dlogits. Any of dweight, dbias may be NULL. dinp may be
 * NULL too, but for the column-parallel layer it must then be NULL on every rank of the
 * group (the all-reduce is collective). All ranks of the group call every function with
 * the same N and shapes.
 *
 * SEQUENCE PARALLELISM (--sequence-parallel; mappings.h has the operators and their picture).
 * The _sp variants take and give (B, Tl, C) sequence shards (Tl = T/p) outside the region:
 *
 *   column:  X_i (B,Tl,C) ──g: all-gather──> X (B·T, C) ──> Y_i = X A_i^T + b_i (B·T, OC/p)
 *            backward: dX = Σ_i dY_i A_i reduce-scattered (g's backward) to this rank's
 *            positions; the weight gradient needs the whole X again: all-gathered a second
 *            time (the forward keeps only the shard) into `inp_full` for whoever computes it.
 *   row:     X_i (B·T, C/p) ──> X_i A_i^T (partial) ──ḡ: reduce-scatter──> (B,Tl,OC) + b
 *            backward: dY (B,Tl,OC) all-gathered (ḡ's backward) into `dout_full` (B·T, OC),
 *            from which dX_i, dA_i and db come. db is thus the whole sum, the same on every
 *            rank: unlike a LayerNorm's, this bias needs no all-reduce over TP afterwards.
 *   embedding: the lookup's all-reduce becomes a reduce-scatter (ḡ): out (B,Tl,C).
 *
 * Not here: attention and the MLP as a whole (the model puts the layers together).
 */
#ifndef TRIDENT_TP_LAYERS_H
#define TRIDENT_TP_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct comm_group comm_group;

/* Column-parallel linear. inp (N,C) whole; weight (OCl,C) = A_i; bias (OCl) = b_i or NULL.
 * out is (N,OCl) = Y_i, or (N,OCl*p) = Y with gather_output. */
void tp_column_linear_forward(comm_group *tp, float *out, const float *inp, const float *weight,
                              const float *bias, size_t N, size_t C, size_t OCl,
                              bool gather_output);
/* dout is (N,OCl), or (N,OCl*p) with gather_output. dinp (N,C) += the whole dX. */
void tp_column_linear_backward(comm_group *tp, float *dinp, float *dweight, float *dbias,
                               const float *dout, const float *inp, const float *weight, size_t N,
                               size_t C, size_t OCl, bool gather_output);

/* Row-parallel linear. inp (N,Cl) = X_i; weight (OC,Cl) = A_i; bias (OC) whole or NULL.
 * out (N,OC) = Y on every rank. */
void tp_row_linear_forward(comm_group *tp, float *out, const float *inp, const float *weight,
                           const float *bias, size_t N, size_t Cl, size_t OC);
/* dout (N,OC) whole. dinp (N,Cl) += dX_i; dweight (OC,Cl) += dA_i; dbias (OC) += db. */
void tp_row_linear_backward(comm_group *tp, float *dinp, float *dweight, float *dbias,
                            const float *dout, const float *inp, const float *weight, size_t N,
                            size_t Cl, size_t OC);

/* Vocab-parallel embedding. wte (Vl,C) holds rows [v_start, v_start+Vl). out (N,C) whole. */
void tp_vocab_embedding_forward(comm_group *tp, float *out, const int32_t *tokens, const float *wte,
                                size_t N, size_t C, int64_t v_start, size_t Vl);
/* dout (N,C) whole; dwte (Vl,C) += the rows of the tokens this rank holds. */
void tp_vocab_embedding_backward(comm_group *tp, float *dwte, const float *dout,
                                 const int32_t *tokens, size_t N, size_t C, int64_t v_start,
                                 size_t Vl);

/* Vocab-parallel cross-entropy. logits (N,Vl): columns [v_start, v_start+Vl) of the padded
 * logits; loss (N) per position, the same on every rank; stats (3N) is written with
 * [rowmax | sumexp | target_logit] (global values) and kept for the backward. */
void tp_vocab_cross_entropy_forward(comm_group *tp, float *loss, float *stats, const float *logits,
                                    const int32_t *targets, size_t N, size_t Vl, int64_t v_start,
                                    int64_t real_vocab);
/* dlogits (N,Vl) = (softmax - onehot(target)) * dloss[n] on this rank's columns; 0 on padding. */
void tp_vocab_cross_entropy_backward(comm_group *tp, float *dlogits, const float *stats,
                                     const float *logits, const int32_t *targets,
                                     const float *dloss, size_t N, size_t Vl, int64_t v_start,
                                     int64_t real_vocab);

/* Sequence-parallel column-parallel linear. inp (B,Tl,C): this rank's positions; out (B·T,OCl).
 * Backward: dinp (B,Tl,C) += this rank's positions of Σ_i dY_i A_i; inp_full (B·T,C), unless
 * NULL, is written with the all-gathered input; dweight, dbias (or NULL) += from it. */
void tp_column_linear_sp_forward(comm_group *tp, float *out, const float *inp, const float *weight,
                                 const float *bias, size_t B, size_t Tl, size_t C, size_t OCl);
void tp_column_linear_sp_backward(comm_group *tp, float *dinp, float *inp_full, float *dweight,
                                  float *dbias, const float *dout, const float *inp,
                                  const float *weight, size_t B, size_t Tl, size_t C, size_t OCl);
/* Sequence-parallel row-parallel linear. inp (B·T,Cl) = X_i; out (B,Tl,OC): this rank's
 * positions of Σ_i X_i A_i^T, plus the bias. Backward: dout (B,Tl,OC); dout_full (B·T,OC),
 * unless NULL, is written with the all-gathered dY; dinp (B·T,Cl), dweight, dbias += from it. */
void tp_row_linear_sp_forward(comm_group *tp, float *out, const float *inp, const float *weight,
                              const float *bias, size_t B, size_t Tl, size_t Cl, size_t OC);
void tp_row_linear_sp_backward(comm_group *tp, float *dinp, float *dout_full, float *dweight,
                               float *dbias, const float *dout, const float *inp,
                               const float *weight, size_t B, size_t Tl, size_t Cl, size_t OC);
/* Sequence-parallel vocab embedding: tokens (B·T); out (B,Tl,C) this rank's positions. Its
 * backward is tp_vocab_embedding_backward on the all-gathered gradient (ḡ's backward). */
void tp_vocab_embedding_sp_forward(comm_group *tp, float *out, const int32_t *tokens,
                                   const float *wte, size_t B, size_t Tl, size_t C, int64_t v_start,
                                   size_t Vl);

#endif /* TRIDENT_TP_LAYERS_H */
