/* bench_plan.c — `trident bench --suite plan`: the planner's predicted step time (src/plan/)
 * against measured runs of a fixed list of layouts, 19 at 2 ranks and 20 at 4: TP, SP, CP,
 * EP (MoE, 4 experts top-2), PP with all five schedules, DP with ZeRO-1/2/3, recomputation and
 * the overlap flags.
 *
 * Each layout trains STEPS steps, traced, in PASSES passes over the whole list, every other one
 * backwards (--quick: one pass). A run's step is the median of its steps after the first
 * WARM_STEPS, each from the first rank's start to the last rank's end; the layout's measured
 * step is the fastest of its runs — another job's load on this shared machine only adds time,
 * and it comes in stretches of seconds that a median over one run's steps does not remove.
 * The spread between the passes is printed: the measurement's own noise. Which clock:
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
enum { MAX_LAYOUTS = 32, MAX_MODELS = 4, STEPS = 20, WARM_STEPS = 4, PASSES = 3 };

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
    double err[MAX_LAYOUTS] = {0}, worst = 0;
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

/* Every layout of one rank count, measured in PASSES runs (each pass after the one before has
 * run everything, every other one in reverse order: a stretch of another job's load then lands
 * on different layouts) and predicted. */
typedef struct {
    int np, n;
    const plan_layout *layouts;
    double replay[PASSES][MAX_LAYOUTS], wall[PASSES][MAX_LAYOUTS];
} rank_runs;

static void run_layout(bench_ctx *ctx, rank_runs *r, int i, int pass) {
    char name[64], dir[4200], log[4300];
    static const char *const suffix[PASSES] = {"", "_b", "_c"};
    snprintf(name, sizeof name, "plan_np%d_%02d%s", r->np, i, suffix[pass]);
    bench_path(ctx, dir, sizeof dir, name);
    snprintf(log, sizeof log, "%s.log", dir);
    bench_launch(ctx, r->np, log,
                 "train %s --train-iters %d --log-interval 1 --eval-iters 0 --run-dir '%s'",
                 r->layouts[i].flags, STEPS, dir);
    r->replay[pass][i] = measured_step(dir, true);
    r->wall[pass][i] = measured_step(dir, false);
}

/* The median over layouts of (slowest − fastest pass) ÷ the fastest: how much the machine
 * alone moves a measurement. */
static double pass_spread(const double (*v)[MAX_LAYOUTS], int n, int passes) {
    double d[MAX_LAYOUTS];
    for (int i = 0; i < n; i++) {
        double lo = v[0][i], hi = v[0][i];
        for (int k = 1; k < passes; k++) lo = fmin(lo, v[k][i]), hi = fmax(hi, v[k][i]);
        d[i] = (hi - lo) / lo;
    }
    return bench_median(d, n);
}

/* One rank count judged: each layout's measured step is the fastest of its passes (the
 * machine's other work only ever adds time); at 2 ranks the wall clock (the replay as
 * information), at 4 the replay view. */
