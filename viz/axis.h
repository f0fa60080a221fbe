/* axis.h — the ticks of every axis in viz/: a 1-2-5 step and a range widened to whole steps,
 * with a bounded number of ticks whatever the values.
 *
 *        hi = 3·step ┼──   ticks at lo + k·step, k = 0 .. intervals
 *                    ┼──   (lo and hi whole multiples of step; at most VIZ_AXIS_MAX_INTERVALS)
 *                    ┼──
 *        lo = 0      ┼──
 *
 * Why one module: an axis built from values read from a file (metrics.jsonl, a trace) must
 * not spin. A range whose width overflows a double (losses at ±1e308) gave an infinite step,
 * NaN ends and a tick loop that never ended; viz_axis_of refuses such a range instead
 * (values beyond ±VIZ_AXIS_LIMIT), and callers loop over a tick COUNT, never over a value.
 *
 * Not here: drawing the ticks (each picture draws its own), reading the values.
 */
#ifndef TRIDENT_VIZ_AXIS_H
#define TRIDENT_VIZ_AXIS_H

#include <stdbool.h>

/* The largest |value| an axis spans: its width, padding and steps stay finite. */
#define VIZ_AXIS_LIMIT 1e300
/* The most intervals viz_axis_of gives (it aims at `want`, at most want + 4). */
enum { VIZ_AXIS_MAX_INTERVALS = 64 };

typedef struct {
    double lo, hi; /* the ends: whole multiples of step, lo < hi */
    double step;   /* 1, 2 or 5 times a power of ten */
    int intervals; /* (hi - lo) / step, 1 .. VIZ_AXIS_MAX_INTERVALS */
} viz_axis;

/* 1, 2 or 5 times a power of ten, the smallest at least `raw`; 1 when raw is not a finite
 * positive number. Constant time: no loop over the magnitude. */
double viz_axis_step(double raw);

/* lo..hi widened to whole steps, about `want` intervals (1 .. VIZ_AXIS_MAX_INTERVALS - 4).
 * One value (lo == hi, or nearly) is padded by a tenth of it, or by 1 where that tenth is
 * below the normal doubles (0, denormals). Returns false, out untouched, when lo or hi is
 * not finite, lo > hi, or a value lies beyond ±VIZ_AXIS_LIMIT. */
bool viz_axis_of(double lo, double hi, int want, viz_axis *out);

#endif /* TRIDENT_VIZ_AXIS_H */
