/* memory_predict.h — the bytes every rank of a training run will hold, predicted before the
 * run from its flags alone: no MPI, no allocation (`trident memory`, and the trainer, which
 * writes the prediction next to what its allocator measured into metrics.jsonl).
 *
 * The prediction is the high-water mark of Trident's own allocator accounting
 * (src/device/device_memory.h: every buffer of the model, the optimizer, the activations, the
 * work spaces and the messages comes from device_alloc), kind by kind (src/zero/memory_plan.h,
 * zero_mem_kind), for each rank (tp_rank, pp_rank, dp_rank, and cp_rank, ep_rank with context
 * and expert parallelism: pg_layout_make's coordinates, ep_rank = dp_rank % ep) of the layout:
 *
 *   parameters, gradients,      Ψ of the rank's chunks (gpt_chunk_init's table: with MoE this
 *   master, Adam m + v          ep rank's E/ep experts per block and the router), in fp32, laid
 *                               out as the ZeRO stage says (zero_memory_rank_model_state; with
 *                               context parallelism ZeRO shards over dp × cp, as the trainer)
 *   activations                 Σ over chunks c: held(c) × one set of chunk c, where held(c) is
 *                               the most sets of c the schedule keeps alive at once (the rank's
 *                               plan walked in order, pp_plan_holds: GPipe m, 1F1B min(p−r, m),
 *                               interleaved and zero bubble as their plans say) and a set is
 *                               what recomputation and sequence parallelism keep
 *                               (gpt_acts_bytes_of: the model's own layout code, at the
 *                               trainer's length T/cp; with MoE each block's moe_acts, the
 *                               worst case of src/moe/moe_layer.h, ep·N·K rows)
 *   B -> W hand-over            Σ over chunks: held hand-overs × gpt_wgrad_bytes_of (zb-h1, zbv, dualpipev)
 *   work space                  Σ over chunks: gpt_scratch_bytes_of (one per chunk); with
 *                               --bf16 also the device's operand scratch of the bf16 linear
 *                               products, once: device_matmul_scratch_bytes of the chunks'
 *                               largest product (gpt_matmul_operand_elems, src/device/device.h)
 *   p2p buffers                 3 message buffers (2 receive, 1 send) of the residual stream,
 *                               (B·T/sp·C) floats, plus zbv's messages to itself held at once
 *   grad buckets                ZeRO-1 with --overlap-grad-reduce: a shard of S floats
 *   temporary                   the largest buffer a layer or the optimizer takes and gives back:
 *                               tp > 1: N·C floats (a column-parallel layer's partial input
 *                               gradient, N = B·T); with sequence parallelism (2 if B > 1 else
 *                               1)·N·C + N·C/tp (the gathers and reduce-scatters); the packed
 *                               sequence-parallel gradients of the optimizer, when larger;
 *                               with context parallelism ring attention's scratch, when larger
 *                               (ring_attention_scratch_bytes: a call's buffers, given back
 *                               before it returns, src/cp/ring_attention.h)
 *
 * Why the sum is the peak: the executor keeps every activation set it ever allocated in a
 * per-chunk pool and reuses it, so after the first step every pool is at held(c) and stays
 * there; every other kind is allocated once at the start, except the temporaries, which come
 * and go one at a time on top of all that. The set-up never holds more (local_model_pad
 * gives the gradients back before it copies the parameters; ZeRO-2/3 create the model without
 * gradients, and zero_fsdp_create frees ZeRO-3's whole parameters before it allocates the
 * rest, so their one transient, 4Ψ beside the 4S parameter shard, stays under a step's
 * 4S + 4S + 8S + the 12B work buffers + activations in every layout measured). Not predicted:
 * a ZeRO-3 checkpoint save or whole-parameter read (trainer_model) adds a whole 4Ψ copy.
 *
 * The stage is train_config_zero_stage's (src/train/config.h). Stages 2 and 3 are cut by
 * zero_fsdp_ranges_of and their work buffers sized by zero_fsdp_work_bytes (src/zero/fsdp.h):
 * the optimizer's own code, so the two cannot drift.
 *
 * Not here: MPI's private copies of pending sends, the communication library's rings and
 * staging slots, the data, the trace recorder (host memory outside device_alloc).
 */
#ifndef TRIDENT_TRAIN_MEMORY_PREDICT_H
#define TRIDENT_TRAIN_MEMORY_PREDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "src/train/config.h"
#include "src/zero/memory_plan.h"

typedef struct {
    int world, stage;
    zero_memory_rank *ranks; /* (world) ranks[k] is global rank k */
} train_memory;

/* The prediction for every rank of c (checked by train_config_check for c->world_size) at
 * ZeRO stage 0..3. A bad --stage-layers (or stage) dies with one line starting "<who>: ".
 * Free with train_memory_free. */
train_memory *train_memory_predict(const train_config *c, int stage, const char *who);
void train_memory_free(train_memory *m);

/* The rank with the largest total (the lowest such rank). */
int train_memory_largest(const train_memory *m);

/* The ZeRO paper's table for one rank's Ψ at this layout's dp, stage by stage: Trident's
 * storage (parameters and gradients fp32 whatever the precision; shards padded) beside the
 * paper's bytes for the run's precision (2-byte parameters and gradients in mixed precision,
 * K = 12; fp32 4 + 4 + 8). Index ZERO_MEM_PARAMS .. ZERO_MEM_ADAM of the arrays. */
typedef struct {
    int stage;
    size_t trident[ZERO_MEM_ADAM + 1], trident_total;
    double paper[ZERO_MEM_ADAM + 1], paper_total;
} train_memory_zero_row;
void train_memory_zero_table(const train_memory *m, const train_config *c, int rank,
                             train_memory_zero_row rows[4]);

/* Korthikanti et al. 2022, table 2: the activations one transformer layer keeps for one
 * micro-batch, by setting, with s = seq-length, b = micro-batch, h = hidden, a = heads and
 * t = the layout's tensor-parallel size; the paper's 16-bit bytes (with dropout masks) beside
 * Trident's (fp32, no dropout: 16 floats per token and channel kept, 4 LayerNorm statistics per
 * token, the a·s² attention probabilities), as a formula and as the model's layout gives it
 * (one block's gpt_acts_bytes_of; the views are rounded to 64 bytes). */
enum {
    TRAIN_ACT_NONE,         /* no parallelism (t = 1) */
    TRAIN_ACT_TP,           /* tensor parallel */
    TRAIN_ACT_TP_SP,        /* + sequence parallel */
    TRAIN_ACT_TP_SELECTIVE, /* + selective recomputation */
    TRAIN_ACT_TP_SP_SELECTIVE,
    TRAIN_ACT_FULL, /* full recomputation, uniform, 1 layer per group */
    TRAIN_ACT_NROWS
};
typedef struct {
    const char *setting;                         /* "TP + sequence parallel" */
    const char *paper_formula, *trident_formula; /* "sbh(10 + 24/t + 5as/(ht))" */
    double paper_bytes, trident_bytes;           /* the formulas' values */
    size_t layout_bytes;                         /* what gpt_acts_bytes_of gives for one block */
    bool available;                              /* false: sequence parallelism needs s % t == 0 */
} train_memory_layer_row;
void train_memory_activation_table(const train_config *c,
                                   train_memory_layer_row rows[TRAIN_ACT_NROWS]);

#endif /* TRIDENT_TRAIN_MEMORY_PREDICT_H */
