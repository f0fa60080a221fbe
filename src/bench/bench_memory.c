/* bench_memory.c — the memory suite: what each schedule and ZeRO-1 keep, measured, against
 * the formulas.
 *
 * Activations. The executor records the bytes of activations it holds after every change
 * (TRACE_MEMORY samples in the trace). The peak on pipeline stage 0 — the stage that holds
 * the most — of the pipeline suite's runs (bench_pp_run) gives
 *     1f1b ÷ gpipe         = min(p, m) / m         1f1b keeps at most p micro-batches, gpipe m
 *     interleaved ÷ 1f1b   = 1 + (p − 1)/(p·v)     stage 0 keeps 2(p−1) + (v−1)p + 1 chunks of
 *                                                  L/(p·v) blocks vs p sets of L/p blocks
 * (the second in general min(m·v, 2(p−1)+(v−1)p+1) / (v·min(p, m)), which is the formula once
 * m·v is at least the warm-up). Both within ±5%.
 *
 * Optimizer state. From the comm worker (bench_comm.c), which builds the trainer with and
 * without --use-distributed-optimizer at dp = 2 and reads distopt_state_bytes(): unsharded ÷
 * sharded must be dp, apart from the padding of the shards (within 1%).
 *
 * Predicted ÷ measured at GPT-2 small's shape (L 12, C 768, NH 12, T 512, micro-batch 1; T 1024
 * would need 4 × ~3.2 GB for dp 4 without ZeRO on a 24 GiB machine shared with other jobs).
 * Each layout trains one step under mpirun; its metrics.jsonl holds every rank's allocator
 * peak beside `trident memory`'s prediction (src/train/memory_predict.h). One row per layout:
 * the worst rank's peak ÷ predicted, 1 ± 5%. Then ZeRO-1's saving at dp 2 and 4: peak without
 * ZeRO − peak with it, measured ÷ predicted, and in the notes the model state by kind (the ZeRO
 * paper's pattern in Trident's fp32 storage: 16Ψ → 8Ψ + 8Ψ/dp, bf16 20Ψ → 8Ψ + 12Ψ/dp).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/bench/bench.h"
#include "src/core/check.h"
#include "src/core/atomic_file.h"
#include "src/trace/trace.h"
#include "src/train/memory_predict.h"

/* Peak TRACE_MEMORY bytes of the rank that is pipeline stage 0 in RUN. */
static double stage0_peak(const char *dir) {
    char err[512];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) die("bench memory: %s", err);
    double peak = 0;
    for (int k = 0; k < run->nranks; k++) {
        if (trace_file_header(run->ranks[k])->pp_rank != 0) continue;
        for (size_t i = 0; i < trace_file_num_events(run->ranks[k]); i++) {
            const trace_event *e = trace_file_event(run->ranks[k], i);
            if (e->kind == TRACE_MEMORY && (double)e->bytes > peak) peak = (double)e->bytes;
        }
    }
    trace_run_free(run);
    return peak;
}

/* ---- predicted ÷ measured ------------------------------------------------------------------ */

typedef struct {
    const char *name;  /* "pp2-1f1b": the run directory under RUN/memory/ */
    const char *label; /* "PP2 1F1B m=4" */
    int np, dp, m;     /* ranks, data-parallel size, micro-batches per data-parallel rank */
    const char *flags;
} mem_layout;

static const mem_layout k_layouts[] = {
    {"serial", "serial", 1, 1, 1, ""},
    {"pp2-1f1b", "PP2 1F1B", 2, 1, 4, "--pipeline-model-parallel-size 2"},
    {"pp2-gpipe", "PP2 GPipe", 2, 1, 4,
     "--pipeline-model-parallel-size 2 --pipeline-schedule gpipe"},
    {"pp2-interleaved", "PP2 interleaved v=2", 2, 1, 4,
     "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage %d"},
    {"pp2-zbh1-full", "PP2 ZB-H1, full recompute", 2, 1, 4,
     "--pipeline-model-parallel-size 2 --pipeline-schedule zb-h1 --recompute-granularity full "
     "--recompute-method uniform --recompute-num-layers 1"},
    {"tp2-sp-selective", "TP2 + SP + selective", 2, 1, 1,
     "--tensor-model-parallel-size 2 --sequence-parallel --recompute-granularity selective"},
    {"dp2", "DP2 no ZeRO", 2, 2, 1, ""},
    {"dp2-zero", "DP2 ZeRO-1", 2, 2, 1, "--use-distributed-optimizer"},
    {"dp2-zero-bf16", "DP2 ZeRO-1 bf16", 2, 2, 1, "--use-distributed-optimizer --bf16"},
    {"dp4", "DP4 no ZeRO", 4, 4, 1, ""},
    {"dp4-zero", "DP4 ZeRO-1", 4, 4, 1, "--use-distributed-optimizer"},
};
enum { NLAYOUTS = sizeof k_layouts / sizeof k_layouts[0], MEM_MAX_RANKS = 8 };

typedef struct {
    int n;
    double peak[MEM_MAX_RANKS], predicted[MEM_MAX_RANKS];
} mem_measured;

