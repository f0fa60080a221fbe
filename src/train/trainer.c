/* trainer.c — see trainer.h. */
#include "src/train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/ops.h"
#include "src/ckpt/checkpoint.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/core/json.h"
#include "src/data/dataset.h"
#include "src/device/device.h"
#include "src/pp/executor.h"
#include "src/pp/schedule.h"
#include "src/runtime/clock_sync.h"
#include "src/runtime/comm_label.h"
#include "src/runtime/dist.h"
#include "src/trace/replay.h"
#include "src/trace/trace.h"
#include "src/zero/distributed_optimizer.h"
#include "src/zero/memory_plan.h"
#include "viz/chrome_trace.h"
#include "viz/groups_draw.h"
#include "viz/timeline_draw.h"
#include "viz/timeline_load.h"
#include "viz/zero_draw.h"

struct trainer {
    train_config cfg;
    parallel_state *ps;    /* NULL: serial */
    gpt_config gcfg;
    local_model *model;
    pp_executor *exec;
    dist_optimizer *opt;
    dataset *data;
    int tp_rank, pp_rank, dp_rank;
    bool is_last_stage;
    int32_t *inputs, *targets; /* (m, B, T) */
    int32_t *sample;           /* (T+1) */
    trace_recorder *trace;
};

static int *parse_stage_layers(const char *s, int nstages) {
    if (!s) return NULL;
    int *out = callocCheck((size_t)nstages, sizeof(int));
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) die("trident train: --stage-layers '%s': expected comma-separated layer counts", s);
        if (n >= nstages)
            die("trident train: --stage-layers '%s' names more than the %d virtual pipeline stages", s, nstages);
        out[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') die("trident train: --stage-layers '%s': expected comma-separated layer counts", s);
    }
    if (n != nstages) die("trident train: --stage-layers '%s' names %d stages, the layout has %d", s, n, nstages);
    return out;
}

trainer *trainer_create(const train_config *cfg, parallel_state *ps) {
    trainer *t = callocCheck(1, sizeof *t);
    t->cfg = *cfg;
    t->ps = ps;
    const int tp = cfg->tensor_model_parallel_size, pp = cfg->pipeline_model_parallel_size;
    t->tp_rank = ps ? ps->tp_rank : 0;
    t->pp_rank = ps ? ps->pp_rank : 0;
    t->dp_rank = ps ? ps->dp_rank : 0;
    t->is_last_stage = ps ? ps->is_last_stage : true;
    if (!ps) CHECK(tp == 1 && pp == 1 && cfg->dp == 1, "a serial trainer needs tp = pp = dp = 1");
    gpt_config g = {cfg->padded_vocab, 256, cfg->seq_length, cfg->num_layers, cfg->hidden_size,
                    cfg->num_attention_heads};
    t->gcfg = g;
    int *stage_layers = parse_stage_layers(cfg->stage_layers, pp * cfg->vpp);
    t->model = local_model_create(&g, tp, t->tp_rank, pp, t->pp_rank, cfg->vpp, stage_layers,
                                  (uint64_t)cfg->seed);
    free(stage_layers);
    pp_kind kind;
    CHECK(pp_kind_parse(cfg->pipeline_schedule, &kind), "schedule name checked by the flag parser");
    pp_config pc = {kind, pp, cfg->num_microbatches, cfg->vpp};
    pp_config_check(&pc, "trident train");
    t->exec = pp_executor_create(t->model, ps ? ps->tp : NULL, ps ? ps->pp : NULL, &pc, t->pp_rank,
                                 cfg->micro_batch_size, cfg->seq_length);
    adamw_config ac = {
        .lr = cfg->lr, .min_lr = cfg->min_lr, .warmup_iters = cfg->lr_warmup_iters,
        .decay_iters = cfg->train_iters, .beta1 = cfg->adam_beta1, .beta2 = cfg->adam_beta2,
        .eps = cfg->adam_eps, .weight_decay = cfg->weight_decay, .clip_grad = cfg->clip_grad,
    };
    distopt_groups dg = {
        .dp = ps ? ps->dp : NULL,
        .norm = ps ? (cfg->use_distributed_optimizer ? ps->world : ps->mp) : NULL,
        .embedding = ps ? ps->embedding : NULL,
        .zero = cfg->use_distributed_optimizer,
        .bucket_numel = 1u << 20,
        .world = ps ? ps->world : NULL,
        .dtype = cfg->bf16 ? PREC_BF16 : cfg->fp16 ? PREC_FP16 : PREC_FP32,
    };
    t->opt = distopt_create(t->model, &ac, &dg);
    t->data = dataset_open(cfg->data_path, cfg->seq_length, (uint64_t)cfg->seed);
    size_t n = (size_t)cfg->num_microbatches * (size_t)cfg->micro_batch_size * (size_t)cfg->seq_length;
    t->inputs = mallocCheck(n * sizeof(int32_t));
    t->targets = mallocCheck(n * sizeof(int32_t));
    t->sample = mallocCheck(((size_t)cfg->seq_length + 1) * sizeof(int32_t));
    return t;
}

