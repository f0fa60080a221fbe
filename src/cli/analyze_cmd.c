/* analyze_cmd.c — `trident analyze`: why one step of a traced run took as long as it did.
 *
 *   trident analyze RUN_DIR [RUN_DIR ...] [--step N] [--replay] [-o FILE.json|.png|.svg|.pdf]
 *                   [--what-if NAME=FACTOR[,NAME=FACTOR ...]]
 *                   [--what-if-schedule NAME [--virtual-stages V]]
 *
 * For each run it builds the step's dependency graph (src/analyze/step_graph.h) in the wall
 * clock view, or in the replay view "as if each rank had its own core" with --replay, and
 * prints:
 *   - the critical path: every piece, across ranks, that set the step's length (rank, kind,
 *     op, micro-batch, chunk, ms, share of the step), and its sums by kind; they add up to the
 *     step (critical_path.h);
 *   - the bubble of every rank split into schedule, imbalance, communication and sharing,
 *     shares of the pipeline's span that add up to the measured bubble (bubble_causes.h);
 *   - with --what-if, the step re-timed with those costs scaled: its length, bubble and
 *     critical path by kind (what_if.h), next to the same graph re-timed with every factor 1;
 *   - with --what-if-schedule, the step predicted under another pipeline schedule from the
 *     run's measured per-stage costs (replan.h).
 * -o FILE.json writes all of it as JSON instead (atomically; nothing is written when any run
 * cannot be read); -o FILE.png|.svg|.pdf draws one run's path and causes (analyze_draw.h).
 * Bad input ends with one line naming the value and the rule.
 *
 * Not here: the analysis itself (src/analyze/), the pictures (trident render).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/analyze/analyze_draw.h"
#include "src/analyze/bubble_causes.h"
#include "src/analyze/critical_path.h"
#include "src/analyze/replan.h"
#include "src/analyze/step_graph.h"
#include "src/analyze/what_if.h"
#include "src/cli/commands.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/flags.h"
#include "src/core/json.h"
#include "src/pp/schedule.h"
#include "src/trace/replay.h"
#include "src/trace/trace.h"
#include "viz/run_pictures.h"
#include "viz/timeline_load.h"

#define WHO "trident analyze"

enum { ANALYZE_MAX_RUNS = 16, ANALYZE_MAX_FACTORS = 16 };

static const char *k_usage =
    "Usage: trident analyze RUN_DIR [RUN_DIR ...] [--step N] [--replay] [-o FILE]\n"
    "                       [--what-if NAME=FACTOR[,NAME=FACTOR ...]]\n"
    "                       [--what-if-schedule NAME [--virtual-stages V]]\n"
    "Explains one step of a traced run (the last complete one unless --step):\n"
    "  the critical path  the chain of events across ranks whose durations add up to the step,\n"
    "                     as a table and summed by kind (forward, backward, weight, optimizer,\n"
    "                     transfer, wait, idle);\n"
    "  the bubble         every rank's waiting and idle share of the pipeline's span, split\n"
    "                     into schedule (the ideal schedule at this run's mean costs),\n"
    "                     imbalance (its stages' own costs), communication (what the replay\n"
    "                     adds: messages, waits for peers) and sharing (wall clock minus replay:\n"
    "                     ranks descheduled on shared cores; 0 with --replay).\n"
    "--replay analyses the step re-timed as if each rank had its own core (trident render\n"
    "--replay); the default is the wall clock. --what-if re-times the step's dependency graph\n"
    "with costs scaled, e.g. --what-if p2p=0 or --what-if backward=0.5,stage:1=2. NAME is one of\n"
    "forward, backward, w, optimizer, p2p, allreduce, reduce-scatter, all-gather, all-to-all,\n"
    "ring, stage:K (a virtual stage's compute), rank:R (all a rank does).\n"
    "--what-if-schedule predicts the step under another schedule (gpipe, 1f1b, interleaved,\n"
    "zb-h1, zbv, dualpipev) from this run's measured per-stage costs, in the view analysed.\n"
    "-o FILE.json writes everything as JSON; -o FILE.png|.svg|.pdf draws one run's critical\n"
    "path across its ranks and every rank's bubble by cause.";

typedef struct {
    char dir[512];
    viz_run_views views;
    const trace_run *run; /* the view analysed: views.wall or views.replay */
    step_graph g;
    double *t; /* (2·g.n) recorded point times */
    critical_path path;
    viz_timeline *replay_tl; /* the step in the replay view (wall view only) */
    bubble_causes bc;
    bool have_causes;
    char causes_err[512];
    int nf;
    wi_factor f[ANALYZE_MAX_FACTORS];
    char fname[ANALYZE_MAX_FACTORS][64];
    what_if_result wi;
    bool have_replan;
    replan_result rp;
} analysis;

