/* gpt_backward.c — the backward pass of a chunk (gpt.h): the input-gradient part B, the
 * weight-gradient part W, and the whole backward that runs each layer's W right after its B. */
#include <stddef.h>

#include "src/device/device.h"
#include "src/model/gpt.h"
#include "src/model/gpt_hooks.h"
#include "src/model/gpt_internal.h"
#include "src/runtime/comm_label.h"
#include "src/tp/layers.h"
#include "src/tp/mappings.h"

static float *grad_of(float *grads, const gpt_param *p) { return grads + p->offset; }

/* The backward in parts: B (input gradients) and W (weight gradients) of the head, of each
 * block, and of the embedding. gpt_backward_input runs every B part, gpt_backward_weight every
 * W part; gpt_backward interleaves them layer by layer (below). */

/* B of the head and the loss: dres = the gradient of the last block's output. */
static void head_input(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                       gpt_wgrad *wg, float dloss, comm_group *tp) {
    const size_t N = (size_t)a->B * (size_t)a->T, C = (size_t)c->cfg.hidden, Vl = c->Vl;
    const gpt_param *pw = gpt_chunk_find(c, GPT_LNF_W, -1), *pe = gpt_chunk_find(c, GPT_WTE, -1);
    dev_fill(s->dloss, dloss, N);
    tp_vocab_cross_entropy_backward(tp, wg->dlogits, a->ce_stats, a->logits, a->targets, s->dloss,
                                    N, Vl, c->v_start, c->cfg.real_vocab);
    device_zero(wg->dlnf, N * C * sizeof(float));
    comm_label_set("f bwd head", -1);
    tp_column_linear_backward(tp, wg->dlnf, NULL, NULL, wg->dlogits, a->lnf, params + pe->offset, N,
                              C, Vl, false);
    comm_label_clear();
    device_zero(s->dres, N * C * sizeof(float));
    dev_layernorm_backward(s->dres, NULL, NULL, wg->dlnf, a->x[a->nblocks], params + pw->offset,
                           a->lnf_mean, a->lnf_rstd, N, C);
}

/* W of the head: the tied wte's head part and LNf. */
static void head_weight(const gpt_chunk *c, float *grads, const gpt_acts *a, const gpt_wgrad *wg) {
    const size_t N = (size_t)a->B * (size_t)a->T, C = (size_t)c->cfg.hidden, Vl = c->Vl;
    const gpt_param *pw = gpt_chunk_find(c, GPT_LNF_W, -1), *pb = gpt_chunk_find(c, GPT_LNF_B, -1);
    const gpt_param *pe = gpt_chunk_find(c, GPT_WTE, -1);
    dev_matmul_backward(NULL, grad_of(grads, pe), NULL, wg->dlogits, a->lnf, NULL, N, C, Vl);
    dev_layernorm_backward(NULL, grad_of(grads, pw), grad_of(grads, pb), wg->dlnf, a->x[a->nblocks],
                           NULL, a->lnf_mean, a->lnf_rstd, N, C);
    gpt_hooks_grads_ready(c, GPT_HOOK_HEAD); /* lnf; the head's wte part is not all of it */
}

/* B of block i: s->dres goes from the gradient of its output to that of its input; the dY's
 * its W needs are left in wg. */
