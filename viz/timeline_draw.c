/* timeline_draw.c — Cairo painting of a computed timeline layout (see timeline_draw.h). */
#include "viz/timeline_draw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz/build.h"
#include "viz/timeline_layout.h"
#include "viz/timeline_overlay.h"

static const viz_rgb DATA_RGB = {0.55, 0.36, 0.30}, EVAL_RGB = {0.50, 0.50, 0.50};
/* The messages of MoE and context parallelism: dark enough for white byte counts, and of hues
 * no other kind uses (goldenrod, magenta). */
static const viz_rgb ALL_TO_ALL_RGB = {0.62, 0.47, 0.02}, RING_RGB = {0.78, 0.16, 0.55};
static const viz_rgb MUTED = {0.40, 0.40, 0.44};
/* The time classes in the compute lane (viz/timeline.h): a transfer is solid slate, a wait is
 * pale and hatched, idle is left blank. */
const viz_rgb VIZ_TL_TRANSFER_RGB = {0.33, 0.35, 0.42};
const viz_rgb VIZ_TL_WAIT_RGB = {0.98, 0.91, 0.86};
static const viz_rgb WAIT_INK = {0.84, 0.42, 0.30};
/* The overlays (viz_tl_overlay): the critical path's outlines and hops in black (grey-scale
 * safe, and no kind's colour); the ideal boxes in their kind's colour, this much lighter. */
const viz_rgb VIZ_TL_PATH_RGB = {0, 0, 0};
const double VIZ_TL_IDEAL_LIGHTEN = 0.6;

/* The wait pattern: pale fill, sparse hatching. */
static void wait_fill(cairo_t *cr, double x, double y, double w, double h) {
    cairo_rectangle(cr, x, y, w, h);
    viz_set_rgb(cr, VIZ_TL_WAIT_RGB);
    cairo_fill(cr);
    viz_hatch(cr, x, y, w, h, WAIT_INK, 5);
}

viz_rgb viz_tl_box_color(viz_tl_kind kind, int chunk) {
    viz_rgb c;
    switch (kind) {
    case VIZ_TL_FORWARD: c = VIZ_FORWARD; break;
    case VIZ_TL_BACKWARD: c = VIZ_BACKWARD; break;
    case VIZ_TL_WEIGHT: c = VIZ_WEIGHT; break;
    case VIZ_TL_OPTIMIZER: c = VIZ_OPTIMIZER; break;
    case VIZ_TL_SEND:
    case VIZ_TL_RECV: c = VIZ_P2P; break;
    case VIZ_TL_COLLECTIVE: c = VIZ_COLLECTIVE; break;
    case VIZ_TL_DATA: c = DATA_RGB; break;
    case VIZ_TL_ALL_TO_ALL: c = ALL_TO_ALL_RGB; break;
    case VIZ_TL_RING: c = RING_RGB; break;
    default: c = EVAL_RGB; break;
    }
    if (chunk >= 2) c = viz_shade(c, -0.22 * (chunk / 2 > 2 ? 2 : chunk / 2));
    return c;
}

bool viz_tl_chunk_hatched(int chunk) { return chunk >= 0 && chunk % 2 == 1; }

static void draw_phases(cairo_t *cr, const viz_tl_row_layout *R) {
    if (!R->has_phases) return;
    const struct {
        double x0, x1;
        viz_rgb c;
        const char *name;
    } ph[3] = {
        {R->warmup_x0, R->warmup_x1, viz_shade(VIZ_FORWARD, 0.72), "warmup"},
        {R->steady_x0, R->steady_x1, viz_shade(VIZ_GRID, 0.45), "steady"},
        {R->cooldown_x0, R->cooldown_x1, viz_shade(VIZ_BACKWARD, 0.70), "cooldown"},
    };
    for (int i = 0; i < 3; i++) {
        double w = ph[i].x1 - ph[i].x0;
        if (w <= 0.5) continue;
        cairo_rectangle(cr, ph[i].x0, R->phase_y + 1, w, VIZ_TL_PHASE_H - 2);
        viz_set_rgb(cr, ph[i].c);
        cairo_fill(cr);
        if (viz_text_width(cr, 6.5, false, ph[i].name) + 4 <= w)
            viz_text(cr, ph[i].x0 + w / 2, R->phase_y + VIZ_TL_PHASE_H - 2, 6.5, false, VIZ_CENTER,
                     MUTED, ph[i].name);
    }
}

