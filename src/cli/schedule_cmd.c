/* schedule_cmd.c — `trident schedule`: list, check and draw a pipeline schedule, no MPI.
 *
 *   trident schedule --pipeline-model-parallel-size 4 --num-microbatches 8
 *                    [--pipeline-schedule gpipe|1f1b|interleaved|zb-h1|zbv|dualpipev] [--virtual-stages 2]
 *                    [--forward-cost 1 --backward-cost 2 --p2p-latency 0] [--costs-from RUN_DIR]
 *                    [--format text|json] [-o FILE.png|.svg|.pdf|.json|.txt]
 *                    [--build K] [--arrows] [--hide-memory] [--title TEXT]
 *
 * Costs are honest by default: a stage's backward costs twice its forward, and a chunk of the
 * interleaved schedule costs 1/v of a stage (pp_costs_per_chunk), so interleaving shows its
 * smaller bubble instead of looking slower. --costs-from RUN_DIR takes the mean forward and
 * backward of one chunk and the mean p2p transfer measured in a run's traces instead, from the
 * run's replay "as if each rank had its own core" (src/trace/replay.h: thread CPU time where
 * the trace has it, wall time otherwise; the text says which).
 *
 * It builds every rank's plan (schedule.h), validates it and simulates it (schedule_sim.h),
 * then prints one of:
 *   text     a ranks × time grid from the simulation (one cell per time unit, '.' = idle),
 *            each rank's idle % and peak in-flight micro-batches, and the bubble fraction
 *            measured by the simulation next to the two textbook formulas;
 *   json     {"0": ["F0", "F1", ...], "1": [...], ...}: the action list of each rank;
 *   picture  the predicted timeline (viz/schedule_draw.h), by the extension of -o; with
 *            --build K cut into K time slices for slides (viz/build.h): deck.pdf of K pages,
 *            or frame.png -> frame-01.png .. frame-K.png.
 * Every file is written atomically; bad input ends with one line naming the value and rule.
 *
 * Not here: running a schedule (the executor) or drawing measured timelines (trident render).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/cli/commands.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/checked.h"
#include "src/core/flags.h"
#include "src/core/json.h"
#include "src/pp/schedule.h"
#include "src/pp/stage_costs.h"
#include "src/pp/schedule_sim.h"
#include "src/trace/replay.h"
#include "src/trace/trace.h"
#include "viz/build.h"
#include "viz/canvas.h"
#include "viz/schedule_draw.h"

#define WHO "trident schedule"

enum { OUT_TEXT, OUT_JSON, OUT_PICTURE };

/* ---- text ----------------------------------------------------------------------------- */

enum { SCHEDULE_MAX_TEXT_CELLS = 1 << 20 }; /* a line of the text grid (m·p is below 2^15) */
#define SCHEDULE_MAX_COST 1e9 /* any time unit; a makespan sums at most 2^15 of them */

/* The text grid's cells per rank: one per dt, the shorter of the two costs, over the makespan.
 * Converted by src/core/checked.h: a grid too long to print (a forward of 1e-30 beside a
 * backward of 1e9 is 1e40 cells, which as an int was any number) is refused, before any output
 * is opened. */
static int text_cells(const pp_sim *sim, const pp_costs *costs, double *dt) {
    *dt = costs->forward < costs->backward ? costs->forward : costs->backward;
    const double want = sim->makespan / *dt - 1e-9;
    int64_t n = 0;
    if (checked_to_i64(want, CHECKED_CEIL, 0, SCHEDULE_MAX_TEXT_CELLS, &n) != CHECKED_OK)
        die(WHO ": the text grid would be %.4g cells per rank (the makespan %g over the shorter "
                "cost %g), more than %d: give --forward-cost and --backward-cost closer to each "
                "other",
            want, sim->makespan, *dt, SCHEDULE_MAX_TEXT_CELLS);
    return (int)n;
}

