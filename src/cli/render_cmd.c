/* render_cmd.c — `trident render RUN_DIR [RUN_DIR …] -o FILE`: run timelines as pictures,
 * Chrome trace JSON or text.
 *
 *   trident render run/ -o timeline.png              the last training step of one run
 *   trident render gpipe/ 1f1b/ inter/ -o cmp.pdf    three runs stacked on one time scale
 *   trident render run/ -o trace.json                every event, for ui.perfetto.dev
 *   trident render run/ -o t.txt --step 3            step 3 as text
 *   trident render run/ -o replay.png --replay       re-timed as if each rank had its own core
 *   trident render run/ -o both.png --replay-and-wall   wall clock above, replay below
 *   trident render --metrics serial/ 3d/ -o loss.png   loss curves of the runs, overlaid
 *   trident render --moe-load moe/ -o moe_load.png     per-expert token load of an MoE run
 *   trident render run/ -o t.pdf --theme slides --width 1600 --height 900   for a slide
 *   trident render run/ -o zoom.png --window 99:102   only ms 99..102 of the step, full width
 *   trident render run/ -o why.png --replay --ideal --critical-path   the plan under each rank,
 *                                                      the critical path outlined
 *
 * The output format follows the extension (.png .svg .pdf .json .txt). Every input is read
 * and checked before anything is written; the output is written atomically.
 *
 * The replay (src/trace/replay.h) is a run of the same shape, so it goes through the same
 * renderer; only its panel name says what it is (TRACE_REPLAY_LABEL).
 *
 * Run directories are read through viz/run_pictures.h, the loaders the trainer's own pictures
 * use (viz_run_load: the measured run and its replay; viz_chrome_trace_save).
 *
 * --window A:B shows the milliseconds [A, B) of the step (from its start, as the axis counts
 * them; B past the step's end is clipped) at the full width, so that a 1 ms all-to-all in a
 * 3 s step gets wide enough for its byte count; the layout maps and clips (timeline_layout.h).
 *
 * --metrics reads RUN_DIR/metrics.jsonl instead of the traces (src/trace/run_metrics.h) and
 * draws the curves (viz/metrics_plot.h). --moe-load reads the same file's moe_tokens and
 * moe_dropped and draws one heat map per layer (viz/moe_load_draw.h).
 *
 * --ideal and --critical-path lay data over each panel (viz_tl_overlay, viz/timeline.h): the
 * run's schedule played with its own costs in the panel's view (src/analyze/ideal_rows.h), and
 * the step's critical path (src/analyze/critical_path.h) on the same clock.
 *
 * Not here: the drawing (timeline_draw.h, metrics_plot.h), the model (timeline.h), the file
 * formats (src/trace).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/analyze/critical_path.h"
#include "src/analyze/ideal_rows.h"
#include "src/analyze/step_graph.h"
#include "src/cli/commands.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/flags.h"
#include "src/trace/replay.h"
#include "src/trace/trace.h"
#include "src/trace/run_metrics.h"
#include "viz/build.h"
#include "viz/canvas.h"
#include "viz/metrics_plot.h"
#include "viz/moe_load_draw.h"
#include "viz/run_pictures.h"
#include "viz/text_timeline.h"
#include "viz/timeline_draw.h"
#include "viz/timeline_load.h"

enum { MAX_RUNS = 16 };

static const char *k_usage =
    "Usage: trident render RUN_DIR [RUN_DIR ...] -o FILE [--step N] [--window A:B] [--arrows] "
    "[--replay | --replay-and-wall] [--ideal] [--critical-path] [--build K] [--title TEXT]\n"
    "       trident render --metrics RUN_DIR [RUN_DIR ...] -o FILE.png|.svg|.pdf\n"
    "       trident render --moe-load RUN_DIR -o FILE.png|.svg|.pdf\n"
    "Turns the per-rank traces of training runs (RUN_DIR/trace/rank<k>.trace) into a timeline:\n"
    "  .png .svg .pdf  one row per rank grouped by pipeline stage, idle %, bubble, phases, memory\n"
    "  .json           Chrome trace for ui.perfetto.dev or chrome://tracing (every step)\n"
    "  .txt            one line of characters per rank, for terminals\n"
    "Several RUN_DIRs are stacked on one time scale (e.g. gpipe vs 1f1b vs interleaved).\n"
    "--window A:B draws only the milliseconds [A, B) of the step (counted from its start, as the\n"
    "axis shows them; B past the step's end is clipped) at the full width, so that short boxes\n"
    "(an all-to-all, a ring step) are wide enough for their byte counts; boxes crossing an edge\n"
    "are clipped, the shares at the right count the window, the bubble line the whole step.\n"
    "Every run of a stack gets the same window. Not for .json (zoom in Perfetto instead).\n"
    "--build K cuts the picture's time into K equal slices for slides: page k shows the step up\n"
    "to k/K of it on the full axis (-o deck.pdf: one PDF of K pages; -o frame.png:\n"
    "frame-01.png .. frame-K.png).\n"
    "--replay draws each run re-timed \"as if each rank had its own core\" (compute lasts its "
    "thread\n"
    "CPU time, messages wait for their sender): for runs of more ranks than cores, whose wall "
    "clock\n"
    "counts the time a rank sat descheduled. --replay-and-wall draws both, wall clock first.\n"
    "--ideal draws under each rank's row a thinner, pale row: the run's own schedule (same p,\n"
    "m, v) played by the schedule simulator with this run's mean forward, backward and W per\n"
    "virtual stage and its mean p2p transfer, measured in the view drawn, from the step's start\n"
    "on the same axis: where the measured row departs from it is what the plan does not\n"
    "explain. --critical-path outlines the step's critical path (trident analyze) in bold and\n"
    "draws only its arrows, where it moves from one rank to another. Both for pictures only\n"
    "(.png .svg .pdf); --ideal needs a pipeline-parallel run (pp >= 2).\n"
    "--metrics draws, from each RUN_DIR/metrics.jsonl, training loss and held-out loss, learning\n"
    "rate, gradient norm and tokens/s against the step, one panel each, the runs overlaid and\n"
    "labelled with their layout (tp x pp x dp, schedule, ZeRO, from RUN_DIR/config.json): runs of\n"
    "one model at different layouts compute the same numbers, so their curves lie on one "
    "another.\n"
    "--moe-load draws, from the RUN_DIR/metrics.jsonl of a mixture-of-experts run (moe_tokens,\n"
    "moe_dropped, moe_aux_loss), one heat map per layer: x = step, y = expert, colour = the\n"
    "expert's share of the layer's routed tokens (balanced = 1/E), dropped tokens above it.";

/* The panels of the picture: one per run directory, or two (wall clock, replay) with
 * --replay-and-wall. Every input is read and checked before anything is written. */
