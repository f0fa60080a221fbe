/* enumerate.h — every layout of a model on N ranks that `trident train` accepts.
 *
 * A layout is the model's flags (as given) with one choice on each axis below; the candidates
 * are the axes' product and a candidate is kept when train_config_check accepts it — the very
 * check `trident train` runs, so the planner's set is train's set (tests/plan/enumerate_test
 * runs the check both ways at world sizes 1, 2, 4 and 8). No two candidates are the same
 * layout: --sequence-parallel is tried only at tp > 1 (the check turns it off at tp = 1) and
 * interleaving only under its own name (the check renames 1f1b with chunks).
 *
 *   tp, cp, pp        the divisors of N, their product dividing N (dp the rest)
 *   ep                the divisors of dp (MoE models; 1 for dense)
 *   schedule          gpipe, 1f1b, interleaved with every vpp >= 2 the layers allow, zb-h1,
 *                     zbv, dualpipev
 *   ZeRO stage        0 (no_shard), 1 (optim), 2 (optim_grads), 3 (optim_grads_params)
 *   recomputation     none, selective, full (uniform, 1 layer per group)
 *   sequence parallel off, on (tp > 1)
 *   overlap flags     --overlap-grad-reduce, --overlap-param-gather: off, on each
 *
 * Micro-batch and global batch sizes, precision and the model stay as the user gave them.
 *
 * Not here: the time (time_model.h) or the memory (src/train/memory_predict.h) of a layout.
 */
#ifndef TRIDENT_PLAN_ENUMERATE_H
#define TRIDENT_PLAN_ENUMERATE_H

#include <stdbool.h>
#include <stddef.h>

#include "src/train/config.h"

typedef struct {
    train_config *items; /* (n) each checked by train_config_check for the world size */
    int n, cap;
} plan_layouts;

/* Every layout of base's model at `world` ranks (base: parsed flags, unchecked; its layout
 * flags are overwritten). predict_only as `trident memory`: the model need not fit this
 * machine. Free with plan_layouts_free. */
void plan_enumerate(const train_config *base, int world, plan_layouts *out);
void plan_layouts_free(plan_layouts *l);

/* The flags of `trident train` that make a checked layout c, ready to paste (layout flags
 * only, those that differ from the defaults). */
void plan_layout_flags(const train_config *c, char *buf, size_t cap);

/* A short name of a checked layout for pictures: "TP2 CP2 DP2 · ZeRO-1 · SP", "PP4 DP2 zb-h1 ·
 * recompute full" — the parallel sizes above 1 (DP the rest), the schedule where there is a
 * pipeline (or it is not 1f1b), then ZeRO's stage, sequence parallelism, recomputation and
 * the overlap flags. */
void plan_layout_name(const train_config *c, char *buf, size_t cap);

#endif /* TRIDENT_PLAN_ENUMERATE_H */