static void write_text(FILE *f, const pp_schedule *s, const pp_sim *sim, const pp_costs *costs,
                       const char *origin) {
    const pp_config *c = &s->cfg;
    char name[32];
    const double fcost = costs->forward, bcost = costs->backward;
    fprintf(
        f,
        "%s schedule: p = %d pipeline ranks, m = %d micro-batches, v = %d model chunk%s per rank\n",
        pp_kind_name(c->kind), c->p, c->m, c->v, c->v > 1 ? "s" : "");
    fprintf(f, "costs of one chunk: forward %g, backward %g, p2p latency %g (%s); makespan %g\n\n",
            fcost, bcost, costs->p2p_latency, origin, sim->makespan);

    /* The grid: one cell per dt of time, showing the action that covers the cell's middle. */
    double dt;
    const int ncell = text_cells(sim, costs, &dt);
    int cw = 2; /* cell width: the longest action name */
    for (int r = 0; r < c->p; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            int k = (int)strlen(pp_action_name(&s->ranks[r].actions[i], c->v, name, sizeof name));
            if (k > cw) cw = k;
        }
    fprintf(f, "time   ");
    for (int k = 0; k < ncell; k += 5) {
        char num[32];
        snprintf(num, sizeof num, "%g", k * dt);
        if (k + 5 < ncell) fprintf(f, "%-*s", 5 * (cw + 1), num);
        else fprintf(f, "%s", num);
    }
    fprintf(f, "\n");
    for (int r = 0; r < c->p; r++) {
        const pp_rank_plan *pl = &s->ranks[r];
        const pp_rank_timeline *tl = &sim->ranks[r];
        fprintf(f, "rank %-2d", r);
        int i = 0;
        for (int k = 0; k < ncell; k++) {
            double mid = (k + 0.5) * dt;
            while (i < pl->n && tl->spans[i].end <= mid) i++;
            const char *cell = ".";
            if (i < pl->n && tl->spans[i].start <= mid)
                cell = pp_action_name(&pl->actions[i], c->v, name, sizeof name);
            if (k + 1 < ncell) fprintf(f, "%-*s ", cw, cell);
            else fprintf(f, "%s", cell); /* no trailing blanks */
        }
        fprintf(f, "\n");
    }

    fprintf(f, "\nrank  idle    peak in-flight micro-batches  warmup\n");
    for (int r = 0; r < c->p; r++)
        fprintf(f, "%4d  %5.1f%%  %-28d  %d\n", r, 100.0 * sim->ranks[r].idle_fraction,
                sim->ranks[r].peak_inflight, s->ranks[r].warmup);
    const double ot = pp_textbook_of_total(c, NULL, 0), oi = pp_textbook_of_ideal(c);
    fprintf(f, "\nbubble (simulated): %.1f%% of the total time\n", 100.0 * sim->bubble_fraction);
    pp_textbook_text tx;
    pp_textbook_formulas(c, &tx);
    fprintf(
        f, "bubble (textbook%s%s):  %s = %.1f%% of the total time, %s = %.1f%% of the ideal time\n",
        tx.assumes[0] ? ", " : "", tx.assumes, tx.total, 100.0 * ot, tx.ideal, 100.0 * oi);
}

/* ---- json ----------------------------------------------------------------------------- */

static void write_json(FILE *f, const pp_schedule *s) {
    char name[32];
    json_writer w;
    json_init_file(&w, f, 2);
    json_begin_object(&w, JSON_LINES);
    for (int r = 0; r < s->cfg.p; r++) {
        snprintf(name, sizeof name, "%d", r);
        json_key(&w, name);
        json_begin_array(&w, JSON_SPACED);
        for (int i = 0; i < s->ranks[r].n; i++)
            json_string(&w, pp_action_name(&s->ranks[r].actions[i], s->cfg.v, name, sizeof name));
        json_end_array(&w);
    }
    json_end_object(&w);
    fputc('\n', f);
}

/* ---- the command ---------------------------------------------------------------------- */

/* What to write, from -o's extension and --format (which must agree when both are given). */
static int output_kind(const char *output, const char *format) {
    int by_format = format && strcmp(format, "json") == 0 ? OUT_JSON : OUT_TEXT;
    if (!output) return by_format;
    int by_ext;
    if (viz_format_of(output)) by_ext = OUT_PICTURE;
    else if (path_has_ext(output, ".json")) by_ext = OUT_JSON;
    else if (path_has_ext(output, ".txt")) by_ext = OUT_TEXT;
    else
        die(WHO ": cannot tell what to write to '%s': the output must end in .png, .svg, .pdf, "
                ".json or .txt",
            output);
    if (format && by_ext != by_format)
        die(WHO ": --format %s does not match the output '%s' (its extension decides: "
                ".png/.svg/.pdf draw, "
                ".json lists, .txt prints the grid)",
            format, output);
    return by_ext;
}

