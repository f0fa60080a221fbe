/* bench_plan.c — `trident bench --suite plan`: the planner's predicted step time (src/plan/)
 * against measured runs of a fixed list of layouts, 19 at 2 ranks and 20 at 4: TP, SP, CP,
 * EP (MoE, 4 experts top-2), PP with all five schedules, DP with ZeRO-1/2/3, recomputation and
 * the overlap flags.
 *
 * Each layout trains STEPS steps, traced; its measured step is the median of the steps after
 * the first WARM_STEPS, each from the first rank's start to the last rank's end. Which clock:
 * at 2 ranks on 2 cores every rank has a core, and the wall clock is judged (it counts other
 * jobs' time too: judge it on a quiet machine); at 4 ranks the ranks time-share the cores and
 * the replay view is judged (src/trace/replay.h: every rank as if on its own core — what the
 * time model predicts). The 2-rank replay is printed beside as information. The judged rows,
 * per rank count: the median and worst |predicted − measured| ÷ measured, Spearman's rank
 * correlation of the two, and the measured step of the predicted best over the measured
 * best. One calibration per model the
 * layouts train (src/plan/calibrate.h), made before its first prediction. RUN/plan-scatter.png
 * draws every layout's predicted against measured step (viz/plan_scatter.h).
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
#include "src/plan/calibration.h"
#include "src/plan/time_model.h"
#include "src/trace/replay.h"
#include "src/trace/trace.h"
#include "src/train/config.h"
#include "src/train/memory_predict.h"
#include "viz/plan_scatter.h"

#define WHO "bench plan"

typedef struct {
    const char *name;  /* short, for the scatter's labels */
    const char *flags; /* as `trident plan` prints them (model flags included) */
} plan_layout;

#define MOE "--num-experts 4 --moe-router-topk 2"
static const plan_layout k_two[] = {
    {"dp", ""},
    {"tp2", "--tensor-model-parallel-size 2"},
    {"tp2 sp", "--tensor-model-parallel-size 2 --sequence-parallel"},
    {"cp2", "--context-parallel-size 2"},
    {"pp2", "--pipeline-model-parallel-size 2"},
    {"pp2 gpipe", "--pipeline-model-parallel-size 2 --pipeline-schedule gpipe"},
    {"pp2 interleaved", "--pipeline-model-parallel-size 2 --pipeline-schedule interleaved "
                        "--num-layers-per-virtual-pipeline-stage 1"},
    {"pp2 zb-h1", "--pipeline-model-parallel-size 2 --pipeline-schedule zb-h1"},
    {"pp2 zbv", "--pipeline-model-parallel-size 2 --pipeline-schedule zbv"},
    {"pp2 dualpipev", "--pipeline-model-parallel-size 2 --pipeline-schedule dualpipev"},
    {"zero1", "--use-distributed-optimizer"},
    {"zero2", "--data-parallel-sharding-strategy optim_grads"},
    {"zero3", "--data-parallel-sharding-strategy optim_grads_params"},
    {"selective", "--recompute-granularity selective"},
    {"full recompute",
     "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"},
    {"overlap grads", "--overlap-grad-reduce"},
    {"zero1 overlap", "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"},
    {"moe ep1", MOE},
    {"moe ep2", MOE " --expert-model-parallel-size 2"},
};
static const plan_layout k_four[] = {
    {"dp", ""},
    {"tp2", "--tensor-model-parallel-size 2"},
    {"tp4", "--tensor-model-parallel-size 4"},
    {"tp2 pp2", "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2"},
    {"pp2", "--pipeline-model-parallel-size 2"},
    {"pp4", "--pipeline-model-parallel-size 4"},
    {"pp2 zbv", "--pipeline-model-parallel-size 2 --pipeline-schedule zbv"},
    {"pp4 gpipe", "--pipeline-model-parallel-size 4 --pipeline-schedule gpipe"},
    {"pp2 zb-h1", "--pipeline-model-parallel-size 2 --pipeline-schedule zb-h1"},
    {"tp2 sp", "--tensor-model-parallel-size 2 --sequence-parallel"},
    {"zero1", "--use-distributed-optimizer"},
    {"zero3", "--data-parallel-sharding-strategy optim_grads_params"},
    {"selective", "--recompute-granularity selective"},
    {"pp2 interleaved", "--pipeline-model-parallel-size 2 --pipeline-schedule interleaved "
                        "--num-layers-per-virtual-pipeline-stage 1"},
    {"tp2 zero1 overlap",
     "--tensor-model-parallel-size 2 --use-distributed-optimizer --overlap-grad-reduce"},
    {"pp4 zb-h1 zero1",
     "--pipeline-model-parallel-size 4 --pipeline-schedule zb-h1 --use-distributed-optimizer"},
    {"cp2", "--context-parallel-size 2"},
    {"cp2 tp2", "--context-parallel-size 2 --tensor-model-parallel-size 2"},
    {"moe ep2", MOE " --expert-model-parallel-size 2"},
    {"moe ep4", MOE " --expert-model-parallel-size 4"},
};
enum { MAX_LAYOUTS = 32, MAX_MODELS = 4, STEPS = 20, WARM_STEPS = 4 };

