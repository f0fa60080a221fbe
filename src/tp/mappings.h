/* mappings.h — the conjugate operators of Megatron tensor parallelism, named after the paper.
 *
 *   f = copy to the tensor-parallel region:    identity forward,  all-reduce backward
 *   g = reduce from the tensor-parallel region: all-reduce forward, identity backward
 *   scatter to region:  split the last dimension forward,  all-gather backward
 *   gather from region: all-gather the last dimension forward, split backward
 *
 * In a transformer block under TP, f sits before each column-parallel layer (QKV, fc) and
 * g after each row-parallel layer (proj, fcproj): two all-reduces forward (g) and two
 * backward (f) per block. Identity halves are functions too, so the model code reads like
 * the paper and a reader can see where nothing happens.
 *
 * A NULL group or a group of size 1 makes every operator a no-op (the serial model).
 *
 * SEQUENCE PARALLELISM (Korthikanti et al. 2022; Megatron's --sequence-parallel). What TP
 * leaves replicated (LayerNorms, residual adds, their kept activations) is cut along the
 * sequence instead: rank i holds positions [i·T/p, (i+1)·T/p) of each of the B sequences, a
 * (B, T/p, C) "sequence shard". Two more conjugate operators replace f and g at the edges
 * of the tensor-parallel region:
 *
 *   g = gather from the sequence region:
 *         all-gather along T forward, reduce-scatter backward (it replaces f)
 *   ḡ = reduce-scatter to the sequence region:
 *         reduce-scatter along T forward, all-gather backward (it replaces g)
 *
 *    sequence shards         tensor-parallel region (whole sequence)        sequence shards
 *   x_0 ┐                 ┌─> X A_0^T ─> ... ─> Y^(0) ─┐
 *   x_1 ┼─g: all-gather──>┼─> X A_1^T ─> ... ─> Y^(1) ─┼─ḡ: reduce-scatter─> y_i = Σ_j Y^(j)
 *   ... ┘   X (B,T,C)     └─> ...               ...   ─┘   (partial sums)    at i's positions
 *
 * g sits where f sat (before QKV and fc), ḡ where g sat (after proj and fcproj). An all-reduce
 * is a reduce-scatter followed by an all-gather, so per layer the same bytes move as with TP
 * alone; what is gained is that everything between ḡ and the next g exists on T/p positions.
 * Layout: a shard is (B, T/p, C) contiguous; in the whole (B, T, C) rank i's part is the
 * column block [i·T/p·C, (i+1)·T/p·C) of each of the B rows (interleaved when B > 1).
 */
#ifndef TRIDENT_TP_MAPPINGS_H
#define TRIDENT_TP_MAPPINGS_H

#include <stddef.h>

typedef struct comm_group comm_group;

/* f: forward is the identity. */
void tp_copy_to_region_forward(comm_group *tp, float *x, size_t n);
/* f: backward all-reduces (sums) the input gradient over the TP group. */
void tp_copy_to_region_backward(comm_group *tp, float *dx, size_t n);
/* g: forward all-reduces (sums) the partial outputs over the TP group. */
void tp_reduce_from_region_forward(comm_group *tp, float *x, size_t n);
/* g: backward is the identity. */
void tp_reduce_from_region_backward(comm_group *tp, float *dx, size_t n);

/* Scatter to region: x (N, K*tp) -> this rank's columns (N, K). Backward: all-gather. */
void tp_scatter_to_region_forward(comm_group *tp, float *out, const float *x, size_t N, size_t K);
void tp_scatter_to_region_backward(comm_group *tp, float *dx, const float *dout, size_t N,
                                   size_t K);
/* Gather from region: x (N, K) -> (N, K*tp) all columns. Backward: take own columns. */
void tp_gather_from_region_forward(comm_group *tp, float *out, const float *x, size_t N, size_t K);
void tp_gather_from_region_backward(comm_group *tp, float *dx, const float *dout, size_t N,
                                    size_t K);

/* g, forward: out (B, T, C) = the shards x (B, Tl, C) of every rank, Tl = T/p, in rank order. */
void tp_gather_from_sequence_region_forward(comm_group *tp, float *out, const float *x, size_t B,
                                            size_t Tl, size_t C);
/* g, backward: dx (B, Tl, C) = Σ over ranks of their dout (B, T, C) at this rank's positions. */
void tp_gather_from_sequence_region_backward(comm_group *tp, float *dx, const float *dout, size_t B,
                                             size_t Tl, size_t C);
/* ḡ, forward: out (B, Tl, C) = Σ over ranks of their partial x (B, T, C), at this rank's
 * positions. */
void tp_reduce_scatter_to_sequence_region_forward(comm_group *tp, float *out, const float *x,
                                                  size_t B, size_t Tl, size_t C);
/* ḡ, backward: dx (B, T, C) = the shards dout (B, Tl, C) of every rank, in rank order. */
void tp_reduce_scatter_to_sequence_region_backward(comm_group *tp, float *dx, const float *dout,
                                                   size_t B, size_t Tl, size_t C);

/* All-reduce helpers used by the vocab-parallel embedding and cross-entropy. */
void tp_all_reduce_sum(comm_group *tp, float *x, size_t n);
void tp_all_reduce_max(comm_group *tp, float *x, size_t n);

#endif /* TRIDENT_TP_MAPPINGS_H */