typedef struct {
    viz_run_views views[MAX_RUNS];
    const trace_run *runs[MAX_RUNS];
    char names[MAX_RUNS][512];
    const char *name_ptrs[MAX_RUNS];
    int n; /* panels */
    int total_ranks;
} panels;

static void load_panels(panels *p, const char *const *dirs, int ndirs, bool replay, bool both) {
    const int per_dir = both ? 2 : 1;
    char err[1024];
    p->n = ndirs * per_dir;
    for (int i = 0; i < ndirs; i++) {
        viz_run_views *v = &p->views[i];
        if (!viz_run_load(dirs[i], replay || both, v, err, sizeof err))
            die("trident render: %s", err);
        if (!trace_run_check_causality(v->wall, err, sizeof err))
            fprintf(stderr, "trident render: warning: %s\n", err);
        if (v->wall->clock_fix_most > 0)
            printf("%s: other hosts' clocks shifted by up to %.1f us to make every message arrive "
                   "after it was sent (trace_run_fix_clocks)%s\n",
                   dirs[i], 1e6 * v->wall->clock_fix_most,
                   v->wall->clock_fix_left ? "; some pairs contradict each other" : "");
        char dir[256];
        snprintf(dir, sizeof dir, "%s", dirs[i]);
        size_t len = strlen(dir);
        while (len > 1 && dir[len - 1] == '/') dir[--len] = 0;
        const int k = i * per_dir;
        if (replay || both) {
            if (!v->replay) die("trident render: %s: %s", dir, v->replay_err);
            p->runs[k + per_dir - 1] = v->replay;
            snprintf(p->names[k + per_dir - 1], sizeof p->names[0], "%s (" TRACE_REPLAY_LABEL ")",
                     dir);
        }
        if (!replay) {
            p->runs[k] = v->wall;
            snprintf(p->names[k], sizeof p->names[0], both ? "%s (wall clock)" : "%s", dir);
        }
    }
    for (int i = 0; i < p->n; i++) {
        p->name_ptrs[i] = p->names[i];
        p->total_ranks += p->runs[i]->nranks;
    }
}