typedef struct {
    int step;
    bool replay, full_path;
    const char *what_if, *schedule;
    int v;
} analyze_request;

/* The factors of --what-if (comma-separated) for the graph of a; dies on a bad one. */
static void parse_factors(analysis *a, const char *list) {
    if (!list) return;
    const char *s = list;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (a->nf == ANALYZE_MAX_FACTORS)
            die(WHO ": --what-if: at most %d factors", ANALYZE_MAX_FACTORS);
        if (len == 0 || len >= sizeof a->fname[0])
            die(WHO ": --what-if '%s': expected NAME=FACTOR[,NAME=FACTOR ...]", list);
        memcpy(a->fname[a->nf], s, len);
        a->fname[a->nf][len] = 0;
        char err[512];
        if (!what_if_parse(&a->g, a->fname[a->nf], &a->f[a->nf], err, sizeof err))
            die(WHO ": %s", err);
        a->nf++;
        s += len + (comma ? 1 : 0);
    }
}

/* Reads, replays and analyses one run directory; dies with one line when it cannot. */
static void analyze_run(analysis *a, const char *dir, const analyze_request *rq) {
    const int step = rq->step;
    const bool replay = rq->replay;
    char err[1024];
    snprintf(a->dir, sizeof a->dir, "%s", dir);
    size_t len = strlen(a->dir);
    while (len > 1 && a->dir[len - 1] == '/') a->dir[--len] = 0;
    if (!viz_run_load(dir, true, &a->views, err, sizeof err)) die(WHO ": %s", err);
    if (replay && !a->views.replay) die(WHO ": %s: %s", a->dir, a->views.replay_err);
    const trace_run *run = a->run = replay ? a->views.replay : a->views.wall;
    if (!step_graph_build(run, step, &a->g, err, sizeof err)) die(WHO ": %s", err);
    parse_factors(a, rq->what_if);
    if (rq->schedule) {
        if (!replan_step(run, a->g.t_end, rq->schedule, rq->v, &a->rp, err, sizeof err))
            die(WHO ": %s: %s", a->dir, err);
        a->have_replan = true;
    }
    a->t = mallocCheck((2 * (size_t)a->g.n + 1) * sizeof *a->t);
    step_graph_recorded(&a->g, a->t);
    critical_path_find(&a->g, a->t, &a->path);
    const viz_timeline *rtl = a->g.tl;
    if (!replay && a->views.replay) {
        a->replay_tl = viz_timeline_from_run(a->views.replay, a->dir, a->g.step, err, sizeof err);
        rtl = a->replay_tl;
    }
    if (!a->views.replay) snprintf(a->causes_err, sizeof a->causes_err, "%s", a->views.replay_err);
    else if (!rtl) snprintf(a->causes_err, sizeof a->causes_err, "%s", err);
    else
        a->have_causes = bubble_causes_measure(a->g.tl, rtl, a->views.replay, &a->bc, a->causes_err,
                                               sizeof a->causes_err);
    if (a->nf > 0) {
        what_if_run(&a->g, a->f, a->nf, &a->wi);
    }
}

