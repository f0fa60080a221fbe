/* equivalence_cases.h — the layout matrix: the layouts every parallel run is checked at, one
 * table per world size (WORLD, a build-time constant: one test binary per world size; WORLD 1
 * has none): first the 3-D rows (schedules, TP/PP/DP, ZeRO-1, ZeRO-2/3, overlaps,
 * recomputation, sequence parallelism), then the 5-D rows (context parallelism, mixture of
 * experts and expert parallelism, alone and with TP, PP, DP and ZeRO-1; with EP: the experts'
 * state sharded over edp × cp, src/zero/distributed_optimizer.c).
 *
 * Included by equivalence_test.c (every layout computes what one process computes) and
 * memory_test.c (every layout's allocator peak is what `trident memory` predicts), so the two
 * always cover the same layouts. Defines the static array k_cases (when WORLD > 1). */
#ifndef TRIDENT_TESTS_TRAIN_EQUIVALENCE_CASES_H
#define TRIDENT_TESTS_TRAIN_EQUIVALENCE_CASES_H

#include <stdbool.h>

#include "tests/train/equivalence.h"

#ifndef WORLD
#define WORLD 2
#endif

/* A 5-D row: context or expert parallelism, or an MoE model. */
static inline bool layout_case_is_5d(const layout_case *lc) {
    return lc->cp > 1 || lc->ep > 1 || lc->experts > 0;
}

#if WORLD > 1
/* Rows name the fields they set; the trailing fields (overlaps, recomputation, ...) default to
 * off, so rows that leave them out are fine. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const layout_case k_cases[] = {
#if WORLD == 2
    {2, 1, 0, "1f1b", false},                     /* TP2 */
    {1, 2, 0, "1f1b", false},                     /* PP2 1F1B */
    {1, 2, 0, "gpipe", false},                    /* PP2 GPipe */
    {1, 2, 1, "interleaved", false},              /* PP2 interleaved, 2 chunks per rank */
    {1, 1, 0, "1f1b", false},                     /* DP2 */
    {1, 1, 0, "1f1b", true},                      /* DP2 + ZeRO */
    {1, 2, 0, "zb-h1", false},                    /* PP2 zero bubble (split backward) */
    {1, 2, 0, "zbv", false},                      /* PP2 ZB-V: rank 0 holds stages 0 and 3 */
    {1, 2, 0, "dualpipev", false},                /* PP2 DualPipeV: the same V, DeepSeek's order */
    {1, 1, 0, "1f1b", false, true, false},        /* DP2 --overlap-grad-reduce */
    {1, 1, 0, "1f1b", true, true, true},          /* DP2 + ZeRO, both overlaps */
    {1, 2, 0, "1f1b", false, false, false, true}, /* PP2 1F1B, receives posted ahead */
    /* activation recomputation (the serial run keeps everything) */
    {1, 2, 0, "zb-h1", false, false, false, false, "full", "uniform", 2}, /* one group of 2 */
    {2, 1, 0, "1f1b", false, false, false, false, "selective"},           /* TP2 */
    /* sequence parallelism */
    {.tp = 2, .pp = 1, .schedule = "1f1b", .sequence_parallel = true}, /* TP2 */
    /* ZeRO-2 and ZeRO-3 (4 micro-batches per DP rank: buckets reduced per micro-batch) */
    {.tp = 1, .pp = 1, .schedule = "1f1b", .sharding = "optim_grads"},        /* DP2 */
    {.tp = 1, .pp = 1, .schedule = "1f1b", .sharding = "optim_grads_params"}, /* DP2 */
    /* 5-D: context parallelism, mixture of experts, expert parallelism */
    {.tp = 1, .pp = 1, .schedule = "1f1b", .cp = 2}, /* CP2 */
    {.tp = 1,
     .pp = 1,
     .schedule = "1f1b",
     .ep = 2,
     .experts = 4,
     .topk = 2, /* EP2 */
     .aux_coeff = 0.01f},
    {.tp = 1,
     .pp = 1,
     .schedule = "1f1b",
     .ep = 2,
     .experts = 4,
     .topk = 1, /* EP2, dropping */
     .aux_coeff = 0.01f,
     .capacity = 1.0f},
    {.tp = 1, .pp = 1, .schedule = "1f1b", .zero = true, .experts = 4, .topk = 2}, /* DP2 ZeRO */
    {.tp = 1,
     .pp = 1,
     .schedule = "1f1b",
     .cp = 2,
     .experts = 4,
     .topk = 2, /* CP2 MoE */
     .aux_coeff = 0.01f},
    {.tp = 1,
     .pp = 1,
     .schedule = "1f1b",
     .zero = true,
     .ep = 2,
     .experts = 4, /* EP2 ZeRO */
     .topk = 2,
     .aux_coeff = 0.01f},
    /* sequence parallelism: each TP rank routes its own positions (serial: no SP) */
    {.tp = 2,
     .pp = 1,
     .schedule = "1f1b",
     .sequence_parallel = true,
     .experts = 4,
     .topk = 2,
     .aux_coeff = 0.01f}, /* TP2 SP MoE */
