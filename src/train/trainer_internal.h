/* trainer_internal.h — what the trainer's two files share: the trainer object itself
 * (trainer.c: create, step, evaluate) and its whole run (run.c: trainer_run with logging,
 * checkpoints, traces and pictures). Not for any other module: they use trainer.h. */
#ifndef TRIDENT_TRAIN_TRAINER_INTERNAL_H
#define TRIDENT_TRAIN_TRAINER_INTERNAL_H

#include "src/data/dataset.h"
#include "src/pp/executor.h"
#include "src/precision/convert.h"
#include "src/trace/trace.h"
#include "src/train/memory_predict.h"
#include "src/train/trainer.h"
#include "src/zero/distributed_optimizer.h"

struct trainer {
    train_config cfg;
    parallel_state *ps; /* NULL: serial */
    gpt_config gcfg;
    local_model *model;
    pp_executor *exec;
    dist_optimizer *opt;
    dataset *data;
    int tp_rank, pp_rank, dp_rank, cp_rank, cp_size;
    int64_t *moe_load; /* MoE: (L·E + L) the step's routed and dropped counts, summed over ranks */
    int32_t *full;     /* context parallelism: (B, T) one micro-batch's whole sequences */
    bool is_last_stage;
    int32_t *inputs, *targets;    /* (m, B, T) */
    int32_t *sample;              /* (T+1) */
    int64_t *mem_peaks;           /* (world, 4) each rank's activation peak of the last step, its
                           allocator's high-water mark so far and its bytes sent within and
                           across hosts so far (trainer_memory_gather) */
    int64_t bytes_sent_before[2]; /* all ranks' bytes sent within / across hosts before the
                                   * step (comm.h): the step's are the difference */
    trace_recorder *trace;
};

/* The precision a configuration trains in. */
prec_dtype trainer_run_dtype(const train_config *c);

/* run_banner.c: the layout line (and the groups, with ps) and the predicted memory, printed by
 * the lead rank before the first step. */
void run_print_layout(const train_config *c, const parallel_state *ps, const local_model *m,
                      const dist_optimizer *opt, const pp_executor *ex);
void run_print_memory_prediction(const train_memory *tm);

#endif /* TRIDENT_TRAIN_TRAINER_INTERNAL_H */