static void analysis_free(analysis *a) {
    what_if_free(&a->wi);
    bubble_causes_free(&a->bc);
    if (a->replay_tl) viz_timeline_free(a->replay_tl);
    critical_path_free(&a->path);
    free(a->t);
    step_graph_free(&a->g);
    viz_run_views_free(&a->views);
}

/* ---- text ------------------------------------------------------------------------------ */

/* The op column of a path segment: the message's op, or what a gap is. */
static const char *segment_op(const step_graph *g, const cp_segment *s) {
    if (s->node < 0) return "(before its first event)";
    const viz_tl_box *b = step_graph_box(g, s->node);
    if (!b) return "(untraced)";
    return b->op[0] ? b->op : viz_tl_kind_name(b->kind);
}

/* The micro-batch of a node's box: its own, or a pipeline message's, read from its tag. */
static int node_mb(const analysis *a, int node) {
    const viz_tl_box *b = node >= 0 ? step_graph_box(&a->g, node) : NULL;
    if (!b) return -1;
    if (b->microbatch >= 0 || (b->kind != VIZ_TL_SEND && b->kind != VIZ_TL_RECV))
        return b->microbatch;
    const int rank = a->g.nodes[node].rank;
    const trace_event *e = trace_file_event(a->run->ranks[rank], (size_t)b->event);
    return e->tag >= 0 ? pp_tag_microbatch(e->tag, a->g.tl->pp * a->g.tl->vpp) : -1;
}

/* A table cell of an index: the number, or "-" where it does not apply. */
static const char *cell(char *buf, size_t cap, int v) {
    if (v < 0) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%d", v);
    return buf;
}

/* The full path, every segment (--full-path). */
static void print_segments(FILE *out, const analysis *a) {
    const critical_path *p = &a->path;
    fprintf(out, "critical path: %d segments, %.3f ms = the step\n", p->n, 1e3 * p->total);
    fprintf(out, "  %4s  %-9s  %-24s %4s %5s %9s %7s\n", "rank", "kind", "op", "mb", "chunk", "ms",
            "share");
    for (int i = 0; i < p->n; i++) {
        const cp_segment *s = &p->seg[i];
        const viz_tl_box *b = s->node >= 0 ? step_graph_box(&a->g, s->node) : NULL;
        const double d = s->end - s->start;
        char mb[16], ch[16];
        fprintf(out, "  %4d  %-9s  %-24.24s %4s %5s %9.3f %6.1f%%\n", s->rank,
                cp_kind_name(s->kind), segment_op(&a->g, s),
                cell(mb, sizeof mb, node_mb(a, s->node)), cell(ch, sizeof ch, b ? b->chunk : -1),
                1e3 * d, p->total > 0 ? 100 * d / p->total : 0);
    }
}

/* The ranks a row's segments are on, in order of appearance: "4", "0,1", "0,1,2,…". */
static void row_ranks(const critical_path *p, const cp_row *r, char *buf, size_t cap) {
    int seen[4], n = 0;
    size_t len = 0;
    buf[0] = 0;
    for (int i = r->first; i <= r->last; i++) {
        const int k = p->seg[i].rank;
        bool dup = false;
        for (int j = 0; j < n && j < 4; j++) dup |= seen[j] == k;
        if (dup) continue;
        if (n == 3) {
            snprintf(buf + len, cap - len, ",…");
            return;
        }
        seen[n++] = k;
        len += (size_t)snprintf(buf + len, cap - len, n > 1 ? ",%d" : "%d", k);
        if (len >= cap) return;
    }
}

/* The path as ops (critical_path_rows): an op's tensor-parallel hops and collectives inside
 * its row ("ranks 0+1", "inside" = their transfer and wait). */
