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
#include "viz/schedule_arrows.h"

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
    HEAD_H = 34,    /* a stack's own title (--title with --compare) */
    BOX_H_MAX = 150 /* a frame taller than the picture (--height) grows the boxes up to this */
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
    g->h = out->box_h;
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
    b->h = out->box_h;
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
        st->y = y + out->box_h + 2;
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

/* The legend's entries: the kinds (with the chunk marker, hatched, when v > 1), the phases
 * (GPipe has no steady phase), and the activations curve when drawn. Returns how many (at
 * most 9). */
static int legend_entries(pp_kind kind, int v, bool mem, viz_rgb *colors, const char **labels,
                          bool *hatched) {
    int n = 0;
    const bool split = pp_splits_backward(kind); /* B is the input gradient, W comes after it */
    colors[n] = VIZ_FORWARD, labels[n++] = "forward (micro-batch inside)";
    colors[n] = VIZ_BACKWARD, labels[n++] = split ? "backward B: input gradient" : "backward";
    if (split) colors[n] = VIZ_WEIGHT, labels[n++] = "weight gradient W";
    colors[n] = VIZ_IDLE, labels[n++] = "idle (bubble)";
    for (int i = 0; i < 9; i++) hatched[i] = false;
    if (v > 1) { /* the chunk marker, drawn like the boxes */
        hatched[n] = true;
        colors[n] = viz_shade(VIZ_FORWARD, 0.45), labels[n++] = "chunk ≥ 1 (lighter, hatched)";
    }
    const pp_phase order[3] = {PP_WARMUP, PP_STEADY, PP_COOLDOWN};
    for (int i = 0; i < 3; i++) {
        if (kind == PP_GPIPE && order[i] == PP_STEADY) continue;
        colors[n] = phase_color(order[i]), labels[n++] = phase_word(kind, order[i]);
    }
    if (mem) /* the activations curve and its unit (chunk sets: see the peaks) */
        colors[n] = viz_shade(VIZ_MEMORY, 0.5), labels[n++] = "held (micro-batches)";
    return n;
}

