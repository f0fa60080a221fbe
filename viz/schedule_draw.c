/* schedule_draw.c — a pipeline schedule's predicted timeline as a picture. See schedule_draw.h.
 *
 * Page layout (points):
 *
 *     +--------------------------------------------------------------------------+
 *     | title                                                          (TOP)     |
 *     | rank 0 | boxes .......................................... | idle %  peak |
 *     |        | phase strip                                     |              |
 *     |   held | activations curve, "peak 4"  (MEM_GAP + MEM_H)  |              |
 *     | rank 1 | ...                                             |              |
 *     |        | time axis with ticks                            |              |
 *     | legend                                                                    |
 *     +--------------------------------------------------------------------------+
 *      LEFT     plot_x                               plot_x+plot_w   RIGHT
 *
 * Not here: the simulation (src/pp/schedule_sim.c) or measured timelines.
 */
#include "viz/schedule_draw.h"

#include "viz/timeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "viz/axis.h"
#include "viz/build.h"

enum {
    LEFT = 78,
    RIGHT = 200,
    TOP = 58,
    BOX_H = 28,
    STRIP_H = 6,
    ROW_GAP = 14,
    AXIS_H = 40,
    LEGEND_H = 40,
    MEM_GAP = 10, /* the phase words under the strip */
    MEM_H = 30,   /* the activations band; its top MEM_HEADROOM for the peak's label */
    MEM_HEADROOM = 11,
    HEAD_H = 34 /* a stack's own title (--title with --compare) */
};

static viz_rgb phase_color(pp_phase ph) {
    switch (ph) {
    case PP_WARMUP: return viz_shade(VIZ_P2P, 0.25);
    case PP_STEADY: return viz_shade(VIZ_OPTIMIZER, 0.25);
    case PP_COOLDOWN: return viz_shade(VIZ_COLLECTIVE, 0.35);
    }
    return VIZ_GRID;
}

/* GPipe's "warmup" is its whole forward pass and its "cooldown" the backward flush. */
static const char *phase_word(pp_kind kind, pp_phase ph) {
    switch (ph) {
    case PP_WARMUP: return kind == PP_GPIPE ? "all forwards" : "warmup";
    case PP_STEADY: return pp_splits_backward(kind) ? "steady F B W" : "steady 1F1B";
    case PP_COOLDOWN: return kind == PP_GPIPE ? "all backwards (flush)" : "cooldown";
    }
    return "";
}

/* Chunk 0 is the plain colour; later chunks are lighter and hatched, more densely per chunk. */
static viz_rgb op_color(pp_op op) {
    return op == PP_FORWARD ? VIZ_FORWARD : op == PP_WEIGHT ? VIZ_WEIGHT : VIZ_BACKWARD;
}

static viz_rgb action_fill(const pp_action *a) {
    viz_rgb base = op_color(a->op);
    if (a->chunk == 0) return base;
    double t = 0.45 + 0.12 * (a->chunk - 1);
    return viz_shade(base, t > 0.8 ? 0.8 : t);
}

/* 1, 2, 5, 10, 20, 50 … : the smallest step that keeps ticks at least min_px apart. */
static double nice_step(double px_per_unit, double min_px) {
    return fmax(1, viz_axis_step(min_px / px_per_unit));
}

/* An idle gap on rank r's row from t0 to t1 (units), cut at the layout's `until`. */
static void add_gap(viz_schedule_layout *out, int r, double y, double t0, double t1) {
    if (t1 > out->until) t1 = out->until;
    if (t1 <= t0 + 1e-9) return;
    viz_sched_rect *g = &out->gaps[out->ngap++];
    g->x = LEFT + t0 * out->px_per_unit;
    g->w = (t1 - t0) * out->px_per_unit;
    g->y = y;
    g->h = BOX_H;
    g->rank = r;
    g->action = -1;
    g->fill = VIZ_IDLE;
}

