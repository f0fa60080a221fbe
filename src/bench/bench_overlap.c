/* bench_overlap.c — the overlap suite: how much of the data-parallel communication the
 * communication stream hides (--overlap-grad-reduce, --overlap-param-gather;
 * src/zero/overlap.h, src/runtime/comm_stream.h).
 *
 * Four variants of one training run, each run 3 times in turn (plain, +grad, zero, zero+both,
 * plain, ...), at dp 2 on 2 ranks, one micro-batch per rank per step
 * (so the whole backward is the window the gradient buckets can hide behind):
 *
 *   plain          all-reduce of the buckets after the backward (blocking)
 *   +grad          the same buckets all-reduced on the stream as the backward produces them
 *   zero           ZeRO-1: reduce-scatter, update of the shard, all-gather (blocking)
 *   zero+both      ZeRO-1 with both flags: bucket reduce-scatters during the backward, bucket
 *                  all-gathers during the next step's forward
 *
 * EXPOSED time is what a rank's main thread spent in that communication, read from the
 * traces: without overlap, the blocking collectives labelled "grads" (or "params"); with it,
 * the main thread's waits for them (op "wait", the same labels). A rank that finished its
 * backward early also waits there for its slower peer (on 2 cores shared with other work
 * the ranks drift apart by tens of ms), which is not communication: so each step counts the
 * rank that arrived last (the smaller of the two ranks' times), and the figure is the median
 * over the steps after the first two. Rows: exposed with ÷ exposed without (target ≤ 0.30)
 * for the gradients at dp 2 and for the ZeRO parameter gather, and step time with ÷ without
 * (information: on 2 shared cores the stream's thread takes some of the compute's core).
 *
 * Not here: the mechanism (src/zero/overlap.c), the pictures of a run (its timeline shows the
 * stream lane).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/bench/bench.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/trace/trace.h"

typedef struct {
    int L, C, NH, T, B, steps;
} ov_model;

/* Full: ~12.7M parameters, a 51 MB gradient buffer in 65 buckets of at most 256K elements
 * (1 MiB: the last bucket, which holds the embedding and is ready only when the backward ends,
 * is the tail no overlap can hide, and a small bucket keeps it short: side by side on a quiet
 * machine, 4 MiB buckets left 2.7 ms exposed per step and 1 MiB 0.4 ms, against 23 and 16 ms
 * blocking); quick: a small model and few steps (the smoke test). */
enum { OV_BUCKET = 262144 };
static ov_model model_of(const bench_ctx *ctx) {
    return ctx->quick ? (ov_model){2, 64, 4, 32, 2, 4} : (ov_model){4, 512, 8, 64, 2, 8};
}

/* `mpirun -np 2 trident train` of the model with `flags` into RUN/overlap/<name>. */
static void run(bench_ctx *ctx, const char *name, const char *flags, char *dir, size_t cap) {
    const ov_model m = model_of(ctx);
    char parent[4200], log[4300];
    snprintf(parent, sizeof parent, "%s/overlap", ctx->run_dir);
    make_dirs(parent);
    snprintf(dir, cap, "%s/%s", parent, name);
    snprintf(log, sizeof log, "%s.log", dir);
    bench_launch(ctx, 2, log,
                 "train --num-layers %d --hidden-size %d --num-attention-heads %d --seq-length %d "
                 "--micro-batch-size %d --global-batch-size %d --train-iters %d --eval-iters 0 "
                 "--log-interval 1 --ddp-bucket-size %d --quiet%s --run-dir %s",
                 m.L, m.C, m.NH, m.T, m.B, 2 * m.B, m.steps, OV_BUCKET, flags, dir);
}

typedef struct {
    double grads, params, step; /* seconds per step: medians over the measured steps */
    int n;                      /* steps measured */
} ov_exposed;

enum { OV_MAX_STEPS = 64 };

/* The step event of `step` on one rank, or NULL. */
static const trace_event *step_event(const trace_file *f, int step) {
    for (size_t i = 0; i < trace_file_num_events(f); i++) {
        const trace_event *e = trace_file_event(f, i);
        if (e->kind == TRACE_STEP && e->step == step && !(e->flags & TRACE_OPEN)) return e;
    }
    return NULL;
}

/* Main-thread seconds in collectives labelled `label` during step event se of rank f. */
static double in_step(const trace_file *f, const trace_event *se, const char *label) {
    double sum = 0;
    for (size_t i = 0; i < trace_file_num_events(f); i++) {
        const trace_event *e = trace_file_event(f, i);
        if (e->kind != TRACE_COLLECTIVE || (e->flags & TRACE_STREAM)) continue;
        if (e->t_start < se->t_start || e->t_start > se->t_end) continue;
        if (strcmp(trace_file_string(f, e->label), label) == 0) sum += e->t_end - e->t_start;
    }
    return sum;
}

/* Steps 3 .. of one run, appended to g, p, t at *n: the last-arriving rank's exposed grads and
 * params time, and the step time. */
