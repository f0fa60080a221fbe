/* loss_scaler.h — dynamic loss scaling for fp16 training (Megatron's DynamicGradScaler).
 *
 * fp16 gradients underflow to zero below 2^-24. The trainer therefore multiplies the loss
 * by `scale` before the backward pass (so every gradient is `scale` times larger), and
 * divides the fp32 gradients by `scale` before the optimizer step. When the scale is too
 * large a gradient overflows to inf (or becomes NaN): that step is skipped and the scale
 * shrinks; after a long run of clean steps it grows again, so it hovers just below the
 * largest safe value.
 *
 *   prec_scaler s;
 *   prec_scaler_init(&s, 0);                        // 0: the default 2^16
 *   for each step:
 *       backward(loss * s.scale);  unscale grads by 1/s.scale
 *       bool ovf = prec_has_inf_or_nan(grads, n);   // (all-reduced over ranks: any rank)
 *       if (prec_scaler_update(&s, ovf)) adamw_step(...);   // false: skip this step
 *
 * The rule (exactly Megatron's, with its defaults):
 *   - overflow: the step is ALWAYS skipped; the clean-step counter restarts; the hysteresis
 *     counter drops by one, and once it reaches 0 the scale is multiplied by
 *     backoff_factor (0.5), but never below min_scale (1).
 *   - clean step: the counter grows; after growth_interval (1000) clean steps in a row the
 *     scale is multiplied by growth_factor (2) and the hysteresis counter refills.
 *   With hysteresis 2: the first overflow only skips, the second one (since the last
 *   growth, not necessarily in a row) halves the scale, and every further overflow halves
 *   it again until the scale next grows. hysteresis 1 halves on every overflow.
 *
 * The scale's range, the one rule every reader of a saved scale applies (prec_scale_valid):
 * [PREC_SCALE_MIN, PREC_SCALE_MAX] = [1, 2^24]. 1 is the back-off floor (min_scale); 2^24
 * lifts the smallest fp16 gradient (2^-24) to 1, so a larger scale rescues nothing more and
 * only overflows sooner: growth stops there. A scale outside (1e300 is inf as a float: every
 * step would be skipped; 1e-300 is 0: every gradient would vanish) is refused, not used.
 *
 * bf16 and fp32 runs need no scaler (fp32's exponent range): use scale 1 and skip nothing,
 * or simply do not call this module.
 */
#ifndef TRIDENT_PRECISION_LOSS_SCALER_H
#define TRIDENT_PRECISION_LOSS_SCALER_H

#include <stdbool.h>
#include <stddef.h>

#define PREC_SCALE_MIN 1.0
#define PREC_SCALE_MAX 16777216.0 /* 2^24 */

typedef struct {
    float scale;            /* current loss scale */
    float min_scale;        /* floor for backing off (default 1) */
    float growth_factor;    /* default 2 */
    float backoff_factor;   /* default 0.5 */
    int growth_interval;    /* clean steps before growing (default 1000) */
    int hysteresis;         /* overflows tolerated before backing off (default 2) */
    int growth_tracker;     /* clean steps since the last overflow or growth */
    int hysteresis_tracker; /* overflows left before the next back-off */
    long steps, skipped;    /* statistics: updates seen, steps skipped */
} prec_scaler;

/* Megatron's defaults; initial_scale <= 0 means 2^16. Fields may be changed after init
 * (call prec_scaler_reset_trackers after changing hysteresis). */
void prec_scaler_init(prec_scaler *s, float initial_scale);
/* Refills the hysteresis counter and restarts the clean-step counter. */
void prec_scaler_reset_trackers(prec_scaler *s);
/* Records one step's outcome; returns true when the optimizer step must be applied
 * (no overflow), false when it must be skipped. */
bool prec_scaler_update(prec_scaler *s, bool overflow);
/* True when `scale` is a number in [PREC_SCALE_MIN, PREC_SCALE_MAX] (NaN is not). */
bool prec_scale_valid(double scale);
/* True when some g[i] is inf or NaN. */
bool prec_has_inf_or_nan(const float *g, size_t n);

#endif /* TRIDENT_PRECISION_LOSS_SCALER_H */
