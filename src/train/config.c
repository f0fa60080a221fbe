/* config.c — see config.h. */
#include "src/train/config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/core/flags.h"
#include "src/core/json.h"
#include "src/model/gpt.h"
#include "src/runtime/comm_tag.h"

void train_config_defaults(train_config *c) {
    memset(c, 0, sizeof *c);
    c->num_layers = 4;
    c->hidden_size = 64;
    c->num_attention_heads = 4;
    c->seq_length = 64;
    c->make_vocab_size_divisible_by = 128;
    c->micro_batch_size = 4;
    c->global_batch_size = 16;
    /* The default task is learned in the demo's 2 minutes: 3e-3 never finds the lookup, 1e-3
     * does within ~800 steps (src/data/dataset.h). */
    c->lr = 1e-3f;
    c->min_lr = 1e-4f;
    c->weight_decay = 0.1f;
    c->clip_grad = 1.0f;
    c->adam_beta1 = 0.9f;
    c->adam_beta2 = 0.95f;
    c->adam_eps = 1e-8f;
    c->lr_warmup_iters = 20;
    c->train_iters = 1000;
    c->seed = 1234;
    c->tensor_model_parallel_size = 1;
    c->context_parallel_size = 1;
    c->expert_model_parallel_size = 1;
    c->moe_router_topk = 2; /* Megatron's default */
    c->pipeline_model_parallel_size = 1;
    c->pipeline_schedule = "1f1b";
    c->rank_order = "tp-dp-pp";
    c->split = "95,5"; /* Megatron's --split, in two parts: training and held-out text */
    c->split_train = 95;
    c->split_held = 5;
    c->run_dir = "runs/latest";
    c->save_interval = 0;
    c->log_interval = 10;
    c->eval_interval = 0;
    c->eval_iters = 4;
    c->threads = 1;
    c->ddp_bucket_size = 1 << 20;
    c->device = "cpu";
    c->distributed_timeout_minutes = 10.0f;
}

static const char k_usage[] =
    "Usage: trident train [FLAGS]\n"
    "       mpirun -np N trident train --tensor-model-parallel-size T "
    "--pipeline-model-parallel-size P [FLAGS]\n\n"
    "Trains a GPT on the built-in synthetic data (or --data-path FILE, byte-level) and writes\n"
    "RUN_DIR/metrics.jsonl, RUN_DIR/trace/rank<k>.trace and pictures. The data-parallel size is\n"
    "world / (tensor × pipeline); every layout computes what one process computes.\n"
    "Step lines show model FLOP/s and MFU: the ratio to this machine's sgemm rate, measured once\n"
    "and cached in ~/.cache/trident/gemm-rate (TRIDENT_GEMM_RATE=<FLOP/s> overrides it).";

enum { TRAIN_MAX_FLAGS = 96 }; /* room for every flag of trident train */

/* The model, the batch and the optimizer. Writes its flags at out[0..cap); returns how many. */
static int model_flags(train_config *c, flag_spec *out, int cap) {
    const flag_spec t[] = {
        {"--num-layers", FLAG_INT, &c->num_layers, "transformer blocks L", NULL},
        {"--hidden-size", FLAG_INT, &c->hidden_size, "hidden size C", NULL},
        {"--num-attention-heads", FLAG_INT, &c->num_attention_heads,
         "attention heads NH (C % NH == 0)", NULL},
        {"--seq-length", FLAG_INT, &c->seq_length, "sequence length T", NULL},
        {"--make-vocab-size-divisible-by", FLAG_INT, &c->make_vocab_size_divisible_by,
         "pad the 256-token vocabulary to a multiple of this × tensor-parallel size", NULL},
        {"--micro-batch-size", FLAG_INT, &c->micro_batch_size, "sequences per micro-batch B", NULL},
        {"--global-batch-size", FLAG_INT, &c->global_batch_size,
         "sequences per step over all data-parallel ranks (accumulates micro-batches)", NULL},
        {"--lr", FLAG_FLOAT, &c->lr, "peak learning rate", NULL},
        {"--min-lr", FLAG_FLOAT, &c->min_lr, "learning rate at the end of the cosine decay", NULL},
        {"--lr-warmup-iters", FLAG_INT, &c->lr_warmup_iters, "linear warmup iterations", NULL},
        {"--train-iters", FLAG_INT, &c->train_iters, "training iterations (steps)", NULL},
        {"--weight-decay", FLAG_FLOAT, &c->weight_decay,
         "AdamW decoupled weight decay (matrices only)", NULL},
        {"--clip-grad", FLAG_FLOAT, &c->clip_grad,
         "clip the global gradient norm to this (0 = off)", NULL},
        {"--adam-beta1", FLAG_FLOAT, &c->adam_beta1, "Adam beta1", NULL},
        {"--adam-beta2", FLAG_FLOAT, &c->adam_beta2, "Adam beta2", NULL},
        {"--adam-eps", FLAG_FLOAT, &c->adam_eps, "Adam epsilon", NULL},
        {"--seed", FLAG_INT, &c->seed, "seed of weights and data sampling", NULL},
    };
    CHECK((int)(sizeof t / sizeof t[0]) <= cap, "raise TRAIN_MAX_FLAGS in src/train/config.c");
    memcpy(out, t, sizeof t);
    return (int)(sizeof t / sizeof t[0]);
}