/* Whether the timeline's rows were recorded on more than one host (trace headers, v4). */
static bool spans_hosts(const viz_timeline *tl) {
    for (int k = 1; k < tl->world_size; k++)
        if (strcmp(tl->rows[k].host, tl->rows[0].host) != 0) return true;
    return false;
}

/* The row's names on the left (rank; its tp, cp, dp coordinates; its host and clock when the
 * run spans hosts; the stream lane) and its time-class shares on the right. */
static void draw_row_labels(cairo_t *cr, const viz_tl_layout *L, const viz_tl_panel_layout *P,
                            const viz_tl_row_layout *R) {
    const viz_tl_row *row = &P->tl->rows[R->rank];
    char buf[64];
    snprintf(buf, sizeof buf, "rank %d", row->rank);
    const double ts = viz_theme_current()->text_scale, mid = R->lane_y + R->lane_h / 2;
    viz_text(cr, L->plot_x - 8, mid + 3 * ts, 10.5, true, VIZ_RIGHT, VIZ_TEXT, buf);
    const int cp = P->tl->cp;
    if (cp > 1)
        snprintf(buf, sizeof buf, "tp %d · cp %d · dp %d", row->tp_rank, row->dp_rank % cp,
                 row->dp_rank / cp);
    else snprintf(buf, sizeof buf, "tp %d · dp %d", row->tp_rank, row->dp_rank);
    viz_text(cr, L->plot_x - 8, R->comm_y + R->comm_h / 2 + 2.7 * ts, 7.5, false, VIZ_RIGHT, MUTED,
             buf);
    if (spans_hosts(P->tl)) {   /* the row's host, and how well its clock is aligned */
        if (row->clock_unc > 0) /* wall clock: its offset's error bar (0: rank 0's clock) */
            snprintf(buf, sizeof buf, "%s · clock ± %.0f us", row->host, 1e6 * row->clock_unc);
        else snprintf(buf, sizeof buf, "%s", row->host);
        viz_text(cr, L->plot_x - 8, R->phase_y + 7 * ts, 7, false, VIZ_RIGHT, MUTED, buf);
    }
    if (R->stream_h > 0)
        viz_text(cr, L->plot_x - 8, R->stream_y + R->stream_h / 2 + 2.5 * ts, 7, false, VIZ_RIGHT,
                 MUTED, "comm stream");
    double xr = L->plot_x + L->plot_w + 8;
    viz_text(cr, xr, mid - 2 * ts, 8, false, VIZ_LEFT, VIZ_TEXT, R->share_text[0]);
    viz_text(cr, xr, mid + 8 * ts, 8, false, VIZ_LEFT, VIZ_TEXT, R->share_text[1]);
}

/* Idle is blank: a thin baseline marks the lane so an empty row still reads as a row. */
static void draw_lane_baseline(cairo_t *cr, const viz_tl_layout *L, const viz_tl_panel_layout *P,
                               const viz_tl_row_layout *R) {
    cairo_set_line_width(cr, 0.5);
    viz_set_rgb(cr, viz_shade(VIZ_GRID, 0.2));
    cairo_move_to(cr, L->plot_x, R->lane_y + R->lane_h - 0.25);
    cairo_line_to(cr, viz_tl_x(L, P->t_end), R->lane_y + R->lane_h - 0.25);
    cairo_stroke(cr);
}

/* Every box on its lane: compute on the compute lane (odd chunks hatched), messages on the
 * comm lane, overlapped collectives on the stream lane; a message's wait before its transfer
 * hatched. */
