/* region.c — the edges of the tensor-parallel region, plain or sequence-parallel, each with its
 * trace label. See region.h. */
#include "src/tp/region.h"

#include "src/device/device.h"
#include "src/runtime/comm_label.h"
#include "src/tp/layers.h"
#include "src/tp/mappings.h"

/* The labels of a site's collectives (comm_label.h): literals, as comm_label_set keeps them. */
typedef struct {
    const char *f_bwd, *g_fwd;             /* plain TP: f's backward, g's forward */
    const char *sp_g_fwd, *sp_g_bwd;       /* SP: g (entering) */
    const char *sp_gbar_fwd, *sp_gbar_bwd; /* SP: ḡ (leaving) */
} site_labels;

static const site_labels k_labels[] = {
    [TP_ATTN] = {"f bwd attn", "g fwd attn", "sp g fwd attn", "sp g bwd attn", "sp gbar fwd attn",
                 "sp gbar bwd attn"},
    [TP_MLP] = {"f bwd mlp", "g fwd mlp", "sp g fwd mlp", "sp g bwd mlp", "sp gbar fwd mlp",
                "sp gbar bwd mlp"},
    [TP_HEAD] = {"f bwd head", NULL, "sp g fwd head", "sp g bwd head", NULL, NULL},
    [TP_EMBED] = {NULL, "g fwd embed", NULL, NULL, "sp gbar fwd embed", "sp gbar bwd embed"},
};

void tp_region_enter_forward(const tp_region *r, tp_site site, float *out, const float *in,
                             const float *weight, const float *bias, size_t OCl) {
    if (!r->sequence_parallel) { /* f forward: the identity, no message to label */
        tp_column_linear_forward(r->tp, out, in, weight, bias, r->B * r->T, r->C, OCl, false);
        return;
    }
    comm_label_set(k_labels[site].sp_g_fwd, r->layer); /* g: all-gather the sequence */
    tp_column_linear_sp_forward(r->tp, out, in, weight, bias, r->B, r->Tl, r->C, OCl);
    comm_label_clear();
}

void tp_region_enter_input(const tp_region *r, tp_site site, float *dinp, float *in_full,
                           const float *dout, const float *in, const float *weight, size_t OCl) {
    const site_labels *l = &k_labels[site];
    comm_label_set(r->sequence_parallel ? l->sp_g_bwd : l->f_bwd, r->layer);
    if (r->sequence_parallel) /* g's backward: reduce-scatter; the input all-gathered again */
        tp_column_linear_sp_backward(r->tp, dinp, in_full, NULL, NULL, dout, in, weight, r->B,
                                     r->Tl, r->C, OCl);
    else /* f's backward: all-reduce */
        tp_column_linear_backward(r->tp, dinp, NULL, NULL, dout, in, weight, r->B * r->T, r->C, OCl,
                                  false);
    comm_label_clear();
}

void tp_region_enter_weight(const tp_region *r, float *dweight, float *dbias, const float *dout,
                            const float *in_full, const float *in, size_t OCl) {
    const float *x = in_full ? in_full : in; /* the whole sequence, as the forward's product */
    dev_matmul_backward(NULL, dweight, dbias, dout, x, NULL, r->B * r->T, r->C, OCl);
}

void tp_region_exit_forward(const tp_region *r, tp_site site, float *out, const float *in,
                            const float *weight, const float *bias, size_t Cl) {
    const site_labels *l = &k_labels[site];
    comm_label_set(r->sequence_parallel ? l->sp_gbar_fwd : l->g_fwd, r->layer);
    if (r->sequence_parallel) /* ḡ: reduce-scatter to this rank's positions */
        tp_row_linear_sp_forward(r->tp, out, in, weight, bias, r->B, r->Tl, Cl, r->C);
    else /* g: all-reduce */
        tp_row_linear_forward(r->tp, out, in, weight, bias, r->B * r->T, Cl, r->C);
    comm_label_clear();
}

void tp_region_exit_input(const tp_region *r, tp_site site, float *dinp, float *dout_full,
                          const float *dres, const float *in, const float *weight, size_t Cl) {
    if (r->sequence_parallel) { /* ḡ's backward: all-gather dY */
        comm_label_set(k_labels[site].sp_gbar_bwd, r->layer);
        tp_row_linear_sp_backward(r->tp, dinp, dout_full, NULL, NULL, dres, in, weight, r->B, r->Tl,
                                  Cl, r->C);
        comm_label_clear();
        return;
    }
    /* g's backward: the identity, dY is the residual gradient itself */
    device_copy(dout_full, dres, r->B * r->T * r->C * sizeof(float));
    tp_row_linear_backward(r->tp, dinp, NULL, NULL, dout_full, in, weight, r->B * r->T, Cl, r->C);
}

void tp_region_exit_weight(const tp_region *r, float *dweight, float *dbias, const float *dout_full,
                           const float *in, size_t Cl) {
    dev_matmul_backward(NULL, dweight, dbias, dout_full, in, NULL, r->B * r->T, Cl, r->C);
}

void tp_region_embedding_forward(const tp_region *r, float *out, const int32_t *tokens,
                                 const float *wte, int64_t v_start, size_t Vl) {
    if (r->sequence_parallel) { /* ḡ: reduce-scattered to this rank's positions */
        comm_label_set(k_labels[TP_EMBED].sp_gbar_fwd, r->layer);
        tp_vocab_embedding_sp_forward(r->tp, out, tokens, wte, r->B, r->Tl, r->C, v_start, Vl);
    } else { /* g: all-reduced */
        comm_label_set(k_labels[TP_EMBED].g_fwd, r->layer);
        tp_vocab_embedding_forward(r->tp, out, tokens, wte, r->B * r->T, r->C, v_start, Vl);
    }
    comm_label_clear();
}

void tp_region_embedding_input(const tp_region *r, float *demb, const float *dres) {
    if (!r->sequence_parallel) { /* g's backward: the identity */
        device_copy(demb, dres, r->B * r->Tl * r->C * sizeof(float));
        return;
    }
    comm_label_set(k_labels[TP_EMBED].sp_gbar_bwd, r->layer); /* ḡ's backward: all-gather */
    tp_reduce_scatter_to_sequence_region_backward(r->tp, demb, dres, r->B, r->Tl, r->C);
    comm_label_clear();
}
