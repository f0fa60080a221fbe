/* executor.h — runs one rank's pipeline schedule for one training step.
 *
 * The schedule (src/pp/schedule.h) is data: an ordered list of F(mb, chunk) and
 * B(mb, chunk) actions with the messages each needs. The executor walks it:
 *
 *   F: receive the activation (unless first stage) -> gpt_forward -> send the output
 *      (unless last stage); the activations of (mb, chunk) are kept until its B.
 *   B: receive the output gradient (unless last stage) -> gpt_backward -> send the input
 *      gradient (unless first stage); the activations of (mb, chunk) are freed at once.
 *
 * Sends never block (the communication layer buffers them) and a receive waits for its
 * tag, which is exactly the semantics under which schedule_sim proves the schedules
 * deadlock-free. Gradients accumulate over micro-batches in the model's gradient buffer;
 * each micro-batch's loss is weighted by `dloss` (1 / (B·T·m) for a mean over the step).
 *
 * With sequence parallelism (src/model/gpt.h) a message is this rank's (B, T/tp, C) sequence
 * shard of the residual stream (gpt_residual_rows): each tensor-parallel rank of a stage sends
 * its own positions to the rank of the same tensor-parallel place in the next stage.
 *
 * zbv: a message between two stages of this rank (the bottom of the V) is handed over in
 * memory, not through the communication layer; after the step's last W the two wte copies of
 * pipeline rank 0 get their summed gradient (local_model_sum_tied_grads).
 *
 * Not here: gradient synchronisation across data-parallel ranks and the optimizer
 * (src/zero/distributed_optimizer.h), and the tied-embedding all-reduce between ranks.
 */
#ifndef TRIDENT_PP_EXECUTOR_H
#define TRIDENT_PP_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/pp/schedule.h"
#include "src/model/local_model.h"

typedef struct comm_group comm_group;
typedef struct trace_recorder trace_recorder;

typedef struct pp_executor pp_executor;

/* cfg.p must equal the pipeline group's size and cfg.v the model's chunks per rank. */
pp_executor *pp_executor_create(local_model *model, comm_group *tp, comm_group *pp,
                                const pp_config *cfg, int pp_rank, int B, int T);
void pp_executor_destroy(pp_executor *ex);
/* MoE models: what the forwards of the last run (or forward-only pass) routed — tokens[l·E + e]
 * the (token, choice) pairs this rank's chunks sent to expert e of global layer l (0 for layers
 * it does not hold), dropped[l] those over capacity — and the sum of their switch losses
 * (returned). NULL arrays for a dense model. */
double pp_executor_moe_load(const pp_executor *ex, const int64_t **tokens, const int64_t **dropped);

/* Optional: record each forward/backward (and memory in use) on this recorder. */
void pp_executor_set_trace(pp_executor *ex, trace_recorder *tr);

/* --overlap-p2p-comm: each action's receive is posted one receive ahead (MPI_Irecv into a
 * second input buffer) before the previous action computes, and waited for only when its
 * action starts, so the transfer can happen while this rank computes (comm.h, comm_irecv:
 * it moves whenever MPI progresses here). Sends never wait anyway: comm_send hands MPI a
 * private copy, so the output buffer is free for reuse at once. Off by default. */
void pp_executor_set_overlap_p2p(pp_executor *ex, bool on);

/* Runs the step's actions. inputs, targets: (m, B, T) token ids of this rank's m
 * micro-batches (only the first stage reads inputs, only the last reads targets).
 * Returns the sum over micro-batches of the mean loss, on the last stage; 0 elsewhere. */
double pp_executor_run(pp_executor *ex, const int32_t *inputs, const int32_t *targets, float dloss,
                       int step);

/* Forward passes only (evaluation): the schedule's forwards in order with their messages,
 * each activation set given back right after its forward. Skipping every backward keeps a
 * valid schedule valid: a forward only ever waits for an earlier stage's forward. Returns the
 * sum over micro-batches of the mean loss on the last stage, 0 elsewhere. */
double pp_executor_forward_only(pp_executor *ex, const int32_t *inputs, const int32_t *targets,
                                int step);

/* Memory accounting of the last run: peak bytes of activations held, and the peak
 * number of (micro-batch, chunk) activation sets alive at once. */
size_t pp_executor_peak_activation_bytes(const pp_executor *ex);
int pp_executor_peak_microbatches(const pp_executor *ex);
/* Bytes of one micro-batch's activations for each chunk (summed over chunks): what the
 * chunks' recomputation setting keeps (src/model/gpt.h). */
size_t pp_executor_activation_bytes_per_microbatch(const pp_executor *ex);
/* Bytes of the chunks' work spaces (gpt_scratch: one per chunk, shared by the micro-batches;
 * with recomputation, where what they do not keep is computed). */
size_t pp_executor_work_space_bytes(const pp_executor *ex);

#endif /* TRIDENT_PP_EXECUTOR_H */