static void draw_boxes(cairo_t *cr, const viz_tl_row *row, const viz_tl_row_layout *R) {
    for (int i = 0; i < row->nboxes; i++) {
        const viz_tl_box *b = &row->boxes[i];
        const viz_tl_box_layout *B = &R->boxes[i];
        if (B->hidden) continue; /* outside the window */
        viz_rgb fill = viz_tl_box_color(b->kind, b->chunk);
        double w = B->w < 1 ? 1 : B->w;
        if (b->stream) { /* overlapped: on its own lane, under the compute it hides behind;
                          * waiting for the other members hatched, as on the comm lane */
            double wait = B->x_ready - B->x, tw = B->x + B->w - B->x_ready;
            if (wait > 0.2) wait_fill(cr, B->x, R->stream_y + 1, wait, R->stream_h - 2);
            viz_box(cr, B->x_ready, R->stream_y + 1, tw < 1 ? 1 : tw, R->stream_h - 2, fill);
        } else if (!viz_tl_is_comm(b->kind)) {
            viz_box(cr, B->x, R->lane_y, w, R->lane_h, fill);
            if (viz_tl_chunk_hatched(b->chunk))
                viz_hatch(cr, B->x, R->lane_y, w, R->lane_h, viz_shade(fill, -0.45), 4);
        } else {
            double wait = B->x_ready - B->x;
            if (wait > 0.2) wait_fill(cr, B->x, R->comm_y + 1, wait, R->comm_h - 2);
            double tw = B->x + B->w - B->x_ready;
            viz_box(cr, B->x_ready, R->comm_y + 1, tw < 1 ? 1 : tw, R->comm_h - 2, fill);
        }
    }
}

/* The lane shows the rank's time classes: where a message waits or transfers, even inside a
 * compute box, that time is not compute and is painted over (wait hatched, transfer solid). */
static void draw_time_classes(cairo_t *cr, const viz_tl_row_layout *R) {
    for (int i = 0; i < R->nseg; i++) {
        double x = R->seg_x[i], sw = R->seg_w[i] < 0.6 ? 0.6 : R->seg_w[i];
        if (R->seg_cls[i] == VIZ_TC_WAIT) wait_fill(cr, x, R->lane_y + 0.5, sw, R->lane_h - 1);
        else if (R->seg_cls[i] == VIZ_TC_TRANSFER) {
            cairo_rectangle(cr, x, R->lane_y + 0.5, sw, R->lane_h - 1);
            viz_set_rgb(cr, VIZ_TL_TRANSFER_RGB);
            cairo_fill(cr);
        }
    }
}

/* Each compute box keeps its outline in its kind's colour, so a span that was mostly messages
 * still says whose it was (a forward, the optimizer). */
static void draw_box_outlines(cairo_t *cr, const viz_tl_row *row, const viz_tl_row_layout *R) {
    cairo_set_line_width(cr, 1.4);
    for (int i = 0; i < row->nboxes; i++) {
        const viz_tl_box *b = &row->boxes[i];
        const viz_tl_box_layout *B = &R->boxes[i];
        if (B->hidden || viz_tl_is_comm(b->kind) || B->w < 3) continue;
        cairo_rectangle(cr, B->x + 0.7, R->lane_y + 0.7, B->w - 1.4, R->lane_h - 1.4);
        viz_set_rgb(cr, viz_tl_box_color(b->kind, b->chunk));
        cairo_stroke(cr);
    }
}

/* Labels on top: a compute box's micro-batch, a message's byte count on its own lane. */
static void draw_box_labels(cairo_t *cr, const viz_tl_row *row, const viz_tl_row_layout *R) {
    const double ts = viz_theme_current()->text_scale;
    const bool patterned = viz_theme_current()->patterns; /* the slides' patterned messages */
    for (int i = 0; i < row->nboxes; i++) {
        const viz_tl_box *b = &row->boxes[i];
        const viz_tl_box_layout *B = &R->boxes[i];
        if (!B->label_shown) continue;
        const viz_rgb fill = viz_tl_box_color(b->kind, b->chunk);
        if (viz_tl_is_comm(b->kind)) /* a byte count, on the box's own lane */
            viz_text_on_fill(cr, B->label_x,
                             (b->stream ? R->stream_y : R->comm_y) + R->comm_h / 2 + 2.3 * ts,
                             VIZ_TL_BYTES_SIZE, false, VIZ_CENTER, fill, patterned, B->label);
        else /* on a plate of the box's colour: hatching, wait or transfer may lie under it */
            viz_text_on_fill(cr, B->label_x, R->lane_y + R->lane_h / 2 + 4 * ts, VIZ_TL_LABEL_SIZE,
                             true, VIZ_CENTER, fill, true, B->label);
    }
}

/* Memory: a step curve scaled to the panel's peak, with this rank's peak (of the whole step)
 * at the right. In a window the curve is cut at the window's edges. */