/* --window A:B (milliseconds from the step's start) as seconds; a malformed, negative or empty
 * window ends the command with one line naming the flag and the rule. */
static viz_tl_window parse_window(const char *v) {
    char *colon = NULL, *end = NULL;
    double a = strtod(v, &colon), b = NAN;
    bool ok = colon != v && *colon == ':';
    if (ok) {
        b = strtod(colon + 1, &end);
        ok = end != colon + 1 && *end == 0 && isfinite(a) && isfinite(b);
    }
    if (!ok)
        die("trident render: --window '%s' is not A:B (two numbers: milliseconds from the step's "
            "start, e.g. --window 99:102)",
            v);
    if (a < 0)
        die("trident render: --window %s starts before the step (A = %g ms; times count from the "
            "step's start, 0 ms)",
            v, a);
    if (a >= b) die("trident render: --window %s is empty (A must be less than B)", v);
    return (viz_tl_window){a * 1e-3, b * 1e-3};
}

/* What --ideal and --critical-path lay over each panel, and what they own. */
typedef struct {
    viz_tl_overlay ov[MAX_RUNS];
    viz_timeline *ideal[MAX_RUNS];
    viz_tl_path_seg *path[MAX_RUNS];
} overlays;

/* Panel i's ideal rows and their caption; dies with one line when the run has none. */
static void overlay_ideal(const panels *p, int i, const viz_timeline *tl, overlays *o) {
    char err[1024];
    if (tl->pp < 2)
        die("trident render: --ideal draws a pipeline schedule's plan; %s has pp = %d (it needs "
            "pipeline parallelism, pp >= 2)",
            p->names[i], tl->pp);
    ideal_plan plan;
    if (!ideal_plan_simulate(p->runs[i], tl->step, &plan, err, sizeof err))
        die("trident render: --ideal: %s: %s", p->names[i], err);
    o->ideal[i] = ideal_rows_build(&plan, tl, err, sizeof err);
    if (!o->ideal[i]) die("trident render: --ideal: %s: %s", p->names[i], err);
    o->ov[i].ideal = o->ideal[i];
    const stage_costs *sc = &plan.sc;
    char w[48] = "";
    if (sc->nweight) snprintf(w, sizeof w, ", W %.3f", 1e3 * sc->weight_mean);
    snprintf(o->ov[i].caption, sizeof o->ov[i].caption,
             "ideal rows: %s (p = %d, m = %d, v = %d) simulated with this step's own mean costs "
             "per virtual stage in this view (means over stages, ms: F %.3f, %s %.3f%s, p2p "
             "%.3f) — ideal makespan %.2f ms vs measured step %.2f ms",
             pp_kind_name(sc->cfg.kind), sc->cfg.p, sc->cfg.m, sc->cfg.v, 1e3 * sc->forward_mean,
             sc->nweight ? "B" : "backward", 1e3 * (sc->whole_mean - sc->weight_mean), w,
             1e3 * sc->latency, 1e3 * plan.sim.makespan, 1e3 * tl->duration);
    printf("%s: ideal (%s with this step's own costs) %.3f ms, measured step %.3f ms\n",
           p->names[i], pp_kind_name(sc->cfg.kind), 1e3 * plan.sim.makespan, 1e3 * tl->duration);
    ideal_plan_free(&plan);
}

/* Panel i's critical path, appended to its caption. */
static void overlay_path(const panels *p, int i, const viz_timeline *tl, overlays *o) {
    char err[1024];
    step_graph g;
    if (!step_graph_build(p->runs[i], tl->step, &g, err, sizeof err))
        die("trident render: --critical-path: %s: %s", p->names[i], err);
    double *t = mallocCheck(2 * (size_t)g.n * sizeof *t + 1);
    step_graph_recorded(&g, t);
    critical_path cp;
    critical_path_find(&g, t, &cp);
    o->path[i] = critical_path_overlay(&cp);
    o->ov[i].path = o->path[i], o->ov[i].npath = cp.n;
    int hops = 0;
    for (int s = 1; s < cp.n; s++) hops += cp.seg[s].rank != cp.seg[s - 1].rank;
    char *c = o->ov[i].caption;
    const size_t len = strlen(c);
    snprintf(c + len, sizeof o->ov[i].caption - len,
             "%scritical path (bold outlines, arrows where it changes rank): %.2f ms in %d "
             "segments, %d hops",
             len ? " · " : "", 1e3 * cp.total, cp.n, hops);
    printf("%s: critical path %.3f ms in %d segments, %d hops between ranks\n", p->names[i],
           1e3 * cp.total, cp.n, hops);
    critical_path_free(&cp);
    free(t);
    step_graph_free(&g);
}