static void block_input(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                        gpt_wgrad *wg, int i, comm_group *tp) {
    const size_t B = (size_t)a->B, T = (size_t)a->T, N = B * T, C = (size_t)c->cfg.hidden;
    const size_t Cl = c->Cl, NHl = c->NHl, HS = C / (size_t)c->cfg.num_heads;
    block_params w = block_views(c, params, i);
    block_acts *b = &a->blocks[i];
    block_wgrad *g = &wg->blocks[i];
    float *dres = s->dres;
    const int layer = c->shard.layer_begin + i;

    /* MLP backward. The row-parallel fcproj needs no communication (g's backward is the
     * identity); the column-parallel fc all-reduces its input gradient (f's backward). */
    device_copy(g->dfcproj, dres, N * C * sizeof(float));
    device_zero(s->dfch_gelu, N * 4 * Cl * sizeof(float));
    tp_row_linear_backward(tp, s->dfch_gelu, NULL, NULL, g->dfcproj, b->fch_gelu, w.fcproj_w, N,
                           4 * Cl, C);
    device_zero(g->dfch, N * 4 * Cl * sizeof(float));
    dev_gelu_backward(g->dfch, b->fch, s->dfch_gelu, N * 4 * Cl);
    device_zero(g->dln2, N * C * sizeof(float));
    comm_label_set("f bwd mlp", layer);
    tp_column_linear_backward(tp, g->dln2, NULL, NULL, g->dfch, b->ln2, w.fc_w, N, C, 4 * Cl,
                              false);
    comm_label_clear();
    /* dres += LN2 backward: now the gradient of x_mid */
    dev_layernorm_backward(dres, NULL, NULL, g->dln2, b->x_mid, w.ln2_w, b->ln2_mean, b->ln2_rstd,
                           N, C);

    /* Attention backward: the same two layers around this rank's heads. */
    device_copy(g->dproj, dres, N * C * sizeof(float));
    device_zero(s->datty, N * Cl * sizeof(float));
    tp_row_linear_backward(tp, s->datty, NULL, NULL, g->dproj, b->atty, w.proj_w, N, Cl, C);
    device_zero(g->dqkv, N * 3 * Cl * sizeof(float));
    dev_attention_backward(g->dqkv, s->datty, b->qkv, b->att, s->datt, B, T, NHl, HS);
    device_zero(g->dln1, N * C * sizeof(float));
    comm_label_set("f bwd attn", layer);
    tp_column_linear_backward(tp, g->dln1, NULL, NULL, g->dqkv, b->ln1, w.qkv_w, N, C, 3 * Cl,
                              false);
    comm_label_clear();
    /* dres += LN1 backward: now the gradient of the block input */
    dev_layernorm_backward(dres, NULL, NULL, g->dln1, a->x[i], w.ln1_w, b->ln1_mean, b->ln1_rstd, N,
                           C);
}

/* W of block i, from its activations and the dY's its B left in wg. */
static void block_weight(const gpt_chunk *c, float *grads, const gpt_acts *a, const gpt_wgrad *wg,
                         int i) {
    const size_t N = (size_t)a->B * (size_t)a->T, C = (size_t)c->cfg.hidden, Cl = c->Cl;
    const block_acts *b = &a->blocks[i];
    const block_wgrad *g = &wg->blocks[i];
    const int layer = c->shard.layer_begin + i;
#define GRAD(kind) grad_of(grads, block_param(c, i, kind))
/* Each weight's gradient is final as soon as it is computed: its buckets may start. */
#define READY(w, bias) gpt_hooks_block_grads_ready(c, layer, w, bias)
    dev_matmul_backward(NULL, GRAD(GPT_FCPROJ_W), GRAD(GPT_FCPROJ_B), g->dfcproj, b->fch_gelu, NULL,
                        N, 4 * Cl, C);
    READY(GPT_FCPROJ_W, GPT_FCPROJ_B);
    dev_matmul_backward(NULL, GRAD(GPT_FC_W), GRAD(GPT_FC_B), g->dfch, b->ln2, NULL, N, C, 4 * Cl);
    READY(GPT_FC_W, GPT_FC_B);
    dev_layernorm_backward(NULL, GRAD(GPT_LN2_W), GRAD(GPT_LN2_B), g->dln2, b->x_mid, NULL,
                           b->ln2_mean, b->ln2_rstd, N, C);
    READY(GPT_LN2_W, GPT_LN2_B);
    dev_matmul_backward(NULL, GRAD(GPT_PROJ_W), GRAD(GPT_PROJ_B), g->dproj, b->atty, NULL, N, Cl,
                        C);
    READY(GPT_PROJ_W, GPT_PROJ_B);
    dev_matmul_backward(NULL, GRAD(GPT_QKV_W), GRAD(GPT_QKV_B), g->dqkv, b->ln1, NULL, N, C,
                        3 * Cl);
    READY(GPT_QKV_W, GPT_QKV_B);
    dev_layernorm_backward(NULL, GRAD(GPT_LN1_W), GRAD(GPT_LN1_B), g->dln1, a->x[i], NULL,
                           b->ln1_mean, b->ln1_rstd, N, C);
    READY(GPT_LN1_W, GPT_LN1_B);
#undef READY
#undef GRAD
}

