/* bench_trace.c — the trace suite: what recording the per-rank timeline costs.
 *
 * Pairs of runs of the same 2-rank pipelined training (pp = 2, 1f1b, 8 micro-batches), one
 * with tracing (the default) and one with --no-trace, alternating so that whatever else the
 * machine does falls on both alike. A run's step time is the median over its steps after the
 * first of 1 / (tokens/s); the pair's ratio is traced ÷ untraced, and the suite reports the
 * median over pairs. Target ≤ 1.02: recording only fills preallocated slots (src/trace/trace.h),
 * so anything above noise would be a bug.
 */
#include <stdio.h>
#include <string.h>

#include "src/bench/bench.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"

/* Seconds per step of RUN, from the tokens/s of its steps after the first. */
static double step_time(const char *run, double tokens_per_step) {
    double tps[256];
    int n = bench_read_tokens_per_sec(run, tps, 256);
    if (n < 2) die("bench: %s logged %d steps, expected at least 2", run, n);
    return tokens_per_step / bench_median(tps + 1, n - 1);
}

void bench_trace(bench_ctx *ctx) {
    const int L = 8, C = ctx->quick ? 64 : 128, NH = 4, T = ctx->quick ? 32 : 64, B = 2, m = 8;
    const int steps = ctx->quick ? 3 : 6, pairs = ctx->quick ? 2 : 5;
    double ratio[32], on[32], off[32];
    char parent[4200];
    make_dirs(bench_path(ctx, parent, sizeof parent, "trace"));
    for (int r = 0; r < pairs; r++) {
        for (int traced = 1; traced >= 0; traced--) {
            char run[4200], log[4300];
            snprintf(run, sizeof run, "%s/trace/%s_r%d", ctx->run_dir, traced ? "on" : "off", r);
            snprintf(log, sizeof log, "%s.log", run);
            bench_launch(ctx, 2, log,
                         "train --pipeline-model-parallel-size 2 --num-layers %d --hidden-size %d "
                         "--num-attention-heads %d --seq-length %d --micro-batch-size %d "
                         "--global-batch-size %d "
                         "--train-iters %d --log-interval 1 --quiet%s --run-dir %s",
                         L, C, NH, T, B, B * m, steps, traced ? "" : " --no-trace", run);
            (traced ? on : off)[r] = step_time(run, (double)B * m * T);
        }
        ratio[r] = on[r] / off[r];
    }
    bench_row_max(ctx->report, "trace", "step time with tracing ÷ without (pp=2, 1f1b)",
                  bench_median(ratio, pairs), "%.3f", 1.02);
    bench_note(ctx->report, "trace",
               "model: %d layers, hidden %d, seq %d, micro-batch %d, m = %d; %d interleaved pairs "
               "of %d-step runs; "
               "median step %.1f ms traced, %.1f ms untraced",
               L, C, T, B, m, pairs, steps, 1e3 * bench_median(on, pairs),
               1e3 * bench_median(off, pairs));
}
