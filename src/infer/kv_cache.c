/* kv_cache.c — a chunk's forward over new positions, with cached keys and values. See kv_cache.h.
 *
 * Reading guide: kv_cache_create lays out two allocations (the cache, and the work space of
 * one call); kv_cache_forward walks embedding -> blocks -> head like gpt_forward, but over
 * n new rows only; attend() is the one step that differs from training: the new queries read
 * keys and values from the cache instead of from this call's rows. An MoE chunk's blocks run
 * the MoE layer (src/moe/moe_layer.h) in place of the MLP, serially (ep 1: every expert here)
 * on the n new rows; every TP rank runs it whole, as in training.
 */
#include "src/infer/kv_cache.h"

#include <math.h>
#include <string.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/moe/moe_layer.h"
#include "src/tp/layers.h"

struct kv_cache {
    int len;     /* positions cached */
    int max_new; /* rows of the work space */
    int nblocks;
    size_t Tmax, NHl, HS;
    float *cache;          /* one allocation: per block K (NHl,Tmax,HS) then V (NHl,Tmax,HS) */
    float **k, **v;        /* (nblocks) views into cache */
    float *work;           /* one allocation: the views below */
    float *x;              /* (n,C) residual stream */
    float *x_mid;          /* (n,C) residual after attention */
    float *ln;             /* (n,C) */
    float *mean, *rstd;    /* (n) */
    float *qkv;            /* (n,3Cl) */
    float *atty;           /* (n,Cl) */
    float *fch, *fch_gelu; /* (n,4Cl) */
    float *scores;         /* (Tmax) one query's attention row */
    moe_config moe;        /* MoE chunks: the layer's settings, ep 1 */
    moe_acts *moe_acts;    /* MoE chunks: work space of the layer for up to max_new rows (one
                              for all blocks: nothing is kept for a backward); NULL if dense */
};

kv_cache *kv_cache_create(const gpt_chunk *c, int max_new) {
    CHECK(device_is_host(),
          "trident generate runs on the cpu device (the KV-cache attention is a host loop)");
    CHECK(max_new >= 1 && max_new <= c->cfg.seq_len,
          "kv_cache_create: max_new must be 1 .. seq_len");
    kv_cache *kv = callocCheck(1, sizeof *kv);
    const size_t C = (size_t)c->cfg.hidden, Cl = c->Cl, n = (size_t)max_new;
    kv->max_new = max_new;
    kv->nblocks = c->shard.layer_end - c->shard.layer_begin;
    kv->Tmax = (size_t)c->cfg.seq_len;
    kv->NHl = c->NHl;
    kv->HS = C / (size_t)c->cfg.num_heads;
    const size_t per = kv->NHl * kv->Tmax * kv->HS; /* floats of one K (or V) */
    kv->cache = callocCheck(2 * per * (size_t)kv->nblocks + 1, sizeof(float));
    kv->k = callocCheck((size_t)kv->nblocks + 1, sizeof *kv->k);
    kv->v = callocCheck((size_t)kv->nblocks + 1, sizeof *kv->v);
    for (int i = 0; i < kv->nblocks; i++) {
        kv->k[i] = kv->cache + (2 * (size_t)i) * per;
        kv->v[i] = kv->cache + (2 * (size_t)i + 1) * per;
    }
    const size_t sizes[] = {n * C,      n * C,  n * C,      n,          n,
                            n * 3 * Cl, n * Cl, n * 4 * Cl, n * 4 * Cl, kv->Tmax};
    float **views[] = {&kv->x,   &kv->x_mid, &kv->ln,  &kv->mean,     &kv->rstd,
                       &kv->qkv, &kv->atty,  &kv->fch, &kv->fch_gelu, &kv->scores};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += sizes[i];
    kv->work = callocCheck(total, sizeof(float));
    if (c->cfg.num_experts > 0) {
        CHECK(c->shard.ep_size <= 1, "generation runs the experts serially (ep 1)");
        kv->moe = (moe_config){c->cfg.num_experts,
                               c->cfg.moe_topk,
                               c->cfg.moe_aux_loss_coeff,
                               c->cfg.moe_capacity_factor,
                               1,
                               0};
        kv->moe_acts = moe_acts_create(&kv->moe, n, C);
    }
    size_t off = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *views[i] = kv->work + off;
        off += sizes[i];
    }
    return kv;
}

