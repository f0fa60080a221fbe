/* bench_overlap.c — the overlap suite: how much of the data-parallel communication the
 * communication stream hides (--overlap-grad-reduce, --overlap-param-gather;
 * src/zero/overlap.h, src/runtime/comm_stream.h).
 *
 * Four training runs of the same model at dp 2 on 2 ranks, one micro-batch per rank per step
 * (so the whole backward is the window the gradient buckets can hide behind):
 *
 *   plain          all-reduce of the buckets after the backward (blocking)
 *   +grad          the same buckets all-reduced on the stream as the backward produces them
 *   zero           ZeRO-1: reduce-scatter, update of the shard, all-gather (blocking)
 *   zero+both      ZeRO-1 with both flags: bucket reduce-scatters during the backward, bucket
 *                  all-gathers during the next step's forward
 *
 * EXPOSED time is what the rank's main thread spent in that communication, read from the
 * traces: without overlap, the blocking collectives labelled "grads" (or "params"); with it,
 * the main thread's waits for them (op "wait", the same labels). Per rank and step (every
 * step after the first two), averaged. Rows: exposed with ÷ exposed without (target ≤ 0.30)
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

/* Full: ~12.7M parameters, a 51 MB gradient buffer in 13 buckets of 1M elements; quick: a
 * small model and few steps (the smoke test). */
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
                 "--log-interval 1 --quiet%s --run-dir %s",
                 m.L, m.C, m.NH, m.T, m.B, 2 * m.B, m.steps, flags, dir);
}

typedef struct {
    double grads, params, step; /* seconds per rank per step, means */
    int n;                      /* (rank, step) pairs measured */
} ov_exposed;

/* The step event of `step` on one rank, or NULL. */
static const trace_event *step_event(const trace_file *f, int step) {
    for (size_t i = 0; i < trace_file_num_events(f); i++) {
        const trace_event *e = trace_file_event(f, i);
        if (e->kind == TRACE_STEP && e->step == step && !(e->flags & TRACE_OPEN)) return e;
    }
    return NULL;
}

/* Main-thread time in collectives labelled grads / params, per rank and step (steps >= 3). */
static ov_exposed exposed_of(const char *dir, int steps) {
    char err[512];
    trace_run *r = trace_run_read(dir, err, sizeof err);
    if (!r) die("bench overlap: %s", err);
    ov_exposed x = {0, 0, 0, 0};
    for (int k = 0; k < r->nranks; k++) {
        const trace_file *f = r->ranks[k];
        for (int s = 3; s <= steps; s++) {
            const trace_event *se = step_event(f, s);
            if (!se) continue;
            x.step += se->t_end - se->t_start;
            x.n++;
            for (size_t i = 0; i < trace_file_num_events(f); i++) {
                const trace_event *e = trace_file_event(f, i);
                if (e->kind != TRACE_COLLECTIVE || (e->flags & TRACE_STREAM)) continue;
                if (e->t_start < se->t_start || e->t_start > se->t_end) continue;
                const char *label = trace_file_string(f, e->label);
                if (strcmp(label, "grads") == 0) x.grads += e->t_end - e->t_start;
                else if (strcmp(label, "params") == 0) x.params += e->t_end - e->t_start;
            }
        }
    }
    trace_run_free(r);
    if (x.n == 0) die("bench overlap: the run in %s has no complete step after the second", dir);
    x.grads /= x.n, x.params /= x.n, x.step /= x.n;
    return x;
}

void bench_overlap(bench_ctx *ctx) {
    const ov_model m = model_of(ctx);
    char d_plain[4200], d_grad[4200], d_zero[4200], d_both[4200];
    run(ctx, "plain", "", d_plain, sizeof d_plain);
    run(ctx, "grad", " --overlap-grad-reduce", d_grad, sizeof d_grad);
    run(ctx, "zero", " --use-distributed-optimizer", d_zero, sizeof d_zero);
    run(ctx, "zero_both",
        " --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather", d_both,
        sizeof d_both);
    const ov_exposed plain = exposed_of(d_plain, m.steps), grad = exposed_of(d_grad, m.steps);
    const ov_exposed zero = exposed_of(d_zero, m.steps), both = exposed_of(d_both, m.steps);
    bench_note(ctx->report, "overlap",
               "model: %d layers, hidden %d, %d heads, seq %d, micro-batch %d, dp 2 (one "
               "micro-batch per rank per step), %d steps per run, steps 3.. measured; buckets of "
               "--ddp-bucket-size 1048576 elements",
               m.L, m.C, m.NH, m.T, m.B, m.steps);
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
