/* generate.c — the generation loop across pipeline stages. See generate.h. */
#include "src/infer/generate.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/infer/kv_cache.h"
#include "src/runtime/comm.h"

enum { TAG_ACTIVATION = 1, TAG_TOKEN = 2 };

generate_result generate_run(const local_model *m, parallel_state *ps, const generate_config *g,
                             const int32_t *prompt, int nprompt, int32_t *out,
                             void (*emit)(int32_t token, void *ctx), void *ctx) {
    CHECK(m->nchunks == 1, "generate: one model chunk per rank (no interleaved layout)");
    const gpt_chunk *c = &m->chunks[0];
    const int T = c->cfg.seq_len;
    if (nprompt < 1) die("trident generate: the prompt is empty (give at least one byte)");
    if (nprompt > T)
        die("trident generate: the prompt has %d tokens, the model's context (--seq-length) is %d",
            nprompt, T);
    const bool first = !ps || ps->is_first_stage, last = !ps || ps->is_last_stage;
    const int pp_rank = ps ? ps->pp_rank : 0, pp_size = ps ? comm_size(ps->pp) : 1;
    comm_group *tp = ps ? ps->tp : NULL;
    const bool emitter = first && (!ps || ps->tp_rank == 0);
    const size_t C = (size_t)c->cfg.hidden;

    /* T - P + 1 tokens fit: the last one is sampled from position T-1 and never fed. */
    int budget = T - nprompt + 1;
    generate_result r = {.prompt_tokens = nprompt};
    const int want = g->max_new_tokens < budget ? g->max_new_tokens : budget;
    r.context_full = g->max_new_tokens > budget;

    const int max_n = g->no_cache ? T : nprompt;
    kv_cache *kv = kv_cache_create(c, max_n);
    int32_t *seq = callocCheck((size_t)T + 1, sizeof *seq); /* prompt + generated (stage 0, last) */
    memcpy(seq, prompt, (size_t)nprompt * sizeof *seq);
    float *x = callocCheck((size_t)max_n * C, sizeof *x);
    float *logits = callocCheck(c->Vl, sizeof *logits);
    int len = nprompt; /* tokens known so far */

    double t0 = time_now();
    for (int s = 0; s < want; s++) {
        /* the positions this step feeds: the prompt, then the last token; no cache: all */
        int begin = s == 0 ? 0 : len - 1, n = len - begin;
        if (g->no_cache) {
            kv_cache_reset(kv);
            begin = 0;
            n = len;
        }
        if (!first) comm_recv(ps->pp, x, (size_t)n * C, COMM_FLOAT32, pp_rank - 1, TAG_ACTIVATION);
        kv_cache_forward(c, m->params, kv, seq + begin, x, last ? NULL : x, last ? logits : NULL,
                         NULL, n, tp);
        if (!last) comm_send(ps->pp, x, (size_t)n * C, COMM_FLOAT32, pp_rank + 1, TAG_ACTIVATION);
        int32_t tok = 0;
        if (last) {
            tok = sampler_pick(&g->sampling, logits, c->Vl, c->v_start, c->cfg.real_vocab,
                               (uint64_t)s, tp);
            if (!first) comm_send(ps->pp, &tok, 1, COMM_INT32, 0, TAG_TOKEN);
        } else if (first) {
            comm_recv(ps->pp, &tok, 1, COMM_INT32, pp_size - 1, TAG_TOKEN);
        }
        if (first || last) {
            seq[len] = tok;
            out[s] = tok;
        }
        len++;
        r.new_tokens++;
        if (emitter && emit) emit(tok, ctx);
        if (s == 0) {
            r.prefill_s = time_now() - t0;
            t0 = time_now();
        }
    }
    r.decode_s = want > 1 ? time_now() - t0 : 0.0;
    if (ps) comm_wait_sends(ps->pp);
    free(logits);
    free(x);
    free(seq);
    kv_cache_destroy(kv);
    return r;
}
