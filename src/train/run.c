/* run.c — trainer_run (see trainer.h): the whole run around the trainer object — set-up,
 * the loop with its progress lines and metrics.jsonl, evaluation, checkpoints, the trace and
 * the run directory's pictures. The trainer itself (create, step, evaluate) is trainer.c; the
 * lines of metrics.jsonl and the finite check of each step's values are metrics_log.c. */
#include "src/train/trainer_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/ckpt/checkpoint.h"
#include "src/ckpt/checkpoint_dir.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/checked.h"
#include "src/core/clock.h"
#include "src/core/nofollow.h"
#include "src/data/dataset.h"
#include "src/device/device.h"
#include "src/device/gemm_rate.h"
#include "src/model/flops.h"
#include "src/pp/executor.h"
#include "src/pp/schedule.h"
#include "src/runtime/clock_sync.h"
#include "src/runtime/hosts.h"
#include "src/runtime/comm_label.h"
#include "src/runtime/comm_stream.h"
#include "src/runtime/dist.h"
#include "src/trace/trace.h"
#include "src/train/memory_predict.h"
#include "src/train/metrics_log.h"
#include "src/zero/distributed_optimizer.h"
#include "src/zero/memory_plan.h"
#include "viz/canvas.h"
#include "viz/run_pictures.h"
#include "viz/zero_draw.h"


static void trace_comm_hook(const comm_event *e, void *ctx) {
    trace_recorder *tr = ctx;
    trace_kind kind = TRACE_COLLECTIVE;
    if (e->peer >= 0) kind = strncmp(e->op, "recv", 4) == 0 ? TRACE_RECV : TRACE_SEND;
    trace_comm_info ci = {.kind = kind,
                          .op = e->op,
                          .group = e->group,
                          .label = e->label,
                          .peer = e->peer,
                          .tag = e->tag,
                          .layer = e->layer,
                          .group_first = kind == TRACE_COLLECTIVE ? e->group_first : -1,
                          .bytes = e->bytes,
                          .t_start = e->t_start,
                          .t_ready = e->t_ready,
                          .t_end = e->t_end,
                          .cpu = e->cpu};
    trace_comm_full(tr, &ci);
}

/* A bucket collective of the communication stream (--overlap-grad-reduce/-param-gather),
 * reported when the main thread waits for it: the collective on the stream's lane, and the
 * wait, if any, on the main lane (the exposed part). */
static void trace_stream_hook(const comm_stream_event *e, void *ctx) {
    trace_recorder *tr = ctx;
    trace_comm_info ci = {.kind = TRACE_COLLECTIVE,
                          .op = e->op,
                          .group = e->group,
                          .label = e->label,
                          .peer = -1,
                          .tag = -1,
                          .layer = -1,
                          .group_first = e->group_first,
                          .bytes = e->bytes,
                          .t_start = e->t_start,
                          .t_ready = e->t_start,
                          .t_end = e->t_end,
                          .cpu = -1};
    trace_comm_stream(tr, &ci);
    if (!(e->t_wait_end > e->t_wait_start)) return;
    ci.op = "wait";
    ci.group_first = -1;
    ci.bytes = 0;
    ci.t_start = e->t_wait_start;
    ci.t_ready = ci.t_end = e->t_wait_end;
    trace_comm_full(tr, &ci);
}

/* One id for every rank's trace of this run (trace_run_read never stitches files of two
 * runs): rank 0's wall clock, process id and a counter in hex, broadcast to the others. */
static void make_run_id(char id[32], comm_group *world) {
    static unsigned counter = 0;
    memset(id, 0, 32);
    if (dist_rank() == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(id, 32, "%llx-%lx-%x-%x", (unsigned long long)ts.tv_sec,
                 (unsigned long)ts.tv_nsec / 1000, (unsigned)getpid(), counter);
    }
    counter++;
    if (world && comm_size(world) > 1) comm_broadcast(world, id, 32, COMM_BYTE, 0);
}

/* NCCL when every rank on a node has a GPU of its own (and the build has NCCL); otherwise MPI,
 * with device buffers staged through host memory (src/runtime/comm_stage.c), so any number of
 * ranks can share one GPU. */
static comm_backend comm_backend_for(device_kind dk, int world) {
#ifdef TRIDENT_CUDA
    if (dk == DEVICE_CUDA && world > 1 && dist_local_size() <= device_cuda_count())
        return COMM_NCCL;
#else
    (void)dk;
    (void)world;
#endif
    return COMM_MPI;
}

