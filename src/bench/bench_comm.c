/* bench_comm.c — the comm suite: is the communication layer as fast as plain MPI, and does it
 * move exactly the bytes the parallel layouts should?
 *
 * Everything is measured inside one MPI job, `mpirun -np 2 trident bench --worker comm`
 * (bench_worker_comm below), which writes "key value" lines for the parent:
 *   - the gradient buffer of a real trainer (dp = 2) all-reduced through comm.h, and the same
 *     bytes through a plain MPI_Allreduce, interleaved, best of the slower rank's times's time:
 *     bus bandwidth ratio = time(MPI) ÷ time(comm.h), target ≥ 0.8;
 *   - reduce-scatter + all-gather of the same buffer (ZeRO's pair) ÷ all-reduce, target ≤ 1.2;
 *   - one training step at tp = 2 and at pp = 2 (1f1b and interleaved) with the groups' byte
 *     counters reset before it: the tensor-parallel collectives and the pipeline p2p bytes
 *     must equal the formulas exactly (N = B·T tokens of a micro-batch, C hidden, m micro-batches,
 *     L layers, S = p·v virtual stages, 4-byte floats):
 *         TP bytes per step = m · (4·L·N·C + N·C [embedding g] + N·C [head f backward]
 *                                  + 3·N [loss: max, target logit, sum of exps]) · 4
 *         PP bytes per step = 2 directions · m · (S − 1) boundaries · N·C · 4   (sent, all ranks)
 *   - the optimizer state with and without ZeRO-1 (read by the memory suite).
 */
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "src/bench/bench.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"
#include "src/runtime/parallel_state.h"
#include "src/train/config.h"
#include "src/train/trainer.h"
#include "src/zero/distributed_optimizer.h"

/* The model of the worker's trainers. */
enum { WORKER_LAYERS = 8 };

static void worker_config(train_config *c, bool quick, int tp, int pp, int vpp_layers, bool zero,
                          int m) {
    train_config_defaults(c);
    c->num_layers = WORKER_LAYERS;
    c->hidden_size = quick ? 64 : 256;
    c->num_attention_heads = 4;
    c->seq_length = quick ? 32 : 128;
    c->micro_batch_size = 2;
    c->tensor_model_parallel_size = tp;
    c->pipeline_model_parallel_size = pp;
    c->num_layers_per_virtual_pipeline_stage = vpp_layers;
    if (vpp_layers) c->pipeline_schedule = "interleaved";
    c->use_distributed_optimizer = zero;
    c->no_trace = true;
    c->train_iters = 100;
    const int dp = dist_world_size() / (tp * pp);
    c->global_batch_size = c->micro_batch_size * m * dp;
    char err[512];
    if (!train_config_check(c, dist_world_size(), err, sizeof err))
        dist_fail_all("bench worker: %s", err);
}

typedef struct {
    parallel_state *ps;
    trainer *t;
} worker_trainer;

static worker_trainer trainer_open(const train_config *c) {
    pg_layout l;
    char err[512];
    if (!pg_layout_make(&l, dist_world_size(), c->tensor_model_parallel_size, 1, 1,
                        c->pipeline_model_parallel_size, c->vpp, c->rank_order, err, sizeof err))
        dist_fail_all("bench worker: %s", err);
    worker_trainer w;
    w.ps = ps_create(&l, dist_rank());
    w.t = trainer_create(c, w.ps);
    return w;
}

static void trainer_close(worker_trainer *w) {
    trainer_destroy(w->t);
    ps_destroy(w->ps);
}

/* The slowest rank's time of the call that just ran locally in `local` seconds. */
static double slowest(double local) {
    double t = local;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return t;
}

static double best_of(const double *t, int n) {
    double b = t[0];
    for (int i = 1; i < n; i++) b = t[i] < b ? t[i] : b;
    return b;
}

/* The worker's "key value" lines, built up in memory and written by rank 0 at the end. */
typedef struct {
    char text[16384];
    size_t used;
} kv_out;

static void __attribute__((format(printf, 2, 3))) put(kv_out *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    o->used += (size_t)vsnprintf(o->text + o->used, sizeof o->text - o->used, fmt, ap);
    va_end(ap);
}

/* 1. Data parallel: the real gradient buffer; comm.h vs MPI; reduce-scatter + all-gather.
 * Returns the optimizer-state bytes of this plain (no ZeRO) trainer. */