static void print_path(FILE *out, const analysis *a, bool full) {
    if (full) return print_segments(out, a);
    const critical_path *p = &a->path;
    cp_row *rows = mallocCheck(((size_t)p->n + 1) * sizeof *rows);
    const int n = critical_path_rows(&a->g, p, rows);
    fprintf(out,
            "critical path: %d ops and gaps (%d segments; --full-path lists them), %.3f ms = the "
            "step\n",
            n, p->n, 1e3 * p->total);
    fprintf(out, "  %-6s  %-9s  %-24s %4s %5s %9s %9s %7s\n", "ranks", "kind", "op", "mb", "chunk",
            "ms", "inside", "share");
    for (int i = 0; i < n; i++) {
        const cp_row *r = &rows[i];
        const cp_segment s = {r->node, r->rank, r->kind, r->start, r->end};
        const viz_tl_box *b = r->node >= 0 ? step_graph_box(&a->g, r->node) : NULL;
        const double d = r->end - r->start;
        char who[16], mb[16], ch[16], in[16];
        row_ranks(p, r, who, sizeof who);
        if (r->inner > 0) snprintf(in, sizeof in, "%.3f", 1e3 * r->inner);
        else snprintf(in, sizeof in, "-");
        fprintf(out, "  %-6s  %-9s  %-24.24s %4s %5s %9.3f %9s %6.1f%%\n", who,
                cp_kind_name(r->kind), segment_op(&a->g, &s),
                cell(mb, sizeof mb, node_mb(a, r->node)), cell(ch, sizeof ch, b ? b->chunk : -1),
                1e3 * d, in, p->total > 0 ? 100 * d / p->total : 0);
    }
    free(rows);
}

static void print_by_kind(FILE *out, const char *lead, const critical_path *p) {
    fprintf(out, "%s", lead);
    double sum = 0;
    for (int k = 0; k < CP_NUM_KINDS; k++) {
        sum += p->by_kind[k];
        if (p->by_kind[k] > 0)
            fprintf(out, " %s %.3f ms (%.1f%%)", cp_kind_name(k), 1e3 * p->by_kind[k],
                    p->total > 0 ? 100 * p->by_kind[k] / p->total : 0);
    }
    fprintf(out, "; sum %.3f ms\n", 1e3 * sum);
}

static void print_shares(FILE *out, const char *who, const bc_shares *s) {
    fprintf(out, "  %-6s %8.1f%% %9.1f%% %9.1f%% %13.1f%% %8.1f%%\n", who, 100 * s->measured,
            100 * s->schedule, 100 * s->imbalance, 100 * s->communication, 100 * s->sharing);
}

static void print_causes(FILE *out, const analysis *a) {
    if (!a->have_causes) {
        fprintf(out, "bubble by cause: not available (%s)\n", a->causes_err);
        return;
    }
    const bubble_causes *bc = &a->bc;
    fprintf(out,
            "bubble by cause (shares of the pipeline span, %.3f ms; costs from the replay: "
            "forward %.3f, backward %.3f, W %.3f ms per chunk):\n",
            1e3 * bc->span, 1e3 * bc->forward_mean, 1e3 * bc->backward_mean, 1e3 * bc->weight_mean);
    fprintf(out, "  %-6s %9s %10s %10s %14s %9s\n", "rank", "measured", "schedule", "imbalance",
            "communication", "sharing");
    for (int r = 0; r < bc->nranks; r++) {
        char who[16];
        snprintf(who, sizeof who, "%d", r);
        print_shares(out, who, &bc->rank[r]);
    }
    print_shares(out, "mean", &bc->mean);
}

static void print_what_if(FILE *out, const analysis *a) {
    if (a->nf == 0) return;
    fprintf(out, "what-if");
    for (int i = 0; i < a->nf; i++) fprintf(out, " %s", a->fname[i]);
    const double base = a->wi.base_step;
    fprintf(out,
            ": step %.3f ms (%+.1f%% against %.3f ms, the recorded graph re-timed; recorded "
            "%.3f ms), bubble %.1f%%\n",
            1e3 * a->wi.step, base > 0 ? 100 * (a->wi.step - base) / base : 0, 1e3 * base,
            1e3 * a->g.t_end, 100 * a->wi.bubble);
    fprintf(out,
            "  shorter by %.3f ms; the factors save %.3f ms on the recorded critical path, "
            "%.3f ms in all\n",
            1e3 * (base - a->wi.step), 1e3 * a->wi.saved_on_path, 1e3 * a->wi.saved_in_all);
    print_by_kind(out, "  its critical path:", &a->wi.path);
}

