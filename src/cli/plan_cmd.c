/* plan_cmd.c — `trident plan`: every layout of a model on N ranks, its predicted step time and
 * peak memory, ranked by predicted tokens/s, each with the flags of `trident train` to paste.
 *
 *   trident plan --calibrate --world-size 8              time this machine once (cached)
 *   trident plan --world-size 8 [--memory-limit 2e8] [--top 20]
 *   trident plan --world-size 8 --explain 1              the terms of the first row's time
 *   trident plan ... --calibration FILE                  a calibration made elsewhere
 *   trident plan ... -o plan.png                         the fastest rows as a picture
 *   trident plan ... --ranks-per-node 4 [--inter-node-bandwidth 1.25 --inter-node-latency 25]
 *                                                        hosts of 4 ranks: groups that span
 *                                                        them take the network's α, β
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
    "         [--explain ROW] [--calibrate] [--calibration FILE] [-o FILE.png|.svg|.pdf]\n"
    "         [--ranks-per-node R [--inter-node-bandwidth GB/s] [--inter-node-latency µs]]\n\n"
    "Lists every layout `trident train` accepts for the model on N ranks (tensor, context,\n"
    "expert, pipeline and data parallel sizes, schedule and chunks, ZeRO stage, recomputation,\n"
    "sequence parallelism, overlap flags), with its predicted step time (from this machine's\n"
    "calibration: --calibrate makes it once) and its peak memory (trident memory's prediction),\n"
    "fastest first, each with the flags of trident train to paste. With --ranks-per-node R the\n"
    "ranks sit on hosts of R (Megatron's rank order) and the collectives of groups that span\n"
    "hosts take the network's latency and bandwidth (given, not measured).";

typedef struct {
    train_config c;
    plan_time t;
    size_t memory; /* the largest rank's predicted peak */
    size_t nflags; /* the length of its flags: the shorter, the nearer the defaults */
} plan_row;

/* Fastest first; of layouts predicted alike, the one holding least memory, then the one with
 * the fewest flags. */
static int by_speed(const void *a, const void *b) {
    const plan_row *x = a, *y = b;
    if (x->t.tokens_per_s != y->t.tokens_per_s)
        return (x->t.tokens_per_s < y->t.tokens_per_s) - (x->t.tokens_per_s > y->t.tokens_per_s);
    if (x->memory != y->memory) return (x->memory > y->memory) - (x->memory < y->memory);
    return (x->nflags > y->nflags) - (x->nflags < y->nflags);
}

/* --distinct: of each run of rows whose predicted steps agree within a microsecond (the
 * table's last digit) of the run's first, one kept — the least
 * memory, then the fewest flags: layouts that differ only in what the model says costs nothing
 * (an overlap with nothing to hide, the schedule of one stage). Returns the rows kept. */
static int keep_distinct(plan_row *rows, int n) {
    int kept = 0;
    for (int i = 0; i < n;) {
        int best = i, j = i + 1;
        for (; j < n && rows[j].t.step - rows[i].t.step <= 1e-6; j++)
            if (rows[j].memory < rows[best].memory ||
                (rows[j].memory == rows[best].memory && rows[j].nflags < rows[best].nflags))
                best = j;
        rows[kept++] = rows[best];
        i = j;
    }
    return kept;
}

/* A number given as text: finite, > 0 (>= 0 when zero_ok); 0 when not given. --memory-limit
 * (bytes per rank: 2e9, 2147483648), the network's bandwidth and latency. */
static double parse_number(const char *flag, const char *s, bool zero_ok, const char *what) {
    if (!s) return 0;
    char *end;
    const double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < 0 || (v == 0 && !zero_ok))
        die(WHO ": %s '%s' must be %s number of %s", flag, s,
            zero_ok ? "a non-negative" : "a positive", what);
    return v;
}

