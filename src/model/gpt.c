/* gpt.c — the activations and the forward of a GPT chunk. See gpt.h.
 *
 * Reading guide: gpt_params.c lays out the parameter table (gpt_chunk_init); gpt_forward walks
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
#include "src/cp/ring_attention.h"
#include "src/model/gpt_hooks.h"
#include "src/model/gpt_internal.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_label.h"
#include "src/tp/layers.h"
#include "src/tp/mappings.h"


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
    CHECK(!(chunk_is_moe(c) || c->cp_size > 1) || c->recompute.granularity == GPT_RECOMPUTE_NONE,
          "MoE and context parallelism run without recomputation (train's configuration check "
          "refuses it, naming the flags)");
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

size_t gpt_matmul_operand_elems(const gpt_chunk *chunks, int n, int B, int T) {
    size_t most = 0;
    for (int k = 0; k < n; k++) {
        const gpt_chunk *c = &chunks[k];
        const size_t N = (size_t)B * (size_t)T, C = (size_t)c->cfg.hidden, Cl = c->Cl;
        size_t e[5] = {0};
        if (c->shard.layer_end > c->shard.layer_begin) {
            e[0] = dev_matmul_operand_elems(N, C, 3 * Cl); /* qkv */
            e[1] = dev_matmul_operand_elems(N, Cl, C);     /* proj */
            if (chunk_is_moe(c)) {                         /* the experts, on this rank's rows */
                const moe_config mc = chunk_moe_config(c);
                e[2] = moe_matmul_operand_elems(&mc, (size_t)B * seq_local(c, (size_t)T), C);
            } else {
                e[2] = dev_matmul_operand_elems(N, C, 4 * Cl); /* fc */
                e[3] = dev_matmul_operand_elems(N, 4 * Cl, C); /* fcproj */
            }
        }
        if (c->shard.has_head) e[4] = dev_matmul_operand_elems(N, C, c->Vl); /* the LM head */
        for (int i = 0; i < 5; i++) most = e[i] > most ? e[i] : most;
    }
    return most;
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
        /* the ranks holding the micro-batch's other positions share the switch loss's counts:
         * the tensor-parallel group with sequence parallelism, the context-parallel one, or
         * both at once (gpt_chunk.moe_stats) */
        comm_group *stats = c->moe_stats ? c->moe_stats : c->sequence_parallel ? tp : c->cp;
        comm_label_set("ep a2a fwd moe", layer);
        *b->aux = moe_forward(&mc, c->ep, stats, &mp, b->moe, io->x_out, b->ln2, Nr, C);
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
    if (c->sequence_parallel) /* this rank's rows [r·Tl, (r+1)·Tl) of each sequence */
        add_positions(c, x0, w.at, B, T, (size_t)c->shard.tp_rank * Tl, Tl);
    else add_positions(c, x0, w.at, B, T, 0, T);
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
