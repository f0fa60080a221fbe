/* gpt.c — parameters, initialisation, forward and backward of a GPT chunk. See gpt.h.
 *
 * Reading guide: gpt_chunk_init lays out the parameter table; gpt_forward walks
 * embedding -> blocks -> head; gpt_backward walks the same steps in reverse. The
 * tensor-parallel layers (src/tp/layers.h: column- and row-parallel linear, vocab-parallel
 * embedding and cross-entropy, each with the f and g operators of src/tp/mappings.h inside)
 * appear exactly where the Megatron paper puts them. What the activations keep under
 * recomputation, and where the rest is recomputed: gpt_recompute.c. With sequence parallelism
 * (gpt.h) the same walk calls the _sp layers (g and ḡ instead of f and g) and keeps the
 * replicated activations on this rank's positions only (Nr rows, gpt_internal.h).
 */
#include "src/model/gpt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/core/rng.h"
#include "src/cp/ring_attention.h"
#include "src/cp/zigzag.h"
#include "src/model/gpt_hooks.h"
#include "src/model/gpt_internal.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_label.h"
#include "src/tp/layers.h"
#include "src/tp/mappings.h"


int gpt_padded_vocab(int real_vocab, int divisible_by, int tp_size) {
    int m = divisible_by * tp_size;
    return ((real_vocab + m - 1) / m) * m;
}

bool gpt_config_check(const gpt_config *cfg, int tp, char *err, size_t errlen) {
    if (cfg->num_layers < 1) {
        snprintf(err, errlen, "--num-layers %d must be at least 1", cfg->num_layers);
        return false;
    }
    if (cfg->hidden < 1 || cfg->num_heads < 1 || cfg->seq_len < 1) {
        snprintf(
            err, errlen,
            "--hidden-size %d, --num-attention-heads %d and --seq-length %d must all be at least 1",
            cfg->hidden, cfg->num_heads, cfg->seq_len);
        return false;
    }
    if (cfg->hidden % cfg->num_heads != 0) {
        snprintf(err, errlen, "--hidden-size %d is not divisible by --num-attention-heads %d",
                 cfg->hidden, cfg->num_heads);
        return false;
    }
    if (cfg->num_heads % tp != 0) {
        snprintf(err, errlen,
                 "--num-attention-heads %d is not divisible by --tensor-model-parallel-size %d "
                 "(each rank holds whole heads)",
                 cfg->num_heads, tp);
        return false;
    }
    if (cfg->num_experts < 0 || cfg->num_experts > 4096) {
        snprintf(err, errlen, "--num-experts %d must be between 0 (a dense MLP) and 4096",
                 cfg->num_experts);
        return false;
    }
    if (cfg->num_experts > 0 && (cfg->moe_topk < 1 || cfg->moe_topk > cfg->num_experts)) {
        snprintf(err, errlen, "--moe-router-topk %d must be between 1 and --num-experts %d",
                 cfg->moe_topk, cfg->num_experts);
        return false;
    }
    if (cfg->vocab_size % tp != 0 || cfg->vocab_size < cfg->real_vocab) {
        snprintf(err, errlen,
                 "padded vocabulary %d is not a multiple of --tensor-model-parallel-size %d "
                 "covering %d tokens",
                 cfg->vocab_size, tp, cfg->real_vocab);
        return false;
    }
    return true;
}

