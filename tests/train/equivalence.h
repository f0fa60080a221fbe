/* equivalence.h — the rule that makes Trident a reference, as a test helper:
 * a parallel layout trains N steps and its losses and final parameters are compared with
 * the serial run computed in the same process (on every rank, with no communication).
 */
#ifndef TRIDENT_TESTS_TRAIN_EQUIVALENCE_H
#define TRIDENT_TESTS_TRAIN_EQUIVALENCE_H

#include <stdbool.h>

#include "src/train/config.h"

typedef struct {
    int tp, pp, vpp_layers; /* vpp_layers: --num-layers-per-virtual-pipeline-stage (0 = off) */
    const char *schedule;   /* gpipe | 1f1b | interleaved */
    bool zero;
    bool overlap_grad;  /* --overlap-grad-reduce (small buckets, so that some go early) */
    bool overlap_param; /* --overlap-param-gather */
    bool overlap_p2p;   /* --overlap-p2p-comm */
    /* --recompute-granularity full|selective (NULL: none), --recompute-method, and
     * --recompute-num-layers; the serial run it is compared with recomputes nothing */
    const char *recompute, *recompute_method;
    int recompute_layers;
    bool sequence_parallel; /* --sequence-parallel (the serial run has none) */
    /* --data-parallel-sharding-strategy (NULL: as .zero says): optim_grads is ZeRO-2,
     * optim_grads_params ZeRO-3 (src/zero/fsdp.h) */
    const char *sharding;
    /* 5-D: --context-parallel-size, --expert-model-parallel-size (0 = 1). The model side —
     * --num-experts, --moe-router-topk, --moe-aux-loss-coeff, --moe-expert-capacity-factor —
     * is the serial run's too (an MoE model is compared with the same MoE model, serial). */
    int cp, ep;
    int experts, topk;
    float aux_coeff, capacity;
} layout_case;

/* A small model and batch that every layout below divides. */
void equivalence_base_config(train_config *c);

/* The configuration of a layout case: base with the case's layout, schedule, ZeRO, overlaps,
 * recomputation and sequence parallelism (not yet checked). */
void equivalence_apply(const train_config *base, const layout_case *lc, train_config *out);

/* The case's model side (--num-experts, --moe-router-topk, --moe-aux-loss-coeff,
 * --moe-expert-capacity-factor) set in c: the same at the serial end and at the layout. */
void equivalence_model(const layout_case *lc, train_config *c);

/* Trains `steps` steps serially and at the layout (world = MPI world), and fails the test
 * if a loss differs by more than loss_rtol relative or a parameter by more than
 * atol + rtol·|serial|. Prints the largest differences seen. */
void equivalence_check(const train_config *base, const layout_case *lc, int steps, double loss_rtol,
                       double param_atol, double param_rtol);

#endif
