/* flops.c — see flops.h. */
#include "src/model/flops.h"

double flops_forward_per_token(const gpt_config *g) {
    const double L = g->num_layers, C = g->hidden, T = g->seq_len, V = g->vocab_size;
    /* MoE: each token goes through K experts' MLPs, and the router's (E, C) product */
    const double K = g->num_experts > 0 ? g->moe_topk : 1, E = g->num_experts;
    const double per_layer = 8.0 * C * C        /* qkv, proj */
                             + K * 16.0 * C * C /* fc, fcproj of each expert used */
                             + 2.0 * E * C      /* the router's scores (0 when dense) */
                             + 4.0 * T * C;     /* scores and mix over T positions */
    return L * per_layer + 2.0 * C * V;         /* + the tied head's logits */
}

double flops_train_per_token(const gpt_config *g) { return 3.0 * flops_forward_per_token(g); }