/* The picture or text of the panels' timelines at `step`, all of it or the window `win`
 * (NULL: all; `win_text` is the flag's value, for the error). */
static void write_timelines(const char *output, const panels *p, int step, int width, int columns,
                            const viz_tl_draw_options *pic, const viz_tl_window *win,
                            const char *win_text, bool ideal, bool path) {
    char err[1024];
    viz_timeline *tls[MAX_RUNS];
    double longest = 0;
    for (int i = 0; i < p->n; i++) {
        tls[i] = viz_timeline_from_run(p->runs[i], p->names[i], step, err, sizeof err);
        if (!tls[i]) die("trident render: %s", err);
        if (tls[i]->duration > longest) longest = tls[i]->duration;
    }
    if (win && win->t0 >= longest) /* B past the end is clipped; A past it shows nothing */
        die("trident render: --window %s starts at or after the end of the step (step %d is %.3f "
            "ms long%s)",
            win_text, tls[0]->step, longest * 1e3, p->n > 1 ? ", the longest of the runs" : "");
    if (path_has_ext(output, ".txt")) {
        atomic_file af;
        FILE *f = atomic_file_open(&af, output);
        viz_text_timeline_write_window(f, (const viz_timeline *const *)tls, p->n, columns, win);
        atomic_file_commit(&af);
    } else {
        static overlays o; /* large: keep it off the stack */
        o = (overlays){0};
        for (int i = 0; i < p->n && ideal; i++) overlay_ideal(p, i, tls[i], &o);
        for (int i = 0; i < p->n && path; i++) overlay_path(p, i, tls[i], &o);
        viz_tl_draw_options opt = *pic;
        opt.width = width, opt.window = win, opt.overlays = ideal || path ? o.ov : NULL;
        viz_timeline_draw(output, (const viz_timeline *const *)tls, p->n, &opt);
        for (int i = 0; i < p->n; i++) {
            if (o.ideal[i]) viz_timeline_free(o.ideal[i]);
            free(o.path[i]);
        }
    }
    for (int i = 0; i < p->n; i++) viz_timeline_free(tls[i]);
}

/* --metrics: every run's metrics.jsonl read and checked, then one picture. */
static void write_metrics(const char *output, const char *const *dirs, int ndirs, int width) {
    if (!viz_format_of(output))
        die("trident render: cannot write '%s': --metrics draws a picture, the extension must be "
            ".png, .svg or .pdf",
            output);
    run_metrics *runs[MAX_RUNS];
    char err[1024];
    for (int i = 0; i < ndirs; i++) {
        runs[i] = run_metrics_read(dirs[i], err, sizeof err);
        if (!runs[i]) die("trident render: %s", err);
    }
    if (!viz_metrics_plot(output, (const run_metrics *const *)runs, ndirs, width, NULL, err,
                          sizeof err))
        die("trident render: cannot draw the curves: %s", err);
    printf("trident render: wrote %s (curves of %d run%s)\n", output, ndirs, ndirs == 1 ? "" : "s");
    for (int i = 0; i < ndirs; i++) {
        char label[4400];
        viz_mp_label(runs[i], label, sizeof label);
        printf("  %s\n", label);
        run_metrics_free(runs[i]);
    }
}

/* --moe-load: one run's metrics.jsonl read and checked, then one picture. */
static void write_moe_load(const char *output, const char *dir, int width) {
    if (!viz_format_of(output))
        die("trident render: cannot write '%s': --moe-load draws a picture, the extension must be "
            ".png, .svg or .pdf",
            output);
    char err[1024];
    run_metrics *m = run_metrics_read(dir, err, sizeof err);
    if (!m) die("trident render: --moe-load %s: %s", dir, err);
    if (!viz_moe_load_draw(m, output, width, err, sizeof err))
        die("trident render: --moe-load %s: %s", dir, err);
    printf("trident render: wrote %s (expert load of %d experts x %d layers over %d logged "
           "steps)\n",
           output, m->moe_experts, m->moe_layers, m->nmoe);
    run_metrics_free(m);
}

