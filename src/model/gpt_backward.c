/* gpt_backward.c — the backward pass of a chunk (gpt.h): the input-gradient part B, the
 * weight-gradient part W, and the whole backward that runs each layer's W right after its B. */
#include <stddef.h>

#include "src/cp/ring_attention.h"
#include "src/device/device.h"
#include "src/model/gpt.h"
#include "src/model/gpt_hooks.h"
#include "src/model/gpt_internal.h"
#include "src/runtime/comm_label.h"
#include "src/tp/layers.h"
#include "src/tp/mappings.h"

/* B of the two linears of tensor parallelism, as the forward used them (gpt.c): with f and g,
 * or with sequence parallelism g and ḡ, each labelled for the trace.
 *
 * Row-parallel: its dY comes from the residual gradient dres (Nr,C): a copy (g's backward is
 * the identity), or the all-gather of ḡ's backward; dY is kept in dout_kept (N,C), which the
 * layer's W reads too, and dinp (N,Cl) += dY A_i. */
static void row_input(const gpt_chunk *c, comm_group *tp, float *dinp, float *dout_kept,
                      const float *dres, const float *in, const float *w, size_t B, size_t T,
                      size_t Cl, const char *sp_label, int layer) {
    const size_t C = (size_t)c->cfg.hidden;
    if (c->sequence_parallel) {
        comm_label_set(sp_label, layer);
        tp_row_linear_sp_backward(tp, dinp, dout_kept, NULL, NULL, dres, in, w, B, seq_local(c, T),
                                  Cl, C);
        comm_label_clear();
        return;
    }
    device_copy(dout_kept, dres, B * T * C * sizeof(float));
    tp_row_linear_backward(tp, dinp, NULL, NULL, dout_kept, in, w, B * T, Cl, C);
}

/* Column-parallel: dinp (Nr,C) += its input gradient, summed by f's backward (all-reduce) or,
 * with sequence parallelism, by g's (reduce-scatter), which then also all-gathers the layer's
 * input again into in_full (N,C) for W. */
static void column_input(const gpt_chunk *c, comm_group *tp, float *dinp, float *in_full,
                         const float *dout, const float *in, const float *w, size_t B, size_t T,
                         size_t OCl, const char *label, const char *sp_label, int layer) {
    const size_t C = (size_t)c->cfg.hidden;
    comm_label_set(c->sequence_parallel ? sp_label : label, layer);
    if (c->sequence_parallel)
        tp_column_linear_sp_backward(tp, dinp, in_full, NULL, NULL, dout, in, w, B, seq_local(c, T),
                                     C, OCl);
    else tp_column_linear_backward(tp, dinp, NULL, NULL, dout, in, w, B * T, C, OCl, false);
    comm_label_clear();
}

/* The backward in parts: B (input gradients) and W (weight gradients) of the head, of each
 * block, and of the embedding. gpt_backward_input runs every B part, gpt_backward_weight every
 * W part; gpt_backward interleaves them layer by layer (below). */

/* B of the head and the loss: dres = the gradient of the last block's output. */
static void head_input(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                       gpt_wgrad *wg, float dloss, comm_group *tp) {
    const size_t B = (size_t)a->B, T = (size_t)a->T, N = B * T, C = (size_t)c->cfg.hidden;
    const size_t Nr = B * seq_local(c, T), Vl = c->Vl;
    const gpt_param *pw = gpt_chunk_find(c, GPT_LNF_W, -1);
    dev_fill(s->dloss, dloss, N);
    tp_vocab_cross_entropy_backward(tp, wg->dlogits, a->ce_stats, a->logits, a->targets, s->dloss,
                                    N, Vl, c->v_start, c->cfg.real_vocab);
    device_zero(wg->dlnf, Nr * C * sizeof(float));
    gpt_span w = gpt_span_params(c, params, GPT_UNIT_WTE, GPT_UNIT_LNF); /* the tied wte alone */
    column_input(c, tp, wg->dlnf, wg->lnf_full, wg->dlogits, a->lnf, w.at, B, T, Vl, "f bwd head",
                 "sp g bwd head", -1);
    gpt_span_params_done(c, &w);
    device_zero(s->dres, Nr * C * sizeof(float));
    const int top = a->nblocks > 0 ? c->shard.layer_end - 1 : GPT_UNIT_NONE;
    w = gpt_span_params(c, params, GPT_UNIT_LNF, top);
    dev_layernorm_backward(s->dres, NULL, NULL, wg->dlnf, a->x[a->nblocks], gpt_span_of(&w, pw),
                           a->lnf_mean, a->lnf_rstd, Nr, C);
    gpt_span_params_done(c, &w);
}

