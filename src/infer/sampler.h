/* sampler.h — the next token from logits cut by vocabulary across tensor-parallel ranks.
 *
 * Each rank of the TP group holds the logits of its vocabulary rows [v_start, v_start + Vl)
 * (src/tp/layers.h: the head is column-parallel and never gathers). Sampling gathers only what
 * the rule needs, and every rank ends with the same token (no broadcast afterwards):
 *
 *   temperature 0 (greedy)    each shard proposes its best (value, index): tp pairs are
 *                             exchanged (a MAXLOC), the highest value wins, ties -> lowest index.
 *   --top-k K                 each shard proposes its K best: K·tp pairs; every rank keeps the
 *                             same global K best and samples among them.
 *   --temperature T only      Gumbel-max: each shard adds noise g = -log(-log u) to logit/T,
 *                             where u is drawn from (seed, step, GLOBAL token index), and proposes
 *                             its best: again one pair per rank. argmax(logit/T + g) is an exact
 *                             sample of softmax(logit/T), and its noise does not depend on the
 *                             layout, so a seed gives the same text serially and in parallel.
 *   --top-p P (no --top-k)    the nucleus needs the global order of all probabilities, so every
 *                             shard contributes all its Vl (value, index) pairs (the vocabulary
 *                             is 256 bytes here: 2 KiB). With --top-k too, only the K·tp pairs.
 *
 * Sampling among candidates (top-k, top-p): candidates sorted by (logit desc, index asc) — the
 * same order on every layout — probabilities softmax(logit/T), the nucleus is the shortest
 * prefix whose mass reaches P, and one uniform draw u(seed, step) picks by inverse CDF.
 * Padded vocabulary entries (index >= real_vocab) are never candidates.
 *
 * Not here: the model (kv_cache.h), the generation loop (generate.h).
 */
#ifndef TRIDENT_INFER_SAMPLER_H
#define TRIDENT_INFER_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct comm_group comm_group;

#define SAMPLER_MIN_TEMPERATURE 0.01 /* the smallest temperature above 0 (greedy) */

typedef struct {
    float temperature; /* 0 = greedy; >= SAMPLER_MIN_TEMPERATURE divides the logits */
    int top_k;         /* 0 = off; else keep the K most likely tokens */
    float top_p;       /* (0, 1]; 1 = off */
    uint64_t seed;
} sampler_config;

/* Checks the values; writes one sentence naming the flag, its value and the rule. */
bool sampler_config_check(const sampler_config *s, int real_vocab, char *err, size_t errlen);

/* The token drawn for generation step `step` from this rank's logits shard (Vl), columns
 * [v_start, v_start + Vl) of the padded vocabulary, of which [0, real_vocab) are real.
 * Collective over tp (NULL = serial): every member calls, every member gets the same token.
 * A real column whose logit is not finite ends the program (die, one line naming the token
 * and the step) on every member alike: an overflowed model has no distribution to sample. */
int32_t sampler_pick(const sampler_config *s, const float *logits, size_t Vl, int64_t v_start,
                     int64_t real_vocab, uint64_t step, comm_group *tp);

#endif /* TRIDENT_INFER_SAMPLER_H */