void trainer_destroy(trainer *t) {
    if (!t) return;
    pp_executor_destroy(t->exec);
    distopt_destroy(t->opt);
    local_model_destroy(t->model);
    dataset_close(t->data);
    free(t->inputs);
    free(t->targets);
    free(t->sample);
    free(t);
}

local_model *trainer_model(trainer *t) { return t->model; }
dist_optimizer *trainer_optimizer(trainer *t) { return t->opt; }
pp_executor *trainer_executor(trainer *t) { return t->exec; }

/* This DP rank's micro-batches of iteration `it`, as (m, B, T) inputs and targets. */
/* This DP rank's m micro-batches of a global batch, as (m, B, T) inputs and targets: the
 * batch's sequences first..first+G−1, of which this rank takes its G/dp consecutive ones.
 * Training reads samples of the data; evaluation reads its held-out windows (wrapping). */
static void load_batch(trainer *t, uint64_t first, bool eval) {
    const train_config *c = &t->cfg;
    const size_t T = (size_t)c->seq_length, B = (size_t)c->micro_batch_size;
    const uint64_t base = first + (uint64_t)t->dp_rank * (uint64_t)(c->global_batch_size / c->dp);
    const size_t nwin = eval ? dataset_eval_windows(t->data) : 0;
    for (int j = 0; j < c->num_microbatches; j++) {
        for (size_t i = 0; i < B; i++) {
            uint64_t k = base + (uint64_t)j * B + i;
            if (eval) dataset_eval_window(t->data, (size_t)(k % nwin), t->sample);
            else dataset_sample(t->data, k, t->sample);
            size_t at = ((size_t)j * B + i) * T;
            memcpy(t->inputs + at, t->sample, T * sizeof(int32_t));
            memcpy(t->targets + at, t->sample + 1, T * sizeof(int32_t));
        }
    }
}