/* W of the head: the tied wte's head part and LNf. */
static void head_weight(const gpt_chunk *c, float *grads, const gpt_acts *a, const gpt_wgrad *wg) {
    const size_t N = (size_t)a->B * (size_t)a->T, C = (size_t)c->cfg.hidden, Vl = c->Vl;
    const size_t Nr = (size_t)a->B * seq_local(c, (size_t)a->T);
    const gpt_param *pw = gpt_chunk_find(c, GPT_LNF_W, -1), *pb = gpt_chunk_find(c, GPT_LNF_B, -1);
    const gpt_param *pe = gpt_chunk_find(c, GPT_WTE, -1);
    const float *lnf = wg->lnf_full ? wg->lnf_full : a->lnf; /* the head's whole input */
    gpt_span g = gpt_span_grads(c, grads, GPT_UNIT_WTE);
    dev_matmul_backward(NULL, gpt_span_of(&g, pe), NULL, wg->dlogits, lnf, NULL, N, C, Vl);
    gpt_span_grads_done(c, &g);
    g = gpt_span_grads(c, grads, GPT_UNIT_LNF);
    dev_layernorm_backward(NULL, gpt_span_of(&g, pw), gpt_span_of(&g, pb), wg->dlnf,
                           a->x[a->nblocks], NULL, a->lnf_mean, a->lnf_rstd, Nr, C);
    gpt_span_grads_done(c, &g);
    gpt_hooks_grads_ready(c, GPT_HOOK_HEAD); /* lnf; the head's wte part is not all of it */
}

/* B of an MoE block's MLP (gpt.h, MIXTURE OF EXPERTS): dY rows go back to the experts over
 * the ep group and the input gradients come home (all-to-all both ways), into g->dln2; the
 * experts' and the router's weight gradients are computed here, into g->dmoe, and W adds them.
 * The switch loss weighs as one micro-batch's mean loss: dloss · (positions here) · cp. */
static void moe_mlp_input(const gpt_chunk *c, const block_params *w, const block_acts *b,
                          block_wgrad *g, gpt_scratch *s, int i, size_t Nr) {
    const size_t C = (size_t)c->cfg.hidden;
    const moe_config mc = chunk_moe_config(c);
    const moe_params mp = {w->router_w, w->fc_w, w->fc_b, w->fcproj_w, w->fcproj_b};
    float *base = g->dmoe;
    const size_t first = block_param(c, i, GPT_FC_W)->offset;
    moe_grads mg = {
        .router_w = base + (block_param(c, i, GPT_ROUTER_W)->offset - first),
        .fc_w = base,
        .fc_b = base + (block_param(c, i, GPT_FC_B)->offset - first),
        .fcproj_w = base + (block_param(c, i, GPT_FCPROJ_W)->offset - first),
        .fcproj_b = base + (block_param(c, i, GPT_FCPROJ_B)->offset - first),
    };
    device_zero(base, moe_block_floats(c) * sizeof(float));
    device_zero(g->dln2, Nr * C * sizeof(float));
    /* dloss · the micro-batch's positions (this rank holds 1/cp, with SP 1/tp, of them) */
    const float share = (float)c->cp_size * (c->sequence_parallel ? (float)c->shard.tp_size : 1);
    const float aux_dloss = s->dloss_value * (float)Nr * share;
    comm_label_set("ep a2a bwd moe", c->shard.layer_begin + i);
    moe_backward(&mc, c->ep, &mp, &mg, b->moe, g->dln2, s->dres, b->ln2, aux_dloss, Nr, C);
    comm_label_clear();
}

/* B of block i: s->dres goes from the gradient of its output to that of its input; the dY's
 * its W needs are left in wg. First, what the micro-batch did not keep is recomputed. */
