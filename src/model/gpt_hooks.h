/* gpt_hooks.h — where the model tells an optimizer "these parameters are about to be read"
 * and "these gradients are final": the two points overlapped communication hangs on.
 *
 *   forward of a chunk:   params_needed(embedding) -> block l: params_needed(l), forward ...
 *                         -> params_needed(head: lnf, then the tied wte)
 *   weight backward:      head's W -> grads_ready(lnf) -> block l's W: grads_ready after each
 *                         of its weights, in W's order (fcproj, fc, ln2, proj, qkv, ln1) ...
 *                         -> embedding's W -> grads_ready(wte, wpe)
 *
 * A hook gets an element range [begin, end) of the process's parameter (= gradient) buffer,
 * so it needs to know nothing of layers. grads_ready fires only while armed
 * (gpt_hooks_arm_grads): the executor arms it around the LAST backward of each chunk in a
 * step, after which nothing adds to that chunk's gradients. The head's copy of a tied wte is
 * never reported ready by the head (its sum over the embedding group comes later, in the
 * optimizer); a chunk holding both ends reports wte with the embedding, after both parts.
 * params_needed fires on every forward (cheap when nothing is pending). Gradients are reported
 * weight by weight, as Megatron hooks every parameter: a bucket of the last block's fcproj can
 * start its reduction while that block's other weight gradients are computed, so what is left
 * for after the backward (the exposed tail) is the last few weights, not a whole block
 * (bench model, dp 2, side by side on a quiet machine: 0.3 ms exposed per step reported weight
 * by weight, 2.9 ms block by block, 31 ms blocking).
 *
 * The hooks are process-wide (like comm_set_trace_hook): one model per process trains at a
 * time. NULL hooks (the default) cost one compare per layer.
 *
 * Not here: what the hooks do (src/zero/overlap.h launches and waits for bucket collectives).
 */
#ifndef TRIDENT_MODEL_GPT_HOOKS_H
#define TRIDENT_MODEL_GPT_HOOKS_H

#include <stdbool.h>
#include <stddef.h>

#include "src/model/gpt.h"

typedef struct {
    void (*params_needed)(void *ctx, size_t begin, size_t end);
    void (*grads_ready)(void *ctx, size_t begin, size_t end);
    void *ctx;
} gpt_hooks;

/* Installs the hooks (copied); NULL removes them. */
void gpt_hooks_set(const gpt_hooks *h);
/* grads_ready fires only between arm(true) and arm(false). */
void gpt_hooks_arm_grads(bool armed);

/* Called by gpt.c. part: a global block index, or GPT_HOOK_EMBEDDING / GPT_HOOK_HEAD. */
enum { GPT_HOOK_EMBEDDING = -1, GPT_HOOK_HEAD = -2 };
void gpt_hooks_params_needed(const gpt_chunk *c, int part);
/* part: GPT_HOOK_EMBEDDING or GPT_HOOK_HEAD (blocks report weight by weight, below). */
void gpt_hooks_grads_ready(const gpt_chunk *c, int part);
/* The gradients of one weight and its bias (kinds kind_w, kind_b, adjacent in the buffer) of
 * global block `layer` are final. */
void gpt_hooks_block_grads_ready(const gpt_chunk *c, int layer, int kind_w, int kind_b);

#endif /* TRIDENT_MODEL_GPT_HOOKS_H */
