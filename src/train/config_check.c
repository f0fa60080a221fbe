/* config_check.c — train_config_check (see config.h): the rules that relate the flags, each
 * broken one named in one line with its values, and the derived sizes they fill in (the
 * data-parallel size from the layout, micro-batches, virtual stages, the padded vocabulary).
 *
 * In order: the layout (groups.h makes it and decides expert parallelism's rule on it), the
 * plain numeric flags and ZeRO's, --split, the batch, the schedule, the model (its MoE
 * settings by src/moe/moe_config.h's one rule set, and what MoE and context parallelism do
 * not run with yet), then recomputation.
 *
 * Not here: the flag table (config_flags.c), derived values that need no rule (config.c).
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/core/checked.h"
#include "src/model/gpt.h"
#include "src/moe/moe_config.h"
#include "src/pp/schedule.h"
#include "src/runtime/comm_tag.h"
#include "src/runtime/groups.h"
#include "src/train/config.h"
#include "src/zero/memory_plan.h"
#include "viz/zero_draw.h"

/* Writes the message into err and returns false from the rule helpers below. */
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return false;                                                                              \
    } while (0)

/* --data-parallel-sharding-strategy against --use-distributed-optimizer, and what ZeRO-2/3
 * (src/zero/fsdp.h) do not take. Sets use_distributed_optimizer for any stage >= 1. */