/* --costs-from RUN_DIR: the costs measured in the run's traces, and its layout for every
 * flag left at 0 / unset. The run's schedule name is copied into kind_buf (the run is freed
 * here: nothing may point into it). */
static stage_costs costs_and_layout_from(const char *dir, int *p, int *m, const char **kind_name,
                                         char kind_buf[16], int *v, bool *cpu) {
    char err[1024];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) die(WHO ": --costs-from: %s", err);
    /* the replay: a forward lasts its thread CPU time, with its nested communication, and a
     * receive's copy no longer counts the time a time-shared sender took to come back */
    trace_run *re = trace_run_replay(run, err, sizeof err);
    if (!re) die(WHO ": --costs-from %s: %s", dir, err);
    stage_costs sc;
    if (!stage_costs_measure(re, &sc, err, sizeof err)) die(WHO ": --costs-from %s: %s", dir, err);
    trace_run_free(re);
    *cpu = stage_costs_cpu_timed(run);
    const trace_header *h = trace_file_header(run->ranks[0]);
    if (*p == 0) *p = h->pp; /* the measured run's layout unless told otherwise */
    if (*m == 0) *m = h->num_microbatches;
    if (!*kind_name) {
        snprintf(kind_buf, 16, "%s", h->schedule);
        *kind_name = kind_buf;
    }
    if (*v == 0 && h->vpp > 1 && strcmp(*kind_name, "interleaved") == 0) *v = h->vpp;
    trace_run_free(run);
    return sc;
}

/* The picture's name for the "wrote" line: the file, or a build's pages. */
static void wrote_what(const char *output, const viz_schedule_options *pic, char *out, size_t cap) {
    if (pic->build > 0) viz_build_describe(output, pic->build, out, cap);
    else snprintf(out, cap, "wrote %s", output);
}

/* The picture, the JSON action lists or the text grid: into `output`, or on stdout. */
static void write_output(int kind, const char *output, const pp_schedule *s, const pp_sim *sim,
                         const pp_costs *costs, const char *origin,
                         const viz_schedule_options *pic) {
    double dt;
    if (kind == OUT_TEXT) text_cells(sim, costs, &dt); /* refused before any output */
    if (kind == OUT_PICTURE) {
        char wrote[9000];
        viz_schedule_draw_opt(s, sim, 1, pic, output);
        wrote_what(output, pic, wrote, sizeof wrote);
        printf("%s (%s, p = %d, m = %d, v = %d: makespan %g, bubble %.1f%%)\n", wrote,
               pp_kind_name(s->cfg.kind), s->cfg.p, s->cfg.m, s->cfg.v, sim->makespan,
               100.0 * sim->bubble_fraction);
    } else if (output) {
        atomic_file af;
        FILE *f = atomic_file_open(&af, output);
        if (kind == OUT_JSON) write_json(f, s);
        else write_text(f, s, sim, costs, origin);
        atomic_file_commit(&af);
        printf("wrote %s\n", output);
    } else if (kind == OUT_JSON) {
        write_json(stdout, s);
    } else {
        write_text(stdout, s, sim, costs, origin);
    }
}

static const char k_usage[] =
    "Usage: trident schedule --pipeline-model-parallel-size P --num-microbatches M\n"
    "         [--pipeline-schedule gpipe|1f1b|interleaved|zb-h1|zbv|dualpipev | --compare LIST]\n"
    "         [--virtual-stages V]\n"
    "         [--forward-cost X --backward-cost Y] [--costs-from RUN_DIR] [--format text|json] "
    "[-o FILE]\n"
    "         [--build K] [--arrows] [--hide-memory] [--title TEXT]\n\n"
    "Lists, validates, simulates and draws the pipeline schedule of every rank.\n"
    "Costs are per stage: backward 2 x forward unless given, and a chunk of the interleaved\n"
    "schedule costs 1/v of a stage; --costs-from RUN_DIR uses the costs measured in a run.";