step_result trainer_step(trainer *t, int it) {
    const train_config *c = &t->cfg;
    step_result r = {0};
    int hs = t->trace ? trace_begin(t->trace, TRACE_STEP, it, -1, -1) : -1;
    int hd = t->trace ? trace_begin(t->trace, TRACE_DATA, it, -1, -1) : -1;
    load_batch(t, (uint64_t)(it - 1) * (uint64_t)c->global_batch_size, false);
    if (t->trace) trace_end(t->trace, hd);
    local_model_zero_grads(t->model);
    /* Each position's loss weighs 1/(B·T·m) of the step's objective (times the fp16 loss scale). */
    const float dloss = distopt_loss_scale(t->opt) /
                        ((float)c->micro_batch_size * (float)c->seq_length * (float)c->num_microbatches);
    double loss_sum = pp_executor_run(t->exec, t->inputs, t->targets, dloss, it);
    int ho = t->trace ? trace_begin(t->trace, TRACE_OPTIMIZER, it, -1, -1) : -1;
    distopt_stats st = distopt_step(t->opt, it);
    if (t->trace) trace_end(t->trace, ho);
    /* The loss lives on the last pipeline stage; every TP rank there has it. Average over DP
     * and make it known everywhere: one all-reduce over the world. */
    float loss = 0.0f;
    if (t->is_last_stage && t->tp_rank == 0)
        loss = (float)(loss_sum / (double)c->num_microbatches / (double)c->dp);
    /* Memory accounting: the largest activation peak of any rank this step. */
    int64_t peak = (int64_t)pp_executor_peak_activation_bytes(t->exec);
    /* A loss that is not finite: the lowest rank whose own share was not (max of -rank). */
    int32_t bad = isfinite(loss) ? INT32_MIN : -dist_rank();
    if (t->ps && comm_size(t->ps->world) > 1) {
        comm_label_set("loss", -1);
        comm_all_reduce(t->ps->world, &loss, 1, COMM_FLOAT32, COMM_SUM);
        comm_label_set("peak mem", -1);
        comm_all_reduce(t->ps->world, &peak, 1, COMM_INT64, COMM_MAX);
        comm_label_set("loss", -1);
        if (!isfinite(loss)) comm_all_reduce(t->ps->world, &bad, 1, COMM_INT32, COMM_MAX); /* all see it */
        comm_label_clear();
    }
    r.loss_rank = bad == INT32_MIN ? -1 : -bad;
    r.peak_activation_bytes = (size_t)peak;
    if (t->trace) trace_end(t->trace, hs);
    r.loss = loss;
    r.grad_norm = st.grad_norm;
    r.lr = st.lr;
    r.skipped = st.skipped;
    r.loss_scale = st.loss_scale;
    return r;
}

float trainer_evaluate(trainer *t, int batches, int step) {
    const train_config *c = &t->cfg;
    if (dataset_eval_windows(t->data) == 0)
        die("trident train: the data has no evaluation window of --seq-length %d + 1 tokens", c->seq_length);
    double sum = 0.0;
    for (int b = 0; b < batches; b++) {
        load_batch(t, (uint64_t)b * (uint64_t)c->global_batch_size, true);
        sum += pp_executor_forward_only(t->exec, t->inputs, t->targets, step);
    }
    /* Like the training loss: from the last stage's first TP rank, averaged over DP. */
    float loss = 0.0f;
    if (t->is_last_stage && t->tp_rank == 0)
        loss = (float)(sum / ((double)batches * c->num_microbatches * c->dp));
    if (t->ps && comm_size(t->ps->world) > 1) {
        comm_label_set("eval loss", -1);
        comm_all_reduce(t->ps->world, &loss, 1, COMM_FLOAT32, COMM_SUM);
        comm_label_clear();
    }
    return loss;
}

double trainer_eval(trainer *t, const char *data_path, int max_windows) {
    CHECK(!t->ps || comm_size(t->ps->world) == 1, "evaluation runs serially");
    const gpt_chunk *ch = &t->model->chunks[0];
    dataset *d = data_path ? dataset_open(data_path, t->cfg.seq_length, (uint64_t)t->cfg.seed) : t->data;
    size_t nw = dataset_eval_windows(d);
    if (max_windows > 0 && (size_t)max_windows < nw) nw = (size_t)max_windows;
    if (nw == 0) die("no evaluation window: the data is shorter than --seq-length %d + 1 tokens", t->cfg.seq_length);
    const int T = t->cfg.seq_length;
    gpt_acts *a = gpt_acts_create(ch, 1, T);
    double sum = 0.0;
    for (size_t k = 0; k < nw; k++) {
        dataset_eval_window(d, k, t->sample);
        sum += gpt_forward(ch, t->model->params, a, t->sample, t->sample + 1, NULL, NULL, NULL);
    }
    gpt_acts_destroy(a);
    if (d != t->data) dataset_close(d);
    return sum / (double)nw;
}

/* ------------------------------------------------------------------ the run */

static prec_dtype run_dtype(const train_config *c) {
    return c->bf16 ? PREC_BF16 : c->fp16 ? PREC_FP16 : PREC_FP32;
}

