/* distopt_internal.h — what the optimizer's files share: the optimizer object, the steps
 * every gradient path takes, and the paths themselves. Not for any other module: they use
 * distributed_optimizer.h.
 *
 * distopt_step (distributed_optimizer.c) takes one of five paths, each one function in the
 * file of its idea, each reading as its algorithm:
 *
 *   data_parallel.c   no ZeRO: all-reduce the gradients, AdamW on every parameter
 *   zero1.c           ZeRO-1: reduce-scatter, AdamW on the shard, all-gather
 *   overlap.c         the same collectives on a stream, hidden behind the backward / forward
 *   fsdp.c            ZeRO-2/3: the shard was reduced during the backward; gather or drop
 *   expert_shard.c    expert parallelism: the experts' gradients over expert_dp
 *
 * Between its reduction and its gather every path does the same (optimizer_steps.c): the
 * sequence-parallel sum, the global norm, AdamW on this rank's shard.
 *
 * Not here: the cut of the buffer (shard_ranges.h), AdamW's arithmetic (src/optim/adamw.h).
 */
#ifndef TRIDENT_ZERO_DISTOPT_INTERNAL_H
#define TRIDENT_ZERO_DISTOPT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "src/zero/distributed_optimizer.h"
#include "src/zero/fsdp.h"
#include "src/zero/overlap.h"

typedef struct zero_experts zero_experts;

/* One shard of optimizer state: the pieces this rank updates (shard_ranges.h) and, at each
 * piece's local_start, its Adam moments and fp32 master weights. The gradients come with
 * each call: where a path has reduced them. */
typedef struct {
    zero_ranges *ranges;
    const zero_shard *mine; /* this rank's shard of ranges */
    float *m, *v;           /* (n) Adam moments */
    float *master;          /* (n) mixed precision: fp32 master weights; NULL in fp32 */
    size_t n;               /* shard_numel with ZeRO; numel without (the dp = 1 layout) */
    bool packed;            /* world indices are a packed buffer's of some tensors (the
                               experts'), not the model's: a piece's weights are in its tensor */
} distopt_shard;

struct dist_optimizer {
    local_model *model;
    adamw_config cfg;
    distopt_groups g;
    int stage; /* 0 (no ZeRO) .. 3 */
    int dp_size, dp_rank;
    int t;               /* steps taken (Adam bias correction) */
    distopt_shard shard; /* ZeRO: this rank's of dp shards; without: the whole buffer */
    prec_scaler scaler;  /* fp16 loss scaling */
    bool inject_overflow;
    zero_overlap *overlap; /* --overlap-grad-reduce / --overlap-param-gather at dp > 1 */
    zero_fsdp *fsdp;       /* ZeRO-2/3: the gradient (and parameter) shards */
    zero_experts *experts; /* ZeRO-1 with expert parallelism: the experts' own shard */
};

/* ---------------------------------------------------------------- the five paths
 * Each takes the step's learning rate and inv = 1 / (dp · loss scale), which turns the
 * summed gradients into their mean (and unscales fp16's); returns the gradient norm. */
double distopt_data_parallel_step(dist_optimizer *o, float lr, float inv); /* data_parallel.c */
double distopt_zero1_step(dist_optimizer *o, float lr, float inv);         /* zero1.c */
double distopt_overlap_step(dist_optimizer *o, float lr, float inv);       /* overlap.c */
double distopt_fsdp_step(dist_optimizer *o, float lr, float inv);          /* fsdp.c */
double distopt_expert_step(dist_optimizer *o, float lr, float inv);        /* expert_shard.c */

/* ---------------------------------------------------------------- shared (optimizer_steps.c) */

/* Ranks in g (NULL counts as 1). */
int distopt_group_size(comm_group *g);
/* The shard layout of the model's tensors over `shards` ranks; with `only` (nparams flags)
 * of those tensors alone, the others of size 0 (they occupy nothing: the rest lie end to end,
 * while the pieces keep the model's parameter indices). Free with zero_ranges_free. */
zero_ranges *distopt_layout(const local_model *m, int shards, size_t bucket_numel,
                            const bool *only);
/* This rank's copy of the tied wte (NULL: none), and with zbv the second copy on this same
 * rank in *second (else NULL; local_model.h). */
const gpt_param *distopt_tied_wte(const local_model *m, const gpt_param **second);

/* Step 1: the tied embedding's two copies (first and last pipeline stage) get the sum of
 * both gradients. */
void distopt_sum_tied_embedding(dist_optimizer *o);
/* In place over g, labelled, nothing at one rank: rank d's summed part d of buf (d·S, S) lands
 * at buf[0, S) (comm.h); the all-gather puts every rank's `mine` (S) at buf + d·S. */
void distopt_reduce_scatter(comm_group *g, float *buf, size_t S, const char *label);
void distopt_all_gather(comm_group *g, const float *mine, float *buf, size_t S, const char *label);

/* Steps 2 (end) to 4 on this rank's shard, whose reduced gradients are at grads +
 * local_start: the sequence-parallel sum, the global norm, clipping and AdamW (then the
 * model's copy). Returns the norm. What every path but the experts' calls. */
double distopt_update_shard(dist_optimizer *o, float *grads, float lr);

/* Its parts, for the experts' path (two shards, one norm). */
void distopt_sum_sequence_parallel(dist_optimizer *o, const distopt_shard *s, float *grads);
/* ss plus the squares of the shard's gradients that count in the norm (in_grad_norm). */
double distopt_sumsq(const distopt_shard *s, const float *grads, double ss);
/* sqrt of ss summed over the norm group (the ranks whose pieces differ). */
double distopt_global_norm(dist_optimizer *o, double ss);
/* Sum of one double per rank of g, added in rank order (the same on every rank). */
double distopt_sum_over_group(comm_group *g, double x);
void distopt_adamw(dist_optimizer *o, const distopt_shard *s, const float *grads, float lr,
                   float clip);

/* The model's copy of piece pc, which AdamW updates: the model's buffer at its world index;
 * ZeRO-3's parameter shard at its local index; a packed shard's piece in its tensor. */
float *distopt_model_weights(dist_optimizer *o, const distopt_shard *s, const zero_piece *pc);
/* Mixed precision: the shard's fp32 master weights, allocated and copied from the model's
 * fp32 initialisation; with `round` the model's copy of each piece is then rounded. */
void distopt_init_master(dist_optimizer *o, distopt_shard *s, bool round);

#endif /* TRIDENT_ZERO_DISTOPT_INTERNAL_H */
