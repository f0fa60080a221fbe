/* bench_zero.c — the zero suite: what laying the buffers out for ZeRO bought. One optimizer
 * step of ZeRO-1 as it is now, timed side by side with the step as it was before the model's
 * buffers were padded to the shard layout (commit e7746a1 removed it), in one MPI job.
 *
 *   now (in place, offsets into the padded buffers; src/zero/zero1.c):
 *     grads  [ shard 0 | ... | shard p-1 ]  reduce-scatter IN PLACE -> [ sum of shard d | ... ]
 *     scale and norm of grads[0 .. S);  AdamW on params + d*S
 *     params [ shard 0 | ... | shard p-1 ]  all-gather IN PLACE from params + d*S
 *   before (copies around an unpadded model buffer):
 *     gbuf   = copy of grads (numel)         reduce-scatter gbuf -> gshard (S)
 *     scale and norm of gshard;  pbuf = copy of params (numel);  AdamW on pbuf + d*S
 *     sendbuf = copy of the shard (S)        all-gather sendbuf -> pbuf
 *     params = copy of pbuf (numel)
 *
 * Both variants call the same comm.h collectives and the same AdamW kernel on the same
 * numbers, so the ratio isolates the copies (3·numel + S floats per step before; in place,
 * only the ring's move of this rank's summed block to the front, S floats on ranks > 0,
 * comm.h). The worker, `mpirun -np P trident bench --worker zero`, runs at P = 2 and 4 and
 * writes RUN_DIR/worker_zero_np<P>.txt ("key value" lines); the parent adds one row per
 * (P, size): time now ÷ time before, target ≤ 1.
 *
 * Not here: the optimizer itself (src/zero/) — this is a model of its step with nothing
 * around it (no tied embedding, no mixed precision), so it can run at sizes of our choosing.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/bench/bench.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/optim/adamw.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"

enum { ZERO_SIZES = 2 };

/* Parameters per model: not a multiple of the ranks, so the padding is exercised. */
static size_t zero_numel(bool quick, int which) {
    static const size_t full[ZERO_SIZES] = {1u << 20, 1u << 22},
                        small[ZERO_SIZES] = {1u << 17, 1u << 19};
    return (quick ? small : full)[which] - 7;
}

/* One rank's buffers for both variants of the step. numel real parameters, padded to p*S. */
typedef struct {
    comm_group *dp;
    int p, d;
    size_t numel, S, padded;
    float *params, *grads, *m, *v;         /* (padded): the model's buffers, padded (now) */
    float *gbuf, *gshard, *pbuf, *sendbuf; /* before: (padded), (S), (padded), (S) */
    adamw_config cfg;
} zero_bufs;

static void bufs_open(zero_bufs *b, comm_group *dp, size_t numel) {
    b->dp = dp;
    b->p = comm_size(dp);
    b->d = comm_rank(dp);
    b->numel = numel;
    b->S = (numel + (size_t)b->p - 1) / (size_t)b->p;
    b->padded = b->S * (size_t)b->p;
    b->params = callocCheck(b->padded, sizeof(float));
    b->grads = callocCheck(b->padded, sizeof(float));
    b->m = callocCheck(b->S, sizeof(float));
    b->v = callocCheck(b->S, sizeof(float));
    b->gbuf = callocCheck(b->padded, sizeof(float));
    b->gshard = callocCheck(b->S, sizeof(float));
    b->pbuf = callocCheck(b->padded, sizeof(float));
    b->sendbuf = callocCheck(b->S, sizeof(float));
    for (size_t i = 0; i < numel; i++)
        b->params[i] = 0.02f * (float)((i * 2654435761u) % 1000u) / 1000.0f;
    b->cfg = (adamw_config){.lr = 1e-3f,
                            .min_lr = 1e-4f,
                            .warmup_iters = 0,
                            .decay_iters = 100,
                            .beta1 = 0.9f,
                            .beta2 = 0.95f,
                            .eps = 1e-8f,
                            .weight_decay = 0.1f,
                            .clip_grad = 1.0f};
}

static void bufs_close(zero_bufs *b) {
    free(b->params), free(b->grads), free(b->m), free(b->v);
    free(b->gbuf), free(b->gshard), free(b->pbuf), free(b->sendbuf);
}

/* The gradients a backward pass would leave (the padding zero), different on every rank. */
static void fill_grads(zero_bufs *b) {
    for (size_t i = 0; i < b->numel; i++)
        b->grads[i] = 1e-3f * (float)((i + (size_t)b->d * 31u) % 97u);
    memset(b->grads + b->numel, 0, (b->padded - b->numel) * sizeof(float));
}

/* Average over dp, then the global norm of the shard (summed over the group) and its clip. */
static float scale_and_clip(zero_bufs *b, float *g) {
    const float inv = 1.0f / (float)b->p;
    float ss = 0.0f;
    for (size_t i = 0; i < b->S; i++) {
        g[i] *= inv;
        ss += g[i] * g[i];
    }
    comm_all_reduce(b->dp, &ss, 1, COMM_FLOAT32, COMM_SUM);
    return adamw_clip_factor(&b->cfg, sqrt((double)ss));
}

static void step_in_place(zero_bufs *b, int t) {
    comm_reduce_scatter(b->dp, b->grads, b->grads, b->S, COMM_FLOAT32, COMM_SUM);
    float clip = scale_and_clip(b, b->grads);
    float *mine = b->params + (size_t)b->d * b->S;
    adamw_update(mine, b->grads, b->m, b->v, b->S, &b->cfg, b->cfg.lr, b->cfg.weight_decay, t,
                 clip);
    comm_all_gather(b->dp, mine, b->params, b->S, COMM_FLOAT32);
}