/* Everything one run holds between its start and its summary. */
typedef struct {
    train_config *c;
    int world, rank;
    bool lead; /* rank 0: prints, writes metrics and pictures */
    pg_layout layout;
    device_kind dk;
    parallel_state *ps;
    trainer *t;
    ckpt_layout ckpt;    /* what checkpoints are told of the run */
    char *cfg_json;      /* the configuration, stored in every trace header */
    atomic_file metrics; /* RUN_DIR/metrics.jsonl (lead only) */
    FILE *mf;
    int start; /* the iteration resumed from (0: a fresh run) */
    int last_logged, last_saved;
    double t_start, t_last; /* wall clock of the loop's start and of the last progress line */
    float first_loss, last_loss;
    double flops_per_token; /* model FLOPs of one trained token (src/model/flops.h) */
    double peak_flops;      /* what the job is compared with (gemm_rate.h); 0: unknown (cuda) */
    float held_out;         /* the last evaluation's loss, NAN before one */
    train_memory *mem;      /* every rank's predicted bytes (lead only; memory_predict.h) */
} run_state;

/* The events one rank's trace holds: per step, for each (micro-batch, chunk) a forward and a
 * backward, their p2p, two memory samples, and 4 TP all-reduces per layer it holds (at most L)
 * plus the embedding and loss ones; then the optimizer's collectives and the step's own events.
 * MoE blocks add their all-to-alls (counts and tokens, both ways, forward and backward),
 * context parallelism its ring steps per layer (cp − 1 forward, cp backward), each traced as a
 * send and a receive (comm.h). Products checked (src/core/checked.h): 0 when they do not fit
 * (--train-iters 2147483647 wrapped to a "size" of 2^64 − 33 GB). */
static size_t trace_capacity(const train_config *c, size_t *per_step) {
    const size_t per_layer = 4 + (c->num_experts > 0 ? 10 : 0) +
                             4 * (size_t)c->context_parallel_size;
    size_t chunks = 0, blocks = 0, events = *per_step = 0;
    if (!checked_mul_size((size_t)c->num_microbatches, (size_t)c->vpp, &chunks) ||
        !checked_mul_size(per_layer, (size_t)c->num_layers, &blocks) ||
        !checked_mul_size(chunks, 12 + blocks, per_step))
        return 0;
    *per_step += 64 + (c->expert_model_parallel_size > 1 ? 16 * (size_t)c->num_layers : 0);
    if (!checked_mul_size(*per_step, (size_t)c->train_iters + 1, &events)) return 0;
    return events + 1024;
}

/* A trace that cannot be held is refused before any work, with its size. */
static void check_trace_fits(const train_config *c) {
    size_t per_step, events = c->no_trace ? 1 : trace_capacity(c, &per_step);
    const double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
    if (c->no_trace || (events > 0 && (double)events * sizeof(trace_event) <= have)) return;
    dist_fail_all("trident train: the trace of --train-iters %d (%zu events per step, %zu bytes "
                  "each) would need %.4g bytes on each rank but this machine has %.4g bytes of "
                  "memory: give --no-trace, or fewer --train-iters",
                  c->train_iters, per_step, sizeof(trace_event),
                  ((double)per_step * (c->train_iters + 1.0) + 1024) * sizeof(trace_event), have);
}

/* Checks the configuration and the layout, then sets up communication, the device, the
 * groups and the trainer; rank 0 makes the run directory. */
