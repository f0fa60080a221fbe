/* analyze_draw.h — one analysed step as a picture: the critical path hopping across the ranks,
 * and every rank's bubble split into its causes.
 *
 *   run — step 3, wall clock: 5.13 ms
 *   critical path  rank 0 |F0|                                  ··|B3|opt|
 *                  rank 1    |x|F0...|B0....|s|x|F1..|B1...| ...  |        (one colour per kind;
 *                                                                          a line where it hops)
 *   bubble by cause rank 0        |schedule....|imbalance..|  ▏    bars right of 0 add up,
 *                   rank 1   |imb|schedule.....|sh|      ▏          bars left of 0 take away;
 *                                 0                                 the tick is the measured bubble
 *
 * The positions are computed first (an_layout_compute), so tests check them without pixels,
 * then drawn on a viz_canvas (.png, .svg or .pdf by the extension).
 *
 * Not here: the analysis (step_graph.h, critical_path.h, bubble_causes.h), the canvas.
 */
#ifndef TRIDENT_ANALYZE_ANALYZE_DRAW_H
#define TRIDENT_ANALYZE_ANALYZE_DRAW_H

#include "src/analyze/bubble_causes.h"
#include "src/analyze/critical_path.h"
#include "src/analyze/step_graph.h"
#include "viz/canvas.h"

enum { AN_NUM_CAUSES = 4 }; /* schedule, imbalance, communication, sharing */

typedef struct {
    double x, y, w, h;
    viz_rgb fill;
    int kind; /* cp_kind for a path segment; the cause (0..3) for a bar */
    int rank;
} an_rect;

typedef struct {
    double width, height;
    double plot_x, plot_w; /* the time axis of the path: 0 at plot_x, the step at + plot_w */
    double path_y, row_h;  /* the first rank's row of the path, each row's height */
    int nranks;
    int nseg;
    an_rect *seg;     /* (nseg) the path's segments, in the row of their rank */
    double causes_y;  /* the first rank's row of the causes (0: no causes) */
    double zero_x;    /* where a share of 0 is */
    double per_share; /* points per share (1.0 = 100%) */
    int nbar;
    an_rect *bar;       /* (nbar) each non-zero cause of each rank */
    double *measured_x; /* (nranks) the tick of each rank's measured bubble */
} an_layout;

/* The positions of the picture of path p through g, and of bc's causes (NULL: none). */
void an_layout_compute(const step_graph *g, const critical_path *p, const bubble_causes *bc,
                       an_layout *l);
void an_layout_free(an_layout *l);

/* The colour of a path kind; the names and colours of the causes. */
viz_rgb an_kind_color(cp_kind k);
viz_rgb an_cause_color(int cause);
const char *an_cause_name(int cause);

/* Draws the picture into path (.png/.svg/.pdf) under `title`. */
void an_draw(const char *path, const char *title, const step_graph *g, const critical_path *p,
             const bubble_causes *bc);

#endif /* TRIDENT_ANALYZE_ANALYZE_DRAW_H */
