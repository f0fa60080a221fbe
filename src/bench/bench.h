/* bench.h — what the suites of `trident bench` share: the report they fill, the context they
 * run in, and the helpers that launch and read real training runs.
 *
 * Every figure of the benchmark is a RATIO of two things measured side by side in the same
 * run (the machine is small and noisy: absolute times mean little, ratios much more). A
 * suite measures, then adds rows to the report:
 *
 *   bench_row_min(ctx->report, "serial", "model FLOP/s ÷ sgemm FLOP/s", r, "%.3f", 0.6);
 *   bench_note(ctx->report, "serial", "GPT-2 small, T = 256, one BLAS thread: %.1f tokens/s", tps);
 *   bench_command(ctx->report, "mpirun -np 2 trident train ...");   // how it was measured
 *
 * The report becomes one markdown table (stdout and RUN_DIR/bench.md, with the notes and the
 * commands below it) and a chart (RUN_DIR/bench.png, viz/bench_chart.h).
 *
 * Multi-rank measurements run the program itself under mpirun: either `trident train` (read
 * back through RUN_DIR/metrics.jsonl and the trace files) or the hidden `trident bench
 * --worker NAME`, which runs inside the MPI job and writes "key value" lines for the parent.
 *
 * Not here: the suites themselves (bench_<suite>.c, one file each) and drawing.
 */
#ifndef TRIDENT_BENCH_BENCH_H
#define TRIDENT_BENCH_BENCH_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "src/train/config.h"

/* ---- the report --------------------------------------------------------------------- */

typedef enum { BENCH_PASS, BENCH_MISS, BENCH_INFO } bench_verdict;

typedef struct {
    char suite[16];   /* "serial", "pipeline", ... */
    char metric[160]; /* what is compared, e.g. "1f1b p=2 m=4: measured − predicted bubble" */
    double value;     /* the measured ratio (or difference) */
    char shown[48];   /* value as printed */
    char target[48];  /* "≥ 0.6", "≤ 1.02", "0.5 ± 0.1", "—" */
    double score;     /* how the value stands to its target: >= 1 met, < 1 missed; NAN: info */
    bench_verdict verdict;
} bench_row;

typedef struct bench_report bench_report;

bench_report *bench_report_new(void);
void bench_report_free(bench_report *r);

/* Rows with a target; `fmt` formats the value (and the bound). Scores: value / min,
 * max / value, and 2 − |value − want| / tol (1 at the edge of the band). A NAN value is
 * printed "n/a" and misses. */
void bench_row_min(bench_report *r, const char *suite, const char *metric, double value,
                   const char *fmt, double min);
void bench_row_max(bench_report *r, const char *suite, const char *metric, double value,
                   const char *fmt, double max);
void bench_row_within(bench_report *r, const char *suite, const char *metric, double value,
                      const char *fmt, double want, double tol, const char *target_text);
/* A row without a target (information, e.g. a speed-up). */
void bench_row_info(bench_report *r, const char *suite, const char *metric, double value,
                    const char *fmt);