static void print_replan(FILE *out, const analysis *a) {
    if (!a->have_replan) return;
    const replan_result *r = &a->rp;
    char note[128];
    fprintf(out,
            "what-if schedule %s (v=%d): step %.3f ms predicted (measured %.3f ms with %s; "
            "simulated with this run's costs: %s %.3f ms, %s %.3f ms, its bubble %.1f%%)%s\n",
            pp_kind_name(r->target.kind), r->target.v, 1e3 * r->predicted_step,
            1e3 * r->measured_step, pp_kind_name(r->own.kind), pp_kind_name(r->own.kind),
            1e3 * r->own_makespan, pp_kind_name(r->target.kind), 1e3 * r->target_makespan,
            100 * r->target_bubble, replan_weight_note(r, note, sizeof note));
}

static void print_text(FILE *out, const analysis *a, bool replay, bool full) {
    fprintf(out, "%s — step %d, %s: %.3f ms (%s, p=%d, m=%d, v=%d, %d ranks)\n", a->dir, a->g.step,
            replay ? TRACE_REPLAY_LABEL : "wall clock", 1e3 * a->g.t_end, a->g.tl->schedule,
            a->g.tl->pp, a->g.tl->num_microbatches, a->g.tl->vpp, a->g.tl->nrows);
    print_path(out, a, full);
    print_by_kind(out, "by kind:", &a->path);
    print_causes(out, a);
    print_what_if(out, a);
    print_replan(out, a);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void json_by_kind(json_writer *w, const critical_path *p) {
    json_key(w, "by_kind_ms");
    json_begin_object(w, JSON_SPACED);
    for (int k = 0; k < CP_NUM_KINDS; k++)
        json_field_double(w, cp_kind_name(k), "%.6f", 1e3 * p->by_kind[k]);
    json_end_object(w);
}

static void json_path(json_writer *w, const analysis *a) {
    const critical_path *p = &a->path;
    json_key(w, "critical_path");
    json_begin_object(w, JSON_LINES);
    json_field_double(w, "total_ms", "%.6f", 1e3 * p->total);
    json_by_kind(w, p);
    json_key(w, "segments");
    json_begin_array(w, JSON_LINES);
    for (int i = 0; i < p->n; i++) {
        const cp_segment *s = &p->seg[i];
        const viz_tl_box *b = s->node >= 0 ? step_graph_box(&a->g, s->node) : NULL;
        json_begin_object(w, JSON_SPACED);
        json_field_int(w, "rank", s->rank);
        json_field_string(w, "kind", cp_kind_name(s->kind));
        json_field_string(w, "op", segment_op(&a->g, s));
        json_field_int(w, "mb", node_mb(a, s->node));
        json_field_int(w, "chunk", b ? b->chunk : -1);
        json_field_double(w, "start_ms", "%.6f", 1e3 * s->start);
        json_field_double(w, "ms", "%.6f", 1e3 * (s->end - s->start));
        json_end_object(w);
    }
    json_end_array(w);
    json_end_object(w);
}

static void json_shares(json_writer *w, const bc_shares *s, int rank) {
    json_begin_object(w, JSON_SPACED);
    if (rank >= 0) json_field_int(w, "rank", rank);
    json_field_double(w, "measured", "%.9f", s->measured);
    json_field_double(w, "schedule", "%.9f", s->schedule);
    json_field_double(w, "imbalance", "%.9f", s->imbalance);
    json_field_double(w, "communication", "%.9f", s->communication);
    json_field_double(w, "sharing", "%.9f", s->sharing);
    json_end_object(w);
}

static void json_causes(json_writer *w, const analysis *a) {
    json_key(w, "bubble");
    if (!a->have_causes) {
        json_begin_object(w, JSON_SPACED);
        json_field_string(w, "unavailable", a->causes_err);
        json_end_object(w);
        return;
    }
    json_begin_object(w, JSON_LINES);
    json_field_double(w, "span_ms", "%.6f", 1e3 * a->bc.span);
    json_key(w, "mean");
    json_shares(w, &a->bc.mean, -1);
    json_key(w, "ranks");
    json_begin_array(w, JSON_LINES);
    for (int r = 0; r < a->bc.nranks; r++) json_shares(w, &a->bc.rank[r], r);
    json_end_array(w);
    json_end_object(w);
}

static void json_what_if(json_writer *w, const analysis *a) {
    if (a->nf == 0) return;
    json_key(w, "what_if");
    json_begin_object(w, JSON_LINES);
    json_key(w, "factors");
    json_begin_array(w, JSON_SPACED);
    for (int i = 0; i < a->nf; i++) json_string(w, a->fname[i]);
    json_end_array(w);
    json_field_double(w, "step_ms", "%.6f", 1e3 * a->wi.step);
    json_field_double(w, "identity_step_ms", "%.6f", 1e3 * a->wi.base_step);
    json_field_double(w, "saved_on_path_ms", "%.6f", 1e3 * a->wi.saved_on_path);
    json_field_double(w, "saved_in_all_ms", "%.6f", 1e3 * a->wi.saved_in_all);
    json_field_double(w, "bubble", "%.9f", a->wi.bubble);
    json_by_kind(w, &a->wi.path);
    json_end_object(w);
}

static void json_replan(json_writer *w, const analysis *a) {
    if (!a->have_replan) return;
    const replan_result *r = &a->rp;
    json_key(w, "what_if_schedule");
    json_begin_object(w, JSON_SPACED);
    json_field_string(w, "schedule", pp_kind_name(r->target.kind));
    json_field_int(w, "v", r->target.v);
    json_field_double(w, "predicted_step_ms", "%.6f", 1e3 * r->predicted_step);
    json_field_double(w, "measured_step_ms", "%.6f", 1e3 * r->measured_step);
    json_field_double(w, "own_makespan_ms", "%.6f", 1e3 * r->own_makespan);
    json_field_double(w, "target_makespan_ms", "%.6f", 1e3 * r->target_makespan);
    json_field_double(w, "target_bubble", "%.9f", r->target_bubble);
    json_field_bool(w, "weight_assumed", r->weight_assumed);
    json_field_bool(w, "weight_measured_inside", r->weight_inside);
    json_field_double(w, "weight_share", "%.6f", r->weight_share);
    json_end_object(w);
}

static void write_json(const char *path, analysis *runs, int n, bool replay) {
    atomic_file af;
    FILE *f = atomic_file_open(&af, path);
    json_writer w;
    json_init_file(&w, f, 2);
    json_begin_object(&w, JSON_LINES);
    json_key(&w, "runs");
    json_begin_array(&w, JSON_LINES);
    for (int i = 0; i < n; i++) {
        const analysis *a = &runs[i];
        json_begin_object(&w, JSON_LINES);
        json_field_string(&w, "dir", a->dir);
        json_field_string(&w, "view", replay ? "replay" : "wall");
        json_field_int(&w, "step", a->g.step);
        json_field_double(&w, "step_ms", "%.6f", 1e3 * a->g.t_end);
        json_path(&w, a);
        json_causes(&w, a);
        json_what_if(&w, a);
        json_replan(&w, a);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_end_object(&w);
    fputc('\n', f);
    atomic_file_commit(&af);
}

int cmd_analyze(int argc, char **argv) {
    analyze_request rq = {.step = -1};
    const char *output = NULL, *theme = NULL;
    int width = 0, height = 0;
    const flag_spec specs[] = {
        {"--step", FLAG_INT, &rq.step, "the step to explain (-1: the last complete one)", NULL},
        {"--replay", FLAG_BOOL, &rq.replay,
         "explain the step re-timed as if each rank had its own core (default: wall clock)", NULL},
        {"--full-path", FLAG_BOOL, &rq.full_path,
         "list every segment of the critical path (default: one row per op, its collectives "
         "inside)",
         NULL},
        {"--what-if", FLAG_STRING, &rq.what_if,
         "NAME=FACTOR[,...]: re-time the step with costs scaled (p2p=0, backward=0.5, stage:1=2)",
         NULL},
        {"--what-if-schedule", FLAG_CHOICE, &rq.schedule,
         "predict the step under this schedule from the run's measured costs",
         "gpipe|1f1b|interleaved|zb-h1|zbv|dualpipev"},
        {"--virtual-stages", FLAG_INT, &rq.v,
         "model chunks per rank for --what-if-schedule (0: 2 for interleaved and the V "
         "schedules, else 1)",
         NULL},
        {"--output", FLAG_STRING, &output,
         "FILE.json (the analysis as JSON) or FILE.png|.svg|.pdf (one run drawn); -o for short",
         NULL},
        {"--theme", FLAG_CHOICE, &theme,
         "look of the picture: default, or slides (large type, thick lines, grey-scale safe)",
         "default|slides"},
        {"--width", FLAG_INT, &width, "picture width in points (pixels for PNG); 0: its own", NULL},
        {"--height", FLAG_INT, &height,
         "picture height in points; 0: its own (both: the picture fits inside, centred)", NULL},
    };
    const char *dirs[ANALYZE_MAX_RUNS + 1];
    int ndirs = flags_parse("analyze", k_usage, specs, (int)(sizeof specs / sizeof specs[0]), argc,
                            argv, dirs, ANALYZE_MAX_RUNS + 1);
    if (ndirs == 0) die(WHO ": needs at least one RUN_DIR (trident analyze --help)");
    if (ndirs > ANALYZE_MAX_RUNS) die(WHO ": at most %d RUN_DIRs, got more", ANALYZE_MAX_RUNS);
    if (rq.step < -1) die(WHO ": --step %d: a step is a number >= 0 (or -1: the last)", rq.step);
    if (rq.v < 0 || (rq.v > 0 && !rq.schedule))
        die(WHO ": --virtual-stages %d: chunks per rank (>= 1) of --what-if-schedule", rq.v);
    const bool picture = output && viz_format_of(output) != 0;
    if (output && !picture && !path_has_ext(output, ".json"))
        die(WHO ": -o '%s': analyze writes .json, .png, .svg or .pdf (the text goes to stdout "
                "without -o)",
            output);
    if (picture && ndirs != 1)
        die(WHO ": -o '%s': a picture shows one run, got %d RUN_DIRs", output, ndirs);
    viz_picture_options(WHO, theme, width, height);
    analysis *runs = callocCheck((size_t)ndirs, sizeof *runs);
    for (int i = 0; i < ndirs; i++) analyze_run(&runs[i], dirs[i], &rq);
    if (picture) {
        char title[1024];
        snprintf(title, sizeof title, "%s — step %d, %s: %.3f ms", runs[0].dir, runs[0].g.step,
                 rq.replay ? TRACE_REPLAY_LABEL : "wall clock", 1e3 * runs[0].g.t_end);
        an_draw(output, title, &runs[0].g, &runs[0].path, runs[0].have_causes ? &runs[0].bc : NULL);
        printf("wrote %s\n", output);
    } else if (output) {
        write_json(output, runs, ndirs, rq.replay);
        printf("wrote %s\n", output);
    } else {
        for (int i = 0; i < ndirs; i++) {
            if (i > 0) printf("\n");
            print_text(stdout, &runs[i], rq.replay, rq.full_path);
        }
    }
    for (int i = 0; i < ndirs; i++) analysis_free(&runs[i]);
    free(runs);
    return 0;
}