/* Per-chunk costs: from the flags (a stage split over v chunks) or measured per chunk in a
 * run of v_run chunks per rank (a stage = v_run of them, split over this schedule's v).
 * Writes where they come from into origin[0..cap). */
static pp_costs schedule_costs(const pp_config *cfg, float fcost, float bcost, float latency,
                               const char *costs_from, const stage_costs *mc, bool cpu,
                               char *origin, size_t cap) {
    pp_costs costs = pp_costs_per_chunk(cfg, fcost, bcost, latency);
    snprintf(origin, cap, "a stage: forward %g, backward %g, over v = %d chunk%s", (double)fcost,
             (double)bcost, cfg->v, cfg->v > 1 ? "s" : "");
    if (costs_from) {
        const int v_run = mc->cfg.v;
        costs = pp_costs_per_chunk(cfg, mc->forward_mean * v_run, mc->whole_mean * v_run,
                                   mc->latency);
        if (mc->nweight) costs.weight_share = mc->weight_mean / mc->whole_mean;
        snprintf(origin, cap,
                 "seconds: mean of %d forwards and %d backwards%s and of %d receives' transfers in "
                 "the replay of %s, from %s time",
                 mc->nforward, mc->nbackward, v_run != cfg->v ? " rescaled to this v" : "",
                 mc->ntransfer, costs_from, cpu ? "thread CPU" : "wall");
    }
    return costs;
}

/* The simulator's costs: positive, and bounded above so that sums of m·p·v of them stay
 * finite (and printable). A backward cost of 0 means PP_BACKWARD_OVER_FORWARD forwards. */
static void check_costs(float fcost, float *bcost, float latency) {
    if (!(fcost > 0 && fcost <= SCHEDULE_MAX_COST))
        die(WHO ": --forward-cost %g must be positive and at most %g", (double)fcost,
            SCHEDULE_MAX_COST);
    if (*bcost == 0) *bcost = PP_BACKWARD_OVER_FORWARD * fcost;
    if (!(*bcost > 0 && *bcost <= SCHEDULE_MAX_COST))
        die(WHO ": --backward-cost %g must be positive and at most %g (0 means 2 x "
                "--forward-cost)",
            (double)*bcost, SCHEDULE_MAX_COST);
    if (!(latency >= 0 && latency <= SCHEDULE_MAX_COST))
        die(WHO ": --p2p-latency %g must be between 0 and %g", (double)latency, SCHEDULE_MAX_COST);
}

/* What every schedule of one call shares: the sizes, the costs and where they come from. */
typedef struct {
    int p, m, v;
    float fcost, bcost, latency;
    const char *costs_from;
    const stage_costs *mc;
    bool cpu;
    bool name_each;           /* --compare: messages name the schedule */
    viz_schedule_options pic; /* --build, --arrows, --hide-memory, --title */
} schedule_inputs;

/* Schedule `kind_name` at the call's sizes and costs: checked, built, validated and timed. */
static void build_and_time(const schedule_inputs *in, const char *kind_name, pp_schedule *s,
                           pp_sim *sim, pp_costs *costs, char *origin, size_t cap) {
    pp_config cfg = {PP_1F1B, in->p, in->m, in->v};
    if (!pp_kind_parse(kind_name, &cfg.kind))
        die(WHO ": unknown schedule '%s' (one of gpipe|1f1b|interleaved|zb-h1|zbv|dualpipev)",
            kind_name);
    if (in->v == 0) cfg.v = pp_default_chunks(cfg.kind);
    char msg[512];
    if (!pp_config_valid(&cfg, msg, sizeof msg)) /* several schedules: say which one */
        die(WHO ": %s%s%s", in->name_each ? kind_name : "", in->name_each ? ": " : "", msg);
    pp_schedule_build(&cfg, s);
    CHECK(pp_validate(s, msg, sizeof msg), msg);
    *costs = schedule_costs(&cfg, in->fcost, in->bcost, in->latency, in->costs_from, in->mc,
                            in->cpu, origin, cap);
    CHECK(pp_simulate(s, costs, sim, msg, sizeof msg), msg);
}

enum { COMPARE_MAX = 8 };

