/* groups_draw.c — geometry and drawing of the process-group picture (see groups_draw.h).
 *
 * Page, top to bottom:
 *
 *   title      "Process groups: world 16 = TP 2 × PP 4 × DP 2"
 *   subtitle   rank order, ranks per node, vpp
 *   legend     TP outline, PP line (pp > 1); DP fill colours; CP line and TP × CP bracket,
 *              EP and EDP lines (each only when the picture draws it)
 *   node bands one per node: label column, then rows of `cols` boxes; under every row a
 *              ROW_GAP-high channel where the PP arcs between boxes of that row run (with cp > 1
 *              the TP × CP brackets just under the boxes), and with cp or ep > 1 a
 *              TOP_GAP-high channel above every row for their lines
 */
#include "viz/groups_draw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"

enum { MAX_COLS = 8 };
static const double MARGIN = 24, BOX_W = 124, BOX_H = 54, GAP = 16, ROW_GAP = 64, PAD_TOP = 14,
                    LABEL_W = 78, BAND_GAP = 14, PAD = 10, MIN_WIDTH = 820, TOP_GAP = 40,
                    BOX_H_WIDE = 62; /* room for a third label line: cp, ep, edp */

viz_rgb viz_groups_fill(int dp_group) { return viz_shade(viz_categorical(dp_group), 0.55); }
viz_rgb viz_groups_tp_color(void) { return VIZ_COLLECTIVE; }
viz_rgb viz_groups_pp_color(void) { return VIZ_P2P; }
viz_rgb viz_groups_cp_color(void) { return VIZ_WEIGHT; }
viz_rgb viz_groups_ep_color(void) { return VIZ_MEMORY; }
viz_rgb viz_groups_edp_color(void) { return VIZ_OPTIMIZER; }

viz_rgb viz_groups_key_color(viz_groups_key k) {
    switch (k) {
    case VIZ_GK_TP: return viz_groups_tp_color();
    case VIZ_GK_PP: return viz_groups_pp_color();
    case VIZ_GK_CP: return viz_groups_cp_color();
    case VIZ_GK_TP_CP: return viz_shade(viz_groups_cp_color(), -0.25);
    case VIZ_GK_EP: return viz_groups_ep_color();
    default: return viz_groups_edp_color();
    }
}

const char *viz_groups_key_label(viz_groups_key k) {
    static const char *const labels[VIZ_GK_NUM] = {
        "TP group: red outline (tensor-parallel all-reduce)",
        "PP group: orange line, stage → next stage (activations)",
        "CP group: teal dashed line over the boxes (one sequence, split)",
        "TP × CP group: teal bracket under the boxes",
        "EP group: purple dotted line (expert all-to-all)",
        "EDP group: lilac dash-dot line, higher (same experts: sum their gradients)",
    };
    return labels[k];
}

/* Which kinds of line the picture of l draws: a kind whose groups have one member each has
 * nothing to connect (TP's outline is drawn even around one box: it shows the model shard). */
static void kinds_drawn(viz_groups_layout *gl, const pg_layout *l) {
    gl->drawn[VIZ_GK_TP] = true;
    gl->drawn[VIZ_GK_PP] = l->pp > 1;
    gl->drawn[VIZ_GK_CP] = gl->drawn[VIZ_GK_TP_CP] = l->cp > 1;
    gl->drawn[VIZ_GK_EP] = l->ep > 1;
    gl->drawn[VIZ_GK_EDP] = l->ep > 1 && pg_group_size(l, PG_EDP) > 1;
}

/* Whether the picture shows context or expert parallelism (extra legend row, channel, label). */
static bool wide(const pg_layout *l) { return l->cp > 1 || l->ep > 1; }

