/* sampler.c — greedy, Gumbel-max, top-k and top-p over vocabulary shards. See sampler.h. */
#include "src/infer/sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "src/core/check.h"
#include "src/core/rng.h"
#include "src/runtime/comm.h"

/* A proposal travels as two floats: the (scaled, perhaps perturbed) logit and the global
 * token index (exact in a float: indices are far below 2^24). */
typedef struct {
    float value, index;
} candidate;

enum { STREAM_GUMBEL = 0x6762, STREAM_DRAW = 0x6472 }; /* rng streams: "gb", "dr" */

bool sampler_config_check(const sampler_config *s, int real_vocab, char *err, size_t errlen) {
    if (!(s->temperature >= 0.0f) || !isfinite(s->temperature)) {
        snprintf(err, errlen, "--temperature %g must be a finite number >= 0 (0 = greedy)",
                 s->temperature);
        return false;
    }
    if (s->temperature > 0.0f && s->temperature < SAMPLER_MIN_TEMPERATURE) {
        snprintf(
            err, errlen,
            "--temperature %g must be 0 (greedy) or at least %g (smaller ones overflow logit / T)",
            s->temperature, SAMPLER_MIN_TEMPERATURE);
        return false;
    }
    if (s->top_k < 0 || s->top_k > real_vocab) {
        snprintf(err, errlen, "--top-k %d must be between 0 (off) and the vocabulary size %d",
                 s->top_k, real_vocab);
        return false;
    }
    if (!(s->top_p > 0.0f && s->top_p <= 1.0f)) {
        snprintf(err, errlen, "--top-p %g must be in (0, 1] (1 = off)", s->top_p);
        return false;
    }
    return true;
}

/* Higher value first; on equal values the lower index (the serial argmax's choice). */
static int better(const candidate *a, const candidate *b) {
    if (a->value != b->value) return a->value > b->value;
    return a->index < b->index;
}

static int cmp_candidates(const void *pa, const void *pb) {
    const candidate *a = pa, *b = pb;
    return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

/* This shard's k best of value(j) over its real columns, sorted; missing slots are -inf. */
static void propose(candidate *out, int k, const float *logits, size_t Vl, int64_t v_start,
                    int64_t real_vocab, float inv_temp, const sampler_config *s, uint64_t step,
                    bool gumbel) {
    for (int i = 0; i < k; i++) out[i] = (candidate){-INFINITY, 1e9f};
    for (size_t j = 0; j < Vl && v_start + (int64_t)j < real_vocab; j++) {
        const uint64_t g = (uint64_t)v_start + j;
        candidate c = {logits[j] * inv_temp, (float)g};
        if (!isfinite(c.value)) c.value = INFINITY; /* an overflow: proposed first, then refused */
        if (gumbel) {
            const double u = ((double)(rng_bits(s->seed, STREAM_GUMBEL + step * 7919u, g) >> 11) +
                              0.5) *
                             (1.0 / 9007199254740992.0); /* (0, 1) */
            c.value += (float)(-log(-log(u)));
        }
        if (!better(&c, &out[k - 1])) continue;
        int i = k - 1; /* insertion into the sorted list of k */
        while (i > 0 && better(&c, &out[i - 1])) {
            out[i] = out[i - 1];
            i--;
        }
        out[i] = c;
    }
}

int32_t sampler_pick(const sampler_config *s, const float *logits, size_t Vl, int64_t v_start,
                     int64_t real_vocab, uint64_t step, comm_group *tp) {
    const int ntp = tp ? comm_size(tp) : 1;
    const bool greedy = s->temperature == 0.0f;
    const bool nucleus = !greedy && s->top_p < 1.0f;
    int k; /* proposals per shard */
    if (greedy) k = 1;
    else if (s->top_k > 0) k = s->top_k;
    else if (nucleus) k = (int)Vl;
    else k = 1; /* Gumbel-max */
    const bool gumbel = !greedy && s->top_k == 0 && !nucleus;
    const float inv_temp = greedy ? 1.0f : 1.0f / s->temperature;

    candidate *all = callocCheck((size_t)k * (size_t)ntp, sizeof *all);
    candidate *mine = callocCheck((size_t)k, sizeof *mine);
    propose(mine, k, logits, Vl, v_start, real_vocab, inv_temp, s, step, gumbel);
    if (tp && ntp > 1) comm_all_gather(tp, mine, all, 2 * (size_t)k, COMM_FLOAT32);
    else
        for (int i = 0; i < k; i++) all[i] = mine[i];
    free(mine);
    /* The one finite check of generation, on the logits where they are made: a logit that is
     * not finite (NaN, ±inf, or one that overflowed divided by the temperature) was proposed
     * first as +inf by its shard, so every tp rank sees it here and stops alike. */
    if (isinf(all[0].value) && all[0].value > 0)
        die("trident generate: the logit of token %.0f is not finite at generation step %llu: "
            "the checkpoint's parameters are finite but make the model's outputs overflow single "
            "precision, so no token can be sampled",
            (double)all[0].index, (unsigned long long)step);
    const size_t n = (size_t)k * (size_t)ntp;
    qsort(all, n, sizeof *all, cmp_candidates); /* the same order on every layout */

    int32_t tok;
    if (greedy || gumbel) {
        tok = (int32_t)all[0].index;
    } else {
        size_t m = s->top_k > 0 && (size_t)s->top_k < n ? (size_t)s->top_k : n;
        while (m > 1 && !isfinite(all[m - 1].value)) m--; /* drop empty slots */
        /* probabilities of the m candidates (softmax of value = logit / T) */
        double *p = callocCheck(m, sizeof *p), sum = 0.0;
        for (size_t i = 0; i < m; i++)
            sum += (p[i] = exp((double)all[i].value - (double)all[0].value));
        size_t keep = m;
        if (nucleus) { /* shortest prefix whose mass reaches top_p */
            double mass = 0.0;
            for (keep = 0; keep < m;) {
                mass += p[keep++] / sum;
                if (mass >= (double)s->top_p) break;
            }
        }
        double kept = 0.0;
        for (size_t i = 0; i < keep; i++) kept += p[i];
        const double u = (double)rng_uniform(s->seed, STREAM_DRAW, step) * kept;
        double acc = 0.0;
        size_t pick = keep - 1;
        for (size_t i = 0; i < keep; i++) {
            acc += p[i];
            if (u < acc) {
                pick = i;
                break;
            }
        }
        tok = (int32_t)all[pick].index;
        free(p);
    }
    free(all);
    CHECK(tok >= 0 && tok < real_vocab,
          "sampler: picked a padding token (no real vocabulary on any shard?)");
    return tok;
}
