/* metrics_plot.c — see metrics_plot.h. */
#include "viz/metrics_plot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/core/check.h"
#include "viz/axis.h"
#include "viz/canvas.h"

enum {
    MARGIN_L = 78,
    MARGIN_R = 24,
    TITLE_H = 40,
    LEGEND_LINE = 17,
    PANEL_H = 150,
    PANEL_GAP = 34,
    BOTTOM = 52
};

static const char *const k_titles[VIZ_MP_PANELS] = {
    "loss (nats per token)",
    "learning rate",
    "gradient norm (before clipping)",
    "tokens/s (whole job)",
};

double viz_mp_value(const run_metrics_step *s, viz_mp_quantity q) {
    switch (q) {
    case VIZ_MP_LOSS: return s->loss;
    case VIZ_MP_LR: return s->lr;
    case VIZ_MP_GRAD_NORM: return s->grad_norm;
    case VIZ_MP_TOKENS: return s->tokens_per_sec;
    default: return NAN;
    }
}

/* The key of quantity q in metrics.jsonl, for messages. */
static const char *const k_keys[VIZ_MP_PANELS] = {"loss", "lr", "grad_norm", "tokens_per_sec"};

/* One value of run m at step, checked against what an axis spans; widens lo..hi. */
static bool take(double v, const run_metrics *m, int step, const char *key, double *lo, double *hi,
                 char *err, size_t errlen) {
    if (!isfinite(v)) return true; /* not drawn */
    if (fabs(v) > VIZ_AXIS_LIMIT) {
        snprintf(err, errlen,
                 "'%s/metrics.jsonl': %s %g at step %d is beyond what a plot's axis spans "
                 "(|value| at most %g)",
                 m->dir, key, v, step, VIZ_AXIS_LIMIT);
        return false;
    }
    *lo = fmin(*lo, v), *hi = fmax(*hi, v);
    return true;
}

/* Panel q's range over every run (the loss panel also holds the held-out loss). */
static bool panel_range(const run_metrics *const *runs, int n, int q, double *lo, double *hi,
                        char *err, size_t errlen) {
    *lo = INFINITY, *hi = -INFINITY;
    for (int r = 0; r < n; r++) {
        const run_metrics *m = runs[r];
        for (int i = 0; i < m->nsteps; i++)
            if (!take(viz_mp_value(&m->steps[i], (viz_mp_quantity)q), m, m->steps[i].step,
                      k_keys[q], lo, hi, err, errlen))
                return false;
        for (int i = 0; q == VIZ_MP_LOSS && i < m->nevals; i++)
            if (!take(m->evals[i].loss, m, m->evals[i].step, "eval_loss", lo, hi, err, errlen))
                return false;
    }
    return true;
}

/* The finite reference levels, copied into the layout. */
static void take_levels(viz_metrics_layout *out, const viz_mp_levels *levels) {
    for (int i = 0; levels && i < levels->n && i < VIZ_MP_MAX_LEVELS; i++)
        if (isfinite(levels->level[i].value) && fabs(levels->level[i].value) <= VIZ_AXIS_LIMIT)
            out->level[out->nlevels++] = levels->level[i];
}