static void block_input(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                        gpt_wgrad *wg, int i, comm_group *tp) {
    const size_t B = (size_t)a->B, T = (size_t)a->T, N = B * T, C = (size_t)c->cfg.hidden;
    const size_t Cl = c->Cl, NHl = c->NHl, HS = C / (size_t)c->cfg.num_heads;
    const size_t Nr = B * seq_local(c, T);                  /* rows of the residual stream here */
    gpt_recompute_for_backward(c, params, a, s, wg, i, tp); /* before this unit is held */
    const int layer = c->shard.layer_begin + i;
    gpt_span span = gpt_span_params(c, params, layer, i > 0 ? layer - 1 : GPT_UNIT_NONE);
    const block_params w = block_views(c, &span, i);
    const block_io io = gpt_block_io(c, a, s, wg, i, PASS_BACKWARD);
    const block_acts *b = &io.b;
    block_wgrad *g = &wg->blocks[i];
    float *dres = s->dres;

    /* MLP backward. The row-parallel fcproj: g's backward is the identity (no message), or
     * with sequence parallelism ḡ's backward all-gathers dY; the column-parallel fc sums its
     * input gradient (f's backward all-reduces; with sequence parallelism g's reduce-scatters).
     * An MoE block's: moe_mlp_input. */
    if (chunk_is_moe(c)) {
        moe_mlp_input(c, &w, b, g, s, i, Nr);
    } else {
        device_zero(s->dfch_gelu, N * 4 * Cl * sizeof(float));
        row_input(c, tp, s->dfch_gelu, g->dfcproj, dres, b->fch_gelu, w.fcproj_w, B, T, 4 * Cl,
                  "sp gbar bwd mlp", layer);
        device_zero(g->dfch, N * 4 * Cl * sizeof(float));
        dev_gelu_backward(g->dfch, b->fch, s->dfch_gelu, N * 4 * Cl);
        device_zero(g->dln2, Nr * C * sizeof(float));
        column_input(c, tp, g->dln2, g->ln2_full, g->dfch, b->ln2, w.fc_w, B, T, 4 * Cl,
                     "f bwd mlp", "sp g bwd mlp", layer);
    }
    /* dres += LN2 backward: now the gradient of x_mid */
    dev_layernorm_backward(dres, NULL, NULL, g->dln2, b->x_mid, w.ln2_w, b->ln2_mean, b->ln2_rstd,
                           Nr, C);

    /* Attention backward: the same two layers around this rank's heads. */
    device_zero(s->datty, N * Cl * sizeof(float));
    row_input(c, tp, s->datty, g->dproj, dres, b->atty, w.proj_w, B, T, Cl, "sp gbar bwd attn",
              layer);
    device_zero(g->dqkv, N * 3 * Cl * sizeof(float));
    if (c->cp) { /* ring attention's backward: K/V around again, dK/dV home (src/cp) */
        comm_label_set("cp ring bwd attn", layer);
        ring_attention_backward(c->cp, g->dqkv, s->datty, b->qkv, b->atty, b->att, B, T, NHl, HS);
        comm_label_clear();
    } else {
        dev_attention_backward(g->dqkv, s->datty, b->qkv, b->att, s->datt, B, T, NHl, HS);
    }
    device_zero(g->dln1, Nr * C * sizeof(float));
    column_input(c, tp, g->dln1, g->ln1_full, g->dqkv, b->ln1, w.qkv_w, B, T, 3 * Cl, "f bwd attn",
                 "sp g bwd attn", layer);
    /* dres += LN1 backward: now the gradient of the block input */
    dev_layernorm_backward(dres, NULL, NULL, g->dln1, io.x_in, w.ln1_w, b->ln1_mean, b->ln1_rstd,
                           Nr, C);
    gpt_span_params_done(c, &span);
}

/* W of block i, from its activations and the dY's its B left in wg; s: the scratch where
 * the fused backward recomputed the block, NULL in the split backward's W (wg has it). */
