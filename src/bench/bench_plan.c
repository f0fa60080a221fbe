/* bench_plan.c — `trident bench --suite plan`: the planner's predicted step time (src/plan/)
 * against measured runs of a fixed list of layouts of the default model, at 2 and 4 ranks.
 *
 * Each layout trains 4 steps, traced; its measured step is the last step in the replay view
 * (src/trace/replay.h: every rank as if on its own core — what the time model predicts; on a
 * 2-core machine shared with other work even 2 ranks' wall clock counts others' time). The
 * calibration is made first (src/plan/calibrate.h), for this model. Per rank count: the median
 * and worst |predicted − measured| ÷ measured, Spearman's rank correlation of the two, and the
 * measured step of the predicted best over the measured best. Context parallelism is left out:
 * the replay of its ring's messages does not give a step (docs/plan.md).
 *
 * Not here: the model (src/plan/time_model.h), the layouts' enumeration (src/plan/enumerate.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/bench/bench.h"
#include "src/core/check.h"
#include "src/plan/calibrate.h"
#include "src/plan/time_model.h"
#include "src/trace/replay.h"
#include "src/trace/trace.h"
#include "src/train/config.h"
#include "src/train/memory_predict.h"

#define WHO "bench plan"

static const char *const k_two[] = {
    "",
    "--tensor-model-parallel-size 2",
    "--tensor-model-parallel-size 2 --sequence-parallel",
    "--pipeline-model-parallel-size 2",
    "--pipeline-model-parallel-size 2 --pipeline-schedule gpipe",
    "--pipeline-model-parallel-size 2 --pipeline-schedule interleaved "
    "--num-layers-per-virtual-pipeline-stage 1",
    "--pipeline-model-parallel-size 2 --pipeline-schedule zb-h1",
    "--pipeline-model-parallel-size 2 --pipeline-schedule zbv",
    "--pipeline-model-parallel-size 2 --pipeline-schedule dualpipev",
    "--use-distributed-optimizer",
    "--data-parallel-sharding-strategy optim_grads",
    "--data-parallel-sharding-strategy optim_grads_params",
    "--recompute-granularity selective",
    "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
    "--overlap-grad-reduce",
    "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather",
};
static const char *const k_four[] = {
    "",
    "--tensor-model-parallel-size 2",
    "--tensor-model-parallel-size 4",
    "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2",
    "--pipeline-model-parallel-size 2",
    "--pipeline-model-parallel-size 4",
    "--pipeline-model-parallel-size 2 --pipeline-schedule zbv",
    "--pipeline-model-parallel-size 4 --pipeline-schedule gpipe",
    "--pipeline-model-parallel-size 2 --pipeline-schedule zb-h1",
    "--tensor-model-parallel-size 2 --sequence-parallel",
    "--use-distributed-optimizer",
    "--data-parallel-sharding-strategy optim_grads_params",
    "--recompute-granularity selective",
    "--pipeline-model-parallel-size 2 --pipeline-schedule interleaved "
    "--num-layers-per-virtual-pipeline-stage 1",
    "--tensor-model-parallel-size 2 --use-distributed-optimizer --overlap-grad-reduce",
    "--pipeline-model-parallel-size 4 --pipeline-schedule zb-h1 --use-distributed-optimizer",
};

/* The layout's predicted step: its flags parsed as train parses them, checked for np ranks. */
static double predict(const char *flags, int np, const plan_calibration *cal) {
    char *line = strdup(flags), *argv[64];
    int argc = 0;
    for (char *t = strtok(line, " "); t && argc < 64; t = strtok(NULL, " ")) argv[argc++] = t;
    train_config c;
    train_config_defaults(&c);
    train_config_parse(&c, "train", argc, argv);
    c.predict_only = true;
    char err[512];
    if (!train_config_check(&c, np, err, sizeof err)) die(WHO ": '%s': %s", flags, err);
    train_memory *tm = train_memory_predict(&c, train_config_zero_stage(&c), WHO);
    const double step = plan_time_predict(&c, tm, cal).step;
    train_memory_free(tm);
    free(line);
    return step;
}