/* --compare K1,K2,...: every schedule at the same sizes and costs, one panel each on one time
 * scale (a picture: -o FILE.png|.svg|.pdf), or their text grids one after the other. */
static void run_compare(const schedule_inputs *in, const char *list, int out_kind,
                        const char *output) {
    if (out_kind == OUT_JSON)
        die(WHO ": --compare draws a picture (-o FILE.png|.svg|.pdf) or prints text grids, not "
                "JSON");
    char names[256];
    if (strlen(list) >= sizeof names) die(WHO ": --compare '%.40s...' is too long", list);
    snprintf(names, sizeof names, "%s", list);
    pp_schedule s[COMPARE_MAX];
    pp_sim sim[COMPARE_MAX];
    pp_costs costs[COMPARE_MAX];
    char origin[600];
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(names, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (n == COMPARE_MAX)
            die(WHO ": --compare '%s' names more than %d schedules", list, COMPARE_MAX);
        build_and_time(in, tok, &s[n], &sim[n], &costs[n], origin, sizeof origin);
        n++;
    }
    if (n == 0) die(WHO ": --compare '%s' names no schedule (e.g. 1f1b,zb-h1,zbv,dualpipev)", list);
    if (out_kind == OUT_PICTURE) {
        char wrote[9000];
        viz_schedule_draw_opt(s, sim, n, &in->pic, output);
        wrote_what(output, &in->pic, wrote, sizeof wrote);
        printf("%s (%d schedules, p = %d, m = %d:", wrote, n, in->p, in->m);
        for (int i = 0; i < n; i++)
            printf("%s %s %.1f%%", i ? "," : "", pp_kind_name(s[i].cfg.kind),
                   100.0 * sim[i].bubble_fraction);
        printf(")\n");
    } else {
        if (output)
            die(WHO ": --compare writes a picture or prints on the terminal: use -o FILE.png");
        for (int i = 0; i < n; i++) {
            if (i) printf("\n");
            write_text(stdout, &s[i], &sim[i], &costs[i], origin);
        }
    }
    for (int i = 0; i < n; i++) pp_sim_free(&sim[i]), pp_schedule_free(&s[i]);
}

/* The sizes every schedule needs (required flags, or the run's with --costs-from). */
static void check_sizes(int p, int m, int v) {
    if (p < 1)
        die(WHO
            ": --pipeline-model-parallel-size %d must be at least 1 (it is required: the number of "
            "pipeline ranks)",
            p);
    if (m < 1)
        die(WHO
            ": --num-microbatches %d must be at least 1 (it is required: micro-batches per step)",
            m);
    if (v < 0) die(WHO ": --virtual-stages %d must be at least 1 (or 0 for the default)", v);
}

/* --build, --arrows, --hide-memory and --title shape a picture: refused for text and JSON, and
 * checked (K, the extension, the title) before anything is simulated or written. Returns
 * `kind`, what -o writes. */
static int check_picture_flags(viz_schedule_options *pic, const char *build, int kind,
                               const char *output) {
    const bool any = build || pic->arrows || pic->no_memory || pic->title;
    if (any && kind != OUT_PICTURE)
        die(WHO ": --build, --arrows, --hide-memory and --title are for pictures: give -o "
                "FILE.png|.svg|.pdf%s",
            output ? "" : " (without -o the schedule is printed as text)");
    char why[512];
    if (build && !viz_build_parse(build, output, &pic->build, why, sizeof why))
        die(WHO ": %s", why);
    if (pic->title && !viz_title_check(pic->title, why, sizeof why)) die(WHO ": %s", why);
    return kind;
}

/* One schedule: its grid, action lists or picture. */
static void run_one(const schedule_inputs *in, const char *kind_name, int out_kind,
                    const char *output) {
    pp_schedule s;
    pp_sim sim;
    pp_costs costs;
    char origin[600];
    build_and_time(in, kind_name, &s, &sim, &costs, origin, sizeof origin);
    write_output(out_kind, output, &s, &sim, &costs, origin, &in->pic);
    pp_sim_free(&sim);
    pp_schedule_free(&s);
}

