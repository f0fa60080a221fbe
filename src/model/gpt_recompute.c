/* gpt_recompute.c — activation recomputation (gpt.h, ACTIVATION RECOMPUTATION): the check of a
 * setting, where each pass finds a block's activations, and the recompute that runs just before
 * a block's backward.
 *
 * Where block i's activations live, by setting and pass (j = i − g0 in its group [g0, g1)):
 *
 *                      kept block              recomputed block (full)
 *   x_in               acts x[i]               acts x[g0] (i = g0), else scratch x[j]
 *   block_acts         acts blocks[i]          scratch layer[j]
 *     selective: att   scratch att             -
 *   split backward     as above                W's fields and x_in from the hand-over (wg),
 *                                              recomputed there by B; qkv, att, fch: scratch
 *
 * The recompute is the forward again, the same kernels on the same inputs (the kept x[g0],
 * the parameters, which no update touches before the step's last W), with the same
 * tensor-parallel collectives in the same order on every rank of the group (with sequence
 * parallelism that includes the all-gathers of g: the group's LayerNorm outputs are kept
 * nowhere whole, so the recompute gathers them again): the bits the
 * backward reads are the bits the forward wrote. It stops before the group's last linear:
 * the group's output is kept (the next group's input, or the head's) and no backward reads
 * it from here.
 *
 * Not here: the layouts (gpt_layout.c takes what each keeps), the block's backward itself
 * (gpt_block.c).
 */
#include <stdio.h>
#include <string.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/model/gpt.h"
#include "src/model/gpt_internal.h"

bool gpt_recompute_check(const gpt_recompute *rc, int L, char *err, size_t errlen) {
    if (rc->granularity != GPT_RECOMPUTE_FULL) return true;
    const int n = rc->num_layers;
    const bool uniform = rc->method == GPT_RECOMPUTE_UNIFORM;
    if (n < 1 || n > L) {
        snprintf(err, errlen,
                 "--recompute-num-layers %d is outside 1..%d: with --recompute-method %s it is %s, "
                 "and a model chunk holds %d layers",
                 n, L, uniform ? "uniform" : "block",
                 uniform ? "the layers of each recomputed group"
                         : "the layers recomputed in each model chunk",
                 L);
        return false;
    }
    if (uniform && L % n != 0) {
        snprintf(err, errlen,
                 "--recompute-num-layers %d does not divide the %d layers of a model chunk: "
                 "--recompute-method uniform recomputes them in groups of that many",
                 n, L);
        return false;
    }
    return true;
}

void gpt_chunk_set_recompute(gpt_chunk *c, const gpt_recompute *rc) {
    char err[256];
    if (!gpt_recompute_check(rc, c->shard.layer_end - c->shard.layer_begin, err, sizeof err))
        die("trident: %s", err);
    c->features.recompute = *rc;
}

/* x[k], the residual stream entering block k (k = nblocks: the chunk's output). */
static float *x_at(const gpt_chunk *c, const gpt_acts *a, const gpt_scratch *s, const gpt_wgrad *wg,
                   int k) {
    int g0, g1;
    if (a->x[k]) return a->x[k];
    if (k == a->nblocks) return s->x_out;
    CHECK(recompute_group(c, k, &g0, &g1) && k > g0, "only recomputed groups drop their x's");
    if (wg && wg->blocks[k].x_in) return wg->blocks[k].x_in;
    CHECK(s != NULL, "the weight-gradient pass of a recomputed block reads its hand-over");
    return s->x[k - g0];
}

block_io gpt_block_io(const gpt_chunk *c, const gpt_acts *a, const gpt_scratch *s,
                      const gpt_wgrad *wg, int i, block_pass pass) {
    block_io io;
    int g0, g1;
    memset(&io, 0, sizeof io);
    if (!recompute_group(c, i, &g0, &g1)) {
        io.b = a->blocks[i];
        if (!io.b.att && s) io.b.att = s->att; /* selective */
        io.x_in = a->x[i];
        io.x_out = pass == PASS_FORWARD ? x_at(c, a, s, wg, i + 1) : NULL;
        return io;
    }
    if (s) io.b = s->layer[i - g0];
    const block_acts *in = wg ? &wg->blocks[i].in : NULL;
    if (in && in->ln1) { /* the split backward: what W reads lives in the hand-over */
        io.b.ln1 = in->ln1, io.b.ln1_mean = in->ln1_mean, io.b.ln1_rstd = in->ln1_rstd;
        io.b.atty = in->atty, io.b.x_mid = in->x_mid, io.b.fch_gelu = in->fch_gelu;
        io.b.ln2 = in->ln2, io.b.ln2_mean = in->ln2_mean, io.b.ln2_rstd = in->ln2_rstd;
    } else {
        CHECK(s != NULL, "the weight-gradient pass of a recomputed block reads its hand-over");
    }
    io.x_in = x_at(c, a, s, wg, i);
    const bool out = pass == PASS_FORWARD || (pass == PASS_RECOMPUTE && i + 1 < g1);
    io.x_out = out ? x_at(c, a, s, wg, i + 1) : NULL;
    return io;
}

void gpt_recompute_for_backward(const gpt_chunk *c, const float *params, const gpt_acts *a,
                                gpt_scratch *s, const gpt_wgrad *wg, int i, comm_group *tp) {
    const gpt_recompute *rc = &c->features.recompute;
    if (rc->granularity == GPT_RECOMPUTE_SELECTIVE) {
        /* att again from the kept qkv. Its other output, the attention output, equals the
         * kept atty bit for bit and lands in datty, which B then overwrites. */
        const size_t C = (size_t)c->cfg.hidden, HS = C / (size_t)c->cfg.num_heads;
        const block_acts *b = &a->blocks[i];
        dev_attention_forward(s->datty, s->att, b->qkv, (size_t)a->B, (size_t)a->T, c->NHl, HS);
        return;
    }
    int g0, g1;
    if (!recompute_group(c, i, &g0, &g1) || i != g1 - 1) return;
    for (int k = g0; k < g1; k++) { /* the group's forward, from its kept input */
        const int layer = c->shard.layer_begin + k;
        gpt_span span = gpt_span_params(c, params, layer, k + 1 < g1 ? layer + 1 : GPT_UNIT_NONE);
        const block_params w = block_views(c, &span, k);
        const block_io io = gpt_block_io(c, a, s, wg, k, PASS_RECOMPUTE);
        const block_ctx x = block_ctx_make(c, tp, a->B, a->T, k);
        gpt_block_forward(&x, &w, &io);
        gpt_span_params_done(c, &span);
    }
}
