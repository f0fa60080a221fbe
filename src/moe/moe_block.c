/* moe_block.c — the MoE layer in a GPT block: its statistics group, the switch loss's weight,
 * the trace labels. See moe_block.h. */
#include "src/moe/moe_block.h"

#include "src/runtime/comm_label.h"

moe_block moe_block_make(const moe_config *m, comm_group *ep, comm_group *tp,
                         bool sequence_parallel, comm_group *cp, comm_group *tp_cp, int layer) {
    comm_group *stats = tp_cp ? tp_cp : sequence_parallel ? tp : cp;
    return (moe_block){*m, ep, stats, layer};
}

float moe_block_forward(const moe_block *b, const moe_params *p, moe_acts *a, float *out,
                        const float *in, size_t N, size_t C) {
    comm_label_set("ep a2a fwd moe", b->layer);
    const float aux = moe_forward(&b->cfg, b->ep, b->stats, p, a, out, in, N, C);
    comm_label_clear();
    return aux;
}

void moe_block_backward(const moe_block *b, const moe_params *p, moe_grads *g, moe_acts *a,
                        float *dinp, const float *dout, const float *in, float dloss, size_t N,
                        size_t C) {
    /* the micro-batch's positions: this rank's N rows on each rank sharing the counts */
    const float holders = b->stats ? (float)comm_size(b->stats) : 1.0f;
    const float aux_dloss = dloss * (float)N * holders;
    comm_label_set("ep a2a bwd moe", b->layer);
    moe_backward(&b->cfg, b->ep, p, g, a, dinp, dout, in, aux_dloss, N, C);
    comm_label_clear();
}