void viz_groups_layout_make(viz_groups_layout *gl, const pg_layout *l, int ranks_per_node) {
    CHECK(ranks_per_node >= 1, "ranks per node must be at least 1");
    memset(gl, 0, sizeof *gl);
    gl->world = l->world;
    gl->ranks_per_node = ranks_per_node;
    kinds_drawn(gl, l);
    gl->nodes = (l->world + ranks_per_node - 1) / ranks_per_node;
    gl->cols = ranks_per_node < MAX_COLS ? ranks_per_node : MAX_COLS;
    if (gl->cols > l->world) gl->cols = l->world;
    int in_band = ranks_per_node < l->world ? ranks_per_node : l->world;
    int rows = (in_band + gl->cols - 1) / gl->cols; /* rows of boxes inside one band */
    double row_gap = l->pp > 1 ? ROW_GAP : 16;      /* room for PP arcs only when there are any */
    double box_h = wide(l) ? BOX_H_WIDE : BOX_H;
    gl->top_gap = wide(l) ? TOP_GAP : 0;
    gl->title_y = MARGIN + 18;
    gl->legend_y = MARGIN + 64;
    double top = gl->legend_y + 22 + 30 + (wide(l) ? 22 : 0); /* the CP/EP legend row */
    double band_w = LABEL_W + PAD + gl->cols * (BOX_W + GAP) - GAP + PAD;
    double pitch = gl->top_gap + box_h + row_gap; /* from one row of boxes to the next */
    double band_h = PAD_TOP + rows * pitch;
    gl->node = mallocCheck(sizeof(viz_rect) * (size_t)gl->nodes);
    gl->box = mallocCheck(sizeof(viz_rect) * (size_t)l->world);
    gl->dp_group = mallocCheck(sizeof(int) * (size_t)l->world);
    if (l->cp > 1) gl->cp_group = mallocCheck(sizeof(int) * (size_t)l->world);
    if (l->cp > 1) gl->tp_cp_group = mallocCheck(sizeof(int) * (size_t)l->world);
    if (l->ep > 1) gl->ep_group = mallocCheck(sizeof(int) * (size_t)l->world);
    for (int n = 0; n < gl->nodes; n++)
        gl->node[n] = (viz_rect){MARGIN, top + n * (band_h + BAND_GAP), band_w, band_h};
    for (int r = 0; r < l->world; r++) {
        int n = r / ranks_per_node, k = r % ranks_per_node;
        int row = k / gl->cols, col = k % gl->cols;
        gl->box[r] = (viz_rect){gl->node[n].x + LABEL_W + PAD + col * (BOX_W + GAP),
                                gl->node[n].y + PAD_TOP + gl->top_gap + row * pitch, BOX_W, box_h};
        gl->dp_group[r] = pg_group_of(l, PG_DP, r, NULL, NULL);
        if (gl->cp_group) gl->cp_group[r] = pg_group_of(l, PG_CP, r, NULL, NULL);
        if (gl->tp_cp_group) gl->tp_cp_group[r] = pg_group_of(l, PG_TP_CP, r, NULL, NULL);
        if (gl->ep_group) gl->ep_group[r] = pg_group_of(l, PG_EP, r, NULL, NULL);
    }
    gl->width = fmax(MIN_WIDTH, 2 * MARGIN + band_w);
    gl->height = top + gl->nodes * (band_h + BAND_GAP) - BAND_GAP + MARGIN;
}

void viz_groups_layout_free(viz_groups_layout *gl) {
    free(gl->node);
    free(gl->box);
    free(gl->dp_group);
    free(gl->cp_group);
    free(gl->tp_cp_group);
    free(gl->ep_group);
    memset(gl, 0, sizeof *gl);
}

/* A rectangle with rounded corners as the current path. */
static void rounded_rect(cairo_t *cr, double x, double y, double w, double h, double r) {
    cairo_new_sub_path(cr);
    cairo_arc(cr, x + w - r, y + r, r, -M_PI / 2, 0);
    cairo_arc(cr, x + w - r, y + h - r, r, 0, M_PI / 2);
    cairo_arc(cr, x + r, y + h - r, r, M_PI / 2, M_PI);
    cairo_arc(cr, x + r, y + r, r, M_PI, 3 * M_PI / 2);
    cairo_close_path(cr);
}

/* A small filled triangle at (x, y) pointing up (dir = -1) or down (dir = +1). */
static void arrow_head(cairo_t *cr, double x, double y, double dir) {
    cairo_move_to(cr, x, y);
    cairo_line_to(cr, x - 4.5, y - dir * 8);
    cairo_line_to(cr, x + 4.5, y - dir * 8);
    cairo_close_path(cr);
    cairo_fill(cr);
}

/* One legend row of the drawn kinds among [lo, hi). */
static void legend_row(cairo_t *cr, const viz_groups_layout *gl, double y, viz_groups_key lo,
                       viz_groups_key hi) {
    viz_rgb colors[VIZ_GK_NUM];
    const char *labels[VIZ_GK_NUM];
    int n = 0;
    for (int k = lo; k < (int)hi; k++)
        if (gl->drawn[k]) {
            colors[n] = viz_groups_key_color((viz_groups_key)k);
            labels[n++] = viz_groups_key_label((viz_groups_key)k);
        }
    if (n) viz_legend(cr, MARGIN, y, 11, n, colors, labels);
}

