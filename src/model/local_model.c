/* local_model.c — see local_model.h. */
#include "src/model/local_model.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "src/core/check.h"
#include "src/core/checked.h"
#include "src/device/device.h"

bool local_model_partition(int L, int S, const int *stage_layers, int *begin, char *err,
                           size_t errlen) {
    if (!stage_layers) {
        if (L % S != 0) {
            snprintf(
                err, errlen,
                "--num-layers %d is not divisible by the %d virtual pipeline stages "
                "(pipeline size × chunks per rank): every stage needs the same number of layers",
                L, S);
            return false;
        }
        for (int s = 0; s <= S; s++) begin[s] = s * (L / S);
        return true;
    }
    int sum = 0;
    for (int s = 0; s < S; s++) {
        if (stage_layers[s] < 1) {
            snprintf(err, errlen,
                     "stage %d is given %d layers: every pipeline stage needs at least 1", s,
                     stage_layers[s]);
            return false;
        }
        if (stage_layers[s] > GPT_MAX_BLOCKS_PER_CHUNK) {
            snprintf(err, errlen,
                     "--stage-layers gives stage %d %d layers; a model chunk holds at most %d "
                     "(cut the model with more pipeline stages)",
                     s, stage_layers[s], GPT_MAX_BLOCKS_PER_CHUNK);
            return false;
        }
        begin[s] = sum;
        if (!checked_add_int(sum, stage_layers[s], &sum)) {
            snprintf(err, errlen,
                     "the stage layer counts add up to more than %d but --num-layers is %d",
                     INT_MAX, L);
            return false;
        }
    }
    begin[S] = sum;
    if (sum != L) {
        snprintf(err, errlen, "the stage layer counts add up to %d but --num-layers is %d", sum, L);
        return false;
    }
    return true;
}

local_model *local_model_create(const gpt_config *cfg, int tp_size, int tp_rank, int pp_size,
                                int pp_rank, int vpp, const int *stage_layers, uint64_t seed) {
    CHECK(vpp == 1, "several chunks per rank: say which stages with local_model_create_staged");
    return local_model_create_staged(cfg, tp_size, tp_rank, pp_size, pp_rank, 1, &pp_rank,
                                     stage_layers, seed);
}

/* local_model_create_staged, with a gradient buffer or without (ZeRO-2/3). */
static local_model *create(const gpt_config *cfg, int tp_size, int tp_rank, int ep_size,
                           int ep_rank, int pp_size, int pp_rank, int vpp, const int *chunk_stage,
                           const int *stage_layers, uint64_t seed, bool grads) {
    local_model *m = callocCheck(1, sizeof *m);
    m->cfg = *cfg;
    m->tp_size = tp_size;
    m->tp_rank = tp_rank;
    m->pp_size = pp_size;
    m->pp_rank = pp_rank;
    m->vpp = vpp;
    m->nchunks = vpp;
    const int S = pp_size * vpp;
    int *begin = mallocCheck(sizeof(int) * (size_t)(S + 1));
    char err[256];
    if (!local_model_partition(cfg->num_layers, S, stage_layers, begin, err, sizeof err))
        die("trident train: %s", err);
    m->chunks = callocCheck((size_t)vpp, sizeof *m->chunks);
    m->chunk_stage = mallocCheck(sizeof(int) * (size_t)vpp);
    size_t off = 0;
    int total = 0;
    for (int c = 0; c < vpp; c++) {
        const int s = chunk_stage[c];
        CHECK(s >= 0 && s < S, "a chunk's virtual stage is in [0, pp_size · chunks)");
        m->chunk_stage[c] = s;
        gpt_shard sh = {
            .tp_size = tp_size,
            .tp_rank = tp_rank,
            .layer_begin = begin[s],
            .layer_end = begin[s + 1],
            .has_embedding = s == 0,
            .has_head = s == S - 1,
            .ep_size = ep_size,
            .ep_rank = ep_rank,
        };
        gpt_chunk_init(&m->chunks[c], cfg, &sh, off);
        off += m->chunks[c].num_elements;
        total += m->chunks[c].nparams;
    }
    free(begin);
    m->numel = off;
    m->numel_padded = off;
    m->params = device_alloc(off * sizeof(float), "parameters");
    m->grads = grads ? device_alloc(off * sizeof(float), "gradients") : NULL;
    float *init = mallocCheck(off * sizeof(float) + 1); /* initialised on the host, then uploaded */
    m->nparams = total;
    m->plist = mallocCheck(sizeof *m->plist * (size_t)total);
    m->pshard = mallocCheck(sizeof *m->pshard * (size_t)total);
    m->in_norm = mallocCheck(sizeof *m->in_norm * (size_t)total);
    int k = 0;
    for (int c = 0; c < vpp; c++) {
        const gpt_chunk *ch = &m->chunks[c];
        gpt_chunk_init_params(ch, init, seed);
        for (int i = 0; i < ch->nparams; i++, k++) {
            const gpt_param *p = &ch->params[i];
            m->plist[k] = p;
            m->pshard[k] = &ch->shard;
            /* replicated over TP (LayerNorms, row-parallel biases, wpe, the experts and router
             * of MoE blocks): counted once, on TP rank 0 */
            bool counted = (p->split != SPLIT_NONE && p->split != SPLIT_EXPERTS) || tp_rank == 0;
            if (p->kind == GPT_WTE) {
                if (ch->shard.has_embedding) m->wte_embedding = p;
                if (ch->shard.has_head) m->wte_head = p;
                /* the head's copy duplicates the first stage's wte */
                if (!ch->shard.has_embedding) counted = false;
            }
            m->in_norm[k] = counted;
        }
    }
    device_upload(m->params, init, off * sizeof(float));
    free(init);
    return m;
}

