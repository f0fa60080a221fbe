/* layers.c — column- and row-parallel linear, vocab-parallel embedding and cross-entropy.
 * See layers.h for the split pictures. Every layer is a kernel call between two mappings.
 */
#include "src/tp/layers.h"

#include <stdlib.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_label.h"
#include "src/tp/mappings.h"

/* ---------------------------------------------------------------- column-parallel */

/* exercise 3 begins: column- and row-parallel linear (tutorials/exercises/03-parallel-linear) */
void tp_column_linear_forward(comm_group *tp, float *out, const float *inp, const float *weight,
                              const float *bias, size_t N, size_t C, size_t OCl,
                              bool gather_output) {
    /* f forward is the identity: X is already whole on every rank. */
    if (!gather_output) {
        dev_matmul_forward(out, inp, weight, bias, N, C, OCl); /* Y_i (N,OCl) */
        return;
    }
    float *local = device_alloc(N * OCl * sizeof(float), "tp work space");
    dev_matmul_forward(local, inp, weight, bias, N, C, OCl);
    tp_gather_from_region_forward(tp, out, local, N, OCl); /* Y (N, OCl*p) */
    device_free(local);
}

void tp_column_linear_backward(comm_group *tp, float *dinp, float *dweight, float *dbias,
                               const float *dout, const float *inp, const float *weight, size_t N,
                               size_t C, size_t OCl, bool gather_output) {
    float *dlocal = NULL;
    const float *dy = dout;
    if (gather_output) { /* gather's backward: keep this rank's columns of dY */
        dlocal = device_alloc(N * OCl * sizeof(float), "tp work space");
        tp_gather_from_region_backward(tp, dlocal, dout, N, OCl);
        dy = dlocal;
    }
    dev_matmul_backward(NULL, dweight, dbias, dy, inp, weight, N, C, OCl);
    if (dinp && !(tp && comm_size(tp) > 1)) {
        /* one rank: f's backward is the identity, dX goes straight into dinp (+=) */
        dev_matmul_backward(dinp, NULL, NULL, dy, inp, weight, N, C, OCl);
    } else if (dinp) {
        /* This layer's partial dX = dY_i A_i, summed over ranks by f's backward, then added
         * to whatever dinp already holds (so the all-reduce covers only this layer). */
        float *dx = device_alloc(N * C * sizeof(float), "tp work space");
        dev_matmul_backward(dx, NULL, NULL, dy, inp, weight, N, C, OCl);
        tp_copy_to_region_backward(tp, dx, N * C);
        dev_add_inplace(dinp, dx, N * C);
        device_free(dx);
    }
    device_free(dlocal);
}

/* ---------------------------------------------------------------- row-parallel */

void tp_row_linear_forward(comm_group *tp, float *out, const float *inp, const float *weight,
                           const float *bias, size_t N, size_t Cl, size_t OC) {
    dev_matmul_forward(out, inp, weight, NULL, N, Cl, OC); /* X_i A_i^T: a partial sum */
    tp_reduce_from_region_forward(tp, out, N * OC);        /* g */
    if (bias) dev_add_bias_rows(out, bias, N, OC);         /* once, after the sum */
}

void tp_row_linear_backward(comm_group *tp, float *dinp, float *dweight, float *dbias,
                            const float *dout, const float *inp, const float *weight, size_t N,
                            size_t Cl, size_t OC) {
    (void)tp; /* g backward is the identity: dout is already the whole dY on every rank */
    dev_matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, Cl, OC);
}

/* exercise 3 ends */

/* ---------------------------------------------------------------- vocab-parallel embedding */

void tp_vocab_embedding_forward(comm_group *tp, float *out, const int32_t *tokens, const float *wte,
                                size_t N, size_t C, int64_t v_start, size_t Vl) {
    dev_embedding_forward(out, tokens, wte, N, C, v_start,
                          Vl);                     /* zeros for tokens held elsewhere */
    tp_reduce_from_region_forward(tp, out, N * C); /* g: exactly one rank adds a row */
}

void tp_vocab_embedding_backward(comm_group *tp, float *dwte, const float *dout,
                                 const int32_t *tokens, size_t N, size_t C, int64_t v_start,
                                 size_t Vl) {
    (void)tp; /* g backward: identity */
    dev_embedding_backward(dwte, dout, tokens, N, C, v_start, Vl);
}

/* ---------------------------------------------------------------- vocab-parallel cross-entropy */

/* exercise 4 begins: vocab-parallel cross-entropy (tutorials/exercises/04-vocab-cross-entropy) */
void tp_vocab_cross_entropy_forward(comm_group *tp, float *loss, float *stats, const float *logits,
                                    const int32_t *targets, size_t N, size_t Vl, int64_t v_start,
                                    int64_t real_vocab) {
    float *rowmax = stats, *sumexp = stats + N, *target_logit = stats + 2 * N;
    dev_crossentropy_local_max(rowmax, logits, N, Vl, v_start, real_vocab);
    comm_label_set("loss max", -1);
    tp_all_reduce_max(tp, rowmax, N);
    dev_crossentropy_local_sums(sumexp, target_logit, logits, rowmax, targets, N, Vl, v_start,
                                real_vocab);
    comm_label_set("loss sum", -1);
    tp_all_reduce_sum(tp, target_logit, N); /* only the owner of the target adds non-zero */
    tp_all_reduce_sum(tp, sumexp, N);
    comm_label_clear();
    dev_crossentropy_loss(loss, sumexp, rowmax, target_logit, N);
}

