/* checkpoint.h — saving a training run, and resuming it at the same or ANOTHER layout.
 *
 *   SAVE/latest                        the last complete iteration, as text ("100\n")
 *   SAVE/iter_0000100/rank_00000.tck   rank 0's file (src/ckpt/FORMAT.md: a tensor file)
 *   SAVE/iter_0000100/rank_00001.tck   ...
 *
 * Each rank file holds what the rank holds, in its local (tensor-parallel sliced) shapes:
 *
 *   param/blocks.3.qkv_w               (3C/tp, C)   the rank's slice of every parameter it has
 *   adam_m/blocks.3.qkv_w@0-3072       (3072)       Adam m of local elements [0, 3072) of it
 *   adam_v/blocks.3.qkv_w@0-3072       (3072)       Adam v, same range
 *   master/blocks.3.qkv_w@0-3072       (3072)       fp32 master weights (--bf16 / --fp16 only)
 *   loss_scaler                        i32 (4)      growth, hysteresis, steps, skipped
 *
 * Without ZeRO the moment ranges cover each parameter whole; with ZeRO a rank holds only the
 * pieces of its shard (src/zero/shard_ranges.h), so a parameter cut by a shard boundary has
 * pieces in two files. The metadata (JSON) names the iteration, Adam step count, loss scale,
 * precision, the layout (world, tp, pp, dp, vpp, zero; cp, ep when > 1), the rank's
 * coordinates and the model (with its MoE fields when it has experts).
 * src/ckpt/CHECKPOINTS.md describes the layout, the files and resharding in full.
 *
 * Loading reshards: any layout (tp, pp, dp, vpp, ZeRO on or off, or serial) loads any saved
 * layout of the same model. A rank reads the rank files of the iteration in rank order and,
 * for each element it needs, finds it through its serial index (gpt_param_serial_index and
 * the saved file's tp coordinates); copies saved by TP, DP, CP or pipeline (tied wte) replicas
 * are equal and the first one found is used. Experts (SPLIT_EXPERTS) are cut over ep instead
 * of tp: an expert element is taken only from a file of the saved ep rank that held it
 * (checkpoint_locate_expert and the file's ep_rank), whichever tp rank or edp/cp replica saved
 * it; its optimizer state follows the same rule. Loading at the saving layout is bit-identical.
 * Padded vocabulary rows that the saved layout did not have (padding depends on tp) get their
 * initial value and zero moments: they never receive a gradient.
 *
 * Atomic as a whole: every rank writes into SAVE/iter_N.tmp/, all ranks meet, then rank 0
 * renames the directory and rewrites `latest` (temp + rename). A crash mid-save leaves the
 * previous iteration's directory and `latest` as they were. Data needs no state: sample i
 * is a pure function of (seed, i), so the iteration number is the data position.
 *
 * Test hook: TRIDENT_TEST_CRASH_IN_SAVE=k makes rank 0 end with _exit(9) in the middle of
 * writing its file during the k-th save of the process (k = 1: the first save). Used by
 * tests/ckpt to show that a crash mid-save leaves the previous checkpoint loadable.
 *
 * What a checkpoint needs of the run is a ckpt_layout (below): the parallel layout, the
 * precision and the model's shape, filled by the trainer from its configuration
 * (trainer_ckpt_layout in src/train/trainer.h). The trainer's config is not read here.
 *
 * Not here: the file container (tensorfile.h) and deciding when to save (the trainer).
 */
#ifndef TRIDENT_CKPT_CHECKPOINT_H
#define TRIDENT_CKPT_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>

#include "src/model/local_model.h"
#include "src/precision/convert.h"

typedef struct comm_group comm_group;
typedef struct dist_optimizer dist_optimizer;

/* The run as a checkpoint sees it: who holds what, in which precision, of which model. */
typedef struct {
    int world_size;         /* ranks (1 for a serial run) */
    int tp, pp, dp, vpp;    /* tensor, pipeline, data parallel sizes; model chunks per rank */
    int cp, ep;             /* context and expert parallel sizes (0 or 1: none; ep divides dp) */
    const char *rank_order; /* "tp-dp-pp" | "tp-pp-dp" | "tp-cp-ep-dp-pp" | "tp-cp-ep-pp-dp"
                               (src/runtime/groups.h) */
    bool zero;              /* the distributed optimizer (ZeRO-1): moments sharded over dp */
    prec_dtype dtype;       /* fp32, bf16 or fp16 parameters */
    /* the model: must match when loading (the layout above may differ) */
    int num_layers, hidden_size, num_attention_heads, seq_length;
    int padded_vocab, make_vocab_size_divisible_by, seed;
    /* mixture of experts (src/model/gpt.h): num_experts 0 = dense. E and K must match to
     * load; the aux-loss weight and the capacity factor are training settings (recorded for
     * eval/generate, free to differ on --load) */
    int num_experts, moe_router_topk;
    float moe_aux_loss_coeff, moe_expert_capacity_factor;
} ckpt_layout;

/* Writes this rank's file of iteration `it` and, once every rank of `world` has, makes the
 * iteration the latest. Collective over `world` (NULL for a single process). */
void checkpoint_save(const char *dir, int it, const ckpt_layout *l, const local_model *m,
                     dist_optimizer *opt, comm_group *world, int rank);

/* The iteration named by DIR/latest; dies with a clear message if there is none. */
int checkpoint_latest(const char *dir);

/* Loads the latest iteration into this rank's model and optimizer, whatever layout it was
 * saved with; the model (layers, hidden size, heads, sequence length) must match. Dies with
 * one line naming the file and the problem for a damaged or inconsistent checkpoint.
 * Returns the iteration. Not collective: every rank reads the files it needs by itself. */
int checkpoint_load(const char *dir, const ckpt_layout *l, local_model *m, dist_optimizer *opt,
                    int rank);

/* Reads the model stored in a checkpoint (for `trident eval`): fills the model fields of l
 * (layers, hidden, heads, seq length, vocab padding, seed, the MoE fields: 0 experts for a
 * dense checkpoint) and leaves the others alone. */
void checkpoint_read_model(const char *dir, ckpt_layout *l);

/* Where element `serial` of a parameter's serial tensor lives when the tensor, of serial
 * shape (full_rows, full_cols), is cut by `split` over tp_size ranks: sets *tp_rank (-1 when
 * every TP rank holds it: SPLIT_NONE) and *local (index in that rank's slice). Returns false
 * when the element is outside the tensor (a padded vocabulary row the saved layout lacked).
 * The inverse of gpt_param_serial_index. */
bool checkpoint_locate(int split, size_t full_rows, size_t full_cols, int tp_size, size_t serial,
                       int *tp_rank, size_t *local);

/* The expert-parallel twin, for SPLIT_EXPERTS tensors (an MoE block's stacked experts, cut by
 * whole experts over ep_size ranks, each held whole by every TP rank): element `serial` of the
 * serial tensor (full_rows, full_cols) is local element *local of ep rank *ep_rank, which holds
 * rows [ep_rank·full_rows/ep_size, ..). Returns false outside the tensor or when ep_size does
 * not divide full_rows. The inverse of gpt_param_serial_index for SPLIT_EXPERTS. */
bool checkpoint_locate_expert(size_t full_rows, size_t full_cols, int ep_size, size_t serial,
                              int *ep_rank, size_t *local);

#endif /* TRIDENT_CKPT_CHECKPOINT_H */