int cmd_schedule(int argc, char **argv) {
    int p = 0, m = 0, v = 0;
    float fcost = 1.0f, bcost = 0.0f, latency = 0.0f;
    const char *kind_name = NULL, *format = NULL, *output = NULL, *costs_from = NULL, *theme = NULL;
    const char *compare = NULL, *build = NULL;
    int width = 0, height = 0;
    viz_schedule_options pic = {0};
    const flag_spec specs[] = {
        {"--pipeline-model-parallel-size", FLAG_INT, &p,
         "pipeline ranks P (required; --costs-from: the run's)", NULL},
        {"--num-microbatches", FLAG_INT, &m,
         "micro-batches M per step (required; --costs-from: the run's)", NULL},
        {"--pipeline-schedule", FLAG_CHOICE, &kind_name,
         "the schedule (1f1b; --costs-from: the run's)",
         "gpipe|1f1b|interleaved|zb-h1|zbv|dualpipev"},
        {"--compare", FLAG_STRING, &compare,
         "LIST: several schedules side by side, e.g. 1f1b,zb-h1,zbv,dualpipev (one time scale; "
         "with -o a stacked picture for a slide)",
         NULL},
        {"--virtual-stages", FLAG_INT, &v,
         "model chunks per rank (0: 2 for interleaved, zbv and dualpipev, else 1)", NULL},
        {"--forward-cost", FLAG_FLOAT, &fcost,
         "time of one forward of a whole stage (a chunk: 1/v of it)", NULL},
        {"--backward-cost", FLAG_FLOAT, &bcost,
         "time of one backward of a whole stage (0: 2 x forward)", NULL},
        {"--p2p-latency", FLAG_FLOAT, &latency, "time from a send to its receive", NULL},
        {"--costs-from", FLAG_STRING, &costs_from,
         "RUN_DIR: mean forward/backward of one chunk and p2p transfer measured in its traces "
         "(instead of the three costs above)",
         NULL},
        {"--format", FLAG_CHOICE, &format,
         "what to print without -o (-o's extension decides otherwise)", "text|json"},
        {"--output", FLAG_STRING, &output,
         "FILE.png|.svg|.pdf (picture), .json or .txt; -o for short", NULL},
        {"--theme", FLAG_CHOICE, &theme,
         "look of the picture: default, or slides (large type, thick lines, grey-scale safe)",
         "default|slides"},
        {"--width", FLAG_INT, &width, "picture width in points (pixels for PNG); 0: its own", NULL},
        {"--height", FLAG_INT, &height,
         "picture height in points; 0: its own (both: the picture fits inside, centred)", NULL},
        {"--build", FLAG_STRING, &build,
         "K: the picture cut into K time slices for slides, page k up to k/K of the time (1..64;"
         " -o deck.pdf: K pages, -o frame.png: frame-01.png .. frame-K.png)",
         NULL},
        {"--arrows", FLAG_BOOL, &pic.arrows,
         "dependency arrows: each forward's output to the next stage, each gradient back", NULL},
        {"--hide-memory", FLAG_BOOL, &pic.no_memory,
         "leave out the activations-held curve under each rank", NULL},
        {"--title", FLAG_STRING, &pic.title,
         "TEXT: the picture's title instead of the generated one (one line; with --compare, "
         "above the panels)",
         NULL},
    };
    flags_parse("schedule", k_usage, specs, (int)(sizeof specs / sizeof specs[0]), argc, argv, NULL,
                0);
    viz_picture_options(WHO, theme, width, height);

    stage_costs mc = {0};
    char run_kind[16];
    bool cpu = false;
    if (costs_from) mc = costs_and_layout_from(costs_from, &p, &m, &kind_name, run_kind, &v, &cpu);
    check_sizes(p, m, v);
    check_costs(fcost, &bcost, latency);
    const int kind = check_picture_flags(&pic, build, output_kind(output, format), output);
    const schedule_inputs in = {.p = p,
                                .m = m,
                                .v = v,
                                .fcost = fcost,
                                .bcost = bcost,
                                .latency = latency,
                                .costs_from = costs_from,
                                .mc = &mc,
                                .cpu = cpu,
                                .name_each = compare != NULL,
                                .pic = pic};
    if (compare) run_compare(&in, compare, kind, output);
    else run_one(&in, kind_name ? kind_name : "1f1b", kind, output);
    stage_costs_free(&mc);
    return 0;
}
