/* token_dispatch.h — moving (token, choice) rows to the rank that holds their expert and the
 * results back: Megatron's all-to-all token dispatcher (transformer/moe/token_dispatcher.py,
 * MoEAlltoAllTokenDispatcher), on host fp32 rows of C floats.
 *
 * Expert parallelism over a group of P ranks (ep; NULL is P = 1): E experts, rank j holds the
 * El = E/P experts [j·El, (j+1)·El). One forward, seen from rank `me`:
 *
 *   pairs (N·K)   token t's k-th choice is pair t·K+k; a pair over its expert's capacity
 *                 is dropped (slot -1), the others are kept in token order
 *   permute       rows (M,C): the kept pairs' token rows sorted by expert (stable: token order)
 *                 = | to rank 0: experts 0..El-1 | to rank 1: El..2El-1 | ... |
 *   counts        all-to-all of El int64 per rank (comm_all_to_all_v, COMM_INT64): rank s learns
 *                 recv_cnt[s'][l], the rows rank s' has for its local expert l
 *   dispatch      all-to-all-v of the rows; they arrive in SOURCE order (s, l, token order),
 *                 and are reordered to EXPERT order (l, s, token order), so each local expert's
 *                 rows are contiguous and the order does not depend on P beyond the split
 *   experts       (moe_layer.c)
 *   return        expert order -> source order, the reverse all-to-all-v: rows (M,C) again
 *   combine       out[t] = Σ over t's kept choices of score · row      (un-permute)
 *
 * The backward runs the same two exchanges with gradients: d rows out (score · dout[t]),
 * d inputs back, summed into dinp[t].
 *
 * Bytes this rank sends to OTHER ranks (what comm_bytes_collective adds on ep; its own
 * block stays home):
 *   counts   (P-1) · El · 8
 *   dispatch 4 · C · (M - rows to itself)         = token_dispatch_bytes
 *   return   4 · C · (R - rows from itself)       = token_return_bytes
 * with M the kept pairs of this rank and R the rows its experts received.
 *
 * Not here: routing (router.h), the experts and the memory these arrays live in
 * (moe_layer.c lays them out in its one activation buffer).
 */
#ifndef TRIDENT_MOE_TOKEN_DISPATCH_H
#define TRIDENT_MOE_TOKEN_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "src/runtime/comm.h"

/* The plan of one dispatch: who sends how many rows to whom. The arrays are views into
 * memory the caller owns; token_exchange_counts fills everything but kept. */
typedef struct {
    int P, me, El;      /* ep size, this rank in it, experts per rank */
    size_t C;           /* floats per row */
    size_t max_rows_in; /* rows order[] and the receive buffers have room for */
    int64_t *kept;      /* (E) this rank's kept pairs per expert: the rows it sends */
    int64_t *recv_cnt;  /* (P, El) rows from rank s for local expert l */
    size_t *send_rows;  /* (P) rows to rank j */
    size_t *recv_rows;  /* (P) rows from rank s */
    size_t rows_out;    /* M = Σ send_rows */
    size_t rows_in;     /* R = Σ recv_rows */
    int32_t *order;     /* (max_rows_in) expert-order position of the i-th row in source order */
    size_t *sc, *sd;    /* (P) send counts / displacements for comm_all_to_all_v (elements) */
    size_t *rc, *rd;    /* (P) receive counts / displacements */
} moe_dispatch;

/* Assigns the pairs of expert (N,K) to rows: slot (N·K) = the pair's row in expert order, or
 * -1 when dropped (over `capacity` pairs of its expert, counted in pair order t·K+k); perm (M)
 * = the pair of each row; kept (E) = rows per expert; *dropped = pairs dropped. Returns M.
 * A counting sort: the loop steps it took, counted into *steps (NULL: not told), are
 * 2·(N·K + E). */
size_t token_permute_plan(int32_t *slot, int32_t *perm, int64_t *kept, int64_t *dropped,
                          const int32_t *expert, size_t N, size_t E, int K, size_t capacity,
                          size_t *steps);

/* rows (M,C): row i = in[token of pair perm[i]]. */
void token_permute(float *rows, const float *in, const int32_t *perm, size_t M, int K, size_t C);
/* dinp (N,C) += for every row i: drows[i] into its token's row (the backward of the copy). */
void token_permute_backward(float *dinp, const float *drows, const int32_t *perm, size_t M, int K,
                            size_t C);

/* The counts all-to-all over ep (NULL: P = 1, a copy): fills d from d->kept. */
void token_exchange_counts(moe_dispatch *d, comm_group *ep);

/* order (R): the expert-order position (l, s, token order) of each row in source order
 * (s, l, token order), from recv_cnt (P, El); cursor (P) is scratch. Returns its loop steps,
 * P·El + P·El + R: linear in the rows and the experts. */
size_t token_expert_order(int32_t *order, const int64_t *recv_cnt, int P, int El, size_t *cursor);

/* rows (M,C) in expert order -> sorted (R,C): the rows of this rank's experts in expert
 * order (l, s, token order); work (R,C) receives them in source order first. */
void token_dispatch(moe_dispatch *d, comm_group *ep, float *sorted, const float *rows, float *work);
/* The way back: sorted (R,C) -> rows (M,C) at the ranks that sent them; work (R,C). */
void token_return(moe_dispatch *d, comm_group *ep, float *rows, const float *sorted, float *work);

/* out (N,C) = Σ over t's kept choices k: scores[t, expert[t,k]] · rows[slot[t,k]]. */
void token_combine(float *out, const float *rows, const int32_t *slot, const int32_t *expert,
                   const float *scores, size_t N, size_t E, int K, size_t C);
/* Backward of token_combine: drows (M,C) = score · dout[t]; dscores (N,E) += dout[t] · row. */
void token_combine_backward(float *drows, float *dscores, const float *dout, const float *rows,
                            const int32_t *slot, const int32_t *expert, const float *scores,
                            size_t N, size_t E, int K, size_t C);

/* Bytes to other ranks: the counts exchange, one dispatch, one return (the header's table). */
size_t token_counts_bytes(const moe_dispatch *d);
size_t token_dispatch_bytes(const moe_dispatch *d);
size_t token_return_bytes(const moe_dispatch *d);

#endif /* TRIDENT_MOE_TOKEN_DISPATCH_H */
