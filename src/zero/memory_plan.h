/* memory_plan.h — bytes per rank for parameters, gradients and optimizer state, ZeRO style.
 *
 * The ZeRO paper's accounting (Rajbhandari et al., 2020, section 3.1 and table 1), for Ψ
 * parameters on this rank, data-parallel degree Nd and Adam:
 *
 *                          params     grads      fp32 master   Adam m + v
 *   mixed (bf16/fp16)      2Ψ         2Ψ         4Ψ            8Ψ        K = 12: master+m+v
 *   pure fp32              4Ψ         4Ψ         —             8Ψ        (the params are the master)
 *
 *   stage 0 (plain DP)     nothing sharded                          mixed: 16Ψ
 *   stage 1 (ZeRO-1)       master + m + v divided by Nd             mixed: 4Ψ + 12Ψ/Nd
 *   stage 2                gradients divided by Nd too              mixed: 2Ψ + 14Ψ/Nd
 *   stage 3                parameters divided by Nd too             mixed: 16Ψ/Nd
 *   e.g. Ψ = 7.5e9, Nd = 64: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB (GB = 1e9 bytes, as the paper).
 *
 * Trident's distributed optimizer implements stage 1 (stage 2 and 3 are priced for
 * comparison). A sharded tensor is allocated as the rank's whole shard, padding included,
 * so the "actual" figures use S = shard_numel of shard_ranges (padded_numel / Nd) per
 * sharded element and exceed the pure formula Ψ/Nd by the padding; both are given.
 *
 * Not here: activations, temporary buffers, communication buffers.
 */
#ifndef TRIDENT_ZERO_MEMORY_PLAN_H
#define TRIDENT_ZERO_MEMORY_PLAN_H

#include <stddef.h>
#include <stdio.h>

#include "src/precision/convert.h"
#include "src/zero/shard_ranges.h"

typedef struct {
    size_t psi;         /* Ψ: parameters on this rank */
    int dp;             /* Nd */
    size_t shard_numel; /* S: elements of one shard, padding included (>= ceil(Ψ/Nd)) */
    prec_dtype dtype;   /* of params and grads; the optimizer is always fp32 */
    int stage;          /* 0..3 */
    /* bytes per rank, from the actual (padded) shard size */
    size_t param_bytes, grad_bytes, master_bytes, optim_bytes, total_bytes;
    /* the same from the paper's formula (Ψ/Nd exactly, no padding) */
    double formula_param_bytes, formula_grad_bytes, formula_master_bytes, formula_optim_bytes,
        formula_total_bytes;
} zero_memory_plan;

/* The plan for Ψ = psi elements with shards of shard_numel elements. Dies (one line naming
 * the value) for dp < 1, stage outside 0..3, or a shard too small to hold Ψ/dp. */
zero_memory_plan zero_memory_plan_make(size_t psi, int dp, size_t shard_numel, prec_dtype dtype,
                                       int stage);
/* The plan for a built buffer: Ψ = r->numel, S = r->shard_numel. */
zero_memory_plan zero_memory_plan_of(const zero_ranges *r, prec_dtype dtype, int stage);

/* "ZeRO-1, bf16, dp 64: 31.41 GB per rank (params 15.00 + grads 15.00 + master 0.47 +
 * Adam m,v 0.94)" into buf; returns buf. */
const char *zero_memory_plan_summary(const zero_memory_plan *m, char *buf, size_t cap);
/* A small table: one row per kind of tensor, actual and formula bytes. */
void zero_memory_plan_print(FILE *f, const zero_memory_plan *m);

#endif /* TRIDENT_ZERO_MEMORY_PLAN_H */