/* A line of detail printed under the table, grouped by suite. */
void bench_note(bench_report *r, const char *suite, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A command that produced a measurement (listed in bench.md). */
void bench_command(bench_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int bench_report_num_rows(const bench_report *r);
const bench_row *bench_report_row(const bench_report *r, int i);
int bench_report_misses(const bench_report *r);

/* Writes the table, then the notes per suite, then the commands (markdown). */
void bench_report_write_markdown(const bench_report *r, const char *title, FILE *f);
/* Draws the rows' scores (viz/bench_chart.h) into a .png/.svg/.pdf. */
void bench_report_draw(const bench_report *r, const char *title, const char *path);

/* ---- the context a suite runs in ------------------------------------------------------ */

typedef struct {
    bool quick;          /* shrink everything (the smoke test) */
    const char *run_dir; /* everything a suite writes goes under here */
    char self[4096];     /* this program's path, for mpirun (from /proc/self/exe) */
    const char *device;  /* --device: where the device suite runs ("cpu", "cuda", "cpu-guarded") */
    const char *launch;  /* --launch: mpirun options every multi-rank run gets (a cluster's
                          * hostfile and agent, tools/cluster.sh); NULL: this machine */
    bench_report *report;
} bench_ctx;

/* The suites. Each adds its rows to ctx->report; a failing launch dies with the command. */
void bench_serial(bench_ctx *ctx);
void bench_pipeline(bench_ctx *ctx);
void bench_memory(bench_ctx *ctx);
void bench_comm(bench_ctx *ctx);
void bench_scaling(bench_ctx *ctx);
void bench_trace(bench_ctx *ctx);
void bench_device(bench_ctx *ctx);
void bench_zero(bench_ctx *ctx);
void bench_generate(bench_ctx *ctx); /* bench_generate.c: the KV cache, 256 vs 128 new tokens */
void bench_overlap(bench_ctx *ctx);  /* bench_overlap.c: exposed DP communication, overlapped */
void bench_analyze(bench_ctx *ctx);  /* bench_analyze.c: other schedules predicted from 1f1b */
void bench_plan(bench_ctx *ctx);     /* bench_plan.c: `trident plan`'s predictions vs runs */

/* The pipeline runs, shared by the pipeline and memory suites: the model they train and
 * `mpirun -np p trident train` of one (schedule, p, m) into RUN/pipeline/<schedule>_p<p>_m<m>
 * (run once per process; a second call returns the same directory). */
typedef struct {
    int L, C, NH, T, B; /* layers, hidden, heads, sequence length, micro-batch */
    int steps;          /* training steps per run; the first is not measured */
} bench_pp_model;
bench_pp_model bench_pp_model_of(const bench_ctx *ctx);
const char *bench_pp_run(bench_ctx *ctx, const char *schedule, int p, int m, char *dir, size_t cap);

/* A serial trainer of shape (L, C, NH, T, micro-batch = global batch B) on `device` (NULL:
 * the default), fp32 or --bf16, one BLAS thread, no trace: what the serial and device suites
 * time. Dies as `who` on a bad shape. (bench_serial.c) */
typedef struct trainer trainer;
trainer *bench_serial_trainer(train_config *tc, int L, int C, int NH, int T, int B,
                              const char *device, bool bf16, const char *who);

/* The hidden worker runs inside `mpirun -np 2 trident bench --worker comm --run-dir DIR` and
 * writes DIR/worker_comm.txt ("key value" lines). bench_comm_results() launches it once per
 * process (the comm and memory suites share it) and returns the file's path. */
int bench_worker_comm(const char *run_dir, bool quick);
const char *bench_comm_results(bench_ctx *ctx, char *path, size_t cap);
/* The zero suite's worker: `mpirun -np P trident bench --worker zero` writes
 * DIR/worker_zero_np<P>.txt (bench_zero.c). */
int bench_worker_zero(const char *run_dir, bool quick);
/* The comm suite across hosts (bench_hosts.c): with --launch, ping-pongs from rank 0 within
 * its host and to another host; bench_worker_hosts is its part under mpirun. */
void bench_hosts(bench_ctx *ctx);
int bench_worker_hosts(const char *run_dir, bool quick);

/* ---- running the program ---------------------------------------------------------------- */

/* Runs `SELF <args>` (np == 0: plainly; np >= 1: under mpirun -np np --oversubscribe with
 * the shared-memory transport), output to log_path. Records the command in the report and
 * dies naming the command and the log when it fails. */
void bench_launch(bench_ctx *ctx, int np, const char *log_path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* tokens_per_sec of every logged step in RUN/metrics.jsonl, in order; returns how many. */
int bench_read_tokens_per_sec(const char *run, double *out, int cap);

/* "key value" lines written by a worker: the value of key, or dies naming the file. */
double bench_kv_get(const char *path, const char *key);

/* Median of n values (copies, does not reorder x). NAN for n = 0. */
double bench_median(const double *x, int n);

/* Makes "<run_dir>/<name>" into out; returns out. */
char *bench_path(const bench_ctx *ctx, char *out, size_t cap, const char *name);

#endif /* TRIDENT_BENCH_BENCH_H */