/* --ranks-per-node and the network, checked: *per_node (0: one host) and *network. */
static void parse_hosts(const char *per_node_s, const char *gbps_s, const char *us_s, int world,
                        int *per_node, plan_link *network) {
    *per_node = 0;
    if (per_node_s) {
        char *end;
        const long r = strtol(per_node_s, &end, 10);
        if (end == per_node_s || *end || r < 1 || r > world || world % r)
            die(WHO ": --ranks-per-node '%s' must be a whole number from 1 to --world-size %d "
                    "that divides it (hosts of equal size)",
                per_node_s, world);
        *per_node = r < world ? (int)r : 0;
    }
    const double gbps = parse_number("--inter-node-bandwidth", gbps_s, false, "GB/s");
    const double us = parse_number("--inter-node-latency", us_s, true, "microseconds");
    const bool given = gbps_s || us_s;
    *network = plan_links_network((gbps_s ? gbps : PLAN_NETWORK_GB_PER_S) * 1e9,
                                  (us_s ? us : PLAN_NETWORK_LATENCY_US) * 1e-6,
                                  given ? "given" : "default");
}

/* One line: the hosts and the numbers the network terms use (nothing on one host). */
static void print_hosts(const plan_calibration *cal, int world) {
    if (!cal->ranks_per_node) return;
    const plan_link *n = &cal->network;
    printf("hosts: %d of %d ranks each (--ranks-per-node, Megatron's rank order); a group across "
           "hosts takes the network: %.3g GB/s, %.3g µs per message step (%s, not measured: "
           "--inter-node-bandwidth, --inter-node-latency)\n",
           world / cal->ranks_per_node, cal->ranks_per_node, 1e-9 / n->beta, n->alpha * 1e6,
           strcmp(n->source, "given") == 0 ? "given" : "assumed");
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
        if (limit <= 0 || (double)mem <= limit) {
            char flags[1024];
            plan_layout_flags(c, flags, sizeof flags);
            rows[n++] = (plan_row){*c, plan_time_predict(c, tm, cal), mem, strlen(flags)};
        }
        train_memory_free(tm);
    }
    plan_layouts_free(&ls);
    qsort(rows, (size_t)n, sizeof *rows, by_speed);
    *nrows = n;
    return rows;
}

/* The table; with hosts, a column of the groups that span them (plan_groups_across_name). */
static void print_table(const plan_row *rows, int n, int top, bool hosts) {
    printf("%4s %11s %9s %9s %9s %9s %10s%s  %s\n", "row", "tokens/s", "step ms", "compute", "comm",
           "bubble", "memory MB", hosts ? "  across hosts" : "", "trident train flags");
    for (int i = 0; i < n && i < top; i++) {
        const plan_time *t = &rows[i].t;
        char flags[1024], across[64] = "";
        plan_layout_flags(&rows[i].c, flags, sizeof flags);
        if (hosts) {
            char names[48];
            snprintf(across, sizeof across, "  %12s",
                     plan_groups_across_name(t->across, names, sizeof names));
        }
        printf("%4d %11.0f %9.3f %9.3f %9.3f %9.3f %10.2f%s  %s\n", i + 1, t->tokens_per_s,
               t->step * 1e3, (t->busy - t->comm_on_path) * 1e3,
               (t->comm_on_path + t->dp_exposed) * 1e3, t->bubble * 1e3,
               (double)rows[i].memory / 1e6, across,
               flags[0] ? flags : "(no layout flags: the defaults)");
    }
}