static void draw_legend(cairo_t *cr, const viz_groups_layout *gl, const pg_layout *l) {
    legend_row(cr, gl, gl->legend_y, VIZ_GK_TP, VIZ_GK_CP);
    if (wide(l)) legend_row(cr, gl, gl->legend_y + 44, VIZ_GK_CP, VIZ_GK_NUM); /* below DP's */

    int ndp = pg_num_groups(l, PG_DP), shown = ndp < 8 ? ndp : 8;
    viz_text(cr, MARGIN, gl->legend_y + 22, 11, true, VIZ_LEFT, VIZ_TEXT, "DP groups (fill):");
    double x = MARGIN + viz_text_width(cr, 11, true, "DP groups (fill):") + 10;
    int *m = mallocCheck(sizeof(int) * (size_t)l->dp);
    char labels[8][64];
    const char *lp[8];
    viz_rgb colors[8];
    for (int i = 0; i < shown; i++) {
        pg_group_members(l, PG_DP, i, m);
        if (l->dp <= 4) {
            int len = snprintf(labels[i], sizeof labels[i], "[");
            for (int j = 0; j < l->dp; j++)
                len += snprintf(labels[i] + len, sizeof labels[i] - (size_t)len, "%s%d",
                                j ? "," : "", m[j]);
            snprintf(labels[i] + len, sizeof labels[i] - (size_t)len, "]");
        } else {
            snprintf(labels[i], sizeof labels[i], "dp group %d", i);
        }
        lp[i] = labels[i];
        colors[i] = viz_groups_fill(i);
    }
    double w = viz_legend(cr, x, gl->legend_y + 22, 11, shown, colors, lp);
    if (ndp > shown) {
        char more[64];
        snprintf(more, sizeof more, "… colours repeat every 8 (%d groups)", ndp);
        viz_text(cr, x + w + 8, gl->legend_y + 22, 11, false, VIZ_LEFT, VIZ_TEXT, more);
    }
    free(m);
}

static void draw_boxes(cairo_t *cr, const viz_groups_layout *gl, const pg_layout *l) {
    char s[96];
    for (int n = 0; n < gl->nodes; n++) {
        viz_rect b = gl->node[n];
        viz_set_rgb(cr, viz_shade(VIZ_IDLE, 0.4));
        rounded_rect(cr, b.x, b.y, b.w, b.h, 8);
        cairo_fill_preserve(cr);
        viz_set_rgb(cr, VIZ_GRID);
        viz_line_width(cr, 1);
        cairo_stroke(cr);
        snprintf(s, sizeof s, "node %d", n);
        viz_text(cr, b.x + 12, b.y + PAD_TOP + 20, 13, true, VIZ_LEFT, VIZ_TEXT, s);
        int lo = n * gl->ranks_per_node, hi = lo + gl->ranks_per_node - 1;
        if (hi >= gl->world) hi = gl->world - 1;
        snprintf(s, sizeof s, "ranks %d–%d", lo, hi);
        viz_text(cr, b.x + 12, b.y + PAD_TOP + 36, 9.5, false, VIZ_LEFT, VIZ_TEXT, s);
    }
    for (int r = 0; r < gl->world; r++) {
        viz_rect b = gl->box[r];
        pg_coord c = pg_coord_of(l, r);
        viz_box(cr, b.x, b.y, b.w, b.h, viz_groups_fill(gl->dp_group[r]));
        const double y0 = wide(l) ? -2 : 0; /* a wide box has a third line */
        snprintf(s, sizeof s, "rank %d", r);
        viz_text(cr, b.x + b.w / 2, b.y + y0 + 22, 13, true, VIZ_CENTER, VIZ_TEXT, s);
        snprintf(s, sizeof s, "tp %d · pp %d · dp %d", c.tp, c.pp, c.dp);
        viz_text(cr, b.x + b.w / 2, b.y + y0 + 40, 10, false, VIZ_CENTER, VIZ_TEXT, s);
        if (wide(l)) {
            snprintf(s, sizeof s, "cp %d · ep %d · edp %d", c.cp, c.ep, c.edp);
            viz_text(cr, b.x + b.w / 2, b.y + y0 + 54, 10, false, VIZ_CENTER, VIZ_TEXT, s);
        }
    }
}

/* The end of the run of members m[start..) whose boxes share a row (one past its last). */
static int row_run_end(const viz_groups_layout *gl, const int *m, int size, int start) {
    int end = start + 1;
    while (end < size && gl->box[m[end]].y == gl->box[m[start]].y) end++;
    return end;
}

