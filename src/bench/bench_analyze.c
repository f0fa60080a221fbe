/* bench_analyze.c — the analyze suite: can a traced 1F1B run predict the other schedules?
 *
 * From the pipeline suite's 1F1B run (bench_pp_run: its model, m = 8 micro-batches) this
 * predicts the step time of gpipe, interleaved (v = 2), zb-h1 and zbv through `trident analyze
 * --what-if-schedule` (src/analyze/replan.h: the run's measured per-stage costs re-cut to the
 * target's stages, both plans simulated, the difference added to the measured step), then
 * measures those runs (the same runs the pipeline suite measures its bubbles in) and prints
 * |predicted − measured| ÷ measured ("prediction error ÷ measured": a table cell holds no '|'),
 * against a target of 10%.
 *
 * Which clock (as the pipeline suite): p = 2 on 2 cores, every rank has its own core: the wall
 * clock (judged), and the replay beside it for information (a busy machine takes cores from the
 * wall clock between one run and the next). p = 4 time-shares the cores: the replay view
 * (src/trace/replay.h), for the costs and the measured steps alike. A step time is the step
 * graph's (src/analyze/step_graph.h: first event to last end), averaged over the complete steps
 * after the first that ran no evaluation (the trainer's last step evaluates, which no schedule
 * changes).
 *
 * Not here: the runs themselves (bench_pipeline.c), the prediction (src/analyze/replan.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/analyze/replan.h"
#include "src/analyze/step_graph.h"
#include "src/bench/bench.h"
#include "src/core/check.h"
#include "src/trace/replay.h"
#include "src/trace/trace.h"
#include "viz/timeline_load.h"

enum { ANALYZE_M = 8 };

/* A run of the pipeline suite as recorded, or its replay. */
static trace_run *view_of(const char *dir, bool replay) {
    char err[1024];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) die("bench analyze: %s", err);
    if (!replay) return run;
    trace_run *rep = trace_run_replay(run, err, sizeof err);
    trace_run_free(run);
    if (!rep) die("bench analyze: %s: %s", dir, err);
    return rep;
}

/* Whether the step of g ran an evaluation (the trainer evaluates once at the end). */
static bool has_eval(const step_graph *g) {
    for (int r = 0; r < g->tl->nrows; r++)
        for (int i = 0; i < g->tl->rows[r].nboxes; i++)
            if (g->tl->rows[r].boxes[i].kind == VIZ_TL_EVAL) return true;
    return false;
}

/* The mean step time over the complete training steps after the first (warm-up) that ran no
 * evaluation; all of them when that leaves none. */
static double mean_step(const trace_run *run) {
    int n = viz_run_complete_steps(run, NULL, 0);
    int *steps = mallocCheck(((size_t)n + 1) * sizeof *steps);
    viz_run_complete_steps(run, steps, n);
    double sum[2] = {0, 0}; /* [0] steps without an evaluation, [1] every step */
    int count[2] = {0, 0};
    for (int i = n > 1 ? 1 : 0; i < n; i++) {
        step_graph g;
        char err[1024];
        if (!step_graph_build(run, steps[i], &g, err, sizeof err)) die("bench analyze: %s", err);
        for (int k = has_eval(&g) ? 1 : 0; k < 2; k++) sum[k] += g.t_end, count[k]++;
        step_graph_free(&g);
    }
    free(steps);
    const int k = count[0] > 0 ? 0 : 1;
    return count[k] ? sum[k] / count[k] : NAN;
}

/* Every target predicted at p in one view; judged rows (against 10%), or information. */
static void predict_at(bench_ctx *ctx, int p, bool replay, bool judged) {
    static const char *const targets[] = {"gpipe", "interleaved", "zb-h1", "zbv"};
    const char *view = replay ? "replay" : "wall";
    char dir[4200];
    trace_run *base = view_of(bench_pp_run(ctx, "1f1b", p, ANALYZE_M, dir, sizeof dir), replay);
    const double base_step = mean_step(base);
    bench_note(ctx->report, "analyze", "p=%d m=%d 1f1b, %s: measured step %.3f ms", p, ANALYZE_M,
               view, 1e3 * base_step);
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
        replan_result r;
        char err[1024], metric[160];
        if (!replan_step(base, base_step, targets[k], 0, &r, err, sizeof err))
            die("bench analyze: %s", err);
        trace_run *run = view_of(bench_pp_run(ctx, targets[k], p, ANALYZE_M, dir, sizeof dir),
                                 replay);
        const double measured = mean_step(run);
        trace_run_free(run);
        snprintf(metric, sizeof metric,
                 "p=%d m=%d %s predicted from 1f1b (%s): prediction error ÷ measured", p, ANALYZE_M,
                 targets[k], view);
        const double error = fabs(r.predicted_step - measured) / measured;
        char note[128];
        if (judged) bench_row_max(ctx->report, "analyze", metric, error, "%.3f", 0.10);
        else bench_row_info(ctx->report, "analyze", metric, error, "%.3f");
        bench_note(ctx->report, "analyze",
                   "p=%d %s (v=%d, %s): predicted %.3f ms, measured %.3f ms (simulated: 1f1b "
                   "%.3f ms, %s %.3f ms%s)",
                   p, targets[k], r.target.v, view, 1e3 * r.predicted_step, 1e3 * measured,
                   1e3 * r.own_makespan, targets[k], 1e3 * r.target_makespan,
                   replan_weight_note(&r, note, sizeof note));
    }
    trace_run_free(base);
}

void bench_analyze(bench_ctx *ctx) {
    predict_at(ctx, 2, false, true);
    predict_at(ctx, 2, true, false); /* the same runs without the machine's other load */
    predict_at(ctx, 4, true, true);
}