void tp_vocab_cross_entropy_backward(comm_group *tp, float *dlogits, const float *stats,
                                     const float *logits, const int32_t *targets,
                                     const float *dloss, size_t N, size_t Vl, int64_t v_start,
                                     int64_t real_vocab) {
    (void)tp; /* the global max and sum are in stats: nothing to exchange */
    dev_crossentropy_backward(dlogits, logits, stats, stats + N, targets, dloss, N, Vl, v_start,
                              real_vocab);
}
/* exercise 4 ends */

/* ---------------------------------------------------------------- sequence parallelism */

static size_t group_size(const comm_group *tp) { return tp ? (size_t)comm_size(tp) : 1; }

void tp_column_linear_sp_forward(comm_group *tp, float *out, const float *inp, const float *weight,
                                 const float *bias, size_t B, size_t Tl, size_t C, size_t OCl) {
    const size_t N = B * Tl * group_size(tp);
    float *x = device_alloc(N * C * sizeof(float), "tp work space");
    tp_gather_from_sequence_region_forward(tp, x, inp, B, Tl, C); /* g */
    dev_matmul_forward(out, x, weight, bias, N, C, OCl);          /* Y_i (N,OCl) */
    device_free(x);
}

void tp_column_linear_sp_backward(comm_group *tp, float *dinp, float *inp_full, float *dweight,
                                  float *dbias, const float *dout, const float *inp,
                                  const float *weight, size_t B, size_t Tl, size_t C, size_t OCl) {
    const size_t N = B * Tl * group_size(tp), Nl = B * Tl;
    float *x = inp_full;
    if (!x && (dweight || dbias)) x = device_alloc(N * C * sizeof(float), "tp work space");
    /* The whole input again, for the weight gradient: the forward kept only the shard. */
    if (x) tp_gather_from_sequence_region_forward(tp, x, inp, B, Tl, C);
    if (dweight || dbias) dev_matmul_backward(NULL, dweight, dbias, dout, x, weight, N, C, OCl);
    if (dinp) { /* this layer's partial dX, reduce-scattered by g's backward, then added */
        float *dx = device_alloc(N * C * sizeof(float), "tp work space");
        float *mine = device_alloc(Nl * C * sizeof(float), "tp work space");
        dev_matmul_backward(dx, NULL, NULL, dout, NULL, weight, N, C, OCl); /* needs no X */
        tp_gather_from_sequence_region_backward(tp, mine, dx, B, Tl, C);
        dev_add_inplace(dinp, mine, Nl * C);
        device_free(mine);
        device_free(dx);
    }
    if (x != inp_full) device_free(x);
}

void tp_row_linear_sp_forward(comm_group *tp, float *out, const float *inp, const float *weight,
                              const float *bias, size_t B, size_t Tl, size_t Cl, size_t OC) {
    const size_t N = B * Tl * group_size(tp);
    float *partial = device_alloc(N * OC * sizeof(float), "tp work space");
    dev_matmul_forward(partial, inp, weight, NULL, N, Cl, OC);                 /* X_i A_i^T */
    tp_reduce_scatter_to_sequence_region_forward(tp, out, partial, B, Tl, OC); /* ḡ */
    if (bias) dev_add_bias_rows(out, bias, B * Tl, OC); /* once, after the sum */
    device_free(partial);
}

void tp_row_linear_sp_backward(comm_group *tp, float *dinp, float *dout_full, float *dweight,
                               float *dbias, const float *dout, const float *inp,
                               const float *weight, size_t B, size_t Tl, size_t Cl, size_t OC) {
    const size_t N = B * Tl * group_size(tp);
    float *dy = dout_full ? dout_full : device_alloc(N * OC * sizeof(float), "tp work space");
    tp_reduce_scatter_to_sequence_region_backward(tp, dy, dout, B, Tl, OC); /* ḡ backward */
    dev_matmul_backward(dinp, dweight, dbias, dy, inp, weight, N, Cl, OC);
    if (dy != dout_full) device_free(dy);
}

void tp_vocab_embedding_sp_forward(comm_group *tp, float *out, const int32_t *tokens,
                                   const float *wte, size_t B, size_t Tl, size_t C, int64_t v_start,
                                   size_t Vl) {
    const size_t N = B * Tl * group_size(tp);
    float *rows = device_alloc(N * C * sizeof(float), "tp work space");
    dev_embedding_forward(rows, tokens, wte, N, C, v_start, Vl); /* zeros for rows held elsewhere */
    tp_reduce_scatter_to_sequence_region_forward(tp, out, rows, B, Tl, C); /* ḡ */
    device_free(rows);
}
