/* gpt.c — the forward of a GPT chunk: embedding -> blocks -> head. See gpt.h.
 *
 * Reading guide: gpt_forward walks the chunk's layers; each block is gpt_block_forward
 * (gpt_block.c: the serial block, each parallel idea one call), and gpt_backward.c walks the same
 * steps in reverse. The embedding and the head are the vocab-parallel layers of src/tp/layers.h
 * at the edges of the tensor-parallel region (src/tp/region.h: g after the lookup, f before the
 * head's logits; with sequence parallelism ḡ and g). Where the activations live, and what
 * recomputation keeps of them: gpt_layout.c; the parameter table: gpt_params.c.
 */
#include "src/model/gpt.h"

#include <stddef.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/model/gpt_hooks.h"
#include "src/model/gpt_internal.h"
#include "src/runtime/comm.h"
#include "src/tp/layers.h"
#include "src/tp/region.h"

/* x (B,n,C) += the position embeddings of rows [r0, r0+n) of each of the B local sequences of
 * T rows (position_runs): one call for all B sequences when the rows are one run. */
static void add_positions(const gpt_chunk *c, float *x, const float *wpe, size_t B, size_t T,
                          size_t r0, size_t n) {
    const size_t C = (size_t)c->cfg.hidden;
    position_run run[2];
    const int k = position_runs(c, T, r0, n, run);
    if (k == 1) {
        dev_position_forward(x, wpe + run[0].pos * C, B, n, C);
        return;
    }
    for (size_t b = 0; b < B; b++)
        for (int j = 0; j < k; j++)
            dev_position_forward(x + (b * n + run[j].row) * C, wpe + run[j].pos * C, 1, run[j].len,
                                 C);
}

/* Embedding (first stage): the vocab-parallel lookup leaves the tensor-parallel region (g sums
 * the one real row in; with sequence parallelism ḡ reduce-scatters it to this rank's
 * positions); then the positions of this rank's rows. */
static void embedding_forward(const gpt_chunk *c, const float *params, gpt_acts *a, float *x0,
                              comm_group *tp) {
    const tp_region r = chunk_tp_region(c, tp, (size_t)a->B, (size_t)a->T, -1);
    gpt_span w = gpt_span_params(c, params, GPT_UNIT_WTE, GPT_UNIT_WPE); /* the unit is wte alone */
    tp_region_embedding_forward(&r, x0, a->tokens, w.at, c->v_start, c->Vl);
    gpt_span_params_done(c, &w);
    const int first_block = a->nblocks > 0 ? c->shard.layer_begin : GPT_UNIT_NONE;
    w = gpt_span_params(c, params, GPT_UNIT_WPE, first_block);
    add_positions(c, x0, w.at, r.B, r.T, r.first, r.Tl); /* rows [first, first + Tl) of each */
    gpt_span_params_done(c, &w);
}

/* Block i's forward with its unit's parameters, hinting the unit the forward reads next. */
static void block_forward_unit(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                               int i, comm_group *tp) {
    const int layer = c->shard.layer_begin + i;
    const int next = i + 1 < a->nblocks  ? layer + 1
                     : c->shard.has_head ? GPT_UNIT_LNF
                                         : GPT_UNIT_NONE;
    gpt_span w = gpt_span_params(c, params, layer, next);
    const block_params v = block_views(c, &w, i);
    const block_io io = gpt_block_io(c, a, s, NULL, i, PASS_FORWARD);
    const block_ctx x = block_ctx_make(c, tp, a->B, a->T, i);
    gpt_block_forward(&x, &v, &io);
    gpt_span_params_done(c, &w);
}

float gpt_forward(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                  const int32_t *tokens, const int32_t *targets, const float *x_in, float *x_out,
                  comm_group *tp) {
    const size_t B = (size_t)a->B, T = (size_t)a->T, N = B * T, C = (size_t)c->cfg.hidden;
    const size_t Nr = B * seq_local(c, T), Vl = c->Vl;
    const gpt_shard *sh = &c->shard;
    CHECK(s || c->features.recompute.granularity == GPT_RECOMPUTE_NONE,
          "a chunk with recomputation computes what it does not keep in its gpt_scratch: pass it");
    CHECK(!c->features.sequence_parallel || (tp && comm_size(tp) == sh->tp_size),
          "sequence parallelism: pass the tensor-parallel group the chunk was cut for");
    float *x0 = a->x[0]; /* the chunk's input: kept by every setting (its first block's) */

    if (sh->has_embedding) {
        gpt_hooks_params_needed(c, GPT_HOOK_EMBEDDING); /* e.g. its ZeRO gather must be done */
        device_upload(a->tokens, tokens, N * sizeof(int32_t));
        embedding_forward(c, params, a, x0, tp);
    } else {
        device_copy(x0, x_in, Nr * C * sizeof(float));
    }

    for (int i = 0; i < a->nblocks; i++) {
        gpt_hooks_params_needed(c, sh->layer_begin + i);
        block_forward_unit(c, params, a, s, i, tp);
    }

    float *x_last = a->x[a->nblocks] ? a->x[a->nblocks] : s->x_out;
    if (!sh->has_head) {
        if (x_out) device_copy(x_out, x_last, Nr * C * sizeof(float));
        return 0.0f;
    }
    /* Head (last stage): LN -> logits over this rank's vocabulary rows, a column-parallel
     * linear entering the region with the tied wte as weight (f; with sequence parallelism g
     * first gathers the whole sequence, as Megatron does) -> vocab-parallel cross-entropy over
     * all B·T positions; the full logits are never gathered. */
    gpt_hooks_params_needed(c, GPT_HOOK_HEAD);
    device_upload(a->targets, targets, N * sizeof(int32_t));
    gpt_span w = gpt_span_params(c, params, GPT_UNIT_LNF, GPT_UNIT_WTE);
    dev_layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, x_last,
                          gpt_span_of(&w, gpt_chunk_find(c, GPT_LNF_W, -1)),
                          gpt_span_of(&w, gpt_chunk_find(c, GPT_LNF_B, -1)), Nr, C);
    gpt_span_params_done(c, &w);
    w = gpt_span_params(c, params, GPT_UNIT_WTE, GPT_UNIT_NONE);
    const tp_region r = chunk_tp_region(c, tp, B, T, -1);
    tp_region_enter_forward(&r, TP_HEAD, a->logits, a->lnf, w.at, NULL, Vl);
    gpt_span_params_done(c, &w);
    tp_vocab_cross_entropy_forward(tp, a->losses, a->ce_stats, a->logits, a->targets, N, Vl,
                                   c->v_start, c->cfg.real_vocab);
    return (float)(dev_sum(a->losses, N) / (double)N);
}
