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
 * Trident's distributed optimizer implements stages 1 to 3 (src/zero/fsdp.h for 2 and 3). A sharded tensor is allocated as the rank's whole shard, padding included,
 * so the "actual" figures use S = shard_numel of shard_ranges (padded_numel / Nd) per
 * sharded element and exceed the pure formula Ψ/Nd by the padding; both are given.
 *
 * ONE RANK'S WHOLE BILL (zero_memory_rank, below) is what Trident's own allocator holds at
 * its high-water mark (src/device/device_memory.h), kind by kind. Its model state is in
 * Trident's storage, not the paper's: parameters and gradients are fp32 buffers even in mixed
 * precision (they hold values rounded to 16 bits, src/precision/), so per element
 *
 *                          params   grads   fp32 master   Adam m + v
 *   fp32                   4        4       —             8           16 bytes: the paper's K
 *   bf16 / fp16            4        4       4             8           20 (the paper: 2+2+12)
 *   stage 1 (ZeRO-1)       padded   padded  S             S           (padded = Nd·S)
 *   stage 2                Ψ        S       S             S           (ZeRO-2/3 pad shards only)
 *   stage 3                S        S       S             S
 *
 * Stages 2 and 3 cut unit by unit (shard_ranges.h, UNITS): S = Σ s_u, and their work
 * buffers (zero_fsdp_work_bytes: one bucket of dp·max s_u, ZeRO-3 two gather buffers more) are
 * the kind ZERO_MEM_BUCKETS, filled by src/train/memory_predict.h. The
 * other kinds — activations by schedule, work spaces, message buffers — are filled by
 * src/train/memory_predict.h, which knows the model and the schedule.
 *
 * Not here: the model and the schedule (src/train/memory_predict.h), drawing (viz/).
 */
#ifndef TRIDENT_ZERO_MEMORY_PLAN_H
#define TRIDENT_ZERO_MEMORY_PLAN_H

#include <stddef.h>
#include <stdio.h>

#include "src/precision/convert.h"
#include "src/zero/shard_ranges.h"

/* The alignment, in elements, of the shards src/zero/distributed_optimizer.c cuts (the align
 * of zero_ranges_build): every shard a multiple of 64 floats. */
#define ZERO_SHARD_ALIGN 64

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

/* "no ZeRO", "ZeRO-1", "ZeRO-2", "ZeRO-3" (stage 0..3). */
const char *zero_stage_name(int stage);
/* Megatron-FSDP's --data-parallel-sharding-strategy name of a stage: "no_shard", "optim",
 * "optim_grads", "optim_grads_params". */
const char *zero_stage_strategy(int stage);
/* What a stage shards over the data-parallel ranks, and what is gathered or reduced when, in
 * one line, e.g. for stage 1: "Adam m, v and the fp32 master sharded over DP; gradients
 * reduce-scattered and parameters all-gathered once per step; parameters and gradients
 * whole". */
const char *zero_stage_sharded(int stage);

/* The same in a few words, for a picture's title: "nothing sharded", "optimizer state
 * sharded", "optimizer state and gradients sharded", "optimizer state, gradients and
 * parameters sharded". */
const char *zero_stage_sharded_short(int stage);

/* ---- one rank's whole bill ------------------------------------------------------------ */

/* The kinds of buffer a rank holds (each one or more device_alloc buffers). */
typedef enum {
    ZERO_MEM_PARAMS,      /* the flat parameter buffer (padded to the shard layout with ZeRO) */
    ZERO_MEM_GRADS,       /* the flat gradient buffer, same layout */
    ZERO_MEM_MASTER,      /* fp32 master weights, mixed precision only: all, or the shard */
    ZERO_MEM_ADAM,        /* Adam m and v: all, or the shard */
    ZERO_MEM_ACTIVATIONS, /* activation sets held: the schedule's in-flight micro-batches */
    ZERO_MEM_HANDOVER,    /* B -> W hand-overs of a split backward (zb-h1, zbv, dualpipev) */
    ZERO_MEM_WORK_SPACE,  /* per chunk: gradients in flight, what recomputation recomputes */
    ZERO_MEM_P2P,         /* pipeline message buffers (and zbv's messages to itself) */
    ZERO_MEM_BUCKETS,     /* ZeRO-1 + --overlap-grad-reduce: the reduce-scattered buckets' shard;
                           * ZeRO-2/3: the gradient bucket (and ZeRO-3's two gather buffers) */
    ZERO_MEM_TEMPORARY,   /* the largest short-lived work space (TP and SP layers, SP grads) */
    ZERO_MEM_NKINDS
} zero_mem_kind;

/* "parameters", "gradients", "master weights", "Adam m+v", "activations", "B->W hand-over",
 * "work space", "p2p buffers", "grad buckets", "temporary". */
const char *zero_mem_kind_name(zero_mem_kind k);
/* The same as a JSON key: "params", "grads", "master", "adam", "activations", "handover",
 * "work_space", "p2p", "buckets", "temporary". */
const char *zero_mem_kind_key(zero_mem_kind k);

typedef struct {
    int rank, tp_rank, pp_rank, dp_rank;
    int cp_rank, ep_rank; /* context- and expert-parallel coordinates (0 without; ep = dp % EP) */
    size_t bytes[ZERO_MEM_NKINDS];
    size_t total;        /* their sum: the predicted high-water mark */
    size_t logits_bytes; /* of which logits and their gradient (last stage; informational) */
    size_t head_bytes;   /* one micro-batch's head parts (src/model/gpt.h, the ends' parts of
                          * the chunk with the head; 0 without): what a V schedule (zbv,
                          * dualpipev) holds on rank 0 beside its fill of layer parts */
    size_t head_w_bytes; /* of them, what W reads (the final norm's input and output, the
                          * losses): ZB-H1's last stage holds them for p micro-batches where
                          * 1F1B holds one */
    size_t tokens_bytes; /* one micro-batch's embedding parts (the tokens; 0 without): a V
                          * holds them for 2p micro-batches of its first chunk, 1F1B for p */
    size_t numel;        /* Ψ of this rank, and the ZeRO layout of its buffer */
    size_t padded_numel, shard_numel;
    int sets;         /* activation sets held at once at most, all chunks together */
    int sets_kept;    /* sets the pools keep: each chunk's most, summed (>= sets) */
    size_t set_bytes; /* one micro-batch's activations through all the rank's chunks */
} zero_memory_rank;

/* The four model-state kinds of m in Trident's storage (the table above) for Ψ = numel
 * elements laid out in padded_numel = dp · shard_numel at ZeRO stage 0..3 (stage 0: the
 * buffers hold numel, no padding), and m->numel, padded_numel, shard_numel. Dies for a
 * stage outside 0..3. */
void zero_memory_rank_model_state(zero_memory_rank *m, size_t numel, size_t padded_numel,
                                  size_t shard_numel, prec_dtype dtype, int stage);
/* m->total = the sum of m->bytes; returns it. */
size_t zero_memory_rank_sum(zero_memory_rank *m);
/* Bytes in binary units, 3 significant digits: "512 B", "12.3 KiB", "1.50 GiB"; returns buf. */
const char *zero_bytes_text(double bytes, char *buf, size_t cap);

#endif /* TRIDENT_ZERO_MEMORY_PLAN_H */
