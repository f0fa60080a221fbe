/* ring_attention.h — causal self-attention when the sequence is cut among the ranks of a
 * context-parallel group (ring attention, with Megatron's zig-zag layout of zigzag.h).
 *
 * Each cp rank holds Tl = T/cp positions of each of the B sequences: its queries, keys and
 * values. A query needs the keys and values of every earlier position, most of which live on
 * other ranks, so K and V travel around the group: rank r sends to r+1 and receives from r−1,
 * cp−1 times, and at step s holds the K/V of rank (r−s) mod cp. Nothing ever holds the (T, T)
 * scores; what a query row keeps between steps is its output so far and the log-sum-exp of
 * its scores so far, and each block's partial result is merged in with the log-sum-exp rule:
 *
 *   lse = log(e^lse_a + e^lse_b),   o = e^(lse_a − lse) · o_a + e^(lse_b − lse) · o_b
 *
 * which is exactly the softmax over the keys of both parts. (o_a, lse_a: so far; o_b, lse_b:
 * the block's own normalised output and log-sum-exp.)
 *
 * Blocks. A rank's rows are two chunks of T/(2cp) positions, and so are the K/V it holds, so
 * every step has 2 × 2 (query chunk, key chunk) blocks; causality (a query at position i sees
 * keys at positions <= i) makes each one full, diagonal (the same chunk: lower triangle) or
 * empty (every key after every query: skipped, nothing computed). cp = 2, chunks 0..3, rank 0
 * holds chunks 0 and 3, rank 1 holds 1 and 2:
 *
 *                    key chunk  0   1   2   3
 *      query chunk 0 (rank 0)   ◣   .   .   .      ◣ diagonal   # full   . skipped
 *                  1 (rank 1)   #   ◣   .   .
 *                  2 (rank 1)   #   #   ◣   .
 *                  3 (rank 0)   #   #   #   ◣
 *
 *      step 0, own K/V:    rank 0: 0×0 ◣, 3×0 #, 3×3 ◣     rank 1: 1×1 ◣, 2×1 #, 2×2 ◣
 *      step 1, neighbour:  rank 0: 3×1 #, 3×2 #            rank 1: 1×0 #, 2×0 #
 *
 * For any cp, step 0 computes one full and two diagonal blocks and every later step exactly
 * two full blocks, on every rank: the zig-zag balances the work (ring_attention_score_entries).
 * A block is one sgemm per (b, h) for the scores and one for P·V.
 *
 * Backward (flash-attention style): the probabilities are recomputed block by block from Q, K
 * and the kept lse, P = exp(scale·QKᵀ − lse), with D = rowsum(dout ∘ out) per query row:
 *   dP = dout·Vᵀ,  dS = P ∘ (dP − D) · scale,  dQ += dS·K,  dK += dSᵀ·Q,  dV += Pᵀ·dout.
 * dQ stays home. K and V go around the ring again, this time in the OPPOSITE direction to the
 * forward — rank r sends to r−1 and receives from r+1, as Megatron's backward does — and the
 * partial dK and dV of each block travel with it, each holder adding its queries' share. At
 * step s rank r holds the block of rank (r+s) mod cp; after the last step it holds the block
 * of rank r−1, and one more hop (r → r−1, dK and dV only) takes the finished sums home.
 *
 * Messages: one comm_sendrecv on the cp group per ring step (tag = step), whose buffer packs
 * everything that travels, each part (B, Tl, NH·HS) contiguous:
 *   forward   [K | V]            cp−1 steps
 *   backward  [K | V | dK | dV]  cp−1 steps, then [dK | dV] once (the way home)
 * so with X = B·Tl·NH·HS·4 bytes (one of Q, K or V of this rank), per rank and call:
 *   forward bytes  = 2·(cp−1)·X
 *   backward bytes = (4·(cp−1) + 2)·X          (0 at cp = 1)
 * Every rank sends the same; each message goes to a neighbour.
 *
 * cp == NULL or a group of size 1: the same arithmetic on the local sequence (one chunk, any
 * Tl), no message. Scratch is allocated inside each call (the travelling buffers: 4·X or 8·X
 * bytes, and a few (T/2cp)² blocks) and freed before it returns; it comes from the device
 * allocator (src/device/device_memory.h, label "ring attention scratch": the cpu device is
 * host memory), so the allocator's peak sees it — a transient on top of whatever is held,
 * ring_attention_scratch_bytes at most, which `trident memory` counts as a temporary.
 *
 * Not here: which positions a rank holds (zigzag.h), trace labels and the choice between the
 * ring and local attention (attention.h, what a block calls), the rest of the transformer
 * layer, and device memory (these are host fp32 buffers; kernels/ops.h attention_forward is the
 * serial reference).
 */
