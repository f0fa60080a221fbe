/* plan_cmd.c — `trident plan`: every layout of a model on N ranks, its predicted step time and
 * peak memory, ranked by predicted tokens/s, each with the flags of `trident train` to paste.
 *
 *   trident plan --calibrate --world-size 8              time this machine once (cached)
 *   trident plan --world-size 8 [--memory-limit 2e8] [--top 20]
 *   trident plan --world-size 8 --explain 1              the terms of the first row's time
 *   trident plan ... --calibration FILE                  a calibration made elsewhere
 *   trident plan ... -o plan.png                         the fastest rows as a picture
 *
 * The model flags are train's (the layout flags are the planner's to choose). Memory is
 * `trident memory`'s own prediction (src/train/memory_predict.h); time is src/plan/time_model.h
 * with the calibration of src/plan/calibration.h; the layouts are src/plan/enumerate.h's.
 *
 * Not here: the model of time, the calibration, the enumeration (src/plan/).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/cli/commands.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/core/flags.h"
#include "src/plan/calibrate.h"
#include "src/plan/calibration.h"
#include "src/plan/enumerate.h"
#include "src/plan/links.h"
#include "src/plan/time_model.h"
#include "src/train/config.h"
#include "src/train/memory_predict.h"
#include "viz/canvas.h"
#include "viz/plan_draw.h"

#define WHO "trident plan"

enum { PLAN_MAX_WORLD = 1024 };

static const char k_usage[] =
    "Usage: trident plan --world-size N [model flags of train] [--memory-limit BYTES] [--top K]\n"
    "         [--explain ROW] [--calibrate] [--calibration FILE] [-o FILE.png|.svg|.pdf]\n\n"
    "Lists every layout `trident train` accepts for the model on N ranks (tensor, context,\n"
    "expert, pipeline and data parallel sizes, schedule and chunks, ZeRO stage, recomputation,\n"
    "sequence parallelism, overlap flags), with its predicted step time (from this machine's\n"
    "calibration: --calibrate makes it once) and its peak memory (trident memory's prediction),\n"
    "fastest first, each with the flags of trident train to paste.";

typedef struct {
    train_config c;
    plan_time t;
    size_t memory; /* the largest rank's predicted peak */
} plan_row;

static int by_speed(const void *a, const void *b) {
    const plan_row *x = a, *y = b;
    return (x->t.tokens_per_s < y->t.tokens_per_s) - (x->t.tokens_per_s > y->t.tokens_per_s);
}

/* --memory-limit: a positive number of bytes (2e9, 2147483648); 0 when not given. */
static double parse_limit(const char *s) {
    if (!s) return 0;
    char *end;
    const double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v <= 0)
        die(WHO ": --memory-limit '%s' must be a positive number of bytes per rank (e.g. 2e9)", s);
    return v;
}

/* The model flags checked on one rank (every layout flag at 1), so a bad model is named before
 * any layout is tried. */
static void check_model(const train_config *base) {
    train_config c = *base;
    c.tensor_model_parallel_size = c.context_parallel_size = 1;
    c.pipeline_model_parallel_size = c.expert_model_parallel_size = 1;
    c.num_layers_per_virtual_pipeline_stage = 0;
    c.pipeline_schedule = "1f1b";
    c.stage_layers = NULL;
    c.predict_only = true;
    c.global_batch_size = c.micro_batch_size;
    char err[512];
    if (!train_config_check(&c, 1, err, sizeof err)) die(WHO ": %s", err);
}

/* The calibration: measured now (--calibrate) and written, else read. */
static void get_calibration(const train_config *c, int world, bool calibrate, const char *given,
                            plan_calibration *cal) {
    char path[4200];
    if (given) snprintf(path, sizeof path, "%s", given);
    else if (!plan_calibration_cache_path(c, path, sizeof path))
        die(WHO ": neither XDG_CACHE_HOME nor HOME is set: give --calibration FILE");
    char err[1024];
    if (calibrate) {
        const double t0 = time_now();
        plan_calibrate(c, world, cal, WHO);
        plan_calibration_write(cal, path);
        printf("calibrated in %.1f s: %d GEMM shapes, block %.3f + %.3f ms, AdamW %.3g params/s, "
               "trainer factor %.3f; wrote %s\n",
               time_now() - t0, cal->ngemm, cal->block_forward * 1e3, cal->block_backward * 1e3,
               cal->optimizer_per_s, cal->trainer_factor, path);
        return;
    }
    if (access(path, F_OK) != 0 && !given)
        die(WHO ": no calibration of this machine for this model (%s): run trident plan "
                "--calibrate with the same model flags first, or give --calibration FILE",
            path);
    if (!plan_calibration_read(path, c, cal, err, sizeof err))
        die(WHO ": calibration '%s' %s", path, err);
}

/* Every layout, predicted; those over the limit dropped. Returns the rows, fastest first. */
static plan_row *predict_all(const train_config *base, int world, double limit,
                             const plan_calibration *cal, int *nrows, int *nvalid) {
    plan_layouts ls;
    plan_enumerate(base, world, &ls);
    *nvalid = ls.n;
    plan_row *rows = callocCheck((size_t)(ls.n ? ls.n : 1), sizeof *rows);
    int n = 0;
    for (int i = 0; i < ls.n; i++) {
        train_config *c = &ls.items[i];
        train_memory *tm = train_memory_predict(c, train_config_zero_stage(c), WHO);
        const size_t mem = tm->ranks[train_memory_largest(tm)].total;
        if (limit <= 0 || (double)mem <= limit)
            rows[n++] = (plan_row){*c, plan_time_predict(c, tm, cal), mem};
        train_memory_free(tm);
    }
    plan_layouts_free(&ls);
    qsort(rows, (size_t)n, sizeof *rows, by_speed);
    *nrows = n;
    return rows;
}

