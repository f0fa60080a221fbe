/* gpt_internal.h — what gpt.c (forward, activations) and gpt_backward.c (the backward, B and
 * W) share: the layout of the activation, weight-gradient and scratch buffers, and the
 * parameter views of one block. Nothing outside src/model includes it. */
#ifndef TRIDENT_MODEL_GPT_INTERNAL_H
#define TRIDENT_MODEL_GPT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "src/model/gpt.h"

#define BLOCK_KINDS (GPT_FCPROJ_B - GPT_LN1_W + 1) /* 12 tensors per block */

/* Per block: what its backward needs. Shapes with N = B*T. */
typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd; /* (N,C) (N) (N) */
    float *qkv;                       /* (N,3Cl) */
    float *att;                       /* (B,NHl,T,T) */
    float *atty;                      /* (N,Cl) */
    float *x_mid;                     /* (N,C) residual after attention */
    float *ln2, *ln2_mean, *ln2_rstd; /* (N,C) (N) (N) */
    float *fch, *fch_gelu;            /* (N,4Cl) (N,4Cl) */
} block_acts;

struct gpt_acts {
    int B, T, nblocks;
    size_t bytes;
    float *mem;       /* one allocation; everything below is a view into it */
    int32_t *tokens;  /* (N) copy, for the embedding backward */
    int32_t *targets; /* (N) copy, for the loss backward */
    float **x;        /* nblocks+1 views (N,C): residual stream at block boundaries */
    block_acts *blocks;
    float *lnf, *lnf_mean, *lnf_rstd; /* (N,C) (N) (N) */
    float *logits;                    /* (N,Vl) */
    float *ce_stats; /* (3,N): row max, sum of exponentials, target logit (all-reduced) */
    float *losses;   /* (N) */
};

/* Per block: the output gradients its weight-gradient pass needs (see gpt.h). */
typedef struct {
    float *dfcproj; /* (N,C)   dY of fcproj: the residual gradient after the block */
    float *dfch;    /* (N,4Cl) dY of fc */
    float *dln2;    /* (N,C)   dY of LN2 */
    float *dproj;   /* (N,C)   dY of proj: the residual gradient after attention */
    float *dqkv;    /* (N,3Cl) dY of qkv */
    float *dln1;    /* (N,C)   dY of LN1 */
} block_wgrad;

struct gpt_wgrad {
    int nblocks;
    size_t bytes;
    float *mem;
    block_wgrad *blocks;
    float *dlogits; /* (N,Vl) dY of the head (last stage) */
    float *dlnf;    /* (N,C)  dY of LNf (last stage) */
    float *demb; /* (N,C)  dY of the embedding: the residual gradient at the bottom (first stage) */
};

struct gpt_scratch {
    float *mem;
    float *dres;      /* (N,C) gradient of the residual stream */
    float *dfch_gelu; /* (N,4Cl) */
    float *datty;     /* (N,Cl) */
    float *datt;      /* (T,T) */
    float *dloss;     /* (N) */
    gpt_wgrad *wg;    /* the fused gpt_backward's own B -> W hand-over */
};

/* Parameter views of one block (local index i). */
typedef struct {
    const float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b;
    const float *ln2_w, *ln2_b, *fc_w, *fc_b, *fcproj_w, *fcproj_b;
} block_params;

static inline const gpt_param *block_param(const gpt_chunk *c, int i, int kind) {
    int first = (c->shard.has_embedding || c->shard.has_head ? 1 : 0) +
                (c->shard.has_embedding ? 1 : 0);
    return &c->params[first + i * BLOCK_KINDS + (kind - GPT_LN1_W)];
}

static inline block_params block_views(const gpt_chunk *c, const float *base, int i) {
    block_params v;
    const float **dst[BLOCK_KINDS] = {&v.ln1_w,  &v.ln1_b,  &v.qkv_w,    &v.qkv_b,
                                      &v.proj_w, &v.proj_b, &v.ln2_w,    &v.ln2_b,
                                      &v.fc_w,   &v.fc_b,   &v.fcproj_w, &v.fcproj_b};
    for (int k = 0; k < BLOCK_KINDS; k++) *dst[k] = base + block_param(c, i, GPT_LN1_W + k)->offset;
    return v;
}

#endif /* TRIDENT_MODEL_GPT_INTERNAL_H */
