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

/* All-reduce helpers used by the vocab-parallel embedding and cross-entropy. */
void tp_all_reduce_sum(comm_group *tp, float *x, size_t n);
void tp_all_reduce_max(comm_group *tp, float *x, size_t n);

#endif /* TRIDENT_TP_MAPPINGS_H */