/* Parallelism, precision and recomputation. Writes its flags at out[0..cap); returns how many. */
static int parallel_flags(train_config *c, flag_spec *out, int cap) {
    const flag_spec t[] = {
        {"--tensor-model-parallel-size", FLAG_INT, &c->tensor_model_parallel_size,
         "tensor-parallel size", NULL},
        {"--pipeline-model-parallel-size", FLAG_INT, &c->pipeline_model_parallel_size,
         "pipeline-parallel size", NULL},
        {"--context-parallel-size", FLAG_INT, &c->context_parallel_size,
         "context-parallel size: each sequence cut into 2·CP zig-zag chunks over CP ranks, "
         "causal ring attention passing K/V around them",
         NULL},
        {"--expert-model-parallel-size", FLAG_INT, &c->expert_model_parallel_size,
         "expert-parallel size (MoE): the experts cut over this many data-parallel ranks, "
         "tokens exchanged by all-to-all",
         NULL},
        {"--num-experts", FLAG_INT, &c->num_experts,
         "mixture of experts: experts per MLP (default 0: dense MLPs)", NULL},
        {"--moe-router-topk", FLAG_INT, &c->moe_router_topk,
         "MoE: experts each token goes to (default 2)", NULL},
        {"--moe-aux-loss-coeff", FLAG_FLOAT, &c->moe_aux_loss_coeff,
         "MoE: weight of the switch load-balancing loss (default 0)", NULL},
        {"--moe-expert-capacity-factor", FLAG_FLOAT, &c->moe_expert_capacity_factor,
         "MoE: each expert takes at most factor · tokens · topk / experts of a micro-batch, "
         "later tokens are dropped (default 0: dropless)",
         NULL},
        {"--num-layers-per-virtual-pipeline-stage", FLAG_INT,
         &c->num_layers_per_virtual_pipeline_stage,
         "layers per model chunk: enables the interleaved schedule (0 = off)", NULL},
        {"--pipeline-schedule", FLAG_CHOICE, &c->pipeline_schedule,
         "pipeline schedule (zb-h1: zero bubble, split backward; zbv: zero bubble on a V of 2 "
         "chunks per rank, rank 0 holding the first and the last stage)",
         "gpipe|1f1b|interleaved|zb-h1|zbv"},
        {"--stage-layers", FLAG_STRING, &c->stage_layers,
         "explicit layers per virtual stage, e.g. 3,3,2 (default: even split)", NULL},
        {"--rank-order", FLAG_CHOICE, &c->rank_order,
         "how ranks map to (tp, cp, ep, dp, pp): tp-dp-pp = Megatron's tp-cp-ep-dp-pp",
         "tp-dp-pp|tp-pp-dp|tp-cp-ep-dp-pp|tp-cp-ep-pp-dp"},
        {"--overlap-p2p-comm", FLAG_BOOL, &c->overlap_p2p_comm,
         "pipeline: post each receive one action ahead, so it can land while the rank computes",
         NULL},
        {"--use-distributed-optimizer", FLAG_BOOL, &c->use_distributed_optimizer,
         "ZeRO-1: shard the optimizer state over data-parallel ranks (= "
         "--data-parallel-sharding-strategy optim)",
         NULL},
        {"--data-parallel-sharding-strategy", FLAG_CHOICE, &c->data_parallel_sharding_strategy,
         "what data-parallel ranks shard: nothing, the optimizer state (ZeRO-1), + gradients "
         "reduce-scattered bucket by bucket in the backward (ZeRO-2), + parameters gathered "
         "unit by unit for each pass (ZeRO-3)",
         "no_shard|optim|optim_grads|optim_grads_params"},
        {"--overlap-grad-reduce", FLAG_BOOL, &c->overlap_grad_reduce,
         "reduce each gradient bucket while the backward goes on (a communication thread)", NULL},
        {"--overlap-param-gather", FLAG_BOOL, &c->overlap_param_gather,
         "ZeRO: all-gather each parameter bucket while the next forward goes on", NULL},
        {"--ddp-bucket-size", FLAG_INT, &c->ddp_bucket_size, "elements per gradient bucket", NULL},
        {"--bf16", FLAG_BOOL, &c->bf16,
         "bf16 parameters and gradients, fp32 master weights; the linear layers multiply bf16 "
         "operands with fp32 accumulation (tensor cores on cuda)",
         NULL},
        {"--fp16", FLAG_BOOL, &c->fp16,
         "fp16 parameters and gradients with dynamic loss scaling, fp32 master weights (fp32 "
         "products)",
         NULL},
        {"--sequence-parallel", FLAG_BOOL, &c->sequence_parallel,
         "with tensor parallelism: LayerNorms, residual adds and their activations on T/tp "
         "positions per rank (all-gather / reduce-scatter instead of all-reduce); ignored at "
         "--tensor-model-parallel-size 1",
         NULL},
        {"--recompute-granularity", FLAG_CHOICE, &c->recompute_granularity,
         "recompute activations in the backward (default: none). selective: the attention "
         "probabilities, from the kept Q, K, V; full: whole layers, from their kept input "
         "(needs the next two flags)",
         "full|selective"},
        {"--recompute-method", FLAG_CHOICE, &c->recompute_method,
         "full only, and required with it (as in Megatron): uniform = each model chunk's layers "
         "in groups of N, each recomputed whole; block = the first N layers of each chunk",
         "uniform|block"},
        {"--recompute-num-layers", FLAG_INT, &c->recompute_num_layers,
         "full only, and required with it: N, from 1 to the layers of a model chunk (uniform: N "
         "divides them); 0 = not given",
         NULL},
    };
    CHECK((int)(sizeof t / sizeof t[0]) <= cap, "raise TRAIN_MAX_FLAGS in src/train/config.c");
    memcpy(out, t, sizeof t);
    return (int)(sizeof t / sizeof t[0]);
}

