/* timeline_layout.c — positions of everything in a timeline picture (see timeline_layout.h). */
#include "viz/timeline_layout.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/zero/memory_plan.h"
#include "viz/axis.h"
#include "viz/canvas.h"
#include "viz/timeline_overlay.h"

enum { LEFT_GUTTER = 150, RIGHT_GUTTER = 176, TOP_MARGIN = 14, PANEL_GAP = 18 };

double viz_tl_x(const viz_tl_layout *L, double t) { return L->plot_x + (t - L->t0) * L->px_per_s; }

double viz_tl_shown(const viz_tl_layout *L, double t) {
    if (!L->windowed) return t;
    return t < L->t0 ? L->t0 : t > L->t1 ? L->t1 : t;
}

double viz_tl_nice_tick(double duration, int max_ticks) {
    if (!(duration > 0) || !isfinite(duration) || max_ticks < 1) return 1e-3;
    return viz_axis_step(duration / max_ticks);
}

void viz_tl_format_bytes(double bytes, char *buf, int cap) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) bytes /= 1024, u++;
    snprintf(buf, (size_t)cap, u == 0 ? "%.0f %s" : "%.1f %s", bytes, unit[u]);
}

/* Display order: by pipeline stage, then data-parallel rank, then tensor rank, then rank. */
static bool row_before(const viz_timeline *tl, int a, int b) {
    const viz_tl_row *x = &tl->rows[a], *y = &tl->rows[b];
    if (x->pp_rank != y->pp_rank) return x->pp_rank < y->pp_rank;
    if (x->dp_rank != y->dp_rank) return x->dp_rank < y->dp_rank;
    if (x->tp_rank != y->tp_rank) return x->tp_rank < y->tp_rank;
    return x->rank < y->rank;
}

/* Insertion sort of rank indices (a few dozen rows at most). */
static void sort_rows(const viz_timeline *tl, int *order, int n) {
    for (int i = 1; i < n; i++) {
        int v = order[i], j = i;
        for (; j > 0 && row_before(tl, v, order[j - 1]); j--) order[j] = order[j - 1];
        order[j] = v;
    }
}

static void panel_texts(const viz_tl_layout *L, viz_tl_panel_layout *P) {
    const viz_timeline *tl = P->tl;
    char step[48] = "", when[128]; /* which step, and how long it is */
    if (tl->step >= 0) snprintf(step, sizeof step, "step %d", tl->step);
    if (L->windowed) /* the window, as the axis counts it: ms from the step's start */
        snprintf(when, sizeof when, " · window %g–%g ms of %s (%.2f ms)", L->t0 * 1e3, L->t1 * 1e3,
                 step[0] ? step : "the timeline", tl->duration * 1e3);
    else
        snprintf(when, sizeof when, "%s%s · %.2f ms", step[0] ? " · " : "", step,
                 tl->duration * 1e3);
    char vpart[32] = "";
    if (tl->vpp > 1) snprintf(vpart, sizeof vpart, " · %d chunks per rank", tl->vpp);
    char zero[96] = ""; /* the stage in use: the memory strip draws activations only */
    if (tl->zero_stage >= 0)
        snprintf(zero, sizeof zero, " · %s: %s", zero_stage_name(tl->zero_stage),
                 zero_stage_sharded_short(tl->zero_stage));
    char dims[64]; /* context parallelism: its ranks sit between the data-parallel ones */
    if (tl->cp > 1)
        snprintf(dims, sizeof dims, "TP %d × CP %d × PP %d × DP %d", tl->tp, tl->cp, tl->pp,
                 tl->dp / tl->cp);
    else snprintf(dims, sizeof dims, "TP %d × PP %d × DP %d", tl->tp, tl->pp, tl->dp);
    snprintf(P->title, sizeof P->title, "%s — %s · %s (%d ranks) · %d micro-batches%s%s%s",
             tl->name, tl->schedule[0] ? tl->schedule : "schedule ?", dims, tl->world_size,
             tl->num_microbatches, vpart, zero, when);

    viz_tl_bubble bb = viz_timeline_bubble(tl);
    viz_tl_bubble_text bt;
    viz_timeline_bubble_text(tl, &bb, &bt);
    const pp_textbook_text *tx = &bb.theory_text;
    char ft[48], fi[48];
    viz_formula_pretty(ft, sizeof ft, tx->total);
    viz_formula_pretty(fi, sizeof fi, tx->ideal);
    snprintf(P->info, sizeof P->info,
             "Bubble%s measured: %s of total time (wait %s + idle %s), %s of ideal time   |   "
             "theory (p=%d, m=%d%s): %s = %s of total, %s = %s of ideal",
             L->windowed ? " of the whole step" : "", bt.measured_total, bt.wait_total,
             bt.idle_total, bt.measured_ideal, tl->pp, tl->num_microbatches, bt.cond, ft,
             bt.theory_total, fi, bt.theory_ideal);
    char dropped[96] = "";
    if (tl->dropped)
        snprintf(dropped, sizeof dropped,
                 "   WARNING: %llu events were dropped (trace buffer full)",
                 (unsigned long long)tl->dropped);
    snprintf(
        P->note, sizeof P->note,
        "bubble = wait + idle inside the pipeline's first-forward→last-backward span, mean over "
        "ranks · compute = boxes minus messages inside them · transfer = bytes moving · "
        "wait = blocked on a peer · idle = nothing scheduled%s%s",
        L->windowed ? " · shares at the right: this window only" : "", dropped);
}

