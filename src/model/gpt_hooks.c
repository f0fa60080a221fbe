/* gpt_hooks.c — see gpt_hooks.h. */
#include "src/model/gpt_hooks.h"

#include "src/core/check.h"

static gpt_hooks g_hooks;
static bool g_armed;

void gpt_hooks_set(const gpt_hooks *h) {
    g_hooks = h ? *h : (gpt_hooks){0};
    g_armed = false;
}

void gpt_hooks_arm_grads(bool armed) { g_armed = armed; }

/* The element range of parameters kind_first..kind_last of `layer` (adjacent in the buffer). */
static void range(const gpt_chunk *c, int kind_first, int kind_last, int layer, size_t *b,
                  size_t *e) {
    const gpt_param *p = gpt_chunk_find(c, kind_first, layer),
                    *q = gpt_chunk_find(c, kind_last, layer);
    *b = p->offset;
    *e = q->offset + q->numel;
}

void gpt_hooks_params_needed(const gpt_chunk *c, int part) {
    if (!g_hooks.params_needed) return;
    size_t b, e;
    if (part == GPT_HOOK_EMBEDDING) {
        range(c, GPT_WTE, GPT_WPE, -1, &b, &e);
    } else if (part == GPT_HOOK_HEAD) {
        range(c, GPT_LNF_W, GPT_LNF_B, -1, &b, &e);
        g_hooks.params_needed(g_hooks.ctx, b, e);
        range(c, GPT_WTE, GPT_WTE, -1, &b, &e);
    } else {
        range(c, GPT_LN1_W, GPT_FCPROJ_B, part, &b, &e);
    }
    g_hooks.params_needed(g_hooks.ctx, b, e);
}

void gpt_hooks_grads_ready(const gpt_chunk *c, int part) {
    if (!g_hooks.grads_ready || !g_armed) return;
    CHECK(part == GPT_HOOK_EMBEDDING || part == GPT_HOOK_HEAD,
          "a block reports its gradients weight by weight (gpt_hooks_block_grads_ready)");
    size_t b, e;
    if (part == GPT_HOOK_EMBEDDING) range(c, GPT_WTE, GPT_WPE, -1, &b, &e);
    else range(c, GPT_LNF_W, GPT_LNF_B, -1, &b, &e);
    g_hooks.grads_ready(g_hooks.ctx, b, e);
}

void gpt_hooks_block_grads_ready(const gpt_chunk *c, int layer, int kind_w, int kind_b) {
    if (!g_hooks.grads_ready || !g_armed) return;
    size_t b, e;
    range(c, kind_w, kind_b, layer, &b, &e);
    g_hooks.grads_ready(g_hooks.ctx, b, e);
}
