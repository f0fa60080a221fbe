/* Exercise 3 — column- and row-parallel linear layers, forward and backward.
 *
 * This code replaces the region between the "exercise 3" markers of src/tp/layers.c; that
 * file's includes are in scope. Read the pictures at the top of src/tp/layers.h first.
 * What you may call (all shapes row-major, N rows):
 *   dev_matmul_forward(out, inp, weight, bias, N, C, OC)   out (N,OC) = inp (N,C) weight^T + bias
 *       weight (OC,C); bias (OC) or NULL.
 *   dev_matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC)
 *       ACCUMULATES: dinp (N,C) += dout weight; dweight (OC,C) += dout^T inp; dbias += Σ rows
 *       of dout. Any of dinp, dweight, dbias may be NULL (that part is skipped).
 *   dev_add_inplace(y, x, n)  y += x;   dev_add_bias_rows(x, bias, N, OC)  every row += bias
 *   device_alloc(bytes, "what") (zeroed) / device_free(p)   scratch buffers
 *   the operators of src/tp/mappings.h (exercise 2): f = tp_copy_to_region_*,
 *   g = tp_reduce_from_region_*, tp_gather_from_region_forward(tp, out, x, N, K) joins every
 *   rank's (N,K) columns into (N, K*p), tp_gather_from_region_backward(tp, dx, dout, N, K)
 *   takes this rank's K columns back out of (N, K*p).
 *   comm_size(tp) (tp may be NULL: one rank).
 *
 * The contract (src/tp/layers.h), p = ranks in tp, i = this rank:
 *   Column-parallel: weight = A_i (OCl, C), bias = b_i (OCl) or NULL, inp X (N,C) whole on every
 *     rank. Forward: out = Y_i = X A_i^T + b_i (N,OCl), or with gather_output the whole
 *     Y = [Y_0 | ... | Y_p-1] (N, OCl*p). Backward: dout is dY_i (N,OCl), or the whole dY
 *     (N, OCl*p) with gather_output; accumulate dweight, dbias from this rank's columns, and
 *     add the WHOLE dX = Σ_i dY_i A_i into dinp (dinp may be NULL: skip it, on every rank).
 *   Row-parallel: weight = A_i (OC, Cl), inp X_i (N,Cl) is this rank's columns of X, bias b (OC)
 *     the same on every rank. Forward: out (N,OC) = Σ_i X_i A_i^T + b on every rank (the bias
 *     once, not p times). Backward: dout is the whole dY on every rank; accumulate dinp = dX_i,
 *     dweight = dA_i, dbias = db.
 */
void tp_column_linear_forward(comm_group *tp, float *out, const float *inp, const float *weight,
                              const float *bias, size_t N, size_t C, size_t OCl,
                              bool gather_output) {
    size_t p = tp ? (size_t)comm_size(tp) : 1;
    dev_fill(out, 0.0f, N * OCl * (gather_output ? p : 1)); /* TODO: Y_i, or the whole Y */
}

void tp_column_linear_backward(comm_group *tp, float *dinp, float *dweight, float *dbias,
                               const float *dout, const float *inp, const float *weight, size_t N,
                               size_t C, size_t OCl, bool gather_output) {
    /* TODO: dweight, dbias and the whole dX */
}

void tp_row_linear_forward(comm_group *tp, float *out, const float *inp, const float *weight,
                           const float *bias, size_t N, size_t Cl, size_t OC) {
    dev_fill(out, 0.0f, N * OC); /* TODO: Σ_i X_i A_i^T + b */
}

void tp_row_linear_backward(comm_group *tp, float *dinp, float *dweight, float *dbias,
                            const float *dout, const float *inp, const float *weight, size_t N,
                            size_t Cl, size_t OC) {
    /* TODO: dX_i, dA_i, db */
}