#elif WORLD == 4
    {4, 1, 0, "1f1b", false},                    /* TP4 */
    {1, 4, 0, "1f1b", false},                    /* PP4 1F1B */
    {1, 4, 0, "gpipe", false},                   /* PP4 GPipe */
    {1, 1, 0, "1f1b", true},                     /* DP4 + ZeRO */
    {1, 1, 0, "1f1b", false},                    /* DP4 */
    {2, 2, 0, "1f1b", false},                    /* TP2 × PP2 */
    {1, 4, 0, "zb-h1", false},                   /* PP4 zero bubble */
    {1, 4, 1, "zbv", false},                     /* PP4 ZB-V: 1 layer per chunk, so 8 layers */
    {2, 2, 0, "zbv", false},                     /* TP2 × PP2 ZB-V */
    {1, 4, 1, "dualpipev", false},               /* PP4 DualPipeV, 8 layers (m = 8 = 2p) */
    {2, 2, 0, "dualpipev", false},               /* TP2 × PP2 DualPipeV */
    {1, 2, 0, "dualpipev", true},                /* PP2 × DP2 DualPipeV ZeRO (m = 4 = 2p) */
    {2, 1, 0, "1f1b", true, true, true},         /* TP2 × DP2 + ZeRO, both overlaps */
    {1, 2, 0, "1f1b", false, true, false},       /* PP2 × DP2 1F1B --overlap-grad-reduce */
    {1, 4, 1, "zbv", false, false, false, true}, /* PP4 ZB-V, self messages + receives ahead */
    {1, 2, 0, "1f1b", true, false, false, false, "full", "block", 1},   /* PP2 × DP2 ZeRO */
    {2, 2, 0, "zbv", false, false, false, false, "full", "uniform", 1}, /* TP2 × PP2 ZB-V */
    /* sequence parallelism: shards as pipeline messages; the split backward; ZeRO + overlaps */
    {.tp = 2, .pp = 2, .schedule = "1f1b", .sequence_parallel = true}, /* TP2 × PP2 */
    {.tp = 2, .pp = 2, .schedule = "zbv", .sequence_parallel = true},  /* TP2 × PP2 ZB-V */
    {.tp = 2,
     .pp = 1,
     .schedule = "1f1b",
     .zero = true,
     .overlap_grad = true,
     .overlap_param = true,
     .sequence_parallel = true}, /* TP2 × DP2 ZeRO, both overlaps */
    /* ZeRO-2 and ZeRO-3: with TP (and SP), with PP (the tied wte's slices summed over the
     * embedding group; zbv: on rank 0), and at DP4 */
    {.tp = 2, .pp = 1, .schedule = "1f1b", .sharding = "optim_grads"}, /* TP2 × DP2 */
    {.tp = 1, .pp = 2, .schedule = "1f1b", .sharding = "optim_grads"}, /* PP2 × DP2 */
    {.tp = 2,
     .pp = 1,
     .schedule = "1f1b",
     .sequence_parallel = true,
     .sharding = "optim_grads_params"},                                       /* TP2 × DP2 SP */
    {.tp = 1, .pp = 2, .schedule = "zbv", .sharding = "optim_grads_params"},  /* PP2 × DP2 */
    {.tp = 1, .pp = 1, .schedule = "1f1b", .sharding = "optim_grads_params"}, /* DP4 */
    /* 5-D: context parallelism, mixture of experts, expert parallelism */
    {.tp = 2, .pp = 1, .schedule = "1f1b", .cp = 2},               /* TP2 × CP2 */
    {.tp = 1, .pp = 2, .schedule = "1f1b", .cp = 2},               /* CP2 × PP2 */
    {.tp = 1, .pp = 1, .schedule = "1f1b", .cp = 2, .zero = true}, /* CP2 × DP2 ZeRO */
    {.tp = 1, .pp = 1, .schedule = "1f1b", .cp = 4},               /* CP4 */
    {.tp = 1,
     .pp = 1,
     .schedule = "1f1b",
     .ep = 4,
     .experts = 4,
     .topk = 2, /* EP4 */
     .aux_coeff = 0.01f},
    {.tp = 2,
     .pp = 1,
     .schedule = "1f1b",
     .ep = 2,
     .experts = 4,
     .topk = 2, /* TP2 × EP2 */
     .aux_coeff = 0.01f},
    {.tp = 1,
     .pp = 2,
     .schedule = "zb-h1",
     .ep = 2,
     .experts = 4,
     .topk = 2, /* PP2 × EP2 */
     .aux_coeff = 0.01f},
    {.tp = 1,
     .pp = 1,
     .schedule = "1f1b",
     .cp = 2,
     .ep = 2,
     .experts = 4,
     .topk = 2, /* CP2×EP2 */
     .aux_coeff = 0.01f},
    {.tp = 1,
     .pp = 1,
     .schedule = "1f1b",
     .zero = true,
     .ep = 2,
     .experts = 4, /* EP2×EDP2 */
     .topk = 2,
     .aux_coeff = 0.01f}, /* ZeRO */
    {.tp = 2,
     .pp = 1,
     .schedule = "1f1b",
     .zero = true,
     .ep = 2,
     .experts = 4, /* TP2×EP2 */
     .topk = 2,
     .aux_coeff = 0.01f}, /* ZeRO */
    {.tp = 2,
     .pp = 1,
     .schedule = "1f1b",
     .sequence_parallel = true,
     .ep = 2,
     .experts = 4,
     .topk = 2,
     .aux_coeff = 0.01f},                                                       /* TP2 × EP2, SP */
    {.tp = 2, .pp = 1, .schedule = "1f1b", .sequence_parallel = true, .cp = 2}, /* TP2 × CP2, SP */
    {.tp = 2,
     .pp = 1,
     .schedule = "1f1b",
     .sequence_parallel = true,
     .cp = 2,
     .experts = 4,
     .topk = 2,
     .aux_coeff = 0.01f}, /* TP2 × CP2, SP, MoE: the switch loss over tp × cp */