/* The row's parts, top to bottom from y (timeline_layout.h). */
static void place_row_parts(const viz_tl_layout *L, viz_tl_row_layout *R, const viz_tl_row *row,
                            double y, bool has_mem, bool has_stream, bool has_ideal) {
    R->stage = row->pp_rank;
    R->y = R->phase_y = y;
    R->lane_h = L->lane_h, R->comm_h = L->comm_h;
    R->lane_y = y + VIZ_TL_PHASE_H;
    R->ideal_y = R->lane_y + R->lane_h + (has_ideal ? 2 : 0);
    R->ideal_h = has_ideal ? viz_tl_ideal_lane_h(R->lane_h) : 0;
    R->comm_y = R->ideal_y + R->ideal_h + (has_ideal ? 2 : 0);
    R->stream_y = R->comm_y + R->comm_h;
    R->stream_h = has_stream ? L->comm_h : 0;
    R->mem_y = R->stream_y + R->stream_h;
    R->mem_h = has_mem ? VIZ_TL_MEM_H : 0;
    R->bottom = R->mem_y + R->mem_h;
}

/* Every box's x, width and label; the legend learns which kinds are drawn. */
static void layout_boxes(viz_tl_layout *L, viz_tl_row_layout *R, const viz_tl_row *row) {
    R->boxes = callocCheck((size_t)row->nboxes + 1, sizeof *R->boxes);
    for (int i = 0; i < row->nboxes; i++) {
        const viz_tl_box *b = &row->boxes[i];
        viz_tl_box_layout *B = &R->boxes[i];
        /* In a window a box crossing an edge keeps its part inside; one outside is hidden. */
        B->hidden = L->windowed && (b->end <= L->t0 || b->start >= L->t1);
        const double start = viz_tl_shown(L, b->start), end = viz_tl_shown(L, b->end);
        B->x = viz_tl_x(L, start);
        B->w = (end - start) * L->px_per_s;
        B->x_ready = viz_tl_x(L, viz_tl_shown(L, b->ready));
        B->label_x = B->x + B->w / 2;
        /* bytes this rank sent: a ring step's receive half (sendrecv is traced as a send and
         * a receive over the same time) carries none of its own, or the two labels overlap */
        const bool ring_recv = b->kind == VIZ_TL_RING && strcmp(b->op, "recv") == 0;
        if (b->kind == VIZ_TL_ALL_TO_ALL || (b->kind == VIZ_TL_RING && !ring_recv)) {
            const double tw = B->x + B->w - B->x_ready; /* the transfer part */
            viz_tl_format_bytes(b->bytes, B->label, (int)sizeof B->label);
            B->label_x = B->x_ready + tw / 2;
            B->label_shown = strlen(B->label) * VIZ_TL_BYTES_CHAR_W + 4 <= tw;
        } else {
            if (b->microbatch >= 0 && !viz_tl_is_comm(b->kind))
                snprintf(B->label, sizeof B->label, "%d", b->microbatch);
            B->label_shown = B->label[0] && strlen(B->label) * VIZ_TL_CHAR_W + 4 <= B->w;
        }
        if (B->hidden) { /* the legend names only what is drawn */
            B->label_shown = false;
            continue;
        }
        if (b->kind < VIZ_TL_NUM_KINDS) L->kinds_present[b->kind] = true;
        if (b->chunk >= 1) L->any_chunks = true;
    }
}

