/* analyze_draw.c — the critical path and the bubble's causes drawn (see analyze_draw.h). */
#include "src/analyze/analyze_draw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"

enum { AN_WIDTH = 960 };
#define AN_LEFT 110.0 /* room for "rank 12" and the section names */
#define AN_RIGHT 30.0
#define AN_ROW 18.0
#define AN_GAP 4.0
#define AN_TOP 78.0 /* title, legend */

viz_rgb an_kind_color(cp_kind k) {
    switch (k) {
    case CP_FORWARD: return VIZ_FORWARD;
    case CP_BACKWARD: return VIZ_BACKWARD;
    case CP_WEIGHT: return VIZ_WEIGHT;
    case CP_OPTIMIZER: return VIZ_OPTIMIZER;
    case CP_TRANSFER: return VIZ_P2P;
    case CP_WAIT: return viz_shade(VIZ_COLLECTIVE, 0.45);
    case CP_IDLE: return VIZ_IDLE;
    default: return viz_categorical(5);
    }
}

/* schedule grey (the textbook's part), imbalance pink, communication the transfers' colour,
 * sharing red: none of them a compute kind's colour. */
viz_rgb an_cause_color(int cause) {
    switch (cause) {
    case 0: return viz_categorical(7);
    case 1: return viz_categorical(6);
    case 2: return VIZ_P2P;
    default: return viz_categorical(3);
    }
}

const char *an_cause_name(int cause) {
    static const char *names[AN_NUM_CAUSES] = {"schedule", "imbalance", "communication", "sharing"};
    return cause >= 0 && cause < AN_NUM_CAUSES ? names[cause] : "?";
}

static void path_layout(const step_graph *g, const critical_path *p, an_layout *l) {
    l->nranks = g->tl->nrows;
    l->plot_x = AN_LEFT;
    l->plot_w = AN_WIDTH - AN_LEFT - AN_RIGHT;
    l->path_y = AN_TOP;
    l->row_h = AN_ROW;
    l->seg = callocCheck((size_t)p->n + 1, sizeof *l->seg);
    const double scale = p->total > 0 ? l->plot_w / p->total : 0;
    for (int i = 0; i < p->n; i++) {
        const cp_segment *s = &p->seg[i];
        l->seg[l->nseg++] = (an_rect){.x = l->plot_x + s->start * scale,
                                      .y = l->path_y + s->rank * (AN_ROW + AN_GAP),
                                      .w = (s->end - s->start) * scale,
                                      .h = AN_ROW,
                                      .fill = an_kind_color(s->kind),
                                      .kind = s->kind,
                                      .rank = s->rank};
    }
}

/* One rank's causes: positive ones stacked right of 0, negative ones left of it. */
static void cause_bars(const bc_shares *s, int rank, double y, an_layout *l) {
    const double v[AN_NUM_CAUSES] = {s->schedule, s->imbalance, s->communication, s->sharing};
    double right = l->zero_x, left = l->zero_x;
    for (int c = 0; c < AN_NUM_CAUSES; c++) {
        const double w = fabs(v[c]) * l->per_share;
        if (!(w > 0)) continue;
        double x = v[c] > 0 ? right : left - w;
        if (v[c] > 0) right += w;
        else left -= w;
        l->bar[l->nbar++] = (an_rect){x, y, w, AN_ROW, an_cause_color(c), c, rank};
    }
    l->measured_x[rank] = l->zero_x + s->measured * l->per_share;
}

static void causes_layout(const bubble_causes *bc, an_layout *l) {
    l->measured_x = callocCheck((size_t)l->nranks + 1, sizeof *l->measured_x);
    l->bar = callocCheck((size_t)AN_NUM_CAUSES * (size_t)(bc->nranks + 1), sizeof *l->bar);
    double lo = 0, hi = 0; /* the widest stacks, left and right */
    for (int r = 0; r < bc->nranks; r++) {
        const bc_shares *s = &bc->rank[r];
        const double v[AN_NUM_CAUSES] = {s->schedule, s->imbalance, s->communication, s->sharing};
        double neg = 0, pos = 0;
        for (int c = 0; c < AN_NUM_CAUSES; c++) {
            if (v[c] > 0) pos += v[c];
            else neg += v[c];
        }
        lo = fmin(lo, neg);
        hi = fmax(hi, fmax(pos, s->measured));
    }
    if (!(hi - lo > 0)) hi = lo + 1;
    l->per_share = l->plot_w / (hi - lo);
    l->zero_x = l->plot_x - lo * l->per_share;
    l->causes_y = l->path_y + l->nranks * (AN_ROW + AN_GAP) + 70;
    for (int r = 0; r < bc->nranks && r < l->nranks; r++)
        cause_bars(&bc->rank[r], r, l->causes_y + r * (AN_ROW + AN_GAP), l);
}

void an_layout_compute(const step_graph *g, const critical_path *p, const bubble_causes *bc,
                       an_layout *l) {
    memset(l, 0, sizeof *l);
    l->width = AN_WIDTH;
    path_layout(g, p, l);
    double bottom = l->path_y + l->nranks * (AN_ROW + AN_GAP) + 24;
    if (bc && bc->nranks > 0) {
        causes_layout(bc, l);
        bottom = l->causes_y + l->nranks * (AN_ROW + AN_GAP) + 24;
    }
    l->height = bottom;
}

void an_layout_free(an_layout *l) {
    free(l->seg);
    free(l->bar);
    free(l->measured_x);
    memset(l, 0, sizeof *l);
}

