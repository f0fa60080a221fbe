/* loss_scaler.c — Megatron's dynamic loss scaling rule (see loss_scaler.h). */
#include "src/precision/loss_scaler.h"

#include <math.h>

#include "src/core/check.h"

void prec_scaler_init(prec_scaler *s, float initial_scale) {
    s->scale = initial_scale > 0 ? initial_scale : 65536.0f;
    s->min_scale = 1.0f;
    s->growth_factor = 2.0f;
    s->backoff_factor = 0.5f;
    s->growth_interval = 1000;
    s->hysteresis = 2;
    s->steps = 0;
    s->skipped = 0;
    prec_scaler_reset_trackers(s);
}

void prec_scaler_reset_trackers(prec_scaler *s) {
    s->growth_tracker = 0;
    s->hysteresis_tracker = s->hysteresis;
}

bool prec_scaler_update(prec_scaler *s, bool overflow) {
    CHECK(s->growth_interval >= 1 && s->hysteresis >= 1, "initialise with prec_scaler_init");
    s->steps++;
    if (overflow) {
        s->skipped++;
        s->growth_tracker = 0;
        s->hysteresis_tracker--;
        if (s->hysteresis_tracker <= 0) {
            s->scale *= s->backoff_factor;
            if (s->scale < s->min_scale) s->scale = s->min_scale;
        }
        return false;
    }
    s->growth_tracker++;
    if (s->growth_tracker == s->growth_interval) {
        s->growth_tracker = 0;
        s->hysteresis_tracker = s->hysteresis;
        s->scale *= s->growth_factor;
        if (s->scale > PREC_SCALE_MAX) s->scale = (float)PREC_SCALE_MAX;
    }
    return true;
}

bool prec_scale_valid(double scale) { return scale >= PREC_SCALE_MIN && scale <= PREC_SCALE_MAX; }

bool prec_has_inf_or_nan(const float *g, size_t n) {
    /* One flag for the whole array (no early exit), so the loop vectorises. */
    int bad = 0;
    for (size_t i = 0; i < n; i++) bad |= !isfinite(g[i]);
    return bad != 0;
}