#ifndef TRIDENT_CP_RING_ATTENTION_H
#define TRIDENT_CP_RING_ATTENTION_H

#include <stddef.h>

typedef struct comm_group comm_group;

/* Causal self-attention over this rank's Tl = T/cp positions (zig-zag) of B sequences, NH
 * heads of size HS.
 *   qkv (B,Tl,3·NH·HS): [Q | K | V] as kernels/ops.h attention_forward (head h at columns h·HS
 *       of each part), rows in this rank's zig-zag order.
 *   out (B,Tl,NH·HS): the attention output, same rows.
 *   lse (B,NH,Tl): log-sum-exp of each query row's scaled scores (scale 1/sqrt(HS)) over every
 *       key it attends to; the backward recomputes the probabilities from it.
 * Every member of cp calls it with the same B, Tl, NH, HS. Tl must be even when cp > 1. */
void ring_attention_forward(comm_group *cp, float *out, float *lse, const float *qkv, size_t B,
                            size_t Tl, size_t NH, size_t HS);

/* dqkv (B,Tl,3·NH·HS) += the gradient of the forward's out with respect to qkv, given
 * dout (B,Tl,NH·HS) and the forward's qkv, out and lse. ACCUMULATES, like kernels/ops.h. */
void ring_attention_backward(comm_group *cp, float *dqkv, const float *dout, const float *qkv,
                             const float *out, const float *lse, size_t B, size_t Tl, size_t NH,
                             size_t HS);

/* The compute of rank `rank` of a ring of `size` without the ring: every step computes the
 * blocks that rank would, against the K/V it holds (standing in for the others'), and nothing
 * is sent. What a rank of cp spends computing, for timing it on one process
 * (src/plan/calibration.c); the outputs are not attention at size > 1. Same shapes and rules. */
void ring_attention_forward_alone(int rank, int size, float *out, float *lse, const float *qkv,
                                  size_t B, size_t Tl, size_t NH, size_t HS);
void ring_attention_backward_alone(int rank, int size, float *dqkv, const float *dout,
                                   const float *qkv, const float *out, const float *lse, size_t B,
                                   size_t Tl, size_t NH, size_t HS);

/* Exact bytes this rank sends on the cp group in one forward, and in one backward (the
 * formulas above; what comm_bytes_sent(cp) counts). */
size_t ring_attention_forward_bytes(size_t B, size_t Tl, size_t NH, size_t HS, int cp_size);
size_t ring_attention_backward_bytes(size_t B, size_t Tl, size_t NH, size_t HS, int cp_size);

/* The most bytes of scratch one call holds at once (the backward's: the travelling buffers
 * [K | V | dK | dV] twice, D, the block scratch; the forward holds less). What the device
 * allocator's peak rises by while a call runs. */
size_t ring_attention_scratch_bytes(size_t B, size_t Tl, size_t NH, size_t HS, int cp_size);

/* (query, key) score entries whose products rank cp_rank computes in one forward, per sequence
 * and head (skipped blocks count 0, diagonal ones whole): the work the zig-zag balances. The
 * same count decides which blocks the forward and backward compute. (2·cp + 1)·(Tl/2)² on
 * every rank when cp > 1; Tl² at cp = 1. */
size_t ring_attention_score_entries(size_t Tl, int cp_rank, int cp_size);

#endif /* TRIDENT_CP_RING_ATTENTION_H */