static void block_weight(const gpt_chunk *c, float *grads, const gpt_acts *a, const gpt_scratch *s,
                         const gpt_wgrad *wg, int i) {
    const size_t N = (size_t)a->B * (size_t)a->T, C = (size_t)c->cfg.hidden, Cl = c->Cl;
    const size_t Nr = (size_t)a->B * seq_local(c, (size_t)a->T);
    const block_io io = gpt_block_io(c, a, s, wg, i, PASS_BACKWARD);
    const block_acts *b = &io.b;
    const block_wgrad *g = &wg->blocks[i];
    /* the inputs of qkv and fc over the whole sequence: kept, or all-gathered again by B */
    const float *ln1 = g->ln1_full ? g->ln1_full : b->ln1,
                *ln2 = g->ln2_full ? g->ln2_full : b->ln2;
    const int layer = c->shard.layer_begin + i;
    gpt_span span = gpt_span_grads(c, grads, layer);
#define GRAD(kind) gpt_span_of(&span, block_param(c, i, kind))
/* Each weight's gradient is final as soon as it is computed: its buckets may start. */
#define READY(w, bias) gpt_hooks_block_grads_ready(c, layer, w, bias)
    if (chunk_is_moe(c)) { /* B computed them (fc_w .. router_w, in buffer order) */
        dev_add_inplace(GRAD(GPT_FC_W), g->dmoe, moe_block_floats(c));
    } else {
        dev_matmul_backward(NULL, GRAD(GPT_FCPROJ_W), GRAD(GPT_FCPROJ_B), g->dfcproj, b->fch_gelu,
                            NULL, N, 4 * Cl, C);
        READY(GPT_FCPROJ_W, GPT_FCPROJ_B);
        dev_matmul_backward(NULL, GRAD(GPT_FC_W), GRAD(GPT_FC_B), g->dfch, ln2, NULL, N, C, 4 * Cl);
        READY(GPT_FC_W, GPT_FC_B);
    }
    dev_layernorm_backward(NULL, GRAD(GPT_LN2_W), GRAD(GPT_LN2_B), g->dln2, b->x_mid, NULL,
                           b->ln2_mean, b->ln2_rstd, Nr, C);
    READY(GPT_LN2_W, GPT_LN2_B);
    dev_matmul_backward(NULL, GRAD(GPT_PROJ_W), GRAD(GPT_PROJ_B), g->dproj, b->atty, NULL, N, Cl,
                        C);
    READY(GPT_PROJ_W, GPT_PROJ_B);
    dev_matmul_backward(NULL, GRAD(GPT_QKV_W), GRAD(GPT_QKV_B), g->dqkv, ln1, NULL, N, C, 3 * Cl);
    READY(GPT_QKV_W, GPT_QKV_B);
    dev_layernorm_backward(NULL, GRAD(GPT_LN1_W), GRAD(GPT_LN1_B), g->dln1, io.x_in, NULL,
                           b->ln1_mean, b->ln1_rstd, Nr, C);
    READY(GPT_LN1_W, GPT_LN1_B);
#undef READY
#undef GRAD
    gpt_span_grads_done(c, &span); /* ZeRO-2/3: the bucket is reduce-scattered here */
}

/* The end of B: the gradient of the chunk's input goes to the embedding's W (with sequence
 * parallelism all-gathered first: ḡ's backward, so W sees every position) or to the previous
 * stage (this rank's positions). */
static void input_out(const gpt_chunk *c, const gpt_acts *a, const gpt_scratch *s, gpt_wgrad *wg,
                      float *dx_in, comm_group *tp) {
    const size_t B = (size_t)a->B, Tl = seq_local(c, (size_t)a->T), C = (size_t)c->cfg.hidden;
    const size_t bytes = B * Tl * C * sizeof(float);
    if (c->shard.has_embedding && c->sequence_parallel) {
        comm_label_set("sp gbar bwd embed", -1);
        tp_reduce_scatter_to_sequence_region_backward(tp, wg->demb, s->dres, B, Tl, C);
        comm_label_clear();
    } else if (c->shard.has_embedding) {
        device_copy(wg->demb, s->dres, bytes);
    } else if (dx_in) {
        device_copy(dx_in, s->dres, bytes);
    }
}

/* W of the embedding. Its all-reduce (g) has the identity as backward: every TP rank adds
 * the full gradient into the rows it holds. */