/* The title wrapped at the page's width; returns its lines. */
static int title_drawn(const viz_schedule_layout *l, char *out, size_t cap) {
    return viz_wrap(l->title, 14, true, l->width - LEFT - 10, out, cap);
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

/* The page around the rows: the right gutter holds the widest idle/peak text, the title wraps
 * inside the page and moves the rows down by its extra lines, the legend wraps under the
 * axis. */
static void layout_page(viz_schedule_layout *out, const pp_config *c) {
    double right = RIGHT;
    for (int r = 0; r < c->p; r++) right = fmax(right, viz_measure(11, false, out->right[r]) + 26);
    out->width = ceil(LEFT + out->plot_w + right);
    char t[400];
    const double shift = (title_drawn(out, t, sizeof t) - 1) * viz_line_pitch(14) +
                         (viz_theme_current()->text_scale - 1) * 14;
    out->row_y0 = TOP + shift;
    for (int i = 0; i < out->nbox; i++) out->boxes[i].y += shift;
    for (int i = 0; i < out->ngap; i++) out->gaps[i].y += shift;
    for (int i = 0; i < out->nstrip; i++) out->strips[i].y += shift;
    out->axis_y = out->row_y0 + c->p * out->row_pitch + 4;
    viz_rgb colors[9];
    const char *labels[9];
    bool hatched[9];
    const int n = legend_entries(c->kind, c->v, out->nmem > 0, colors, labels, hatched);
    const int rows = viz_legend_rows(11, n, labels, out->width - LEFT - 10);
    out->height = ceil(out->axis_y + AXIS_H + LEGEND_H + (rows - 1) * viz_legend_pitch(11));
}

/* Scale and box height for a frame of fw x fh points asked with --width/--height (0: unset):
 * the plot takes the frame's width, the boxes the spare height (up to BOX_H_MAX); a picture
 * that stays shorter is centred by the canvas. p_total rows in all. */
static void fit_frame(const viz_schedule_layout *first, double T, double height, int p_total,
                      double *ppu, double *box_h) {
    double fw, fh;
    viz_output_frame(&fw, &fh);
    if (fw > 0) *ppu = fmax(1e-3, (fw - (first->width - first->plot_w)) / (T > 0 ? T : 1));
    const double page_w = first->width - first->plot_w + T * *ppu;
    if (fh > 0 && p_total > 0) {
        const double goal = fw > 0 ? fh * page_w / fw : fh; /* in the page's own points */
        *box_h = fmin(BOX_H_MAX, BOX_H + fmax(0, floor((goal - height) / p_total)));
    }
}

/* The layout at a given scale (points per unit of time), boxes box_h high; mem_max:
 * micro-batches of activations at the top of every band (0: no band). */
static void layout_at_scale(const pp_schedule *s, const pp_sim *sim, double ppu, double box_h,
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
    out->box_h = box_h;
    out->strip_h = STRIP_H;
    out->row_y0 = TOP; /* the boxes' y is final below, once the title's lines are known */
    out->row_pitch = box_h + 2 + STRIP_H + ROW_GAP;
    if (mem_max > 0) {
        out->mem_max = mem_max;
        out->mem_base = box_h + 2 + STRIP_H + MEM_GAP + MEM_H;
        out->px_per_set = (MEM_H - MEM_HEADROOM) / (mem_max * c->v); /* a set: 1/v of one */
        out->row_pitch += MEM_GAP + MEM_H;
    }
    out->tick_step = nice_step(ppu, 36);
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
    layout_title(out, c, sim);
    if (opt->title) snprintf(out->title, sizeof out->title, "%s", opt->title);
    layout_page(out, c);
    if (opt->arrows) viz_sched_arrows_layout(out, s, sim);
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
    const double mem_max = opt->no_memory ? 0 : most_held(s, sim, 1);
    double ppu = scale_for(sim->makespan), box_h = BOX_H;
    layout_at_scale(s, sim, ppu, box_h, opt, mem_max, out);
    fit_frame(out, sim->makespan, out->height, s->cfg.p, &ppu, &box_h);
    if (ppu == out->px_per_unit && box_h == BOX_H) return;
    viz_schedule_layout_free(out);
    layout_at_scale(s, sim, ppu, box_h, opt, mem_max, out);
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
    viz_rgb colors[9];
    const char *labels[9];
    bool hatched[9];
    const int n = legend_entries(kind, v, l->nmem > 0, colors, labels, hatched);
    viz_legend_wrap(cr, l->plot_x, l->axis_y + AXIS_H + 16, 11, n, colors, labels, hatched,
                    l->width - LEFT - 10);
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

/* Paints one layout (its legend too when `legend`). */
static void paint(cairo_t *cr, const viz_schedule_layout *lp, const pp_schedule *s,
                  const pp_sim *sim, bool legend) {
    const viz_schedule_layout l = *lp;

    char title[400];
    title_drawn(&l, title, sizeof title);
    viz_text_lines(cr, LEFT, 26, 14, true, VIZ_LEFT, VIZ_TEXT, title);
    draw_axis(cr, &l, sim->makespan);

    char buf[32];
    for (int r = 0; r < s->cfg.p; r++) {
        double y = l.row_y0 + r * l.row_pitch;
        snprintf(buf, sizeof buf, "rank %d", r);
        const double mid = y + l.box_h / 2 + 4 * viz_theme_current()->text_scale;
        viz_text(cr, LEFT - 10, mid, 12, true, VIZ_RIGHT, VIZ_TEXT, buf);
        viz_text(cr, l.plot_x + l.plot_w + 12, mid, 11, false, VIZ_LEFT, VIZ_TEXT, l.right[r]);
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
        if (b->label[0]) { /* black or white by contrast; a plate over hatching or a pattern */
            double fs = b->w >= 22 ? 12 : 9;
            const double ts = viz_theme_current()->text_scale;
            viz_text_on_fill(cr, b->x + b->w / 2, b->y + b->h / 2 + fs * 0.36 * ts, fs, true,
                             VIZ_CENTER, b->fill, b->hatched || viz_theme_current()->patterns,
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
    for (int i = 0; i < l.narrow; i++) viz_sched_arrow_draw(cr, &l.arrows[i]);
    if (legend) draw_legend(cr, &l, s->cfg.kind, s->cfg.v);
}

/* The panels of a stack at one scale and box height, one under the other. */
static void stack_at(const pp_schedule *s, const pp_sim *sim, int n, double ppu, double box_h,
                     const viz_schedule_options *opt, double mem_max, viz_schedule_layout *out,
                     double *panel_y, double *width, double *height) {
    viz_schedule_options each = *opt;
    if (n > 1) each.title = NULL; /* a stack's title heads it: every panel keeps its line */
    *width = 0;
    *height = n > 1 && opt->title ? HEAD_H : 0;
    for (int i = 0; i < n; i++) {
        layout_at_scale(&s[i], &sim[i], ppu, box_h, &each, mem_max, &out[i]);
        panel_y[i] = *height;
        const bool last = i == n - 1; /* only the last panel keeps the legend */
        *height += last ? out[i].height : out[i].axis_y + AXIS_H;
        if (out[i].width > *width) *width = out[i].width;
    }
}

void viz_schedule_stack_compute_opt(const pp_schedule *s, const pp_sim *sim, int n,
                                    const viz_schedule_options *opt, viz_schedule_layout *out,
                                    double *panel_y, double *width, double *height) {
    if (!opt) opt = &k_default_options;
    double T = 0;
    int rows = 0;
    for (int i = 0; i < n; i++) T = sim[i].makespan > T ? sim[i].makespan : T;
    for (int i = 0; i < n; i++) rows += s[i].cfg.p;
    const double mem_max = opt->no_memory ? 0 : most_held(s, sim, n); /* one memory scale */
    double ppu = scale_for(T), box_h = BOX_H; /* one time scale for every panel */
    stack_at(s, sim, n, ppu, box_h, opt, mem_max, out, panel_y, width, height);
    viz_schedule_layout first = out[0];
    first.plot_w = T * ppu, first.width = *width; /* the widest panel's page */
    fit_frame(&first, T, *height, rows, &ppu, &box_h);
    if (ppu == scale_for(T) && box_h == BOX_H) return;
    for (int i = 0; i < n; i++) viz_schedule_layout_free(&out[i]);
    stack_at(s, sim, n, ppu, box_h, opt, mem_max, out, panel_y, width, height);
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
            viz_build_now(cr, LEFT + cut * l[i].px_per_unit, y[i] + l[i].row_y0 - 8,
                          y[i] + l[i].axis_y, k, K);
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
    viz_canvas_open_fitted(&cv, path, width, height);
    paint_stack(cv.cr, 0, 0, 0, &job);
    viz_canvas_close(&cv);
}

void viz_schedule_draw(const pp_schedule *s, const pp_sim *sim, const char *path) {
    viz_schedule_draw_opt(s, sim, 1, NULL, path);
}

void viz_schedule_draw_stack(const pp_schedule *s, const pp_sim *sim, int n, const char *path) {
    viz_schedule_draw_opt(s, sim, n, NULL, path);
}