static void run_setup(run_state *r, train_config *c) {
    char err[512];
    r->c = c;
    r->world = dist_world_size();
    r->rank = dist_rank();
    r->lead = r->rank == 0;
    if (!train_config_check(c, r->world, err, sizeof err)) dist_fail_all("trident train: %s", err);
    check_trace_fits(c);
    if (!pg_layout_make(&r->layout, r->world, c->tensor_model_parallel_size,
                        c->context_parallel_size, c->expert_model_parallel_size,
                        c->pipeline_model_parallel_size, c->vpp, c->rank_order, err, sizeof err))
        dist_fail_all("trident train: %s", err);
    r->layout.v_placement = pp_name_v_placement(c->pipeline_schedule); /* rank 0: both ends */
    comm_set_timeout(60.0 * (double)c->distributed_timeout_minutes);   /* 0 waits forever */
    device_set_threads(c->threads);
    CHECK(device_kind_parse(c->device, &r->dk), "device name checked by the flag parser");
    int gpu = r->dk == DEVICE_CUDA ? dist_bind_device() : -1;
    if (!device_init(r->dk, gpu, err, sizeof err)) dist_fail_all("trident train: %s", err);
    r->ps = ps_create_with(&r->layout, r->rank, comm_backend_for(r->dk, r->world));
    r->t = trainer_create(c, r->ps);
    r->ckpt = trainer_ckpt_layout(c);
    if (r->lead && !make_dirs_try(c->run_dir, err, sizeof err))
        die("trident train: --run-dir %s: %s", c->run_dir, err); /* die() ends the whole job */
    /* --save: refused now, not after training, if it cannot be written or another run saves
     * there (src/ckpt/checkpoint_dir.h); rank 0 holds the lock until the process ends. */
    if (r->lead && c->save && !ckpt_dir_lock(c->save, err, sizeof err))
        die("trident train: %s", err); /* only rank 0 knows: die() ends the whole job */
    if (r->world > 1) comm_barrier(r->ps->world);
    r->cfg_json = train_config_json(c);
}

/* Across hosts, rank 0 says how far each host's clock is from its own: one line per host. */
static void print_clock_offsets(const run_state *r, const clock_sync_result *cs) {
    if (hosts_count() < 2) return;
    double mine[2] = {cs->offset, cs->uncertainty};
    double *all = mallocCheck(2 * sizeof(double) * (size_t)r->world);
    comm_all_gather(r->ps->world, mine, all, sizeof mine, COMM_BYTE); /* two doubles each */
    for (int h = 1; r->lead && !r->c->quiet && h < hosts_count(); h++) {
        int k = 0;
        while (hosts_of(k) != h) k++;
        printf("clock of %s: %+.6f s from rank 0's (± %.1f us; Cristian's method, the best of its "
               "ranks' measurements)\n",
               hosts_name(h), -all[2 * k], 1e6 * all[2 * k + 1]);
    }
    free(all);
}

/* Every rank's trace recorder: clocks aligned to rank 0's, the header naming the run and the
 * rank's place in it, and hooks in the executor and in comm. */
static void run_trace_begin(run_state *r) {
    const train_config *c = r->c;
    const parallel_state *ps = r->ps;
    /* Every rank's times on rank 0's clock (exact on rank 0's host; clock_sync.h). */
    clock_sync_result cs = clock_sync(CLOCK_SYNC_EXCHANGES);
    print_clock_offsets(r, &cs);
    trace_header h = {0};
    make_run_id(h.run_id, ps->world);
    h.rank = r->rank;
    h.world_size = r->world;
    h.tp = c->tensor_model_parallel_size;
    h.pp = c->pipeline_model_parallel_size;
    h.dp = c->dp;
    h.cp = c->context_parallel_size;
    h.ep = c->expert_model_parallel_size;
    h.vpp = c->vpp;
    h.tp_rank = ps->tp_rank;
    h.pp_rank = ps->pp_rank;
    h.dp_rank = ps->dp_rank;
    h.cp_rank = ps->cp_rank;
    h.ep_rank = ps->ep_rank;
    h.num_microbatches = c->num_microbatches;
    snprintf(h.schedule, sizeof h.schedule, "%s", c->pipeline_schedule);
    h.clock_offset = cs.offset;
    h.clock_uncertainty = cs.uncertainty;
    snprintf(h.host, sizeof h.host, "%s", hosts_name(hosts_of(r->rank)));
    h.config_json = r->cfg_json;
    trainer *t = r->t;
    size_t per_step;
    t->trace = trace_create(&h, trace_capacity(c, &per_step));
    pp_executor_set_trace(t->exec, t->trace);
    /* The device's clock: markers in its queue (src/device/device.h), so that the compute
     * spans of a GPU run time its kernels, not their launches, without a wait per span. On
     * cuda, and on cpu-guarded, which runs the same path with the markers' CPU twin. */
    const trace_device_clock markers = {.take = device_marker_take,
                                        .sync = device_marker_sync,
                                        .time = device_marker_time,
                                        .release = device_marker_release,
                                        .runs_on_host = r->dk != DEVICE_CUDA};
    if (r->dk != DEVICE_CPU) trace_set_device_clock(t->trace, &markers);
    comm_set_trace_hook(trace_comm_hook, t->trace);
    comm_stream_set_trace_hook(trace_stream_hook, t->trace);
}