/* What the command line asks for. */
typedef struct {
    const char *output, *theme, *window, *title, *build_text;
    int step, width, columns, height, build;
    bool arrows, replay, both, metrics, moe_load, ideal, critical_path;
    const char *dirs[MAX_RUNS + 1];
    int ndirs;
} render_request;

/* The flags and run directories, parsed (flags_parse ends the command on a bad one). */
static void parse_request(render_request *q, int argc, char **argv) {
    *q = (render_request){.step = -1, .columns = 100};
    flag_spec specs[] = {
        {"--output", FLAG_STRING, &q->output, "FILE to write: .png .svg .pdf .json or .txt (-o)",
         NULL},
        {"--step", FLAG_INT, &q->step,
         "training step to show (-1: the last complete step without evaluation)", NULL},
        {"--window", FLAG_STRING, &q->window,
         "A:B: only the ms [A, B) of the step (from its start), at the full width", NULL},
        {"--arrows", FLAG_BOOL, &q->arrows, "draw an arrow from every send to its receive", NULL},
        {"--width", FLAG_INT, &q->width,
         "picture width in points (pixels for PNG); 0: 1400 for timelines, 1000 for --metrics",
         NULL},
        {"--columns", FLAG_INT, &q->columns, "time buckets per row in .txt output", NULL},
        {"--replay", FLAG_BOOL, &q->replay, "draw the replay: as if each rank had its own core",
         NULL},
        {"--replay-and-wall", FLAG_BOOL, &q->both, "draw the wall clock and, below it, the replay",
         NULL},
        {"--ideal", FLAG_BOOL, &q->ideal,
         "under each rank's row, the schedule's plan with this run's own costs (pp >= 2)", NULL},
        {"--critical-path", FLAG_BOOL, &q->critical_path,
         "outline the step's critical path and draw only its arrows between ranks", NULL},
        {"--metrics", FLAG_BOOL, &q->metrics,
         "draw the runs' loss curves (metrics.jsonl), not timelines", NULL},
        {"--moe-load", FLAG_BOOL, &q->moe_load,
         "draw an MoE run's per-expert token load per step (metrics.jsonl), not timelines", NULL},
        {"--theme", FLAG_CHOICE, &q->theme,
         "look of the picture: default, or slides (large type, thick lines, grey-scale safe)",
         "default|slides"},
        {"--height", FLAG_INT, &q->height,
         "picture height in points; 0: as tall as the content (else it fits inside width x height)",
         NULL},
        {"--build", FLAG_STRING, &q->build_text,
         "K: the timeline cut into K time slices for slides (1..64; -o deck.pdf: K pages, "
         "-o frame.png: frame-01.png .. frame-K.png)",
         NULL},
        {"--title", FLAG_STRING, &q->title,
         "TEXT: the timeline's title instead of the run's (one line; several runs: the first)",
         NULL},
    };
    q->ndirs = flags_parse("render", k_usage, specs, (int)(sizeof specs / sizeof specs[0]), argc,
                           argv, q->dirs, MAX_RUNS + 1);
}

/* The rules every picture shares: run directories, -o, --width, --theme/--height, and
 * --window only for timelines. */
static void check_common(render_request *q) {
    if (q->ndirs == 0) die("trident render: no RUN_DIR given (see trident render --help)");
    if (q->ndirs > MAX_RUNS)
        die("trident render: %d run directories given, at most %d fit in one picture", q->ndirs,
            MAX_RUNS);
    if (!q->output) die("trident render: -o FILE is required (.png, .svg, .pdf, .json or .txt)");
    if (q->width == 0) q->width = q->metrics || q->moe_load ? 1000 : 1400;
    if (q->width < 400 || q->width > 20000)
        die("trident render: --width %d is out of range (400 to 20000)", q->width);
    viz_picture_options("trident render", q->theme, q->height ? q->width : 0, q->height);
    if (q->window && (q->metrics || q->moe_load))
        die("trident render: --window %s is for timelines; %s draws against the step, not time",
            q->window, q->metrics ? "--metrics" : "--moe-load");
    if ((q->ideal || q->critical_path) && (q->metrics || q->moe_load))
        die("trident render: --ideal and --critical-path are for timelines of a step; %s draws "
            "against the step, not time",
            q->metrics ? "--metrics" : "--moe-load");
    if ((q->build_text || q->title) && (q->metrics || q->moe_load))
        die("trident render: --build and --title are for timelines; %s draws against the step",
            q->metrics ? "--metrics" : "--moe-load");
    char why[512];
    if (q->build_text && !viz_build_parse(q->build_text, q->output, &q->build, why, sizeof why))
        die("trident render: %s", why);
    if (q->title && !viz_title_check(q->title, why, sizeof why)) die("trident render: %s", why);
}

