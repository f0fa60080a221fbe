/* trainer.c — see trainer.h. */
#include "src/train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/ckpt/checkpoint.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/data/dataset.h"
#include "src/device/device.h"
#include "src/device/gemm_rate.h"
#include "src/model/flops.h"
#include "src/pp/executor.h"
#include "src/pp/schedule.h"
#include "src/cp/zigzag.h"
#include "src/runtime/clock_sync.h"
#include "src/runtime/comm_label.h"
#include "src/runtime/dist.h"
#include "src/trace/trace.h"
#include "src/zero/distributed_optimizer.h"
#include "src/zero/memory_plan.h"
#include "viz/run_pictures.h"

#include "src/train/trainer_internal.h"


/* This rank's model pieces: its pipeline stage's chunks (placed by the schedule), its experts
 * with expert parallelism, as shards with ZeRO-2/3 (src/zero/fsdp.h: no gradient buffer). */
static local_model *model_create(const train_config *cfg, const parallel_state *ps,
                                 const gpt_config *g, const pp_config *pc, int tp_rank,
                                 int pp_rank) {
    const int tp = cfg->tensor_model_parallel_size, pp = cfg->pipeline_model_parallel_size;
    const int ep = cfg->expert_model_parallel_size;
    int *stage_layers = train_config_stage_layers(cfg, pp * cfg->vpp, "trident train");
    int *chunk_stage = mallocCheck(sizeof(int) * (size_t)cfg->vpp); /* the schedule's placement */
    for (int c = 0; c < cfg->vpp; c++) chunk_stage[c] = pp_stage(pc, pp_rank, c);
    local_model *m;
    if (ep > 1) /* MoE: this rank's experts (no ZeRO-2/3 here: refused by the flags) */
        m = local_model_create_experts(g, tp, tp_rank, ep, ps->ep_rank, pp, pp_rank, cfg->vpp,
                                       chunk_stage, stage_layers, (uint64_t)cfg->seed);
    else
        m = (train_config_zero_stage(cfg) >= 2 ? local_model_create_sharded
                                               : local_model_create_staged)(
            g, tp, tp_rank, pp, pp_rank, cfg->vpp, chunk_stage, stage_layers, (uint64_t)cfg->seed);
    free(chunk_stage);
    free(stage_layers);
    const gpt_recompute rc = train_config_recompute(cfg);
    local_model_set_recompute(m, &rc); /* before the executor lays out activations */
    local_model_set_sequence_parallel(m, cfg->sequence_parallel);
    /* MoE with sequence and context parallelism: the switch loss's counts over the tp × cp
     * ranks of a micro-batch (Megatron's tensor-and-context group) */
    const bool moe_stats = ps && g->num_experts > 0 && cfg->sequence_parallel &&
                           cfg->context_parallel_size > 1;
    local_model_set_groups(m, ps ? ps->cp : NULL, ps && ep > 1 ? ps->ep : NULL,
                           moe_stats ? ps->tp_cp : NULL);
    return m;
}

/* The (distributed) optimizer over the groups each kind of gradient is summed in. */
static dist_optimizer *optimizer_create(const train_config *cfg, const parallel_state *ps,
                                        local_model *m, pp_kind kind) {
    const bool ep = ps && cfg->expert_model_parallel_size > 1;
    adamw_config ac = {
        .lr = cfg->lr,
        .min_lr = cfg->min_lr,
        .warmup_iters = cfg->lr_warmup_iters,
        .decay_iters = cfg->train_iters,
        .beta1 = cfg->adam_beta1,
        .beta2 = cfg->adam_beta2,
        .eps = cfg->adam_eps,
        .weight_decay = cfg->weight_decay,
        .clip_grad = cfg->clip_grad,
    };
    distopt_groups dg = {
        /* context parallelism: every rank of a data-parallel replica's cp group holds other
         * positions of the same sequences, so gradients are summed over dp × cp */
        .dp = ps ? (cfg->context_parallel_size > 1 ? ps->dp_cp : ps->dp) : NULL,
        /* expert parallelism: an expert's gradient is summed over the ranks holding it */
        .expert_dp = ep ? ps->edp_cp : NULL,
        .ep = ep ? ps->ep : NULL,
        .norm = ps ? (cfg->use_distributed_optimizer ? ps->world : ps->mp) : NULL,
        /* the V: both wte copies on pipeline rank 0, summed by the executor (local_model.h) */
        .embedding = ps && !pp_v_placement(kind) ? ps->embedding : NULL,
        .tp = ps && cfg->sequence_parallel ? ps->tp : NULL,
        .zero = cfg->use_distributed_optimizer,
        .zero_stage = train_config_zero_stage(cfg),
        .bucket_numel = (size_t)cfg->ddp_bucket_size,
        .world = ps ? ps->world : NULL,
        .dtype = trainer_run_dtype(cfg),
        .overlap_grads = cfg->overlap_grad_reduce,
        .overlap_params = cfg->overlap_param_gather,
    };
    return distopt_create(m, &ac, &dg);
}