bool viz_metrics_layout_of(const run_metrics *const *runs, int n, double width,
                           const viz_mp_levels *levels, viz_metrics_layout *out, char *err,
                           size_t errlen) {
    CHECK(n >= 1, "viz_metrics_layout_of: at least one run");
    memset(out, 0, sizeof *out);
    out->width = width;
    take_levels(out, levels);
    out->legend_y = TITLE_H + 8;
    const double top = out->legend_y + LEGEND_LINE * n + 8;
    double slo = INFINITY, shi = -INFINITY; /* steps are ints: always within an axis */
    for (int r = 0; r < n; r++) {
        for (int i = 0; i < runs[r]->nsteps; i++) {
            slo = fmin(slo, runs[r]->steps[i].step);
            shi = fmax(shi, runs[r]->steps[i].step);
        }
        for (int i = 0; i < runs[r]->nevals; i++) {
            slo = fmin(slo, runs[r]->evals[i].step);
            shi = fmax(shi, runs[r]->evals[i].step);
        }
    }
    if (!(slo <= shi)) slo = 0, shi = 1;
    if (!(shi > slo)) shi = slo + 1;
    out->step_lo = slo;
    out->step_hi = shi;
    out->step_tick = fmax(1, viz_axis_step((shi - slo) / 6));
    for (int q = 0; q < VIZ_MP_PANELS; q++) {
        viz_mp_panel *p = &out->panel[q];
        p->title = k_titles[q];
        p->x = MARGIN_L;
        p->w = width - MARGIN_L - MARGIN_R;
        p->y = top + q * (PANEL_H + PANEL_GAP) + 18; /* room for the panel's title */
        p->h = PANEL_H;
        double lo, hi;
        if (!panel_range(runs, n, q, &lo, &hi, err, errlen)) return false;
        p->empty = !(hi >= lo);
        for (int i = 0; q == VIZ_MP_LOSS && !p->empty && i < out->nlevels; i++)
            lo = fmin(lo, out->level[i].value), hi = fmax(hi, out->level[i].value);
        if (p->empty) lo = 0, hi = 1;
        viz_axis ax;
        CHECK(viz_axis_of(lo, hi, 4, &ax), "values within VIZ_AXIS_LIMIT always make an axis");
        p->lo = ax.lo, p->hi = ax.hi, p->tick_step = ax.step, p->ticks = ax.intervals;
    }
    for (int i = 0; i < out->nlevels; i++)
        out->level_y[i] = viz_mp_y(&out->panel[VIZ_MP_LOSS], out->level[i].value);
    const viz_mp_panel *last = &out->panel[VIZ_MP_PANELS - 1];
    out->height = last->y + last->h + BOTTOM;
    return true;
}

double viz_mp_x(const viz_metrics_layout *l, double step) {
    const viz_mp_panel *p = &l->panel[0];
    return p->x + VIZ_MP_INSET +
           (p->w - 2 * VIZ_MP_INSET) * (step - l->step_lo) / (l->step_hi - l->step_lo);
}

double viz_mp_y(const viz_mp_panel *p, double value) {
    return p->y + p->h - p->h * (value - p->lo) / (p->hi - p->lo);
}

void viz_mp_label(const run_metrics *m, char *buf, size_t cap) {
    if (m->layout[0]) snprintf(buf, cap, "%s — %s", m->layout, m->dir);
    else snprintf(buf, cap, "%s", m->dir);
}

/* A legend line wider than max_w keeps its start (the layout) and the end of the run's path,
 * with "…" between: a deep directory never runs off the page. */
static void fit_label(char *label, double max_w) {
    const size_t n = strlen(label);
    if (viz_measure(10, false, label) <= max_w || n < 16) return;
    const size_t head = strstr(label, " — ") ? (size_t)(strstr(label, " — ") - label) + 5 : 0;
    char tail[4400];
    snprintf(tail, sizeof tail, "%s", label);
    for (size_t keep = n - head - 1; keep > 8; keep--) {
        size_t from = n - keep;
        while (from < n && ((unsigned char)label[from] & 0xC0) == 0x80) from++; /* whole chars */
        snprintf(tail, sizeof tail, "%.*s…%s", (int)head, label, label + from);
        if (viz_measure(10, false, tail) <= max_w) break;
    }
    snprintf(label, n + 1, "%s", tail);
}

/* A tick value as text: %g of the value rounded to its tick step (no 0.30000000000000004). */
static void tick_text(char *buf, size_t cap, double v, double step) {
    v = round(v / step) * step;
    if (fabs(v) < 1e-12 * step) v = 0;
    snprintf(buf, cap, "%g", v);
}

static void draw_frame(cairo_t *cr, const viz_metrics_layout *l, const viz_mp_panel *p,
                       bool x_labels) {
    char s[64];
    viz_text(cr, p->x, p->y - 7, 11, true, VIZ_LEFT, VIZ_TEXT, p->title);
    viz_line_width(cr, 0.6);
    for (int k = 0; k <= p->ticks; k++) { /* y grid and labels */
        double v = p->lo + k * p->tick_step;
        double y = viz_mp_y(p, v);
        viz_set_rgb(cr, VIZ_GRID);
        cairo_move_to(cr, p->x, y);
        cairo_line_to(cr, p->x + p->w, y);
        cairo_stroke(cr);
        tick_text(s, sizeof s, v, p->tick_step);
        if (!p->empty) viz_text(cr, p->x - 6, y + 3.5, 9, false, VIZ_RIGHT, VIZ_TEXT, s);
    }
    double first = ceil(l->step_lo / l->step_tick - 1e-9) * l->step_tick;
    int nx = (int)floor((l->step_hi - first) / l->step_tick + 1e-9); /* about 6: steps are ints */
    for (int k = 0; k <= nx; k++) {                                  /* x grid */
        double st = first + k * l->step_tick;
        double x = viz_mp_x(l, st);
        viz_set_rgb(cr, VIZ_GRID);
        cairo_move_to(cr, x, p->y);
        cairo_line_to(cr, x, p->y + p->h);
        cairo_stroke(cr);
        if (x_labels) {
            snprintf(s, sizeof s, "%g", st);
            viz_text(cr, x, p->y + p->h + 14, 9, false, VIZ_CENTER, VIZ_TEXT, s);
        }
    }
    viz_set_rgb(cr, VIZ_TEXT);
    viz_line_width(cr, 1.0);
    cairo_rectangle(cr, p->x, p->y, p->w, p->h);
    cairo_stroke(cr);
    if (p->empty)
        viz_text(cr, p->x + p->w / 2, p->y + p->h / 2, 11, false, VIZ_CENTER,
                 viz_shade(VIZ_TEXT, 0.35), "no data in these runs");
}