static void exposed_of(const char *dir, int steps, double *g, double *p, double *t, int *pn) {
    char err[512];
    trace_run *r = trace_run_read(dir, err, sizeof err);
    if (!r) die("bench overlap: %s", err);
    int n = *pn;
    for (int s = 3; s <= steps && n < OV_MAX_STEPS; s++) {
        double gs = INFINITY, ps = INFINITY, ts = 0;
        for (int k = 0; k < r->nranks; k++) {
            const trace_event *se = step_event(r->ranks[k], s);
            if (!se) break;
            gs = fmin(gs, in_step(r->ranks[k], se, "grads"));
            ps = fmin(ps, in_step(r->ranks[k], se, "params"));
            ts = fmax(ts, se->t_end - se->t_start);
        }
        if (!isfinite(gs) || ts == 0) continue;
        g[n] = gs, p[n] = ps, t[n] = ts, n++;
    }
    trace_run_free(r);
    if (n == *pn) die("bench overlap: the run in %s has no complete step after the second", dir);
    *pn = n;
}

/* The four variants, ROUNDS times in turn (plain, +grad, zero, zero+both, plain, ...): the
 * machine's load drifts, and interleaving gives every variant its share of each phase. */
enum { OV_VARIANTS = 4 };
static void measure(bench_ctx *ctx, ov_exposed out[OV_VARIANTS]) {
    static const char *const names[OV_VARIANTS] = {"plain", "grad", "zero", "zero_both"};
    static const char *const flags[OV_VARIANTS] = {
        "", " --overlap-grad-reduce", " --use-distributed-optimizer",
        " --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"};
    const int rounds = ctx->quick ? 1 : 3, steps = model_of(ctx).steps;
    static double g[OV_VARIANTS][OV_MAX_STEPS], p[OV_VARIANTS][OV_MAX_STEPS],
        t[OV_VARIANTS][OV_MAX_STEPS];
    int n[OV_VARIANTS] = {0};
    for (int r = 0; r < rounds; r++)
        for (int v = 0; v < OV_VARIANTS; v++) {
            char name[64], dir[4200];
            snprintf(name, sizeof name, "%s_%d", names[v], r);
            run(ctx, name, flags[v], dir, sizeof dir);
            exposed_of(dir, steps, g[v], p[v], t[v], &n[v]);
        }
    for (int v = 0; v < OV_VARIANTS; v++)
        out[v] = (ov_exposed){bench_median(g[v], n[v]), bench_median(p[v], n[v]),
                              bench_median(t[v], n[v]), n[v]};
}

void bench_overlap(bench_ctx *ctx) {
    const ov_model m = model_of(ctx);
    ov_exposed x[OV_VARIANTS];
    measure(ctx, x);
    const ov_exposed plain = x[0], grad = x[1], zero = x[2], both = x[3];
    bench_note(ctx->report, "overlap",
               "model: %d layers, hidden %d, %d heads, seq %d, micro-batch %d, dp 2 (one "
               "micro-batch per rank per step), %d steps per run, steps 3.. measured, %d runs of "
               "each variant in turn (medians over %d steps); buckets of --ddp-bucket-size %d "
               "elements",
               m.L, m.C, m.NH, m.T, m.B, m.steps, ctx->quick ? 1 : 3, plain.n, OV_BUCKET);
    bench_note(ctx->report, "overlap",
               "exposed gradient reduction per step: %.2f ms blocking, %.2f ms with "
               "--overlap-grad-reduce; ZeRO: %.2f ms blocking, %.2f ms overlapped",
               1e3 * plain.grads, 1e3 * grad.grads, 1e3 * zero.grads, 1e3 * both.grads);
    bench_note(ctx->report, "overlap",
               "exposed ZeRO parameter all-gather per step: %.2f ms blocking, %.2f ms with "
               "--overlap-param-gather",
               1e3 * zero.params, 1e3 * both.params);
    bench_note(ctx->report, "overlap",
               "step time: plain %.1f ms, +grad %.1f ms; zero %.1f ms, zero+both %.1f ms",
               1e3 * plain.step, 1e3 * grad.step, 1e3 * zero.step, 1e3 * both.step);
    bench_row_max(ctx->report, "overlap",
                  "dp 2: exposed gradient all-reduce, --overlap-grad-reduce ÷ blocking",
                  grad.grads / plain.grads, "%.2f", 0.30);
    bench_row_max(ctx->report, "overlap",
                  "dp 2 ZeRO: exposed gradient reduce-scatter, overlapped ÷ blocking",
                  both.grads / zero.grads, "%.2f", 0.30);
    bench_row_max(ctx->report, "overlap",
                  "dp 2 ZeRO: exposed parameter all-gather, --overlap-param-gather ÷ blocking",
                  both.params / zero.params, "%.2f", 0.30);
    bench_row_info(ctx->report, "overlap", "dp 2: step time, --overlap-grad-reduce ÷ blocking",
                   grad.step / plain.step, "%.2f");
    bench_row_info(ctx->report, "overlap", "dp 2 ZeRO: step time, both overlaps ÷ blocking",
                   both.step / zero.step, "%.2f");
}
