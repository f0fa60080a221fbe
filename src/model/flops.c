/* flops.c — see flops.h. */
#include "src/model/flops.h"

double flops_forward_per_token(const gpt_config *g) {
    const double L = g->num_layers, C = g->hidden, T = g->seq_len, V = g->vocab_size;
    const double per_layer = 24.0 * C * C   /* qkv, proj, fc, fcproj */
                             + 4.0 * T * C; /* scores and mix over T positions */
    return L * per_layer + 2.0 * C * V;     /* + the tied head's logits */
}

double flops_train_per_token(const gpt_config *g) { return 3.0 * flops_forward_per_token(g); }