/* Run r's line width: each later run thinner, so coinciding curves stay visible. */
static double line_width(int r, int n) {
    if (n == 1) return 1.8;
    double w = 5.0 - 3.6 * r / (n - 1);
    return w < 1.2 ? 1.2 : w;
}

static void draw_steps(cairo_t *cr, const viz_metrics_layout *l, const viz_mp_panel *p,
                       const run_metrics *m, viz_mp_quantity q, viz_rgb color, double lw) {
    viz_set_rgb(cr, color);
    viz_line_width(cr, lw);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    bool open = false;
    for (int i = 0; i < m->nsteps; i++) {
        double v = viz_mp_value(&m->steps[i], q);
        if (!isfinite(v)) {
            open = false; /* a gap: the norm was not finite, or the value absent */
            continue;
        }
        double x = viz_mp_x(l, m->steps[i].step), y = viz_mp_y(p, v);
        if (open) cairo_line_to(cr, x, y);
        else cairo_move_to(cr, x, y), cairo_line_to(cr, x, y); /* a lone point shows as a dot */
        open = true;
    }
    cairo_stroke(cr);
}

/* Text on a white backing, so that a curve passing under it does not hide it; align is
 * VIZ_LEFT or VIZ_RIGHT. */
static void backed_text(cairo_t *cr, double x, double y, bool bold, viz_align align, viz_rgb ink,
                        const char *s) {
    const double size = 9, w = viz_text_width(cr, size, bold, s);
    const double x0 = align == VIZ_RIGHT ? x - w : x;
    cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
    cairo_rectangle(cr, x0 - 2, y - size, w + 4, size + 3);
    cairo_fill(cr);
    viz_text(cr, x, y, size, bold, align, ink, s);
}

/* The loss panel's reference levels: dashed lines (under the curves), or their labels, "label:
 * value" above each line at the left (over the curves). */
static void draw_levels(cairo_t *cr, const viz_metrics_layout *l, bool labels) {
    const viz_mp_panel *p = &l->panel[VIZ_MP_LOSS];
    const double dash[2] = {3, 3};
    char s[256];
    for (int i = 0; i < l->nlevels; i++) {
        if (labels) {
            snprintf(s, sizeof s, "%s: %.3f", l->level[i].label, l->level[i].value);
            backed_text(cr, p->x + VIZ_MP_INSET, l->level_y[i] - 3, false, VIZ_LEFT, VIZ_TEXT, s);
            continue;
        }
        viz_set_rgb(cr, VIZ_TEXT);
        viz_line_width(cr, 0.9);
        cairo_set_dash(cr, dash, 2, 0);
        cairo_move_to(cr, p->x, l->level_y[i]);
        cairo_line_to(cr, p->x + p->w, l->level_y[i]);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
    }
}