/* The row's time classes over [a, z) as segments on the page. */
static void layout_time_classes(viz_tl_layout *L, const viz_timeline *tl, viz_tl_row_layout *R,
                                double a, double z) {
    viz_tc_segment *seg;
    int n = viz_timeline_class_segments(tl, R->rank, a, z, &seg);
    R->seg_x = mallocCheck(((size_t)n + 1) * sizeof *R->seg_x);
    R->seg_w = mallocCheck(((size_t)n + 1) * sizeof *R->seg_w);
    R->seg_cls = mallocCheck(((size_t)n + 1) * sizeof *R->seg_cls);
    for (int i = 0; i < n; i++) {
        R->seg_x[i] = viz_tl_x(L, seg[i].a);
        R->seg_w[i] = (seg[i].b - seg[i].a) * L->px_per_s;
        R->seg_cls[i] = seg[i].cls;
        if (seg[i].cls == VIZ_TC_WAIT) L->any_wait = true;
    }
    R->nseg = n;
    free(seg);
}

/* The texts at the row's right: its class shares over [a, z), its peak memory. */
static void row_texts(const viz_tl_layout *L, const viz_timeline *tl, viz_tl_row_layout *R,
                      const viz_tl_row_stats *st, double a, double z) {
    R->shares = L->windowed ? viz_timeline_class_shares(tl, R->rank, a, z) : st->classes;
    const double *f = R->shares.share;
    if (z > a) {
        snprintf(R->share_text[0], sizeof R->share_text[0], "compute %.1f%% · transfer %.1f%%",
                 100 * f[VIZ_TC_COMPUTE], 100 * f[VIZ_TC_TRANSFER]);
        snprintf(R->share_text[1], sizeof R->share_text[1], "wait %.1f%% · idle %.1f%%",
                 100 * f[VIZ_TC_WAIT], 100 * f[VIZ_TC_IDLE]);
    } else /* a shorter panel of a stack, whose step ended before the window */
        snprintf(R->share_text[0], sizeof R->share_text[0], "(step ended before)");
    if (st->mem_peak > 0) {
        char b[24];
        viz_tl_format_bytes(st->mem_peak, b, sizeof b);
        snprintf(R->mem_text, sizeof R->mem_text, "peak %s", b);
    }
}

/* The phase strip: warmup, steady, cooldown, when the schedule is known. */
static void layout_phases(const viz_tl_layout *L, viz_tl_row_layout *R,
                          const viz_tl_row_stats *st) {
    if (!(st->has_phases && st->first_fwd >= 0)) return;
    R->has_phases = true;
    double end = st->last_bwd_end >= 0 ? st->last_bwd_end : st->last_fwd_end;
    double w1 = st->warmup_end >= 0 ? st->warmup_end : st->first_fwd;
    double c0 = st->cooldown_start >= 0 ? st->cooldown_start : end;
    if (c0 < w1) c0 = w1;
    R->warmup_x0 = viz_tl_x(L, viz_tl_shown(L, st->first_fwd));
    R->warmup_x1 = R->steady_x0 = viz_tl_x(L, viz_tl_shown(L, w1));
    R->steady_x1 = R->cooldown_x0 = viz_tl_x(L, viz_tl_shown(L, c0));
    R->cooldown_x1 = viz_tl_x(L, viz_tl_shown(L, end));
    if (st->warmup_forwards >= st->forwards) R->steady_x1 = R->steady_x0; /* no steady pairs */
    if (st->cooldown_backwards <= 0) R->cooldown_x0 = R->cooldown_x1;
    if (st->warmup_forwards <= 0) R->warmup_x1 = R->warmup_x0;
}

