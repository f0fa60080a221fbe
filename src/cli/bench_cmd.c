/* bench_cmd.c — `trident bench`: performance as ratios measured side by side in one run.
 *
 *   trident bench [--suite serial|pipeline|memory|comm|scaling|trace|device|zero|generate|overlap|analyze|plan|all] [--device D] [--quick] [--run-dir DIR]
 *
 * Runs the chosen suites (bench_<suite>.c), prints one markdown table with a PASS/MISS
 * column against each target, and writes it with its notes and the commands that measured
 * it to RUN_DIR/bench.md, and a chart of the ratios to RUN_DIR/bench.png. The exit status is
 * 0 even when a target is missed (a miss is a finding, not an error); bad flags exit 1.
 *
 * Hidden: `trident bench --worker comm --run-dir DIR` is what the comm suite runs under
 * mpirun; it is not meant to be typed.
 *
 * Not here: the measurements (one file per suite) and the drawing (viz/bench_chart.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/bench/bench.h"
#include "src/cli/commands.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/core/flags.h"
#include "viz/canvas.h"

static const char k_usage[] =
    "Usage: trident bench [--suite "
    "serial|pipeline|memory|comm|scaling|trace|device|zero|generate|overlap|analyze|plan|all] "
    "[--device "
    "cpu|cuda|cpu-guarded]\n"
    "                     [--quick] [--run-dir DIR]\n\n"
    "Measures performance as ratios of things timed side by side in the same run (medians of\n"
    "interleaved repeats), prints one table with a PASS/MISS column against each target, and\n"
    "writes RUN_DIR/bench.md (table, details, the commands that measured it) and "
    "RUN_DIR/bench.png.\n"
    "  serial    model FLOP/s of a GPT-2-small training step ÷ sgemm FLOP/s on its own shapes\n"
    "  pipeline  measured bubble vs the schedule simulated with the run's own costs (and the\n"
    "            textbook's) of gpipe, 1f1b, interleaved, zb-h1, zbv, dualpipev at p = 2, 4\n"
    "            (8 without --quick) and m = 4, 8\n"
    "  memory    peak activations 1f1b ÷ gpipe, interleaved ÷ 1f1b, ZeRO-1 optimizer state ÷ dp;\n"
    "            allocator peak ÷ `trident memory`'s prediction at GPT-2 small's shape (T 512)\n"
    "  comm      gradient all-reduce vs plain MPI, reduce-scatter + all-gather vs all-reduce,\n"
    "            counted tensor- and pipeline-parallel bytes vs their formulas\n"
    "  scaling   tokens/s at 2 ranks (TP, PP, DP) ÷ serial\n"
    "  trace     step time with tracing ÷ without\n"
    "  device    model FLOP/s of a training step on --device ÷ that device's GEMM FLOP/s on the\n"
    "            model's linear shapes, fp32 and bf16 (--bf16: the bf16 GEMMs; on a GPU: --suite "
    "device\n"
    "            --device cuda); `all` includes it only when --device is not cpu\n"
    "  zero      ZeRO optimizer step in place ÷ the old step that copied the buffers, dp 2 and 4\n"
    "  generate  `trident generate` with the KV cache: cost per token of 256 ÷ 128 new tokens\n"
    "            after a 16-token prompt at the demo's model size (and the no-cache contrast)\n"
    "  overlap   exposed DP gradient reduction and ZeRO parameter gather with "
    "--overlap-grad-reduce\n"
    "            and --overlap-param-gather ÷ without them, dp 2 on 2 ranks\n"
    "  analyze   gpipe, interleaved, zb-h1, zbv step times predicted from a traced 1f1b run\n"
    "            (trident analyze --what-if-schedule) ÷ measured, p = 2 wall clock, p = 4 replay\n"
    "  plan      `trident plan`'s predicted step vs measured runs (2 ranks wall clock, 4 ranks\n"
    "            replay) of 19 layouts at 2 and 20 at 4 ranks: median, worst |error|,\n"
    "            Spearman, the predicted best; plan-scatter.png\n"
    "Multi-rank suites run this program under mpirun -np N --oversubscribe.";

static const char *const k_suites[] = {"serial",   "pipeline", "memory",  "comm",
                                       "scaling",  "trace",    "device",  "zero",
                                       "generate", "overlap",  "analyze", "plan"};
static void (*const k_suite_fns[])(bench_ctx *) = {
    bench_serial, bench_pipeline, bench_memory,   bench_comm,    bench_scaling, bench_trace,
    bench_device, bench_zero,     bench_generate, bench_overlap, bench_analyze, bench_plan};
enum { NUM_SUITES = (int)(sizeof k_suites / sizeof k_suites[0]) };

static void find_self(bench_ctx *ctx, const char *argv0) {
    ssize_t n = readlink("/proc/self/exe", ctx->self, sizeof ctx->self - 1);
    if (n > 0) {
        ctx->self[n] = '\0';
        return;
    }
    snprintf(ctx->self, sizeof ctx->self, "%s", argv0 ? argv0 : "trident");
}

static void write_outputs(const bench_ctx *ctx, const char *title) {
    char path[4200];
    atomic_file af;
    FILE *f = atomic_file_open(&af, bench_path(ctx, path, sizeof path, "bench.md"));
    fprintf(f, "# trident bench\n\n");
    bench_report_write_markdown(ctx->report, title, f);
    atomic_file_commit(&af);
    bench_report_draw(ctx->report, title, bench_path(ctx, path, sizeof path, "bench.png"));
}

int cmd_bench(int argc, char **argv) {
    const char *suite = "all", *run_dir = "runs/bench", *worker = NULL, *device = "cpu";
    const char *theme = NULL, *launch = NULL;
    int width = 0, height = 0;
    bool quick = false;
    flag_spec specs[] = {
        {"--suite", FLAG_CHOICE, &suite, "which measurements",
         "serial|pipeline|memory|comm|scaling|trace|device|zero|generate|overlap|analyze|plan|all"},
        {"--device", FLAG_CHOICE, &device, "the device of the device suite",
         "cpu|cuda|cpu-guarded"},
        {"--quick", FLAG_BOOL, &quick,
         "small models and few repeats: the whole suite in under a minute", NULL},
        {"--run-dir", FLAG_STRING, &run_dir, "where bench.md, bench.png and the measured runs go",
         NULL},
        {"--worker", FLAG_STRING, &worker, "internal: the part that runs under mpirun (comm, zero)",
         NULL},
        {"--theme", FLAG_CHOICE, &theme,
         "look of bench.png: default, or slides (large type, thick lines, grey-scale safe)",
         "default|slides"},
        {"--width", FLAG_INT, &width, "bench.png width in points; 0: its own", NULL},
        {"--height", FLAG_INT, &height, "bench.png height in points; 0: its own", NULL},
        {"--launch", FLAG_STRING, &launch,
         "mpirun options for every multi-rank measurement, e.g. a cluster's hostfile and agent "
         "(tools/cluster.sh prints them); the comm suite then also measures within a host vs "
         "between hosts",
         NULL},
    };
    const char *pos[1];
    int npos = flags_parse("bench", k_usage, specs, (int)(sizeof specs / sizeof specs[0]), argc,
                           argv, pos, 0);
    (void)npos;
    viz_picture_options("trident bench", theme, width, height);
    if (worker) {
        if (strcmp(worker, "comm") == 0) return bench_worker_comm(run_dir, quick);
        if (strcmp(worker, "zero") == 0) return bench_worker_zero(run_dir, quick);
        if (strcmp(worker, "hosts") == 0) return bench_worker_hosts(run_dir, quick);
        die("trident bench: --worker %s is not a worker (they are comm, zero and hosts)", worker);
    }
    if (launch && (strchr(launch, '\'') || strstr(launch, "-np")))
        die("trident bench: --launch '%s' must be mpirun options without quotes or -np (the "
            "suites choose the rank counts)",
            launch);
    bench_ctx ctx = {.quick = quick,
                     .run_dir = run_dir,
                     .device = device,
                     .launch = launch,
                     .report = bench_report_new()};
    find_self(&ctx, NULL);
    char why[512];
    if (!make_dirs_try(run_dir, why, sizeof why))
        die("trident bench: --run-dir %s: %s", run_dir, why);
    char title[256];
    snprintf(title, sizeof title, "suite %s%s", suite,
             quick ? " (--quick: small models, few repeats)" : "");
    double t0 = time_now();
    for (int i = 0; i < NUM_SUITES; i++) {
        if (strcmp(suite, "all") != 0 && strcmp(suite, k_suites[i]) != 0) continue;
        if (strcmp(suite, "all") == 0 && strcmp(k_suites[i], "device") == 0 &&
            strcmp(device, "cpu") == 0)
            continue; /* on the cpu it would repeat the serial suite */
        if (strcmp(suite, "all") == 0 && strcmp(k_suites[i], "plan") == 0)
            continue; /* 32 training runs: asked for by name */
        fprintf(stderr, "bench: %s ...\n", k_suites[i]);
        double ts = time_now();
        k_suite_fns[i](&ctx);
        fprintf(stderr, "bench: %s done in %.1f s\n", k_suites[i], time_now() - ts);
    }
    bench_note(ctx.report, "run", "wall time of the whole benchmark: %.1f s", time_now() - t0);
    bench_report_write_markdown(ctx.report, title, stdout);
    write_outputs(&ctx, title);
    printf("\nwrote %s/bench.md and %s/bench.png\n", run_dir, run_dir);
    bench_report_free(ctx.report);
    return 0;
}