static void add_param(gpt_chunk *c, size_t *off, const char *name, int kind, int layer,
                      size_t full_rows, size_t full_cols, gpt_split split, bool decay) {
    CHECK(c->nparams < GPT_MAX_PARAMS, "too many parameter tensors: raise GPT_MAX_PARAMS");
    gpt_param *p = &c->params[c->nparams++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->kind = kind;
    p->layer = layer;
    p->full_rows = full_rows;
    p->full_cols = full_cols;
    p->split = split;
    size_t tp = (size_t)c->shard.tp_size, ep = c->shard.ep_size > 0 ? (size_t)c->shard.ep_size : 1;
    p->rows = (split == SPLIT_ROWS || split == SPLIT_QKV) ? full_rows / tp
              : split == SPLIT_EXPERTS                    ? full_rows / ep
                                                          : full_rows;
    p->cols = split == SPLIT_COLS ? full_cols / tp : full_cols;
    p->numel = p->rows * p->cols;
    p->offset = *off;
    p->decay = decay;
    *off += p->numel;
}

void gpt_chunk_init(gpt_chunk *c, const gpt_config *cfg, const gpt_shard *shard,
                    size_t param_offset) {
    memset(c, 0, sizeof *c);
    c->cfg = *cfg;
    c->shard = *shard;
    c->param_offset = param_offset;
    const size_t C = (size_t)cfg->hidden, V = (size_t)cfg->vocab_size, T = (size_t)cfg->seq_len;
    const size_t tp = (size_t)shard->tp_size;
    c->Cl = C / tp;
    c->NHl = (size_t)cfg->num_heads / tp;
    c->Vl = V / tp;
    c->v_start = (int64_t)(c->Vl * (size_t)shard->tp_rank);
    size_t off = param_offset;
    char name[40];
    /* MoE: the experts' MLP tensors stacked (E of them in the serial model), then the router */
    const bool moe = cfg->num_experts > 0;
    const size_t E = moe ? (size_t)cfg->num_experts : 1;
    const gpt_split mlp_rows = moe ? SPLIT_EXPERTS : SPLIT_ROWS;
    const gpt_split mlp_cols = moe ? SPLIT_EXPERTS : SPLIT_COLS;
    const gpt_split mlp_bias = moe ? SPLIT_EXPERTS : SPLIT_NONE;
    c->block_tensors = moe ? BLOCK_KINDS + 1 : BLOCK_KINDS;
    CHECK(!moe || (shard->ep_size <= 1 ? 1 : shard->ep_size) <= cfg->num_experts,
          "each expert-parallel rank holds at least one expert");
    if (shard->has_embedding || shard->has_head)
        add_param(c, &off, "wte", GPT_WTE, -1, V, C, SPLIT_ROWS, true);
    if (shard->has_embedding) add_param(c, &off, "wpe", GPT_WPE, -1, T, C, SPLIT_NONE, true);
    static const char *k_block_names[BLOCK_KINDS] = {"ln1_w",  "ln1_b",  "qkv_w",    "qkv_b",
                                                     "proj_w", "proj_b", "ln2_w",    "ln2_b",
                                                     "fc_w",   "fc_b",   "fcproj_w", "fcproj_b"};
    for (int l = shard->layer_begin; l < shard->layer_end; l++) {
        for (int k = 0; k < BLOCK_KINDS; k++) {
            int kind = GPT_LN1_W + k;
            snprintf(name, sizeof name, "blocks.%d.%s", l, k_block_names[k]);
            switch (kind) {
            case GPT_QKV_W: add_param(c, &off, name, kind, l, 3 * C, C, SPLIT_QKV, true); break;
            case GPT_QKV_B: add_param(c, &off, name, kind, l, 3 * C, 1, SPLIT_QKV, false); break;
            case GPT_PROJ_W: add_param(c, &off, name, kind, l, C, C, SPLIT_COLS, true); break;
            case GPT_FC_W: add_param(c, &off, name, kind, l, E * 4 * C, C, mlp_rows, true); break;
            case GPT_FC_B: add_param(c, &off, name, kind, l, E * 4 * C, 1, mlp_rows, false); break;
            case GPT_FCPROJ_W:
                add_param(c, &off, name, kind, l, E * C, 4 * C, mlp_cols, true);
                break;
            case GPT_FCPROJ_B: add_param(c, &off, name, kind, l, E * C, 1, mlp_bias, false); break;
            default: add_param(c, &off, name, kind, l, C, 1, SPLIT_NONE, false); break;
            }
        }
        if (moe) {
            snprintf(name, sizeof name, "blocks.%d.router_w", l);
            add_param(c, &off, name, GPT_ROUTER_W, l, E, C, SPLIT_NONE, true);
        }
    }
    if (shard->has_head) {
        add_param(c, &off, "lnf_w", GPT_LNF_W, -1, C, 1, SPLIT_NONE, false);
        add_param(c, &off, "lnf_b", GPT_LNF_B, -1, C, 1, SPLIT_NONE, false);
    }
    c->num_elements = off - param_offset;
}

void gpt_chunk_set_sequence_parallel(gpt_chunk *c, bool on) {
    const int tp = c->shard.tp_size;
    c->sequence_parallel = on && tp > 1;
    CHECK(!c->sequence_parallel || c->cfg.seq_len % tp == 0,
          "sequence parallelism needs the sequence length divisible by the tensor-parallel size "
          "(train's configuration check refuses it, naming the flags)");
    /* The replicated tensors whose gradient each rank now sums over its own positions only:
     * the LayerNorms' (see SEQUENCE PARALLELISM in gpt.h for why no other). */
    for (int i = 0; i < c->nparams; i++) {
        const int k = c->params[i].kind;
        c->params[i].sequence_parallel = c->sequence_parallel &&
                                         (k == GPT_LN1_W || k == GPT_LN1_B || k == GPT_LN2_W ||
                                          k == GPT_LN2_B || k == GPT_LNF_W || k == GPT_LNF_B);
    }
}

void gpt_chunk_set_context_parallel_layout(gpt_chunk *c, int size, int rank) {
    CHECK(size >= 1 && rank >= 0 && rank < size, "context parallelism: a rank of the cp group");
    c->cp_size = size;
    c->cp_rank = size > 1 ? rank : 0;
    char err[256];
    if (size > 1 && !cp_check((size_t)c->cfg.seq_len, size, err, sizeof err))
        die("context parallelism: %s", err); /* train's configuration check refuses it first */
}

void gpt_chunk_set_context_parallel(gpt_chunk *c, comm_group *cp) {
    c->cp = cp && comm_size(cp) > 1 ? cp : NULL;
    gpt_chunk_set_context_parallel_layout(c, c->cp ? comm_size(cp) : 1, c->cp ? comm_rank(cp) : 0);
}

void gpt_chunk_set_expert_parallel(gpt_chunk *c, comm_group *ep) {
    const int size = c->shard.ep_size > 0 ? c->shard.ep_size : 1;
    CHECK(chunk_is_moe(c) || size == 1, "expert parallelism needs an MoE model (--num-experts)");
    CHECK((ep ? comm_size(ep) : 1) == size && (ep ? comm_rank(ep) : 0) == c->shard.ep_rank,
          "the expert-parallel group is the one the chunk's experts were cut for");
    c->ep = ep;
}

size_t gpt_residual_rows(const gpt_chunk *c, int B, int T) {
    return (size_t)B * seq_local(c, (size_t)T);
}

bool gpt_param_starts_unit(const gpt_param *p) {
    return p->kind == GPT_WTE || p->kind == GPT_WPE || p->kind == GPT_LN1_W || p->kind == GPT_LNF_W;
}

const gpt_param *gpt_chunk_find(const gpt_chunk *c, int kind, int layer) {
    for (int i = 0; i < c->nparams; i++)
        if (c->params[i].kind == kind && c->params[i].layer == layer) return &c->params[i];
    return NULL;
}

size_t gpt_param_serial_index(const gpt_param *p, const gpt_shard *shard, size_t i) {
    size_t r = i / p->cols, col = i % p->cols;
    size_t tr = (size_t)shard->tp_rank;
    switch (p->split) {
    case SPLIT_NONE: return i;
    case SPLIT_EXPERTS: return (size_t)shard->ep_rank * p->numel + i; /* whole experts */
    case SPLIT_ROWS: return (tr * p->rows + r) * p->full_cols + col;
    case SPLIT_COLS: return r * p->full_cols + tr * p->cols + col;
    case SPLIT_QKV: {
        /* local rows are [Q_local; K_local; V_local], each rows/3 long */
        size_t part = p->rows / 3, which = r / part, within = r % part;
        size_t full_part = p->full_rows / 3;
        return (which * full_part + tr * part + within) * p->full_cols + col;
    }
    }
    return i;
}

float gpt_init_value(const gpt_config *cfg, uint64_t seed, int kind, int layer,
                     size_t serial_index) {
    uint64_t stream = (uint64_t)kind * 100003u + (uint64_t)(layer + 1);
    switch (kind) {
    case GPT_LN1_W:
    case GPT_LN2_W:
    case GPT_LNF_W: return 1.0f;
    case GPT_LN1_B:
    case GPT_LN2_B:
    case GPT_LNF_B:
    case GPT_QKV_B:
    case GPT_PROJ_B:
    case GPT_FC_B:
    case GPT_FCPROJ_B: return 0.0f;
    case GPT_PROJ_W:
    case GPT_FCPROJ_W: /* residual projections scaled as in GPT-2 */
        return 0.02f / sqrtf(2.0f * (float)cfg->num_layers) *
               rng_normal(seed, stream, serial_index);
    default: return 0.02f * rng_normal(seed, stream, serial_index);
    }
}

void gpt_chunk_init_params(const gpt_chunk *c, float *params, uint64_t seed) {
    for (int i = 0; i < c->nparams; i++) {
        const gpt_param *p = &c->params[i];
        float *w = params + p->offset;
        for (size_t k = 0; k < p->numel; k++)
            w[k] = gpt_init_value(&c->cfg, seed, p->kind, p->layer,
                                  gpt_param_serial_index(p, &c->shard, k));
    }
}

/* ---------------------------------------------------------------- activations */

/* A cursor over one allocation: take() hands out consecutive 64-byte aligned views. With
 * base == NULL it only counts (the first pass sizes the allocation, the second lays it out). */
typedef struct {
    float *base;
    size_t used; /* floats */
} cursor;

static float *take(cursor *cur, size_t n) {
    float *p = cur->base ? cur->base + cur->used : NULL;
    cur->used += (n + 15) & ~(size_t)15;
    return p;
}

/* Which parts of one block's activations a layout takes (block_layout). */
enum {
    PART_W = 1,   /* what W reads: ln1 and its stats, atty, x_mid, ln2 and its stats, fch_gelu */
    PART_B = 2,   /* what only B reads besides: qkv, fch */
    PART_ATT = 4, /* att (B,NHl,T,T): only B reads it */
    PART_ALL = 7,
};

/* Nr: the rows sequence parallelism shards (gpt_internal.h); N: those of the TP region. */
static void block_layout(block_acts *b, cursor *cur, const gpt_chunk *c, size_t B, size_t T,
                         int parts) {
    const size_t N = B * T, C = (size_t)c->cfg.hidden, Cl = c->Cl, NHl = c->NHl;
    const size_t Nr = B * seq_local(c, T);
    const bool w = parts & PART_W, bb = parts & PART_B;
    memset(b, 0, sizeof *b);
    if (w) b->ln1 = take(cur, Nr * C), b->ln1_mean = take(cur, Nr), b->ln1_rstd = take(cur, Nr);
    if (bb) b->qkv = take(cur, N * 3 * Cl);
    /* context parallelism keeps each query row's log-sum-exp (B,NHl,T) instead */
    if (parts & PART_ATT) b->att = take(cur, c->cp_size > 1 ? B * NHl * T : B * NHl * T * T);
    if (w) {
        b->atty = take(cur, N * Cl);
        b->x_mid = take(cur, Nr * C);
        b->ln2 = take(cur, Nr * C);
        b->ln2_mean = take(cur, Nr);
        b->ln2_rstd = take(cur, Nr);
    }
    if (chunk_is_moe(c)) return; /* the MoE layer keeps its own (gpt_acts.moe) */
    if (bb) b->fch = take(cur, N * 4 * Cl);
    if (w) b->fch_gelu = take(cur, N * 4 * Cl);
}

/* Whether a micro-batch keeps x[k], the residual stream entering block k (k = nblocks: the
 * chunk's output). Full recomputation keeps the inputs of its groups and of the blocks it
 * does not recompute, and the output only where the head's backward reads it. */
static bool x_kept(const gpt_chunk *c, int k) {
    const int L = c->shard.layer_end - c->shard.layer_begin;
    int g0, g1;
    if (k == L) return c->shard.has_head || c->recompute.granularity != GPT_RECOMPUTE_FULL;
    return !recompute_group(c, k, &g0, &g1) || k == g0;
}

static size_t acts_layout(gpt_acts *a, const gpt_chunk *c, float *base) {
    const size_t B = (size_t)a->B, T = (size_t)a->T, N = B * T, C = (size_t)c->cfg.hidden;
    const size_t Nr = B * seq_local(c, T);
    const bool selective = c->recompute.granularity == GPT_RECOMPUTE_SELECTIVE;
    cursor cc = {base, 0}, *cur = &cc;
    for (int i = 0; i <= a->nblocks; i++) a->x[i] = x_kept(c, i) ? take(cur, Nr * C) : NULL;
    for (int i = 0, g0, g1; i < a->nblocks; i++) {
        if (recompute_group(c, i, &g0, &g1)) memset(&a->blocks[i], 0, sizeof a->blocks[i]);
        else block_layout(&a->blocks[i], cur, c, B, T, selective ? PART_W | PART_B : PART_ALL);
    }
    if (c->shard.has_head) {
        a->lnf = take(cur, Nr * C);
        a->lnf_mean = take(cur, Nr);
        a->lnf_rstd = take(cur, Nr);
        a->logits = take(cur, N * c->Vl);
        a->ce_stats = take(cur, 3 * N);
        a->losses = take(cur, N);
    }
    a->tokens = (int32_t *)take(cur, N);
    a->targets = (int32_t *)take(cur, N);
    return cc.used;
}

/* alloc false: only the size (a->bytes), no device memory (the *_bytes_of functions). */
static gpt_acts *acts_create(const gpt_chunk *c, int B, int T, bool alloc) {
    CHECK(T <= c->cfg.seq_len, "sequence longer than the position embedding");
    CHECK(!c->sequence_parallel || T % c->shard.tp_size == 0,
          "sequence parallelism: the micro-batch's sequence length must be divisible by tp");
    CHECK(!(chunk_is_moe(c) || c->cp_size > 1) ||
              (c->recompute.granularity == GPT_RECOMPUTE_NONE && !c->sequence_parallel),
          "MoE and context parallelism run without recomputation and sequence parallelism "
          "(train's configuration check refuses them, naming the flags)");
    gpt_acts *a = callocCheck(1, sizeof *a);
    a->B = B;
    a->T = T;
    a->nblocks = c->shard.layer_end - c->shard.layer_begin;
    a->x = callocCheck((size_t)a->nblocks + 1, sizeof *a->x);
    a->blocks = callocCheck((size_t)a->nblocks + 1, sizeof *a->blocks);
    /* First pass counts, second lays out the views for real. */
    size_t n = acts_layout(a, c, NULL);
    a->bytes = n * sizeof(float);
    const size_t Nr = (size_t)B * seq_local(c, (size_t)T), C = (size_t)c->cfg.hidden;
    const moe_config mc = chunk_moe_config(c);
    if (chunk_is_moe(c)) a->bytes += (size_t)a->nblocks * moe_acts_bytes_of(&mc, Nr, C);
    if (!alloc) return a;
    a->mem = device_alloc(n * sizeof(float), "activations");
    acts_layout(a, c, a->mem);
    if (chunk_is_moe(c)) {
        a->moe = callocCheck((size_t)a->nblocks + 1, sizeof *a->moe);
        a->aux = callocCheck((size_t)a->nblocks + 1, sizeof *a->aux);
        for (int i = 0; i < a->nblocks; i++) {
            a->moe[i] = moe_acts_create(&mc, Nr, C);
            a->blocks[i].moe = a->moe[i];
            a->blocks[i].aux = &a->aux[i];
        }
    }
    return a;
}

gpt_acts *gpt_acts_create(const gpt_chunk *c, int B, int T) { return acts_create(c, B, T, true); }

void gpt_acts_destroy(gpt_acts *a) {
    if (!a) return;
    device_free(a->mem);
    for (int i = 0; a->moe && i < a->nblocks; i++) moe_acts_destroy(a->moe[i]);
    free(a->moe);
    free(a->aux);
    free(a->x);
    free(a->blocks);
    free(a);
}

size_t gpt_acts_bytes(const gpt_acts *a) { return a->bytes; }
const float *gpt_acts_losses(const gpt_acts *a) { return a->losses; }
const float *gpt_acts_logits(const gpt_acts *a) { return a->logits; }

float gpt_acts_aux_loss(const gpt_acts *a) {
    float sum = 0.0f;
    for (int i = 0; a->aux && i < a->nblocks; i++) sum += a->aux[i];
    return sum;
}

const int64_t *gpt_acts_expert_counts(const gpt_acts *a, int i) {
    CHECK(a->moe && i >= 0 && i < a->nblocks, "expert counts: an MoE block of the chunk");
    return moe_acts_expert_counts(a->moe[i]);
}

int64_t gpt_acts_dropped(const gpt_acts *a, int i) {
    CHECK(a->moe && i >= 0 && i < a->nblocks, "dropped tokens: an MoE block of the chunk");
    return moe_acts_dropped(a->moe[i]);
}

/* A hand-over from B to W; `inputs`: with the W inputs of recomputed blocks (the split
 * backward's), not for the fused backward's own, which runs W right after B. alloc false:
 * only its size. */
static gpt_wgrad *wgrad_create(const gpt_chunk *c, int B, int T, bool inputs, bool alloc) {
    const size_t N = (size_t)B * (size_t)T, C = (size_t)c->cfg.hidden, Cl = c->Cl;
    const size_t Nr = (size_t)B * seq_local(c, (size_t)T), full = c->sequence_parallel ? N * C : 0;
    gpt_wgrad *w = callocCheck(1, sizeof *w);
    w->nblocks = c->shard.layer_end - c->shard.layer_begin;
    w->blocks = callocCheck((size_t)w->nblocks + 1, sizeof *w->blocks);
    for (int pass = 0; pass < 2; pass++) {
        cursor cc = {pass ? w->mem : NULL, 0}, *cur = &cc;
        /* Sequence parallelism: the gathered inputs of qkv and fc. The fused backward runs W
         * right after B of the same block, so its blocks share one pair; the split one keeps
         * a pair per block until W. */
        float *shared1 = full && !inputs ? take(cur, full) : NULL;
        float *shared2 = full && !inputs ? take(cur, full) : NULL;
        for (int i = 0, g0, g1; i < w->nblocks; i++) {
            block_wgrad *b = &w->blocks[i];
            const bool moe = chunk_is_moe(c);
            b->dfcproj = moe ? NULL : take(cur, N * C);
            b->dfch = moe ? NULL : take(cur, N * 4 * Cl);
            b->dmoe = moe ? take(cur, moe_block_floats(c)) : NULL;
            b->dln2 = take(cur, Nr * C);
            b->dproj = take(cur, N * C);
            b->dqkv = take(cur, N * 3 * Cl);
            b->dln1 = take(cur, Nr * C);
            b->ln1_full = full && inputs ? take(cur, full) : shared1;
            b->ln2_full = full && inputs ? take(cur, full) : shared2;
            if (!inputs || !recompute_group(c, i, &g0, &g1)) continue;
            block_layout(&b->in, cur, c, (size_t)B, (size_t)T, PART_W);
            b->x_in = i > g0 ? take(cur, Nr * C) : NULL;
        }
        if (c->shard.has_head) {
            w->dlogits = take(cur, N * c->Vl);
            w->dlnf = take(cur, Nr * C);
            w->lnf_full = full ? take(cur, full) : NULL;
        }
        if (c->shard.has_embedding) w->demb = take(cur, N * C);
        if (!pass) {
            w->bytes = cc.used * sizeof(float);
            if (!alloc) break;
            w->mem = device_alloc(w->bytes, "weight-gradient inputs");
        }
    }
    return w;
}

gpt_wgrad *gpt_wgrad_create(const gpt_chunk *c, int B, int T) {
    return wgrad_create(c, B, T, true, true);
}

void gpt_wgrad_destroy(gpt_wgrad *w) {
    if (!w) return;
    device_free(w->mem);
    free(w->blocks);
    free(w);
}

size_t gpt_wgrad_bytes(const gpt_wgrad *w) { return w->bytes; }

/* The blocks of the largest recomputed group (full recomputation), 0 without. */
static int recompute_group_size(const gpt_chunk *c) {
    const gpt_recompute *rc = &c->recompute;
    if (rc->granularity != GPT_RECOMPUTE_FULL) return 0;
    return rc->method == GPT_RECOMPUTE_BLOCK ? 1 : rc->num_layers;
}

static gpt_scratch *scratch_create(const gpt_chunk *c, int B, int T, bool alloc) {
    const size_t N = (size_t)B * (size_t)T, C = (size_t)c->cfg.hidden, Cl = c->Cl;
    const size_t Nr = (size_t)B * seq_local(c, (size_t)T);
    gpt_scratch *s = callocCheck(1, sizeof *s);
    s->group = recompute_group_size(c);
    s->layer = callocCheck((size_t)s->group + 1, sizeof *s->layer);
    s->x = callocCheck((size_t)s->group + 1, sizeof *s->x);
    for (int pass = 0; pass < 2; pass++) {
        cursor cc = {pass ? s->mem : NULL, 0}, *cur = &cc;
        s->dres = take(cur, Nr * C);
        s->dfch_gelu = take(cur, N * 4 * Cl);
        s->datty = take(cur, N * Cl);
        s->datt = take(cur, dev_attention_scratch_floats((size_t)T, c->NHl));
        s->dloss = take(cur, N);
        if (c->recompute.granularity == GPT_RECOMPUTE_SELECTIVE)
            s->att = take(cur, (size_t)B * c->NHl * (size_t)T * (size_t)T);
        for (int j = 0; j < s->group; j++) {
            block_layout(&s->layer[j], cur, c, (size_t)B, (size_t)T, PART_ALL);
            if (j > 0) s->x[j] = take(cur, Nr * C);
        }
        if (!x_kept(c, c->shard.layer_end - c->shard.layer_begin)) s->x_out = take(cur, Nr * C);
        if (!pass) {
            s->bytes = cc.used * sizeof(float);
            if (!alloc) break;
            s->mem = device_alloc(s->bytes, "backward work space");
        }
    }
    s->wg = wgrad_create(c, B, T, false, alloc);
    s->bytes += s->wg->bytes;
    return s;
}

gpt_scratch *gpt_scratch_create(const gpt_chunk *c, int B, int T) {
    return scratch_create(c, B, T, true);
}

/* The sizes without the memory: the same layout code, counting only. */
size_t gpt_acts_bytes_of(const gpt_chunk *c, int B, int T) {
    gpt_acts *a = acts_create(c, B, T, false);
    size_t n = a->bytes;
    gpt_acts_destroy(a);
    return n;
}

size_t gpt_wgrad_bytes_of(const gpt_chunk *c, int B, int T) {
    gpt_wgrad *w = wgrad_create(c, B, T, true, false);
    size_t n = w->bytes;
    gpt_wgrad_destroy(w);
    return n;
}

size_t gpt_scratch_bytes_of(const gpt_chunk *c, int B, int T) {
    gpt_scratch *s = scratch_create(c, B, T, false);
    size_t n = s->bytes;
    gpt_scratch_destroy(s);
    return n;
}

void gpt_scratch_destroy(gpt_scratch *s) {
    if (!s) return;
    gpt_wgrad_destroy(s->wg);
    device_free(s->mem);
    free(s->layer);
    free(s->x);
    free(s);
}

size_t gpt_scratch_bytes(const gpt_scratch *s) { return s->bytes; }

/* ---------------------------------------------------------------- forward */

/* The two linears of tensor parallelism as a chunk uses them: with f (identity forward) and g
 * (all-reduce), or with sequence parallelism g (all-gather) and ḡ (reduce-scatter), each
 * labelled for the trace. in/out of the replicated side: (Nr,C), this rank's positions. */
static void column_forward(const gpt_chunk *c, comm_group *tp, float *out, const float *in,
                           const float *w, const float *b, size_t B, size_t T, size_t OCl,
                           const char *sp_label, int layer) {
    const size_t C = (size_t)c->cfg.hidden;
    if (!c->sequence_parallel) { /* f forward: the identity, no message to label */
        tp_column_linear_forward(tp, out, in, w, b, B * T, C, OCl, false);
        return;
    }
    comm_label_set(sp_label, layer);
    tp_column_linear_sp_forward(tp, out, in, w, b, B, seq_local(c, T), C, OCl);
    comm_label_clear();
}

static void row_forward(const gpt_chunk *c, comm_group *tp, float *out, const float *in,
                        const float *w, const float *b, size_t B, size_t T, size_t Cl,
                        const char *label, const char *sp_label, int layer) {
    const size_t C = (size_t)c->cfg.hidden;
    comm_label_set(c->sequence_parallel ? sp_label : label, layer);
    if (c->sequence_parallel)
        tp_row_linear_sp_forward(tp, out, in, w, b, B, seq_local(c, T), Cl, C);
    else tp_row_linear_forward(tp, out, in, w, b, B * T, Cl, C);
    comm_label_clear();
}

void gpt_block_forward(const gpt_chunk *c, const block_params *wp, int B_, int T_,
                       const block_io *io, int i, comm_group *tp) {
    const size_t B = (size_t)B_, T = (size_t)T_, N = B * T, C = (size_t)c->cfg.hidden;
    const size_t Cl = c->Cl, NHl = c->NHl, HS = C / (size_t)c->cfg.num_heads;
    const size_t Nr = B * seq_local(c, T); /* rows of the residual stream here */
    const block_params w = *wp;
    const block_acts *b = &io->b;
    const int layer = c->shard.layer_begin + i; /* global index: labels the TP collectives */
    /* attention: x -> LN -> QKV (column-parallel: f, or g) -> this rank's heads
     *             -> proj (row-parallel: g, or ḡ; then the bias once) -> + x */
    dev_layernorm_forward(b->ln1, b->ln1_mean, b->ln1_rstd, io->x_in, w.ln1_w, w.ln1_b, Nr, C);
    column_forward(c, tp, b->qkv, b->ln1, w.qkv_w, w.qkv_b, B, T, 3 * Cl, "sp g fwd attn", layer);
    if (c->cp) { /* context parallelism: K/V go around the cp group (b->att: log-sum-exps) */
        comm_label_set("cp ring fwd attn", layer);
        ring_attention_forward(c->cp, b->atty, b->att, b->qkv, B, T, NHl, HS);
        comm_label_clear();
    } else {
        dev_attention_forward(b->atty, b->att, b->qkv, B, T, NHl, HS);
    }
    row_forward(c, tp, b->x_mid, b->atty, w.proj_w, w.proj_b, B, T, Cl, "g fwd attn",
                "sp gbar fwd attn", layer);
    dev_add_inplace(b->x_mid, io->x_in, Nr * C); /* the residual, added in place */
    /* MLP: x -> LN -> fc (column-parallel) -> GELU -> fcproj (row-parallel) -> + x */
    dev_layernorm_forward(b->ln2, b->ln2_mean, b->ln2_rstd, b->x_mid, w.ln2_w, w.ln2_b, Nr, C);
    if (chunk_is_moe(c)) { /* or: x -> LN -> router, experts (all-to-all over ep) -> + x */
        CHECK(io->x_out, "MoE blocks are not recomputed");
        const moe_config mc = chunk_moe_config(c);
        const moe_params mp = {w.router_w, w.fc_w, w.fc_b, w.fcproj_w, w.fcproj_b};
        comm_label_set("ep a2a fwd moe", layer);
        *b->aux = moe_forward(&mc, c->ep, c->cp, &mp, b->moe, io->x_out, b->ln2, Nr, C);
        comm_label_clear();
        dev_add_inplace(io->x_out, b->x_mid, Nr * C);
        return;
    }
    column_forward(c, tp, b->fch, b->ln2, w.fc_w, w.fc_b, B, T, 4 * Cl, "sp g fwd mlp", layer);
    dev_gelu_forward(b->fch_gelu, b->fch, N * 4 * Cl);
    if (!io->x_out) return; /* a recompute: the group's output is kept */
    row_forward(c, tp, io->x_out, b->fch_gelu, w.fcproj_w, w.fcproj_b, B, T, 4 * Cl, "g fwd mlp",
                "sp gbar fwd mlp", layer);
    dev_add_inplace(io->x_out, b->x_mid, Nr * C);
}

/* Embedding (first stage): the vocab-parallel lookup summed over TP (g: all-reduce), or with
 * sequence parallelism reduce-scattered to this rank's positions (ḡ); then the positions. */
static void embedding_forward(const gpt_chunk *c, const float *params, gpt_acts *a, float *x0,
                              comm_group *tp) {
    const size_t B = (size_t)a->B, T = (size_t)a->T, Tl = seq_local(c, T);
    const size_t C = (size_t)c->cfg.hidden;
    gpt_span w = gpt_span_params(c, params, GPT_UNIT_WTE, GPT_UNIT_WPE);
    const float *wte = w.at; /* the unit is wte alone */
    if (c->sequence_parallel) {
        comm_label_set("sp gbar fwd embed", -1);
        tp_vocab_embedding_sp_forward(tp, x0, a->tokens, wte, B, Tl, C, c->v_start, c->Vl);
    } else {
        comm_label_set("g fwd embed", -1);
        tp_vocab_embedding_forward(tp, x0, a->tokens, wte, B * T, C, c->v_start, c->Vl);
    }
    comm_label_clear();
    gpt_span_params_done(c, &w);
    const int first_block = a->nblocks > 0 ? c->shard.layer_begin : GPT_UNIT_NONE;
    w = gpt_span_params(c, params, GPT_UNIT_WPE, first_block);
    if (c->sequence_parallel) /* this rank's positions [r·Tl, (r+1)·Tl) of each sequence */
        dev_position_forward(x0, w.at + (size_t)c->shard.tp_rank * Tl * C, B, Tl, C);
    else if (c->cp) /* context parallelism: each sequence's two zig-zag chunks */
        for (size_t b = 0; b < B; b++)
            for (size_t h = 0; h < 2; h++) {
                const size_t t0 = h * (T / 2), g0 = cp_global_position(c->cp_rank, c->cp_size,
                                                                       T * (size_t)c->cp_size, t0);
                dev_position_forward(x0 + (b * T + t0) * C, w.at + g0 * C, 1, T / 2, C);
            }
    else dev_position_forward(x0, w.at, B, T, C);
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
    block_io io = gpt_block_io(c, a, s, NULL, i, PASS_FORWARD);
    gpt_block_forward(c, &v, a->B, a->T, &io, i, tp);
    gpt_span_params_done(c, &w);
}

float gpt_forward(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                  const int32_t *tokens, const int32_t *targets, const float *x_in, float *x_out,
                  comm_group *tp) {
    const size_t B = (size_t)a->B, T = (size_t)a->T, N = B * T, C = (size_t)c->cfg.hidden;
    const size_t Nr = B * seq_local(c, T), Vl = c->Vl;
    const gpt_shard *sh = &c->shard;
    CHECK(s || c->recompute.granularity == GPT_RECOMPUTE_NONE,
          "a chunk with recomputation computes what it does not keep in its gpt_scratch: pass it");
    CHECK(!c->sequence_parallel || (tp && comm_size(tp) == sh->tp_size),
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
     * linear with the tied wte as weight (with sequence parallelism, g first gathers the
     * whole sequence, as Megatron does) -> vocab-parallel cross-entropy over all B·T
     * positions; the full logits are never gathered. */
    gpt_hooks_params_needed(c, GPT_HOOK_HEAD);
    device_upload(a->targets, targets, N * sizeof(int32_t));
    gpt_span w = gpt_span_params(c, params, GPT_UNIT_LNF, GPT_UNIT_WTE);
    dev_layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, x_last,
                          gpt_span_of(&w, gpt_chunk_find(c, GPT_LNF_W, -1)),
                          gpt_span_of(&w, gpt_chunk_find(c, GPT_LNF_B, -1)), Nr, C);
    gpt_span_params_done(c, &w);
    w = gpt_span_params(c, params, GPT_UNIT_WTE, GPT_UNIT_NONE);
    column_forward(c, tp, a->logits, a->lnf, w.at, NULL, B, T, Vl, "sp g fwd head", -1);
    gpt_span_params_done(c, &w);
    tp_vocab_cross_entropy_forward(tp, a->losses, a->ce_stats, a->logits, a->targets, N, Vl,
                                   c->v_start, c->cfg.real_vocab);
    return (float)(dev_sum(a->losses, N) / (double)N);
}

double gpt_flops_per_token(const gpt_config *cfg, int T) {
    double C = cfg->hidden, L = cfg->num_layers, V = cfg->vocab_size;
    double matmul_params = L * 12.0 * C * C + V * C;
    return 6.0 * matmul_params + 12.0 * L * (double)T * C;
}
