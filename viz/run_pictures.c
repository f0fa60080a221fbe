/* run_pictures.c — see run_pictures.h. */
#include "viz/run_pictures.h"

#include <string.h>

#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/trace/replay.h"
#include "src/zero/memory_plan.h"
#include "viz/chrome_trace.h"
#include "viz/groups_draw.h"
#include "viz/metrics_plot.h"
#include "viz/moe_load_draw.h"
#include "viz/timeline_draw.h"
#include "viz/timeline_load.h"
#include "viz/zero_draw.h"

bool viz_run_load(const char *run_dir, bool want_replay, viz_run_views *out, char *err,
                  size_t errlen) {
    *out = (viz_run_views){0};
    out->wall = trace_run_read(run_dir, err, errlen);
    if (!out->wall) return false;
    if (want_replay)
        out->replay = trace_run_replay(out->wall, out->replay_err, sizeof out->replay_err);
    return true;
}

void viz_run_views_free(viz_run_views *v) {
    trace_run_free(v->replay);
    trace_run_free(v->wall);
    *v = (viz_run_views){0};
}

void viz_chrome_trace_save(const char *path, const trace_run *const *runs, const char *const *names,
                           int n) {
    atomic_file af;
    FILE *f = atomic_file_open(&af, path);
    viz_chrome_trace_write(f, runs, names, n);
    atomic_file_commit(&af);
}

void viz_draw_zero_buffer(const char *path, const zero_ranges *r, prec_dtype dtype, int stage) {
    zero_memory_plan plan = zero_memory_plan_of(r, dtype, stage);
    zero_draw(path, r, &plan);
}

/* The run's bubble line. A figure that needs a cost assumption names it ("at F = B = W");
 * the others print the round-robin schedules' general form, v·m, at v = 1 too. */
static void print_bubble(FILE *out, bool replay, const viz_tl_bubble *b) {
    const pp_textbook_text *tx = &b->theory_text;
    char total[64];
    if (tx->assumes[0]) snprintf(total, sizeof total, "%s at %s", tx->total, tx->assumes);
    fprintf(out,
            "bubble (last step%s): measured %.1f%% of total time vs theory %s = %.1f%%; "
            "%.1f%% of ideal time vs %s = %.1f%% (measured = wait %.1f%% + idle %.1f%% "
            "inside the pipeline's forward/backward span, mean over ranks)\n",
            replay ? ", replay" : "", 100 * b->measured_total,
            tx->assumes[0] ? total : "(p-1)/(v·m+p-1)", 100 * b->theory_total,
            100 * b->measured_ideal, tx->assumes[0] ? tx->ideal : "(p-1)/(v·m)",
            100 * b->theory_ideal, 100 * b->wait_total, 100 * b->idle_total);
}

/* The last step of both views: timeline.png (wall clock) and timeline-replay.png, each
 * followed by its bubble line when the run is pipelined. */
static void draw_timelines(const viz_run_pictures *req, const viz_run_views *v,
                           viz_run_bubbles *bubbles) {
    const trace_run *views[2] = {v->wall, v->replay};
    const char *files[2] = {"timeline.png", "timeline-replay.png"};
    const char *what[2] = {"the last training step, every rank, wall clock",
                           "the same step, " TRACE_REPLAY_LABEL};
    char path[4200], err[512];
    for (int k = 0; k < 2 && views[k]; k++) {
        viz_timeline *tl = viz_timeline_from_run(views[k], req->run_dir, -1, err, sizeof err);
        if (!tl) continue;
        snprintf(path, sizeof path, "%s/%s", req->run_dir, files[k]);
        viz_tl_draw_options o = {.width = 0, .arrows = req->pipeline};
        const viz_timeline *one[1] = {tl};
        viz_timeline_draw(path, one, 1, &o);
        fprintf(req->out, "  %s   (%s)\n", path, what[k]);
        if (req->pipeline) {
            bubbles->have[k] = true;
            bubbles->bubble[k] = viz_timeline_bubble(tl);
            print_bubble(req->out, k == 1, &bubbles->bubble[k]);
        }
        viz_timeline_free(tl);
    }
}

/* RUN_DIR/loss.png from RUN_DIR/metrics.jsonl; a run that logged no step has no curves (a
 * note on stderr, no picture). An MoE run (its steps carry moe_tokens) also gets
 * RUN_DIR/moe_load.png. */
static void draw_loss_curves(const viz_run_pictures *req) {
    char path[4200], err[1024];
    run_metrics *m = run_metrics_read(req->run_dir, err, sizeof err);
    if (!m) {
        fprintf(stderr, "%s: no loss curves: %s\n", req->who, err);
        return;
    }
    snprintf(path, sizeof path, "%s/loss.png", req->run_dir);
    const run_metrics *runs[1] = {m};
    if (viz_metrics_plot_levels(path, runs, 1, 1000, NULL, req->loss_levels, err, sizeof err))
        fprintf(req->out,
                "  %s   (loss, learning rate, gradient norm, tokens/s against the step)\n", path);
    else fprintf(stderr, "%s: no loss curves: %s\n", req->who, err);
    if (m->nmoe > 0) {
        snprintf(path, sizeof path, "%s/moe_load.png", req->run_dir);
        if (viz_moe_load_draw(m, path, 1000, err, sizeof err))
            fprintf(req->out, "  %s   (each expert's share of its layer's tokens, per step)\n",
                    path);
        else fprintf(stderr, "%s: no MoE load picture: %s\n", req->who, err);
    }
    run_metrics_free(m);
}

bool viz_render_run_dir(const viz_run_pictures *req, viz_run_bubbles *bubbles, char *err,
                        size_t errlen) {
    char path[4200];
    *bubbles = (viz_run_bubbles){0};
    fprintf(req->out, "pictures:\n");
    if (req->layout) {
        snprintf(path, sizeof path, "%s/groups.png", req->run_dir);
        viz_groups_draw(path, req->layout, 8);
        fprintf(req->out, "  %s\n", path);
    }
    if (req->zero) {
        snprintf(path, sizeof path, "%s/zero.png", req->run_dir);
        viz_draw_zero_buffer(path, req->zero, req->dtype, 1);
        fprintf(req->out, "  %s   (rank 0's buffer and its dp shards)\n", path);
    }
    draw_loss_curves(req);
    if (!req->traced) return true;
    viz_run_views v;
    if (!viz_run_load(req->run_dir, true, &v, err, errlen)) return false;
    if (!v.replay) fprintf(stderr, "%s: no replay view: %s\n", req->who, v.replay_err);
    draw_timelines(req, &v, bubbles);
    snprintf(path, sizeof path, "%s/trace.json", req->run_dir);
    const trace_run *runs[1] = {v.wall};
    const char *names[1] = {req->run_dir};
    viz_chrome_trace_save(path, runs, names, 1);
    fprintf(req->out, "  %s   (open in https://ui.perfetto.dev or chrome://tracing)\n", path);
    viz_run_views_free(&v);
    return true;
}
