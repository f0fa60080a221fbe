/* moe_cp_cases.h — the 5-D layouts: context parallelism, mixture of experts and expert
 * parallelism, alone and with TP, PP, DP and ZeRO-1 (with EP: the experts' state sharded over
 * edp × cp, src/zero/distributed_optimizer.c); one list per world size (WORLD, a
 * build-time constant: one test binary per world size; WORLD 1 has none). Included by
 * moe_cp_equivalence_test.c (every layout computes what one process computes) and
 * memory_moe_cp_test.c (every layout's allocator peak is what `trident memory` predicts), so
 * the two always cover the same layouts, as equivalence_cases.h does for the 3-D ones.
 * Defines the static array k_moe_cp_cases (when WORLD > 1). */
#ifndef TRIDENT_TESTS_TRAIN_MOE_CP_CASES_H
#define TRIDENT_TESTS_TRAIN_MOE_CP_CASES_H

#include "tests/train/equivalence.h"

#ifndef WORLD
#define WORLD 1
#endif

#if WORLD > 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const layout_case k_moe_cp_cases[] = {
#if WORLD == 2
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
    {.tp = 2, .pp = 1, .schedule = "1f1b", .sequence_parallel = true, .cp = 2, .experts = 4,
     .topk = 2, .aux_coeff = 0.01f}, /* TP2 × CP2, SP, MoE: the switch loss over tp × cp */
#elif WORLD == 8
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
    {.tp = 2, .pp = 1, .schedule = "1f1b", .sequence_parallel = true, .cp = 2, .ep = 2,
     .experts = 4, .topk = 2, .aux_coeff = 0.01f, .zero = true}, /* all five: TP×CP×EP, SP */
#endif
};
#pragma GCC diagnostic pop
#endif

#endif /* TRIDENT_TESTS_TRAIN_MOE_CP_CASES_H */
