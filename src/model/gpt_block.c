/* gpt_block.c — one transformer block of a chunk, forward and backward, as the serial GPT-2
 * block reads:
 *
 *   x_mid = x + proj(attention(QKV(LN1(x))))        x_out = x_mid + MLP(LN2(x_mid))
 *
 * forward (gpt_block_forward), B: the input gradients (gpt_block_input) and W: the weight
 * gradients (gpt_block_weight, gpt.h THE SPLIT BACKWARD). Each parallel idea is one call, on a
 * handle that block_ctx_make builds for the pass from the chunk's features:
 *
 *   tp_region_enter_*  the column-parallel linear entering the tensor-parallel region:
 *                      f before QKV and fc (with sequence parallelism, g)   src/tp/region.h
 *   tp_region_exit_*   the row-parallel linear leaving it:
 *                      g after proj and fcproj (with sequence parallelism, ḡ)
 *   cp_attention_*     attention: local, or a ring over the context-parallel group   src/cp
 *   mlp_*              the MLP: dense (fc, GELU, fcproj through the region), or the mixture
 *                      of experts (src/moe/moe_block.h)
 *   gpt_recompute_for_backward   what the micro-batch did not keep, computed again before B
 *                                (gpt_recompute.c)
 *
 * Trace labels, which ranks share the switch loss, sequence lengths: in those packages.
 * Not here: the walk over a chunk's blocks (gpt.c, gpt_backward.c), where a block's activations
 * live (gpt_layout.c, gpt_block_io).
 */
#include <stddef.h>

#include "src/core/check.h"
#include "src/cp/attention.h"
#include "src/device/device.h"
#include "src/model/gpt.h"
#include "src/model/gpt_hooks.h"
#include "src/model/gpt_internal.h"
#include "src/moe/moe_block.h"
#include "src/tp/region.h"

block_ctx block_ctx_make(const gpt_chunk *c, comm_group *tp, int B_, int T_, int i) {
    const gpt_features *f = &c->features;
    const size_t B = (size_t)B_, T = (size_t)T_, C = (size_t)c->cfg.hidden;
    const size_t HS = C / (size_t)c->cfg.num_heads;
    const int layer = c->shard.layer_begin + i;
    const moe_config mc = chunk_moe_config(c);
    const block_ctx x = {
        .c = c,
        .i = i,
        .layer = layer,
        .N = B * T,
        .Nr = B * seq_local(c, T),
        .C = C,
        .Cl = c->Cl,
        .tp = chunk_tp_region(c, tp, B, T, layer),
        .attention = {f->cp, B, T, c->NHl, HS, layer},
        .moe = moe_block_make(&mc, f->ep, tp, f->sequence_parallel, f->cp, f->moe_stats, layer),
    };
    return x;
}

/* ---------------------------------------------------------------- the MLP, dense or experts */

/* x_out = x_mid + the MLP of ln2: fc (entering the region) -> GELU -> fcproj (leaving it), or
 * the experts. Without x_out (the last block of a recomputed group, whose output is kept) it
 * stops after the GELU: all the block's backward reads. */
static void mlp_forward(const block_ctx *x, const block_params *w, const block_acts *b,
                        float *x_out) {
    const size_t N = x->N, Cl = x->Cl;
    if (chunk_is_moe(x->c)) { /* router, experts (all-to-all over ep) */
        CHECK(x_out, "MoE blocks are not recomputed");
        const moe_params mp = {w->router_w, w->fc_w, w->fc_b, w->fcproj_w, w->fcproj_b};
        *b->aux = moe_block_forward(&x->moe, &mp, b->moe, x_out, b->ln2, x->Nr, x->C);
    } else {
        tp_region_enter_forward(&x->tp, TP_MLP, b->fch, b->ln2, w->fc_w, w->fc_b, 4 * Cl);
        dev_gelu_forward(b->fch_gelu, b->fch, N * 4 * Cl);
        if (!x_out) return;
        tp_region_exit_forward(&x->tp, TP_MLP, x_out, b->fch_gelu, w->fcproj_w, w->fcproj_b,
                               4 * Cl);
    }
    dev_add_inplace(x_out, b->x_mid, x->Nr * x->C);
}