/* One calibration per model the layouts train (the dense default, the MoE one), made the
 * first time a layout of that model is predicted. */
typedef struct {
    int n;
    int model[MAX_MODELS][8];
    plan_calibration cal[MAX_MODELS];
} calibrations;

static const plan_calibration *calibration_for(calibrations *cs, const train_config *c) {
    int m[8];
    plan_calibration_model_of(c, m);
    for (int i = 0; i < cs->n; i++)
        if (memcmp(cs->model[i], m, sizeof m) == 0) return &cs->cal[i];
    CHECK(cs->n < MAX_MODELS, WHO ": at most MAX_MODELS models");
    memcpy(cs->model[cs->n], m, sizeof m);
    plan_calibrate(c, 4, &cs->cal[cs->n], WHO);
    return &cs->cal[cs->n++];
}

/* The layout's predicted step: its flags parsed as train parses them, checked for np ranks. */
static double predict(const char *flags, int np, calibrations *cs) {
    char *line = strdup(flags), *argv[64];
    int argc = 0;
    for (char *t = strtok(line, " "); t && argc < 64; t = strtok(NULL, " ")) argv[argc++] = t;
    train_config c;
    train_config_defaults(&c);
    train_config_parse(&c, "train", argc, argv);
    c.predict_only = true;
    char err[512];
    if (!train_config_check(&c, np, err, sizeof err)) die(WHO ": '%s': %s", flags, err);
    const plan_calibration *cal = calibration_for(cs, &c);
    train_memory *tm = train_memory_predict(&c, train_config_zero_stage(&c), WHO);
    const double step = plan_time_predict(&c, tm, cal).step;
    train_memory_free(tm);
    free(line);
    return step;
}

/* A run's step: each step from the first rank's start to the last rank's end, in the replay
 * view or (replay false) the wall clock; the median of the steps after the first WARM_STEPS
 * (a step the machine's other work stretched is one of STEPS − WARM_STEPS). */