static size_t measure_dp(kv_out *o, bool quick, int m, int repeats) {
    const int world = dist_world_size();
    train_config c;
    worker_config(&c, quick, 1, 1, 0, false, m);
    worker_trainer w = trainer_open(&c);
    local_model *lm = trainer_model(w.t);
    const size_t n = lm->numel, per = (n + (size_t)world - 1) / (size_t)world,
                 padded = per * (size_t)world;
    float *buf = callocCheck(padded, sizeof(float)), *shard = callocCheck(per, sizeof(float));
    for (size_t i = 0; i < n; i++) buf[i] = 1e-3f * (float)((i * 2654435761u) % 1000u) / 1000.0f;
    double *t_comm = mallocCheck((size_t)repeats * sizeof(double));
    double *t_mpi = mallocCheck((size_t)repeats * sizeof(double));
    double *t_rsag = mallocCheck((size_t)repeats * sizeof(double));
    comm_all_reduce(w.ps->dp, buf, n, COMM_FLOAT32, COMM_SUM); /* warm-up of both paths */
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    /* Each timed operation starts from the same state — the buffer just rewritten, all ranks
     * past a barrier — and the three take turns going first: whichever runs right after the
     * rewrite pays for it, so a fixed order would bias the ratios. */
    for (int r = 0; r < repeats; r++) {
        for (int k = 0; k < 3; k++) {
            int which = (r + k) % 3;
            for (size_t i = 0; i < padded; i++) buf[i] = 1e-3f;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = time_now();
            if (which == 0) {
                comm_all_reduce(w.ps->dp, buf, n, COMM_FLOAT32, COMM_SUM);
                t_comm[r] = slowest(time_now() - t0);
            } else if (which == 1) {
                MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                t_mpi[r] = slowest(time_now() - t0);
            } else {
                comm_reduce_scatter(w.ps->dp, buf, shard, per, COMM_FLOAT32, COMM_SUM);
                comm_all_gather(w.ps->dp, shard, buf, per, COMM_FLOAT32);
                t_rsag[r] = slowest(time_now() - t0);
            }
        }
    }
    put(o, "grad_elems %zu\n", n);
    /* Best of the repeats: the time the transfer takes when nothing else gets in its way
     * (on 2 shared cores a median mostly measures who the scheduler interrupted). */
    put(o, "allreduce_comm_s %.9g\n", best_of(t_comm, repeats));
    put(o, "allreduce_mpi_s %.9g\n", best_of(t_mpi, repeats));
    put(o, "rs_ag_s %.9g\n", best_of(t_rsag, repeats));
    free(buf), free(shard), free(t_comm), free(t_mpi), free(t_rsag);
    size_t plain_state = distopt_state_bytes(trainer_optimizer(w.t));
    trainer_close(&w);
    return plain_state;
}

/* 2. ZeRO-1: the same model with the optimizer state sharded over dp. */
static void measure_zero_state(kv_out *o, bool quick, int m, size_t plain_state) {
    train_config c;
    worker_config(&c, quick, 1, 1, 0, true, m);
    worker_trainer w = trainer_open(&c);
    const zero_ranges *zr = distopt_ranges(trainer_optimizer(w.t));
    put(o, "zero_dp %d\n", c.dp);
    put(o, "zero_state_bytes_plain %zu\n", plain_state);
    put(o, "zero_state_bytes_sharded %zu\n", distopt_state_bytes(trainer_optimizer(w.t)));
    put(o, "zero_padding_elems %zu\n", zr->padded_numel - trainer_model(w.t)->numel);
    trainer_close(&w);
}

/* 3. Tensor parallel bytes of one step. */
static void measure_tp_bytes(kv_out *o, bool quick, int m) {
    train_config c;
    worker_config(&c, quick, 2, 1, 0, false, m);
    worker_trainer w = trainer_open(&c);
    trainer_step(w.t, 1); /* warm-up: first-touch, not counted */
    comm_reset_counters(w.ps->tp);
    trainer_step(w.t, 2);
    const double N = (double)c.micro_batch_size * c.seq_length, C = c.hidden_size;
    put(o, "tp_bytes %zu\n", comm_bytes_collective(w.ps->tp));
    put(o, "tp_formula %.0f\n", m * (4.0 * c.num_layers * N * C + 2.0 * N * C + 3.0 * N) * 4.0);
    put(o, "tp_calls %zu\n", comm_calls(w.ps->tp));
    trainer_close(&w);
}

