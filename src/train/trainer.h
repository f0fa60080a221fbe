/* trainer.h — one training run: the model pieces of this rank, the pipeline executor, the
 * (distributed) optimizer and the data, stepped together.
 *
 * A step, on every rank, for every layout:
 *   1. take this DP rank's m micro-batches of the global batch (samples
 *      (it−1)·G + dp_rank·G/dp + j·B + i, the same tokens whatever the layout);
 *   2. run the pipeline schedule (src/pp/executor.h): forwards and backwards of each
 *      (micro-batch, chunk), p2p between stages, TP collectives inside the layers;
 *   3. the optimizer step (src/zero/distributed_optimizer.h): tied embedding, DP sync
 *      (all-reduce or ZeRO reduce-scatter), clipping, AdamW, all-gather;
 *   4. the step's loss, averaged over the global batch, known on every rank.
 * With one process this is the serial reference trainer.
 *
 * trainer_run() wraps steps with what a user sees: the layout and memory plan at start,
 * progress lines, RUN_DIR/metrics.jsonl, checkpoints, traces and the summary.
 */
#ifndef TRIDENT_TRAIN_TRAINER_H
#define TRIDENT_TRAIN_TRAINER_H

#include "src/ckpt/checkpoint.h"
#include "src/model/local_model.h"
#include "src/runtime/parallel_state.h"
#include "src/train/config.h"

typedef struct trainer trainer;

/* Builds a trainer. ps == NULL: serial (no communication at all, even inside an MPI job,
 * which lets a test compute the serial reference on every rank). cfg must be checked.
 * With --bf16 it sets the process's linear products to bf16, and trainer_destroy sets fp32
 * back (src/device/device.h device_set_matmul_dtype: process-wide, like the device). Trainers
 * of one process that exist at once share that setting: give them one precision, and step a
 * bf16 one only while no other bf16 trainer has been destroyed since it was created. */
trainer *trainer_create(const train_config *cfg, parallel_state *ps);
void trainer_destroy(trainer *t);

typedef struct {
    float loss;       /* mean over the global batch */
    double grad_norm; /* before clipping */
    float lr;
    bool skipped;                 /* fp16 overflow: the update was skipped */
    float loss_scale;             /* fp16 loss scale after this step (1 otherwise) */
    size_t peak_activation_bytes; /* the largest peak of activations held, over all ranks */
    size_t memory_peak_bytes;     /* the largest allocator high-water mark, over all ranks */
    size_t bytes_within_host;     /* bytes all ranks sent in this step to a rank on their own */
    size_t bytes_across_hosts;    /* host, and to one on another (src/runtime/comm.h) */
    int loss_rank; /* loss not finite: the lowest rank whose own share was not; else -1 */
    /* MoE models (NULL / 0 otherwise), over the whole global batch: */
    float aux_loss;             /* the switch losses' part of the objective (per micro-batch) */
    const int64_t *moe_tokens;  /* (L·E) (token, choice) pairs routed to expert e of layer l */
    const int64_t *moe_dropped; /* (L) of them over capacity */
} step_result;

/* Runs iteration `it` (1-based). */
step_result trainer_step(trainer *t, int it);

/* Trident's allocator high-water mark of global rank `rank` (src/device/device_memory.h), as
 * gathered by the last trainer_step or trainer_memory_gather (every rank knows every rank's). */
size_t trainer_memory_peak(const trainer *t, int rank);
/* Gathers every rank's activation peak and allocator high-water mark now (a collective of
 * the world: every rank calls it; trainer_step does at its end). */
void trainer_memory_gather(trainer *t);

/* The model, with every parameter in model->params (ZeRO-3: gathered until the next step;
 * collective over the data-parallel group). */
local_model *trainer_model(trainer *t);
/* The model as it is held, nothing gathered: with ZeRO-2/3 grads is NULL, with ZeRO-3 params
 * too (between steps). For memory checks. */
const local_model *trainer_model_held(const trainer *t);
typedef struct dist_optimizer dist_optimizer;
dist_optimizer *trainer_optimizer(trainer *t);
typedef struct pp_executor pp_executor;
pp_executor *trainer_executor(trainer *t);

/* The whole run with logging, checkpoints and traces; returns the process exit status.
 * It leaves a run directory (metrics.jsonl, trace/, and the pictures of viz/run_pictures.h). */
int trainer_run(train_config *cfg);

/* What checkpoints are told of a run configured by cfg (checked): layout, precision, model. */
ckpt_layout trainer_ckpt_layout(const train_config *cfg);

/* The other way round, for commands that load a checkpoint (eval, generate): cfg gets the
 * saved model's shape (layers, hidden size, heads, sequence length, vocabulary padding),
 * seed and experts (--num-experts, --moe-*: none for a dense checkpoint); its layout,
 * precision and data are left to the caller. */
void trainer_config_take_model(train_config *cfg, const ckpt_layout *saved);

/* Evaluation during training, on any layout: `batches` global batches of held-out samples
 * (sample k of the data's evaluation windows, taken in order and wrapping around), forward
 * passes only through the pipeline; the mean loss, known on every rank. */
float trainer_evaluate(trainer *t, int batches, int step);

/* Mean loss of the model over the evaluation windows of the data (serial). A window whose
 * loss is not finite ends the program with one line naming it (no mean is made of it). */
double trainer_eval(trainer *t, const char *data_path, int max_windows);

#endif /* TRIDENT_TRAIN_TRAINER_H */