/* Data, output, and how the run behaves. Writes its flags at out[0..cap); returns how many. */
static int run_flags(train_config *c, flag_spec *out, int cap) {
    const flag_spec t[] = {
        {"--data-path", FLAG_STRING, &c->data_path,
         "text file to train on (default: synthetic data)", NULL},
        {"--split", FLAG_STRING, &c->split,
         "TRAIN,HELD: weights cutting a --data-path file into training text and held-out text, in "
         "file order",
         NULL},
        {"--run-dir", FLAG_STRING, &c->run_dir, "where metrics, traces and pictures go", NULL},
        {"--save", FLAG_STRING, &c->save, "checkpoint directory to save to", NULL},
        {"--load", FLAG_STRING, &c->load, "checkpoint directory to resume from", NULL},
        {"--save-interval", FLAG_INT, &c->save_interval,
         "save every N iterations (0 = only at the end)", NULL},
        {"--log-interval", FLAG_INT, &c->log_interval, "print and log every N iterations", NULL},
        {"--eval-interval", FLAG_INT, &c->eval_interval,
         "evaluate on held-out data every N iterations (0 = only at the end)", NULL},
        {"--eval-iters", FLAG_INT, &c->eval_iters,
         "global batches of held-out samples per evaluation (0 = no evaluation)", NULL},
        {"--no-trace", FLAG_BOOL, &c->no_trace, "do not record the per-rank timeline", NULL},
        {"--draw-zero", FLAG_STRING, &c->draw_zero,
         "draw how the optimizer buffer is cut (.png/.svg/.pdf)", NULL},
        {"--theme", FLAG_CHOICE, &c->theme, "look of the run's pictures (slides: for a projector)",
         "default|slides"},
        {"--threads", FLAG_INT, &c->threads, "BLAS threads per rank", NULL},
        {"--device", FLAG_CHOICE, &c->device,
         "where tensors live and kernels run (cpu-guarded: CPU kernels, host access to tensors "
         "trapped)",
         "cpu|cuda|cpu-guarded"},
        {"--quiet", FLAG_BOOL, &c->quiet, "only the final summary", NULL},
        {"--distributed-timeout-minutes", FLAG_FLOAT, &c->distributed_timeout_minutes,
         "end the job if a rank waits longer than this", NULL},
    };
    CHECK((int)(sizeof t / sizeof t[0]) <= cap, "raise TRAIN_MAX_FLAGS in src/train/config.c");
    memcpy(out, t, sizeof t);
    return (int)(sizeof t / sizeof t[0]);
}

void train_config_parse(train_config *c, const char *cmd, int argc, char **argv) {
    train_config_parse_extra(c, cmd, k_usage, NULL, 0, argc, argv);
}

void train_config_parse_extra(train_config *c, const char *cmd, const char *usage,
                              const flag_spec *extra, int nextra, int argc, char **argv) {
    flag_spec specs[TRAIN_MAX_FLAGS];
    int n = model_flags(c, specs, TRAIN_MAX_FLAGS);
    n += parallel_flags(c, specs + n, TRAIN_MAX_FLAGS - n);
    n += run_flags(c, specs + n, TRAIN_MAX_FLAGS - n);
    CHECK(n + nextra <= TRAIN_MAX_FLAGS, "raise TRAIN_MAX_FLAGS in src/train/config.c");
    for (int i = 0; i < nextra; i++) specs[n++] = extra[i];
    const char *pos[1];
    flags_parse(cmd, usage, specs, n, argc, argv, pos, 0);
}

/* Writes the message into err and returns false from the rule helpers below. */
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return false;                                                                              \
    } while (0)

static const char *const k_strategies[4] = {"no_shard", "optim", "optim_grads",
                                            "optim_grads_params"};

int train_config_zero_stage(const train_config *c) {
    for (int k = 0; c->data_parallel_sharding_strategy && k < 4; k++)
        if (strcmp(c->data_parallel_sharding_strategy, k_strategies[k]) == 0) return k;
    return c->use_distributed_optimizer ? 1 : 0;
}

/* --data-parallel-sharding-strategy against --use-distributed-optimizer, and what ZeRO-2/3
 * (src/zero/fsdp.h) do not take. Sets use_distributed_optimizer for any stage >= 1. */
static bool check_sharding(train_config *c, char *err, size_t errlen) {
    const int stage = train_config_zero_stage(c);
    const char *s = k_strategies[stage];
    if (stage == 0 && c->use_distributed_optimizer)
        FAIL("--use-distributed-optimizer shards the optimizer state but "
             "--data-parallel-sharding-strategy no_shard shards nothing: give one of them");
    c->use_distributed_optimizer = stage >= 1;
    if (stage < 2) return true;
    if (c->fp16)
        FAIL("--data-parallel-sharding-strategy %s does not support --fp16: the loss scaler's "
             "overflow check reads every local gradient before any is reduced, and here each "
             "bucket is reduce-scattered as the backward produces it (use --bf16)",
             s);
    if (c->overlap_grad_reduce || c->overlap_param_gather)
        FAIL("--data-parallel-sharding-strategy %s does not take --overlap-grad-reduce or "
             "--overlap-param-gather: it reduce-scatters each bucket as the backward produces it "
             "(one bucket is held, so each is reduced before the next is written)%s",
             s, stage == 3 ? " and prefetches the next unit's parameters by itself" : "");
    if (c->draw_zero)
        FAIL("--draw-zero draws ZeRO-1's one cut of the whole buffer; "
             "--data-parallel-sharding-strategy %s cuts every unit on its own (not drawn)",
             s);
    return true;
}