/* Action i of rank r, simulated over sp (started before `until`, drawn up to it). */
static void add_box(viz_schedule_layout *out, int r, int i, double y, const pp_action *a,
                    pp_span sp) {
    if (sp.end > out->until) sp.end = out->until;
    viz_sched_rect *b = &out->boxes[out->nbox++];
    b->x = LEFT + sp.start * out->px_per_unit;
    b->w = (sp.end - sp.start) * out->px_per_unit;
    b->y = y;
    b->h = BOX_H;
    b->rank = r;
    b->action = i;
    b->fill = action_fill(a);
    b->hatched = a->chunk > 0;
    b->hatch_gap = a->chunk > 0 ? 7.0 / a->chunk : 0;
    b->phase = a->phase;
    if (b->w >= 10) snprintf(b->label, sizeof b->label, "%d", a->mb);
}

/* One rank's row: boxes, the gaps between them and after the last, the phase strips. */
static void layout_rank(viz_schedule_layout *out, const pp_schedule *s, const pp_sim *sim, int r) {
    const pp_rank_plan *pl = &s->ranks[r];
    const pp_rank_timeline *tl = &sim->ranks[r];
    const double y = out->row_y0 + r * out->row_pitch, ppu = out->px_per_unit;
    double prev_end = 0;
    /* Phase extents on this rank: [first start, last end] of each phase. */
    double ph_lo[3] = {-1, -1, -1}, ph_hi[3] = {0, 0, 0};
    for (int i = 0; i < pl->n; i++) {
        const pp_action *a = &pl->actions[i];
        const pp_span sp = tl->spans[i];
        if (sp.start >= out->until) break; /* a build's page: not started yet */
        if (sp.start > prev_end + 1e-9) add_gap(out, r, y, prev_end, sp.start);
        if (sp.end > prev_end) prev_end = sp.end;
        add_box(out, r, i, y, a, sp);
        int ph = (int)a->phase;
        if (ph_lo[ph] < 0 || sp.start < ph_lo[ph]) ph_lo[ph] = sp.start;
        if (sp.end > ph_hi[ph]) ph_hi[ph] = fmin(sp.end, out->until);
    }
    if (sim->makespan > prev_end + 1e-9)
        add_gap(out, r, y, prev_end, sim->makespan); /* idle at the end */
    for (int ph = 0; ph < 3; ph++) {
        if (ph_lo[ph] < 0) continue;
        viz_sched_rect *st = &out->strips[out->nstrip++];
        st->x = LEFT + ph_lo[ph] * ppu;
        st->w = (ph_hi[ph] - ph_lo[ph]) * ppu;
        st->y = y + BOX_H + 2;
        st->h = STRIP_H;
        st->rank = r;
        st->action = -1;
        st->phase = (pp_phase)ph;
        st->fill = phase_color((pp_phase)ph);
    }
    snprintf(out->right[r], sizeof out->right[r], "idle %.1f%%   peak %d in flight",
             100.0 * tl->idle_fraction, tl->peak_inflight);
}

/* Points per unit of time for a makespan T: ~1000 points of plot, a unit between 8 and 48. */
static double scale_for(double T) {
    double ppu = 1000.0 / (T > 0 ? T : 1);
    return ppu > 48 ? 48 : ppu < 8 ? 8 : ppu;
}

/* "1f1b   p = 4   m = 8  —  bubble 27.3% of the time (textbook (p−1)/(m+p−1) = 27.3%)". */
static void layout_title(viz_schedule_layout *out, const pp_config *c, const pp_sim *sim) {
    char formula[64], pretty[96], vpart[24] = "";
    const double textbook = pp_textbook_of_total(c, formula, sizeof formula);
    pp_textbook_text tx;
    pp_textbook_formulas(c, &tx);
    viz_formula_pretty(pretty, sizeof pretty, tx.total);
    if (tx.shows_v) snprintf(vpart, sizeof vpart, "   v = %d", c->v);
    /* with a cost assumption: "(textbook FORMULA, ASSUMPTION: X%)", else "FORMULA = X%" */
    if (tx.assumes[0])
        snprintf(out->title, sizeof out->title,
                 "%s   p = %d   m = %d%s  —  bubble %.1f%% of the time (textbook %s: %.1f%%)",
                 pp_kind_name(c->kind), c->p, c->m, vpart, 100.0 * sim->bubble_fraction, formula,
                 100.0 * textbook);
    else
        snprintf(out->title, sizeof out->title,
                 "%s   p = %d   m = %d%s  —  bubble %.1f%% of the time (textbook %s = %.1f%%)",
                 pp_kind_name(c->kind), c->p, c->m, vpart, 100.0 * sim->bubble_fraction, pretty,
                 100.0 * textbook);
}

