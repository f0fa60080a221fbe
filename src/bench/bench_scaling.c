/* bench_scaling.c — the scaling suite: training throughput at 2 ranks, for each kind of
 * parallelism, divided by the serial throughput of the same model and global batch.
 *
 * Rounds of four runs, one after the other and repeated (serial, tp = 2, pp = 2, dp = 2),
 * each `trident train --no-trace` with one BLAS thread per rank; a run's throughput is the
 * median tokens/s of its steps after the first (RUN/metrics.jsonl). The ratio of a layout is
 * the median over rounds of its throughput ÷ the same round's serial throughput. On a 2-core
 * machine 2 is the ceiling; what a layout loses is its communication (TP: 4 all-reduces per
 * layer per micro-batch), its bubble (PP, (p−1)/(m+p−1)) or its gradient all-reduce (DP).
 * No targets: these are the numbers to read, not a rule.
 */
#include <stdio.h>
#include <string.h>

#include "src/bench/bench.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"

/* Median tokens/s of the steps after the first in RUN. */
static double run_throughput(const char *run) {
    double tps[256];
    int n = bench_read_tokens_per_sec(run, tps, 256);
    if (n < 2) die("bench: %s logged %d steps, expected at least 2", run, n);
    return bench_median(tps + 1, n - 1);
}

void bench_scaling(bench_ctx *ctx) {
    const int L = 8, C = ctx->quick ? 64 : 256, NH = 4, T = ctx->quick ? 32 : 128, B = 2, G = 16;
    const int steps = ctx->quick ? 3 : 4, rounds = ctx->quick ? 1 : 3;
    static const char *const names[] = {"serial", "tp", "pp", "dp"};
    static const char *const flags[] = {"", "--tensor-model-parallel-size 2",
                                        "--pipeline-model-parallel-size 2", ""};
    double tps[4][16], ratio[4][16];
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 4; k++) {
            char run[4200], log[4300];
            snprintf(run, sizeof run, "%s/scaling/%s_r%d", ctx->run_dir, names[k], r);
            snprintf(log, sizeof log, "%s.log", run);
            char parent[4200];
            bench_path(ctx, parent, sizeof parent, "scaling");
            make_dirs(parent);
            bench_launch(ctx, k == 0 ? 0 : 2, log,
                         "train %s --num-layers %d --hidden-size %d --num-attention-heads %d "
                         "--seq-length %d "
                         "--micro-batch-size %d --global-batch-size %d --train-iters %d "
                         "--log-interval 1 --no-trace "
                         "--quiet --threads 1 --run-dir %s",
                         flags[k], L, C, NH, T, B, G, steps, run);
            tps[k][r] = run_throughput(run);
            ratio[k][r] = tps[k][r] / tps[0][r];
        }
    bench_note(ctx->report, "scaling",
               "model: %d layers, hidden %d, %d heads, seq %d, micro-batch %d, global batch %d; %d "
               "steps per run "
               "(first not counted), %d round%s; one BLAS thread per rank on a %s machine",
               L, C, NH, T, B, G, steps, rounds, rounds == 1 ? "" : "s", "2-core");
    bench_note(ctx->report, "scaling", "serial throughput: %.0f tokens/s (median over rounds)",
               bench_median(tps[0], rounds));
    for (int k = 1; k < 4; k++) {
        char metric[160];
        snprintf(metric, sizeof metric, "tokens/s at 2 ranks ÷ serial, %s = 2 (%.0f tokens/s)",
                 names[k], bench_median(tps[k], rounds));
        bench_row_info(ctx->report, "scaling", metric, bench_median(ratio[k], rounds), "%.2f");
    }
}