/* --moe-load and --metrics: their flags checked, then their picture. */
static void render_moe_load(const render_request *q) {
    if (q->metrics || q->replay || q->both || q->arrows || q->step != -1)
        die("trident render: --moe-load draws one run's expert load; --metrics, --replay, "
            "--replay-and-wall, --arrows and --step are for other pictures");
    if (q->ndirs != 1)
        die("trident render: --moe-load draws one run, %d run directories given", q->ndirs);
    write_moe_load(q->output, q->dirs[0], q->width);
}

static void render_metrics(const render_request *q) {
    if (q->replay || q->both || q->arrows || q->step != -1)
        die("trident render: --metrics draws curves; --replay, --replay-and-wall, --arrows and "
            "--step "
            "are for timelines");
    write_metrics(q->output, q->dirs, q->ndirs, q->width);
}

/* Timelines (picture, text or Chrome trace): their flags checked, the runs loaded, then the
 * output. */
static void render_timelines(const render_request *q) {
    const char *output = q->output, *window = q->window;
    bool json = path_has_ext(output, ".json"), text = path_has_ext(output, ".txt");
    if (!json && !text && !viz_format_of(output))
        die("trident render: cannot write '%s': the extension must be .png, .svg, .pdf, .json or "
            ".txt",
            output);
    if ((q->ideal || q->critical_path) && (json || text))
        die("trident render: %s draws on a picture; '%s' is %s (use .png, .svg or .pdf)",
            q->ideal ? "--ideal" : "--critical-path", output, json ? "a Chrome trace" : "text");
    if (window && json)
        die("trident render: --window %s is for pictures and text; a .json Chrome trace holds "
            "every step (zoom in Perfetto instead)",
            window);
    viz_tl_window win = {0};
    if (window) win = parse_window(window);
    if (q->step < -1)
        die("trident render: --step %d is not a step (steps count from 0; -1 means the last)",
            q->step);
    if (q->columns < 10 || q->columns > 2000)
        die("trident render: --columns %d is out of range (10 to 2000)", q->columns);
    if (q->replay && q->both)
        die("trident render: --replay and --replay-and-wall exclude each other (pick one view)");
    if (q->ndirs * (q->both ? 2 : 1) > MAX_RUNS)
        die("trident render: %d run directories with --replay-and-wall make %d panels, at most %d "
            "fit in one picture",
            q->ndirs, q->ndirs * 2, MAX_RUNS);

    static panels p; /* large: keep it off the stack */
    p = (panels){0};
    load_panels(&p, q->dirs, q->ndirs, q->replay, q->both);
    if (json) viz_chrome_trace_save(output, p.runs, p.name_ptrs, p.n);
    else
        write_timelines(
            output, &p, q->step, q->width, q->columns,
            &(viz_tl_draw_options){.arrows = q->arrows, .build = q->build, .title = q->title},
            window ? &win : NULL, window, q->ideal, q->critical_path);
    for (int i = 0; i < q->ndirs; i++) viz_run_views_free(&p.views[i]);
    char wrote[9000];
    if (q->build) viz_build_describe(output, q->build, wrote, sizeof wrote);
    else snprintf(wrote, sizeof wrote, "wrote %s", output);
    printf("trident render: %s (%d run%s, %d ranks)\n", wrote, p.n, p.n == 1 ? "" : "s",
           p.total_ranks);
}

int cmd_render(int argc, char **argv) {
    render_request q;
    parse_request(&q, argc, argv);
    check_common(&q);
    if (q.moe_load) render_moe_load(&q);
    else if (q.metrics) render_metrics(&q);
    else render_timelines(&q);
    return 0;
}