static void embedding_weight(const gpt_chunk *c, float *grads, const gpt_acts *a,
                             const gpt_wgrad *wg) {
    const size_t B = (size_t)a->B, T = (size_t)a->T, N = B * T, C = (size_t)c->cfg.hidden;
    gpt_span g = gpt_span_grads(c, grads, GPT_UNIT_WPE);
    position_run run[2]; /* the unit is wpe alone; rows at their (zig-zag) positions */
    const int k = position_runs(c, T, 0, T, run);
    if (k == 1) dev_position_backward(g.at, wg->demb, B, T, C);
    for (size_t b = 0; k > 1 && b < B; b++)
        for (int j = 0; j < k; j++)
            dev_position_backward(g.at + run[j].pos * C, wg->demb + (b * T + run[j].row) * C, 1,
                                  run[j].len, C);
    gpt_span_grads_done(c, &g);
    g = gpt_span_grads(c, grads, GPT_UNIT_WTE);
    tp_vocab_embedding_backward(NULL, g.at, wg->demb, a->tokens, N, C, c->v_start, c->Vl);
    gpt_span_grads_done(c, &g);
    gpt_hooks_grads_ready(c, GPT_HOOK_EMBEDDING);
}

/* The whole backward: each layer's B, then at once its W, top-down. W of a layer touches only
 * that layer's gradients and reads what its own B left, so this computes exactly the bits of
 * "every B, then every W" — but each layer's gradients are final (and its bucket can start
 * its reduction, --overlap-grad-reduce) while the layers below are still in their backward. */
void gpt_backward(const gpt_chunk *c, const float *params, float *grads, gpt_acts *a,
                  gpt_scratch *s, const float *dx_out, float *dx_in, float dloss, comm_group *tp) {
    const size_t Nr = (size_t)a->B * seq_local(c, (size_t)a->T), C = (size_t)c->cfg.hidden;
    s->dloss_value = dloss;
    if (c->shard.has_head) {
        head_input(c, params, a, s, s->wg, dloss, tp);
        head_weight(c, grads, a, s->wg);
    } else {
        device_copy(s->dres, dx_out, Nr * C * sizeof(float));
    }
    for (int i = a->nblocks - 1; i >= 0; i--) {
        block_input(c, params, a, s, s->wg, i, tp);
        block_weight(c, grads, a, s, s->wg, i);
    }
    input_out(c, a, s, s->wg, dx_in, tp);
    if (c->shard.has_embedding) embedding_weight(c, grads, a, s->wg);
}

/* B: input gradients only. Every dY a weight gradient needs is written into wg (the layers'
 * input gradients are computed from it there, so nothing is copied twice); dres, the
 * residual stream's gradient, is walked backwards in place and copied out where it is some
 * layer's dY. Each layer below is called with its weight gradients NULL. */
void gpt_backward_input(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                        gpt_wgrad *wg, const float *dx_out, float *dx_in, float dloss,
                        comm_group *tp) {
    const size_t Nr = (size_t)a->B * seq_local(c, (size_t)a->T), C = (size_t)c->cfg.hidden;
    s->dloss_value = dloss;
    if (c->shard.has_head) head_input(c, params, a, s, wg, dloss, tp);
    else device_copy(s->dres, dx_out, Nr * C * sizeof(float));
    for (int i = a->nblocks - 1; i >= 0; i--) block_input(c, params, a, s, wg, i, tp);
    input_out(c, a, s, wg, dx_in, tp);
}

/* W: weight gradients only, from the activations and the dY's B left in wg, in the order the
 * fused backward accumulates them (head, blocks top-down, embedding: the tied wte gets the
 * head's part first when one chunk holds both). No communication: the tensor-parallel
 * operators act on input gradients only, and with sequence parallelism B has all-gathered
 * what W reads over the whole sequence (the inputs of qkv, fc and the head, the dY's of
 * proj and fcproj, the embedding's gradient). */
void gpt_backward_weight(const gpt_chunk *c, float *grads, const gpt_acts *a, const gpt_wgrad *wg) {
    if (c->shard.has_head) head_weight(c, grads, a, wg);
    for (int i = a->nblocks - 1; i >= 0; i--) block_weight(c, grads, a, NULL, wg, i);
    if (c->shard.has_embedding) embedding_weight(c, grads, a, wg);
}