static void draw_memory(cairo_t *cr, const viz_tl_layout *L, const viz_tl_panel_layout *P,
                        const viz_tl_row_layout *R) {
    const viz_tl_row *row = &P->tl->rows[R->rank];
    if (!(R->mem_h > 0 && row->nmem > 0 && P->mem_max > 0)) return;
    double base = R->mem_y + R->mem_h - 3, top = R->mem_y + 2, span = base - top;
    double x_end = viz_tl_x(L, P->t_end);
    if (L->windowed) {
        cairo_save(cr);
        cairo_rectangle(cr, L->plot_x, R->mem_y, x_end - L->plot_x, R->mem_h);
        cairo_clip(cr);
    }
    cairo_move_to(cr, viz_tl_x(L, row->mem[0].t), base);
    double prev_y = base;
    for (int i = 0; i < row->nmem; i++) {
        double x = viz_tl_x(L, row->mem[i].t);
        double y = base - span * row->mem[i].bytes / P->mem_max;
        cairo_line_to(cr, x, prev_y);
        cairo_line_to(cr, x, y);
        prev_y = y;
    }
    cairo_line_to(cr, x_end, prev_y);
    cairo_line_to(cr, x_end, base);
    cairo_close_path(cr);
    viz_set_rgb(cr, viz_shade(VIZ_MEMORY, 0.78));
    cairo_fill_preserve(cr);
    viz_set_rgb(cr, VIZ_MEMORY);
    cairo_set_line_width(cr, 0.9);
    cairo_stroke(cr);
    if (L->windowed) cairo_restore(cr);
    double xr = L->plot_x + L->plot_w + 8;
    viz_text(cr, xr, R->mem_y + R->mem_h - 5, 8.5, false, VIZ_LEFT, VIZ_MEMORY, R->mem_text);
}

/* The ideal row under the compute lane (--ideal): "ideal" at the left, the plan's boxes pale
 * and outlined in their kind's colour, odd chunks hatched lightly, micro-batches where they
 * fit. */
static void draw_ideal_row(cairo_t *cr, const viz_tl_layout *L, const viz_tl_panel_layout *P,
                           const viz_tl_row_layout *R) {
    if (!(R->ideal_h > 0 && R->ideal_boxes)) return;
    const double ts = viz_theme_current()->text_scale, y = R->ideal_y, h = R->ideal_h;
    viz_text(cr, L->plot_x - 8, y + h / 2 + 2.7 * ts, 7.5, true, VIZ_RIGHT, MUTED, "ideal");
    cairo_set_line_width(cr, 0.5);
    viz_set_rgb(cr, viz_shade(VIZ_GRID, 0.2));
    cairo_move_to(cr, L->plot_x, y + h - 0.25);
    cairo_line_to(cr, viz_tl_x(L, P->t_end), y + h - 0.25);
    cairo_stroke(cr);
    const viz_tl_row *row = &P->overlay->ideal->rows[R->rank];
    for (int i = 0; i < row->nboxes; i++) {
        const viz_tl_box *b = &row->boxes[i];
        const viz_tl_box_layout *B = &R->ideal_boxes[i];
        if (B->hidden) continue;
        const viz_rgb ink = viz_tl_box_color(b->kind, b->chunk);
        const viz_rgb fill = viz_shade(ink, VIZ_TL_IDEAL_LIGHTEN);
        const double w = B->w < 1 ? 1 : B->w;
        viz_box_pale(cr, B->x, y, w, h, ink, VIZ_TL_IDEAL_LIGHTEN);
        if (viz_tl_chunk_hatched(b->chunk)) viz_hatch(cr, B->x, y, w, h, viz_shade(ink, 0.3), 4);
        if (B->label_shown)
            viz_text_on_fill(cr, B->label_x, y + h / 2 + 2.5 * ts, VIZ_TL_IDEAL_LABEL_SIZE, false,
                             VIZ_CENTER, fill, true, B->label); /* on a plate: patterns */
    }
}

/* One row, back to front: labels, phase strip, baseline, boxes, time classes painted over,
 * outlines, labels, memory curve, the ideal row. */