/* The dependency arrows: one per receiving action that starts before `until`, from the box
 * of the action that sent its message (found by tag) to its own box. */
static void layout_arrows(viz_schedule_layout *out, const pp_schedule *s, const pp_sim *sim) {
    const int ntags = pp_tag_count(&s->cfg), p = s->cfg.p;
    int *from_rank = mallocCheck((size_t)ntags * sizeof(int)), nrecv = 0;
    int *from_action = mallocCheck((size_t)ntags * sizeof(int));
    for (int r = 0; r < p; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const pp_action *a = &s->ranks[r].actions[i];
            if (a->send_tag >= 0) from_rank[a->send_tag] = r, from_action[a->send_tag] = i;
            nrecv += a->recv_tag >= 0;
        }
    out->arrows = callocCheck((size_t)nrecv + 1, sizeof *out->arrows);
    const double ppu = out->px_per_unit;
    for (int r = 0; r < p; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const pp_action *a = &s->ranks[r].actions[i];
            if (a->recv_tag < 0 || sim->ranks[r].spans[i].start >= out->until) continue;
            const int fr = from_rank[a->recv_tag], fi = from_action[a->recv_tag];
            viz_sched_arrow *w = &out->arrows[out->narrow++];
            *w = (viz_sched_arrow){
                .from_rank = fr, .from_action = fi, .to_rank = r, .to_action = i};
            const double y_from = out->row_y0 + fr * out->row_pitch,
                         y_to = out->row_y0 + r * out->row_pitch;
            w->x1 = out->plot_x + sim->ranks[fr].spans[fi].end * ppu - 2;
            w->x2 = out->plot_x + sim->ranks[r].spans[i].start * ppu + 2;
            w->same_row = fr == r;
            w->y1 = fr < r ? y_from + BOX_H : y_from; /* leave the box on the side facing */
            w->y2 = fr < r ? y_to : fr > r ? y_to + BOX_H : y_to;
        }
    free(from_rank);
    free(from_action);
}

/* The layout at a given scale (points per unit of time); mem_max: micro-batches of
 * activations at the top of every band (0: no band). */
static void layout_at_scale(const pp_schedule *s, const pp_sim *sim, double ppu,
                            const viz_schedule_options *opt, double mem_max,
                            viz_schedule_layout *out) {
    const pp_config *c = &s->cfg;
    const int p = c->p;
    CHECK(sim->p == p, "simulate the same schedule you draw");
    memset(out, 0, sizeof *out);
    const double T = sim->makespan > 0 ? sim->makespan : 1;
    out->until = opt->until > 0 && opt->until < sim->makespan ? opt->until : sim->makespan;
    out->px_per_unit = ppu;
    out->plot_x = LEFT;
    out->plot_w = T * ppu;
    out->box_h = BOX_H;
    out->strip_h = STRIP_H;
    out->row_y0 = TOP;
    out->row_pitch = BOX_H + 2 + STRIP_H + ROW_GAP;
    if (mem_max > 0) {
        out->mem_max = mem_max;
        out->mem_base = BOX_H + 2 + STRIP_H + MEM_GAP + MEM_H;
        out->px_per_set = (MEM_H - MEM_HEADROOM) / (mem_max * c->v); /* a set: 1/v of one */
        out->row_pitch += MEM_GAP + MEM_H;
    }
    out->axis_y = TOP + p * out->row_pitch + 4;
    out->tick_step = nice_step(ppu, 36);
    out->width = ceil(LEFT + out->plot_w + RIGHT);
    out->height = ceil(out->axis_y + AXIS_H + LEGEND_H);

    int total = 0;
    for (int r = 0; r < p; r++) total += s->ranks[r].n;
    out->boxes = callocCheck((size_t)total, sizeof *out->boxes);
    out->gaps = callocCheck((size_t)total + (size_t)p, sizeof *out->gaps);
    out->strips = callocCheck((size_t)3 * p, sizeof *out->strips);
    out->right = callocCheck((size_t)p, sizeof *out->right);
    for (int r = 0; r < p; r++) layout_rank(out, s, sim, r);
    if (mem_max > 0) {
        out->mem = callocCheck((size_t)p, sizeof *out->mem);
        out->nmem = p;
        for (int r = 0; r < p; r++)
            viz_sched_mem_compute(&s->ranks[r], c->v, &sim->ranks[r], sim->makespan, out->until,
                                  &out->mem[r]);
    }
    if (opt->arrows) layout_arrows(out, s, sim);
    layout_title(out, c, sim);
    if (opt->title) snprintf(out->title, sizeof out->title, "%s", opt->title);
}