static void print_table(const plan_row *rows, int n, int top) {
    printf("%4s %11s %9s %9s %9s %9s %10s  %s\n", "row", "tokens/s", "step ms", "compute", "comm",
           "bubble", "memory MB", "trident train flags");
    for (int i = 0; i < n && i < top; i++) {
        const plan_time *t = &rows[i].t;
        char flags[1024];
        plan_layout_flags(&rows[i].c, flags, sizeof flags);
        printf("%4d %11.0f %9.3f %9.3f %9.3f %9.3f %10.2f  %s\n", i + 1, t->tokens_per_s,
               t->step * 1e3, (t->busy - t->comm_on_path) * 1e3,
               (t->comm_on_path + t->dp_exposed) * 1e3, t->bubble * 1e3,
               (double)rows[i].memory / 1e6, flags[0] ? flags : "(no flags: one rank's layout)");
    }
}

/* -o: the first rows (at most --top, at most VIZ_PLAN_MAX_ROWS) as a picture. */
static void draw(const char *path, const plan_row *rows, int n, int top, double limit, int world) {
    viz_plan_row r[VIZ_PLAN_MAX_ROWS];
    static char labels[VIZ_PLAN_MAX_ROWS][1024];
    const int k = n < top ? n : top, shown = k < VIZ_PLAN_MAX_ROWS ? k : VIZ_PLAN_MAX_ROWS;
    for (int i = 0; i < shown; i++) {
        const plan_time *t = &rows[i].t;
        plan_layout_flags(&rows[i].c, labels[i], sizeof labels[i]);
        r[i] = (viz_plan_row){
            labels[i],
            {t->busy - t->comm_on_path, t->comm_on_path + t->dp_exposed, t->bubble, t->optimizer},
            (double)rows[i].memory};
    }
    char title[256];
    snprintf(title, sizeof title,
             "Predicted step and peak memory, the %d fastest of %d layouts on %d ranks", shown, n,
             world);
    viz_plan_chart ch = {r, shown, title, limit};
    viz_plan_draw(path, &ch);
    printf("wrote %s\n", path);
}

int cmd_plan(int argc, char **argv) {
    train_config c;
    train_config_defaults(&c);
    int world = 0, top = 20, explain = 0;
    bool calibrate = false;
    const char *limit_s = NULL, *calibration = NULL, *links_out = NULL, *output = NULL;
    const flag_spec extra[] = {
        {"--world-size", FLAG_INT, &world, "number of ranks to plan for (required)", NULL},
        {"--memory-limit", FLAG_STRING, &limit_s,
         "bytes per rank (e.g. 2e9): layouts whose largest rank predicts more are not listed",
         NULL},
        {"--top", FLAG_INT, &top, "rows of the table (fastest first; default 20)", NULL},
        {"--explain", FLAG_INT, &explain, "print the terms of row ROW's predicted time", NULL},
        {"--calibrate", FLAG_BOOL, &calibrate,
         "time this machine's kernels and links for the model first (cached)", NULL},
        {"--calibration", FLAG_STRING, &calibration,
         "the calibration file to use (or write, with --calibrate); default: the cache", NULL},
        {"--output", FLAG_STRING, &output,
         "FILE.png|.svg|.pdf: the first rows' predicted steps and memory; -o for short", NULL},
        {"--links-worker", FLAG_STRING, &links_out, "(internal: the MPI worker of --calibrate)",
         NULL},
    };
    train_config_parse_extra(&c, "plan", k_usage, extra, (int)(sizeof extra / sizeof extra[0]),
                             argc, argv);
    if (links_out) return plan_links_worker(links_out);
    if (world < 1 || world > PLAN_MAX_WORLD)
        die(WHO ": --world-size %d must be 1 to %d (it is required: the number of ranks)", world,
            PLAN_MAX_WORLD);
    if (top < 1) die(WHO ": --top %d must be at least 1", top);
    if (explain < 0) die(WHO ": --explain %d must be a row of the table (1 or more)", explain);
    const double limit = parse_limit(limit_s);
    if (output && !viz_format_of(output))
        die(WHO ": --output '%s' must end in .png, .svg or .pdf", output);
    check_model(&c);
    plan_calibration cal;
    get_calibration(&c, world, calibrate, calibration, &cal);
    const double t0 = time_now();
    int n, nvalid;
    plan_row *rows = predict_all(&c, world, limit, &cal, &n, &nvalid);
    if (nvalid == 0)
        die(WHO ": no layout of this model runs on --world-size %d ranks (the global batch %d must "
                "divide into micro-batches of %d over the data-parallel ranks; try a world size "
                "that divides the layers, heads and batch)",
            world, c.global_batch_size, c.micro_batch_size);
    if (n == 0)
        die(WHO ": no layout fits --memory-limit %s bytes per rank (%d layouts run on %d ranks; "
                "trident memory shows what each holds)",
            limit_s, nvalid, world);
    printf("%s: %d layouts train accepts on %d rank%s, %d under the memory limit, predicted in "
           "%.2f s (calibration: %s)\n",
           WHO, nvalid, world, world == 1 ? "" : "s", n, time_now() - t0, cal.machine);
    print_table(rows, n, top);
    if (explain > n) die(WHO ": --explain %d: the table has %d rows", explain, n);
    if (explain > 0) {
        char flags[1024];
        plan_layout_flags(&rows[explain - 1].c, flags, sizeof flags);
        printf("\nrow %d: %s\n", explain, flags);
        plan_time_explain(&rows[explain - 1].t, &rows[explain - 1].c, stdout);
    }
    if (output) draw(output, rows, n, top, limit, world);
    free(rows);
    return 0;
}
