/* timeline_draw.h — paints timelines (PNG, SVG or PDF by extension) from their layout.
 *
 * One panel per timeline, stacked on one time scale: per rank a compute lane (boxes coloured
 * by kind from the shared palette, model chunks told apart by hatching and shade, micro-batch
 * numbers where they fit, idle gaps hatched grey), a phase strip (warmup / steady / cooldown),
 * a communication lane (p2p waits as thin light bars, transfers solid, collectives), and a
 * memory curve with its peak; idle % at the right; the measured and theoretical bubble above;
 * a time axis in ms below; a legend of the kinds present at the bottom. Optional arrows join
 * each send to its receive. Same timelines -> same PNG bytes.
 *
 * Not here: where things go (timeline_layout.h), trace files (timeline_load.h).
 */
#ifndef TRIDENT_VIZ_TIMELINE_DRAW_H
#define TRIDENT_VIZ_TIMELINE_DRAW_H

#include <stdbool.h>

#include "viz/canvas.h"
#include "viz/timeline.h"

typedef struct {
    double width;  /* page width in points (pixels for PNG); 0 means 1400 */
    bool arrows;   /* draw send -> receive arrows */
} viz_tl_draw_options;

/* Draws n timelines into `path` (.png, .svg or .pdf), atomically. */
void viz_timeline_draw(const char *path, const viz_timeline *const *tls, int n,
                       const viz_tl_draw_options *opt);

/* The fill of a box: its kind's palette colour, one shade darker per two model chunks;
 * odd chunks are also hatched (viz_tl_chunk_hatched), so chunks read without colour. */
viz_rgb viz_tl_box_color(viz_tl_kind kind, int chunk);
bool viz_tl_chunk_hatched(int chunk);

#endif /* TRIDENT_VIZ_TIMELINE_DRAW_H */
