/* axis.c — 1-2-5 steps and ranges of whole steps (axis.h). */
#include "viz/axis.h"

#include <float.h>
#include <math.h>

double viz_axis_step(double raw) {
    if (!(raw > 0) || !isfinite(raw)) return 1;
    double p = pow(10, floor(log10(raw)));
    double m = raw / p;
    double step = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
    return isfinite(step) && step > 0 ? step : 1;
}

bool viz_axis_of(double lo, double hi, int want, viz_axis *out) {
    if (!(fabs(lo) <= VIZ_AXIS_LIMIT && fabs(hi) <= VIZ_AXIS_LIMIT && lo <= hi)) return false;
    if (want < 1) want = 1;
    if (want > VIZ_AXIS_MAX_INTERVALS - 4) want = VIZ_AXIS_MAX_INTERVALS - 4;
    if (hi - lo <= 1e-12 * fabs(hi)) { /* one value: room around it */
        double pad = 0.1 * fabs(hi);
        if (!(pad >= DBL_MIN)) pad = 1;
        lo -= pad;
        hi += pad;
    }
    double step = viz_axis_step((hi - lo) / want);
    double a = floor(lo / step + 1e-9), b = ceil(hi / step - 1e-9);
    if (a * step > lo) a -= 1; /* rounding (denormal steps): the ends must hold the values */
    if (b * step < hi) b += 1;
    if (!(b > a)) b = a + 1;
    /* (hi - lo) / step <= want, so b - a <= want + 4: bounded, and checked */
    if (b - a > VIZ_AXIS_MAX_INTERVALS) return false;
    *out = (viz_axis){a * step, b * step, step, (int)(b - a)};
    return true;
}