/* The most activations any rank of the n schedules holds, in micro-batches: its sets (the
 * simulator counts the plan's sets, pp_plan_holds_of's rule) over v, a chunk set being 1/v
 * of a micro-batch's. One scale for every band of a picture, so the memory claims compare. */
static double most_held(const pp_schedule *s, const pp_sim *sim, int n) {
    double most = 0;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < sim[i].p; r++)
            most = fmax(most, (double)sim[i].ranks[r].peak_inflight / s[i].cfg.v);
    return most;
}

static const viz_schedule_options k_default_options;

void viz_schedule_layout_compute_opt(const pp_schedule *s, const pp_sim *sim,
                                     const viz_schedule_options *opt, viz_schedule_layout *out) {
    if (!opt) opt = &k_default_options;
    layout_at_scale(s, sim, scale_for(sim->makespan), opt,
                    opt->no_memory ? 0 : most_held(s, sim, 1), out);
}

void viz_schedule_layout_compute(const pp_schedule *s, const pp_sim *sim,
                                 viz_schedule_layout *out) {
    viz_schedule_layout_compute_opt(s, sim, NULL, out);
}

void viz_schedule_layout_free(viz_schedule_layout *l) {
    free(l->boxes);
    free(l->gaps);
    free(l->strips);
    free(l->right);
    for (int r = 0; r < l->nmem; r++) viz_sched_mem_free(&l->mem[r]);
    free(l->mem);
    free(l->arrows);
    memset(l, 0, sizeof *l);
}

static void draw_axis(cairo_t *cr, const viz_schedule_layout *l, double makespan) {
    const double y = l->axis_y;
    viz_set_rgb(cr, VIZ_GRID);
    cairo_set_line_width(cr, 1.0);
    cairo_move_to(cr, l->plot_x, y);
    cairo_line_to(cr, l->plot_x + l->plot_w, y);
    cairo_stroke(cr);
    char buf[32];
    const int nt = (int)floor(makespan / l->tick_step + 1e-9); /* makespan: the plan's own */
    for (int k = 0; k <= nt; k++) {
        double t = k * l->tick_step, x = l->plot_x + t * l->px_per_unit;
        /* a faint vertical guide through the rows, a tick and its number */
        viz_set_rgb(cr, viz_shade(VIZ_GRID, 0.6));
        cairo_set_line_width(cr, 0.5);
        cairo_move_to(cr, x, l->row_y0 - 4);
        cairo_line_to(cr, x, y);
        cairo_stroke(cr);
        viz_set_rgb(cr, VIZ_GRID);
        cairo_set_line_width(cr, 1.0);
        cairo_move_to(cr, x, y);
        cairo_line_to(cr, x, y + 5);
        cairo_stroke(cr);
        snprintf(buf, sizeof buf, "%g", t);
        viz_text(cr, x, y + 17, 10, false, VIZ_CENTER, VIZ_TEXT, buf);
    }
    viz_text(cr, l->plot_x + l->plot_w, y + 31, 10, false, VIZ_RIGHT, VIZ_TEXT,
             "time (units of the forward / backward costs)");
}