static void layout_row(viz_tl_layout *L, viz_tl_panel_layout *P, viz_tl_row_layout *R, double y,
                       bool has_mem, bool has_stream) {
    const viz_timeline *tl = P->tl;
    const bool has_ideal = P->overlay && P->overlay->ideal;
    place_row_parts(L, R, &tl->rows[R->rank], y, has_mem, has_stream, has_ideal);
    layout_boxes(L, R, &tl->rows[R->rank]);
    viz_tl_overlay_row(L, P, R);
    /* Time classes: the segments drawn, and the shares printed at the right, over the time
     * shown (the whole step, or the window's part of it). */
    const double a = L->windowed ? L->t0 : 0, z = P->t_end;
    layout_time_classes(L, tl, R, a, z);
    viz_tl_row_stats st = viz_timeline_row_stats(tl, R->rank);
    row_texts(L, tl, R, &st, a, z);
    layout_phases(L, R, &st);
}

/* The centre of a row's comm lane, for arrows. */
static double comm_mid(const viz_tl_row_layout *R) { return R->comm_y + R->comm_h / 2.0; }

/* The two ends of a matched message: a send (or a ring step that sends: sendrecv, send) and
 * a receive (or a ring step's "recv"). */
static bool sends(const viz_tl_box *b) {
    return b->kind == VIZ_TL_SEND || (b->kind == VIZ_TL_RING && strcmp(b->op, "recv") != 0);
}
static bool receives(const viz_tl_box *b) {
    return b->kind == VIZ_TL_RECV || (b->kind == VIZ_TL_RING && strcmp(b->op, "recv") == 0);
}

static void layout_arrows(const viz_tl_layout *L, viz_tl_panel_layout *P) {
    const viz_timeline *tl = P->tl;
    int nsend = 0;
    for (int r = 0; r < tl->nrows; r++)
        for (int i = 0; i < tl->rows[r].nboxes; i++) nsend += sends(&tl->rows[r].boxes[i]);
    P->arrows = callocCheck((size_t)nsend + 1, sizeof *P->arrows);
    /* Row layout by rank, to find a receiver's row. */
    int *display_of = mallocCheck((size_t)tl->nrows * sizeof *display_of);
    for (int d = 0; d < P->nrows; d++) display_of[P->rows[d].rank] = d;
    for (int d = 0; d < P->nrows; d++) {
        const viz_tl_row_layout *S = &P->rows[d];
        const viz_tl_row *srow = &tl->rows[S->rank];
        for (int i = 0; i < srow->nboxes; i++) {
            const viz_tl_box *b = &srow->boxes[i];
            if (!sends(b) || b->flow < 0 || b->peer < 0 || b->peer >= tl->nrows) continue;
            const viz_tl_row_layout *D = &P->rows[display_of[b->peer]];
            const viz_tl_row *drow = &tl->rows[b->peer];
            for (int j = 0; j < drow->nboxes; j++) {
                if (!receives(&drow->boxes[j]) || drow->boxes[j].flow != b->flow) continue;
                const double t_send = b->ready, t_recv = drow->boxes[j].end;
                if (L->windowed &&
                    (t_send < L->t0 || t_send > L->t1 || t_recv < L->t0 || t_recv > L->t1))
                    break; /* an end outside the window: no arrow */
                P->arrows[P->narrows++] = (viz_tl_arrow){
                    S->boxes[i].x_ready, comm_mid(S), D->boxes[j].x + D->boxes[j].w, comm_mid(D)};
                break;
            }
        }
    }
    free(display_of);
}