/* --load: the model and optimizer state of the checkpoint's latest iteration. */
static void run_resume(run_state *r) {
    const train_config *c = r->c;
    r->start = checkpoint_load(c->load, &r->ckpt, trainer_model(r->t), r->t->opt, r->rank);
    distopt_params_loaded(r->t->opt); /* ZeRO-3: its slices of what was loaded */
    if (r->lead && !c->quiet) printf("resumed from %s at iteration %d\n", c->load, r->start);
}

/* A run whose iterations are all done before it starts (--train-iters 0, or a checkpoint
 * already at --train-iters) trains nothing: it says so in one line, writes no metrics (there
 * is no loss to report) and no pictures, and ends with status 0 (resuming a finished run is
 * not an error: a job script may run it again). Returns true when that is the case. */
static bool run_nothing_to_do(const run_state *r) {
    const train_config *c = r->c;
    if (r->start < c->train_iters) return false;
    if (r->lead && c->load)
        printf("trident train: nothing to do: the checkpoint '%s' is at iteration %d and "
               "--train-iters is %d (raise --train-iters to train on)\n",
               c->load, r->start, c->train_iters);
    else if (r->lead)
        printf("trident train: nothing to do: --train-iters %d trains no step\n", c->train_iters);
    fflush(stdout);
    return true;
}

/* MFU's two numbers (lead only): the model FLOPs of a token and the job's peak, the sgemm
 * rate of one process at the run's thread count on a large square product (what the core can
 * do, as MFU's hardware peak is meant: the model's own small products reach less, and that
 * shortfall is part of what MFU measures) times the processes the machine's cores run at
 * once. Printed once, so that every step's ratio says what it is compared with. */
static void run_throughput_setup(run_state *r) {
    const train_config *c = r->c;
    r->flops_per_token = flops_train_per_token(&r->t->gcfg);
    if (r->dk == DEVICE_CUDA) return;
    const size_t N = GEMM_RATE_PEAK_DIM, C = GEMM_RATE_PEAK_DIM, OC = GEMM_RATE_PEAK_DIM;
    gemm_rate g = gemm_rate_get(c->threads, N, C, OC);
    const int cores = gemm_rate_cores();
    r->peak_flops = gemm_rate_job_peak(&g, r->world, cores);
    if (!c->quiet)
        printf("throughput: %.3g model FLOPs per token; peak %.3g GFLOP/s = sgemm %.3g GFLOP/s per "
               "process "
               "(%s; %d thread%s, %zux%zux%zu) x %d process%s at once on %d core%s\n",
               r->flops_per_token, 1e-9 * r->peak_flops, 1e-9 * g.flops_per_s, g.source, c->threads,
               c->threads == 1 ? "" : "s", N, C, OC, (int)(r->peak_flops / g.flops_per_s + 0.5),
               r->peak_flops / g.flops_per_s < 1.5 ? "" : "es", cores, cores == 1 ? "" : "s");
}

/* One line of RUN_DIR/metrics.jsonl (metrics_log.h) and one progress line (lead only). */
static void log_step(run_state *r, int it, const step_result *s, double tps) {
    const train_config *c = r->c;
    const double mfs = tps * r->flops_per_token; /* the whole job's model FLOP/s */
    metrics_log_step(r->mf, c, it, s, tps, mfs, r->peak_flops);
    if (!c->quiet) {
        printf("step %5d/%d | loss %.4f | lr %.3e | grad norm %.3f | %.0f tokens/s | %.3g GFLOP/s",
               it, c->train_iters, (double)s->loss, (double)s->lr, s->grad_norm, tps, 1e-9 * mfs);
        if (r->peak_flops > 0) printf(" (MFU %.1f%%)", 100 * mfs / r->peak_flops);
        if (s->moe_tokens) printf(" | moe aux %.4f", (double)s->aux_loss);
        printf("\n");
    }
    fflush(stdout);
}

/* The held-out loss every --eval-interval steps and at the end. */
static void run_evaluate(run_state *r, int it) {
    const train_config *c = r->c;
    float el = trainer_evaluate(r->t, c->eval_iters, it);
    metrics_check_eval(it, el);
    r->held_out = el;
    if (!r->lead) return;
    metrics_log_eval(r->mf, it, el);
    if (!c->quiet)
        printf("eval  %5d/%d | loss %.4f on %d held-out batches\n", it, c->train_iters, (double)el,
               c->eval_iters);
}