static void print_layout(const train_config *c, const parallel_state *ps, const local_model *m,
                         const dist_optimizer *opt) {
    printf("trident train: %d rank%s = tensor %d × pipeline %d × data %d, schedule %s",
           c->world_size, c->world_size == 1 ? "" : "s", c->tensor_model_parallel_size,
           c->pipeline_model_parallel_size, c->dp, c->pipeline_schedule);
    if (c->vpp > 1) printf(" (%d chunks per rank)", c->vpp);
    printf(", ZeRO %s, %s\n", c->use_distributed_optimizer ? "on" : "off",
           c->bf16 ? "bf16" : c->fp16 ? "fp16" : "fp32");
    if (c->world_size > 1) printf("%s\n", dist_transport_description());
    if (device_current() != DEVICE_CPU) {
        printf("device: %s", device_kind_name(device_current()));
        if (device_gpu() >= 0) printf(" (GPU %d of %d on this node)", device_gpu(), device_cuda_count());
        printf(", communication: %s\n",
               ps && comm_backend_of(ps->world) == COMM_NCCL ? "NCCL on device memory"
                                                              : "MPI, device buffers staged through host memory");
    }
    printf("model: %d layers, hidden %d, %d heads, seq %d, vocab 256 (padded %d)\n", c->num_layers,
           c->hidden_size, c->num_attention_heads, c->seq_length, c->padded_vocab);
    printf("batch: global %d = micro-batch %d × %d micro-batches × data-parallel %d\n",
           c->global_batch_size, c->micro_batch_size, c->num_microbatches, c->dp);
    if (ps) {
        printf("groups (rank order %s):\n", c->rank_order);
        const pg_kind kinds[] = {PG_TP, PG_PP, PG_DP};
        for (int k = 0; k < 3; k++) {
            int ng = pg_num_groups(&ps->layout, kinds[k]), gs = pg_group_size(&ps->layout, kinds[k]);
            int members[4096];
            printf("  %-3s", pg_kind_name(kinds[k]));
            for (int g = 0; g < ng && g < 16; g++) {
                pg_group_members(&ps->layout, kinds[k], g, members);
                printf(" [");
                for (int i = 0; i < gs; i++) printf("%s%d", i ? "," : "", members[i]);
                printf("]");
            }
            if (ng > 16) printf(" …");
            printf("\n");
        }
    }
    /* The ZeRO paper's accounting for this rank's Ψ parameters (src/zero/memory_plan.h). */
    const zero_ranges *r = distopt_ranges(opt);
    size_t shard = c->use_distributed_optimizer ? r->shard_numel : (m->numel + (size_t)c->dp - 1) / (size_t)c->dp;
    zero_memory_plan plan = zero_memory_plan_make(m->numel, c->dp, shard, run_dtype(c),
                                                  c->use_distributed_optimizer ? 1 : 0);
    char buf[256];
    printf("memory plan (rank 0, %zu parameters): %s\n", m->numel, zero_memory_plan_summary(&plan, buf, sizeof buf));
}

/* The pictures of a finished run (rank 0, after every rank wrote its trace): the timeline of
 * the last step (PNG) and the whole run as a Chrome trace (Perfetto), the process groups and,
 * with ZeRO, how the optimizer buffer is cut. Prints the measured vs theoretical bubble. */