static void draw_legend(cairo_t *cr, const viz_schedule_layout *l, pp_kind kind, int v) {
    const double y = l->axis_y + AXIS_H + 16, size = 11;
    double x = l->plot_x;
    viz_rgb colors[4] = {VIZ_FORWARD, VIZ_BACKWARD, VIZ_IDLE, VIZ_WEIGHT};
    const char *labels[4] = {"forward (micro-batch inside)", "backward", "idle (bubble)",
                             "weight gradient W"};
    if (pp_splits_backward(kind)) { /* split backward: B is the input gradient, W comes after it */
        labels[1] = "backward B: input gradient";
        colors[2] = VIZ_WEIGHT, labels[2] = "weight gradient W";
        colors[3] = VIZ_IDLE, labels[3] = "idle (bubble)";
    }
    x += viz_legend(cr, x, y, size, pp_splits_backward(kind) ? 4 : 3, colors, labels);
    if (v > 1) { /* the chunk marker, drawn like the boxes */
        viz_box(cr, x, y - size, size, size, viz_shade(VIZ_FORWARD, 0.45));
        viz_hatch(cr, x, y - size, size, size, viz_shade(VIZ_FORWARD, -0.3), 4);
        x += size * 1.4;
        viz_text(cr, x, y - size * 0.12, size, false, VIZ_LEFT, VIZ_TEXT,
                 "chunk ≥ 1 (lighter, hatched)");
        x += viz_text_width(cr, size, false, "chunk ≥ 1 (lighter, hatched)") + size * 1.6;
    }
    /* GPipe has no steady phase: leave it out of its legend */
    const pp_phase order[3] = {PP_WARMUP, PP_STEADY, PP_COOLDOWN};
    viz_rgb pc[3];
    const char *pl[3];
    int n = 0;
    for (int i = 0; i < 3; i++) {
        if (kind == PP_GPIPE && order[i] == PP_STEADY) continue;
        pc[n] = phase_color(order[i]);
        pl[n++] = phase_word(kind, order[i]);
    }
    x += viz_legend(cr, x, y, size, n, pc, pl);
    if (l->nmem > 0) /* the activations curve and its unit (chunk sets: see the peaks) */
        viz_legend(cr, x, y, size, 1, (viz_rgb[]){viz_shade(VIZ_MEMORY, 0.5)},
                   (const char *[]){"held (micro-batches)"});
}

/* Under every row: its activations over time, on the band's baseline, named at the left. */
static void paint_memory(cairo_t *cr, const viz_schedule_layout *l) {
    for (int r = 0; r < l->nmem; r++) {
        const double base = l->row_y0 + r * l->row_pitch + l->mem_base;
        viz_set_rgb(cr, viz_shade(VIZ_GRID, 0.5));
        cairo_set_line_width(cr, 0.5);
        cairo_move_to(cr, l->plot_x, base + 0.25);
        cairo_line_to(cr, l->plot_x + l->plot_w, base + 0.25);
        cairo_stroke(cr);
        viz_text(cr, LEFT - 10, base - 2, 9, false, VIZ_RIGHT, VIZ_MEMORY, "held");
        viz_sched_mem_paint(cr, &l->mem[r], l->plot_x, l->px_per_unit, base, l->px_per_set);
    }
}

/* A dependency, thin and light: a straight arrow between rows, an arc above a row for a V's
 * turn-around on one rank. */
static void draw_arrow(cairo_t *cr, const viz_sched_arrow *a) {
    cairo_save(cr);
    cairo_set_source_rgba(cr, 0.15, 0.15, 0.25, 0.45);
    cairo_set_line_width(cr, 0.7);
    double ux, uy; /* the head's direction */
    cairo_move_to(cr, a->x1, a->y1);
    if (a->same_row) {
        const double lift = 12;
        cairo_curve_to(cr, a->x1, a->y1 - lift, a->x2, a->y2 - lift, a->x2, a->y2);
        ux = 0, uy = 1;
    } else {
        cairo_line_to(cr, a->x2, a->y2);
        const double dx = a->x2 - a->x1, dy = a->y2 - a->y1, len = fmax(1e-9, hypot(dx, dy));
        ux = dx / len, uy = dy / len;
    }
    cairo_stroke(cr);
    const double h = 4; /* a small filled head */
    cairo_move_to(cr, a->x2, a->y2);
    cairo_line_to(cr, a->x2 - h * ux - 0.5 * h * uy, a->y2 - h * uy + 0.5 * h * ux);
    cairo_line_to(cr, a->x2 - h * ux + 0.5 * h * uy, a->y2 - h * uy - 0.5 * h * ux);
    cairo_close_path(cr);
    cairo_fill(cr);
    cairo_restore(cr);
}

