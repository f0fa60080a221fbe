/* config.c — see config.h: the defaults, the values a checked configuration derives (the ZeRO
 * stage, the layers of each stage, recomputation, the model's shape) and its JSON.
 *
 * Not here: the flag table and parsing (config_flags.c), the rules (config_check.c).
 */
#include "src/train/config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/core/checked.h"
#include "src/core/json.h"
#include "src/model/gpt.h"
#include "src/moe/moe_config.h"
#include "src/zero/memory_plan.h"

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
    c->moe_router_topk = MOE_DEFAULT_TOPK; /* src/moe/moe_config.h: a dense model keeps them */
    c->moe_aux_loss_coeff = MOE_DEFAULT_AUX_LOSS_COEFF;
    c->moe_expert_capacity_factor = MOE_DEFAULT_CAPACITY_FACTOR;
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

int train_config_zero_stage(const train_config *c) {
    for (int k = 0; c->data_parallel_sharding_strategy && k < 4; k++)
        if (strcmp(c->data_parallel_sharding_strategy, zero_stage_strategy(k)) == 0) return k;
    return c->use_distributed_optimizer ? 1 : 0;
}

int train_config_zero_ranks(const train_config *c) {
    return c->dp * (c->context_parallel_size > 0 ? c->context_parallel_size : 1);
}

bool train_config_read_stage_layers(const char *s, int nstages, int *out, char *err,
                                    size_t errlen) {
    int n = 0;
    for (const char *p = s; *p;) {
        int64_t v = 0;
        const char *end;
        const checked_status st = checked_parse_i64(p, &end, 1, INT_MAX, &v);
        if (st == CHECKED_NOT_INTEGER || (*end && *end != ',')) {
            snprintf(err, errlen, "--stage-layers '%s': expected comma-separated layer counts", s);
            return false;
        }
        if (st != CHECKED_OK) { /* never wrapped: 4294967297 is not 1 */
            snprintf(err, errlen,
                     "--stage-layers '%s': %.*s is not a layer count (every stage holds 1 to %d "
                     "layers)",
                     s, (int)(end - p), p, INT_MAX);
            return false;
        }
        if (n >= nstages) {
            snprintf(err, errlen,
                     "--stage-layers '%s' names more than the %d virtual pipeline stages", s,
                     nstages);
            return false;
        }
        out[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    if (n != nstages) {
        snprintf(err, errlen, "--stage-layers '%s' names %d stages, the layout has %d", s, n,
                 nstages);
        return false;
    }
    return true;
}

int *train_config_stage_layers(const train_config *c, int nstages, const char *who) {
    if (!c->stage_layers) return NULL;
    int *out = callocCheck((size_t)nstages, sizeof(int));
    char err[512];
    if (!train_config_read_stage_layers(c->stage_layers, nstages, out, err, sizeof err))
        die("%s: %s", who, err);
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
                      zero_stage_strategy(train_config_zero_stage(c)));
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