void viz_tl_layout_compute(viz_tl_layout *L, const viz_timeline *const *tls, int n, double width) {
    viz_tl_layout_compute_window(L, tls, n, width, NULL);
}

/* The time scale shared by every panel: the time shown (the longest step, or the window with
 * its end clipped to it), pixels per second and the tick spacing. */
static void set_time_scale(viz_tl_layout *L, const viz_timeline *const *tls, int n,
                           const viz_tl_window *w) {
    for (int p = 0; p < n; p++)
        if (tls[p]->duration > L->duration) L->duration = tls[p]->duration;
    double dur = L->duration > 0 ? L->duration : 1e-3;
    L->t1 = L->duration;
    if (w) { /* the window, its end clipped to the longest panel */
        CHECK(w->t0 >= 0 && w->t0 < w->t1 && w->t0 < L->duration,
              "a timeline window must start at or after 0, before its end and before the "
              "step's end");
        L->windowed = true;
        L->t0 = w->t0;
        L->t1 = w->t1 < L->duration ? w->t1 : L->duration;
        dur = L->t1 - L->t0;
    }
    L->px_per_s = L->plot_w / dur;
    L->tick_s = viz_tl_nice_tick(dur, 12);
}

/* Whether some row of the panel has memory samples, or collectives on its communication
 * stream; and the panel's memory peak, the top of its memory strips. */
static void panel_strips(viz_tl_panel_layout *P, bool *has_mem, bool *has_stream) {
    const viz_timeline *tl = P->tl;
    *has_mem = *has_stream = false;
    for (int r = 0; r < tl->nrows; r++) {
        for (int i = 0; i < tl->rows[r].nboxes; i++) *has_stream |= tl->rows[r].boxes[i].stream;
        for (int i = 0; i < tl->rows[r].nmem; i++)
            if (tl->rows[r].mem[i].bytes > P->mem_max) P->mem_max = tl->rows[r].mem[i].bytes;
        *has_mem |= tl->rows[r].nmem > 0;
    }
}

/* The panel's rows in display order from rows_top, grouped by stage (a gap between stages),
 * and each stage's vertical extent. */
static void layout_panel_rows(viz_tl_layout *L, viz_tl_panel_layout *P) {
    const viz_timeline *tl = P->tl;
    bool has_mem, has_stream;
    panel_strips(P, &has_mem, &has_stream);
    int *order = mallocCheck((size_t)tl->nrows * sizeof *order);
    for (int r = 0; r < tl->nrows; r++) order[r] = r;
    sort_rows(tl, order, tl->nrows);
    P->nrows = tl->nrows;
    P->rows = callocCheck((size_t)tl->nrows, sizeof *P->rows);
    P->stage_y0 = callocCheck((size_t)tl->pp + 1, sizeof *P->stage_y0);
    P->stage_y1 = callocCheck((size_t)tl->pp + 1, sizeof *P->stage_y1);
    double ry = P->rows_top;
    int prev_stage = -1;
    for (int d = 0; d < tl->nrows; d++) {
        viz_tl_row_layout *R = &P->rows[d];
        R->rank = order[d];
        int stage = tl->rows[R->rank].pp_rank;
        if (d > 0 && stage != prev_stage) ry += VIZ_TL_STAGE_GAP;
        layout_row(L, P, R, ry, has_mem, has_stream);
        if (stage >= 0 && stage < tl->pp) {
            if (stage != prev_stage) P->stage_y0[stage] = R->y;
            P->stage_y1[stage] = R->bottom;
            if (stage + 1 > P->nstages) P->nstages = stage + 1;
        }
        prev_stage = stage;
        ry = R->bottom + VIZ_TL_ROW_GAP;
    }
    free(order);
    P->rows_bottom = ry - VIZ_TL_ROW_GAP;
}

