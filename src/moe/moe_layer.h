/* moe_layer.h — the mixture-of-experts layer that replaces a GPT block's MLP (Megatron's
 * MoELayer: router -> token dispatcher -> local experts -> combine), forward and backward,
 * on host fp32 memory.
 *
 *   in (N,C) ──router──> scores (N,E), top-K experts per token, aux loss
 *            ──dispatch──> rows of this rank's experts (all-to-all over ep)
 *            ──experts──> y = gelu(x fc_w[e]^T + fc_b[e]) fcproj_w[e]^T + fcproj_b[e]
 *            ──return, combine──> out[t] = Σ over t's kept choices of score · y_e(t)
 *
 * Each expert is a GPT MLP (fc (4C,C), GELU tanh, fcproj (C,4C)); its two products are
 * dev_matmul_* (src/device/device.h: bf16 when the process set it, like the dense MLP's). With E = 1, K = 1 every
 * score is 1 and the layer is the dense MLP exactly. Routing, the aux loss and capacity are
 * in router.h; moving rows between ranks in token_dispatch.h.
 *
 * Expert parallelism (ep group of P = --expert-model-parallel-size ranks, NULL for 1): the
 * experts are split by index, the router is replicated:
 *
 *   experts  [ 0 .. El-1 | El .. 2El-1 | ... | (P-1)El .. E-1 ]     El = E / P
 *              rank 0       rank 1             rank P-1
 *
 * This rank's parameters, ONE contiguous run of moe_param_floats(C, E, El) floats:
 *
 *   router_w (E,C) | fc_w (El,4C,C) | fc_b (El,4C) | fcproj_w (El,C,4C) | fcproj_b (El,C)
 *
 * Gradients use the same layout. Router gradients come from this rank's tokens only; an
 * expert's gradients from every token of the ep group routed to it (the caller reduces them
 * further over the expert-data-parallel group, as Megatron does).
 *
 * Capacity (--moe-expert-capacity-factor f > 0; 0, the default, is dropless): each expert
 * takes at most ceil(f · N · K / E) (token, choice) pairs of one call of N tokens of this rank;
 * pairs beyond it are dropped in token order (earlier positions kept). A dropped pair adds
 * nothing to the output and gets no gradient through the combine; it still counts in n_e of
 * the aux loss and in moe_acts_expert_counts.
 *
 * Memory: how many rows arrive is data-dependent (dropless), so moe_acts_create allocates
 * the worst case, P·N·K rows per buffer on the expert side: the memory of a micro-batch is
 * known before it runs (moe_acts_bytes_of), and it is device memory (device_alloc; the cpu
 * device is host memory, which the layer's host code reads). All ep ranks call with the same N.
 *
 * Bytes on ep (comm_bytes_collective; this rank's sends to OTHER ranks, token_dispatch.h):
 *   moe_forward_bytes  = (P-1)·El·8  +  4C·(M - M_self)  +  4C·(R - R_self)
 *   moe_backward_bytes =                4C·(M - M_self)  +  4C·(R - R_self)
 * M: kept pairs of this rank, M_self: those of its own experts; R: rows its experts received,
 * R_self: those from itself. The aux loss's all-reduce on stats_group is not counted (it is
 * another group: 4·(2E+1) bytes there).
 *
 * Not here: initial values (the caller's), the expert-data-parallel gradient reduction.
 */
#ifndef TRIDENT_MOE_MOE_LAYER_H
#define TRIDENT_MOE_MOE_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/moe/moe_config.h"
#include "src/runtime/comm.h"

/* Floats of this rank's parameters: E·C + El·(4C·C + 4C + C·4C + C). */
size_t moe_param_floats(size_t C, size_t E, size_t El);

typedef struct {
    const float *router_w; /* (E,C) */
    const float *fc_w;     /* (El,4C,C) */
    const float *fc_b;     /* (El,4C) */
    const float *fcproj_w; /* (El,C,4C) */
    const float *fcproj_b; /* (El,C) */
} moe_params;
typedef struct {
    float *router_w, *fc_w, *fc_b, *fcproj_w, *fcproj_b; /* same shapes */
} moe_grads;

/* Named views into base (moe_param_floats floats, the layout above). */
moe_params moe_params_view(const moe_config *m, const float *base, size_t C);
moe_grads moe_grads_view(const moe_config *m, float *base, size_t C);

/* One micro-batch of the layer: what the backward needs, for up to N tokens (fixed at
 * creation; a call may take fewer — generation's KV cache runs n new rows through acts made for
 * its largest n — and a backward takes the N of the forward it follows). */
typedef struct moe_acts moe_acts;
moe_acts *moe_acts_create(const moe_config *m, size_t N, size_t C);
void moe_acts_destroy(moe_acts *a);
/* Exactly the bytes moe_acts_create takes from the device allocator (device_alloc, label
 * "activations": its one buffer; the small struct of views beside it is host bookkeeping). */
size_t moe_acts_bytes_of(const moe_config *m, size_t N, size_t C);

/* Operand elements of the largest linear product one expert runs (fc (rows,C) -> (rows,4C) or
 * fcproj back; src/device/device.h dev_matmul_operand_elems): with bf16 products the device's
 * operand scratch must hold it. rows = P·N, the most one expert can receive: a token picks an
 * expert at most once. (The router's product stays fp32: routing decides on its scores.) */
size_t moe_matmul_operand_elems(const moe_config *m, size_t N, size_t C);

/* out (N,C) = the layer of in (N,C). in must stay as it is until the backward (pass it again
 * there). Returns the aux loss: the whole micro-batch's when stats_group (the ranks holding
 * the other positions of the same sequences; NULL: none) is given. Collective over ep and
 * stats_group. */
float moe_forward(const moe_config *m, comm_group *ep, comm_group *stats_group, const moe_params *p,
                  moe_acts *a, float *out, const float *in, size_t N, size_t C);

/* dinp (N,C) += ; grads += ; from dout (N,C) and aux_dloss = d(objective)/d(aux loss).
 * Collective over ep. */
void moe_backward(const moe_config *m, comm_group *ep, const moe_params *p, moe_grads *g,
                  moe_acts *a, float *dinp, const float *dout, const float *in, float aux_dloss,
                  size_t N, size_t C);

/* (E) (token, choice) pairs of this rank's last forward per expert, before dropping. */
const int64_t *moe_acts_expert_counts(const moe_acts *a);
/* Pairs of this rank's last forward dropped for capacity. */
int64_t moe_acts_dropped(const moe_acts *a);
/* Bytes this rank sent to other ep ranks in the last forward / sends in its backward. */
size_t moe_forward_bytes(const moe_acts *a);
size_t moe_backward_bytes(const moe_acts *a);

#endif /* TRIDENT_MOE_MOE_LAYER_H */