static void rank_judge(bench_ctx *ctx, const rank_runs *r, int passes, calibrations *cs,
                       scatter_points *sp) {
    double pred[MAX_LAYOUTS], meas[MAX_LAYOUTS], wall[MAX_LAYOUTS];
    const int np = r->np;
    for (int i = 0; i < r->n; i++) {
        meas[i] = r->replay[0][i], wall[i] = r->wall[0][i];
        for (int k = 1; k < passes; k++)
            meas[i] = fmin(meas[i], r->replay[k][i]), wall[i] = fmin(wall[i], r->wall[k][i]);
        pred[i] = predict(r->layouts[i].flags, np, cs);
        add_point(sp, r->layouts[i].name, pred[i], np == 2 ? wall[i] : meas[i], np == 2 ? 0 : 1);
        if (np == 2) add_point(sp, r->layouts[i].name, pred[i], meas[i], 2);
        char each[64] = "";
        for (int k = 0, used = 0; k < passes && used < (int)sizeof each; k++)
            used += snprintf(each + used, sizeof each - (size_t)used, "%s%.2f", k ? ", " : "",
                             r->replay[k][i] * 1e3);
        bench_note(ctx->report, "plan",
                   "%d ranks %s: predicted %.2f ms, replay %.2f ms (%+.0f%%; passes %s), wall %.2f "
                   "ms",
                   np, r->layouts[i].flags[0] ? r->layouts[i].flags : "(data parallel)",
                   pred[i] * 1e3, meas[i] * 1e3, 100 * (pred[i] - meas[i]) / meas[i], each,
                   wall[i] * 1e3);
    }
    char what[64];
    snprintf(what, sizeof what, "%d ranks, %s", np, np == 2 ? "wall clock" : "replay");
    verdict(ctx, what, pred, np == 2 ? wall : meas, r->n, true);
    if (np == 2) verdict(ctx, "2 ranks, replay", pred, meas, r->n, false);
    if (passes > 1) {
        char metric[200];
        snprintf(metric, sizeof metric,
                 "%d ranks, %d layouts: the measurement's own spread, median (slowest − fastest "
                 "pass) ÷ fastest (%s)",
                 np, r->n, np == 2 ? "wall clock" : "replay");
        bench_row_info(ctx->report, "plan", metric,
                       pass_spread(np == 2 ? r->wall : r->replay, r->n, passes), "%.3f");
    }
}

/* What one calibration measured that the predictions lean on most: the block, the trainer
 * factor, the all-reduce on 2 and 4 ranks, the expert load. */
static void calibration_note(bench_ctx *ctx, int experts, const plan_calibration *cal) {
    const plan_link a2 = plan_calibration_link(cal, PLAN_ALL_REDUCE, 2),
                    a4 = plan_calibration_link(cal, PLAN_ALL_REDUCE, 4);
    char load[96] = "";
    for (int i = 0, used = 0; i < cal->nmoe_load && used < (int)sizeof load; i++)
        used += snprintf(load + used, sizeof load - (size_t)used, ", expert load ep %d: %.2f",
                         cal->moe_load[i].ep, cal->moe_load[i].factor);
    bench_note(ctx->report, "plan",
               "calibration of model %d experts: block %.3f + %.3f ms, trainer factor %.3f, "
               "all-reduce on 2 ranks α %.2f µs, β %.3g ns/byte, sync %.2f µs; on 4 α %.2f µs, "
               "β %.3g ns/byte, sync %.2f µs%s",
               experts, cal->block_forward * 1e3, cal->block_backward * 1e3, cal->trainer_factor,
               a2.alpha * 1e6, a2.beta * 1e9, a2.sync * 1e6, a4.alpha * 1e6, a4.beta * 1e9,
               a4.sync * 1e6, load);
}

void bench_plan(bench_ctx *ctx) {
    calibrations *cs = callocCheck(1, sizeof *cs);
    scatter_points *sp = callocCheck(1, sizeof *sp);
    rank_runs *runs = callocCheck(2, sizeof *runs);
    runs[0].np = 2, runs[0].layouts = k_two, runs[0].n = (int)(sizeof k_two / sizeof k_two[0]);
    runs[1].np = 4, runs[1].layouts = k_four, runs[1].n = (int)(sizeof k_four / sizeof k_four[0]);
    if (ctx->quick) runs[0].n = runs[1].n = 3;
    CHECK(runs[0].n <= MAX_LAYOUTS && runs[1].n <= MAX_LAYOUTS, WHO ": at most MAX_LAYOUTS");
    const int passes = ctx->quick ? 1 : PASSES;
    for (int pass = 0; pass < passes; pass++) /* every other pass backwards through both lists */
        for (int j = 0; j < 2; j++) {
            const bool back = pass % 2;
            rank_runs *r = &runs[back ? 1 - j : j];
            for (int k = 0; k < r->n; k++) run_layout(ctx, r, back ? r->n - 1 - k : k, pass);
        }
    for (int j = 0; j < 2; j++) rank_judge(ctx, &runs[j], passes, cs, sp);
    free(runs);
    for (int i = 0; i < cs->n; i++) calibration_note(ctx, cs->model[i][6], &cs->cal[i]);
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