#elif WORLD == 8
    {2, 2, 1, "interleaved", true}, /* TP2 × PP2 × DP2, interleaved, ZeRO (the demo layout) */
    {2, 2, 0, "1f1b", false},       /* TP2 × PP2 × DP2, 1F1B */
    {2, 2, 0, "gpipe", true},       /* TP2 × PP2 × DP2, GPipe, ZeRO */
    {1, 2, 0, "1f1b", true},        /* PP2 × DP4, ZeRO */
    {4, 2, 0, "1f1b", false},       /* TP4 × PP2 */
    {2, 1, 0, "1f1b", true},        /* TP2 × DP4, ZeRO */
    {2, 2, 0, "zb-h1", true},       /* TP2 × PP2 × DP2, zero bubble, ZeRO */
    {2, 2, 0, "zbv", true},         /* TP2 × PP2 × DP2, ZB-V, ZeRO */
    {2, 2, 0, "dualpipev", true},   /* TP2 × PP2 × DP2, DualPipeV, ZeRO */
    {2, 2, 1, "interleaved", true, true, true}, /* TP2 × PP2 × DP2 interleaved ZeRO, overlaps */
    {2, 2, 0, "zb-h1", true, true, true},       /* TP2 × PP2 × DP2 zb-h1 ZeRO, overlaps */
    {2, 2, 0, "zbv", true, true, true, true},   /* TP2 × PP2 × DP2 ZB-V ZeRO, every overlap */
    {2, 2, 1, "interleaved", false, true, false, true}, /* interleaved, grads + p2p overlap */
    {2, 2, 1, "interleaved", true, false, false, false, "full", "uniform", 1}, /* 3D, ZeRO */
    {2, 2, 0, "zb-h1", true, false, false, false, "selective"},                /* 3D, ZeRO */
    /* sequence parallelism: interleaved, ZeRO, full recomputation (which gathers again) */
    {.tp = 2,
     .pp = 2,
     .vpp_layers = 1,
     .schedule = "interleaved",
     .zero = true,
     .recompute = "full",
     .recompute_method = "uniform",
     .recompute_layers = 1,
     .sequence_parallel = true}, /* 3D */
    /* ZeRO-2 and ZeRO-3 in 3D: zero bubble's split backward; interleaved with full
     * recomputation (ZeRO-3 gathers each unit for the recompute too) */
    {.tp = 2, .pp = 2, .schedule = "zb-h1", .sharding = "optim_grads"}, /* TP2 × PP2 × DP2 */
    {.tp = 2,
     .pp = 2,
     .vpp_layers = 1,
     .schedule = "interleaved",
     .recompute = "full",
     .recompute_method = "uniform",
     .recompute_layers = 1,
     .sharding = "optim_grads_params"}, /* TP2 × PP2 × DP2 */
    {.tp = 2, .pp = 2, .schedule = "zb-h1", .sharding = "optim_grads_params"}, /* 3D */
    /* 5-D: context parallelism, mixture of experts, expert parallelism */
    {.tp = 2, .pp = 2, .schedule = "1f1b", .cp = 2}, /* TP2 × CP2 × PP2 */
    {.tp = 1,
     .pp = 2,
     .vpp_layers = 1,
     .schedule = "interleaved",
     .cp = 2, /* CP2 × DP2 × PP2 */
     .zero = true},
    {.tp = 2, .pp = 1, .schedule = "1f1b", .cp = 4}, /* TP2 × CP4 */
    {.tp = 2,
     .pp = 2,
     .schedule = "1f1b",
     .ep = 2,
     .experts = 4,
     .topk = 2, /* TP2×PP2×EP2 */
     .aux_coeff = 0.01f},
    {.tp = 2,
     .pp = 1,
     .schedule = "1f1b",
     .ep = 4,
     .experts = 8,
     .topk = 2, /* TP2 × EP4 */
     .aux_coeff = 0.01f},
    {.tp = 2,
     .pp = 1,
     .schedule = "1f1b",
     .cp = 2,
     .ep = 2,
     .experts = 4,
     .topk = 2,
     .aux_coeff = 0.01f}, /* TP2 × CP2 × DP2 (EP2) */
    {.tp = 2,
     .pp = 1,
     .schedule = "1f1b",
     .cp = 2,
     .ep = 2,
     .experts = 4,
     .topk = 2,
     .aux_coeff = 0.01f,
     .zero = true}, /* TP2 × CP2 × EP2 ZeRO: experts over edp × cp = 2 */
    {.tp = 2,
     .pp = 2,
     .schedule = "zb-h1",
     .sequence_parallel = true,
     .ep = 2,
     .experts = 4,
     .topk = 2,
     .aux_coeff = 0.01f,
     .zero = true}, /* TP2 × PP2 × EP2, SP, zb-h1, ZeRO */
    {.tp = 2, .pp = 2, .schedule = "zbv", .sequence_parallel = true, .cp = 2}, /* TP2×CP2×PP2 SP */
    {.tp = 2,
     .pp = 1,
     .schedule = "1f1b",
     .sequence_parallel = true,
     .cp = 2,
     .ep = 2,
     .experts = 4,
     .topk = 2,
     .aux_coeff = 0.01f,
     .zero = true}, /* all five: TP×CP×EP, SP */
#endif
};
#pragma GCC diagnostic pop
#endif

#endif /* TRIDENT_TESTS_TRAIN_EQUIVALENCE_CASES_H */