trainer *trainer_create(const train_config *cfg, parallel_state *ps) {
    trainer *t = callocCheck(1, sizeof *t);
    t->cfg = *cfg;
    t->ps = ps;
    const int tp = cfg->tensor_model_parallel_size, pp = cfg->pipeline_model_parallel_size;
    t->tp_rank = ps ? ps->tp_rank : 0;
    t->pp_rank = ps ? ps->pp_rank : 0;
    t->dp_rank = ps ? ps->dp_rank : 0;
    t->cp_rank = ps ? ps->cp_rank : 0;
    t->cp_size = cfg->context_parallel_size;
    if (!ps)
        CHECK(tp == 1 && pp == 1 && cfg->dp == 1 && t->cp_size == 1,
              "a serial trainer needs tp = pp = dp = cp = 1");
    t->gcfg = train_config_model(cfg);
    pp_kind kind;
    CHECK(pp_kind_parse(cfg->pipeline_schedule, &kind), "schedule name checked by the flag parser");
    pp_config pc = {kind, pp, cfg->num_microbatches, cfg->vpp};
    pp_config_check(&pc, "trident train");
    t->model = model_create(cfg, ps, &t->gcfg, &pc, t->tp_rank, t->pp_rank);
    /* The rank with the loss: the last pipeline rank, or rank 0 at the top of zbv's V. */
    t->is_last_stage = t->model->wte_head != NULL;
    const int T = cfg->seq_length / t->cp_size; /* this rank's positions of a sequence */
    t->exec = pp_executor_create(t->model, ps ? ps->tp : NULL, ps ? ps->pp : NULL, &pc, t->pp_rank,
                                 cfg->micro_batch_size, T);
    pp_executor_set_overlap_p2p(t->exec, cfg->overlap_p2p_comm);
    t->opt = optimizer_create(cfg, ps, t->model, kind);
    t->data = dataset_open_split(cfg->data_path, cfg->seq_length, (uint64_t)cfg->seed,
                                 cfg->split_train, cfg->split_held);
    size_t n = (size_t)cfg->num_microbatches * (size_t)cfg->micro_batch_size * (size_t)T;
    if (t->cp_size > 1)
        t->full = mallocCheck(2 * (size_t)cfg->micro_batch_size * (size_t)cfg->seq_length *
                              sizeof(int32_t));
    if (t->gcfg.num_experts > 0)
        t->moe_load = callocCheck((size_t)cfg->num_layers * (size_t)(t->gcfg.num_experts + 1),
                                  sizeof(int64_t));
    t->inputs = mallocCheck(n * sizeof(int32_t));
    t->targets = mallocCheck(n * sizeof(int32_t));
    t->sample = mallocCheck(((size_t)cfg->seq_length + 1) * sizeof(int32_t));
    t->mem_peaks = callocCheck(4 * (size_t)(ps ? comm_size(ps->world) : 1), sizeof(int64_t));
    /* --bf16: the linear products in bf16 (src/device/device.h), their operand scratch sized
     * for this rank's largest product, last, after every set-up transient */
    if (train_config_matmul_dtype(cfg) == PREC_BF16)
        device_set_matmul_dtype(PREC_BF16,
                                gpt_matmul_operand_elems(t->model->chunks, t->model->nchunks,
                                                         cfg->micro_batch_size, T));
    return t;
}

