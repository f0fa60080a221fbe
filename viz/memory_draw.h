/* memory_draw.h — the picture of a memory bill: one stacked bar per rank (`trident memory -o`).
 *
 *   title:  the layout, the ZeRO stage and what it shards
 *
 *   MiB |        ___                 each bar is one rank; its boxes are the kinds of
 *    12 |  ___  |act|  ___           zero_memory_rank, bottom to top in zero_mem_kind order
 *       | |act| |   | |act|          (parameters, gradients, master weights, Adam m+v,
 *     6 | |Adm| |Adm| |Adm|          activations, B->W hand-over, work space, p2p buffers,
 *       | |grd| |grd| |grd|          grad buckets, temporary); a kind that is 0 has no box.
 *     0 +-|par|-|par|-|par|---       With measured peaks, a black tick crosses each bar at
 *          r0    r1    r2            its measured height.
 *   legend (the kinds present), notes        Wide bars are labelled with the rank's (tp, pp, dp)
 *                                            coordinates, (tp, pp, dp, cp, ep) when some rank
 *                                            has a cp or ep coordinate.
 *
 * The geometry is computed first (viz_memory_layout_make, no Cairo) and painted second, so tests
 * check bar heights and stacking as numbers. Bars are at least 4 points apart: a picture takes
 * at most VIZ_MEMORY_MAX_RANKS ranks (the caller refuses more, naming the limit).
 *
 * Not here: the prediction (src/train/memory_predict.h) or the kinds' meaning
 * (src/zero/memory_plan.h); this module only draws numbers.
 */
#ifndef TRIDENT_VIZ_MEMORY_DRAW_H
#define TRIDENT_VIZ_MEMORY_DRAW_H

#include <stdbool.h>
#include <stddef.h>

#include "src/zero/memory_plan.h"
#include "viz/canvas.h"

enum { VIZ_MEMORY_MAX_RANKS = 1024 };

typedef struct {
    const zero_memory_rank *ranks; /* (nranks), rank k at index k */
    int nranks;
    const size_t *measured; /* (nranks) measured peaks, or NULL */
    const char *title;      /* one line, e.g. "Predicted memory per rank: tp 2 × pp 2 ..." */
    const char *subtitle;   /* one line: the stage and what it shards (may be NULL) */
    const char *note;       /* one line under the legend (may be NULL) */
} viz_memory_chart;

typedef struct {
    double width, height;
    double plot_x, plot_y, plot_w, plot_h; /* the bars stand on plot_y + plot_h */
    double slot, bar_w;                    /* points per rank, bar width */
    double top_bytes, tick_bytes;          /* the value at plot_y, and between grid lines */
    int nticks;                            /* grid lines above 0 */
    int nranks;
    double *bar_x;      /* (nranks) left edge of each bar */
    double *seg_y0;     /* (nranks · ZERO_MEM_NKINDS) top of kind k of rank r, at [r·N + k] */
    double *seg_y1;     /* the same, bottom (y0 == y1: the kind is 0 there) */
    double *measured_y; /* (nranks) y of the measured tick, or NULL */
    bool rank_labels;   /* room for "r<k>" under each bar */
    bool totals;        /* room for the total above each bar */
    bool kinds_present[ZERO_MEM_NKINDS];
    double title_y, legend_y, note_y;
    char title_drawn[600], subtitle_drawn[600]; /* as drawn: wrapped at the page ('\n') */
    double subtitle_y;
    int legend_rows; /* the legend wraps onto further rows inside the page */
} viz_memory_layout;

/* The geometry for a width of `width` points (0: its own); 1 <= nranks <= VIZ_MEMORY_MAX_RANKS
 * (CHECKed). Free with viz_memory_layout_free. */
void viz_memory_layout_make(viz_memory_layout *L, const viz_memory_chart *chart, double width);
void viz_memory_layout_free(viz_memory_layout *L);

/* The colour of a kind's boxes: activations in the memory colour of the timelines, the
 * hand-over in the weight-gradient colour, every other kind its own categorical colour. */
viz_rgb viz_memory_kind_color(zero_mem_kind k);

/* Draws the chart to path (.png .svg .pdf, written atomically). */
void viz_memory_draw(const char *path, const viz_memory_chart *chart);

#endif /* TRIDENT_VIZ_MEMORY_DRAW_H */
