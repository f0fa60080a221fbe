/* gpt_internal.h — what the files of the model share: gpt_params.c (the parameter table),
 * gpt_layout.c (where the activations live), gpt.c (the chunk's forward), gpt_block.c (one
 * block, forward, B and W), gpt_backward.c (the chunk's backward) and gpt_recompute.c
 * (activation recomputation): the views of the activation, weight-gradient and scratch
 * buffers, the parameter views of one block, where each pass finds a block's activations, and
 * the handles a block's pass gives each parallel feature. Nothing outside src/model includes
 * it. */
#ifndef TRIDENT_MODEL_GPT_INTERNAL_H
#define TRIDENT_MODEL_GPT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "src/cp/attention.h"
#include "src/cp/zigzag.h"
#include "src/model/gpt.h"
#include "src/model/gpt_hooks.h"
#include "src/moe/moe_block.h"
#include "src/moe/moe_layer.h"
#include "src/tp/region.h"

#define BLOCK_KINDS (GPT_FCPROJ_B - GPT_LN1_W + 1) /* 12 tensors per block */

/* Positions of each sequence this rank holds outside the tensor-parallel region: T, or T/tp
 * with sequence parallelism. Rows of the residual stream: B times that (written Nr below). */
static inline size_t seq_local(const gpt_chunk *c, size_t T) {
    return c->features.sequence_parallel ? T / (size_t)c->shard.tp_size : T;
}

/* The tensor-parallel region of B sequences of T positions through one layer of the chunk
 * (layer: the global block index, -1 for the embedding and the head). */
static inline tp_region chunk_tp_region(const gpt_chunk *c, comm_group *tp, size_t B, size_t T,
                                        int layer) {
    const bool sp = c->features.sequence_parallel;
    const size_t Tl = seq_local(c, T), first = sp ? (size_t)c->shard.tp_rank * Tl : 0;
    return (tp_region){tp, sp, B, T, Tl, first, (size_t)c->cfg.hidden, layer};
}

/* Per block: what its backward needs. Shapes with N = B*T, and Nr = B*seq_local(T) for what
 * sequence parallelism shards (Nr = N without it). B (the input-gradient part) reads all of
 * it; W (the weight-gradient part) only ln1 and its stats, atty, x_mid, ln2 and its stats, and
 * fch_gelu, with the block's input x. */
typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd; /* (Nr,C) (Nr) (Nr) */
    float *qkv;                       /* (N,3Cl) */
    float *att;                       /* (B,NHl,T,T) */
    float *atty;                      /* (N,Cl) */
    float *x_mid;                     /* (Nr,C) residual after attention */
    float *ln2, *ln2_mean, *ln2_rstd; /* (Nr,C) (Nr) (Nr) */
    float *fch, *fch_gelu; /* (N,4Cl) (N,4Cl); MoE blocks: none (the layer keeps its own) */
    moe_acts *moe;         /* MoE blocks: the layer's routing and expert activations */
    float *aux;            /* MoE blocks: where the forward leaves its switch loss */
} block_acts;

/* One micro-batch's activations. What the chunk's recomputation does not keep is NULL here
 * (and lives in the scratch, see gpt_block_io): selective, every att; full, every x[i] but
 * the inputs of recomputed groups and of kept blocks (and the head's x[nblocks]), and all of
 * a recomputed block's block_acts. */
struct gpt_acts {
    int B, T, nblocks;
    size_t bytes;                      /* every part (and the MoE layers' own) */
    size_t part_bytes[GPT_ACTS_PARTS]; /* each part's (gpt.h, gpt_acts_part; 0: none) */
    float *mem[GPT_ACTS_PARTS];        /* each part's allocation (NULL while detached): its
                                        * views point into it */
    int32_t *tokens;                   /* (N) copy, for the embedding backward */
    int32_t *targets;                  /* (N) copy, for the loss backward */
    float **x; /* nblocks+1 views (Nr,C): residual stream at block boundaries */
    block_acts *blocks;
    float *lnf, *lnf_mean, *lnf_rstd; /* (Nr,C) (Nr) (Nr) */
    float *logits;                    /* (N,Vl) */
    float *ce_stats; /* (3,N): row max, sum of exponentials, target logit (all-reduced) */
    float *losses;   /* (N) */
    moe_acts **moe;  /* (nblocks) MoE chunks: each block's layer state (own allocations), or NULL */
    float *aux;      /* (nblocks) MoE chunks: each block's switch loss of the last forward */
};

/* Per block: the output gradients its weight-gradient pass needs (see gpt.h). */
typedef struct {
    float *dfcproj; /* (N,C)   dY of fcproj: the residual gradient after the block (all-gathered
                       with sequence parallelism: fcproj's W reads all of it) */
    float *dfch;    /* (N,4Cl) dY of fc */
    float *dln2;    /* (Nr,C)  dY of LN2 */
    float *dproj;   /* (N,C)   dY of proj: the residual gradient after attention (the same) */
    float *dqkv;    /* (N,3Cl) dY of qkv */
    float *dln1;    /* (Nr,C)  dY of LN1 */
    float *ln1_full, *ln2_full; /* (N,C) sequence parallelism: the inputs of qkv and fc,
                                   all-gathered again by B for W (NULL without it) */
    /* A block that full recomputation recomputes, in a hand-over of the split backward:
     * what its W reads, recomputed by B (the scratch is overwritten before W runs). */
    block_acts in; /* the W fields only (see block_acts); all NULL for other blocks */
    float *x_in;   /* (Nr,C) the block's input, unless it is its group's (kept in gpt_acts) */
    float *dmoe;   /* MoE blocks: B's gradients of fc_w .. router_w, in their buffer order; W adds
                      them (dfcproj, dfch are then not used) */
} block_wgrad;