/* The title, info and note lines wrapped, their baselines, and the top of the rows. */
static void wrap_panel_texts(const viz_tl_layout *L, viz_tl_panel_layout *P, double y) {
    const double ts = viz_theme_current()->text_scale;
    const double w = L->width - 28; /* 14 points of margin either side */
    P->title_lines = viz_wrap(P->title, 13.5, true, w, P->title_drawn, sizeof P->title_drawn);
    P->info_lines = viz_wrap(P->info, 10.5, false, w, P->info_drawn, sizeof P->info_drawn);
    P->note_lines = viz_wrap(P->note, 8.5, false, w, P->note_drawn, sizeof P->note_drawn);
    P->title_y = y + 14 * ts;
    P->info_y = P->title_y + (P->title_lines - 1) * viz_line_pitch(13.5) + 18 * ts;
    P->note_y = P->info_y + (P->info_lines - 1) * viz_line_pitch(10.5) + 14 * ts;
    double last = P->note_y + (P->note_lines - 1) * viz_line_pitch(8.5);
    if (P->overlay && P->overlay->caption[0]) /* the overlay's caption, in 9.5 points */
        last = viz_tl_overlay_caption(L, P, last + 14 * ts) + 2 * ts;
    P->rows_top = last + 10 * ts;
}

/* One panel from y down: its texts, its time span and ticks, its rows, arrows and axis.
 * Returns the y below it. */
static double layout_panel(viz_tl_layout *L, viz_tl_panel_layout *P, const viz_timeline *tl,
                           double y) {
    P->tl = tl;
    P->overlay = L->overlays ? &L->overlays[P - L->panels] : NULL;
    if (P->overlay && P->overlay->ideal) {
        CHECK(P->overlay->ideal->nrows == tl->nrows, "ideal rows parallel to the panel's rows");
        L->any_ideal = true;
    }
    if (P->overlay && P->overlay->npath > 0) L->any_path = true;
    P->top = y;
    P->t_end = L->windowed && L->t1 < tl->duration ? L->t1 : tl->duration;
    if (P->t_end < L->t0) P->t_end = L->t0; /* a stack's shorter step, over before */
    /* Ticks at whole multiples of tick_s inside [t0, t_end] (without a window from 0). */
    double first = ceil(L->t0 / L->tick_s - 1e-9), last = floor(P->t_end / L->tick_s + 1e-9);
    bool drawable = fabs(first) < INT_MAX / 2 && fabs(last) < INT_MAX / 2 &&
                    last - first <= VIZ_AXIS_MAX_INTERVALS; /* else a window finer than doubles */
    P->tick_first = drawable ? (int)first : 0;
    P->tick_last = drawable ? (int)last : -1;
    panel_texts(L, P);
    if (L->title && P == &L->panels[0]) snprintf(P->title, sizeof P->title, "%s", L->title);
    wrap_panel_texts(L, P, y);
    layout_panel_rows(L, P);
    layout_arrows(L, P);
    viz_tl_overlay_path(L, P);
    P->axis_y = P->rows_bottom + 6;
    P->bottom = P->axis_y + 26;
    return P->bottom;
}

static void legend_add(viz_tl_layout *L, viz_tl_swatch sw, viz_tl_kind kind, const char *label) {
    if (L->nlegend == (int)(sizeof L->legend / sizeof L->legend[0])) return;
    viz_tl_legend_item *it = &L->legend[L->nlegend++];
    *it = (viz_tl_legend_item){.swatch = sw, .kind = kind};
    snprintf(it->label, sizeof it->label, "%s", label);
}

/* The legend's items: what the boxes are (the kinds drawn, odd chunks, memory), then what the
 * time is (the four classes); the note under them says what the shares mean. */