void trainer_destroy(trainer *t) {
    if (!t) return;
    if (train_config_matmul_dtype(&t->cfg) == PREC_BF16) device_set_matmul_dtype(PREC_FP32, 0);
    pp_executor_destroy(t->exec);
    distopt_destroy(t->opt);
    local_model_destroy(t->model);
    dataset_close(t->data);
    free(t->inputs);
    free(t->targets);
    free(t->sample);
    free(t->mem_peaks);
    free(t->full);
    free(t->moe_load);
    free(t);
}

void trainer_memory_gather(trainer *t) {
    /* and the bytes each rank sent since, within its host and across (comm.h) */
    int64_t mine[4] = {(int64_t)pp_executor_peak_activation_bytes(t->exec),
                       (int64_t)device_bytes_peak(), (int64_t)comm_bytes_within_host(),
                       (int64_t)comm_bytes_across_hosts()};
    if (t->ps && comm_size(t->ps->world) > 1) {
        comm_label_set("peak mem", -1);
        comm_all_gather(t->ps->world, mine, t->mem_peaks, 4, COMM_INT64);
        comm_label_clear();
    } else {
        memcpy(t->mem_peaks, mine, sizeof mine);
    }
}

size_t trainer_memory_peak(const trainer *t, int rank) {
    const int world = t->ps ? comm_size(t->ps->world) : 1;
    CHECK(rank >= 0 && rank < world, "trainer_memory_peak: a global rank");
    return (size_t)t->mem_peaks[4 * rank + 1];
}

/* Callers read the parameters: with --overlap-param-gather they must all be there, and with
 * ZeRO-3 they are gathered into a whole buffer until the next step (collective over dp). */
local_model *trainer_model(trainer *t) {
    distopt_whole_params(t->opt);
    return t->model;
}
const local_model *trainer_model_held(const trainer *t) { return t->model; }
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
    const int cp = t->cp_size;
    for (int j = 0; j < c->num_microbatches; j++) {
        /* context parallelism: the whole sequences first, then this rank's zig-zag positions */
        int32_t *in = cp > 1 ? t->full : t->inputs + (size_t)j * B * T;
        int32_t *tg = cp > 1 ? t->full + B * T : t->targets + (size_t)j * B * T;
        for (size_t i = 0; i < B; i++) {
            uint64_t k = base + (uint64_t)j * B + i;
            if (eval) dataset_eval_window(t->data, (size_t)(k % nwin), t->sample);
            else dataset_sample(t->data, k, t->sample);
            memcpy(in + i * T, t->sample, T * sizeof(int32_t));
            memcpy(tg + i * T, t->sample + 1, T * sizeof(int32_t));
        }
        if (cp == 1) continue;
        const size_t Tl = T / (size_t)cp;
        cp_slice_tokens(t->inputs + (size_t)j * B * Tl, in, B, T, t->cp_rank, cp);
        cp_slice_tokens(t->targets + (size_t)j * B * Tl, tg, B, T, t->cp_rank, cp);
    }
}

/* MoE: the step's switch losses and routed tokens, summed over the ranks that hold them. Every
 * TP rank routes the same tokens (counted on TP rank 0); cp ranks hold other positions of the
 * same sequences (counts add up, the switch loss is already the whole micro-batch's: cp rank 0);
 * dp ranks other sequences (all add up; the loss is averaged over them). */
static void moe_load_gather(trainer *t, step_result *r) {
    const train_config *c = &t->cfg;
    const size_t L = (size_t)c->num_layers, E = (size_t)c->num_experts;
    const int64_t *tokens, *dropped;
    const double aux = pp_executor_moe_load(t->exec, &tokens, &dropped);
    /* with sequence parallelism each TP rank routes its own positions: all count */
    const bool counts = t->tp_rank == 0 || c->sequence_parallel;
    for (size_t k = 0; k < L * E; k++) t->moe_load[k] = counts ? tokens[k] : 0;
    for (size_t l = 0; l < L; l++) t->moe_load[L * E + l] = counts ? dropped[l] : 0;
    /* the switch loss is the whole micro-batch's on every tp and cp rank: counted once */
    const bool once = t->tp_rank == 0 && t->cp_rank == 0;
    float a = once ? (float)(aux / (double)c->num_microbatches / (double)c->dp) : 0.0f;
    if (t->ps && comm_size(t->ps->world) > 1) {
        comm_label_set("moe load", -1);
        comm_all_reduce(t->ps->world, t->moe_load, L * (E + 1), COMM_INT64, COMM_SUM);
        comm_all_reduce(t->ps->world, &a, 1, COMM_FLOAT32, COMM_SUM);
        comm_label_clear();
    }
    r->aux_loss = a;
    r->moe_tokens = t->moe_load;
    r->moe_dropped = t->moe_load + L * E;
}