static void draw_row(cairo_t *cr, const viz_tl_layout *L, const viz_tl_panel_layout *P,
                     const viz_tl_row_layout *R) {
    const viz_tl_row *row = &P->tl->rows[R->rank];
    draw_row_labels(cr, L, P, R);
    draw_phases(cr, R);
    draw_lane_baseline(cr, L, P, R);
    draw_boxes(cr, row, R);
    draw_time_classes(cr, R);
    draw_box_outlines(cr, row, R);
    draw_box_labels(cr, row, R);
    draw_memory(cr, L, P, R);
    draw_ideal_row(cr, L, P, R);
}

/* An arrow from (x1, y1) to (x2, y2) in the current source colour, `width` thick. */
static void draw_arrow_in(cairo_t *cr, const viz_tl_arrow *a, double width) {
    double dx = a->x2 - a->x1, dy = a->y2 - a->y1, len = sqrt(dx * dx + dy * dy);
    if (len < 1) return;
    cairo_set_line_width(cr, width);
    cairo_move_to(cr, a->x1, a->y1);
    cairo_line_to(cr, a->x2, a->y2);
    cairo_stroke(cr);
    double ux = dx / len, uy = dy / len, s = 4 + width;
    cairo_move_to(cr, a->x2, a->y2);
    cairo_line_to(cr, a->x2 - s * ux - 0.5 * s * uy, a->y2 - s * uy + 0.5 * s * ux);
    cairo_line_to(cr, a->x2 - s * ux + 0.5 * s * uy, a->y2 - s * uy - 0.5 * s * ux);
    cairo_close_path(cr);
    cairo_fill(cr);
}

static void draw_arrow(cairo_t *cr, const viz_tl_arrow *a) {
    cairo_set_source_rgba(cr, 0.15, 0.15, 0.2, 0.55);
    draw_arrow_in(cr, a, 0.8);
}

/* The critical path (--critical-path): a bold outline around each segment on its compute
 * lane (untraced time and the lead-in: a bold line under the lane), and its hops. */
static void draw_path(cairo_t *cr, const viz_tl_panel_layout *P) {
    const double lw = 2.4 * viz_theme_current()->line_scale;
    viz_set_rgb(cr, VIZ_TL_PATH_RGB);
    for (int i = 0; i < P->npath; i++) {
        const viz_tl_path_rect *r = &P->path[i];
        if (r->hidden || r->w <= 0) continue;
        cairo_set_line_width(cr, lw);
        if (r->idle) {
            const double dash = 3;
            cairo_set_dash(cr, &dash, 1, 0);
            cairo_move_to(cr, r->x, r->y + r->h - lw / 2);
            cairo_line_to(cr, r->x + r->w, r->y + r->h - lw / 2);
            cairo_stroke(cr);
            cairo_set_dash(cr, NULL, 0, 0);
        } else { /* top, bottom, and the sides that are the segment's own ends */
            const double x0 = r->x + lw / 2, x1 = r->x + fmax(r->w - lw / 2, lw / 2 + 0.5);
            const double y0 = r->y + lw / 2, y1 = r->y + r->h - lw / 2;
            const double xa = r->cut_left ? r->x : x0, xb = r->cut_right ? r->x + r->w : x1;
            cairo_move_to(cr, xa, y0);
            cairo_line_to(cr, xb, y0);
            cairo_move_to(cr, xa, y1);
            cairo_line_to(cr, xb, y1);
            if (!r->cut_left) cairo_move_to(cr, x0, y0), cairo_line_to(cr, x0, y1);
            if (!r->cut_right) cairo_move_to(cr, x1, y0), cairo_line_to(cr, x1, y1);
            cairo_stroke(cr);
        }
    }
    for (int i = 0; i < P->nhops; i++) draw_arrow_in(cr, &P->hops[i], lw * 0.7);
}

static void draw_axis(cairo_t *cr, const viz_tl_layout *L, const viz_tl_panel_layout *P) {
    double x_end = viz_tl_x(L, P->t_end);
    viz_set_rgb(cr, VIZ_TEXT);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, L->plot_x, P->axis_y + 0.5);
    cairo_line_to(cr, x_end, P->axis_y + 0.5);
    cairo_stroke(cr);
    char buf[32];
    for (int i = P->tick_first; i <= P->tick_last; i++) {
        double x = floor(viz_tl_x(L, i * L->tick_s)) + 0.5;
        viz_set_rgb(cr, VIZ_TEXT);
        cairo_move_to(cr, x, P->axis_y);
        cairo_line_to(cr, x, P->axis_y + 4);
        cairo_stroke(cr);
        snprintf(buf, sizeof buf, "%g", i * L->tick_s * 1e3);
        viz_text(cr, x, P->axis_y + 14, 8.5, false, VIZ_CENTER, VIZ_TEXT, buf);
    }
    viz_text(cr, x_end, P->axis_y + 24, 8.5, false, VIZ_RIGHT, MUTED, "time (ms)");
}

