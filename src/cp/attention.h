/* attention.h — causal self-attention as a block of the GPT runs it: local, when a rank holds
 * whole sequences, or ring attention (ring_attention.h) when a context-parallel group holds
 * their positions between its ranks (zig-zag, zigzag.h).
 *
 *   local   out = softmax(QKᵀ/√HS, causal) V on this rank's sequences; the micro-batch keeps
 *           the probabilities att (B,NH,T,T) for the backward (the device's kernels)
 *   ring    the same rows, K and V travelling around the cp group; the micro-batch keeps each
 *           query row's log-sum-exp (B,NH,T) instead, and the backward recomputes from it
 *
 * Either way the block sees one call forward and one backward; the choice, the sizes of what
 * is kept and the trace labels ("cp ring fwd attn", "cp ring bwd attn") are here.
 *
 * Not here: the ring itself (ring_attention.h), which positions a rank holds (zigzag.h), the
 * heads' split over tensor parallelism (the block passes this rank's NH).
 */
#ifndef TRIDENT_CP_ATTENTION_H
#define TRIDENT_CP_ATTENTION_H

#include <stddef.h>

typedef struct comm_group comm_group;

/* One micro-batch's attention in one block. */
typedef struct {
    comm_group *cp;      /* the context-parallel group; NULL: local */
    size_t B, T, NH, HS; /* B sequences of this rank's T positions; NH heads of size HS */
    int layer;           /* global block index, labelling the ring's messages */
} cp_attention;

/* Floats a micro-batch keeps for the backward (`kept` below): B·NH·T·T locally, B·NH·T in a
 * ring (cp_size > 1). */
size_t cp_attention_kept_floats(size_t B, size_t T, size_t NH, int cp_size);

/* qkv (B,T,3·NH·HS) -> out (B,T,NH·HS); writes kept. */
void cp_attention_forward(const cp_attention *a, float *out, float *kept, const float *qkv);
/* dqkv (B,T,3·NH·HS) += the gradient of out, from dout and the forward's qkv, out and kept.
 * scratch: dev_attention_scratch_floats(T, NH) floats for the local backward (unused in a
 * ring, which allocates its own). */
void cp_attention_backward(const cp_attention *a, float *dqkv, const float *dout, const float *qkv,
                           const float *out, const float *kept, float *scratch);

#endif /* TRIDENT_CP_ATTENTION_H */