void kv_cache_destroy(kv_cache *kv) {
    if (!kv) return;
    free(kv->cache);
    free(kv->k);
    free(kv->v);
    free(kv->work);
    moe_acts_destroy(kv->moe_acts);
    free(kv);
}

int kv_cache_length(const kv_cache *kv) { return kv->len; }
void kv_cache_reset(kv_cache *kv) { kv->len = 0; }

/* Appends the K, V rows of the n new positions of block i to the cache, then computes
 * atty (n,Cl) for this rank's heads: row r (position p = len + r) attends over cached
 * positions 0 .. p. qkv (n,3Cl) rows are [Q | K | V], head h at columns h*HS of each. */
static void attend(kv_cache *kv, int i, int n) {
    const size_t NHl = kv->NHl, HS = kv->HS, Cl = NHl * HS, ld = 3 * Cl, Tmax = kv->Tmax;
    const float scale = 1.0f / sqrtf((float)HS);
    float *K = kv->k[i], *V = kv->v[i]; /* (NHl,Tmax,HS) */
    for (int r = 0; r < n; r++) {
        const size_t p = (size_t)kv->len + (size_t)r;
        for (size_t h = 0; h < NHl; h++) {
            memcpy(K + (h * Tmax + p) * HS, kv->qkv + (size_t)r * ld + Cl + h * HS,
                   HS * sizeof(float));
            memcpy(V + (h * Tmax + p) * HS, kv->qkv + (size_t)r * ld + 2 * Cl + h * HS,
                   HS * sizeof(float));
        }
    }
    for (int r = 0; r < n; r++) {
        const size_t p = (size_t)kv->len + (size_t)r;
        for (size_t h = 0; h < NHl; h++) {
            const float *q = kv->qkv + (size_t)r * ld + h * HS;
            const float *Kh = K + h * Tmax * HS, *Vh = V + h * Tmax * HS;
            float *s = kv->scores, mx = -INFINITY;
            for (size_t t = 0; t <= p; t++) { /* scores = scale * q . k_t, causal: t <= p */
                float dot = 0.0f;
                for (size_t d = 0; d < HS; d++) dot += q[d] * Kh[t * HS + d];
                s[t] = scale * dot;
                mx = s[t] > mx ? s[t] : mx;
            }
            float sum = 0.0f;
            for (size_t t = 0; t <= p; t++) {
                s[t] = expf(s[t] - mx);
                sum += s[t];
            }
            const float inv = 1.0f / sum;
            float *o = kv->atty + (size_t)r * Cl + h * HS; /* o = softmax(s) @ V */
            memset(o, 0, HS * sizeof(float));
            for (size_t t = 0; t <= p; t++) {
                const float a = s[t] * inv;
                for (size_t d = 0; d < HS; d++) o[d] += a * Vh[t * HS + d];
            }
        }
    }
}

static const float *view(const gpt_chunk *c, const float *params, int kind, int layer) {
    const gpt_param *p = gpt_chunk_find(c, kind, layer);
    CHECK(p != NULL, "kv_cache: the chunk lacks a parameter it needs");
    return params + p->offset;
}