static void draw_evals(cairo_t *cr, const viz_metrics_layout *l, const viz_mp_panel *p,
                       const run_metrics *m, viz_rgb color, double lw) {
    if (m->nevals == 0) return;
    const double dash[2] = {6, 4};
    viz_rgb ink = viz_shade(color, -0.35); /* darker still where a light colour needs it */
    for (double t = -0.45; viz_contrast(ink, (viz_rgb){1, 1, 1}) < VIZ_MIN_CONTRAST && t >= -1;
         t -= 0.1)
        ink = viz_shade(color, t);
    viz_set_rgb(cr, ink);
    viz_line_width(cr, fmax(1.2, lw * 0.6));
    cairo_set_dash(cr, dash, 2, 0);
    for (int i = 0; i < m->nevals; i++) {
        double x = viz_mp_x(l, m->evals[i].step), y = viz_mp_y(p, m->evals[i].loss);
        if (i == 0) cairo_move_to(cr, x, y);
        else cairo_line_to(cr, x, y);
    }
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    for (int i = 0; i < m->nevals; i++) { /* ringed in white: visible on the training curve */
        cairo_arc(cr, viz_mp_x(l, m->evals[i].step), viz_mp_y(p, m->evals[i].loss), 2.5 + lw * 0.6,
                  0, 2 * M_PI);
        viz_set_rgb(cr, ink);
        cairo_fill_preserve(cr);
        viz_set_rgb(cr, (viz_rgb){1, 1, 1});
        viz_line_width(cr, 1.2);
        cairo_stroke(cr);
    }
    const run_metrics_eval *e = &m->evals[m->nevals - 1]; /* the last: its value, above-left */
    char s[64];
    snprintf(s, sizeof s, "held-out %.3f", e->loss);
    const double x = viz_mp_x(l, e->step), y = viz_mp_y(p, e->loss) - 8;
    if (x - 6 - viz_text_width(cr, 9, true, s) >= p->x) /* room on the left of the dot */
        backed_text(cr, x - 6, y, true, VIZ_RIGHT, ink, s);
    else /* the dot near the left edge (a run of one step): its value above-right */
        backed_text(cr, x + 6, y, true, VIZ_LEFT, ink, s);
}

bool viz_metrics_plot(const char *path, const run_metrics *const *runs, int n, double width,
                      const char *title, char *err, size_t errlen) {
    return viz_metrics_plot_levels(path, runs, n, width, title, NULL, err, errlen);
}

bool viz_metrics_plot_levels(const char *path, const run_metrics *const *runs, int n, double width,
                             const char *title, const viz_mp_levels *levels, char *err,
                             size_t errlen) {
    viz_metrics_layout l;
    if (!viz_metrics_layout_of(runs, n, width, levels, &l, err, errlen)) return false;
    viz_canvas c;
    viz_canvas_open(&c, path, l.width, l.height);
    cairo_t *cr = c.cr;
    viz_text(cr, MARGIN_L, 26, 15, true, VIZ_LEFT, VIZ_TEXT, title ? title : "training curves");
    bool any_eval = false;
    for (int r = 0; r < n; r++) any_eval |= runs[r]->nevals > 0;
    viz_text(cr, l.width - MARGIN_R, 26, 10, false, VIZ_RIGHT, VIZ_TEXT,
             any_eval ? "solid: training loss   dashed with dots: held-out loss"
                      : "solid: training loss");
    char label[4400];
    for (int r = 0; r < n; r++) { /* the legend: one line per run */
        double y = l.legend_y + LEGEND_LINE * r;
        viz_set_rgb(cr, viz_categorical(r));
        viz_line_width(cr, line_width(r, n));
        cairo_move_to(cr, MARGIN_L, y - 4);
        cairo_line_to(cr, MARGIN_L + 26, y - 4);
        cairo_stroke(cr);
        viz_mp_label(runs[r], label, sizeof label);
        fit_label(label, l.width - MARGIN_L - 34 - MARGIN_R);
        viz_text(cr, MARGIN_L + 34, y, 10, false, VIZ_LEFT, VIZ_TEXT, label);
    }
    for (int q = 0; q < VIZ_MP_PANELS; q++) {
        const viz_mp_panel *p = &l.panel[q];
        draw_frame(cr, &l, p, q == VIZ_MP_PANELS - 1);
        cairo_save(cr);
        cairo_rectangle(cr, p->x, p->y, p->w, p->h);
        cairo_clip(cr);
        if (q == VIZ_MP_LOSS) draw_levels(cr, &l, false);
        for (int r = 0; r < n; r++) {
            draw_steps(cr, &l, p, runs[r], (viz_mp_quantity)q, viz_categorical(r),
                       line_width(r, n));
            if (q == VIZ_MP_LOSS)
                draw_evals(cr, &l, p, runs[r], viz_categorical(r), line_width(r, n));
        }
        if (q == VIZ_MP_LOSS) draw_levels(cr, &l, true);
        cairo_restore(cr);
    }
    const viz_mp_panel *last = &l.panel[VIZ_MP_PANELS - 1];
    viz_text(cr, last->x + last->w / 2, last->y + last->h + 34, 11, true, VIZ_CENTER, VIZ_TEXT,
             "step");
    viz_canvas_close(&c);
    return true;
}