/* The records `trident train` writes at the end of metrics.jsonl, one per rank. */
static mem_measured read_records(const char *dir) {
    char path[4300], line[1024];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f) die("bench memory: cannot read %s", path);
    mem_measured mm = {0};
    while (fgets(line, sizeof line, f)) {
        const char *r = strstr(line, "\"rank\":"), *p = strstr(line, "\"memory_predicted_bytes\":");
        int rank;
        double pred, peak;
        if (!r || !p || sscanf(r, "\"rank\":%d", &rank) != 1 ||
            sscanf(p, "\"memory_predicted_bytes\":%lf,\"memory_peak_bytes\":%lf", &pred, &peak) !=
                2)
            continue;
        if (rank < 0 || rank >= MEM_MAX_RANKS) continue;
        mm.predicted[rank] = pred, mm.peak[rank] = peak;
        if (rank + 1 > mm.n) mm.n = rank + 1;
    }
    fclose(f);
    if (mm.n == 0) die("bench memory: %s holds no memory record", path);
    return mm;
}

/* The model of the suite: GPT-2 small's shape, or a small one with --quick. */
static void model_flags(const bench_ctx *ctx, char *buf, size_t cap, int *L, int *T) {
    *L = ctx->quick ? 4 : 12;
    *T = ctx->quick ? 64 : 512;
    snprintf(buf, cap, "--num-layers %d --hidden-size %d --num-attention-heads %d --seq-length %d",
             *L, ctx->quick ? 64 : 768, ctx->quick ? 4 : 12, *T);
}

/* Trains one step of layout i; its row; returns what it measured. */
static mem_measured run_layout(bench_ctx *ctx, int i) {
    const mem_layout *ml = &k_layouts[i];
    char model[256], flags[512], dir[4200], log[4300];
    int L, T;
    model_flags(ctx, model, sizeof model, &L, &T);
    snprintf(flags, sizeof flags, ml->flags, L / 4); /* interleaved: 2 chunks of L/4 per rank */
    snprintf(dir, sizeof dir, "%s/memory/%s", ctx->run_dir, ml->name);
    snprintf(log, sizeof log, "%s.log", dir);
    snprintf(log, sizeof log, "%s/memory", ctx->run_dir);
    make_dirs(log);
    snprintf(log, sizeof log, "%s.log", dir);
    bench_launch(ctx, ml->np, log,
                 "train %s%s%s --micro-batch-size 1 --global-batch-size %d --train-iters 1 "
                 "--eval-iters 0 --no-trace --quiet --run-dir %s",
                 model, flags[0] ? " " : "", flags, ml->m * ml->dp, dir);
    mem_measured mm = read_records(dir);
    double worst = 1;
    char ranks[512] = "";
    for (int r = 0; r < mm.n; r++) {
        const double q = mm.peak[r] / mm.predicted[r];
        if (fabs(q - 1) >= fabs(worst - 1)) worst = q;
        size_t k = strlen(ranks);
        snprintf(ranks + k, sizeof ranks - k, "%s rank %d %.1f / %.1f", r ? ";" : "", r,
                 mm.peak[r] / 1048576, mm.predicted[r] / 1048576);
    }
    char metric[160];
    snprintf(metric, sizeof metric, "%s T=%d %s: allocator peak ÷ predicted, worst rank",
             ctx->quick ? "small model" : "GPT-2 small", T, ml->label);
    bench_row_within(ctx->report, "memory", metric, worst, "%.4f", 1.0, 0.05, "1 ± 5%");
    bench_note(ctx->report, "memory", "%s, MiB measured / predicted:%s", ml->label, ranks);
    return mm;
}

/* ZeRO-1's saving per rank at this dp, measured ÷ predicted, and the model state by kind. */
static void zero_saving_row(bench_ctx *ctx, int dp, const mem_measured *plain,
                            const mem_measured *zero) {
    const double got = plain->peak[0] - zero->peak[0];
    const double want = plain->predicted[0] - zero->predicted[0];
    char metric[160];
    snprintf(metric, sizeof metric,
             "dp=%d: ZeRO-1's saving per rank (rank 0), measured ÷ predicted", dp);
    bench_row_within(ctx->report, "memory", metric, got / want, "%.4f", 1.0, 0.05, "1 ± 5%");
    char model[256];
    int L, T;
    model_flags(ctx, model, sizeof model, &L, &T);
    train_config c;
    train_config_defaults(&c);
    c.num_layers = L, c.seq_length = T, c.micro_batch_size = 1, c.global_batch_size = dp;
    c.hidden_size = ctx->quick ? 64 : 768, c.num_attention_heads = ctx->quick ? 4 : 12;
    c.predict_only = true;
    char err[512], line[512] = "";
    for (int z = 0; z < 2; z++) {
        c.use_distributed_optimizer = z;
        if (!train_config_check(&c, dp, err, sizeof err)) die("bench memory: %s", err);
        train_memory *tm = train_memory_predict(&c, z, "bench memory");
        const zero_memory_rank *m = &tm->ranks[0];
        const size_t k = strlen(line);
        snprintf(line + k, sizeof line - k, "%s%s: params %.1f + grads %.1f + Adam %.1f = %.1f MB",
                 z ? "; " : "", zero_stage_name(z), m->bytes[ZERO_MEM_PARAMS] / 1e6,
                 m->bytes[ZERO_MEM_GRADS] / 1e6, m->bytes[ZERO_MEM_ADAM] / 1e6,
                 (m->bytes[ZERO_MEM_PARAMS] + m->bytes[ZERO_MEM_GRADS] + m->bytes[ZERO_MEM_ADAM]) /
                     1e6);
        train_memory_free(tm);
    }
    bench_note(ctx->report, "memory",
               "dp=%d model state per rank, fp32 (16Ψ without ZeRO, 8Ψ + 8Ψ/dp with ZeRO-1): %s; "
               "saving measured %.1f MB, predicted %.1f MB",
               dp, line, got / 1e6, want / 1e6);
}

