/* gpt_layout.c — where a chunk's activations live: one micro-batch's gpt_acts, the B -> W
 * hand-over (gpt_wgrad) and the chunk's scratch, each one allocation cut into views
 * (gpt_internal.h names them); what each recomputation setting keeps and what it leaves to the
 * scratch; and their sizes without allocating, from the same code (what the memory prediction
 * adds up). See gpt.h, ACTIVATION RECOMPUTATION.
 *
 * Not here: what the passes compute into them (gpt.c, gpt_block.c, gpt_backward.c), where a
 * pass finds a block's views (gpt_recompute.c, gpt_block_io).
 */
#include <string.h>

#include "src/core/check.h"
#include "src/cp/attention.h"
#include "src/device/device.h"
#include "src/model/gpt.h"
#include "src/model/gpt_internal.h"

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
    const bool w = parts & PART_W, bb = parts & PART_B; /* the caller clears *b once */
    if (w) b->ln1 = take(cur, Nr * C), b->ln1_mean = take(cur, Nr), b->ln1_rstd = take(cur, Nr);
    if (bb) b->qkv = take(cur, N * 3 * Cl);
    /* attention's kept part: the probabilities, or a ring's log-sum-exps (src/cp/attention.h) */
    if (parts & PART_ATT)
        b->att = take(cur, cp_attention_kept_floats(B, T, NHl, c->features.cp_size));
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
 * does not recompute. The output is kept only where the head's backward reads it: a chunk
 * without the head sends it on and no backward pass of its own reads it, so it is written
 * into the scratch (x_out) — one residual less per micro-batch held, which is what lets v
 * chunks of L/v layers hold what one stage of L layers holds (zbv, dualpipev). */
static bool x_kept(const gpt_chunk *c, int k) {
    const int L = c->shard.layer_end - c->shard.layer_begin;
    int g0, g1;
    if (k == L) return c->shard.has_head;
    return !recompute_group(c, k, &g0, &g1) || k == g0;
}

/* Lays out part k of one micro-batch's activations (gpt.h, gpt_acts_part) into base and
 * returns its floats; base NULL only counts, and leaves the part's views NULL (a detached
 * part). The layers' parts hold the same views for every chunk of the same blocks; what only
 * the embedding or the head has is in the ends' parts:
 *   W       x[i] kept entering each block, every block's PART_W views
 *   B       every block's PART_B and PART_ATT views (selective: att in the scratch)
 *   ENDS_W  the tokens (embedding); the output x[nblocks], the final norm's output and
 *           statistics, the losses (head)
 *   ENDS_B  the logits, the loss statistics, the targets (head) */
static size_t acts_layout_part(gpt_acts *a, const gpt_chunk *c, float *base, gpt_acts_part k) {
    const size_t B = (size_t)a->B, T = (size_t)a->T, N = B * T, C = (size_t)c->cfg.hidden;
    const size_t Nr = B * seq_local(c, T);
    const bool selective = c->features.recompute.granularity == GPT_RECOMPUTE_SELECTIVE;
    const int kept = selective ? PART_W | PART_B : PART_ALL; /* selective: att in the scratch */
    const bool head = c->shard.has_head;
    cursor cc = {base, 0}, *cur = &cc;
    if (k == GPT_ACTS_W)
        for (int i = 0; i < a->nblocks; i++) a->x[i] = x_kept(c, i) ? take(cur, Nr * C) : NULL;
    if (k == GPT_ACTS_W || k == GPT_ACTS_B)
        for (int i = 0, g0, g1; i < a->nblocks; i++)
            if (!recompute_group(c, i, &g0, &g1))
                block_layout(&a->blocks[i], cur, c, B, T,
                             kept & (k == GPT_ACTS_W ? PART_W : ~PART_W));
    if (k == GPT_ACTS_ENDS_W) {
        a->x[a->nblocks] = x_kept(c, a->nblocks) ? take(cur, Nr * C) : NULL;
        a->tokens = c->shard.has_embedding ? (int32_t *)take(cur, N) : NULL;
        a->lnf = head ? take(cur, Nr * C) : NULL;
        a->lnf_mean = head ? take(cur, Nr) : NULL;
        a->lnf_rstd = head ? take(cur, Nr) : NULL;
        a->losses = head ? take(cur, N) : NULL;
    }
    if (k == GPT_ACTS_ENDS_B) {
        a->logits = head ? take(cur, N * c->Vl) : NULL;
        a->ce_stats = head ? take(cur, 3 * N) : NULL;
        a->targets = head ? (int32_t *)take(cur, N) : NULL;
    }
    return cc.used;
}