struct gpt_wgrad {
    int nblocks;
    size_t bytes;
    float *mem;
    block_wgrad *blocks;
    float *dlogits;  /* (N,Vl) dY of the head (last stage) */
    float *dlnf;     /* (Nr,C) dY of LNf (last stage) */
    float *lnf_full; /* (N,C) sequence parallelism: the head's all-gathered input, for W */
    float *demb; /* (N,C)  dY of the embedding: the residual gradient at the bottom (first stage) */
};

struct gpt_scratch {
    float *mem;
    size_t bytes;      /* mem and wg */
    float *dres;       /* (Nr,C) gradient of the residual stream */
    float *dfch_gelu;  /* (N,4Cl) */
    float *datty;      /* (N,Cl) */
    float *datt;       /* (T,T) */
    float *dloss;      /* (N) */
    float dloss_value; /* the backward's dloss: MoE blocks weigh their switch loss with it */
    gpt_wgrad *wg;     /* the fused gpt_backward's own B -> W hand-over (no recomputed inputs) */
    /* Recomputation: where what the micro-batches do not keep is computed (gpt.h). */
    float *att;          /* (B,NHl,T,T) selective: att of the block at hand, or NULL */
    int group;           /* full: blocks in a recomputed group (0 without full recomputation) */
    block_acts *layer;   /* (group) all the activations of the group's blocks, att included */
    float **x;           /* (group) x[j] (Nr,C): the input of the group's block j, for j >= 1 */
    float *x_out;        /* (Nr,C) the chunk's output when gpt_acts does not keep it, or NULL */
    double weight_share; /* of the last gpt_backward's thread CPU time, its W parts' share */
    bool time_weight;    /* gpt_backward times its W parts (gpt_scratch_time_weight) */
};

/* Full recomputation: whether block i (local index) is recomputed, and the group [*g0, *g1)
 * it belongs to (uniform: groups of num_layers; block: the first num_layers, one each). */
static inline bool recompute_group(const gpt_chunk *c, int i, int *g0, int *g1) {
    const gpt_recompute *rc = &c->features.recompute;
    const int L = c->shard.layer_end - c->shard.layer_begin, n = rc->num_layers;
    if (rc->granularity != GPT_RECOMPUTE_FULL) return false;
    if (rc->method == GPT_RECOMPUTE_BLOCK) {
        if (i >= n) return false;
        *g0 = i;
        *g1 = i + 1;
        return true;
    }
    *g0 = i / n * n;
    *g1 = *g0 + n < L ? *g0 + n : L;
    return true;
}

/* Parameter views of one block (local index i). */
typedef struct {
    const float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b;
    const float *ln2_w, *ln2_b, *fc_w, *fc_b, *fcproj_w, *fcproj_b;
    const float *router_w; /* MoE blocks */
} block_params;

static inline const gpt_param *block_param(const gpt_chunk *c, int i, int kind) {
    int first = (c->shard.has_embedding || c->shard.has_head ? 1 : 0) +
                (c->shard.has_embedding ? 1 : 0);
    const int k = kind == GPT_ROUTER_W ? BLOCK_KINDS : kind - GPT_LN1_W;
    return &c->params[first + i * c->block_tensors + k];
}

static inline bool chunk_is_moe(const gpt_chunk *c) { return c->cfg.num_experts > 0; }

/* Rows [row, row + len) of a run (offsets from the first row asked for) hold the consecutive
 * positions [pos, pos + len). */
typedef struct {
    size_t row, pos, len;
} position_run;

/* The runs of positions of rows [r0, r0 + n) of one of the chunk's local sequences of T rows:
 * row t is position t (one run), or with context parallelism its zig-zag chunk's global
 * position (src/cp/zigzag.h): one run per half the rows reach, at most two. Returns how many.
 * The embedding's forward and backward both walk these runs. */
static inline int position_runs(const gpt_chunk *c, size_t T, size_t r0, size_t n,
                                position_run run[2]) {
    const int cp_size = c->features.cp_size, cp_rank = c->features.cp_rank;
    if (cp_size <= 1) {
        run[0] = (position_run){0, r0, n};
        return 1;
    }
    const size_t H = T / 2, Tg = T * (size_t)cp_size;
    int k = 0;
    for (size_t h = 0; h < 2; h++) {
        const size_t a = r0 > h * H ? r0 : h * H, b = r0 + n < (h + 1) * H ? r0 + n : (h + 1) * H;
        if (a >= b) continue;
        run[k++] = (position_run){a - r0, cp_global_position(cp_rank, cp_size, Tg, a), b - a};
    }
    return k;
}