/* One outline per run of a TP group's boxes that share a row. */
static void draw_tp_outlines(cairo_t *cr, const viz_groups_layout *gl, const pg_layout *l) {
    int *m = mallocCheck(sizeof(int) * (size_t)l->tp);
    viz_set_rgb(cr, viz_groups_tp_color());
    viz_line_width(cr, 2.2);
    for (int g = 0; g < pg_num_groups(l, PG_TP); g++) {
        pg_group_members(l, PG_TP, g, m);
        for (int start = 0, end; start < l->tp; start = end) {
            end = row_run_end(gl, m, l->tp, start);
            viz_rect a = gl->box[m[start]], b = gl->box[m[end - 1]];
            rounded_rect(cr, a.x - 5, a.y - 5, b.x + b.w - a.x + 10, a.h + 10, 6);
            cairo_stroke(cr);
        }
    }
    free(m);
}

/* PP links: stage s -> s+1. Within a row the link dips into the channel under the row;
 * to a later row it runs from the bottom of one box to the top of the next. */
static void draw_pp_links(cairo_t *cr, const viz_groups_layout *gl, const pg_layout *l) {
    if (!gl->drawn[VIZ_GK_PP]) return;
    int *m = mallocCheck(sizeof(int) * (size_t)l->pp);
    viz_line_width(cr, 1.8);
    for (int g = 0; g < pg_num_groups(l, PG_PP); g++) {
        pg_group_members(l, PG_PP, g, m);
        /* Neighbouring groups get different depths and shades so each line can be followed. */
        static const double shade[4] = {-0.35, 0.0, -0.15, 0.2};
        viz_set_rgb(cr, viz_shade(viz_groups_pp_color(), shade[g % 4]));
        double depth = 18 + 13 * (g % 4);
        for (int s = 0; s + 1 < l->pp; s++) {
            viz_rect a = gl->box[m[s]], b = gl->box[m[s + 1]];
            double sx = a.x + a.w / 2 + 10, sy = a.y + a.h + 5, ex = b.x + b.w / 2 - 10;
            cairo_arc(cr, sx, sy, 2.5, 0, 2 * M_PI); /* the sending end */
            cairo_fill(cr);
            if (a.y == b.y) {
                double ey = b.y + b.h;
                cairo_move_to(cr, sx, sy);
                cairo_curve_to(cr, sx, sy + depth, ex, ey + depth, ex, ey + 6);
                cairo_stroke(cr);
                arrow_head(cr, ex, ey + 5, -1);
            } else {
                double ey = b.y;
                cairo_move_to(cr, sx, sy);
                cairo_curve_to(cr, sx, sy + 40, ex, ey - 40, ex, ey - 6);
                cairo_stroke(cr);
                arrow_head(cr, ex, ey - 5, +1);
            }
        }
    }
    free(m);
}

/* TP × CP groups: one bracket per run of a group's boxes that share a row, just under them
 * (below the TP outline, above where the PP arcs dip). */
static void draw_tp_cp_brackets(cairo_t *cr, const viz_groups_layout *gl, const pg_layout *l) {
    if (!gl->drawn[VIZ_GK_TP_CP]) return;
    const int size = pg_group_size(l, PG_TP_CP);
    int *m = mallocCheck(sizeof(int) * (size_t)size);
    viz_set_rgb(cr, viz_shade(viz_groups_cp_color(), -0.25));
    viz_line_width(cr, 1.6);
    for (int g = 0; g < pg_num_groups(l, PG_TP_CP); g++) {
        pg_group_members(l, PG_TP_CP, g, m);
        for (int start = 0, end; start < size; start = end) {
            end = row_run_end(gl, m, size, start);
            viz_rect a = gl->box[m[start]], b = gl->box[m[end - 1]];
            const double y = a.y + a.h + 10;
            cairo_move_to(cr, a.x, y - 4);
            cairo_line_to(cr, a.x, y);
            cairo_line_to(cr, b.x + b.w, y);
            cairo_line_to(cr, b.x + b.w, y - 4);
            cairo_stroke(cr);
        }
    }
    free(m);
}

/* CP, EP or EDP links: member to member, over the tops of the boxes, in the channel above
 * the row. `dx` shifts a kind's line ends off the box centre so the kinds' lines stay apart,
 * `rise` lifts a kind's curves (EDP's span more boxes: they go higher); dash tells them apart
 * without colour. */
