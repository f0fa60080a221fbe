/* router.h — the MoE router: which experts a token goes to, with what weight, and the switch
 * load-balancing loss that keeps the experts evenly used (Megatron's TopKRouter and
 * switch_load_balancing_loss, transformer/moe/router.py and moe_utils.py).
 *
 *   logits (N,E) = in (N,C) @ router_w (E,C)^T          no bias
 *   scores (N,E) = softmax over all E experts (fp32)     every row sums to 1
 *   expert (N,K) = the K largest scores of a row, largest first; ties: lower expert wins
 *   weight of (t, k) = scores[t, expert[t,k]]            NOT renormalised over the K chosen
 *
 * So with E = 1 every score is exactly 1 and the MoE layer is the dense MLP.
 *
 * Switch load-balancing loss, over the tokens of one micro-batch (N_tot of them):
 *
 *   aux = coeff · E / (N_tot² · K) · Σ_e P_e · n_e
 *   P_e = Σ_t scores[t,e]     (differentiable)
 *   n_e = #(token, choice) pairs routed to e, before any dropping (a constant)
 *
 * so d aux / d scores[t,e] = coeff · E / (N_tot² · K) · n_e. With uniform routing
 * (P_e = N_tot/E, n_e = N_tot·K/E) aux = coeff. The three sums travel as one "stats" vector
 * of 2E+1 floats [P_0..P_E-1 | n_0..n_E-1 | N], which router_load_stats all-reduces over the
 * ranks that hold other positions of the same sequences (context parallelism) when a group
 * is given.
 *
 * Capacity (token dropping, --moe-expert-capacity-factor > 0): an expert takes at most
 * ceil(factor · N · K / E) pairs of one call (N: the tokens of that call, this rank's);
 * router_capacity gives the number, the dispatcher (token_dispatch.h) drops the excess.
 *
 * Not here: moving tokens to experts (token_dispatch.h), the experts (moe_layer.h).
 */
#ifndef TRIDENT_MOE_ROUTER_H
#define TRIDENT_MOE_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include "src/runtime/comm.h"

/* scores (N,E) = softmax_e(in (N,C) @ router_w (E,C)^T). */
void router_scores(float *scores, const float *in, const float *router_w, size_t N, size_t C,
                   size_t E);

/* expert (N,K) = per row the K largest scores (N,E), largest first, ties to the lower index;
 * O(E log K) per row (a heap of the K best), so K = E costs a sort, not E·K² steps. */
void router_topk(int32_t *expert, const float *scores, size_t N, size_t E, int K);

/* counts (E) = number of (token, choice) pairs of expert (N,K) routed to each expert. */
void router_count(int64_t *counts, const int32_t *expert, size_t N, size_t E, int K);

/* stats (2E+1) = [P_e (E) | n_e (E) | N] of scores (N,E) and counts (E), summed over g when
 * g is not NULL (one all-reduce of 2E+1 floats on g). */
void router_load_stats(float *stats, const float *scores, const int64_t *counts, size_t N, size_t E,
                       comm_group *g);

/* The switch load-balancing loss of stats (2E+1); 0 when there are no tokens. */
float router_aux_loss(const float *stats, size_t E, int K, float coeff);

/* dscores (N,E) += aux_dloss · d aux / d scores = aux_dloss · coeff·E/(N_tot²·K) · n_e. */
void router_aux_backward(float *dscores, const float *stats, size_t N, size_t E, int K, float coeff,
                         float aux_dloss);

/* Back through the softmax and the matmul: dscores (N,E) is overwritten with d logits, then
 * dinp (N,C) += dlogits @ router_w and drouter_w (E,C) += dlogits^T @ in. */
void router_backward(float *dinp, float *drouter_w, float *dscores, const float *scores,
                     const float *in, const float *router_w, size_t N, size_t C, size_t E);

/* Pairs one expert may take from one call of N tokens: ceil(factor · N · K / E), converted by
 * src/core/checked.h (never wrapped) and at most N (an expert sees each token once, so N
 * keeps every pair); SIZE_MAX (no limit: dropless) when factor <= 0. */
size_t router_capacity(float factor, size_t N, size_t E, int K);

#endif /* TRIDENT_MOE_ROUTER_H */