local_model *local_model_create_staged(const gpt_config *cfg, int tp_size, int tp_rank, int pp_size,
                                       int pp_rank, int vpp, const int *chunk_stage,
                                       const int *stage_layers, uint64_t seed) {
    return create(cfg, tp_size, tp_rank, 1, 0, pp_size, pp_rank, vpp, chunk_stage, stage_layers,
                  seed, true);
}

local_model *local_model_create_experts(const gpt_config *cfg, int tp_size, int tp_rank,
                                        int ep_size, int ep_rank, int pp_size, int pp_rank, int vpp,
                                        const int *chunk_stage, const int *stage_layers,
                                        uint64_t seed) {
    return create(cfg, tp_size, tp_rank, ep_size, ep_rank, pp_size, pp_rank, vpp, chunk_stage,
                  stage_layers, seed, true);
}

local_model *local_model_create_sharded(const gpt_config *cfg, int tp_size, int tp_rank,
                                        int pp_size, int pp_rank, int vpp, const int *chunk_stage,
                                        const int *stage_layers, uint64_t seed) {
    return create(cfg, tp_size, tp_rank, 1, 0, pp_size, pp_rank, vpp, chunk_stage, stage_layers,
                  seed, false);
}

void local_model_destroy(local_model *m) {
    if (!m) return;
    free(m->chunks);
    free(m->chunk_stage);
    device_free(m->params);
    device_free(m->grads);
    free(m->plist);
    free(m->pshard);
    free(m->in_norm);
    free(m);
}

void local_model_zero_grads(local_model *m) {
    if (m->grads) device_zero(m->grads, m->numel_padded * sizeof(float));
}

void local_model_release(local_model *m, bool params) {
    device_free(m->grads);
    m->grads = NULL;
    if (!params) return;
    device_free(m->params);
    m->params = NULL;
}

/* One buffer of n floats holding the first `keep` floats of old (the rest zero). */
static float *grown(float *old, size_t keep, size_t n, const char *what) {
    float *b = device_alloc(n * sizeof(float), what); /* zeroed */
    device_copy(b, old, keep * sizeof(float));
    device_free(old);
    return b;
}

/* The gradients are given back first and come back zero (before training there are none to
 * keep), so the copy of the parameters never holds more than the two padded buffers will:
 * no moment of the set-up raises the allocator's high-water mark above the run's. */
void local_model_pad(local_model *m, size_t numel_padded) {
    CHECK(numel_padded >= m->numel, "a padded length is at least the number of parameters");
    CHECK(m->params && m->grads, "pad the buffers before releasing them");
    if (numel_padded == m->numel_padded) return;
    device_free(m->grads);
    m->params = grown(m->params, m->numel, numel_padded, "parameters");
    m->grads = device_alloc(numel_padded * sizeof(float), "gradients"); /* zeroed */
    m->numel_padded = numel_padded;
}

void local_model_set_recompute(local_model *m, const gpt_recompute *rc) {
    for (int c = 0; c < m->nchunks; c++) gpt_chunk_set_recompute(&m->chunks[c], rc);
}

void local_model_set_sequence_parallel(local_model *m, bool on) {
    for (int c = 0; c < m->nchunks; c++) gpt_chunk_set_sequence_parallel(&m->chunks[c], on);
}

void local_model_set_groups(local_model *m, comm_group *cp, comm_group *ep, comm_group *moe_stats) {
    for (int c = 0; c < m->nchunks; c++) {
        m->chunks[c].features.moe_stats = moe_stats;
        gpt_chunk_set_context_parallel(&m->chunks[c], cp);
        if (m->cfg.num_experts > 0) gpt_chunk_set_expert_parallel(&m->chunks[c], ep);
    }
}

void local_model_set_hooks(local_model *m, const gpt_hooks *h) {
    m->hooks = h ? *h : (gpt_hooks){0};
    m->hooks.grads_armed = false;
    for (int c = 0; c < m->nchunks; c++) m->chunks[c].hooks = h ? &m->hooks : NULL;
}

void local_model_sum_tied_grads(local_model *m) {
    const gpt_param *e = m->wte_embedding, *h = m->wte_head;
    if (!e || !h || e == h || !m->grads) return;
    CHECK(e->numel == h->numel, "the two copies of wte have the same shape");
    dev_add_inplace(m->grads + e->offset, m->grads + h->offset, e->numel);
    device_copy(m->grads + h->offset, m->grads + e->offset, e->numel * sizeof(float));
}

bool local_model_is_second_wte(const local_model *m, const gpt_param *p) {
    return m->wte_embedding && m->wte_head != m->wte_embedding && p == m->wte_head;
}
