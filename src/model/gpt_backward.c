/* gpt_backward.c — the backward pass of a chunk (gpt.h): the input-gradient part B, the
 * weight-gradient part W, and the whole backward that runs each layer's W right after its B.
 * It walks the forward's steps in reverse: the head, the blocks top-down (gpt_block.c), the
 * embedding. */
#include <stddef.h>

#include "src/core/clock.h"

#include "src/device/device.h"
#include "src/model/gpt.h"
#include "src/model/gpt_hooks.h"
#include "src/model/gpt_internal.h"
#include "src/tp/layers.h"
#include "src/tp/region.h"

/* The backward in parts: B (input gradients) and W (weight gradients) of the head, of each
 * block, and of the embedding. gpt_backward_input runs every B part, gpt_backward_weight every
 * W part; gpt_backward interleaves them layer by layer (below). */

/* B of the head and the loss: dres = the gradient of the last block's output. */
static void head_input(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                       gpt_wgrad *wg, float dloss, comm_group *tp) {
    const size_t B = (size_t)a->B, T = (size_t)a->T, N = B * T, C = (size_t)c->cfg.hidden;
    const size_t Nr = B * seq_local(c, T), Vl = c->Vl;
    const gpt_param *pw = gpt_chunk_find(c, GPT_LNF_W, -1);
    const tp_region r = chunk_tp_region(c, tp, B, T, -1);
    dev_fill(s->dloss, dloss, N);
    tp_vocab_cross_entropy_backward(tp, wg->dlogits, a->ce_stats, a->logits, a->targets, s->dloss,
                                    N, Vl, c->v_start, c->cfg.real_vocab);
    device_zero(wg->dlnf, Nr * C * sizeof(float));
    gpt_span w = gpt_span_params(c, params, GPT_UNIT_WTE, GPT_UNIT_LNF); /* the tied wte alone */
    tp_region_enter_input(&r, TP_HEAD, wg->dlnf, wg->lnf_full, wg->dlogits, a->lnf, w.at, Vl);
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
    const size_t C = (size_t)c->cfg.hidden, Vl = c->Vl;
    const size_t Nr = (size_t)a->B * seq_local(c, (size_t)a->T);
    const gpt_param *pw = gpt_chunk_find(c, GPT_LNF_W, -1), *pb = gpt_chunk_find(c, GPT_LNF_B, -1);
    const gpt_param *pe = gpt_chunk_find(c, GPT_WTE, -1);
    const tp_region r = chunk_tp_region(c, NULL, (size_t)a->B, (size_t)a->T, -1); /* no messages */
    gpt_span g = gpt_span_grads(c, grads, GPT_UNIT_WTE);
    tp_region_enter_weight(&r, gpt_span_of(&g, pe), NULL, wg->dlogits, wg->lnf_full, a->lnf, Vl);
    gpt_span_grads_done(c, &g);
    g = gpt_span_grads(c, grads, GPT_UNIT_LNF);
    dev_layernorm_backward(NULL, gpt_span_of(&g, pw), gpt_span_of(&g, pb), wg->dlnf,
                           a->x[a->nblocks], NULL, a->lnf_mean, a->lnf_rstd, Nr, C);
    gpt_span_grads_done(c, &g);
    gpt_hooks_grads_ready(c, GPT_HOOK_HEAD); /* lnf; the head's wte part is not all of it */
}

/* The end of B: the gradient of the chunk's input goes to the embedding's W (through the
 * backward of the region's exit: with sequence parallelism ḡ's all-gather, so W sees every
 * position) or to the previous stage (this rank's positions). */
static void input_out(const gpt_chunk *c, const gpt_acts *a, const gpt_scratch *s, gpt_wgrad *wg,
                      float *dx_in, comm_group *tp) {
    const tp_region r = chunk_tp_region(c, tp, (size_t)a->B, (size_t)a->T, -1);
    if (c->shard.has_embedding) tp_region_embedding_input(&r, wg->demb, s->dres);
    else if (dx_in) device_copy(dx_in, s->dres, r.B * r.Tl * r.C * sizeof(float));
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
/* The thread CPU clock where the scratch times its W parts (gpt_scratch_time_weight), else 0:
 * an untraced run reads no clock. */
static double w_clock(const gpt_scratch *s) { return s->time_weight ? thread_cpu_now() : 0; }

void gpt_backward(const gpt_chunk *c, const float *params, float *grads, gpt_acts *a,
                  gpt_scratch *s, const float *dx_out, float *dx_in, float dloss, comm_group *tp) {
    const size_t Nr = (size_t)a->B * seq_local(c, (size_t)a->T), C = (size_t)c->cfg.hidden;
    s->dloss_value = dloss;
    const double start = w_clock(s);
    double w = 0, t0; /* the W parts' thread CPU time (gpt_scratch_weight_share) */
    if (c->shard.has_head) {
        head_input(c, params, a, s, s->wg, dloss, tp);
        t0 = w_clock(s);
        head_weight(c, grads, a, s->wg);
        w += w_clock(s) - t0;
    } else {
        device_copy(s->dres, dx_out, Nr * C * sizeof(float));
    }
    for (int i = a->nblocks - 1; i >= 0; i--) {
        gpt_block_input(c, params, a, s, s->wg, i, tp);
        t0 = w_clock(s);
        gpt_block_weight(c, grads, a, s, s->wg, i);
        w += w_clock(s) - t0;
    }
    input_out(c, a, s, s->wg, dx_in, tp);
    t0 = w_clock(s);
    if (c->shard.has_embedding) embedding_weight(c, grads, a, s->wg);
    const double end = w_clock(s);
    w += end - t0;
    s->weight_share = end > start ? w / (end - start) : 0;
}

void gpt_scratch_time_weight(gpt_scratch *s, bool on) { s->time_weight = on; }

double gpt_scratch_weight_share(const gpt_scratch *s) { return s->weight_share; }

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
    for (int i = a->nblocks - 1; i >= 0; i--) gpt_block_input(c, params, a, s, wg, i, tp);
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
    for (int i = a->nblocks - 1; i >= 0; i--) gpt_block_weight(c, grads, a, NULL, wg, i);
    if (c->shard.has_embedding) embedding_weight(c, grads, a, wg);
}
