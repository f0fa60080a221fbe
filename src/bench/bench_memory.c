/* bench_memory.c — the memory suite: what each schedule and ZeRO-1 keep, measured, against
 * the formulas.
 *
 * Activations. The executor records the bytes of activations it holds after every change
 * (TRACE_MEMORY samples in the trace). The peak on pipeline stage 0 — the stage that holds
 * the most — of the pipeline suite's runs (bench_pp_run) gives
 *     1f1b ÷ gpipe         = min(p, m) / m         1f1b keeps at most p micro-batches, gpipe m
 *     interleaved ÷ 1f1b   = 1 + (p − 1)/(p·v)     stage 0 keeps 2(p−1) + (v−1)p + 1 chunks of
 *                                                  L/(p·v) blocks vs p sets of L/p blocks
 * (the second in general min(m·v, 2(p−1)+(v−1)p+1) / (v·min(p, m)), which is the formula once
 * m·v is at least the warm-up). Both within ±5%.
 *
 * Optimizer state. From the comm worker (bench_comm.c), which builds the trainer with and
 * without --use-distributed-optimizer at dp = 2 and reads distopt_state_bytes(): unsharded ÷
 * sharded must be dp, apart from the padding of the shards (within 1%).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/bench/bench.h"
#include "src/core/check.h"
#include "src/trace/trace.h"

/* Peak TRACE_MEMORY bytes of the rank that is pipeline stage 0 in RUN. */
static double stage0_peak(const char *dir) {
    char err[512];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) die("bench memory: %s", err);
    double peak = 0;
    for (int k = 0; k < run->nranks; k++) {
        if (trace_file_header(run->ranks[k])->pp_rank != 0) continue;
        for (size_t i = 0; i < trace_file_num_events(run->ranks[k]); i++) {
            const trace_event *e = trace_file_event(run->ranks[k], i);
            if (e->kind == TRACE_MEMORY && (double)e->bytes > peak) peak = (double)e->bytes;
        }
    }
    trace_run_free(run);
    return peak;
}

void bench_memory(bench_ctx *ctx) {
    const int ps[] = {2, 4}, ms[] = {4, 8}, v = 2;
    for (int pi = 0; pi < 2; pi++)
        for (int mi = 0; mi < 2; mi++) {
            const int p = ps[pi], m = ms[mi];
            char dir[4200];
            double gpipe = stage0_peak(bench_pp_run(ctx, "gpipe", p, m, dir, sizeof dir));
            double f1b = stage0_peak(bench_pp_run(ctx, "1f1b", p, m, dir, sizeof dir));
            double inter = stage0_peak(bench_pp_run(ctx, "interleaved", p, m, dir, sizeof dir));
            const int keep1 = p < m ? p : m;
            const double want1 = (double)keep1 / m;
            const int warm = 2 * (p - 1) + (v - 1) * p + 1;
            const double want2 = (double)(m * v < warm ? m * v : warm) / (double)(v * keep1);
            char metric[160], target[48];
            snprintf(metric, sizeof metric, "p=%d m=%d: peak activations on stage 0, 1f1b ÷ gpipe",
                     p, m);
            snprintf(target, sizeof target, "%.3f ± 5%%", want1);
            bench_row_within(ctx->report, "memory", metric, f1b / gpipe, "%.3f", want1,
                             0.05 * want1, target);
            snprintf(metric, sizeof metric,
                     "p=%d m=%d: peak activations on stage 0, interleaved ÷ 1f1b", p, m);
            snprintf(target, sizeof target, "%.3f ± 5%%", want2);
            bench_row_within(ctx->report, "memory", metric, inter / f1b, "%.3f", want2,
                             0.05 * want2, target);
            bench_note(ctx->report, "memory",
                       "p=%d m=%d stage 0 peak activation bytes: gpipe %.2f MB, 1f1b %.2f MB, "
                       "interleaved %.2f MB "
                       "(formulas: min(p,m)/m = %.3f; interleaved %s = %.3f)",
                       p, m, gpipe / 1e6, f1b / 1e6, inter / 1e6, want1,
                       m * v >= warm ? "1 + (p−1)/(p·v)" : "min(m·v, 2(p−1)+(v−1)p+1)/(v·min(p,m))",
                       want2);
        }
    /* ZeRO-1: the comm worker measured the optimizer state at dp = 2. */
    char path[4200];
    bench_comm_results(ctx, path, sizeof path);
    const double dp = bench_kv_get(path, "zero_dp");
    const double plain = bench_kv_get(path, "zero_state_bytes_plain");
    const double sharded = bench_kv_get(path, "zero_state_bytes_sharded");
    const double padded = bench_kv_get(path, "zero_padding_elems");
    char metric[160], target[48];
    snprintf(metric, sizeof metric,
             "ZeRO-1 optimizer-state bytes per rank, unsharded ÷ sharded at dp=%g", dp);
    snprintf(target, sizeof target, "%g ± 1%% (padding)", dp);
    bench_row_within(ctx->report, "memory", metric, plain / sharded, "%.4f", dp, 0.01 * dp, target);
    bench_note(ctx->report, "memory",
               "optimizer state per rank (Adam m, v and the fp32 master shard with ZeRO): %.2f MB "
               "without ZeRO, "
               "%.2f MB with ZeRO-1 at dp = %g (shards padded by %g elements)",
               plain / 1e6, sharded / 1e6, dp, padded);
}