static void predicted_versus_measured(bench_ctx *ctx) {
    mem_measured mm[NLAYOUTS];
    for (int i = 0; i < NLAYOUTS; i++) mm[i] = run_layout(ctx, i);
    zero_saving_row(ctx, 2, &mm[6], &mm[7]);
    zero_saving_row(ctx, 4, &mm[9], &mm[10]);
    int L, T;
    char model[256];
    model_flags(ctx, model, sizeof model, &L, &T);
    bench_note(
        ctx->report, "memory",
        "predicted ÷ measured runs: %s (vocabulary 256), micro-batch 1, one step, no "
        "evaluation; peaks are Trident's allocator high-water marks (src/device/device_memory.h)",
        model);
}

void bench_memory(bench_ctx *ctx) {
    const int ps[] = {2, 4}, ms[] = {4, 8}, v = 2;
    for (int pi = 0; pi < 2; pi++)
        for (int mi = 0; mi < 2; mi++) {
            const int p = ps[pi], m = ms[mi];
            char dir[4200];
            double gpipe = stage0_peak(bench_pp_run(ctx, "gpipe", p, m, dir, sizeof dir));
            double f1b = stage0_peak(bench_pp_run(ctx, "1f1b", p, m, dir, sizeof dir));
            double inter = stage0_peak(bench_pp_run(ctx, "interleaved", p, m, dir, sizeof dir));
            const int keep1 = p < m ? p : m;
            const double want1 = (double)keep1 / m;
            const int warm = 2 * (p - 1) + (v - 1) * p + 1;
            const double want2 = (double)(m * v < warm ? m * v : warm) / (double)(v * keep1);
            char metric[160], target[48];
            snprintf(metric, sizeof metric, "p=%d m=%d: peak activations on stage 0, 1f1b ÷ gpipe",
                     p, m);
            snprintf(target, sizeof target, "%.3f ± 5%%", want1);
            bench_row_within(ctx->report, "memory", metric, f1b / gpipe, "%.3f", want1,
                             0.05 * want1, target);
            snprintf(metric, sizeof metric,
                     "p=%d m=%d: peak activations on stage 0, interleaved ÷ 1f1b", p, m);
            snprintf(target, sizeof target, "%.3f ± 5%%", want2);
            bench_row_within(ctx->report, "memory", metric, inter / f1b, "%.3f", want2,
                             0.05 * want2, target);
            bench_note(ctx->report, "memory",
                       "p=%d m=%d stage 0 peak activation bytes: gpipe %.2f MB, 1f1b %.2f MB, "
                       "interleaved %.2f MB "
                       "(formulas: min(p,m)/m = %.3f; interleaved %s = %.3f)",
                       p, m, gpipe / 1e6, f1b / 1e6, inter / 1e6, want1,
                       m * v >= warm ? "1 + (p−1)/(p·v)" : "min(m·v, 2(p−1)+(v−1)p+1)/(v·min(p,m))",
                       want2);
        }
    /* ZeRO-1: the comm worker measured the optimizer state at dp = 2. */
    char path[4200];
    bench_comm_results(ctx, path, sizeof path);
    const double dp = bench_kv_get(path, "zero_dp");
    const double plain = bench_kv_get(path, "zero_state_bytes_plain");
    const double sharded = bench_kv_get(path, "zero_state_bytes_sharded");
    const double padded = bench_kv_get(path, "zero_padding_elems");
    char metric[160], target[48];
    snprintf(metric, sizeof metric,
             "ZeRO-1 optimizer-state bytes per rank, unsharded ÷ sharded at dp=%g", dp);
    snprintf(target, sizeof target, "%g ± 1%% (padding)", dp);
    bench_row_within(ctx->report, "memory", metric, plain / sharded, "%.4f", dp, 0.01 * dp, target);
    bench_note(ctx->report, "memory",
               "optimizer state per rank (Adam m, v and the fp32 master shard with ZeRO): %.2f MB "
               "without ZeRO, "
               "%.2f MB with ZeRO-1 at dp = %g (shards padded by %g elements)",
               plain / 1e6, sharded / 1e6, dp, padded);
    predicted_versus_measured(ctx);
}