/* Paints one layout (its legend too when `legend`). */
static void paint(cairo_t *cr, const viz_schedule_layout *lp, const pp_schedule *s,
                  const pp_sim *sim, bool legend) {
    const viz_schedule_layout l = *lp;

    viz_text(cr, LEFT, 26, 14, true, VIZ_LEFT, VIZ_TEXT, l.title);
    draw_axis(cr, &l, sim->makespan);

    char buf[32];
    for (int r = 0; r < s->cfg.p; r++) {
        double y = l.row_y0 + r * l.row_pitch;
        snprintf(buf, sizeof buf, "rank %d", r);
        viz_text(cr, LEFT - 10, y + BOX_H * 0.65, 12, true, VIZ_RIGHT, VIZ_TEXT, buf);
        viz_text(cr, l.plot_x + l.plot_w + 12, y + BOX_H * 0.65, 11, false, VIZ_LEFT, VIZ_TEXT,
                 l.right[r]);
    }
    for (int i = 0; i < l.ngap; i++) {
        const viz_sched_rect *g = &l.gaps[i];
        cairo_rectangle(cr, g->x, g->y, g->w, g->h);
        viz_set_rgb(cr, g->fill);
        cairo_fill(cr);
    }
    for (int i = 0; i < l.nbox; i++) {
        const viz_sched_rect *b = &l.boxes[i];
        viz_box(cr, b->x, b->y, b->w, b->h, b->fill);
        const pp_action *a = &s->ranks[b->rank].actions[b->action];
        viz_rgb base = op_color(a->op);
        if (b->hatched)
            viz_hatch(cr, b->x + 0.5, b->y + 0.5, b->w - 1, b->h - 1, viz_shade(base, -0.1),
                      b->hatch_gap);
        if (b->label[0]) {
            double fs = b->w >= 22 ? 12 : 9;
            viz_rgb ink = b->hatched ? VIZ_TEXT : (viz_rgb){1, 1, 1};
            if (b->hatched) { /* a white patch under the number keeps it readable on hatching */
                double tw = viz_text_width(cr, fs, true, b->label);
                cairo_rectangle(cr, b->x + b->w / 2 - tw / 2 - 2, b->y + b->h / 2 - fs * 0.5 - 1,
                                tw + 4, fs + 1);
                cairo_set_source_rgb(cr, 1, 1, 1);
                cairo_fill(cr);
            }
            viz_text(cr, b->x + b->w / 2, b->y + b->h / 2 + fs * 0.36, fs, true, VIZ_CENTER, ink,
                     b->label);
        }
    }
    for (int i = 0; i < l.nstrip; i++) {
        const viz_sched_rect *st = &l.strips[i];
        cairo_rectangle(cr, st->x, st->y, st->w, st->h);
        viz_set_rgb(cr, st->fill);
        cairo_fill(cr);
        /* Name the phase under the strip when it is wide enough. */
        const char *word = phase_word(s->cfg.kind, st->phase);
        if (viz_text_width(cr, 8, false, word) + 6 < st->w)
            viz_text(cr, st->x + st->w / 2, st->y + st->h + 8, 8, false, VIZ_CENTER,
                     viz_shade(VIZ_TEXT, 0.35), word);
    }
    paint_memory(cr, &l);
    for (int i = 0; i < l.narrow; i++) draw_arrow(cr, &l.arrows[i]);
    if (legend) draw_legend(cr, &l, s->cfg.kind, s->cfg.v);
}

