/* adamw.c — see adamw.h. */
#include "src/optim/adamw.h"

#include <math.h>

float adamw_lr_at(const adamw_config *cfg, int it) {
    if (cfg->warmup_iters > 0 && it <= cfg->warmup_iters)
        return cfg->lr * (float)it / (float)cfg->warmup_iters;
    if (it >= cfg->decay_iters) return cfg->min_lr;
    double span = (double)(cfg->decay_iters - cfg->warmup_iters);
    double ratio = span > 0 ? (double)(it - cfg->warmup_iters) / span : 1.0;
    double coeff = 0.5 * (1.0 + cos(M_PI * ratio));
    return (float)(cfg->min_lr + coeff * (cfg->lr - cfg->min_lr));
}

float adamw_clip_factor(const adamw_config *cfg, double grad_norm) {
    if (cfg->clip_grad <= 0.0f || !(grad_norm > cfg->clip_grad)) return 1.0f;
    return (float)(cfg->clip_grad / (grad_norm + 1e-6));
}

void adamw_update(float *p, const float *g, float *m, float *v, size_t n, const adamw_config *cfg,
                  float lr, float wd, int t, float grad_scale) {
    const float b1 = cfg->beta1, b2 = cfg->beta2, eps = cfg->eps;
    const float c1 = 1.0f - powf(b1, (float)t), c2 = 1.0f - powf(b2, (float)t);
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * grad_scale;
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / c1, vhat = vi / c2;
        p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * p[i]);
    }
}
