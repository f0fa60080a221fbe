/* Exercise 4 — vocab-parallel cross-entropy: the loss over a vocabulary split across ranks,
 * without ever gathering the logits.
 *
 * This code replaces the region between the "exercise 4" markers of src/tp/layers.c; that
 * file's includes are in scope. The local pieces are kernels (kernels/ops.h, called through
 * src/device/device.h); your job is the communication between them:
 *   dev_crossentropy_local_max(rowmax, logits, N, Vl, v_start, real_vocab)
 *       rowmax (N) = max over THIS rank's real entries of each row (-inf if it holds none)
 *   dev_crossentropy_local_sums(sumexp, target_logit, logits, rowmax, targets, N, Vl, v_start,
 *                               real_vocab)
 *       sumexp (N) = Σ over this rank's real entries of exp(logit - rowmax), rowmax being the
 *       GLOBAL max; target_logit (N) = the target's logit if this rank holds the target, else 0
 *   dev_crossentropy_loss(loss, sumexp, rowmax, target_logit, N)
 *       loss (N) = log(sumexp) + rowmax - target_logit (all three global)
 *   dev_crossentropy_backward(dlogits, logits, rowmax, sumexp, targets, dloss, N, Vl, v_start,
 *                             real_vocab)
 *       WRITES dlogits (N,Vl) = dloss * (softmax - onehot(target)) on this rank's entries, from
 *       the global rowmax and sumexp; zero on padding entries
 *   tp_all_reduce_max(tp, x, n), tp_all_reduce_sum(tp, x, n)   (src/tp/mappings.h; tp may be
 *       NULL or of size 1: then they do nothing)
 *
 * The contract (src/tp/layers.h): logits (N,Vl) are columns [v_start, v_start+Vl) of the
 * (N,V) logits; entries at global index >= real_vocab are padding (no probability, no
 * gradient); targets (N) are global token ids. stats is 3N floats this function fills for
 * the backward: stats[0,N) the global row max, stats[N,2N) the global Σ exp, stats[2N,3N) the
 * target logits. loss (N) must be the same on every rank. Forward: exactly three all-reduces
 * of N floats (the tests count them). Backward: no communication at all.
 */
void tp_vocab_cross_entropy_forward(comm_group *tp, float *loss, float *stats, const float *logits,
                                    const int32_t *targets, size_t N, size_t Vl, int64_t v_start,
                                    int64_t real_vocab) {
    dev_fill(stats, 0.0f, 3 * N);
    dev_fill(loss, 0.0f, N); /* TODO: the loss of every row */
}

void tp_vocab_cross_entropy_backward(comm_group *tp, float *dlogits, const float *stats,
                                     const float *logits, const int32_t *targets,
                                     const float *dloss, size_t N, size_t Vl, int64_t v_start,
                                     int64_t real_vocab) {
    dev_fill(dlogits, 0.0f, N * Vl); /* TODO: this rank's slice of dlogits */
}