static void legend_items(viz_tl_layout *L) {
    static const struct {
        viz_tl_kind k;
        const char *label;
    } order[] = {
        {VIZ_TL_FORWARD, "forward"},
        {VIZ_TL_BACKWARD, "backward"},
        {VIZ_TL_WEIGHT, "weight gradient (W)"},
        {VIZ_TL_OPTIMIZER, "optimizer"},
        {VIZ_TL_DATA, "data"},
        {VIZ_TL_EVAL, "eval"},
        {VIZ_TL_SEND, "p2p message"},
        {VIZ_TL_COLLECTIVE, "collective"},
        {VIZ_TL_ALL_TO_ALL, "all-to-all (MoE)"},
        {VIZ_TL_RING, "ring step (CP)"},
    };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (L->kinds_present[order[i].k] ||
            (order[i].k == VIZ_TL_SEND && L->kinds_present[VIZ_TL_RECV]))
            legend_add(L, VIZ_TL_SW_KIND, order[i].k, order[i].label);
    if (L->any_chunks)
        legend_add(L, VIZ_TL_SW_CHUNK, 0, "odd model chunk (hatched; darker = later chunk pair)");
    bool mem = false;
    for (int p = 0; p < L->npanels; p++) mem |= L->panels[p].mem_max > 0;
    if (mem)
        legend_add(L, VIZ_TL_SW_MEMORY, 0,
                   "memory in use: activations held (the model state of the title's ZeRO stage "
                   "is constant, not drawn)");
    if (L->any_ideal)
        legend_add(L, VIZ_TL_SW_IDEAL, 0, "ideal row (pale, under each rank): the plan");
    if (L->any_path) legend_add(L, VIZ_TL_SW_PATH, 0, "critical path (bold outline, its hops)");
    legend_add(L, VIZ_TL_SW_HEADING, 0, "time:");
    legend_add(L, VIZ_TL_SW_COMPUTE, 0, "compute (its kind's colour)");
    legend_add(L, VIZ_TL_SW_TRANSFER, 0, "transfer (bytes moving)");
    legend_add(L, VIZ_TL_SW_WAIT, 0, "wait (blocked on a peer)");
    legend_add(L, VIZ_TL_SW_IDLE, 0, "idle (blank: nothing scheduled)");
}

/* Places the legend's items in rows that stay inside the page (the "time:" heading starts a
 * row), then the note; the page ends below it. */
static void layout_legend(viz_tl_layout *L) {
    const double size = VIZ_TL_LEGEND_SIZE, pitch = viz_legend_pitch(size);
    const double x0 = L->plot_x, right = L->width - 14;
    double x = x0, y = L->legend_y + 10 * viz_theme_current()->text_scale;
    legend_items(L);
    const double sw = size * viz_theme_current()->text_scale; /* a swatch */
    for (int i = 0; i < L->nlegend; i++) {
        viz_tl_legend_item *it = &L->legend[i];
        const bool heading = it->swatch == VIZ_TL_SW_HEADING;
        double w = heading ? viz_measure(size, true, it->label) + size * 0.8
                           : viz_legend_item_width(size, it->label);
        if (x > x0 && (heading || x + w - sw * 1.6 > right)) x = x0, y += pitch;
        it->x = x, it->y = y;
        x += w;
        if (!heading && x - sw * 1.6 > right) { /* wider than the page alone: wrapped */
            char wrapped[sizeof it->label];
            int n = viz_wrap(it->label, size, false, right - x0 - sw * 1.4, wrapped,
                             sizeof wrapped);
            memcpy(it->label, wrapped, sizeof wrapped);
            y += (n - 1) * viz_line_pitch(size);
            x = right; /* the next item starts a row */
        }
    }
    const bool bytes = L->kinds_present[VIZ_TL_ALL_TO_ALL] || L->kinds_present[VIZ_TL_RING];
    char line[640];
    snprintf(line, sizeof line,
             "the four shares of a row add up to the %s · bubble = wait + idle inside the "
             "pipeline's first-forward→last-backward span, mean over ranks%s",
             L->windowed ? "window" : "step",
             bytes ? " · all-to-all and ring boxes: bytes this rank sent" : "");
    int lines = viz_wrap(line, 8.5, false, right - x0, L->legend_note, sizeof L->legend_note);
    L->legend_note_y = y + 14 * viz_theme_current()->text_scale;
    L->height = ceil(L->legend_note_y + (lines - 1) * viz_line_pitch(8.5) + 10);
}

