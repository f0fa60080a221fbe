/* timeline_overlay.h — where the overlays of a timeline picture go (viz_tl_overlay,
 * viz/timeline.h): the ideal row under each rank's row, the critical path's outlines and its
 * hops between ranks. Part of the timeline layout (timeline_layout.c calls these); the
 * numbers land in viz_tl_row_layout and viz_tl_panel_layout:
 *
 *   compute lane  [F0 ][F1   ][B0    ]   ·····[B1  ]      measured, outlined where the
 *   ideal lane    [F0][F1][B0  ]  [B1  ]                   path runs (bold), pale below
 *   comm lane     ...
 *
 * The ideal lane is IDEAL_SHARE of the compute lane's height (at least VIZ_TL_COMM_H); its
 * boxes are placed exactly like the measured ones (x = viz_tl_x(start), clipped to a
 * window), and show their micro-batch where it fits at VIZ_TL_IDEAL_LABEL_SIZE.
 *
 * Not here: the data (src/analyze/ideal_rows.h makes it), painting (timeline_draw.c).
 */
#ifndef TRIDENT_VIZ_TIMELINE_OVERLAY_H
#define TRIDENT_VIZ_TIMELINE_OVERLAY_H

#include "viz/timeline_layout.h"

#define VIZ_TL_IDEAL_SHARE 0.6      /* the ideal lane's height over the compute lane's */
#define VIZ_TL_IDEAL_LABEL_SIZE 7.0 /* micro-batch numbers on ideal boxes, points */
#define VIZ_TL_IDEAL_CHAR_W 4.5     /* estimated advance of one character at that size */

/* t clipped into the time shown (in a window; unchanged without one). */
double viz_tl_shown(const viz_tl_layout *L, double t);
/* The ideal lane's height for compute lanes lane_h high. */
double viz_tl_ideal_lane_h(double lane_h);
/* Row R's ideal boxes (R->ideal_boxes), from row R->rank of the panel overlay's ideal
 * timeline; a box past the panel's step (P->t_end) is cut there, or hidden. */
void viz_tl_overlay_row(viz_tl_layout *L, const viz_tl_panel_layout *P, viz_tl_row_layout *R);
/* The panel's critical path: a rectangle per segment on its rank's compute lane, and a hop
 * (an arrow) from the end of a segment to the start of the next where the rank changes. */
void viz_tl_overlay_path(const viz_tl_layout *L, viz_tl_panel_layout *P);
/* The caption under the note, wrapped at the page width, its first baseline at y; returns
 * its last baseline (y when there is none). */
double viz_tl_overlay_caption(const viz_tl_layout *L, viz_tl_panel_layout *P, double y);

#endif /* TRIDENT_VIZ_TIMELINE_OVERLAY_H */