step_result trainer_step(trainer *t, int it) {
    const train_config *c = &t->cfg;
    step_result r = {0};
    int hs = t->trace ? trace_begin(t->trace, TRACE_STEP, it, -1, -1) : -1;
    int hd = t->trace ? trace_begin(t->trace, TRACE_DATA, it, -1, -1) : -1;
    load_batch(t, (uint64_t)(it - 1) * (uint64_t)c->global_batch_size, false);
    if (t->trace) trace_end(t->trace, hd);
    distopt_zero_grads(t->opt); /* the model's buffer, or the ZeRO-2/3 gradient shard */
    /* Each position's loss weighs 1/(B·T·m) of the step's objective (times the fp16 loss scale). */
    /* With context parallelism each rank holds 1/cp of the positions and the gradients are
     * averaged over dp × cp (Megatron's scaling): each position weighs cp times as much here. */
    const float dloss = distopt_loss_scale(t->opt) * (float)t->cp_size /
                        ((float)c->micro_batch_size * (float)c->seq_length *
                         (float)c->num_microbatches);
    double loss_sum = pp_executor_run(t->exec, t->inputs, t->targets, dloss, it);
    int ho = t->trace ? trace_begin(t->trace, TRACE_OPTIMIZER, it, -1, -1) : -1;
    distopt_stats st = distopt_step(t->opt, it);
    if (t->trace) trace_end(t->trace, ho);
    /* The loss lives on the last pipeline stage; every TP rank there has it. Average over DP
     * and make it known everywhere: one all-reduce over the world. */
    float loss = 0.0f;
    if (t->is_last_stage && t->tp_rank == 0) /* cp ranks: means over equal shares of positions */
        loss = (float)(loss_sum / (double)c->num_microbatches / (double)c->dp / (double)t->cp_size);
    /* A loss that is not finite: the lowest rank whose own share was not (max of -rank). */
    int32_t bad = isfinite(loss) ? INT32_MIN : -dist_rank();
    if (t->ps && comm_size(t->ps->world) > 1) {
        comm_label_set("loss", -1);
        comm_all_reduce(t->ps->world, &loss, 1, COMM_FLOAT32, COMM_SUM);
        if (!isfinite(loss))
            comm_all_reduce(t->ps->world, &bad, 1, COMM_INT32, COMM_MAX); /* all see it */
        comm_label_clear();
    }
    r.loss_rank = bad == INT32_MIN ? -1 : -bad;
    if (t->moe_load) moe_load_gather(t, &r);
    /* Memory accounting: every rank's activation peak of this step and allocator peak. */
    trainer_memory_gather(t);
    int64_t within = 0, across = 0; /* every rank's bytes sent so far */
    for (int k = 0; k < (t->ps ? comm_size(t->ps->world) : 1); k++) {
        if ((size_t)t->mem_peaks[4 * k] > r.peak_activation_bytes)
            r.peak_activation_bytes = (size_t)t->mem_peaks[4 * k];
        if ((size_t)t->mem_peaks[4 * k + 1] > r.memory_peak_bytes)
            r.memory_peak_bytes = (size_t)t->mem_peaks[4 * k + 1];
        within += t->mem_peaks[4 * k + 2], across += t->mem_peaks[4 * k + 3];
    }
    r.bytes_within_host = (size_t)(within - t->bytes_sent_before[0]);
    r.bytes_across_hosts = (size_t)(across - t->bytes_sent_before[1]);
    t->bytes_sent_before[0] = within, t->bytes_sent_before[1] = across;
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
        die("trident train: the data has no evaluation window of --seq-length %d + 1 tokens",
            c->seq_length);
    double sum = 0.0;
    for (int b = 0; b < batches; b++) {
        load_batch(t, (uint64_t)b * (uint64_t)c->global_batch_size, true);
        sum += pp_executor_forward_only(t->exec, t->inputs, t->targets, step);
    }
    /* Like the training loss: from the last stage's first TP rank, averaged over DP. */
    float loss = 0.0f;
    if (t->is_last_stage && t->tp_rank == 0)
        loss = (float)(sum / ((double)batches * c->num_microbatches * c->dp * t->cp_size));
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
    dataset *d = data_path ? dataset_open(data_path, t->cfg.seq_length, (uint64_t)t->cfg.seed)
                           : t->data;
    size_t nw = dataset_eval_windows(d);
    if (max_windows > 0 && (size_t)max_windows < nw) nw = (size_t)max_windows;
    if (nw == 0)
        die("no evaluation window: the data is shorter than --seq-length %d + 1 tokens",
            t->cfg.seq_length);
    const int T = t->cfg.seq_length;
    gpt_acts *a = gpt_acts_create(ch, 1, T);
    gpt_scratch *s = gpt_scratch_create(ch, 1, T);
    double sum = 0.0;
    for (size_t k = 0; k < nw; k++) {
        dataset_eval_window(d, k, t->sample);
        const double loss = gpt_forward(ch, t->model->params, a, s, t->sample, t->sample + 1, NULL,
                                        NULL, NULL);
        if (!isfinite(loss)) /* the one finite check of an evaluation, where the loss is made */
            die("trident eval: the loss of window %zu is %g: the checkpoint's parameters are "
                "finite but make the model's outputs overflow single precision (no mean loss)",
                k, loss);
        sum += loss;
    }
    gpt_acts_destroy(a);
    gpt_scratch_destroy(s);
    if (d != t->data) dataset_close(d);
    return sum / (double)nw;
}

