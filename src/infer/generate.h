/* generate.h — autoregressive generation through a (tensor- and pipeline-) parallel model.
 *
 * One step per new token. A step runs the new positions through every pipeline stage:
 *
 *   step 0 (prefill):  the prompt's P positions         stage 0 -> 1 -> ... -> last
 *   step s > 0:        one position (the last token)    (n, C) activations per message
 *
 *   stage 0           stage 1 ... last stage
 *   tokens -> blocks ─(n,C)─> blocks ─(n,C)─> blocks -> head -> logits shard -> sampler -> token
 *      ^                                                                          |
 *      └────────────────────── token (one int32), last stage -> stage 0 ──────────┘
 *
 * Each rank keeps a KV cache of its blocks and its heads (kv_cache.h), so a step costs its
 * new positions only; the tensor-parallel ranks of a stage sample together (sampler.h) and
 * agree on the token without a broadcast. The ranks of stage 0 feed the token back; the
 * others only count steps, so every rank knows when the run ends without a message.
 *
 * The context is the model's seq_len positions (the rows of wpe). Positions 0 .. T-1 can be
 * fed, so at most T - P + 1 tokens follow a P-token prompt; generation stops there (the
 * result says so) — no sliding window: positions past T were never trained.
 *
 * Not here: loading the model (src/cli/generate_cmd.c builds it the way `trident eval` does),
 * printing (the caller's emit callback), data parallelism (one model replica).
 */
#ifndef TRIDENT_INFER_GENERATE_H
#define TRIDENT_INFER_GENERATE_H

#include <stdbool.h>
#include <stdint.h>

#include "src/infer/sampler.h"
#include "src/model/local_model.h"
#include "src/runtime/parallel_state.h"

typedef struct {
    int max_new_tokens;
    sampler_config sampling;
    bool no_cache; /* recompute the whole prefix every step (the benchmark's contrast only) */
} generate_config;

typedef struct {
    int prompt_tokens;
    int new_tokens;    /* tokens generated */
    bool context_full; /* stopped early: the model's context has no room for more */
    double prefill_s;  /* wall time of step 0, prompt to first token, on this rank */
    double decode_s;   /* wall time of the steps after it */
} generate_result;

/* Generates up to g->max_new_tokens tokens after prompt[0 .. nprompt-1] (byte tokens).
 * Collective over the model-parallel ranks of ps (NULL = serial); the model holds one chunk
 * per rank (no interleaving). out (max_new_tokens) receives the tokens on the ranks of the
 * first and the last stage; emit (may be NULL) is called with each token, as soon as it is
 * known, on the rank with tp_rank 0 of the first stage. Dies when the prompt does not fit. */
generate_result generate_run(const local_model *m, parallel_state *ps, const generate_config *g,
                             const int32_t *prompt, int nprompt, int32_t *out,
                             void (*emit)(int32_t token, void *ctx), void *ctx);

#endif /* TRIDENT_INFER_GENERATE_H */