/* Lays out every panel with the lanes L->lane_h and L->comm_h high, then the legend. */
static void layout_pages(viz_tl_layout *L, const viz_timeline *const *tls, int n, double width,
                         const viz_tl_window *w) {
    /* the gutters grow with the slides' type, as long as 74 points of plot are left */
    const double g = fmax(
        1, fmin(viz_theme_current()->text_scale, (width - 74) / (LEFT_GUTTER + RIGHT_GUTTER)));
    L->width = width;
    L->plot_x = LEFT_GUTTER * g;
    L->plot_w = width - (LEFT_GUTTER + RIGHT_GUTTER) * g;
    CHECK(L->plot_w > 50, "the page is too narrow for a timeline");
    set_time_scale(L, tls, n, w);
    L->npanels = n;
    L->panels = callocCheck((size_t)n, sizeof *L->panels);
    double y = TOP_MARGIN;
    for (int p = 0; p < n; p++) y = layout_panel(L, &L->panels[p], tls[p], y) + PANEL_GAP;
    L->legend_y = y + 4;
    layout_legend(L);
}

void viz_tl_layout_compute_frame(viz_tl_layout *L, const viz_timeline *const *tls, int n,
                                 double width, const viz_tl_window *w, double height,
                                 const char *title) {
    viz_tl_layout_compute_overlaid(L, tls, NULL, n, width, w, height, title);
}

void viz_tl_layout_compute_overlaid(viz_tl_layout *L, const viz_timeline *const *tls,
                                    const viz_tl_overlay *overlays, int n, double width,
                                    const viz_tl_window *w, double height, const char *title) {
    CHECK(n >= 1, "a timeline picture needs at least one timeline");
    const double ts = viz_theme_current()->text_scale;
    memset(L, 0, sizeof *L);
    L->title = title;
    L->overlays = overlays;
    L->lane_h = round(VIZ_TL_LANE_H * ts);
    L->comm_h = fmax(VIZ_TL_COMM_H, round(9 * ts));
    layout_pages(L, tls, n, width, w);
    if (!(height > L->height)) return;
    int rows = 0;
    for (int p = 0; p < n; p++) rows += L->panels[p].nrows;
    const double grow = fmin((height - L->height) / (rows > 0 ? rows : 1), VIZ_TL_LANE_MAX);
    const double lane_h = fmin(floor(L->lane_h + grow), VIZ_TL_LANE_MAX);
    if (lane_h <= L->lane_h) return;
    viz_tl_layout_free(L);
    L->title = title;
    L->overlays = overlays;
    L->lane_h = lane_h;
    L->comm_h = fmax(VIZ_TL_COMM_H, round(9 * ts));
    layout_pages(L, tls, n, width, w);
}

void viz_tl_layout_compute_window(viz_tl_layout *L, const viz_timeline *const *tls, int n,
                                  double width, const viz_tl_window *w) {
    viz_tl_layout_compute_frame(L, tls, n, width, w, 0, NULL);
}

void viz_tl_layout_free(viz_tl_layout *L) {
    for (int p = 0; p < L->npanels; p++) {
        viz_tl_panel_layout *P = &L->panels[p];
        for (int d = 0; d < P->nrows; d++) {
            free(P->rows[d].boxes);
            free(P->rows[d].seg_x);
            free(P->rows[d].seg_w);
            free(P->rows[d].seg_cls);
            free(P->rows[d].ideal_boxes);
        }
        free(P->rows);
        free(P->stage_y0);
        free(P->stage_y1);
        free(P->arrows);
        free(P->path);
        free(P->hops);
    }
    free(L->panels);
    memset(L, 0, sizeof *L);
}