/* The experts' and router's gradients of block i in g->dmoe, their buffer order (gpt.h). */
static moe_grads moe_grads_in(const gpt_chunk *c, int i, float *base) {
    const size_t first = block_param(c, i, GPT_FC_W)->offset;
    return (moe_grads){
        .router_w = base + (block_param(c, i, GPT_ROUTER_W)->offset - first),
        .fc_w = base,
        .fc_b = base + (block_param(c, i, GPT_FC_B)->offset - first),
        .fcproj_w = base + (block_param(c, i, GPT_FCPROJ_W)->offset - first),
        .fcproj_b = base + (block_param(c, i, GPT_FCPROJ_B)->offset - first),
    };
}

/* B of the MLP: g->dln2 (Nr,C) = the gradient of its input, from s->dres (its output's). Dense:
 * fcproj (g's backward), GELU, fc (f's backward), leaving in g the dY's W reads. Experts: dY
 * rows go back to the experts and the input gradients come home (all-to-all both ways), and
 * the experts' and router's weight gradients are computed here, into g->dmoe, for W to add. */
static void mlp_input(const block_ctx *x, const block_params *w, const block_acts *b,
                      block_wgrad *g, const gpt_scratch *s) {
    const size_t N = x->N, Nr = x->Nr, C = x->C, Cl = x->Cl;
    if (chunk_is_moe(x->c)) {
        const moe_params mp = {w->router_w, w->fc_w, w->fc_b, w->fcproj_w, w->fcproj_b};
        moe_grads mg = moe_grads_in(x->c, x->i, g->dmoe);
        device_zero(g->dmoe, moe_block_floats(x->c) * sizeof(float));
        device_zero(g->dln2, Nr * C * sizeof(float));
        moe_block_backward(&x->moe, &mp, &mg, b->moe, g->dln2, s->dres, b->ln2, s->dloss_value, Nr,
                           C);
        return;
    }
    device_zero(s->dfch_gelu, N * 4 * Cl * sizeof(float));
    tp_region_exit_input(&x->tp, TP_MLP, s->dfch_gelu, g->dfcproj, s->dres, b->fch_gelu,
                         w->fcproj_w, 4 * Cl);
    device_zero(g->dfch, N * 4 * Cl * sizeof(float));
    dev_gelu_backward(g->dfch, b->fch, s->dfch_gelu, N * 4 * Cl);
    device_zero(g->dln2, Nr * C * sizeof(float));
    tp_region_enter_input(&x->tp, TP_MLP, g->dln2, g->ln2_full, g->dfch, b->ln2, w->fc_w, 4 * Cl);
}

/* W of a block's weight gradient `kind` in the span gs, and the report that it is final (its
 * buckets may start their reduction). */
#define GRAD(kind) gpt_span_of(gs, block_param(x->c, x->i, kind))
#define READY(w, bias) gpt_hooks_block_grads_ready(x->c, x->layer, w, bias)

/* W of the MLP: fcproj, then fc; an MoE block's gradients B computed (fc_w .. router_w). */
static void mlp_weight(const block_ctx *x, const gpt_span *gs, const block_acts *b,
                       const block_wgrad *g) {
    if (chunk_is_moe(x->c)) {
        dev_add_inplace(GRAD(GPT_FC_W), g->dmoe, moe_block_floats(x->c));
        return;
    }
    tp_region_exit_weight(&x->tp, GRAD(GPT_FCPROJ_W), GRAD(GPT_FCPROJ_B), g->dfcproj, b->fch_gelu,
                          4 * x->Cl);
    READY(GPT_FCPROJ_W, GPT_FCPROJ_B);
    tp_region_enter_weight(&x->tp, GRAD(GPT_FC_W), GRAD(GPT_FC_B), g->dfch, g->ln2_full, b->ln2,
                           4 * x->Cl);
    READY(GPT_FC_W, GPT_FC_B);
}

/* ---------------------------------------------------------------- the block */

void gpt_block_forward(const block_ctx *x, const block_params *w, const block_io *io) {
    const block_acts *b = &io->b;
    const size_t Nr = x->Nr, C = x->C, Cl = x->Cl;
    /* attention: x -> LN1 -> QKV (entering the region: f) -> attention over this rank's heads
     *            -> proj (leaving it: g, then the bias once) -> + x */
    dev_layernorm_forward(b->ln1, b->ln1_mean, b->ln1_rstd, io->x_in, w->ln1_w, w->ln1_b, Nr, C);
    tp_region_enter_forward(&x->tp, TP_ATTN, b->qkv, b->ln1, w->qkv_w, w->qkv_b, 3 * Cl);
    cp_attention_forward(&x->attention, b->atty, b->att, b->qkv);
    tp_region_exit_forward(&x->tp, TP_ATTN, b->x_mid, b->atty, w->proj_w, w->proj_b, Cl);
    dev_add_inplace(b->x_mid, io->x_in, Nr * C); /* the residual, added in place */
    /* MLP: x -> LN2 -> the MLP -> + x */
    dev_layernorm_forward(b->ln2, b->ln2_mean, b->ln2_rstd, b->x_mid, w->ln2_w, w->ln2_b, Nr, C);
    mlp_forward(x, w, b, io->x_out);
}