static bool check_sharding(train_config *c, char *err, size_t errlen) {
    const int stage = train_config_zero_stage(c);
    const char *s = zero_stage_strategy(stage);
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


/* The layout: each size at least 1, the world cut by them and expert parallelism's rule
 * (groups.h decides it: pg_ep_divides_dp), in the flags' words; then the layout itself, whose
 * data-parallel size the configuration takes. */
static bool check_layout(train_config *c, int world, char *err, size_t errlen) {
    const int tp = c->tensor_model_parallel_size, pp = c->pipeline_model_parallel_size;
    if (tp < 1) FAIL("--tensor-model-parallel-size %d must be at least 1", tp);
    if (pp < 1) FAIL("--pipeline-model-parallel-size %d must be at least 1", pp);
    const int cp = c->context_parallel_size, ep = c->expert_model_parallel_size;
    if (cp < 1) FAIL("--context-parallel-size %d must be at least 1", cp);
    if (ep < 1) FAIL("--expert-model-parallel-size %d must be at least 1", ep);
    /* checked products: one that wraps (65536 × 65536 is 0 as int) is no divisor of the world */
    int tpp, tcpp;
    if (!checked_mul_int(tp, pp, &tpp) || world % tpp != 0)
        FAIL("world size %d is not divisible by --tensor-model-parallel-size %d × "
             "--pipeline-model-parallel-size %d",
             world, tp, pp);
    if (!checked_mul_int(tpp, cp, &tcpp) || world % tcpp != 0)
        FAIL("world size %d is not divisible by --tensor-model-parallel-size %d × "
             "--context-parallel-size %d × --pipeline-model-parallel-size %d",
             world, tp, cp, pp);
    if (!pg_ep_divides_dp(ep, world / tcpp))
        FAIL("--expert-model-parallel-size %d does not divide the data-parallel size %d (experts "
             "are cut over data-parallel ranks)",
             ep, world / tcpp);
    pg_layout l;
    if (!pg_layout_make(&l, world, tp, cp, ep, pp, 1, c->rank_order, err, errlen)) return false;
    c->world_size = world;
    c->dp = l.dp;
    if (c->draw_zero && c->dp > ZERO_DRAW_MAX_DP)
        FAIL("--draw-zero draws at most %d data-parallel ranks (a line each); this layout has "
             "data-parallel size %d",
             ZERO_DRAW_MAX_DP, c->dp);
    return true;
}

/* The plain numeric flags, each on its own, and ZeRO's. */
static bool check_flags(train_config *c, char *err, size_t errlen) {
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


/* --split TRAIN,HELD, parsed into c->split_train and c->split_held: each weight read by
 * src/core/checked.h, inside an int (4294967297 is refused, never read as 1). */
static bool check_split(train_config *c, char *err, size_t errlen) {
    const char *s = c->split ? c->split : "", *end = s, *bad = s;
    int64_t a = -1, b = -1;
    checked_status st = checked_parse_i64(s, &end, INT_MIN, INT_MAX, &a);
    if (st == CHECKED_OK && *end == ',')
        st = checked_parse_i64(bad = end + 1, &end, INT_MIN, INT_MAX, &b);
    if (st == CHECKED_OUT_OF_RANGE)
        FAIL("--split '%s': %.*s is out of range (a weight is at most %d)", s, (int)(end - bad),
             bad, INT_MAX);
    if (st != CHECKED_OK || *end || a < 1 || b < 0)
        FAIL("--split '%s' must be two weights TRAIN,HELD with TRAIN >= 1 and HELD >= 0 (e.g. "
             "95,5)",
             s);
    c->split_train = (int)a;
    c->split_held = (int)b;
    return true;
}


/* Micro-batches per step from the batch sizes and the data-parallel size. */
static bool check_batch(train_config *c, char *err, size_t errlen) {
    int per_step; /* micro-batch × dp, checked: a product that wraps divides nothing */
    if (c->global_batch_size < 1 || !checked_mul_int(c->micro_batch_size, c->dp, &per_step) ||
        c->global_batch_size % per_step != 0)
        FAIL("--global-batch-size %d is not divisible by --micro-batch-size %d × data-parallel "
             "size %d",
             c->global_batch_size, c->micro_batch_size, c->dp);
    c->num_microbatches = c->global_batch_size / per_step;
    return true;
}

/* --stage-layers: one count of 1 to INT_MAX layers, as typed, per virtual stage, adding up to
 * --num-layers (the sum in 64 bits: counts that wrap to the right total are refused). */
static bool check_stage_layers(const train_config *c, char *err, size_t errlen) {
    if (!c->stage_layers) return true;
    const int S = c->pipeline_model_parallel_size * c->vpp; /* at most num_layers: see above */
    int *k = callocCheck((size_t)S, sizeof *k);
    const bool ok = train_config_read_stage_layers(c->stage_layers, S, k, err, errlen);
    long long sum = 0;
    for (int s = 0; ok && s < S; s++) sum += k[s];
    free(k);
    if (!ok) return false;
    if (sum != c->num_layers)
        FAIL("--stage-layers '%s' adds up to %lld layers but --num-layers is %d", c->stage_layers,
             sum, c->num_layers);
    return true;
}

/* Virtual pipeline stages, the schedule, and what they need of layers, micro-batches and tags. */
static bool check_schedule(train_config *c, char *err, size_t errlen) {
    const int pp = c->pipeline_model_parallel_size;
    c->vpp = 1;
    if (c->num_layers_per_virtual_pipeline_stage < 0)
        FAIL("--num-layers-per-virtual-pipeline-stage %d must not be negative",
             c->num_layers_per_virtual_pipeline_stage);
    pp_kind kind = PP_1F1B;
    const bool v_shape = pp_kind_parse(c->pipeline_schedule, &kind) && pp_v_placement(kind);
    const char *name = c->pipeline_schedule;
    if (v_shape) { /* always 2 chunks per rank: the V */
        const int k = c->num_layers_per_virtual_pipeline_stage;
        if (pp < 2)
            FAIL("--pipeline-schedule %s needs --pipeline-model-parallel-size >= 2 (got %d): its "
                 "V runs down the pipeline ranks and back up",
                 name, pp);
        if (c->num_layers % (2 * pp) != 0 && !c->stage_layers)
            FAIL("--pipeline-schedule %s cuts the model into 2 × --pipeline-model-parallel-size "
                 "= %d stages: --num-layers %d is not divisible by %d",
                 name, 2 * pp, c->num_layers, 2 * pp);
        if (k > 0 && k * 2 * pp != c->num_layers)
            FAIL("--num-layers-per-virtual-pipeline-stage %d disagrees with --pipeline-schedule "
                 "%s: its 2 chunks per rank hold num-layers / (2 × pipeline size) = %d / %d "
                 "layers each (leave the flag out)",
                 k, name, c->num_layers, 2 * pp);
        if (kind == PP_DUALPIPEV && c->num_microbatches < 2 * pp)
            FAIL("--pipeline-schedule dualpipev needs at least 2 × --pipeline-model-parallel-size "
                 "= %d micro-batches per data-parallel rank, got %d (--global-batch-size / "
                 "(--micro-batch-size × data-parallel size))",
                 2 * pp, c->num_microbatches);
        c->vpp = 2;
    } else if (c->num_layers_per_virtual_pipeline_stage > 0) {
        int k = c->num_layers_per_virtual_pipeline_stage, kpp;
        if (pp < 2)
            FAIL("--num-layers-per-virtual-pipeline-stage needs --pipeline-model-parallel-size > 1 "
                 "(got %d)",
                 pp);
        if (!checked_mul_int(k, pp, &kpp) || c->num_layers % kpp != 0)
            FAIL("--num-layers %d is not divisible by --num-layers-per-virtual-pipeline-stage %d × "
                 "--pipeline-model-parallel-size %d",
                 c->num_layers, k, pp);
        c->vpp = c->num_layers / kpp;
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
    } else if (c->vpp > 1 && !v_shape) {
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
    return check_stage_layers(c, err, errlen);
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
    /* The dispatch numbers a layer's rows with int32 (token_dispatch.h): this rank's tokens
     * (T/cp of each sequence) times top-k, from every ep rank. */
    const double rows_in = moe_rows / c->context_parallel_size;
    if (rows_in > INT32_MAX)
        FAIL("an MoE layer would receive %.0f (token, expert) rows per rank (--micro-batch-size "
             "%d × --seq-length %d / --context-parallel-size %d × --moe-router-topk %d × "
             "--expert-model-parallel-size %d); the dispatch numbers them with 32-bit integers "
             "(at most %d)",
             rows_in, c->micro_batch_size, c->seq_length, c->context_parallel_size,
             c->moe_router_topk, c->expert_model_parallel_size, INT32_MAX);
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
 * divisible by n (--stage-layers were checked by check_stage_layers). */
static int smallest_chunk(const train_config *c, int n, bool *divides) {
    const int S = c->pipeline_model_parallel_size * c->vpp;
    int least = c->num_layers / S;
    *divides = least % n == 0;
    if (!c->stage_layers) return least;
    int *k = callocCheck((size_t)S, sizeof *k);
    char unused[8];
    least = c->num_layers, *divides = true; /* the mean is no chunk */
    if (train_config_read_stage_layers(c->stage_layers, S, k, unused, sizeof unused))
        for (int s = 0; s < S; s++) {
            if (k[s] < least) least = k[s];
            if (k[s] % n != 0) *divides = false;
        }
    free(k);
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


/* What MoE, expert and context parallelism need, and what they do not run with (yet). The
 * MoE settings obey src/moe/moe_config.h, dense models too (they keep every default). */
static bool check_moe_cp(train_config *c, char *err, size_t errlen) {
    const int cp = c->context_parallel_size, ep = c->expert_model_parallel_size;
    const bool moe = c->num_experts > 0;
    const moe_config m = {c->num_experts,
                          c->moe_router_topk,
                          c->moe_aux_loss_coeff,
                          c->moe_expert_capacity_factor,
                          ep,
                          0};
    if (!moe_config_check(&m, err, errlen)) return false;
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
    if (c->padded_vocab < 0)
        FAIL("--make-vocab-size-divisible-by %d × --tensor-model-parallel-size %d pads the "
             "256-token vocabulary to a multiple of %lld, more than the %d entries an int holds",
             c->make_vocab_size_divisible_by, tp, (long long)c->make_vocab_size_divisible_by * tp,
             INT_MAX);
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

/* eval and generate take the model's shape from a checkpoint (c->model_from), not from flags:
 * a rule broken by a shape names the saved value, not a flag the user did not give. Each shape
 * flag in the message becomes the checkpoint's key ("--num-layers 1" -> "num_layers 1"), and
 * the message says where the shape came from; the flags the user gave keep their names. */
static void name_saved_shape(const char *dir, char *err, size_t errlen) {
    static const char *const shape[][2] = {
        {"--num-layers", "num_layers"},
        {"--hidden-size", "hidden_size"},
        {"--num-attention-heads", "num_attention_heads"},
        {"--seq-length", "seq_length"},
        {"--make-vocab-size-divisible-by", "make_vocab_size_divisible_by"},
        {"--num-experts", "num_experts"},
        {"--moe-router-topk", "moe_router_topk"},
        {"--moe-aux-loss-coeff", "moe_aux_loss_coeff"},
        {"--moe-expert-capacity-factor", "moe_expert_capacity_factor"},
    };
    char out[1024], *p;
    bool named = false;
    for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++) {
        while ((p = strstr(err, shape[k][0])) != NULL) {
            const char *rest = p + strlen(shape[k][0]);
            snprintf(out, sizeof out, "%.*s%s%s", (int)(p - err), err, shape[k][1], rest);
            snprintf(err, errlen, "%s", out);
            named = true;
        }
    }
    if (!named) return;
    snprintf(out, sizeof out, "the model saved in '%s' does not fit this layout: %s", dir, err);
    snprintf(err, errlen, "%s", out);
}

bool train_config_check(train_config *c, int world, char *err, size_t errlen) {
    const bool ok = check_layout(c, world, err, errlen) && check_flags(c, err, errlen) &&
                    check_split(c, err, errlen) && check_batch(c, err, errlen) &&
                    check_schedule(c, err, errlen) && check_model(c, err, errlen) &&
                    check_recompute(c, err, errlen);
    if (!ok && c->model_from) name_saved_shape(c->model_from, err, errlen);
    return ok;
}
