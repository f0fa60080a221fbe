/* groups_draw.h — the picture of a layout's process groups (`trident groups -o x.png`).
 *
 * Every rank is a box, laid out node by node (one band per node, up to 8 boxes per row),
 * labelled with its global rank and its (tp, pp, dp) coordinates (and cp, ep, edp when the
 * layout has them). The kinds of group are told apart by visual channels:
 *
 *   DP group   fill colour   ranks holding the same model shard share a colour
 *   TP group   red outline   around the contiguous boxes of one tensor-parallel group
 *   PP group   orange lines  stage 0 -> 1 -> ... -> pp-1, with an arrow at each stage
 *   CP group   teal dashed   member to member over the tops of the boxes (cp > 1 only)
 *   TP × CP    teal bracket  under the boxes of one tensor × context group: the positions of
 *              one micro-batch (cp > 1 only)
 *   EP group   purple dotted member to member over the tops of the boxes (ep > 1 only)
 *   EDP group  lilac dash-dot member to member, higher over the boxes (edp > 1 and ep > 1):
 *              the ranks holding the same experts, which sum those experts' gradients
 *
 * The legend lists exactly the kinds of line the picture draws (viz_groups_layout.drawn):
 * no PP line without pipeline parallelism, no EDP line when every rank holds other experts.
 *
 *   +- node 0 ---------------------------------------------+
 *   | [r0 ][r1 ]  [r2 ][r3 ]  [r4 ][r5 ]  [r6 ][r7 ]        |   [..] = one TP outline
 *   |   \___________________/^                             |   arcs = PP links
 *   +------------------------------------------------------+
 *
 * The geometry is computed first (viz_groups_layout) and drawn second, so tests check
 * positions and colours as numbers and only sample a few pixels of the image.
 *
 * Not here: MPI (this takes a pg_layout, plain numbers) or file formats other than the
 * canvas's .png/.svg/.pdf.
 */
#ifndef TRIDENT_VIZ_GROUPS_DRAW_H
#define TRIDENT_VIZ_GROUPS_DRAW_H

#include "src/runtime/groups.h"
#include "viz/canvas.h"

typedef struct {
    double x, y, w, h;
} viz_rect;

/* The kinds of line or outline (the DP fill is not a line: it is always drawn). */
typedef enum {
    VIZ_GK_TP,
    VIZ_GK_PP,
    VIZ_GK_CP,
    VIZ_GK_TP_CP,
    VIZ_GK_EP,
    VIZ_GK_EDP,
    VIZ_GK_NUM
} viz_groups_key;

typedef struct {
    double width, height;                   /* canvas size in points */
    bool drawn[VIZ_GK_NUM];                 /* which kinds the picture draws and lists */
    int world, ranks_per_node, nodes, cols; /* cols: boxes per row inside a node band */
    viz_rect *node;                         /* (nodes) the band of each node */
    viz_rect *box;                          /* (world) the box of each rank */
    int *dp_group;            /* (world) number of the rank's DP group = its colour index */
    int *cp_group, *ep_group; /* (world) number of the rank's CP / EP group; NULL when 1 */
    int *tp_cp_group;         /* (world) number of the rank's TP × CP group; NULL when cp is 1 */
    double top_gap;           /* height of the channel above each row for CP and EP lines */
    double title_y, legend_y; /* baselines of the title and the first legend row */
} viz_groups_layout;

/* Computes the geometry; ranks_per_node >= 1. Free with viz_groups_layout_free. */
void viz_groups_layout_make(viz_groups_layout *gl, const pg_layout *l, int ranks_per_node);
void viz_groups_layout_free(viz_groups_layout *gl);

/* Fill colour of a DP group's boxes (light tints of the categorical palette). */
viz_rgb viz_groups_fill(int dp_group);
/* Colours of TP outlines and PP lines (the palette's collective and p2p colours). */
viz_rgb viz_groups_tp_color(void);
viz_rgb viz_groups_pp_color(void);
/* Colours of CP, EP and EDP lines (the palette's weight, memory and optimizer colours). */
viz_rgb viz_groups_cp_color(void);
viz_rgb viz_groups_ep_color(void);
viz_rgb viz_groups_edp_color(void);
/* A kind's legend colour and text ("PP group: orange line, stage → next stage ..."). */
viz_rgb viz_groups_key_color(viz_groups_key k);
const char *viz_groups_key_label(viz_groups_key k);

/* Draws the picture to path (.png .svg .pdf, written atomically); dies on a bad path. */
void viz_groups_draw(const char *path, const pg_layout *l, int ranks_per_node);

#endif /* TRIDENT_VIZ_GROUPS_DRAW_H */