static void run_save(run_state *r, int it) {
    checkpoint_save(r->c->save, it, &r->ckpt, trainer_model(r->t), r->t->opt,
                    r->world > 1 ? r->ps->world : NULL, r->rank);
    r->last_saved = it;
}

/* The steps, with progress lines and metrics every --log-interval, evaluation and checkpoints. */
static void run_loop(run_state *r) {
    const train_config *c = r->c;
    const double tokens_per_step = (double)c->global_batch_size * c->seq_length;
    r->t_start = r->t_last = time_now();
    r->first_loss = r->last_loss = r->held_out = NAN;
    r->last_logged = r->last_saved = r->start;
    for (int it = r->start + 1; it <= c->train_iters; it++) {
        step_result s = trainer_step(r->t, it);
        if (it == r->start + 1) r->first_loss = s.loss;
        r->last_loss = s.loss;
        metrics_check_step(r->c, it, &s);
        if (it % c->log_interval == 0 || it == c->train_iters || it == r->start + 1) {
            double now = time_now();
            double tps = tokens_per_step * (it - r->last_logged) / (now - r->t_last);
            r->t_last = now;
            r->last_logged = it;
            if (r->lead) log_step(r, it, &s, tps);
        }
        if (c->eval_iters > 0 &&
            ((c->eval_interval > 0 && it % c->eval_interval == 0) || it == c->train_iters))
            run_evaluate(r, it);
        if (c->save && c->save_interval > 0 && it % c->save_interval == 0) run_save(r, it);
    }
    if (c->save && r->last_saved != c->train_iters && c->train_iters > r->start)
        run_save(r, c->train_iters);
    distopt_wait_params(r->t->opt); /* --overlap-param-gather: the last step's gathers */
}

/* After the run (lead): one record per rank in metrics.jsonl, what the allocator measured
 * next to what was predicted (src/trace/run_metrics.h documents the line), and the summary
 * line. Every rank has gathered the peaks (trainer_memory_gather) just before. */
static void run_memory_records(run_state *r) {
    const train_memory *tm = r->mem;
    double worst = 0;
    int worst_rank = 0;
    for (int k = 0; k < tm->world; k++) {
        const zero_memory_rank *m = &tm->ranks[k];
        const size_t peak = trainer_memory_peak(r->t, k);
        metrics_log_memory(r->mf, r->c->train_iters, k, m, peak);
        const double dev = m->total ? (double)peak / (double)m->total - 1.0 : 0.0;
        if (fabs(dev) > fabs(worst)) worst = dev, worst_rank = k;
    }
    fflush(r->mf);
    if (r->c->quiet) return;
    char a[32], b[32];
    printf("memory: peak %s on rank 0 (Trident's allocator), predicted %s; measured ÷ predicted "
           "within %.1f%% on every rank (largest deviation %+.1f%% on rank %d)\n",
           zero_bytes_text((double)trainer_memory_peak(r->t, 0), a, sizeof a),
           zero_bytes_text((double)tm->ranks[0].total, b, sizeof b), 100.0 * fabs(worst),
           100.0 * worst, worst_rank);
}

/* Every rank writes RUN_DIR/trace/rank<k>.trace; then all ranks meet. */
static void run_trace_end(run_state *r) {
    trainer *t = r->t;
    char path[4200];
    if (t->trace) {
        comm_set_trace_hook(NULL, NULL);
        comm_stream_set_trace_hook(NULL, NULL);
        snprintf(path, sizeof path, "%s/trace", r->c->run_dir);
        char why[9000]; /* RUN/trace is Trident's: never a link (src/core/nofollow.h) */
        if (r->lead && !nofollow_make_dir(path, why, sizeof why))
            die("trident train: --run-dir %s: %s", r->c->run_dir, why);
        if (r->world > 1) comm_barrier(r->ps->world);
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", r->c->run_dir, r->rank);
        trace_write(t->trace, path);
        trace_destroy(t->trace);
        t->trace = NULL;
    }
    if (r->world > 1) comm_barrier(r->ps->world);
}

/* The summary and the pictures of the run directory (rank 0, after every trace is written):
 * groups, the ZeRO cut, the last step's timelines and bubble, the Chrome trace. */