static void draw_grid(cairo_t *cr, const viz_tl_layout *L, const viz_tl_panel_layout *P) {
    cairo_set_line_width(cr, 0.5);
    viz_set_rgb(cr, viz_shade(VIZ_GRID, 0.5));
    for (int i = P->tick_first; i <= P->tick_last; i++) {
        double x = floor(viz_tl_x(L, i * L->tick_s)) + 0.5;
        cairo_move_to(cr, x, P->rows_top);
        cairo_line_to(cr, x, P->axis_y);
    }
    cairo_stroke(cr);
}

static void draw_stages(cairo_t *cr, const viz_tl_panel_layout *P) {
    char buf[32];
    for (int s = 0; s < P->nstages; s++) {
        if (P->stage_y1[s] <= P->stage_y0[s]) continue;
        snprintf(buf, sizeof buf, "stage %d", s);
        viz_text(cr, 12, (P->stage_y0[s] + P->stage_y1[s]) / 2 + 4, 10, true, VIZ_LEFT, MUTED, buf);
        viz_set_rgb(cr, VIZ_GRID);
        cairo_set_line_width(cr, 1.5);
        const double bar_x = 66 * viz_theme_current()->text_scale; /* right of the name */
        cairo_move_to(cr, bar_x, P->stage_y0[s] + 2);
        cairo_line_to(cr, bar_x, P->stage_y1[s] - 2);
        cairo_stroke(cr);
    }
}

/* One legend item's swatch at (x, baseline y). */
static void legend_swatch(cairo_t *cr, const viz_tl_legend_item *it, double size) {
    const double x = it->x, y = it->y;
    switch (it->swatch) {
    case VIZ_TL_SW_KIND: viz_box(cr, x, y - size, size, size, viz_tl_box_color(it->kind, 0)); break;
    case VIZ_TL_SW_CHUNK:
        viz_box(cr, x, y - size, size, size, VIZ_IDLE);
        viz_hatch(cr, x, y - size, size, size, VIZ_TEXT, 3);
        break;
    case VIZ_TL_SW_MEMORY: viz_box(cr, x, y - size, size, size, viz_shade(VIZ_MEMORY, 0.6)); break;
    case VIZ_TL_SW_COMPUTE: viz_box(cr, x, y - size, size, size, VIZ_FORWARD); break;
    case VIZ_TL_SW_TRANSFER: viz_box(cr, x, y - size, size, size, VIZ_TL_TRANSFER_RGB); break;
    case VIZ_TL_SW_WAIT: wait_fill(cr, x, y - size, size, size); break;
    case VIZ_TL_SW_IDLE:
        cairo_rectangle(cr, x + 0.5, y - size + 0.5, size - 1, size - 1);
        viz_set_rgb(cr, VIZ_GRID);
        cairo_set_line_width(cr, 0.8);
        cairo_stroke(cr);
        break;
    case VIZ_TL_SW_IDEAL:
        viz_box_pale(cr, x, y - size * 0.75, size, size * 0.6, VIZ_FORWARD, VIZ_TL_IDEAL_LIGHTEN);
        break;
    case VIZ_TL_SW_PATH:
        viz_box(cr, x, y - size, size, size, VIZ_FORWARD);
        cairo_rectangle(cr, x + 1, y - size + 1, size - 2, size - 2);
        cairo_set_line_width(cr, 2);
        viz_set_rgb(cr, VIZ_TL_PATH_RGB);
        cairo_stroke(cr);
        break;
    case VIZ_TL_SW_HEADING: break;
    }
}

/* The legend as laid out (viz_tl_layout.legend): what the boxes are, what the time is, and
 * what the shares mean. */