/* -o: the first rows (at most --top, at most VIZ_PLAN_MAX_ROWS) as a picture. */
static void draw(const char *path, const plan_row *rows, int n, int top, double limit, int world) {
    viz_plan_row r[VIZ_PLAN_MAX_ROWS];
    static char labels[VIZ_PLAN_MAX_ROWS][1024];
    const int k = n < top ? n : top, shown = k < VIZ_PLAN_MAX_ROWS ? k : VIZ_PLAN_MAX_ROWS;
    for (int i = 0; i < shown; i++) {
        const plan_time *t = &rows[i].t;
        plan_layout_name(&rows[i].c, labels[i], sizeof labels[i]);
        if (rows[i].t.across) { /* the groups on the network, after the flags */
            char names[48];
            const size_t used = strlen(labels[i]);
            snprintf(labels[i] + used, sizeof labels[i] - used, " · across hosts: %s",
                     plan_groups_across_name(rows[i].t.across, names, sizeof names));
        }
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

/* --flags-of ROW: that row's flags alone, for `trident train $(trident plan ... --flags-of 1)`. */
static void print_flags_of(const char *row_s, const plan_row *rows, int n) {
    char *end, flags[1024];
    const long k = strtol(row_s, &end, 10);
    if (end == row_s || *end || k == 0 || k > n || k < -n)
        die(WHO ": --flags-of '%s' must be a row of the table: 1 to %d, or -1 to -%d from the "
                "slowest",
            row_s, n, n);
    plan_layout_flags(&rows[k > 0 ? k - 1 : n + k].c, flags, sizeof flags);
    printf("%s\n", flags);
}

/* What the command prints (and draws) once every layout is predicted: rows[0..n), of nlimit
 * under the memory limit (n < nlimit with --distinct). */
static void report(const plan_row *rows, int n, int nlimit, int nvalid, double seconds, int top,
                   int explain, double limit, const char *output, const plan_calibration *cal,
                   int world) {
    if (explain > n) die(WHO ": --explain %d: the table has %d rows", explain, n);
    char distinct[64] = "";
    if (n < nlimit) snprintf(distinct, sizeof distinct, ", %d predicted distinctly", n);
    printf("%s: %d layouts train accepts on %d rank%s, %d under the memory limit%s, predicted in "
           "%.2f s (calibration: %s)\n",
           WHO, nvalid, world, world == 1 ? "" : "s", nlimit, distinct, seconds, cal->machine);
    print_hosts(cal, world);
    print_table(rows, n, top, cal->ranks_per_node > 0);
    if (explain > 0) {
        char flags[1024];
        plan_layout_flags(&rows[explain - 1].c, flags, sizeof flags);
        printf("\nrow %d: %s\n", explain, flags);
        plan_time_explain(&rows[explain - 1].t, &rows[explain - 1].c, stdout);
    }
    if (output) draw(output, rows, n, top, limit, world);
}

int cmd_plan(int argc, char **argv) {
    train_config c;
    train_config_defaults(&c);
    int world = 0, top = 20, explain = 0;
    bool calibrate = false;
    const char *limit_s = NULL, *calibration = NULL, *links_out = NULL, *output = NULL;
    const char *per_node_s = NULL, *gbps_s = NULL, *us_s = NULL, *flags_of = NULL;
    bool distinct = false;
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
        {"--ranks-per-node", FLAG_STRING, &per_node_s,
         "R: ranks per host, dividing the world size (default: all on one host)", NULL},
        {"--inter-node-bandwidth", FLAG_STRING, &gbps_s,
         "GB/s of the network between hosts (default 1.25: 10 Gbit/s Ethernet, assumed)", NULL},
        {"--inter-node-latency", FLAG_STRING, &us_s,
         "microseconds per message step between hosts (default 25, assumed)", NULL},
        {"--distinct", FLAG_BOOL, &distinct,
         "one row per predicted step (to 1 µs): of layouts predicted alike, the least memory",
         NULL},
        {"--flags-of", FLAG_STRING, &flags_of,
         "ROW: print only that row's trident train flags (1 the fastest, -1 the slowest)", NULL},
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
    const double limit = parse_number("--memory-limit", limit_s, false,
                                      "bytes per rank (e.g. 2e9)");
    if (output && !viz_format_of(output))
        die(WHO ": --output '%s' must end in .png, .svg or .pdf", output);
    int per_node;
    plan_link network;
    parse_hosts(per_node_s, gbps_s, us_s, world, &per_node, &network);
    check_model(&c);
    plan_calibration cal;
    get_calibration(&c, world, calibrate, calibration, &cal);
    cal.ranks_per_node = per_node, cal.network = network;
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
    const int nlimit = n;
    if (distinct) n = keep_distinct(rows, n);
    if (flags_of) print_flags_of(flags_of, rows, n);
    else report(rows, n, nlimit, nvalid, time_now() - t0, top, explain, limit, output, &cal, world);
    free(rows);
    return 0;
}