static double measured_step(const char *dir, bool replay) {
    char err[512];
    trace_run *wall = trace_run_read(dir, err, sizeof err);
    if (!wall) die(WHO ": %s", err);
    trace_run *re = replay ? trace_run_replay(wall, err, sizeof err) : wall;
    if (!re) die(WHO ": replay of %s: %s", dir, err);
    double start[STEPS + 1], end[STEPS + 1];
    for (int s = 0; s <= STEPS; s++) start[s] = INFINITY, end[s] = -INFINITY;
    for (int k = 0; k < re->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(re->ranks[k]); i++) {
            const trace_event *e = trace_file_event(re->ranks[k], i);
            if (e->kind != TRACE_STEP || e->step < 0 || e->step > STEPS) continue;
            start[e->step] = fmin(start[e->step], e->t_start);
            end[e->step] = fmax(end[e->step], e->t_end);
        }
    if (re != wall) trace_run_free(re);
    trace_run_free(wall);
    double span[STEPS + 1];
    int n = 0;
    for (int s = WARM_STEPS + 1; s <= STEPS; s++)
        if (end[s] > start[s]) span[n++] = end[s] - start[s];
    if (n == 0) die(WHO ": %s recorded no step after the first %d", dir, WARM_STEPS);
    return bench_median(span, n);
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

/* The four rows of one view of one rank count: median and worst |error|, Spearman's ρ, the
 * predicted best's measured step over the measured best. Judged, or information. */
static void verdict(bench_ctx *ctx, const char *what, const double *pred, const double *meas, int n,
                    bool judged) {
    double err[MAX_LAYOUTS], worst = 0;
    int best_p = 0, best_m = 0;
    for (int i = 0; i < n; i++) {
        err[i] = fabs(pred[i] - meas[i]) / meas[i];
        worst = fmax(worst, err[i]);
        if (pred[i] < pred[best_p]) best_p = i;
        if (meas[i] < meas[best_m]) best_m = i;
    }
    const double v[4] = {bench_median(err, n), worst, spearman(pred, meas, n),
                         meas[best_p] / meas[best_m]};
    const char *const names[4] = {"median relative error (predicted − measured, ÷ measured)",
                                  "worst relative error (predicted − measured, ÷ measured)",
                                  "Spearman ρ of predicted and measured steps",
                                  "measured step of the predicted best ÷ measured best"};
    const char *const fmt[4] = {"%.3f", "%.3f", "%.2f", "%.3f"};
    for (int k = 0; k < 4; k++) {
        char metric[200];
        snprintf(metric, sizeof metric, "%s, %d layouts: %s", what, n, names[k]);
        if (!judged) bench_row_info(ctx->report, "plan", metric, v[k], fmt[k]);
        else if (k == 2) bench_row_min(ctx->report, "plan", metric, v[k], fmt[k], 0.85);
        else
            bench_row_max(ctx->report, "plan", metric, v[k], fmt[k],
                          k == 0   ? 0.10
                          : k == 1 ? 0.25
                                   : 1.05);
    }
}

typedef struct {
    viz_scatter_point pt[3 * MAX_LAYOUTS];
    char label[3 * MAX_LAYOUTS][48];
    int n;
} scatter_points;

static void add_point(scatter_points *sp, const char *name, double pred, double meas, int series) {
    if (sp->n >= 3 * MAX_LAYOUTS) return;
    snprintf(sp->label[sp->n], sizeof sp->label[sp->n], "%s %+.0f%%", name,
             100 * (pred - meas) / meas);
    sp->pt[sp->n] = (viz_scatter_point){sp->label[sp->n], meas, pred, series};
    sp->n++;
}

/* One rank count: every layout run, measured (replay; at 2 ranks the wall clock too) and
 * predicted; judged at 2 ranks in the wall clock (the replay as information), at 4 in the
 * replay view. */
static void rank_count(bench_ctx *ctx, int np, const plan_layout *layouts, int n, calibrations *cs,
                       scatter_points *sp) {
    double pred[MAX_LAYOUTS], meas[MAX_LAYOUTS], wall[MAX_LAYOUTS];
    CHECK(n <= MAX_LAYOUTS, WHO ": at most MAX_LAYOUTS layouts");
    for (int i = 0; i < n; i++) {
        char name[64], dir[4200], log[4300];
        snprintf(name, sizeof name, "plan_np%d_%02d", np, i);
        bench_path(ctx, dir, sizeof dir, name);
        snprintf(log, sizeof log, "%s.log", dir);
        bench_launch(ctx, np, log,
                     "train %s --train-iters %d --log-interval 1 --eval-iters 0 --run-dir '%s'",
                     layouts[i].flags, STEPS, dir);
        meas[i] = measured_step(dir, true);
        wall[i] = measured_step(dir, false);
        pred[i] = predict(layouts[i].flags, np, cs);
        add_point(sp, layouts[i].name, pred[i], np == 2 ? wall[i] : meas[i], np == 2 ? 0 : 1);
        if (np == 2) add_point(sp, layouts[i].name, pred[i], meas[i], 2);
        bench_note(ctx->report, "plan",
                   "%d ranks %s: predicted %.2f ms, replay %.2f ms (%+.0f%%), wall %.2f ms", np,
                   layouts[i].flags[0] ? layouts[i].flags : "(data parallel)", pred[i] * 1e3,
                   meas[i] * 1e3, 100 * (pred[i] - meas[i]) / meas[i], wall[i] * 1e3);
    }
    if (np == 2) {
        verdict(ctx, "2 ranks, wall clock", pred, wall, n, true);
        verdict(ctx, "2 ranks, replay", pred, meas, n, false);
    } else {
        char what[64];
        snprintf(what, sizeof what, "%d ranks, replay", np);
        verdict(ctx, what, pred, meas, n, true);
    }
}

void bench_plan(bench_ctx *ctx) {
    calibrations *cs = callocCheck(1, sizeof *cs);
    scatter_points *sp = callocCheck(1, sizeof *sp);
    const int n2 = ctx->quick ? 3 : (int)(sizeof k_two / sizeof k_two[0]);
    const int n4 = ctx->quick ? 3 : (int)(sizeof k_four / sizeof k_four[0]);
    rank_count(ctx, 2, k_two, n2, cs, sp);
    rank_count(ctx, 4, k_four, n4, cs, sp);
    for (int i = 0; i < cs->n; i++)
        bench_note(ctx->report, "plan",
                   "calibration of model %d experts: block %.3f + %.3f ms, trainer factor %.3f, "
                   "all-reduce α %.2f µs, β %.3g ns/byte, sync %.2f µs",
                   cs->model[i][6], cs->cal[i].block_forward * 1e3, cs->cal[i].block_backward * 1e3,
                   cs->cal[i].trainer_factor, cs->cal[i].link[PLAN_ALL_REDUCE].alpha * 1e6,
                   cs->cal[i].link[PLAN_ALL_REDUCE].beta * 1e9,
                   cs->cal[i].link[PLAN_ALL_REDUCE].sync * 1e6);
    const bool labelled[3] = {true, true, false}; /* the judged views label their misses */
    const char *const series[3] = {"2 ranks (wall clock)", "4 ranks (replay)", "2 ranks (replay)"};
    viz_plan_scatter chart = {
        sp->pt,   sp->n, series,
        labelled, 3,     "trident plan: predicted vs measured step (median of steps 5-20)",
        0.10};
    char path[4200];
    viz_plan_scatter_draw(bench_path(ctx, path, sizeof path, "plan-scatter.png"), &chart);
    bench_note(ctx->report, "plan", "predicted vs measured, every layout: %s", path);
    free(sp);
    free(cs);
}