/* The end of B: the gradient of the chunk's input goes to the embedding's W or to the
 * previous stage. */
static void input_out(const gpt_chunk *c, const gpt_acts *a, const gpt_scratch *s, gpt_wgrad *wg,
                      float *dx_in) {
    const size_t bytes = (size_t)a->B * (size_t)a->T * (size_t)c->cfg.hidden * sizeof(float);
    if (c->shard.has_embedding) device_copy(wg->demb, s->dres, bytes);
    else if (dx_in) device_copy(dx_in, s->dres, bytes);
}

/* W of the embedding. Its all-reduce (g) has the identity as backward: every TP rank adds
 * the full gradient into the rows it holds. */
static void embedding_weight(const gpt_chunk *c, float *grads, const gpt_acts *a,
                             const gpt_wgrad *wg) {
    const size_t B = (size_t)a->B, T = (size_t)a->T, N = B * T, C = (size_t)c->cfg.hidden;
    const gpt_param *pe = gpt_chunk_find(c, GPT_WTE, -1), *pp = gpt_chunk_find(c, GPT_WPE, -1);
    dev_position_backward(grad_of(grads, pp), wg->demb, B, T, C);
    tp_vocab_embedding_backward(NULL, grad_of(grads, pe), wg->demb, a->tokens, N, C, c->v_start,
                                c->Vl);
    gpt_hooks_grads_ready(c, GPT_HOOK_EMBEDDING);
}

/* The whole backward: each layer's B, then at once its W, top-down. W of a layer touches only
 * that layer's gradients and reads what its own B left, so this computes exactly the bits of
 * "every B, then every W" — but each layer's gradients are final (and its bucket can start
 * its reduction, --overlap-grad-reduce) while the layers below are still in their backward. */
void gpt_backward(const gpt_chunk *c, const float *params, float *grads, gpt_acts *a,
                  gpt_scratch *s, const float *dx_out, float *dx_in, float dloss, comm_group *tp) {
    const size_t N = (size_t)a->B * (size_t)a->T, C = (size_t)c->cfg.hidden;
    if (c->shard.has_head) {
        head_input(c, params, a, s, s->wg, dloss, tp);
        head_weight(c, grads, a, s->wg);
    } else {
        device_copy(s->dres, dx_out, N * C * sizeof(float));
    }
    for (int i = a->nblocks - 1; i >= 0; i--) {
        block_input(c, params, a, s, s->wg, i, tp);
        block_weight(c, grads, a, s->wg, i);
    }
    input_out(c, a, s, s->wg, dx_in);
    if (c->shard.has_embedding) embedding_weight(c, grads, a, s->wg);
}

/* B: input gradients only. Every dY a weight gradient needs is written into wg (the layers'
 * input gradients are computed from it there, so nothing is copied twice); dres, the
 * residual stream's gradient, is walked backwards in place and copied out where it is some
 * layer's dY. Each layer below is called with its weight gradients NULL. */
void gpt_backward_input(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                        gpt_wgrad *wg, const float *dx_out, float *dx_in, float dloss,
                        comm_group *tp) {
    const size_t N = (size_t)a->B * (size_t)a->T, C = (size_t)c->cfg.hidden;
    if (c->shard.has_head) head_input(c, params, a, s, wg, dloss, tp);
    else device_copy(s->dres, dx_out, N * C * sizeof(float));
    for (int i = a->nblocks - 1; i >= 0; i--) block_input(c, params, a, s, wg, i, tp);
    input_out(c, a, s, wg, dx_in);
}

/* W: weight gradients only, from the activations and the dY's B left in wg, in the order the
 * fused backward accumulates them (head, blocks top-down, embedding: the tied wte gets the
 * head's part first when one chunk holds both). No communication: the tensor-parallel
 * operators act on input gradients only. */
void gpt_backward_weight(const gpt_chunk *c, float *grads, const gpt_acts *a, const gpt_wgrad *wg) {
    if (c->shard.has_head) head_weight(c, grads, a, wg);
    for (int i = a->nblocks - 1; i >= 0; i--) block_weight(c, grads, a, wg, i);
    if (c->shard.has_embedding) embedding_weight(c, grads, a, wg);
}