bool gpt_acts_part_read_by_w(gpt_acts_part k) { return k == GPT_ACTS_W || k == GPT_ACTS_ENDS_W; }

/* alloc false: only the sizes (the *_bytes_of functions), no device memory; parts false: no
 * part attached (gpt_acts_create_empty). */
static gpt_acts *acts_create(const gpt_chunk *c, int B, int T, bool alloc, bool parts) {
    CHECK(T <= c->cfg.seq_len, "sequence longer than the position embedding");
    CHECK(!c->features.sequence_parallel || T % c->shard.tp_size == 0,
          "sequence parallelism: the micro-batch's sequence length must be divisible by tp");
    CHECK(!(chunk_is_moe(c) || c->features.cp_size > 1) ||
              c->features.recompute.granularity == GPT_RECOMPUTE_NONE,
          "MoE and context parallelism run without recomputation (train's configuration check "
          "refuses it, naming the flags)");
    gpt_acts *a = callocCheck(1, sizeof *a);
    a->B = B;
    a->T = T;
    a->nblocks = c->shard.layer_end - c->shard.layer_begin;
    a->x = callocCheck((size_t)a->nblocks + 1, sizeof *a->x);
    a->blocks = callocCheck((size_t)a->nblocks + 1, sizeof *a->blocks);
    for (int k = 0; k < GPT_ACTS_PARTS; k++) {
        a->part_bytes[k] = acts_layout_part(a, c, NULL, (gpt_acts_part)k) * sizeof(float);
        a->bytes += a->part_bytes[k];
    }
    const size_t Nr = (size_t)B * seq_local(c, (size_t)T), C = (size_t)c->cfg.hidden;
    const moe_config mc = chunk_moe_config(c);
    if (chunk_is_moe(c)) a->bytes += (size_t)a->nblocks * moe_acts_bytes_of(&mc, Nr, C);
    if (!alloc) return a;
    for (int k = 0; parts && k < GPT_ACTS_PARTS; k++)
        if (a->part_bytes[k])
            gpt_acts_attach(a, c, (gpt_acts_part)k, device_alloc(a->part_bytes[k], "activations"));
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

gpt_acts *gpt_acts_create(const gpt_chunk *c, int B, int T) {
    return acts_create(c, B, T, true, true);
}

gpt_acts *gpt_acts_create_empty(const gpt_chunk *c, int B, int T) {
    return acts_create(c, B, T, true, false);
}

void gpt_acts_destroy(gpt_acts *a) {
    if (!a) return;
    for (int k = 0; k < GPT_ACTS_PARTS; k++) device_free(a->mem[k]);
    for (int i = 0; a->moe && i < a->nblocks; i++) moe_acts_destroy(a->moe[i]);
    free(a->moe);
    free(a->aux);
    free(a->x);
    free(a->blocks);
    free(a);
}

size_t gpt_acts_bytes(const gpt_acts *a) { return a->bytes; }
size_t gpt_acts_part_bytes(const gpt_acts *a, gpt_acts_part k) { return a->part_bytes[k]; }

void gpt_acts_attach(gpt_acts *a, const gpt_chunk *c, gpt_acts_part k, float *mem) {
    CHECK(a->mem[k] == NULL, "attach a part of the activations that is attached already");
    CHECK(mem != NULL || a->part_bytes[k] == 0, "attach a part: its memory");
    a->mem[k] = mem;
    acts_layout_part(a, c, mem, k);
}

float *gpt_acts_detach(gpt_acts *a, const gpt_chunk *c, gpt_acts_part k) {
    float *mem = a->mem[k];
    a->mem[k] = NULL;
    acts_layout_part(a, c, NULL, k); /* counting only: the part's views become NULL */
    return mem;
}
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
    const size_t Nr = (size_t)B * seq_local(c, (size_t)T),
                 full = c->features.sequence_parallel ? N * C : 0;
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
    const gpt_recompute *rc = &c->features.recompute;
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
        if (c->features.recompute.granularity == GPT_RECOMPUTE_SELECTIVE)
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
    gpt_acts *a = acts_create(c, B, T, false, false);
    size_t n = a->bytes;
    gpt_acts_destroy(a);
    return n;
}

size_t gpt_acts_parts_bytes_of(const gpt_chunk *c, int B, int T, size_t parts[GPT_ACTS_PARTS]) {
    gpt_acts *a = acts_create(c, B, T, false, false);
    for (int k = 0; k < GPT_ACTS_PARTS; k++) parts[k] = a->part_bytes[k];
    const size_t n = a->bytes;
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