static void render_run(const train_config *c, const pg_layout *layout, const dist_optimizer *opt) {
    char path[4200], err[512];
    printf("pictures:\n");
    snprintf(path, sizeof path, "%s/groups.png", c->run_dir);
    viz_groups_draw(path, layout, 8);
    printf("  %s\n", path);
    if (c->use_distributed_optimizer) {
        snprintf(path, sizeof path, "%s/zero.png", c->run_dir);
        zero_memory_plan plan = zero_memory_plan_of(distopt_ranges(opt), run_dtype(c), 1);
        zero_draw(path, distopt_ranges(opt), &plan);
        printf("  %s   (rank 0's buffer and its dp shards)\n", path);
    }
    if (c->no_trace) return;
    trace_run *run = trace_run_read(c->run_dir, err, sizeof err);
    if (!run) die("cannot read back the traces: %s", err);
    /* The last step as measured (wall clock), then re-timed as if each rank had its own core
     * (src/trace/replay.h): with more ranks than cores the two differ, and the replay is what
     * the schedule alone would give. */
    trace_run *replayed = trace_run_replay(run, err, sizeof err);
    if (!replayed) fprintf(stderr, "trident train: no replay view: %s\n", err);
    const trace_run *views[2] = {run, replayed};
    const char *files[2] = {"timeline.png", "timeline-replay.png"};
    const char *what[2] = {"the last step, every rank, wall clock",
                           "the same step, " TRACE_REPLAY_LABEL};
    for (int v = 0; v < 2 && views[v]; v++) {
        viz_timeline *tl = viz_timeline_from_run(views[v], c->run_dir, -1, err, sizeof err);
        if (!tl) continue;
        snprintf(path, sizeof path, "%s/%s", c->run_dir, files[v]);
        viz_tl_draw_options o = {0, c->pipeline_model_parallel_size > 1};
        const viz_timeline *one[1] = {tl};
        viz_timeline_draw(path, one, 1, &o);
        printf("  %s   (%s)\n", path, what[v]);
        if (c->pipeline_model_parallel_size > 1) {
            viz_tl_bubble b = viz_timeline_bubble(tl);
            printf("bubble (last step%s): measured %.1f%% of total time vs theory (p-1)/(v·m+p-1) = %.1f%%; "
                   "%.1f%% of ideal time vs (p-1)/(v·m) = %.1f%% (measured = wait %.1f%% + idle %.1f%% "
                   "inside the pipeline's forward/backward span, mean over ranks)\n",
                   v ? ", replay" : "", 100 * b.measured_total, 100 * b.theory_total, 100 * b.measured_ideal,
                   100 * b.theory_ideal, 100 * b.wait_total, 100 * b.idle_total);
        }
        viz_timeline_free(tl);
    }
    trace_run_free(replayed);
    snprintf(path, sizeof path, "%s/trace.json", c->run_dir);
    atomic_file af;
    FILE *f = atomic_file_open(&af, path);
    const trace_run *runs[1] = {run};
    const char *names[1] = {c->run_dir};
    viz_chrome_trace_write(f, runs, names, 1);
    atomic_file_commit(&af);
    printf("  %s   (open in https://ui.perfetto.dev or chrome://tracing)\n", path);
    trace_run_free(run);
}

static void trace_comm_hook(const comm_event *e, void *ctx) {
    trace_recorder *tr = ctx;
    trace_kind kind = TRACE_COLLECTIVE;
    if (e->peer >= 0) kind = strncmp(e->op, "recv", 4) == 0 ? TRACE_RECV : TRACE_SEND;
    trace_comm_info ci = {.kind = kind, .op = e->op, .group = e->group, .label = e->label,
                          .peer = e->peer, .tag = e->tag, .layer = e->layer,
                          .group_first = kind == TRACE_COLLECTIVE ? e->group_first : -1,
                          .bytes = e->bytes, .t_start = e->t_start, .t_ready = e->t_ready,
                          .t_end = e->t_end, .cpu = e->cpu};
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
        snprintf(id, 32, "%llx-%lx-%x-%x", (unsigned long long)ts.tv_sec, (unsigned long)ts.tv_nsec / 1000,
                 (unsigned)getpid(), counter);
    }
    counter++;
    if (world && comm_size(world) > 1) comm_broadcast(world, id, 32, COMM_BYTE, 0);
}

/* NCCL when every rank on a node has a GPU of its own (and the build has NCCL); otherwise MPI,
 * with device buffers staged through host memory (src/runtime/comm.c), so any number of
 * ranks can share one GPU. */
static comm_backend comm_backend_for(device_kind dk, int world) {
#ifdef TRIDENT_CUDA
    if (dk == DEVICE_CUDA && world > 1 && dist_local_size() <= device_cuda_count()) return COMM_NCCL;
#else
    (void)dk;
    (void)world;
#endif
    return COMM_MPI;
}