/* The layout sizes and the plain numeric flags, each on its own. */
static bool check_flags(train_config *c, int world, char *err, size_t errlen) {
    const int tp = c->tensor_model_parallel_size, pp = c->pipeline_model_parallel_size;
    if (tp < 1) FAIL("--tensor-model-parallel-size %d must be at least 1", tp);
    if (pp < 1) FAIL("--pipeline-model-parallel-size %d must be at least 1", pp);
    const int cp = c->context_parallel_size, ep = c->expert_model_parallel_size;
    if (cp < 1) FAIL("--context-parallel-size %d must be at least 1", cp);
    if (ep < 1) FAIL("--expert-model-parallel-size %d must be at least 1", ep);
    if (world % (tp * pp) != 0)
        FAIL("world size %d is not divisible by --tensor-model-parallel-size %d × "
             "--pipeline-model-parallel-size %d",
             world, tp, pp);
    if (world % (tp * cp * pp) != 0)
        FAIL("world size %d is not divisible by --tensor-model-parallel-size %d × "
             "--context-parallel-size %d × --pipeline-model-parallel-size %d",
             world, tp, cp, pp);
    if ((world / (tp * cp * pp)) % ep != 0)
        FAIL("--expert-model-parallel-size %d does not divide the data-parallel size %d (experts "
             "are cut over data-parallel ranks)",
             ep, world / (tp * cp * pp));
    if (c->micro_batch_size < 1)
        FAIL("--micro-batch-size %d must be at least 1", c->micro_batch_size);
    if (c->train_iters < 0) FAIL("--train-iters %d must not be negative", c->train_iters);
    if (c->log_interval < 1) FAIL("--log-interval %d must be at least 1", c->log_interval);
    if (c->seq_length < 1) FAIL("--seq-length %d must be at least 1", c->seq_length);
    if (c->make_vocab_size_divisible_by < 1)
        FAIL("--make-vocab-size-divisible-by %d must be at least 1",
             c->make_vocab_size_divisible_by);
    if (!(c->lr >= 0) || !(c->min_lr >= 0) || !isfinite(c->lr))
        FAIL("--lr %g and --min-lr %g must be finite and not negative", (double)c->lr,
             (double)c->min_lr);
    if (c->min_lr > c->lr)
        FAIL("--min-lr %g is above --lr %g: the cosine schedule decays from lr down to min-lr",
             (double)c->min_lr, (double)c->lr);
    if (!(c->adam_beta1 >= 0 && c->adam_beta1 < 1) || !(c->adam_beta2 >= 0 && c->adam_beta2 < 1))
        FAIL("--adam-beta1 %g and --adam-beta2 %g must be in [0, 1): Adam's moving averages",
             (double)c->adam_beta1, (double)c->adam_beta2);
    if (!(c->adam_eps > 0) || !isfinite(c->adam_eps))
        FAIL("--adam-eps %g must be finite and above 0 (it keeps Adam's division finite)",
             (double)c->adam_eps);
    if (!(c->clip_grad >= 0) || !isfinite(c->clip_grad))
        FAIL("--clip-grad %g must be finite and not negative (0 = no clipping)",
             (double)c->clip_grad);
    if (!(c->weight_decay >= 0) || !isfinite(c->weight_decay))
        FAIL("--weight-decay %g must be finite and not negative", (double)c->weight_decay);
    if (c->lr_warmup_iters < 0)
        FAIL("--lr-warmup-iters %d must not be negative", c->lr_warmup_iters);
    if (c->threads < 1) FAIL("--threads %d must be at least 1", c->threads);
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores > 0 && c->threads > cores)
        FAIL("--threads %d is above the %ld cores of this machine (BLAS threads per rank; more "
             "than the cores only wait for each other)",
             c->threads, cores);
    if (!(c->distributed_timeout_minutes >= 0))
        FAIL("--distributed-timeout-minutes %g must not be negative (0 waits forever)",
             (double)c->distributed_timeout_minutes);
    if (c->save_interval < 0) FAIL("--save-interval %d must not be negative", c->save_interval);
    if (c->eval_interval < 0) FAIL("--eval-interval %d must not be negative", c->eval_interval);
    if (c->eval_iters < 0) FAIL("--eval-iters %d must not be negative", c->eval_iters);
    if (c->bf16 && c->fp16) FAIL("--bf16 and --fp16 exclude each other");
    if (!check_sharding(c, err, errlen)) return false;
    if (c->ddp_bucket_size < 1)
        FAIL("--ddp-bucket-size %d must be at least 1 element", c->ddp_bucket_size);
    if (c->overlap_param_gather && !c->use_distributed_optimizer)
        FAIL("--overlap-param-gather needs --use-distributed-optimizer (without ZeRO there are no "
             "parameters to gather)");
    if (c->overlap_grad_reduce && c->fp16)
        FAIL("--overlap-grad-reduce does not support --fp16: its overflow check must see every "
             "local gradient before any bucket is reduced (use --bf16)");
    /* The stream's thread reads and writes its buckets itself, so they must be host memory:
     * not on a GPU, nor on cpu-guarded, whose tensors the host may touch only in kernels. */
    if ((c->overlap_grad_reduce || c->overlap_param_gather) && strcmp(c->device, "cpu") != 0)
        FAIL("--overlap-grad-reduce and --overlap-param-gather run on the CPU communication "
             "stream, whose thread reads the buckets in host memory: only with --device cpu "
             "(got --device %s)",
             c->device);
    return true;
}