static void legends(cairo_t *cr, const an_layout *l) {
    viz_rgb kc[CP_NUM_KINDS];
    const char *kn[CP_NUM_KINDS];
    for (int k = 0; k < CP_NUM_KINDS; k++) kc[k] = an_kind_color(k), kn[k] = cp_kind_name(k);
    viz_legend(cr, l->plot_x, 52, 10, CP_NUM_KINDS, kc, kn);
    if (l->causes_y <= 0) return;
    viz_rgb cc[AN_NUM_CAUSES];
    const char *cn[AN_NUM_CAUSES];
    for (int c = 0; c < AN_NUM_CAUSES; c++) cc[c] = an_cause_color(c), cn[c] = an_cause_name(c);
    viz_legend(cr, l->plot_x, l->causes_y - 24, 10, AN_NUM_CAUSES, cc, cn);
}

/* Rank labels, the path's segments and a line wherever it hops to another rank. */
static void draw_path(cairo_t *cr, const an_layout *l, double total) {
    viz_text(cr, 8, l->path_y - 8, 11, true, VIZ_LEFT, VIZ_TEXT, "critical path");
    for (int r = 0; r < l->nranks; r++) {
        char name[32];
        snprintf(name, sizeof name, "rank %d", r);
        const double y = l->path_y + r * (AN_ROW + AN_GAP);
        viz_text(cr, l->plot_x - 8, y + AN_ROW - 5, 10, false, VIZ_RIGHT, VIZ_TEXT, name);
        viz_set_rgb(cr, VIZ_GRID);
        viz_line_width(cr, 0.5);
        cairo_rectangle(cr, l->plot_x, y, l->plot_w, AN_ROW);
        cairo_stroke(cr);
    }
    for (int i = 0; i < l->nseg; i++) {
        const an_rect *s = &l->seg[i];
        viz_box(cr, s->x, s->y, s->w, s->h, s->fill);
        if (i > 0 && l->seg[i - 1].rank != s->rank) {
            viz_set_rgb(cr, VIZ_TEXT);
            viz_line_width(cr, 1);
            cairo_move_to(cr, s->x, l->seg[i - 1].y + AN_ROW / 2);
            cairo_line_to(cr, s->x, s->y + AN_ROW / 2);
            cairo_stroke(cr);
        }
    }
    char axis[64];
    snprintf(axis, sizeof axis, "%.3f ms", 1e3 * total);
    const double y = l->path_y + l->nranks * (AN_ROW + AN_GAP) + 10;
    viz_text(cr, l->plot_x, y, 9, false, VIZ_LEFT, VIZ_TEXT, "0");
    viz_text(cr, l->plot_x + l->plot_w, y, 9, false, VIZ_RIGHT, VIZ_TEXT, axis);
}

static void draw_causes(cairo_t *cr, const an_layout *l, const bubble_causes *bc) {
    viz_text(cr, 8, l->causes_y - 44, 11, true, VIZ_LEFT, VIZ_TEXT, "bubble by cause");
    for (int i = 0; i < l->nbar; i++) {
        const an_rect *b = &l->bar[i];
        viz_box(cr, b->x, b->y, b->w, b->h, b->fill);
    }
    for (int r = 0; r < l->nranks; r++) {
        char name[48];
        snprintf(name, sizeof name, "rank %d  %.1f%%", r, 100 * bc->rank[r].measured);
        const double y = l->causes_y + r * (AN_ROW + AN_GAP);
        viz_text(cr, l->plot_x - 8, y + AN_ROW - 5, 10, false, VIZ_RIGHT, VIZ_TEXT, name);
        for (int pass = 0; pass < 2; pass++) { /* a white halo, so it shows on any bar */
            viz_set_rgb(cr, pass == 0 ? (viz_rgb){1, 1, 1} : VIZ_TEXT);
            viz_line_width(cr, pass == 0 ? 4 : 2);
            cairo_move_to(cr, l->measured_x[r], y - 2);
            cairo_line_to(cr, l->measured_x[r], y + AN_ROW + 2);
            cairo_stroke(cr);
        }
    }
    const double bottom = l->causes_y + l->nranks * (AN_ROW + AN_GAP);
    viz_set_rgb(cr, VIZ_TEXT);
    viz_line_width(cr, 0.75);
    cairo_move_to(cr, l->zero_x, l->causes_y - 4);
    cairo_line_to(cr, l->zero_x, bottom);
    cairo_stroke(cr);
    viz_text(cr, l->zero_x, bottom + 10, 9, false, VIZ_CENTER, VIZ_TEXT, "0");
    viz_text(cr, l->plot_x + l->plot_w, bottom + 10, 9, false, VIZ_RIGHT, VIZ_TEXT,
             "shares of the pipeline's span: bars right of 0 add, left of 0 take away; the tick "
             "is the measured bubble");
}

void an_draw(const char *path, const char *title, const step_graph *g, const critical_path *p,
             const bubble_causes *bc) {
    an_layout l;
    an_layout_compute(g, p, bc, &l);
    viz_canvas c;
    viz_canvas_open(&c, path, l.width, l.height);
    viz_text(c.cr, 8, 24, 13, true, VIZ_LEFT, VIZ_TEXT, title);
    legends(c.cr, &l);
    draw_path(c.cr, &l, p->total);
    if (l.causes_y > 0) draw_causes(c.cr, &l, bc);
    viz_canvas_close(&c);
    an_layout_free(&l);
}