static void draw_span_links(cairo_t *cr, const viz_groups_layout *gl, const pg_layout *l,
                            pg_kind kind, viz_rgb color, double dx, double rise, const double *dash,
                            int ndash) {
    int size = pg_group_size(l, kind);
    int *m = mallocCheck(sizeof(int) * (size_t)size);
    viz_line_width(cr, 1.8);
    for (int g = 0; g < pg_num_groups(l, kind); g++) {
        pg_group_members(l, kind, g, m);
        static const double shade[3] = {-0.25, 0.0, 0.2};
        viz_set_rgb(cr, viz_shade(color, shade[g % 3]));
        double depth = rise + 8 * (g % 3); /* the curve rises about 3/4 of it */
        for (int i = 0; i < size; i++) {
            viz_rect a = gl->box[m[i]];
            cairo_arc(cr, a.x + a.w / 2 + dx, a.y - 8, 2.5, 0, 2 * M_PI); /* a member */
            cairo_fill(cr);
            if (i + 1 == size) break;
            viz_rect b = gl->box[m[i + 1]];
            /* ends just above the TP outline (5 points out from the box) */
            double sx = a.x + a.w / 2 + dx, sy = a.y - 8, ex = b.x + b.w / 2 + dx, ey = b.y - 8;
            cairo_set_dash(cr, dash, ndash, 0);
            cairo_move_to(cr, sx, sy);
            cairo_curve_to(cr, sx, sy - depth, ex, ey - depth, ex, ey);
            cairo_stroke(cr);
            cairo_set_dash(cr, NULL, 0, 0);
        }
    }
    free(m);
}

void viz_groups_draw(const char *path, const pg_layout *l, int ranks_per_node) {
    viz_groups_layout gl;
    viz_groups_layout_make(&gl, l, ranks_per_node);
    viz_canvas c;
    viz_canvas_open(&c, path, gl.width, gl.height);
    cairo_t *cr = c.cr;
    char s[256];
    char cp[32] = "", ep[48] = "";
    if (l->cp > 1) snprintf(cp, sizeof cp, " × CP %d", l->cp);
    if (l->ep > 1) snprintf(ep, sizeof ep, " (EP %d × EDP %d)", l->ep, l->edp);
    snprintf(s, sizeof s, "Process groups: world %d = TP %d%s × PP %d × DP %d%s", l->world, l->tp,
             cp, l->pp, l->dp, ep);
    viz_text(cr, MARGIN, gl.title_y, 17, true, VIZ_LEFT, VIZ_TEXT, s);
    const bool dp_first = l->order == PG_ORDER_TP_DP_PP;
    if (wide(l))
        snprintf(s, sizeof s,
                 "rank order %s (rank = tp + TP·(cp + CP·(%s)), dp = ep + EP·edp), %d ranks per "
                 "node, virtual pipeline size %d",
                 pg_layout_order_name(l), dp_first ? "dp + DP·pp" : "pp + PP·dp", ranks_per_node,
                 l->vpp);
    else
        snprintf(s, sizeof s,
                 "rank order %s (rank = tp + TP·(%s)), %d ranks per node, virtual pipeline size %d",
                 pg_layout_order_name(l), dp_first ? "dp + DP·pp" : "pp + PP·dp", ranks_per_node,
                 l->vpp);
    viz_text(cr, MARGIN, gl.title_y + 20, 11, false, VIZ_LEFT, VIZ_TEXT, s);
    draw_legend(cr, &gl, l);
    draw_boxes(cr, &gl, l);
    draw_tp_outlines(cr, &gl, l);
    draw_tp_cp_brackets(cr, &gl, l);
    draw_pp_links(cr, &gl, l);
    static const double cp_dash[2] = {6, 3}, ep_dash[2] = {1.5, 3}, edp_dash[4] = {7, 3, 1.5, 3};
    if (gl.drawn[VIZ_GK_CP])
        draw_span_links(cr, &gl, l, PG_CP, viz_groups_cp_color(), -16, 14, cp_dash, 2);
    if (gl.drawn[VIZ_GK_EP])
        draw_span_links(cr, &gl, l, PG_EP, viz_groups_ep_color(), 16, 14, ep_dash, 2);
    if (gl.drawn[VIZ_GK_EDP])
        draw_span_links(cr, &gl, l, PG_EDP, viz_groups_edp_color(), 0, 30, edp_dash, 4);
    viz_canvas_close(&c);
    viz_groups_layout_free(&gl);
}