/* Floats of one MoE block's tensors from fc_w to router_w (this rank's experts). */
static inline size_t moe_block_floats(const gpt_chunk *c) {
    const size_t C = (size_t)c->cfg.hidden, E = (size_t)c->cfg.num_experts;
    const size_t El = E / (size_t)(c->shard.ep_size > 0 ? c->shard.ep_size : 1);
    return El * (4 * C * C + 4 * C + C * 4 * C + C) + E * C;
}

/* The MoE layer's configuration for this chunk's blocks. */
static inline moe_config chunk_moe_config(const gpt_chunk *c) {
    moe_config m = {c->cfg.num_experts,
                    c->cfg.moe_topk,
                    c->cfg.moe_aux_loss_coeff,
                    c->cfg.moe_capacity_factor,
                    c->shard.ep_size > 0 ? c->shard.ep_size : 1,
                    c->shard.ep_rank};
    return m;
}

/* The views of block i in the span of its unit (gpt_hooks.h). */
static inline block_params block_views(const gpt_chunk *c, const gpt_span *w, int i) {
    block_params v;
    const float **dst[BLOCK_KINDS] = {&v.ln1_w,  &v.ln1_b,  &v.qkv_w,    &v.qkv_b,
                                      &v.proj_w, &v.proj_b, &v.ln2_w,    &v.ln2_b,
                                      &v.fc_w,   &v.fc_b,   &v.fcproj_w, &v.fcproj_b};
    for (int k = 0; k < BLOCK_KINDS; k++)
        *dst[k] = gpt_span_of(w, block_param(c, i, GPT_LN1_W + k));
    v.router_w = chunk_is_moe(c) ? gpt_span_of(w, block_param(c, i, GPT_ROUTER_W)) : NULL;
    return v;
}

/* Block i's activations as one pass sees them, wherever each lives (gpt_recompute.c). */
typedef struct {
    const float *x_in; /* (Nr,C) the residual stream entering the block */
    float *x_out;      /* (Nr,C) leaving it; NULL when a recompute need not write it */
    block_acts b;
} block_io;

/* The passes that read or write a block's activations. */
typedef enum {
    PASS_FORWARD,   /* writes everything, x_out included (wg NULL) */
    PASS_RECOMPUTE, /* writes them again, x_out only inside a group (s, and wg in the split) */
    PASS_BACKWARD,  /* reads: B (s and wg) or W (s NULL when wg holds what W reads); no x_out */
} block_pass;
/* The views of block i for one pass of one micro-batch. */
block_io gpt_block_io(const gpt_chunk *c, const gpt_acts *a, const gpt_scratch *s,
                      const gpt_wgrad *wg, int i, block_pass pass);

/* One pass over block i of a micro-batch of B sequences of T positions, as the block's code
 * sees it: the sizes, and each feature's handle, the chunk's choices already made (its
 * features, the groups): what the block hands src/tp, src/cp and src/moe. */
typedef struct {
    const gpt_chunk *c;
    int i, layer;           /* local and global block index */
    size_t N, Nr;           /* rows inside the TP region (B·T) and of the residual stream here */
    size_t C, Cl;           /* hidden size, and the attention width this rank holds */
    tp_region tp;           /* the edges of the tensor-parallel region (src/tp/region.h) */
    cp_attention attention; /* local, or the ring over the cp group (src/cp/attention.h) */
    moe_block moe;          /* MoE chunks: the experts' layer (src/moe/moe_block.h) */
} block_ctx;
/* tp: the tensor-parallel group (NULL for W, which never communicates). */
block_ctx block_ctx_make(const gpt_chunk *c, comm_group *tp, int B, int T, int i);

/* The forward of a block (gpt_block.c) with its parameters w: io.x_in -> io.b -> io.x_out;
 * without x_out it stops after the MLP's GELU (what a recompute needs: the group's output is
 * kept, never read by its backward). */
void gpt_block_forward(const block_ctx *x, const block_params *w, const block_io *io);
/* B of block i: s->dres goes from the gradient of its output to that of its input; the dY's
 * its W needs are left in wg. First, what the micro-batch did not keep is recomputed. */
void gpt_block_input(const gpt_chunk *c, const float *params, gpt_acts *a, gpt_scratch *s,
                     gpt_wgrad *wg, int i, comm_group *tp);
/* W of block i, from its activations and the dY's its B left in wg; s: the scratch where the
 * fused backward recomputed the block, NULL in the split backward's W (wg has it). */
void gpt_block_weight(const gpt_chunk *c, float *grads, const gpt_acts *a, const gpt_scratch *s,
                      const gpt_wgrad *wg, int i);
/* Just before B of block i: what its backward reads and the micro-batch did not keep,
 * computed again (selective: its att; full: its whole group, when i is the group's top). */
void gpt_recompute_for_backward(const gpt_chunk *c, const float *params, const gpt_acts *a,
                                gpt_scratch *s, const gpt_wgrad *wg, int i, comm_group *tp);

#endif /* TRIDENT_MODEL_GPT_INTERNAL_H */
