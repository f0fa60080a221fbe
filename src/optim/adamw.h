/* adamw.h — AdamW with decoupled weight decay, the learning-rate schedule, and the
 * gradient-clipping factor.
 *
 * adamw_update() is one flat loop over a contiguous range of parameters: the serial
 * optimizer calls it on the whole buffer, the ZeRO optimizer on the pieces of its shard
 * (src/zero/), so both compute the same numbers element by element.
 *
 * Not here: where the gradients come from or how they are synchronised across ranks.
 */
#ifndef TRIDENT_OPTIM_ADAMW_H
#define TRIDENT_OPTIM_ADAMW_H

#include <stddef.h>

typedef struct adamw_config {
    float lr;           /* peak learning rate (--lr) */
    float min_lr;       /* floor of the cosine decay (--min-lr) */
    int warmup_iters;   /* linear warmup length (--lr-warmup-iters) */
    int decay_iters;    /* cosine decay ends here (= --train-iters) */
    float beta1, beta2; /* 0.9, 0.95 */
    float eps;          /* 1e-8 */
    float weight_decay; /* --weight-decay, applied to matrices and embeddings only */
    float clip_grad;    /* --clip-grad: max global gradient norm, 0 = no clipping */
} adamw_config;

/* Learning rate at iteration `it` (1-based): linear warmup it/warmup * lr for it <= warmup,
 * then cosine from lr down to min_lr at decay_iters, min_lr after. */
float adamw_lr_at(const adamw_config *cfg, int it);

/* Factor to multiply gradients by so their global norm is at most clip_grad (1 if no clip). */
float adamw_clip_factor(const adamw_config *cfg, double grad_norm);

/* One AdamW step on n parameters:
 *   g' = g * grad_scale;  m = b1 m + (1-b1) g';  v = b2 v + (1-b2) g'^2
 *   p -= lr * ( m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + wd * p )
 * t is the 1-based step count (bias correction); wd is 0 for vectors. */
void adamw_update(float *p, const float *g, float *m, float *v, size_t n, const adamw_config *cfg,
                  float lr, float wd, int t, float grad_scale);

#endif /* TRIDENT_OPTIM_ADAMW_H */