/* 4. Pipeline bytes of one step: 1f1b (v = 1) and interleaved (v = 2); then the model. */
static void measure_pp_bytes(kv_out *o, bool quick, int m) {
    train_config c;
    for (int v = 1; v <= 2; v++) {
        worker_config(&c, quick, 1, 2, v == 2 ? WORKER_LAYERS / 4 : 0, false, m);
        worker_trainer w = trainer_open(&c);
        trainer_step(w.t, 1);
        comm_reset_counters(w.ps->pp);
        trainer_step(w.t, 2);
        double sent = (double)comm_bytes_sent(w.ps->pp),
               recvd = (double)comm_bytes_received(w.ps->pp);
        MPI_Allreduce(MPI_IN_PLACE, &sent, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &recvd, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        const int S = 2 * c.vpp;
        const double N = (double)c.micro_batch_size * c.seq_length, C = c.hidden_size;
        put(o, "pp_v%d_sent %.0f\n", v, sent);
        put(o, "pp_v%d_received %.0f\n", v, recvd);
        put(o, "pp_v%d_formula %.0f\n", v, 2.0 * m * (S - 1) * N * C * 4.0);
        trainer_close(&w);
    }
    put(o,
        "model_layers %d\nmodel_hidden %d\nmodel_seq %d\nmodel_micro_batch %d\nmicrobatches %d\n",
        c.num_layers, c.hidden_size, c.seq_length, c.micro_batch_size, m);
}

int bench_worker_comm(const char *run_dir, bool quick) {
    int argc = 0;
    char **argv = NULL;
    dist_init(&argc, &argv);
    ops_set_threads(1);
    const int world = dist_world_size(), rank = dist_rank();
    if (world < 2)
        dist_fail_all("bench --worker comm runs under mpirun with at least 2 ranks (got %d)",
                      world);
    const int m = 4, repeats = quick ? 3 : 15;
    static kv_out o;
    o.used = 0;
    put(&o, "world %d\n", world);
    size_t plain_state = measure_dp(&o, quick, m, repeats);
    measure_zero_state(&o, quick, m, plain_state);
    measure_tp_bytes(&o, quick, m);
    measure_pp_bytes(&o, quick, m);
    if (rank == 0) {
        char path[4200];
        snprintf(path, sizeof path, "%s/worker_comm.txt", run_dir);
        atomic_file af;
        FILE *f = atomic_file_open(&af, path);
        fputs(o.text, f);
        atomic_file_commit(&af);
    }
    dist_finalize();
    return 0;
}

/* ---- the parent's side ------------------------------------------------------------------- */

static bool g_worker_ran;

const char *bench_comm_results(bench_ctx *ctx, char *path, size_t cap) {
    bench_path(ctx, path, cap, "worker_comm.txt");
    if (!g_worker_ran) {
        char log[4200];
        bench_path(ctx, log, sizeof log, "worker_comm.log");
        remove(path);
        bench_launch(ctx, 2, log, "bench --worker comm --run-dir %s%s", ctx->run_dir,
                     ctx->quick ? " --quick" : "");
        g_worker_ran = true;
    }
    return path;
}

void bench_comm(bench_ctx *ctx) {
    char path[4200];
    if (ctx->launch) bench_hosts(ctx); /* a cluster: within a host vs between hosts */
    bench_comm_results(ctx, path, sizeof path);
#define GET(key) bench_kv_get(path, key)
    const double world = GET("world"), elems = GET("grad_elems"), bytes = 4 * elems;
    const double t_comm = GET("allreduce_comm_s"), t_mpi = GET("allreduce_mpi_s"),
                 t_rsag = GET("rs_ag_s");
    const double busbw = 2 * (world - 1) / world * bytes;
    char metric[160];
    snprintf(metric, sizeof metric,
             "gradient all-reduce (%.1f MB, %g ranks): bus bandwidth comm.h ÷ plain MPI_Allreduce",
             bytes / 1e6, world);
    bench_row_min(ctx->report, "comm", metric, t_mpi / t_comm, "%.2f", 0.8);
    bench_row_max(ctx->report, "comm",
                  "reduce-scatter + all-gather time ÷ all-reduce time (same bytes)",
                  t_rsag / t_comm, "%.2f", 1.2);
    bench_note(ctx->report, "comm",
               "all-reduce of the trainer's gradient buffer (%.0f floats): comm.h %.2f ms (%.2f "
               "GB/s bus), MPI "
               "%.2f ms (%.2f GB/s bus); reduce-scatter + all-gather %.2f ms; best of the slower "
               "rank's times",
               elems, 1e3 * t_comm, busbw / t_comm / 1e9, 1e3 * t_mpi, busbw / t_mpi / 1e9,
               1e3 * t_rsag);
    const double tp = GET("tp_bytes"), tpf = GET("tp_formula");
    bench_row_within(ctx->report, "comm", "TP bytes per step (tp=2), counted ÷ formula", tp / tpf,
                     "%.6f", 1.0, 1e-9, "1 exactly");
    bench_note(ctx->report, "comm",
               "tensor parallel (tp = 2, %g layers, hidden %g, seq %g, micro-batch %g, m = %g): "
               "%.0f bytes counted "
               "in %g collectives; formula m·(4·L·N·C + 2·N·C + 3·N)·4 = %.0f",
               GET("model_layers"), GET("model_hidden"), GET("model_seq"), GET("model_micro_batch"),
               GET("microbatches"), tp, GET("tp_calls"), tpf);
    for (int v = 1; v <= 2; v++) {
        char k1[32], k2[32], k3[32];
        snprintf(k1, sizeof k1, "pp_v%d_sent", v);
        snprintf(k2, sizeof k2, "pp_v%d_received", v);
        snprintf(k3, sizeof k3, "pp_v%d_formula", v);
        const double sent = GET(k1), recvd = GET(k2), f = GET(k3);
        snprintf(metric, sizeof metric, "PP bytes per step (pp=2, %s), sent ÷ formula",
                 v == 1 ? "1f1b" : "interleaved v=2");
        bench_row_within(ctx->report, "comm", metric, sent / f, "%.6f", 1.0, 1e-9, "1 exactly");
        bench_note(
            ctx->report, "comm",
            "pipeline (pp = 2, v = %d): %.0f bytes sent, %.0f received over all ranks; formula "
            "2·m·(S−1)·N·C·4 = %.0f",
            v, sent, recvd, f);
    }
#undef GET
}
