/* kv_cache.h — the key/value cache of one model chunk: a forward that costs new positions only.
 *
 * Training runs a chunk over a whole window (src/model/gpt.h: gpt_forward). Generation adds one
 * position at a time; rerunning the whole prefix for each new token would cost O(t) per token.
 * Causal attention lets a position's keys and values never change once computed, so the cache
 * keeps them, per block of the chunk and per head this rank holds:
 *
 *   K, V of block i:  (NHl, Tmax, HS) each     Tmax = the model's seq_len (rows of wpe)
 *   cache memory:     [K_0 | V_0 | K_1 | V_1 | ... ]  one allocation, views per block
 *
 * kv_cache_forward runs n NEW positions [len, len + n) through the chunk: n = prompt length for
 * the prefill, then n = 1 per token. Each new position's Q attends over the cached K/V of
 * positions 0 .. its own (written just before), so the result equals gpt_forward over the whole
 * prefix (to fp32 rounding; tests/infer/kv_cache_test.c holds the two against each other).
 * Under tensor parallelism the layers are the same Megatron layers as training
 * (src/tp/layers.h): QKV and fc column-parallel, proj and fcproj row-parallel (one all-reduce
 * each), the embedding vocab-parallel; this rank caches only its own heads.
 * MoE chunks (cfg.num_experts > 0) run the MoE layer (src/moe/moe_layer.h) in place of the MLP
 * on the n new rows, all experts on this rank (ep 1; every TP rank runs it whole, as training
 * does): dropless routing decides each token alone, so the result is the full forward's; with a
 * capacity factor a token competes only with the other rows of its call.
 *
 * Device: the cpu device only (the attention over the cache is a plain C loop here; a CUDA twin
 * would be one more kernel). kv_cache_create dies with a clear message on another device.
 *
 * Not here: sampling (sampler.h), the pipeline loop and its messages (generate.h).
 */
#ifndef TRIDENT_INFER_KV_CACHE_H
#define TRIDENT_INFER_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "src/model/gpt.h"

typedef struct kv_cache kv_cache;

/* A cache for chunk c, room for the model's seq_len positions, work space for up to
 * max_new positions per call (the prompt length; 1 is enough for decoding alone). */
kv_cache *kv_cache_create(const gpt_chunk *c, int max_new);
void kv_cache_destroy(kv_cache *kv);
/* Positions cached so far. */
int kv_cache_length(const kv_cache *kv);
/* Forgets every position (the next forward starts at position 0). */
void kv_cache_reset(kv_cache *kv);

/* Forward of n new positions through the chunk, appending their K/V to the cache.
 *   tokens (n): read on the first stage (has_embedding).
 *   x_in (n,C): the previous stage's output (other stages).
 *   x_out (n,C): this chunk's output for the next stage (not on the last stage; may be NULL).
 *   logits (Vl): on the last stage, this rank's vocabulary shard of the logits of the LAST
 *                of the n positions (columns [v_start, v_start + Vl) of the padded vocabulary).
 *   logits_all (n,Vl): optional (NULL): the shard's logits of all n positions, for tests.
 *   tp: the tensor-parallel group (NULL = serial); every member calls with the same n.
 * Dies when len + n exceeds the model's seq_len or n exceeds max_new. */
void kv_cache_forward(const gpt_chunk *c, const float *params, kv_cache *kv, const int32_t *tokens,
                      const float *x_in, float *x_out, float *logits, float *logits_all, int n,
                      comm_group *tp);

#endif /* TRIDENT_INFER_KV_CACHE_H */