void viz_schedule_stack_compute_opt(const pp_schedule *s, const pp_sim *sim, int n,
                                    const viz_schedule_options *opt, viz_schedule_layout *out,
                                    double *panel_y, double *width, double *height) {
    if (!opt) opt = &k_default_options;
    double T = 0;
    for (int i = 0; i < n; i++) T = sim[i].makespan > T ? sim[i].makespan : T;
    const double ppu = scale_for(T); /* one time scale for every panel */
    const double mem_max = opt->no_memory ? 0 : most_held(s, sim, n); /* one memory scale */
    viz_schedule_options each = *opt;
    if (n > 1) each.title = NULL; /* a stack's title heads it: every panel keeps its line */
    *width = 0;
    *height = n > 1 && opt->title ? HEAD_H : 0;
    for (int i = 0; i < n; i++) {
        layout_at_scale(&s[i], &sim[i], ppu, &each, mem_max, &out[i]);
        panel_y[i] = *height;
        const bool last = i == n - 1; /* only the last panel keeps the legend */
        *height += last ? out[i].height : out[i].axis_y + AXIS_H;
        if (out[i].width > *width) *width = out[i].width;
    }
}

void viz_schedule_stack_compute(const pp_schedule *s, const pp_sim *sim, int n,
                                viz_schedule_layout *out, double *panel_y, double *width,
                                double *height) {
    viz_schedule_stack_compute_opt(s, sim, n, NULL, out, panel_y, width, height);
}

/* One picture (or page of a build): the stack's layouts at opt->until, painted. */
typedef struct {
    const pp_schedule *s;
    const pp_sim *sim;
    int n;
    viz_schedule_options opt;
} stack_job;

static void paint_stack(cairo_t *cr, int k, int K, double cut, void *ctx) {
    stack_job *job = ctx;
    job->opt.until = cut;
    const int n = job->n;
    viz_schedule_layout *l = callocCheck((size_t)n, sizeof *l);
    double *y = callocCheck((size_t)n, sizeof *y), width, height;
    viz_schedule_stack_compute_opt(job->s, job->sim, n, &job->opt, l, y, &width, &height);
    if (n > 1 && job->opt.title)
        viz_text(cr, LEFT, 24, 15, true, VIZ_LEFT, VIZ_TEXT, job->opt.title);
    for (int i = 0; i < n; i++) {
        cairo_save(cr);
        cairo_translate(cr, 0, y[i]);
        paint(cr, &l[i], &job->s[i], &job->sim[i], i == n - 1);
        cairo_restore(cr);
    }
    if (K > 0) { /* a build's page: the cut in every panel, the page number */
        for (int i = 0; i < n; i++)
            viz_build_now(cr, LEFT + cut * l[i].px_per_unit, y[i] + TOP - 8, y[i] + l[i].axis_y, k,
                          K);
        viz_build_page_number(cr, k, K, width - 14, 24);
    }
    for (int i = 0; i < n; i++) viz_schedule_layout_free(&l[i]);
    free(l);
    free(y);
}

void viz_schedule_draw_opt(const pp_schedule *s, const pp_sim *sim, int n,
                           const viz_schedule_options *opt, const char *path) {
    CHECK(n >= 1, "a stack has at least one schedule");
    stack_job job = {s, sim, n, opt ? *opt : k_default_options};
    job.opt.until = 0;
    viz_schedule_layout *l = callocCheck((size_t)n, sizeof *l);
    double *y = callocCheck((size_t)n, sizeof *y), width, height, T = 0;
    viz_schedule_stack_compute_opt(s, sim, n, &job.opt, l, y, &width, &height);
    for (int i = 0; i < n; i++) {
        T = sim[i].makespan > T ? sim[i].makespan : T;
        viz_schedule_layout_free(&l[i]);
    }
    free(l);
    free(y);
    if (job.opt.build > 0) {
        viz_build_write(path, job.opt.build, T, width, height, paint_stack, &job);
        return;
    }
    viz_canvas cv;
    viz_canvas_open(&cv, path, width, height);
    paint_stack(cv.cr, 0, 0, 0, &job);
    viz_canvas_close(&cv);
}

void viz_schedule_draw(const pp_schedule *s, const pp_sim *sim, const char *path) {
    viz_schedule_draw_opt(s, sim, 1, NULL, path);
}

void viz_schedule_draw_stack(const pp_schedule *s, const pp_sim *sim, int n, const char *path) {
    viz_schedule_draw_opt(s, sim, n, NULL, path);
}