int trainer_run(train_config *c) {
    int world = dist_world_size(), rank = dist_rank();
    char err[512];
    if (!train_config_check(c, world, err, sizeof err)) dist_fail_all("trident train: %s", err);
    pg_layout layout;
    if (!pg_layout_make(&layout, world, c->tensor_model_parallel_size, c->pipeline_model_parallel_size,
                        c->vpp, c->rank_order, err, sizeof err))
        dist_fail_all("trident train: %s", err);
    comm_set_timeout(60.0 * (double)c->distributed_timeout_minutes); /* 0 waits forever */
    ops_set_threads(c->threads);
    device_kind dk;
    CHECK(device_kind_parse(c->device, &dk), "device name checked by the flag parser");
    int gpu = dk == DEVICE_CUDA ? dist_bind_device() : -1;
    if (!device_init(dk, gpu, err, sizeof err)) dist_fail_all("trident train: %s", err);
    parallel_state *ps = ps_create_with(&layout, rank, comm_backend_for(dk, world));
    trainer *t = trainer_create(c, ps);
    const bool lead = rank == 0;
    char path[4200];
    if (lead) make_dirs(c->run_dir);
    if (world > 1) comm_barrier(ps->world);

    char *cfg_json = train_config_json(c);
    if (!c->no_trace) {
        /* Every rank's times on rank 0's clock (exact on rank 0's host; clock_sync.h). */
        clock_sync_result cs = clock_sync(CLOCK_SYNC_EXCHANGES);
        trace_header h = {0};
        make_run_id(h.run_id, ps->world);
        h.rank = rank;
        h.world_size = world;
        h.tp = c->tensor_model_parallel_size;
        h.pp = c->pipeline_model_parallel_size;
        h.dp = c->dp;
        h.vpp = c->vpp;
        h.tp_rank = ps->tp_rank;
        h.pp_rank = ps->pp_rank;
        h.dp_rank = ps->dp_rank;
        h.num_microbatches = c->num_microbatches;
        snprintf(h.schedule, sizeof h.schedule, "%s", c->pipeline_schedule);
        h.clock_offset = cs.offset;
        h.clock_uncertainty = cs.uncertainty;
        h.config_json = cfg_json;
        /* Events per step: for each (micro-batch, chunk) a forward and a backward, their p2p,
         * two memory samples, and 4 TP all-reduces per layer it holds (at most L) plus the
         * embedding and loss ones;
         * then the optimizer's collectives and the step's own events. */
        size_t per_step = (size_t)c->num_microbatches * (size_t)c->vpp * (12 + 4 * (size_t)c->num_layers) + 64;
        t->trace = trace_create(&h, per_step * (size_t)(c->train_iters + 1) + 1024);
        pp_executor_set_trace(t->exec, t->trace);
        if (dk == DEVICE_CUDA) trace_set_sync(t->trace, device_sync); /* kernel time, not launches */
        comm_set_trace_hook(trace_comm_hook, t->trace);
    }
    if (lead && !c->quiet) print_layout(c, ps, t->model, t->opt);
    int start = 0;
    if (c->load) {
        start = checkpoint_load(c->load, c, t->model, t->opt, rank);
        if (lead && !c->quiet) printf("resumed from %s at iteration %d\n", c->load, start);
        if (start >= c->train_iters && lead)
            printf("nothing to do: the checkpoint is at iteration %d, --train-iters is %d\n", start, c->train_iters);
    }

    atomic_file metrics;
    FILE *mf = NULL;
    if (lead) {
        snprintf(path, sizeof path, "%s/metrics.jsonl", c->run_dir);
        mf = atomic_file_open(&metrics, path);
    }
    const double tokens_per_step = (double)c->global_batch_size * c->seq_length;
    double t_start = time_now(), t_last = t_start;
    float first_loss = NAN, last_loss = NAN;
    int last_logged = start, last_saved = start;
    for (int it = start + 1; it <= c->train_iters; it++) {
        step_result r = trainer_step(t, it);
        if (it == start + 1) first_loss = r.loss;
        last_loss = r.loss;
        if (!isfinite(r.loss))
            dist_fail_all("trident train: the loss became %g at iteration %d, first on rank %d (last "
                          "pipeline stage); lower --lr or check the data", (double)r.loss, it, r.loss_rank);
        if (it % c->log_interval == 0 || it == c->train_iters || it == start + 1) {
            double now = time_now();
            double tps = tokens_per_step * (it - last_logged) / (now - t_last);
            t_last = now;
            last_logged = it;
            if (lead) {
                json_writer w; /* one line of metrics.jsonl */
                json_init_file(&w, mf, 0);
                json_begin_object(&w, JSON_COMPACT);
                json_field_int(&w, "step", it);
                json_field_double(&w, "loss", "%.7g", (double)r.loss);
                json_field_double(&w, "lr", "%.6g", (double)r.lr);
                json_field_double(&w, "grad_norm", "%.6g", isfinite(r.grad_norm) ? r.grad_norm : -1.0);
                json_field_double(&w, "tokens_per_sec", "%.1f", tps);
                json_field_uint(&w, "peak_activation_bytes", r.peak_activation_bytes);
                if (c->fp16) json_field_double(&w, "loss_scale", "%g", (double)r.loss_scale);
                if (c->fp16) json_field_bool(&w, "skipped", r.skipped);
                json_end_object(&w);
                fputc('\n', mf);
                fflush(mf);
                if (!c->quiet)
                    printf("step %5d/%d | loss %.4f | lr %.3e | grad norm %.3f | %.0f tokens/s\n", it,
                           c->train_iters, (double)r.loss, (double)r.lr, r.grad_norm, tps);
                fflush(stdout);
            }
        }
        if (c->eval_interval > 0 && c->eval_iters > 0 && (it % c->eval_interval == 0 || it == c->train_iters)) {
            float el = trainer_evaluate(t, c->eval_iters, it);
            if (lead) {
                json_writer w;
                json_init_file(&w, mf, 0);
                json_begin_object(&w, JSON_COMPACT);
                json_field_int(&w, "step", it);
                json_field_double(&w, "eval_loss", "%.7g", (double)el);
                json_end_object(&w);
                fputc('\n', mf);
                fflush(mf);
                if (!c->quiet) printf("eval  %5d/%d | loss %.4f on %d held-out batches\n", it, c->train_iters, (double)el, c->eval_iters);
            }
        }
        if (c->save && c->save_interval > 0 && it % c->save_interval == 0) {
            checkpoint_save(c->save, it, c, t->model, t->opt, world > 1 ? ps->world : NULL, rank);
            last_saved = it;
        }
    }
    if (c->save && last_saved != c->train_iters && c->train_iters > start)
        checkpoint_save(c->save, c->train_iters, c, t->model, t->opt, world > 1 ? ps->world : NULL, rank);
    double elapsed = time_now() - t_start;
    if (lead) atomic_file_commit(&metrics);
    if (t->trace) {
        comm_set_trace_hook(NULL, NULL);
        snprintf(path, sizeof path, "%s/trace", c->run_dir);
        if (lead) make_dirs(path);
        if (world > 1) comm_barrier(ps->world);
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", c->run_dir, rank);
        trace_write(t->trace, path);
        trace_destroy(t->trace);
        t->trace = NULL;
    }
    if (world > 1) comm_barrier(ps->world);
    if (lead && c->draw_zero) {
        zero_memory_plan plan = zero_memory_plan_of(distopt_ranges(t->opt), run_dtype(c), c->use_distributed_optimizer ? 1 : 0);
        zero_draw(c->draw_zero, distopt_ranges(t->opt), &plan);
        printf("ZeRO buffer picture: %s\n", c->draw_zero);
    }
    if (lead) {
        printf("done: %d iterations in %.1f s; loss %.4f -> %.4f", c->train_iters - start, elapsed,
               (double)first_loss, (double)last_loss);
        double floor = dataset_loss_floor(t->data);
        if (!isnan(floor)) printf(" (the data's floor is %.3f)", floor);
        printf("\nrun directory: %s (metrics.jsonl%s)\n", c->run_dir, c->no_trace ? "" : ", trace/");
        if (c->save) printf("checkpoint: %s (iteration %d)\n", c->save, c->train_iters);
        render_run(c, &layout, t->opt);
        fflush(stdout);
    }
    free(cfg_json);
    trainer_destroy(t);
    ps_destroy(ps);
    device_shutdown();
    return 0;
}