/* --split TRAIN,HELD, parsed into c->split_train and c->split_held. */
static bool check_split(train_config *c, char *err, size_t errlen) {
    int a = -1, b = -1, used = 0;
    if (!c->split || sscanf(c->split, "%d,%d%n", &a, &b, &used) != 2 || c->split[used] != '\0' ||
        a < 1 || b < 0)
        FAIL("--split '%s' must be two weights TRAIN,HELD with TRAIN >= 1 and HELD >= 0 (e.g. "
             "95,5)",
             c->split ? c->split : "");
    c->split_train = a;
    c->split_held = b;
    return true;
}

/* Data-parallel size and micro-batches per step from the world and the batch sizes. */
static bool check_batch(train_config *c, int world, char *err, size_t errlen) {
    const int tp = c->tensor_model_parallel_size, pp = c->pipeline_model_parallel_size;
    c->world_size = world;
    c->dp = world / (tp * c->context_parallel_size * pp);
    if (c->global_batch_size < 1 || c->global_batch_size % (c->micro_batch_size * c->dp) != 0)
        FAIL("--global-batch-size %d is not divisible by --micro-batch-size %d × data-parallel "
             "size %d",
             c->global_batch_size, c->micro_batch_size, c->dp);
    c->num_microbatches = c->global_batch_size / (c->micro_batch_size * c->dp);
    return true;
}

/* Virtual pipeline stages, the schedule, and what they need of layers, micro-batches and tags. */
static bool check_schedule(train_config *c, char *err, size_t errlen) {
    const int pp = c->pipeline_model_parallel_size;
    c->vpp = 1;
    if (c->num_layers_per_virtual_pipeline_stage < 0)
        FAIL("--num-layers-per-virtual-pipeline-stage %d must not be negative",
             c->num_layers_per_virtual_pipeline_stage);
    if (strcmp(c->pipeline_schedule, "zbv") == 0) { /* always 2 chunks per rank: the V */
        const int k = c->num_layers_per_virtual_pipeline_stage;
        if (pp < 2)
            FAIL("--pipeline-schedule zbv needs --pipeline-model-parallel-size >= 2 (got %d): its "
                 "V runs down the pipeline ranks and back up",
                 pp);
        if (c->num_layers % (2 * pp) != 0 && !c->stage_layers)
            FAIL("--pipeline-schedule zbv cuts the model into 2 × --pipeline-model-parallel-size "
                 "= %d stages: --num-layers %d is not divisible by %d",
                 2 * pp, c->num_layers, 2 * pp);
        if (k > 0 && k * 2 * pp != c->num_layers)
            FAIL("--num-layers-per-virtual-pipeline-stage %d disagrees with --pipeline-schedule "
                 "zbv: its 2 chunks per rank hold num-layers / (2 × pipeline size) = %d / %d "
                 "layers each (leave the flag out)",
                 k, c->num_layers, 2 * pp);
        c->vpp = 2;
    } else if (c->num_layers_per_virtual_pipeline_stage > 0) {
        int k = c->num_layers_per_virtual_pipeline_stage;
        if (pp < 2)
            FAIL("--num-layers-per-virtual-pipeline-stage needs --pipeline-model-parallel-size > 1 "
                 "(got %d)",
                 pp);
        if (c->num_layers % (k * pp) != 0)
            FAIL("--num-layers %d is not divisible by --num-layers-per-virtual-pipeline-stage %d × "
                 "--pipeline-model-parallel-size %d",
                 c->num_layers, k, pp);
        c->vpp = c->num_layers / (k * pp);
        if (strcmp(c->pipeline_schedule, "1f1b") == 0) c->pipeline_schedule = "interleaved";
    }
    if (strcmp(c->pipeline_schedule, "interleaved") == 0) {
        if (c->vpp < 2)
            FAIL("--pipeline-schedule interleaved needs at least 2 model chunks per rank: set "
                 "--num-layers-per-virtual-pipeline-stage so that num-layers / (it × pipeline "
                 "size) >= 2 (now %d chunk%s)",
                 c->vpp, c->vpp == 1 ? "" : "s");
        if (c->num_microbatches % pp != 0)
            FAIL("interleaved schedule: %d micro-batches per data-parallel rank is not a multiple "
                 "of "
                 "--pipeline-model-parallel-size %d",
                 c->num_microbatches, pp);
    } else if (c->vpp > 1 && strcmp(c->pipeline_schedule, "zbv") != 0) {
        FAIL("--num-layers-per-virtual-pipeline-stage needs --pipeline-schedule interleaved (got "
             "%s)",
             c->pipeline_schedule);
    }
    if (!c->stage_layers && c->num_layers % (pp * c->vpp) != 0)
        FAIL("--num-layers %d is not divisible by the %d virtual pipeline stages (pipeline size %d "
             "× %d chunks per rank)",
             c->num_layers, pp * c->vpp, pp, c->vpp);
    if (2LL * c->num_microbatches * pp * c->vpp > COMM_MAX_TAG + 1LL)
        FAIL("%d micro-batches × %d virtual pipeline stages need %lld message tags; tags stop at "
             "COMM_MAX_TAG = %d (use fewer, larger micro-batches)",
             c->num_microbatches, pp * c->vpp, 2LL * c->num_microbatches * pp * c->vpp,
             COMM_MAX_TAG);
    return true;
}