void kv_cache_forward(const gpt_chunk *c, const float *params, kv_cache *kv, const int32_t *tokens,
                      const float *x_in, float *x_out, float *logits, float *logits_all, int n,
                      comm_group *tp) {
    if (n < 1 || n > kv->max_new)
        die("kv_cache_forward: %d new positions, the work space holds 1 .. %d", n, kv->max_new);
    if ((size_t)kv->len + (size_t)n > kv->Tmax)
        die("kv_cache_forward: positions %d .. %d exceed the model's context of %zu positions",
            kv->len, kv->len + n - 1, kv->Tmax);
    const size_t N = (size_t)n, C = (size_t)c->cfg.hidden, Cl = c->Cl, Vl = c->Vl;
    const gpt_shard *sh = &c->shard;

    /* Embedding (first stage): vocab-parallel lookup (g), + the positions len .. len+n-1. */
    if (sh->has_embedding) {
        tp_vocab_embedding_forward(tp, kv->x, tokens, view(c, params, GPT_WTE, -1), N, C,
                                   c->v_start, Vl);
        dev_position_forward(kv->x, view(c, params, GPT_WPE, -1) + (size_t)kv->len * C, 1, N, C);
    } else {
        memcpy(kv->x, x_in, N * C * sizeof(float));
    }

    for (int i = 0; i < kv->nblocks; i++) {
        const int l = sh->layer_begin + i;
        /* attention: LN -> QKV (column-parallel) -> cached attention -> proj (row-parallel) -> + x */
        dev_layernorm_forward(kv->ln, kv->mean, kv->rstd, kv->x, view(c, params, GPT_LN1_W, l),
                              view(c, params, GPT_LN1_B, l), N, C);
        tp_column_linear_forward(tp, kv->qkv, kv->ln, view(c, params, GPT_QKV_W, l),
                                 view(c, params, GPT_QKV_B, l), N, C, 3 * Cl, false);
        attend(kv, i, n);
        tp_row_linear_forward(tp, kv->x_mid, kv->atty, view(c, params, GPT_PROJ_W, l),
                              view(c, params, GPT_PROJ_B, l), N, Cl, C);
        dev_add_inplace(kv->x_mid, kv->x, N * C);
        /* MLP: LN -> fc (column-parallel) -> GELU -> fcproj (row-parallel) -> + x_mid */
        dev_layernorm_forward(kv->ln, kv->mean, kv->rstd, kv->x_mid, view(c, params, GPT_LN2_W, l),
                              view(c, params, GPT_LN2_B, l), N, C);
        if (kv->moe_acts) { /* or the MoE layer: router, top-K experts, combine -> + x_mid */
            const moe_params mp = {view(c, params, GPT_ROUTER_W, l), view(c, params, GPT_FC_W, l),
                                   view(c, params, GPT_FC_B, l), view(c, params, GPT_FCPROJ_W, l),
                                   view(c, params, GPT_FCPROJ_B, l)};
            moe_forward(&kv->moe, NULL, NULL, &mp, kv->moe_acts, kv->x, kv->ln, N, C);
            dev_add_inplace(kv->x, kv->x_mid, N * C);
            continue;
        }
        tp_column_linear_forward(tp, kv->fch, kv->ln, view(c, params, GPT_FC_W, l),
                                 view(c, params, GPT_FC_B, l), N, C, 4 * Cl, false);
        dev_gelu_forward(kv->fch_gelu, kv->fch, N * 4 * Cl);
        tp_row_linear_forward(tp, kv->x, kv->fch_gelu, view(c, params, GPT_FCPROJ_W, l),
                              view(c, params, GPT_FCPROJ_B, l), N, 4 * Cl, C);
        dev_add_inplace(kv->x, kv->x_mid, N * C);
    }
    kv->len += n;

    if (!sh->has_head) {
        if (x_out) memcpy(x_out, kv->x, N * C * sizeof(float));
        return;
    }
    /* Head: LN -> this rank's vocabulary columns (tied wte, column-parallel, no gather). Only
     * the rows asked for: the last one to sample, or all of them for a test. */
    const size_t first = logits_all ? 0 : N - 1, rows = N - first;
    const float *wte = view(c, params, GPT_WTE, -1);
    dev_layernorm_forward(kv->ln, kv->mean, kv->rstd, kv->x + first * C,
                          view(c, params, GPT_LNF_W, -1), view(c, params, GPT_LNF_B, -1), rows, C);
    if (logits_all) {
        tp_column_linear_forward(tp, logits_all, kv->ln, wte, NULL, rows, C, Vl, false);
        if (logits) memcpy(logits, logits_all + (rows - 1) * Vl, Vl * sizeof(float));
    } else if (logits) {
        tp_column_linear_forward(tp, logits, kv->ln, wte, NULL, 1, C, Vl, false);
    }
}
