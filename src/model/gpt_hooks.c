/* gpt_hooks.c — see gpt_hooks.h. */
#include "src/model/gpt_hooks.h"

#include "src/core/check.h"

void gpt_hooks_arm_grads(const gpt_chunk *c, bool armed) {
    if (c->hooks) c->hooks->grads_armed = armed;
}

/* The element range of parameters kind_first..kind_last of `layer` (adjacent in the buffer). */
static void range(const gpt_chunk *c, int kind_first, int kind_last, int layer, size_t *b,
                  size_t *e) {
    const gpt_param *p = gpt_chunk_find(c, kind_first, layer),
                    *q = gpt_chunk_find(c, kind_last, layer);
    CHECK(p && q, "a hook or span names a part this chunk does not hold");
    *b = p->offset;
    *e = q->offset + q->numel;
}

void gpt_hooks_params_needed(const gpt_chunk *c, int part) {
    const gpt_hooks *h = c->hooks;
    if (!h || !h->params_needed) return;
    size_t b, e;
    if (part == GPT_HOOK_EMBEDDING) {
        range(c, GPT_WTE, GPT_WPE, -1, &b, &e);
    } else if (part == GPT_HOOK_HEAD) {
        range(c, GPT_LNF_W, GPT_LNF_B, -1, &b, &e);
        h->params_needed(h->ctx, b, e);
        range(c, GPT_WTE, GPT_WTE, -1, &b, &e);
    } else {
        range(c, GPT_LN1_W, GPT_FCPROJ_B, part, &b, &e);
    }
    h->params_needed(h->ctx, b, e);
}

/* The chunk's hooks when they report gradients now, else NULL. */
static const gpt_hooks *armed(const gpt_chunk *c) {
    const gpt_hooks *h = c->hooks;
    return h && h->grads_ready && h->grads_armed ? h : NULL;
}

void gpt_hooks_grads_ready(const gpt_chunk *c, int part) {
    const gpt_hooks *h = armed(c);
    if (!h) return;
    CHECK(part == GPT_HOOK_EMBEDDING || part == GPT_HOOK_HEAD,
          "a block reports its gradients weight by weight (gpt_hooks_block_grads_ready)");
    size_t b, e;
    if (part == GPT_HOOK_EMBEDDING) range(c, GPT_WTE, GPT_WPE, -1, &b, &e);
    else range(c, GPT_LNF_W, GPT_LNF_B, -1, &b, &e);
    h->grads_ready(h->ctx, b, e);
}

void gpt_hooks_block_grads_ready(const gpt_chunk *c, int layer, int kind_w, int kind_b) {
    const gpt_hooks *h = armed(c);
    if (!h) return;
    size_t b, e;
    range(c, kind_w, kind_b, layer, &b, &e);
    h->grads_ready(h->ctx, b, e);
}

void gpt_unit_range(const gpt_chunk *c, int unit, size_t *b, size_t *e) {
    switch (unit) {
    case GPT_UNIT_WTE: range(c, GPT_WTE, GPT_WTE, -1, b, e); break;
    case GPT_UNIT_WPE: range(c, GPT_WPE, GPT_WPE, -1, b, e); break;
    case GPT_UNIT_LNF: range(c, GPT_LNF_W, GPT_LNF_B, -1, b, e); break;
    default: range(c, GPT_LN1_W, GPT_FCPROJ_B, unit, b, e); break;
    }
}

gpt_span gpt_span_params(const gpt_chunk *c, const float *params, int unit, int next) {
    gpt_span s = {NULL, 0, 0, false};
    gpt_unit_range(c, unit, &s.begin, &s.end);
    if (c->hooks && c->hooks->params_get) {
        size_t nb = 0, ne = 0;
        if (next != GPT_UNIT_NONE) gpt_unit_range(c, next, &nb, &ne);
        s.at = c->hooks->params_get(c->hooks->ctx, c, s.begin, s.end, nb, ne);
        s.hooked = s.at != NULL;
    }
    if (!s.at) {
        CHECK(params != NULL, "the parameters are sharded: read them through the storage hooks");
        s.at = (float *)params + s.begin; /* the model only reads parameter spans */
    }
    return s;
}

void gpt_span_params_done(const gpt_chunk *c, const gpt_span *s) {
    if (s->hooked) c->hooks->params_done(c->hooks->ctx, c, s->begin, s->end);
}

gpt_span gpt_span_grads(const gpt_chunk *c, float *grads, int unit) {
    gpt_span s = {NULL, 0, 0, false};
    gpt_unit_range(c, unit, &s.begin, &s.end);
    if (c->hooks && c->hooks->grads_get) {
        s.at = c->hooks->grads_get(c->hooks->ctx, c, s.begin, s.end);
        s.hooked = s.at != NULL;
    }
    if (!s.at) {
        CHECK(grads != NULL,
              "the gradients are sharded: accumulate them through the storage hooks");
        s.at = grads + s.begin;
    }
    return s;
}

void gpt_span_grads_done(const gpt_chunk *c, const gpt_span *s) {
    if (s->hooked) c->hooks->grads_done(c->hooks->ctx, c, s->begin, s->end);
}
