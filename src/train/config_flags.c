/* config_flags.c — the flags of `trident train` (Megatron-LM's names), each bound to its field
 * of train_config, with its help line, and train_config_parse (see config.h).
 *
 * Not here: the defaults (config.c), the rules that relate the flags (config_check.c).
 */
#include <string.h>

#include "src/core/check.h"
#include "src/core/flags.h"
#include "src/train/config.h"

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

/* Copies a table of n flags to out[0..cap); returns n. */
static int put_flags(flag_spec *out, int cap, const flag_spec *t, int n) {
    CHECK(n <= cap, "raise TRAIN_MAX_FLAGS in src/train/config_flags.c");
    memcpy(out, t, sizeof *t * (size_t)n);
    return n;
}

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
    return put_flags(out, cap, t, (int)(sizeof t / sizeof t[0]));
}

/* Parallelism: the layout, the experts and the pipeline schedule. Writes its flags at
 * out[0..cap); returns how many. */
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
         "chunks per rank, rank 0 holding the first and the last stage; dualpipev: DeepSeek's "
         "DualPipe cut in half onto the same V, m >= 2p)",
         "gpipe|1f1b|interleaved|zb-h1|zbv|dualpipev"},
        {"--stage-layers", FLAG_STRING, &c->stage_layers,
         "explicit layers per virtual stage, e.g. 3,3,2 (default: even split)", NULL},
        {"--rank-order", FLAG_CHOICE, &c->rank_order,
         "how ranks map to (tp, cp, ep, dp, pp): tp-dp-pp = Megatron's tp-cp-ep-dp-pp",
         "tp-dp-pp|tp-pp-dp|tp-cp-ep-dp-pp|tp-cp-ep-pp-dp"},
        {"--overlap-p2p-comm", FLAG_BOOL, &c->overlap_p2p_comm,
         "pipeline: post each receive one action ahead, so it can land while the rank computes",
         NULL},
    };
    return put_flags(out, cap, t, (int)(sizeof t / sizeof t[0]));
}

/* ZeRO and overlapped reductions, precision, sequence parallelism and recomputation: what
 * trades memory for time. Writes its flags at out[0..cap); returns how many. */
static int memory_flags(train_config *c, flag_spec *out, int cap) {
    const flag_spec t[] = {
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
    return put_flags(out, cap, t, (int)(sizeof t / sizeof t[0]));
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
    return put_flags(out, cap, t, (int)(sizeof t / sizeof t[0]));
}

void train_config_parse(train_config *c, const char *cmd, int argc, char **argv) {
    train_config_parse_extra(c, cmd, k_usage, NULL, 0, argc, argv);
}

void train_config_parse_extra(train_config *c, const char *cmd, const char *usage,
                              const flag_spec *extra, int nextra, int argc, char **argv) {
    flag_spec specs[TRAIN_MAX_FLAGS];
    int n = model_flags(c, specs, TRAIN_MAX_FLAGS);
    n += parallel_flags(c, specs + n, TRAIN_MAX_FLAGS - n);
    n += memory_flags(c, specs + n, TRAIN_MAX_FLAGS - n);
    n += run_flags(c, specs + n, TRAIN_MAX_FLAGS - n);
    CHECK(n + nextra <= TRAIN_MAX_FLAGS, "raise TRAIN_MAX_FLAGS in src/train/config_flags.c");
    for (int i = 0; i < nextra; i++) specs[n++] = extra[i];
    const char *pos[1];
    flags_parse(cmd, usage, specs, n, argc, argv, pos, 0);
}
