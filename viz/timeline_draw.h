/* timeline_draw.h — paints timelines (PNG, SVG or PDF by extension) from their layout.
 *
 * One panel per timeline, stacked on one time scale: per rank a compute lane that shows the
 * rank's time classes (viz/timeline.h): compute boxes coloured by kind from the shared
 * palette (model chunks told apart by hatching and shade, micro-batch numbers where they
 * fit), transfers solid slate, waits pale and hatched, idle blank — messages inside a compute
 * box are painted over it, so a box never shows waiting as computing. Below it the
 * communication lane (each send / receive / collective: its wait hatched, its transfer solid
 * in the kind's colour), above it the phase strip (warmup / steady / cooldown from the
 * schedule's counts), then a memory curve with its peak. At the right of each row its shares
 * "compute · transfer" and "wait · idle" (they add up to 100% of the step); above the rows
 * the measured bubble (wait + idle in the pipeline span) beside the theory; a time axis in ms
 * below; a two-line legend (kinds, then time classes). Optional arrows join each send to its
 * receive. Same timelines -> same PNG bytes. With a window (viz_tl_draw_options.window) only
 * that time of the step is drawn, at the full width, and the shares count the window. With a
 * build (viz_tl_draw_options.build = K, viz/build.h) K pages: page k draws the rows only up to
 * k/K of the time shown (a thin "now" line there), titles, axis, shares and legend whole.
 * With overlays (viz_tl_draw_options.overlays, `trident render --ideal --critical-path`) a
 * pale "ideal" lane under each compute lane holds the plan's boxes, the critical path is
 * outlined in bold black with arrows only where it hops between ranks, and a caption under
 * the panel's note says what they are.
 *
 * Not here: where things go (timeline_layout.h), trace files (timeline_load.h).
 */
#ifndef TRIDENT_VIZ_TIMELINE_DRAW_H
#define TRIDENT_VIZ_TIMELINE_DRAW_H

#include <stdbool.h>

#include "viz/canvas.h"
#include "viz/timeline.h"

typedef struct {
    double width;                   /* page width in points (pixels for PNG); 0 means 1400 */
    bool arrows;                    /* draw send -> receive arrows */
    const viz_tl_window *window;    /* only this time of the step, at the full width (NULL: all;
                                  * viz/timeline_layout.h) */
    int build;                      /* K pages, page k drawn up to k/K of the time shown
                                  * (viz/build.h); 0: one picture */
    const char *title;              /* replaces the (first) panel's title; NULL: generated */
    const viz_tl_overlay *overlays; /* (n) what lies over each panel: ideal rows, the critical
                                     * path (viz/timeline.h); NULL: nothing */
} viz_tl_draw_options;

/* Draws n timelines into `path` (.png, .svg or .pdf), atomically. */
void viz_timeline_draw(const char *path, const viz_timeline *const *tls, int n,
                       const viz_tl_draw_options *opt);

/* The fill of a box: its kind's palette colour, one shade darker per two model chunks;
 * odd chunks are also hatched (viz_tl_chunk_hatched), so chunks read without colour. */
viz_rgb viz_tl_box_color(viz_tl_kind kind, int chunk);
bool viz_tl_chunk_hatched(int chunk);

/* The compute lane's fill for transfer time and wait time (idle is left white). */
extern const viz_rgb VIZ_TL_TRANSFER_RGB, VIZ_TL_WAIT_RGB;
/* The critical path's outline colour, and how much lighter than its kind an ideal box is
 * (viz_shade). */
extern const viz_rgb VIZ_TL_PATH_RGB;
extern const double VIZ_TL_IDEAL_LIGHTEN;

#endif /* TRIDENT_VIZ_TIMELINE_DRAW_H */