/* ------------------------------------------------------------------ the run */

prec_dtype trainer_run_dtype(const train_config *c) {
    return c->bf16 ? PREC_BF16 : c->fp16 ? PREC_FP16 : PREC_FP32;
}

ckpt_layout trainer_ckpt_layout(const train_config *c) {
    return (ckpt_layout){
        .world_size = c->world_size,
        .tp = c->tensor_model_parallel_size,
        .pp = c->pipeline_model_parallel_size,
        .dp = c->dp,
        .vpp = c->vpp,
        .cp = c->context_parallel_size,
        .ep = c->expert_model_parallel_size,
        .rank_order = c->rank_order,
        .zero = c->use_distributed_optimizer,
        .dtype = trainer_run_dtype(c),
        .num_layers = c->num_layers,
        .hidden_size = c->hidden_size,
        .num_attention_heads = c->num_attention_heads,
        .seq_length = c->seq_length,
        .padded_vocab = c->padded_vocab,
        .make_vocab_size_divisible_by = c->make_vocab_size_divisible_by,
        .seed = c->seed,
        .num_experts = c->num_experts,
        .moe_router_topk = c->moe_router_topk,
        .moe_aux_loss_coeff = c->moe_aux_loss_coeff,
        .moe_expert_capacity_factor = c->moe_expert_capacity_factor,
    };
}

void trainer_config_take_model(train_config *c, const ckpt_layout *saved) {
    c->num_layers = saved->num_layers;
    c->hidden_size = saved->hidden_size;
    c->num_attention_heads = saved->num_attention_heads;
    c->seq_length = saved->seq_length;
    c->make_vocab_size_divisible_by = saved->make_vocab_size_divisible_by;
    c->seed = saved->seed;
    c->num_experts = saved->num_experts; /* 0: a dense checkpoint */
    if (saved->num_experts > 0) {
        c->moe_router_topk = saved->moe_router_topk;
        c->moe_aux_loss_coeff = saved->moe_aux_loss_coeff;
        c->moe_expert_capacity_factor = saved->moe_expert_capacity_factor;
    }
}
