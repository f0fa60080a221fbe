/* config.h — every setting of a training run, its flag (Megatron-LM's names), its default,
 * and the rules that relate them.
 *
 * train_config_parse() fills a train_config from the command line (the flag table:
 * config_flags.c); train_config_check() applies the rules that need the world size (the
 * layout, divisibility of layers, heads, batch; MoE's by src/moe/moe_config.h) and names the
 * values and the rule when one is broken (config_check.c). train_config_json() writes the
 * whole configuration as one JSON object (stored in metrics, traces and checkpoints); it and
 * the values a checked configuration derives are in config.c.
 */
#ifndef TRIDENT_TRAIN_CONFIG_H
#define TRIDENT_TRAIN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "src/core/flags.h"
#include "src/model/gpt.h"
#include "src/precision/convert.h"

typedef struct {
    /* model */
    int num_layers, hidden_size, num_attention_heads, seq_length;
    /* mixture of experts (src/model/gpt.h, MIXTURE OF EXPERTS; 0 experts = dense MLPs) */
    int num_experts, moe_router_topk;
    float moe_aux_loss_coeff, moe_expert_capacity_factor; /* capacity 0: dropless */
    int make_vocab_size_divisible_by;
    /* batch */
    int micro_batch_size, global_batch_size;
    /* optimizer */
    float lr, min_lr, weight_decay, clip_grad, adam_beta1, adam_beta2, adam_eps;
    int lr_warmup_iters, train_iters;
    int seed;
    /* parallelism */
    int tensor_model_parallel_size, pipeline_model_parallel_size;
    int context_parallel_size;      /* CP: sequence split over ranks, ring attention (src/cp) */
    int expert_model_parallel_size; /* EP: MoE experts split over data-parallel ranks */
    int num_layers_per_virtual_pipeline_stage; /* 0 = not interleaved */
    const char *pipeline_schedule;             /* gpipe | 1f1b | interleaved */
    const char *stage_layers;       /* "2,3,3" explicit layers per virtual stage, or NULL */
    const char *rank_order;         /* tp-dp-pp | tp-pp-dp */
    bool use_distributed_optimizer; /* ZeRO-1; train_config_check sets it for any stage >= 1 */
    /* Megatron-FSDP's --data-parallel-sharding-strategy: no_shard | optim (ZeRO-1, the same as
     * --use-distributed-optimizer) | optim_grads (ZeRO-2) | optim_grads_params (ZeRO-3); NULL:
     * as --use-distributed-optimizer says (src/zero/fsdp.h) */
    const char *data_parallel_sharding_strategy;
    bool overlap_p2p_comm;     /* receives posted ahead (src/pp/executor.h) */
    bool overlap_grad_reduce;  /* bucket reductions during the backward (src/zero/overlap.h) */
    bool overlap_param_gather; /* ZeRO: bucket all-gathers during the next forward */
    int ddp_bucket_size;       /* elements per gradient bucket */
    bool bf16, fp16;
    /* activation recomputation (src/model/gpt.h, ACTIVATION RECOMPUTATION) */
    const char *recompute_granularity; /* full | selective, NULL = none */
    const char *recompute_method;      /* uniform | block (full only), or NULL */
    int recompute_num_layers;          /* full only; 0 = not given */
    /* sequence parallelism (src/model/gpt.h, SEQUENCE PARALLELISM); train_config_check turns
     * it off at tensor-parallel size 1, as Megatron does, and says so in sequence_parallel_off */
    bool sequence_parallel;
    bool sequence_parallel_off; /* given, but tp = 1: ignored (the run prints a note) */
    /* data, output */
    const char *data_path; /* NULL = built-in synthetic data */
    const char *split;     /* "TRAIN,HELD" weights of a --data-path file (src/data/dataset.h) */
    int split_train, split_held; /* parsed from split by train_config_check */
    const char *run_dir;
    const char *save, *load;
    const char *model_from; /* eval/generate: the model's shape is this checkpoint's (messages
                               about the shape name it, not flags the user did not give) */
    int save_interval, log_interval;
    int eval_interval, eval_iters;
    bool no_trace;         /* tracing is on unless --no-trace */
    const char *draw_zero; /* picture of the ZeRO buffer cut */
    const char *theme;     /* look of the run's pictures: "default" or "slides" (viz/canvas.h) */
    int threads;           /* BLAS threads per rank */
    const char *device;    /* cpu | cuda | cpu-guarded (src/device/device.h) */
    bool quiet;
    float distributed_timeout_minutes;
    bool predict_only; /* trident memory: nothing is allocated, so the model need not fit this
                          machine (train_config_check skips that rule, not the others) */
    /* derived by train_config_check */
    int world_size, dp, vpp, num_microbatches, padded_vocab;
} train_config;

/* Defaults: a small GPT that learns the synthetic data in a few hundred steps on a laptop. */
void train_config_defaults(train_config *c);
/* Parses argv (the words after `trident train`); dies on unknown flags and bad values. */
void train_config_parse(train_config *c, const char *cmd, int argc, char **argv);
/* The same for a command that takes train's flags and its own (`trident memory`): `extra`
 * after train's in --help, under the command's own usage text. */
void train_config_parse_extra(train_config *c, const char *cmd, const char *usage,
                              const flag_spec *extra, int nextra, int argc, char **argv);
/* Checks the rules for a world of `world_size` ranks and fills the derived fields.
 * Returns false with one line naming the values and the rule. */
bool train_config_check(train_config *c, int world_size, char *err, size_t errlen);
/* The ZeRO stage a configuration asks for: 0 to 3 (from the strategy, else 1 with
 * --use-distributed-optimizer, else 0). */
int train_config_zero_stage(const train_config *c);
/* The ranks the dense parameters' optimizer state is sharded over (and their gradients
 * averaged over): dp × cp, groups.h's dp_cp — a context-parallel group holds one replica's
 * sequences. */
int train_config_zero_ranks(const train_config *c);
/* --stage-layers as the layer counts of the nstages virtual stages (malloc'd), or NULL when
 * the flag is not given; dies with one line "<who>: --stage-layers ..." when it is not a list
 * of nstages counts. */
int *train_config_stage_layers(const train_config *c, int nstages, const char *who);
/* The same, read from the text s into out[0..nstages): false, with one line naming the count as
 * typed and the rule in err, when it is not a list of nstages counts of 1 to INT_MAX layers
 * (a count is never wrapped: 4294967297 is refused, not read as 1). */
bool train_config_read_stage_layers(const char *s, int nstages, int *out, char *err, size_t errlen);
/* The recomputation a checked configuration asks for, as the model takes it. */
gpt_recompute train_config_recompute(const train_config *c);
/* The precision of the model's linear products (src/device/device.h device_set_matmul_dtype):
 * bf16 GEMMs with --bf16; fp32 otherwise (--fp16 rounds parameters and gradients only). */
prec_dtype train_config_matmul_dtype(const train_config *c);
/* The model's shape (padded vocabulary, MoE) as the checked configuration says. */
gpt_config train_config_model(const train_config *c);
/* The configuration as a JSON object (malloc'd string). */
char *train_config_json(const train_config *c);

#endif /* TRIDENT_TRAIN_CONFIG_H */
