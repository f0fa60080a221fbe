/* gpt_hooks.h — where the model tells an optimizer "these parameters are about to be read"
 * and "these gradients are final", and where it asks for a unit's storage: the points that
 * overlapped communication and sharded storage (ZeRO-2/3) hang on.
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
 * SHARDED STORAGE. Every read of a unit's parameters (gpt.h, UNITS: wte, wpe, a block, the
 * final norm) and every accumulation into its gradients goes through a span:
 *
 *   gpt_span w = gpt_span_params(c, params, unit, next);   // forward, or B of the backward
 *   ... read gpt_span_of(&w, p) for the unit's tensors p ...
 *   gpt_span_params_done(c, &w);
 *   gpt_span g = gpt_span_grads(c, grads, unit);            // W of the backward
 *   ... += into gpt_span_of(&g, p) ...
 *   gpt_span_grads_done(c, &g);
 *
 * Without storage hooks a span is the unit's place in the process buffers (params + begin,
 * grads + begin) and done does nothing. With them (src/zero/fsdp.h) it is wherever the
 * optimizer keeps the unit: ZeRO-3 all-gathers the parameters into a work buffer and gives it
 * back at done; ZeRO-2/3 hand W a zeroed bucket and reduce-scatter it at done. So a span is
 * valid only until its done, and a pass holds at most one parameter span and one gradient
 * span at a time. `next` is the unit the pass reads after this one (GPT_UNIT_NONE: none
 * known): a hint, on which the hook may start fetching it. A hook returning NULL serves
 * nothing for that chunk (another model's): the process buffers are used.
 *
 * The hooks are the chunk's (gpt_chunk.hooks): whoever keeps the optimizer's state installs
 * them on the chunks of its model (local_model_set_hooks) and every pass finds them there, so a
 * chunk of another model is never served. No hooks (NULL, the default) cost one compare per
 * layer.
 *
 * Not here: what the hooks do (src/zero/overlap.h launches and waits for bucket collectives;
 * src/zero/fsdp.h keeps shards).
 */
#ifndef TRIDENT_MODEL_GPT_HOOKS_H
#define TRIDENT_MODEL_GPT_HOOKS_H

#include <stdbool.h>
#include <stddef.h>

#include "src/model/gpt.h"

struct gpt_hooks {
    void (*params_needed)(void *ctx, size_t begin, size_t end);
    void (*grads_ready)(void *ctx, size_t begin, size_t end);
    void *ctx;
    /* sharded storage (NULL: the process buffers); each returns where element `begin` is */
    float *(*params_get)(void *ctx, const gpt_chunk *c, size_t begin, size_t end, size_t next_begin,
                         size_t next_end); /* next: [0, 0) when none */
    void (*params_done)(void *ctx, const gpt_chunk *c, size_t begin, size_t end);
    float *(*grads_get)(void *ctx, const gpt_chunk *c, size_t begin, size_t end);
    void (*grads_done)(void *ctx, const gpt_chunk *c, size_t begin, size_t end);
    bool grads_armed; /* gpt_hooks_arm_grads */
};

/* grads_ready fires only between arm(true) and arm(false) of the chunk's hooks (nothing to arm
 * on a chunk without hooks). */
void gpt_hooks_arm_grads(const gpt_chunk *c, bool armed);

/* Called by the passes (gpt.c, gpt_block.c, gpt_backward.c). part: a global block index, or
 * GPT_HOOK_EMBEDDING / GPT_HOOK_HEAD. */
enum { GPT_HOOK_EMBEDDING = -1, GPT_HOOK_HEAD = -2 };
void gpt_hooks_params_needed(const gpt_chunk *c, int part);
/* part: GPT_HOOK_EMBEDDING or GPT_HOOK_HEAD (blocks report weight by weight, below). */
void gpt_hooks_grads_ready(const gpt_chunk *c, int part);
/* The gradients of one weight and its bias (kinds kind_w, kind_b, adjacent in the buffer) of
 * global block `layer` are final. */
void gpt_hooks_block_grads_ready(const gpt_chunk *c, int layer, int kind_w, int kind_b);

/* Units, as spans name them: a global block index, or one of these. */
enum { GPT_UNIT_WTE = -3, GPT_UNIT_WPE = -4, GPT_UNIT_LNF = -5, GPT_UNIT_NONE = -6 };

/* A unit's storage while a pass uses it: tensor p of the unit is at at + (p->offset - begin). */
typedef struct {
    float *at;
    size_t begin, end; /* the unit's elements in the process buffer */
    bool hooked;       /* served by a storage hook (done hands it back) */
} gpt_span;

static inline float *gpt_span_of(const gpt_span *s, const gpt_param *p) {
    return s->at + (p->offset - s->begin);
}
/* The element range of a unit of chunk c. */
void gpt_unit_range(const gpt_chunk *c, int unit, size_t *begin, size_t *end);
gpt_span gpt_span_params(const gpt_chunk *c, const float *params, int unit, int next);
void gpt_span_params_done(const gpt_chunk *c, const gpt_span *s);
gpt_span gpt_span_grads(const gpt_chunk *c, float *grads, int unit);
void gpt_span_grads_done(const gpt_chunk *c, const gpt_span *s);

#endif /* TRIDENT_MODEL_GPT_HOOKS_H */