/* A model that cannot be allocated is refused here, before any allocation, with its size:
 * a LOWER bound of one rank's bytes, in double (no product of flags can wrap), against the
 * machine's memory. Parameters and gradients (fp32, the largest pipeline stage's share of the
 * blocks plus the embeddings) and one micro-batch's logits (B·T·V/tp); the real need is
 * larger (Adam state, activations), so a model refused here could never run. */
static bool check_fits(const train_config *c, char *err, size_t errlen) {
    const double C = c->hidden_size, L = c->num_layers, T = c->seq_length, V = c->padded_vocab;
    const double tp = c->tensor_model_parallel_size, pp = c->pipeline_model_parallel_size;
    /* one transformer block's parameters: with MoE, this rank's E/ep experts (whole on every
     * TP rank) and the router */
    const double E = c->num_experts, ep = c->expert_model_parallel_size;
    const double mlps = E > 0 ? E / ep * tp : 1; /* in units of a TP-cut dense MLP */
    const double block = 4.0 * C * C + mlps * 8.0 * C * C + 13.0 * C + E * C * tp;
    const double params = (ceil(L / pp) * block + (V + T) * C + 2.0 * C) / tp;
    const double logits = (double)c->micro_batch_size * T * V / tp;
    /* MoE: one layer's worst case of received rows (ep · tokens · top-k), in, hidden, out */
    const double moe_rows = E > 0 ? ep * c->micro_batch_size * T * c->moe_router_topk : 0;
    const double need = 4.0 * (2.0 * params + logits + moe_rows * 10.0 * C);
    const double have = c->predict_only
                            ? 0 /* nothing is allocated: no limit */
                            : (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
    if (have > 0 && need > have && c->model_from)
        FAIL("the model saved in '%s' (num_layers %d, hidden_size %d, seq_length %d, padded "
             "vocabulary %d) needs at least %.4g bytes per rank but this machine has %.4g bytes "
             "of memory: it cannot be loaded on this machine",
             c->model_from, c->num_layers, c->hidden_size, c->seq_length, c->padded_vocab, need,
             have);
    if (have > 0 && need > have)
        FAIL("the model needs at least %.4g bytes per rank (%.4g parameters and their gradients, "
             "%.4g logits of one micro-batch, fp32) but this machine has %.4g bytes of memory: "
             "use a smaller model or micro-batch, or more tensor/pipeline ranks",
             need, params, logits, have);
    const double per_chunk = ceil(L / (pp * c->vpp));
    if (!c->stage_layers && per_chunk > GPT_MAX_BLOCKS_PER_CHUNK && c->model_from)
        FAIL("the model saved in '%s' has num_layers %d: over %d pipeline stage%s that puts %.0f "
             "blocks in one model chunk; a chunk holds at most %d",
             c->model_from, c->num_layers, c->pipeline_model_parallel_size * c->vpp,
             c->pipeline_model_parallel_size * c->vpp == 1 ? "" : "s", per_chunk,
             GPT_MAX_BLOCKS_PER_CHUNK);
    if (!c->stage_layers && per_chunk > GPT_MAX_BLOCKS_PER_CHUNK)
        FAIL("--num-layers %d over %d pipeline stage%s puts %.0f blocks in one model chunk; a "
             "chunk holds at most %d (cut the model with more pipeline stages)",
             c->num_layers, c->pipeline_model_parallel_size * c->vpp,
             c->pipeline_model_parallel_size * c->vpp == 1 ? "" : "s", per_chunk,
             GPT_MAX_BLOCKS_PER_CHUNK);
    return true;
}

/* Layers of the smallest model chunk of a checked layout, and whether every chunk's count is
 * divisible by n; --stage-layers are read here only for this (trainer.c parses them, and
 * refuses what is not a list of counts, with its own message). */
static int smallest_chunk(const train_config *c, int n, bool *divides) {
    int least = c->num_layers / (c->pipeline_model_parallel_size * c->vpp);
    *divides = least % n == 0;
    if (c->stage_layers) least = c->num_layers, *divides = true; /* the mean is no chunk */
    for (const char *p = c->stage_layers; p && *p;) {
        char *end;
        long k = strtol(p, &end, 10);
        if (end == p) break;
        if (k < least) least = (int)k;
        if (k % n != 0) *divides = false;
        p = *end == ',' ? end + 1 : end;
    }
    return least;
}

/* --recompute-*: Megatron's rules (megatron/core/transformer/transformer_config.py): a method
 * and a number of layers with full granularity, and neither without it. */
static bool check_recompute(const train_config *c, char *err, size_t errlen) {
    const char *g = c->recompute_granularity, *m = c->recompute_method;
    const int n = c->recompute_num_layers;
    const bool full = g && strcmp(g, "full") == 0;
    if (m && !full)
        FAIL("--recompute-method %s needs --recompute-granularity full (got %s): selective "
             "recomputes the attention of every layer and takes no method",
             m, g ? g : "none");
    if (n != 0 && !full)
        FAIL("--recompute-num-layers %d needs --recompute-granularity full (got %s)", n,
             g ? g : "none");
    if (!full) return true;
    if (!m)
        FAIL("--recompute-granularity full needs --recompute-method uniform|block (uniform: "
             "groups of --recompute-num-layers layers; block: the first --recompute-num-layers "
             "layers of each model chunk)");
    bool divides;
    const int least = smallest_chunk(c, n > 0 ? n : 1, &divides);
    if (n == 0)
        FAIL("--recompute-granularity full needs --recompute-num-layers N, from 1 to the %d "
             "layers of a model chunk",
             least);
    gpt_recompute rc = train_config_recompute(c);
    if (!gpt_recompute_check(&rc, least, err, errlen)) return false;
    if (rc.method == GPT_RECOMPUTE_UNIFORM && !divides)
        FAIL("--recompute-num-layers %d does not divide the layers of every model chunk "
             "(--stage-layers %s): --recompute-method uniform recomputes them in groups of that "
             "many",
             n, c->stage_layers);
    return true;
}

prec_dtype train_config_matmul_dtype(const train_config *c) {
    return c->bf16 ? PREC_BF16 : PREC_FP32;
}

gpt_config train_config_model(const train_config *c) {
    gpt_config g = {c->padded_vocab,       256,
                    c->seq_length,         c->num_layers,
                    c->hidden_size,        c->num_attention_heads,
                    c->num_experts,        c->moe_router_topk,
                    c->moe_aux_loss_coeff, c->moe_expert_capacity_factor};
    return g;
}

/* What MoE, expert and context parallelism need, and what they do not run with (yet). */
static bool check_moe_cp(train_config *c, char *err, size_t errlen) {
    const int cp = c->context_parallel_size, ep = c->expert_model_parallel_size;
    const int E = c->num_experts;
    const bool moe = E > 0;
    if (ep > 1 && !moe)
        FAIL("--expert-model-parallel-size %d needs experts: give --num-experts", ep);
    if (moe && E % ep != 0)
        FAIL("--num-experts %d is not divisible by --expert-model-parallel-size %d (each "
             "expert-parallel rank holds whole experts)",
             E, ep);
    if (moe && (!(c->moe_aux_loss_coeff >= 0) || !isfinite(c->moe_aux_loss_coeff)))
        FAIL("--moe-aux-loss-coeff %g must be finite and not negative",
             (double)c->moe_aux_loss_coeff);
    if (moe && (!(c->moe_expert_capacity_factor >= 0) || !isfinite(c->moe_expert_capacity_factor)))
        FAIL("--moe-expert-capacity-factor %g must be finite and not negative (0 = dropless)",
             (double)c->moe_expert_capacity_factor);
    if (cp > 1 && c->seq_length % (2 * cp) != 0)
        FAIL("--seq-length %d is not divisible by 2 × --context-parallel-size %d (each rank "
             "holds two zig-zag chunks of every sequence)",
             c->seq_length, cp);
    if (cp > 1 && moe && c->moe_expert_capacity_factor > 0)
        FAIL("--moe-expert-capacity-factor %g with --context-parallel-size %d: capacity is "
             "counted over a rank's own tokens, which context parallelism cuts (use dropless, 0)",
             (double)c->moe_expert_capacity_factor, cp);
    if (!moe && cp == 1) return true;
    const char *what = moe ? "--num-experts" : "--context-parallel-size";
    if (c->sequence_parallel && cp > 1 && (c->seq_length / cp) % c->tensor_model_parallel_size)
        FAIL("--sequence-parallel with --context-parallel-size %d: the %d positions of a "
             "context-parallel rank are not divisible by --tensor-model-parallel-size %d",
             cp, c->seq_length / cp, c->tensor_model_parallel_size);
    if (c->recompute_granularity)
        FAIL("%s does not run with --recompute-granularity (not implemented)", what);
    if (train_config_zero_stage(c) >= 2)
        FAIL("%s does not run with --data-parallel-sharding-strategy %s (ZeRO-2/3: not "
             "implemented; ZeRO-1 is)",
             what, c->data_parallel_sharding_strategy);
    if (strcmp(c->device, "cpu") != 0)
        FAIL("%s runs on --device cpu only (its kernels are host code)", what);
    if (ep > 1 && (c->overlap_grad_reduce || c->overlap_param_gather))
        FAIL("--expert-model-parallel-size %d does not run with --overlap-grad-reduce / "
             "--overlap-param-gather (not implemented)",
             ep);
    if (moe && c->overlap_grad_reduce)
        FAIL("--num-experts does not run with --overlap-grad-reduce (the experts' gradients are "
             "computed in the input-gradient backward; not implemented)");
    return true;
}

/* The model's shape at this tensor-parallel size. */
static bool check_model(train_config *c, char *err, size_t errlen) {
    const int tp = c->tensor_model_parallel_size;
    c->padded_vocab = gpt_padded_vocab(256, c->make_vocab_size_divisible_by, tp);
    gpt_config g = train_config_model(c);
    if (!gpt_config_check(&g, tp, err, errlen)) return false;
    if (c->hidden_size % tp != 0)
        FAIL("--hidden-size %d is not divisible by --tensor-model-parallel-size %d", c->hidden_size,
             tp);
    if (c->sequence_parallel && tp == 1) /* Megatron turns it off (with a note): nothing to cut */
        c->sequence_parallel = false, c->sequence_parallel_off = true;
    if (!check_moe_cp(c, err, errlen)) return false;
    if (c->sequence_parallel && c->seq_length % tp != 0)
        FAIL("--sequence-parallel: --seq-length %d is not divisible by "
             "--tensor-model-parallel-size %d (each tensor-parallel rank holds seq-length / "
             "tensor-parallel-size positions)",
             c->seq_length, tp);
    return check_fits(c, err, errlen);
}
#undef FAIL

bool train_config_check(train_config *c, int world, char *err, size_t errlen) {
    return check_flags(c, world, err, errlen) && check_split(c, err, errlen) &&
           check_batch(c, world, err, errlen) && check_schedule(c, err, errlen) &&
           check_model(c, err, errlen) && check_recompute(c, err, errlen);
}

int *train_config_stage_layers(const train_config *c, int nstages, const char *who) {
    const char *s = c->stage_layers;
    if (!s) return NULL;
    int *out = callocCheck((size_t)nstages, sizeof(int));
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) die("%s: --stage-layers '%s': expected comma-separated layer counts", who, s);
        if (n >= nstages)
            die("%s: --stage-layers '%s' names more than the %d virtual pipeline stages", who, s,
                nstages);
        out[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            die("%s: --stage-layers '%s': expected comma-separated layer counts", who, s);
    }
    if (n != nstages)
        die("%s: --stage-layers '%s' names %d stages, the layout has %d", who, s, n, nstages);
    return out;
}