static void draw_legend(cairo_t *cr, const viz_tl_layout *L) {
    const double size = VIZ_TL_LEGEND_SIZE, sw = size * viz_theme_current()->text_scale;
    for (int i = 0; i < L->nlegend; i++) {
        const viz_tl_legend_item *it = &L->legend[i];
        if (it->swatch == VIZ_TL_SW_HEADING) {
            viz_text(cr, it->x, it->y - size * 0.12, size, true, VIZ_LEFT, VIZ_TEXT, it->label);
            continue;
        }
        legend_swatch(cr, it, sw);
        viz_text_lines(cr, it->x + sw * 1.4, it->y - size * 0.12, size, false, VIZ_LEFT, VIZ_TEXT,
                       it->label);
    }
    viz_text_lines(cr, L->plot_x, L->legend_note_y, 8.5, false, VIZ_LEFT, MUTED, L->legend_note);
}

/* One page: every panel, its rows drawn only up to the page x `x_cut` (a build's cut; the
 * plot's right end for the whole picture) — the rows' left labels and right shares stay. */
static void paint_page(cairo_t *cr, const viz_tl_layout *L, bool arrows, double x_cut) {
    for (int p = 0; p < L->npanels; p++) {
        const viz_tl_panel_layout *P = &L->panels[p];
        viz_text_lines(cr, 14, P->title_y, 13.5, true, VIZ_LEFT, VIZ_TEXT, P->title_drawn);
        viz_text_lines(cr, 14, P->info_y, 10.5, false, VIZ_LEFT, VIZ_TEXT, P->info_drawn);
        viz_text_lines(cr, 14, P->note_y, 8.5, false, VIZ_LEFT, MUTED, P->note_drawn);
        if (P->caption_lines > 0)
            viz_text_lines(cr, 14, P->caption_y, 9.5, false, VIZ_LEFT, VIZ_TEXT, P->caption_drawn);
        draw_grid(cr, L, P);
        draw_stages(cr, P);
        cairo_save(cr);
        cairo_rectangle(cr, 0, 0, x_cut, L->height);
        cairo_rectangle(cr, L->plot_x + L->plot_w + 1, 0, L->width * 2, L->height);
        cairo_clip(cr);
        for (int d = 0; d < P->nrows; d++) draw_row(cr, L, P, &P->rows[d]);
        if (arrows)
            for (int a = 0; a < P->narrows; a++) draw_arrow(cr, &P->arrows[a]);
        draw_path(cr, P);
        cairo_restore(cr);
        draw_axis(cr, L, P);
    }
    draw_legend(cr, L);
}

/* A build's page (viz/build.h): the page cut at t0 + cut. */
typedef struct {
    const viz_tl_layout *L;
    bool arrows;
} build_job;

static void paint_build_page(cairo_t *cr, int k, int K, double cut, void *ctx) {
    const build_job *job = ctx;
    const viz_tl_layout *L = job->L;
    const double x = viz_tl_x(L, L->t0 + cut);
    paint_page(cr, L, job->arrows, k < K ? x : L->width);
    for (int p = 0; p < L->npanels; p++)
        viz_build_now(cr, x, L->panels[p].rows_top, L->panels[p].axis_y, k, K);
    viz_build_page_number(cr, k, K, L->width - 14, 20);
}

void viz_timeline_draw(const char *path, const viz_timeline *const *tls, int n,
                       const viz_tl_draw_options *opt) {
    double width = opt && opt->width > 0 ? opt->width : 1400, frame_w, frame_h;
    viz_output_frame(&frame_w, &frame_h); /* --height: the rows grow to fill it */
    viz_tl_layout L;
    viz_tl_layout_compute_overlaid(
        &L, tls, opt ? opt->overlays : NULL, n, width, opt ? opt->window : NULL,
        frame_h > 0 ? frame_h * width / (frame_w > 0 ? frame_w : width) : 0,
        opt ? opt->title : NULL);
    const bool arrows = opt && opt->arrows;
    if (opt && opt->build > 0) {
        build_job job = {&L, arrows};
        viz_build_write(path, opt->build, L.t1 - L.t0, L.width, L.height, paint_build_page, &job);
    } else {
        viz_canvas c;
        viz_canvas_open_fitted(&c, path, L.width, L.height);
        paint_page(c.cr, &L, arrows, L.width);
        viz_canvas_close(&c);
    }
    viz_tl_layout_free(&L);
}