static void run_summary(run_state *r, double elapsed) {
    const train_config *c = r->c;
    if (c->theme) viz_theme_use(c->theme); /* checked by the flag parser */
    if (c->draw_zero) {
        viz_draw_zero_buffer(c->draw_zero, distopt_ranges(r->t->opt), trainer_run_dtype(c),
                             c->use_distributed_optimizer ? 1 : 0);
        printf("ZeRO buffer picture: %s\n", c->draw_zero);
    }
    printf("done: %d iterations in %.1f s; loss %.4f -> %.4f",
           c->train_iters > r->start ? c->train_iters - r->start : 0, elapsed,
           (double)r->first_loss, (double)r->last_loss);
    if (!isnan(r->held_out)) printf("; held-out loss %.4f", (double)r->held_out);
    double floor = dataset_loss_floor(r->t->data), no_copy = dataset_loss_no_copy(r->t->data);
    if (!isnan(floor)) printf(" (floor %.3f, no-copy baseline %.3f)", floor, no_copy);
    viz_mp_levels levels = {
        2,
        {{floor, "loss floor (a perfect model)"},
         {no_copy, "no-copy baseline (the record form learned, not the lookup)"}}};
    printf("\nrun directory: %s (metrics.jsonl%s)\n", c->run_dir, c->no_trace ? "" : ", trace/");
    if (c->save) printf("checkpoint: %s (iteration %d)\n", c->save, c->train_iters);
    viz_run_pictures req = {
        .run_dir = c->run_dir,
        .layout = &r->layout,
        .zero = train_config_zero_stage(c) == 1 && c->dp <= ZERO_DRAW_MAX_DP /* else no picture */
                    ? distopt_ranges(r->t->opt)
                    : NULL,
        .dtype = trainer_run_dtype(c),
        .traced = !c->no_trace,
        .pipeline = c->pipeline_model_parallel_size > 1,
        .who = "trident train",
        .out = stdout,
        .loss_levels = &levels,
    };
    viz_run_bubbles bubbles;
    char err[512];
    if (!viz_render_run_dir(&req, &bubbles, err, sizeof err))
        die("cannot read back the traces: %s", err);
    fflush(stdout);
}

/* Frees what the run holds; returns the exit status. */
static int run_end(run_state *r) {
    if (r->t->trace) { /* begun, never written: a run with nothing to do */
        comm_set_trace_hook(NULL, NULL);
        comm_stream_set_trace_hook(NULL, NULL);
        trace_destroy(r->t->trace);
        r->t->trace = NULL;
    }
    free(r->cfg_json);
    train_memory_free(r->mem);
    trainer_destroy(r->t);
    ps_destroy(r->ps);
    device_shutdown();
    return 0;
}

int trainer_run(train_config *c) {
    run_state r = {0};
    run_setup(&r, c);
    if (!c->no_trace) run_trace_begin(&r);
    if (r.lead) r.mem = train_memory_predict(c, train_config_zero_stage(c), "trident train");
    if (r.lead && !c->quiet) run_print_layout(c, r.ps, r.t->model, r.t->opt, r.t->exec);
    if (r.lead && !c->quiet) run_print_memory_prediction(r.mem);
    if (r.lead && c->sequence_parallel_off)
        fprintf(stderr, "trident train: note: --sequence-parallel ignored: "
                        "--tensor-model-parallel-size is 1, so there is no tensor-parallel group "
                        "to cut the sequence over (Megatron does the same)\n");
    if (c->load) run_resume(&r);
    if (run_nothing_to_do(&r)) return run_end(&r);
    char path[4200];
    if (r.lead) {
        run_throughput_setup(&r);
        snprintf(path, sizeof path, "%s/metrics.jsonl", c->run_dir);
        r.mf = atomic_file_open(&r.metrics, path);
    }
    run_loop(&r);
    double elapsed = time_now() - r.t_start;
    trainer_memory_gather(r.t); /* every rank: the peaks after the last step and evaluation */
    if (r.lead) {
        run_memory_records(&r);
        atomic_file_commit(&r.metrics);
        /* RUN_DIR/config.json, next to the metrics it describes (`render --metrics` labels by it) */
        snprintf(path, sizeof path, "%s/config.json", c->run_dir);
        atomic_file cf;
        fprintf(atomic_file_open(&cf, path), "%s\n", r.cfg_json);
        atomic_file_commit(&cf);
    }
    run_trace_end(&r);
    if (r.lead) run_summary(&r, elapsed);
    return run_end(&r);
}