/* The last step of the run, replayed: from the first rank's start to the last rank's end. */
static double measured_step(const char *dir) {
    char err[512];
    trace_run *wall = trace_run_read(dir, err, sizeof err);
    if (!wall) die(WHO ": %s", err);
    trace_run *re = trace_run_replay(wall, err, sizeof err);
    if (!re) die(WHO ": replay of %s: %s", dir, err);
    int last = -1;
    double start = INFINITY, end = -INFINITY;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < re->nranks; k++)
            for (size_t i = 0; i < trace_file_num_events(re->ranks[k]); i++) {
                const trace_event *e = trace_file_event(re->ranks[k], i);
                if (e->kind != TRACE_STEP) continue;
                if (pass == 0 && e->step > last) last = e->step;
                if (pass == 1 && e->step == last)
                    start = fmin(start, e->t_start), end = fmax(end, e->t_end);
            }
    trace_run_free(re);
    trace_run_free(wall);
    if (!(end > start)) die(WHO ": %s recorded no step", dir);
    return end - start;
}

/* Spearman's ρ of two lists without ties: 1 − 6 Σ d² / (n (n² − 1)). */
static double spearman(const double *x, const double *y, int n) {
    double d2 = 0;
    for (int i = 0; i < n; i++) {
        int rx = 0, ry = 0;
        for (int j = 0; j < n; j++) rx += x[j] < x[i], ry += y[j] < y[i];
        d2 += (double)(rx - ry) * (rx - ry);
    }
    return n > 1 ? 1 - 6 * d2 / ((double)n * ((double)n * n - 1)) : 1;
}

/* One rank count: every layout run, measured and predicted; the judged rows. */
static void rank_count(bench_ctx *ctx, int np, const char *const *layouts, int n,
                       const plan_calibration *cal) {
    double pred[32], meas[32], err[32];
    int best_p = 0, best_m = 0;
    for (int i = 0; i < n; i++) {
        char name[64], dir[4200], log[4300];
        snprintf(name, sizeof name, "plan_np%d_%02d", np, i);
        bench_path(ctx, dir, sizeof dir, name);
        snprintf(log, sizeof log, "%s.log", dir);
        bench_launch(ctx, np, log,
                     "train %s --train-iters 4 --log-interval 1 --eval-iters 0 --run-dir '%s'",
                     layouts[i], dir);
        meas[i] = measured_step(dir);
        pred[i] = predict(layouts[i], np, cal);
        err[i] = fabs(pred[i] - meas[i]) / meas[i];
        if (pred[i] < pred[best_p]) best_p = i;
        if (meas[i] < meas[best_m]) best_m = i;
        bench_note(ctx->report, "plan",
                   "%d ranks %s: predicted %.2f ms, measured %.2f ms (%+.0f%%)", np,
                   layouts[i][0] ? layouts[i] : "(data parallel)", pred[i] * 1e3, meas[i] * 1e3,
                   100 * (pred[i] - meas[i]) / meas[i]);
    }
    char metric[160];
    snprintf(metric, sizeof metric,
             "%d ranks, %d layouts: median |predicted − measured| ÷ measured", np, n);
    bench_row_max(ctx->report, "plan", metric, bench_median(err, n), "%.3f", 0.10);
    double worst = 0;
    for (int i = 0; i < n; i++) worst = fmax(worst, err[i]);
    snprintf(metric, sizeof metric, "%d ranks: worst |predicted − measured| ÷ measured", np);
    bench_row_max(ctx->report, "plan", metric, worst, "%.3f", 0.25);
    snprintf(metric, sizeof metric, "%d ranks: Spearman ρ of predicted and measured steps", np);
    bench_row_min(ctx->report, "plan", metric, spearman(pred, meas, n), "%.2f", 0.85);
    snprintf(metric, sizeof metric, "%d ranks: measured step of the predicted best ÷ measured best",
             np);
    bench_row_max(ctx->report, "plan", metric, meas[best_p] / meas[best_m], "%.3f", 1.05);
}

void bench_plan(bench_ctx *ctx) {
    train_config c;
    train_config_defaults(&c);
    plan_calibration cal;
    plan_calibrate(&c, 4, &cal, WHO);
    const int n2 = ctx->quick ? 3 : (int)(sizeof k_two / sizeof k_two[0]);
    const int n4 = ctx->quick ? 3 : (int)(sizeof k_four / sizeof k_four[0]);
    rank_count(ctx, 2, k_two, n2, &cal);
    rank_count(ctx, 4, k_four, n4, &cal);
    bench_note(ctx->report, "plan",
               "calibration: block %.3f + %.3f ms, trainer factor %.3f; the replay view of each "
               "run's last of 4 steps",
               cal.block_forward * 1e3, cal.block_backward * 1e3, cal.trainer_factor);
}
