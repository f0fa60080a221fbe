/* moe_config.c — the rules of moe_config.h, in its order; the first one broken is reported. */
#include "src/moe/moe_config.h"

#include <math.h>
#include <stdio.h>

/* Writes the message into err and returns false. */
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return false;                                                                              \
    } while (0)

/* A dense model (E = 0): every other setting at its default, or the first that is not refused. */
static bool dense_check(const moe_config *m, char *err, size_t errlen) {
    if (m->ep_size != 1)
        FAIL("--expert-model-parallel-size %d needs experts: give --num-experts", m->ep_size);
    if (m->topk != MOE_DEFAULT_TOPK)
        FAIL("--moe-router-topk %d needs experts: give --num-experts (a dense model, "
             "--num-experts 0, routes nothing)",
             m->topk);
    if (m->aux_loss_coeff != MOE_DEFAULT_AUX_LOSS_COEFF)
        FAIL("--moe-aux-loss-coeff %g needs experts: give --num-experts (a dense model, "
             "--num-experts 0, has no load-balancing loss)",
             (double)m->aux_loss_coeff);
    if (m->capacity_factor != MOE_DEFAULT_CAPACITY_FACTOR)
        FAIL("--moe-expert-capacity-factor %g needs experts: give --num-experts (a dense model, "
             "--num-experts 0, has no expert capacity)",
             (double)m->capacity_factor);
    if (m->ep_rank != 0)
        FAIL("expert-parallel rank %d is outside --expert-model-parallel-size 1", m->ep_rank);
    return true;
}

bool moe_config_check(const moe_config *m, char *err, size_t errlen) {
    const int E = m->num_experts, K = m->topk, P = m->ep_size;
    if (E < 0 || E > MOE_MAX_EXPERTS)
        FAIL("--num-experts %d must be between 0 (a dense MLP) and %d", E, MOE_MAX_EXPERTS);
    if (P < 1) FAIL("--expert-model-parallel-size %d must be at least 1", P);
    if (E == 0) return dense_check(m, err, errlen);
    if (m->ep_rank < 0 || m->ep_rank >= P)
        FAIL("expert-parallel rank %d is outside --expert-model-parallel-size %d", m->ep_rank, P);
    if (K < 1 || K > E) FAIL("--moe-router-topk %d must be between 1 and --num-experts %d", K, E);
    if (!(m->aux_loss_coeff >= 0) || !isfinite(m->aux_loss_coeff))
        FAIL("--moe-aux-loss-coeff %g must be finite and not negative", (double)m->aux_loss_coeff);
    if (!(m->capacity_factor >= 0) || !isfinite(m->capacity_factor))
        FAIL("--moe-expert-capacity-factor %g must be finite and not negative (0 = dropless)",
             (double)m->capacity_factor);
    if (m->capacity_factor > MOE_MAX_CAPACITY_FACTOR)
        FAIL("--moe-expert-capacity-factor %g must be at most %d: at experts / top-k (at most "
             "%d) an expert already takes every token of a micro-batch, and a larger factor "
             "only overflows the capacity, factor · tokens · top-k / experts",
             (double)m->capacity_factor, MOE_MAX_CAPACITY_FACTOR, MOE_MAX_EXPERTS);
    if (E % P != 0)
        FAIL("--num-experts %d is not divisible by --expert-model-parallel-size %d (each "
             "expert-parallel rank holds whole experts)",
             E, P);
    return true;
}