static void step_copying(zero_bufs *b, int t) {
    memcpy(b->gbuf, b->grads, b->numel * sizeof(float));
    comm_reduce_scatter(b->dp, b->gbuf, b->gshard, b->S, COMM_FLOAT32, COMM_SUM);
    float clip = scale_and_clip(b, b->gshard);
    memcpy(b->pbuf, b->params, b->numel * sizeof(float));
    float *mine = b->pbuf + (size_t)b->d * b->S;
    adamw_update(mine, b->gshard, b->m, b->v, b->S, &b->cfg, b->cfg.lr, b->cfg.weight_decay, t,
                 clip);
    memcpy(b->sendbuf, mine, b->S * sizeof(float));
    comm_all_gather(b->dp, b->sendbuf, b->pbuf, b->S, COMM_FLOAT32);
    memcpy(b->params, b->pbuf, b->numel * sizeof(float));
}

/* The slowest rank's time of what just took `local` seconds here. */
static double slowest(double local) {
    double t = local;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return t;
}

/* Median over interleaved repeats (the two variants take turns going first) of each step. */
static void time_both(zero_bufs *b, int repeats, double *t_now, double *t_before) {
    double *tn = mallocCheck(sizeof(double) * (size_t)repeats),
           *tb = mallocCheck(sizeof(double) * (size_t)repeats);
    step_in_place(b, 1); /* warm-up: first touch of every buffer */
    step_copying(b, 1);
    for (int r = 0; r < repeats; r++) {
        for (int k = 0; k < 2; k++) {
            const bool in_place = (r + k) % 2 == 0;
            fill_grads(b);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = time_now();
            if (in_place) step_in_place(b, r + 2);
            else step_copying(b, r + 2);
            (in_place ? tn : tb)[r] = slowest(time_now() - t0);
        }
    }
    *t_now = bench_median(tn, repeats);
    *t_before = bench_median(tb, repeats);
    free(tn), free(tb);
}

int bench_worker_zero(const char *run_dir, bool quick) {
    int argc = 0;
    char **argv = NULL;
    dist_init(&argc, &argv);
    const int world = dist_world_size();
    if (world < 2)
        dist_fail_all("bench --worker zero runs under mpirun with at least 2 ranks (got %d)",
                      world);
    comm_group *dp = comm_group_world(COMM_MPI);
    char out[2048];
    size_t used = 0;
#define PUT(...) used += (size_t)snprintf(out + used, sizeof out - used, __VA_ARGS__)
    PUT("dp %d\n", world);
    for (int s = 0; s < ZERO_SIZES; s++) {
        zero_bufs b;
        bufs_open(&b, dp, zero_numel(quick, s));
        double t_now, t_before;
        time_both(&b, quick ? 3 : 9, &t_now, &t_before);
        PUT("size%d_numel %zu\nsize%d_shard %zu\n", s, b.numel, s, b.S);
        PUT("size%d_in_place_s %.9g\nsize%d_copying_s %.9g\n", s, t_now, s, t_before);
        /* bytes this code copies per step, on the rank that copies most */
        PUT("size%d_copied_in_place %zu\n", s, b.S * sizeof(float));
        PUT("size%d_copied_copying %zu\n", s, (3 * b.numel + b.S) * sizeof(float));
        bufs_close(&b);
    }
#undef PUT
    if (dist_rank() == 0) {
        char path[4200];
        snprintf(path, sizeof path, "%s/worker_zero_np%d.txt", run_dir, world);
        atomic_file af;
        FILE *f = atomic_file_open(&af, path);
        fputs(out, f);
        atomic_file_commit(&af);
    }
    comm_group_destroy(dp);
    dist_finalize();
    return 0;
}

/* ---- the parent's side ------------------------------------------------------------------- */

static void zero_rows(bench_ctx *ctx, const char *path) {
    const double dp = bench_kv_get(path, "dp");
    for (int s = 0; s < ZERO_SIZES; s++) {
        char k[64], metric[160];
#define GET(name) (snprintf(k, sizeof k, "size%d_%s", s, name), bench_kv_get(path, k))
        const double numel = GET("numel"), t_now = GET("in_place_s"), t_before = GET("copying_s");
        const double c_now = GET("copied_in_place"), c_before = GET("copied_copying");
#undef GET
        snprintf(metric, sizeof metric,
                 "ZeRO optimizer step ÷ old copying step (dp=%g, %.1f MB of fp32 params)", dp,
                 4 * numel / 1e6);
        bench_row_max(ctx->report, "zero", metric, t_now / t_before, "%.2f", 1.0);
        bench_note(ctx->report, "zero",
                   "dp = %g, %.0f params: in place %.2f ms, copying %.2f ms (medians of "
                   "interleaved repeats, "
                   "slowest rank); bytes copied per step %.2f MB in place (the ring moves this "
                   "rank's block to "
                   "the front) vs %.2f MB copying (3 whole buffers + the shard)",
                   dp, numel, 1e3 * t_now, 1e3 * t_before, c_now / 1e6, c_before / 1e6);
    }
}

void bench_zero(bench_ctx *ctx) {
    static const int nps[] = {2, 4};
    for (int i = 0; i < 2; i++) {
        char path[4200], log[4200], name[64];
        snprintf(name, sizeof name, "worker_zero_np%d.txt", nps[i]);
        bench_path(ctx, path, sizeof path, name);
        snprintf(name, sizeof name, "worker_zero_np%d.log", nps[i]);
        bench_path(ctx, log, sizeof log, name);
        remove(path);
        bench_launch(ctx, nps[i], log, "bench --worker zero --run-dir %s%s", ctx->run_dir,
                     ctx->quick ? " --quick" : "");
        zero_rows(ctx, path);
    }
}