gpt_recompute train_config_recompute(const train_config *c) {
    gpt_recompute rc = {GPT_RECOMPUTE_NONE, GPT_RECOMPUTE_UNIFORM, 0};
    const char *g = c->recompute_granularity, *m = c->recompute_method;
    if (g && strcmp(g, "selective") == 0) rc.granularity = GPT_RECOMPUTE_SELECTIVE;
    if (g && strcmp(g, "full") == 0) rc.granularity = GPT_RECOMPUTE_FULL;
    if (m && strcmp(m, "block") == 0) rc.method = GPT_RECOMPUTE_BLOCK;
    rc.num_layers = c->recompute_num_layers;
    return rc;
}

char *train_config_json(const train_config *c) {
    json_writer w;
    json_init_buffer(&w, 0);
    json_begin_object(&w, JSON_COMPACT);
    json_field_int(&w, "num_layers", c->num_layers);
    json_field_int(&w, "hidden_size", c->hidden_size);
    json_field_int(&w, "num_attention_heads", c->num_attention_heads);
    json_field_int(&w, "seq_length", c->seq_length);
    json_field_int(&w, "make_vocab_size_divisible_by", c->make_vocab_size_divisible_by);
    json_field_int(&w, "padded_vocab", c->padded_vocab);
    json_field_int(&w, "micro_batch_size", c->micro_batch_size);
    json_field_int(&w, "global_batch_size", c->global_batch_size);
    json_field_double(&w, "lr", "%g", (double)c->lr);
    json_field_double(&w, "min_lr", "%g", (double)c->min_lr);
    json_field_int(&w, "lr_warmup_iters", c->lr_warmup_iters);
    json_field_int(&w, "train_iters", c->train_iters);
    json_field_double(&w, "weight_decay", "%g", (double)c->weight_decay);
    json_field_double(&w, "clip_grad", "%g", (double)c->clip_grad);
    json_field_int(&w, "seed", c->seed);
    json_field_int(&w, "world_size", c->world_size);
    json_field_int(&w, "tensor_model_parallel_size", c->tensor_model_parallel_size);
    json_field_int(&w, "pipeline_model_parallel_size", c->pipeline_model_parallel_size);
    json_field_int(&w, "context_parallel_size", c->context_parallel_size);
    json_field_int(&w, "expert_model_parallel_size", c->expert_model_parallel_size);
    json_field_int(&w, "num_experts", c->num_experts);
    if (c->num_experts > 0) {
        json_field_int(&w, "moe_router_topk", c->moe_router_topk);
        json_field_double(&w, "moe_aux_loss_coeff", "%g", (double)c->moe_aux_loss_coeff);
        json_field_double(&w, "moe_expert_capacity_factor", "%g",
                          (double)c->moe_expert_capacity_factor);
    }
    json_field_int(&w, "data_parallel_size", c->dp);
    json_field_int(&w, "virtual_pipeline_size", c->vpp);
    json_field_int(&w, "num_microbatches", c->num_microbatches);
    json_field_string(&w, "pipeline_schedule", c->pipeline_schedule);
    json_field_string(&w, "rank_order", c->rank_order);
    json_field_bool(&w, "use_distributed_optimizer", c->use_distributed_optimizer);
    json_field_string(&w, "data_parallel_sharding_strategy",
                      k_strategies[train_config_zero_stage(c)]);
    json_field_bool(&w, "overlap_p2p_comm", c->overlap_p2p_comm);
    json_field_bool(&w, "overlap_grad_reduce", c->overlap_grad_reduce);
    json_field_bool(&w, "overlap_param_gather", c->overlap_param_gather);
    json_field_int(&w, "ddp_bucket_size", c->ddp_bucket_size);
    json_field_string(&w, "precision", c->bf16 ? "bf16" : c->fp16 ? "fp16" : "fp32");
    json_field_string(&w, "recompute_granularity",
                      c->recompute_granularity ? c->recompute_granularity : "none");
    if (c->recompute_method) json_field_string(&w, "recompute_method", c->recompute_method);
    if (c->recompute_num_layers)
        json_field_int(&w, "recompute_num_layers", c->recompute_num_layers);
    json_field_bool(&w, "sequence_parallel", c->sequence_parallel);
    json_field_string(&w, "data", c->data_path ? c->data_path : "synthetic");
    json_field_string(&w, "device", c->device);
    json_end_object(&w);
    return json_take(&w);
}
