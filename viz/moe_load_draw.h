/* moe_load_draw.h — how a mixture-of-experts run spread its tokens over the experts, step by
 * step: RUN_DIR/moe_load.png and `trident render --moe-load RUN_DIR -o FILE`.
 *
 * Input: the moe_tokens / moe_dropped / moe_aux_loss of metrics.jsonl's step lines, as read by
 * src/trace/run_metrics.h (L layers, E experts). One panel per layer (the first
 * VIZ_MOE_MAX_PANELS, a note says so when there are more), each a heat map:
 *
 *   title: E experts × L layers, logged steps; subtitle: the aux loss of the last MoE step
 *   colour bar   0 ───── 1/E (balanced) ───── max share
 *   layer 0   ▁▁▂▁▃▁▁  dropped share (a strip, only when the layer dropped tokens)
 *             ┌────────────────────────────────┐ expert 0
 *             │ x = logged step, y = expert,    │
 *             │ colour = the expert's share of  │
 *             │ the layer's routed tokens       │ expert E-1
 *             └────────────────────────────────┘
 *              step 10          …          step 500
 *
 * share[l][e] of a column = Σ tokens[l][e] / Σ_e' tokens[l][e'] over the logged steps of the
 * column (one step per column, or several merged when there are more steps than pixels); the
 * scale is diverging around the balanced share 1/E: blue below, white at 1/E, red above. The
 * dropped strip shows Σ dropped[l] / Σ_e tokens[l][e] per column: dropped tokens as a share of
 * the layer's routed tokens (the sum of its moe_tokens). The top-k of the router is not in the
 * metrics, so the picture does not name it.
 *
 * Layout first (viz_moe_layout_of: panels, columns, colour scale, texts; testable without
 * drawing), then Cairo (viz_moe_load_draw, by extension .png/.svg/.pdf, written atomically
 * through viz/canvas.h: a failed drawing never replaces a good file).
 *
 * Not here: reading metrics.jsonl (src/trace/run_metrics.h).
 */
#ifndef TRIDENT_VIZ_MOE_LOAD_DRAW_H
#define TRIDENT_VIZ_MOE_LOAD_DRAW_H

#include <stdbool.h>
#include <stddef.h>

#include "src/trace/run_metrics.h"
#include "viz/canvas.h"

enum {
    VIZ_MOE_MAX_PANELS = 16,             /* layers drawn; the rest are named in a note */
    VIZ_MOE_MAX_CELLS = 4 * 1024 * 1024, /* columns x experts of one panel's image */
};

typedef struct {
    int layer;
    double x, y, w, h;       /* the heat map */
    double strip_y, strip_h; /* the dropped strip above it; strip_h 0 when nothing dropped */
    double dropped_max;      /* the largest dropped share of a column of this layer */
    char title[96];          /* "layer 3" or "layer 3 · dropped up to 2.1% of routed tokens" */
} viz_moe_panel;

typedef struct {
    double width, height;
    int layers, experts; /* L, E */
    int lines;           /* MoE step lines (run_metrics.nmoe) */
    int columns;         /* heat map columns; column c holds lines [c·lines/columns, (c+1)·…) */
    double balanced;     /* 1/E */
    double scale_max;    /* the share at the red end: the largest share, at least 2/E (≤ 1) */
    double bar_x, bar_y, bar_w, bar_h; /* the colour bar */
    char title[512], subtitle[256], note[160];
    char title_drawn[600], subtitle_drawn[300]; /* as drawn: wrapped at the page ('\n') */
    int title_lines, subtitle_lines;
    double text_shift; /* how far the wrapped lines move everything below them down */
    int npanels;
    viz_moe_panel panel[VIZ_MOE_MAX_PANELS];
} viz_moe_layout;

/* Where everything goes on a page `width` points wide; false (err: why) when the run has no
 * moe_tokens or the page is too narrow. */
bool viz_moe_layout_of(const run_metrics *m, double width, viz_moe_layout *out, char *err,
                       size_t errlen);

/* The first line and one past the last line of column c. */
void viz_moe_column_lines(const viz_moe_layout *l, int c, int *first, int *end);

/* Expert e's share of layer `layer`'s routed tokens over the lines of column c; NAN when the
 * layer routed no token there. */
double viz_moe_share(const run_metrics *m, const viz_moe_layout *l, int layer, int e, int c);

/* Layer `layer`'s dropped tokens over its routed tokens in column c (0 when none routed). */
double viz_moe_dropped_share(const run_metrics *m, const viz_moe_layout *l, int layer, int c);

/* The colour of a share on the diverging scale (grey for NAN). */
viz_rgb viz_moe_color(const viz_moe_layout *l, double share);

/* Draws the picture to path (.png, .svg, .pdf); false (err: why, nothing written) when the run
 * has no MoE metrics or width is not 300 to 20000. */
bool viz_moe_load_draw(const run_metrics *m, const char *path, int width, char *err, size_t errlen);

#endif /* TRIDENT_VIZ_MOE_LOAD_DRAW_H */
