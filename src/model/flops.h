/* flops.h — how many floating-point operations one token of GPT training costs: the numerator
 * of model FLOP/s and MFU (model FLOPs utilisation). The one count: the trainer's MFU
 * (src/train/run.c) and every bench suite (src/bench) call flops_train_per_token.
 *
 * Only the matrix products count (LayerNorm, GELU, softmax, AdamW are O(C) per token and left
 * out, as Megatron and PaLM do), and only the model's FLOPs: activation recomputation, padding
 * micro-batches or a slower layout do not raise the count. A multiply-add is 2 FLOPs. Per token,
 * with L layers, hidden size C, sequence length T and (padded) vocabulary V:
 *
 *   forward, one layer     qkv 2·C·3C + proj 2·C·C + fc 2·C·4C + fcproj 2·4C·C = 24·C²
 *                          scores Q·Kᵀ 2·T·C + mix A·V 2·T·C                   =  4·T·C
 *   forward, head          logits 2·C·V (tied with wte; the lookup costs nothing)
 *   backward               twice the forward (gradient w.r.t. input and w.r.t. weight)
 *
 *   train FLOPs per token = 3 · (L·(24·C² + 4·T·C) + 2·C·V)
 *                         = 72·L·C² + 12·L·T·C + 6·C·V
 *                         = 6·N·1 + 12·L·T·C     with N = 12·L·C² + C·V, the weights used in
 *                                                matrix products (biases, LayerNorms, wpe aside)
 *
 * A mixture-of-experts layer (gpt.h) counts the experts a token goes through: the MLP's 16·C²
 * K times (top-K routing), plus the router's 2·E·C; the experts a token skips cost it nothing.
 *
 * This is Megatron-LM's 72·B·T·L·C²·(1 + T/(6C) + V/(12·L·C)) per iteration (Narayanan et al.
 * 2021, appendix) divided by the B·T tokens, and PaLM's 6N + 12·L·H·Q·T (Chowdhery et al. 2022,
 * appendix B; H·Q = C). Causal attention is counted in full, as both papers count it.
 *
 *   double per_step = flops_train_per_token(&g) * global_batch * T;
 *   double model_flops_per_s = per_step / seconds_per_step;
 *
 * Not here: the machine's rate to divide by (src/device/gemm_rate.h).
 */
#ifndef TRIDENT_MODEL_FLOPS_H
#define TRIDENT_MODEL_FLOPS_H

#include "src/model/gpt.h"

/* Forward FLOPs of one token: L·(24·C² + 4·T·C) + 2·C·V (MoE: L·(8·C² + 16·K·C² + 2·E·C +
 * 4·T·C) + 2·C·V). */
double flops_forward_per_token(const gpt_config *g);
/* Forward + backward FLOPs of one token: 3 × the forward. */
double flops_train_per_token(const gpt_config *g);

#endif /* TRIDENT_MODEL_FLOPS_H */
