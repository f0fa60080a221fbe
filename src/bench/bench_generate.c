/* bench_generate.c — the generate suite: what the KV cache buys.
 *
 * In one process, one BLAS thread, the demo's model (src/train/config.c defaults: layers,
 * hidden size, heads, read at run time) with its position table stretched to hold a 16-token
 * prompt and 256 new tokens (the demo's own context is shorter; the cost of a step does not
 * depend on the trained values, so the weights are the initial ones). Greedy generation of
 * 128 and of 256 tokens after the same prompt, alternated and repeated, medians:
 *
 *   with the cache      step s costs one position + attention over s cached positions, so the
 *                       cost per token grows only through that attention term:
 *                         per-token cost (256 new) ÷ per-token cost (128 new)   target ≤ 1.5
 *                       and the totals are about 2× (twice the tokens).
 *   without the cache   step s reruns the whole prefix (16 + s positions): the per-token cost
 *                       grows with the length — shown for contrast (measured once each).
 *
 * Not here: multi-rank generation (tests/infer/generate_test.c holds every layout to the
 * serial text; speed under mpirun is printed by `trident generate` itself).
 */
#include <stdio.h>
#include <stdlib.h>

#include "src/bench/bench.h"
#include "src/core/check.h"
#include "src/device/device.h"
#include "src/infer/generate.h"
#include "src/model/local_model.h"
#include "src/train/config.h"

enum { PROMPT = 16, SHORT = 128, LONG = 256 };

/* Wall time of one greedy generation of `n` tokens (prefill included). */
static double time_generation(const local_model *m, const int32_t *prompt, int n, bool no_cache) {
    generate_config g = {.max_new_tokens = n, .sampling = {0.0f, 0, 1.0f, 1}, .no_cache = no_cache};
    int32_t *out = callocCheck((size_t)n, sizeof *out);
    generate_result r = generate_run(m, NULL, &g, prompt, PROMPT, out, NULL, NULL);
    CHECK(r.new_tokens == n, "bench generate: the context did not hold the tokens asked for");
    free(out);
    return r.prefill_s + r.decode_s;
}

void bench_generate(bench_ctx *ctx) {
    train_config c;
    train_config_defaults(&c);
    const int T = c.seq_length > PROMPT + LONG ? c.seq_length : PROMPT + LONG;
    gpt_config g = {.vocab_size = gpt_padded_vocab(256, c.make_vocab_size_divisible_by, 1),
                    .real_vocab = 256,
                    .seq_len = T,
                    .num_layers = c.num_layers,
                    .hidden = c.hidden_size,
                    .num_heads = c.num_attention_heads};
    device_set_threads(1);
    local_model *m = local_model_create(&g, 1, 0, 1, 0, 1, NULL, (uint64_t)c.seed);
    int32_t prompt[PROMPT];
    for (int i = 0; i < PROMPT; i++) prompt[i] = 'a' + (i * 7) % 16;

    const int repeats = ctx->quick ? 3 : 9;
    double t_short[16], t_long[16];
    time_generation(m, prompt, SHORT, false); /* warm-up */
    for (int r = 0; r < repeats; r++) {
        t_short[r] = time_generation(m, prompt, SHORT, false);
        t_long[r] = time_generation(m, prompt, LONG, false);
    }
    const double s = bench_median(t_short, repeats), l = bench_median(t_long, repeats);
    const double per_token = (l / LONG) / (s / SHORT);
    bench_row_max(ctx->report, "generate", "KV cache: cost per token, 256 ÷ 128 new tokens",
                  per_token, "%.2f", 1.5);
    bench_row_info(ctx->report, "generate", "KV cache: total time, 256 ÷ 128 new tokens", l / s,
                   "%.2f");
    bench_note(
        ctx->report, "generate",
        "L=%d C=%d NH=%d (the demo's model), context %d, prompt %d, greedy, 1 thread, "
        "median of %d: 128 new tokens %.1f ms (%.0f tokens/s), 256 new %.1f ms (%.0f tokens/s)",
        c.num_layers, c.hidden_size, c.num_attention_heads, T, PROMPT, repeats, 1e3 * s, SHORT / s,
        1e3 * l, LONG / l);
    if (!ctx->quick) {
        const double ns = time_generation(m, prompt, SHORT, true),
                     nl = time_generation(m, prompt, LONG, true);
        bench_row_info(ctx->report, "generate",
                       "no cache (contrast): cost per token, 256 ÷ 128 new tokens",
                       (nl / LONG) / (ns / SHORT), "%.2f");
        bench_note(
            ctx->report, "generate",
            "without the cache (every step reruns the prefix): 128 new tokens %.1f ms, 256 new "
            "%.1f ms — %.1f× and %.1f× the cached runs",
            1e3 * ns, 1e3 * nl, ns / s, nl / l);
    }
    bench_command(ctx->report, "trident bench --suite generate%s", ctx->quick ? " --quick" : "");
    local_model_destroy(m);
}