void gpt_block_input(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                     gpt_wgrad *wg, int i, comm_group *tp) {
    gpt_recompute_for_backward(c, params, a, s, wg, i, tp); /* before this unit is held */
    const block_ctx x = block_ctx_make(c, tp, a->B, a->T, i);
    const size_t N = x.N, Nr = x.Nr, C = x.C, Cl = x.Cl;
    gpt_span span = gpt_span_params(c, params, x.layer, i > 0 ? x.layer - 1 : GPT_UNIT_NONE);
    const block_params w = block_views(c, &span, i);
    const block_io io = gpt_block_io(c, a, s, wg, i, PASS_BACKWARD);
    const block_acts *b = &io.b;
    block_wgrad *g = &wg->blocks[i];
    float *dres = s->dres; /* (Nr,C) the gradient of the block's output, then of its input */
    /* MLP: dres -> dln2; LN2: dres += the gradient of x_mid */
    mlp_input(&x, &w, b, g, s);
    dev_layernorm_backward(dres, NULL, NULL, g->dln2, b->x_mid, w.ln2_w, b->ln2_mean, b->ln2_rstd,
                           Nr, C);
    /* attention: proj (g's backward), attention, QKV (f's backward); LN1: dres += the gradient
     * of x */
    device_zero(s->datty, N * Cl * sizeof(float));
    tp_region_exit_input(&x.tp, TP_ATTN, s->datty, g->dproj, dres, b->atty, w.proj_w, Cl);
    device_zero(g->dqkv, N * 3 * Cl * sizeof(float));
    cp_attention_backward(&x.attention, g->dqkv, s->datty, b->qkv, b->atty, b->att, s->datt);
    device_zero(g->dln1, Nr * C * sizeof(float));
    tp_region_enter_input(&x.tp, TP_ATTN, g->dln1, g->ln1_full, g->dqkv, b->ln1, w.qkv_w, 3 * Cl);
    dev_layernorm_backward(dres, NULL, NULL, g->dln1, io.x_in, w.ln1_w, b->ln1_mean, b->ln1_rstd,
                           Nr, C);
    gpt_span_params_done(c, &span);
}

void gpt_block_weight(const gpt_chunk *c, float *grads, const gpt_acts *a, const gpt_scratch *s,
                      const gpt_wgrad *wg, int i) {
    const block_ctx ctx = block_ctx_make(c, NULL, a->B, a->T, i), *x = &ctx; /* no messages */
    const block_io io = gpt_block_io(c, a, s, wg, i, PASS_BACKWARD);
    const block_acts *b = &io.b;
    const block_wgrad *g = &wg->blocks[i];
    gpt_span span = gpt_span_grads(c, grads, x->layer);
    const gpt_span *gs = &span;
    mlp_weight(x, gs, b, g);
    dev_layernorm_backward(NULL, GRAD(GPT_LN2_W), GRAD(GPT_LN2_B), g->dln2, b->x_mid, NULL,
                           b->ln2_mean, b->ln2_rstd, x->Nr, x->C);
    READY(GPT_LN2_W, GPT_LN2_B);
    tp_region_exit_weight(&x->tp, GRAD(GPT_PROJ_W), GRAD(GPT_PROJ_B), g->dproj, b->atty, x->Cl);
    READY(GPT_PROJ_W, GPT_PROJ_B);
    tp_region_enter_weight(&x->tp, GRAD(GPT_QKV_W), GRAD(GPT_QKV_B), g->dqkv, g->ln1_full, b->ln1,
                           3 * x->Cl);
    READY(GPT_QKV_W, GPT_QKV_B);
    dev_layernorm_backward(NULL, GRAD(GPT_LN1_W), GRAD(GPT_LN1_B), g->dln1, io.x_in, NULL,
                           b->ln1_mean, b->ln1_rstd, x->Nr, x->C);
    READY(GPT_LN1_W, GPT_LN1_B);
    gpt_span_grads_done(c, &span); /* ZeRO-2/3: the bucket is reduce-scattered here */
}

#undef READY
#undef GRAD
