/* moe_config.h — the settings of a mixture of experts and the one set of rules they obey.
 *
 * Every layer that is given MoE settings checks them here, with these rules and these words
 * (the flags' names): the flags of `trident train` (src/train/config_check.c), the metadata of
 * a checkpoint (src/ckpt/checkpoint_read.c), the model's configuration (gpt_config_check, with one
 * expert-parallel rank) and the layer itself (moe_acts_create).
 *
 *   num_experts      E, 1 <= E <= MOE_MAX_EXPERTS; or 0, a dense model (MLPs, no MoE layer),
 *                    which takes no other MoE setting: P, K, the coefficient and the capacity
 *                    factor must keep their defaults (MOE_DEFAULT_*), or the first one that
 *                    does not is refused as needing experts ("--moe-router-topk 5 needs
 *                    experts: give --num-experts"). A setting given at its default value is
 *                    the same configuration as one not given, and passes. A negative E or one
 *                    above the bound is named as the model's range, 0 to MOE_MAX_EXPERTS
 *   topk             K, 1 <= K <= E
 *   aux_loss_coeff   finite and not negative
 *   capacity_factor  finite, 0 to MOE_MAX_CAPACITY_FACTOR; 0 is dropless (router.h, capacity)
 *   ep_size          P >= 1 divides E: each expert-parallel rank holds whole experts
 *   ep_rank          0 <= rank < P
 *
 * Not here: what the settings do (router.h, moe_layer.h), the layout's own rules (ep divides
 * the data-parallel size: src/runtime/groups.h), which features MoE does not run with yet
 * (the trainer's configuration check).
 */
#ifndef TRIDENT_MOE_MOE_CONFIG_H
#define TRIDENT_MOE_MOE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

/* The most experts a model may have (a bound on tables sized by E, checked before them). */
#define MOE_MAX_EXPERTS 4096
/* The largest capacity factor: at a factor of E / K (at most MOE_MAX_EXPERTS) an expert
 * already takes every token of a call, so a larger one drops nothing more; bounded, the
 * capacity ceil(factor · N · K / E) stays far inside size_t (router_capacity). */
#define MOE_MAX_CAPACITY_FACTOR MOE_MAX_EXPERTS

/* The settings of a model that does not say otherwise (Megatron's defaults): top-2 routing, no
 * load-balancing loss, dropless experts, one expert-parallel rank. A dense model keeps them. */
#define MOE_DEFAULT_TOPK 2
#define MOE_DEFAULT_AUX_LOSS_COEFF 0.0f
#define MOE_DEFAULT_CAPACITY_FACTOR 0.0f

typedef struct {
    int num_experts;       /* E, --num-experts; 0: dense */
    int topk;              /* K, --moe-router-topk */
    float aux_loss_coeff;  /* --moe-aux-loss-coeff */
    float capacity_factor; /* --moe-expert-capacity-factor; 0: dropless */
    int ep_size, ep_rank;  /* P (--expert-model-parallel-size) and this rank in ep */
} moe_config;

/* False, with one line naming the flags, the values and the rule in err, when m breaks a rule
 * above, e.g. "--num-experts 3 is not divisible by --expert-model-parallel-size 2 (each
 * expert-parallel rank holds whole experts)". */
bool moe_config_check(const moe_config *m, char *err, size_t errlen);

#endif /* TRIDENT_MOE_MOE_CONFIG_H */
