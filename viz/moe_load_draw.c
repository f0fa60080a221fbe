/* moe_load_draw.c — see moe_load_draw.h. */
#include "viz/moe_load_draw.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum {
    MARGIN_L = 90,
    MARGIN_R = 30,
    TOP = 100, /* title, subtitle, note, colour bar */
    PANEL_TITLE = 16,
    STRIP_H = 14,
    AXIS_H = 22, /* step labels under a heat map */
    PANEL_GAP = 12,
    BOTTOM = 16
};

static const viz_rgb LOW = {0.16, 0.34, 0.70}, MID = {0.97, 0.97, 0.97}, HIGH = {0.74, 0.10, 0.12};
static const char BAR_LABEL[] = "share of the layer's routed tokens";
static const viz_rgb NO_TOKENS = {0.80, 0.80, 0.80}, DROPPED = {0.55, 0.10, 0.10};

void viz_moe_column_lines(const viz_moe_layout *l, int c, int *first, int *end) {
    *first = (int)((long long)c * l->lines / l->columns);
    *end = (int)((long long)(c + 1) * l->lines / l->columns);
}

/* Σ_e tokens[layer][e] over the column's lines. */
static double routed(const run_metrics *m, const viz_moe_layout *l, int layer, int c) {
    int a, b;
    viz_moe_column_lines(l, c, &a, &b);
    double sum = 0;
    for (int i = a; i < b; i++) {
        const uint32_t *t = m->moe[i].tokens + (size_t)layer * (size_t)l->experts;
        for (int e = 0; e < l->experts; e++) sum += t[e];
    }
    return sum;
}

/* Σ tokens[layer][e] over the column's lines. */
static double expert_tokens(const run_metrics *m, const viz_moe_layout *l, int layer, int e,
                            int c) {
    int a, b;
    viz_moe_column_lines(l, c, &a, &b);
    double mine = 0;
    for (int i = a; i < b; i++) mine += m->moe[i].tokens[(size_t)layer * (size_t)l->experts + e];
    return mine;
}

double viz_moe_share(const run_metrics *m, const viz_moe_layout *l, int layer, int e, int c) {
    double all = routed(m, l, layer, c);
    return all > 0 ? expert_tokens(m, l, layer, e, c) / all : NAN;
}

double viz_moe_dropped_share(const run_metrics *m, const viz_moe_layout *l, int layer, int c) {
    int a, b;
    viz_moe_column_lines(l, c, &a, &b);
    double dropped = 0, all = routed(m, l, layer, c);
    for (int i = a; i < b; i++)
        if (m->moe[i].dropped) dropped += m->moe[i].dropped[layer];
    return all > 0 ? dropped / all : 0;
}

static viz_rgb mix(viz_rgb a, viz_rgb b, double t) {
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    return (viz_rgb){a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

viz_rgb viz_moe_color(const viz_moe_layout *l, double share) {
    if (isnan(share)) return NO_TOKENS;
    if (share <= l->balanced) return mix(LOW, MID, l->balanced > 0 ? share / l->balanced : 1);
    double span = l->scale_max - l->balanced;
    return mix(MID, HIGH, span > 0 ? (share - l->balanced) / span : 1);
}

static void pct(char *buf, size_t cap, double f) {
    snprintf(buf, cap, f < 0.001 && f > 0 ? "%.2f%%" : "%.1f%%", 100 * f);
}

/* The panels from y = TOP down, one per layer shown: its dropped-token strip (when it
 * dropped any) and its heat map. Returns the largest share drawn (at least `top`). */
static double layout_panels(const run_metrics *m, viz_moe_layout *out, double plot_w, double top) {
    const int E = out->experts;
    /* a row per expert, tall enough for its label and its cells' values (7.5 points) */
    const double row = fmax(10, fmin(18, 480.0 / E)) * viz_theme_current()->text_scale;
    const double h = fmax(48, E * row);
    double y = TOP + out->text_shift;
    for (int p = 0; p < out->npanels; p++) {
        viz_moe_panel *P = &out->panel[p];
        P->layer = p;
        for (int c = 0; c < out->columns; c++) {
            const double all = routed(m, out, p, c);
            for (int e = 0; e < E && all > 0; e++) {
                double s = expert_tokens(m, out, p, e, c) / all;
                if (s > top) top = s;
            }
            double d = viz_moe_dropped_share(m, out, p, c);
            if (d > P->dropped_max) P->dropped_max = d;
        }
        P->x = MARGIN_L, P->w = plot_w;
        P->strip_y = y + PANEL_TITLE;
        P->strip_h = P->dropped_max > 0 ? STRIP_H : 0;
        P->y = P->strip_y + P->strip_h;
        P->h = h;
        if (P->dropped_max > 0) {
            char d[24];
            pct(d, sizeof d, P->dropped_max);
            snprintf(P->title, sizeof P->title,
                     "layer %d · dropped up to %s of its routed tokens (strip above)", p, d);
            if (viz_measure(10.5, true, P->title) > plot_w) /* a narrow page: the short form */
                snprintf(P->title, sizeof P->title, "layer %d · dropped ≤ %s", p, d);
        } else {
            snprintf(P->title, sizeof P->title, "layer %d · no token dropped", p);
        }
        y = P->y + P->h + AXIS_H + PANEL_GAP;
    }
    out->height = ceil(y - PANEL_GAP + BOTTOM);
    return top;
}

/* The title, the subtitle (what a colour means, the last aux loss) and the note (layers not
 * shown, merged steps). */
static void layout_texts(const run_metrics *m, viz_moe_layout *out) {
    const int L = out->layers, E = out->experts;
    const run_metrics_moe *last = &m->moe[m->nmoe - 1];
    snprintf(out->title, sizeof out->title,
             "MoE expert load — %s%s%s · %d experts × %d layers · %d logged step%s", m->dir,
             m->layout[0] ? " · " : "", m->layout, E, L, m->nmoe, m->nmoe == 1 ? "" : "s");
    double aux = m->steps[last->line].moe_aux_loss;
    char b[24];
    pct(b, sizeof b, out->balanced);
    if (isnan(aux))
        snprintf(out->subtitle, sizeof out->subtitle,
                 "colour = an expert's share of its layer's routed tokens (balanced: 1/%d = %s) · "
                 "no moe_aux_loss logged",
                 E, b);
    else
        snprintf(out->subtitle, sizeof out->subtitle,
                 "colour = an expert's share of its layer's routed tokens (balanced: 1/%d = %s) · "
                 "aux loss at step %d: %.4g (summed over layers)",
                 E, b, last->step, aux);
    char more[80] = "", merged[80] = "";
    if (L > out->npanels)
        snprintf(more, sizeof more, "first %d layers of %d shown · ", out->npanels, L);
    if (out->columns < m->nmoe)
        snprintf(merged, sizeof merged, "one column = %.1f logged steps merged · ",
                 (double)m->nmoe / out->columns);
    snprintf(out->note, sizeof out->note, "%s%sgrey: no token routed", more, merged);
    out->title_lines = viz_wrap(out->title, 14, true, out->width - 28, out->title_drawn,
                                sizeof out->title_drawn);
    out->subtitle_lines = viz_wrap(out->subtitle, 10, false, out->width - 28, out->subtitle_drawn,
                                   sizeof out->subtitle_drawn);
}

bool viz_moe_layout_of(const run_metrics *m, double width, viz_moe_layout *out, char *err,
                       size_t errlen) {
    memset(out, 0, sizeof *out);
    if (m->nmoe == 0 || m->moe_layers < 1 || m->moe_experts < 1) {
        snprintf(err, errlen, "%s/metrics.jsonl has no moe_tokens (not an MoE run)", m->dir);
        return false;
    }
    if (!(width >= 300 && width <= 20000)) {
        snprintf(err, errlen, "the MoE load picture needs a width of 300 to 20000, not %g", width);
        return false;
    }
    const int L = m->moe_layers, E = m->moe_experts;
    out->width = width;
    out->layers = L, out->experts = E, out->lines = m->nmoe;
    out->balanced = 1.0 / E;
    const double plot_w = width - MARGIN_L - MARGIN_R;
    /* One column per logged step, merged when there are more steps than points or than the
     * image of a panel holds. */
    int cols = m->nmoe;
    if (cols > (int)plot_w) cols = (int)plot_w;
    if ((long long)cols * E > VIZ_MOE_MAX_CELLS) cols = VIZ_MOE_MAX_CELLS / E;
    out->columns = cols < 1 ? 1 : cols;
    out->npanels = L < VIZ_MOE_MAX_PANELS ? L : VIZ_MOE_MAX_PANELS;
    /* The red end: the largest share drawn, at least 2/E, at most 1. */
    layout_texts(m, out); /* first: a wrapped title moves everything below it down */
    out->text_shift = (out->title_lines - 1) * viz_line_pitch(14) +
                      (out->subtitle_lines - 1) * viz_line_pitch(10);
    out->scale_max = layout_panels(m, out, plot_w, fmin(1.0, 2.0 / E));
    /* the bar and, left of it, its label, inside the plot's width (at least 100 points of bar) */
    const double label_w = viz_measure(8.5, false, BAR_LABEL) + 8;
    out->bar_w = fmax(fmin(100, plot_w), fmin(360, plot_w - label_w));
    out->bar_x = MARGIN_L + plot_w - out->bar_w;
    out->bar_y = 70 + out->text_shift, out->bar_h = 10;
    return true;
}

/* The heat map of one layer: an image of columns x E pixels, scaled onto the panel. */
static void draw_heat(cairo_t *cr, const run_metrics *m, const viz_moe_layout *l,
                      const viz_moe_panel *P) {
    const int W = l->columns, H = l->experts;
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    cairo_surface_flush(img);
    unsigned char *px = cairo_image_surface_get_data(img);
    const int stride = cairo_image_surface_get_stride(img);
    for (int c = 0; c < W; c++) {
        const double all = routed(m, l, P->layer, c);
        for (int e = 0; e < H; e++) {
            double share = all > 0 ? expert_tokens(m, l, P->layer, e, c) / all : NAN;
            viz_rgb k = viz_moe_color(l, share);
            uint32_t v = (uint32_t)lround(k.r * 255) << 16 | (uint32_t)lround(k.g * 255) << 8 |
                         (uint32_t)lround(k.b * 255);
            memcpy(px + (size_t)e * (size_t)stride + (size_t)c * 4, &v, 4);
        }
    }
    cairo_surface_mark_dirty(img);
    cairo_save(cr);
    cairo_rectangle(cr, P->x, P->y, P->w, P->h);
    cairo_clip(cr);
    cairo_translate(cr, P->x, P->y);
    cairo_scale(cr, P->w / W, P->h / H);
    cairo_set_source_surface(cr, img, 0, 0);
    const bool up = P->w >= W && P->h >= H; /* cells larger than points: keep them sharp */
    cairo_pattern_set_filter(cairo_get_source(cr), up ? CAIRO_FILTER_NEAREST : CAIRO_FILTER_GOOD);
    cairo_paint(cr);
    cairo_restore(cr);
    cairo_surface_destroy(img);
    viz_set_rgb(cr, VIZ_TEXT);
    viz_line_width(cr, 0.8);
    cairo_rectangle(cr, P->x, P->y, P->w, P->h);
    cairo_stroke(cr);
}

static void draw_dropped(cairo_t *cr, const run_metrics *m, const viz_moe_layout *l,
                         const viz_moe_panel *P) {
    if (P->strip_h <= 0) return;
    const double cw = P->w / l->columns, base = P->strip_y + P->strip_h - 2;
    viz_set_rgb(cr, DROPPED);
    for (int c = 0; c < l->columns; c++) {
        double d = viz_moe_dropped_share(m, l, P->layer, c);
        if (d <= 0) continue;
        double bh = (P->strip_h - 3) * d / P->dropped_max;
        cairo_rectangle(cr, P->x + c * cw, base - bh, cw < 0.6 ? 0.6 : cw, bh);
    }
    cairo_fill(cr);
    viz_text(cr, P->x - 6, base, 7.5, false, VIZ_RIGHT, DROPPED, "dropped");
}

/* Each cell's share written in it, when every cell is wide and tall enough for "25.0%";
 * otherwise the colour bar above gives the values. */
static void draw_values(cairo_t *cr, const run_metrics *m, const viz_moe_layout *l,
                        const viz_moe_panel *P) {
    const double cw = P->w / l->columns, row = P->h / l->experts, size = 7.5;
    if (cw < viz_measure(size, false, "100.0%") + 4 || row < viz_line_pitch(size)) return;
    char s[24];
    for (int c = 0; c < l->columns; c++)
        for (int e = 0; e < l->experts; e++) {
            const double share = viz_moe_share(m, l, P->layer, e, c);
            if (isnan(share)) continue;
            pct(s, sizeof s, share);
            viz_text_on_fill(cr, P->x + (c + 0.5) * cw,
                             P->y + (e + 0.5) * row + size * 0.36 * viz_theme_current()->text_scale,
                             size, false, VIZ_CENTER, viz_moe_color(l, share), false, s);
        }
}

static void draw_axes(cairo_t *cr, const run_metrics *m, const viz_moe_layout *l,
                      const viz_moe_panel *P) {
    char s[48];
    viz_text(cr, P->x, P->strip_y - 4, 10.5, true, VIZ_LEFT, VIZ_TEXT, P->title);
    /* every expert, top to bottom, at its row's middle */
    const double row = P->h / l->experts, ts = viz_theme_current()->text_scale;
    const double size = fmin(8, row / (1.3 * ts));
    for (int e = 0; e < l->experts; e++) {
        snprintf(s, sizeof s, "expert %d", e);
        viz_text(cr, P->x - 6, P->y + (e + 0.5) * row + size * 0.36 * ts, size, false, VIZ_RIGHT,
                 VIZ_TEXT, s);
    }
    /* steps: about six ticks, each at a column's centre, labelled with its first step */
    const int ticks = l->columns < 6 ? l->columns : 6;
    for (int k = 0; k < ticks; k++) {
        int c = ticks == 1 ? 0 : (int)((long long)k * (l->columns - 1) / (ticks - 1));
        int a, b;
        viz_moe_column_lines(l, c, &a, &b);
        double x = P->x + (c + 0.5) * P->w / l->columns;
        snprintf(s, sizeof s, "%d", m->moe[a].step);
        viz_text(cr, x, P->y + P->h + 11, 8, false, VIZ_CENTER, VIZ_TEXT, s);
    }
    viz_text(cr, P->x + P->w, P->y + P->h + 20, 8, false, VIZ_RIGHT, VIZ_TEXT, "step");
}

/* The colour bar: 0 at the left, the balanced share 1/E marked, the largest share at the
 * right. */
static void draw_scale(cairo_t *cr, const viz_moe_layout *l) {
    const int n = 120;
    for (int i = 0; i < n; i++) {
        double share = l->scale_max * (i + 0.5) / n;
        viz_set_rgb(cr, viz_moe_color(l, share));
        cairo_rectangle(cr, l->bar_x + l->bar_w * i / n, l->bar_y, l->bar_w / n + 0.5, l->bar_h);
        cairo_fill(cr);
    }
    viz_set_rgb(cr, VIZ_TEXT);
    viz_line_width(cr, 0.6);
    cairo_rectangle(cr, l->bar_x, l->bar_y, l->bar_w, l->bar_h);
    cairo_stroke(cr);
    char s[48], b[24];
    double xb = l->bar_x + l->bar_w * l->balanced / l->scale_max;
    viz_line_width(cr, 1.2);
    cairo_move_to(cr, xb, l->bar_y - 3);
    cairo_line_to(cr, xb, l->bar_y + l->bar_h + 3);
    cairo_stroke(cr);
    pct(b, sizeof b, l->balanced);
    snprintf(s, sizeof s, "balanced 1/E = %s", b);
    /* centred on its mark, kept over the bar at its ends (one expert: the mark is the end) */
    const double half = viz_text_width(cr, 8.5, true, s) / 2;
    const viz_align at = xb + half > l->bar_x + l->bar_w ? VIZ_RIGHT
                         : xb - half < l->bar_x          ? VIZ_LEFT
                                                         : VIZ_CENTER;
    viz_text(cr,
             at == VIZ_RIGHT  ? l->bar_x + l->bar_w
             : at == VIZ_LEFT ? l->bar_x
                              : xb,
             l->bar_y - 5, 8.5, true, at, VIZ_TEXT, s);
    viz_text(cr, l->bar_x, l->bar_y + l->bar_h + 11, 8, false, VIZ_LEFT, VIZ_TEXT, "0%");
    pct(b, sizeof b, l->scale_max);
    viz_text(cr, l->bar_x + l->bar_w, l->bar_y + l->bar_h + 11, 8, false, VIZ_RIGHT, VIZ_TEXT, b);
    viz_text(cr, l->bar_x - 8, l->bar_y + l->bar_h - 1, 8.5, false, VIZ_RIGHT, VIZ_TEXT, BAR_LABEL);
}

bool viz_moe_load_draw(const run_metrics *m, const char *path, int width, char *err,
                       size_t errlen) {
    viz_moe_layout l;
    if (!viz_moe_layout_of(m, width, &l, err, errlen)) return false;
    if (!viz_format_of(path)) {
        snprintf(err, errlen, "cannot write '%s': the extension must be .png, .svg or .pdf", path);
        return false;
    }
    viz_canvas c;
    viz_canvas_open(&c, path, l.width, l.height);
    cairo_t *cr = c.cr;
    const double t1 = (l.title_lines - 1) * viz_line_pitch(14);
    viz_text_lines(cr, 14, 24, 14, true, VIZ_LEFT, VIZ_TEXT, l.title_drawn);
    viz_text_lines(cr, 14, 42 + t1, 10, false, VIZ_LEFT, VIZ_TEXT, l.subtitle_drawn);
    viz_text(cr, 14, 56 + l.text_shift, 8.5, false, VIZ_LEFT, viz_shade(VIZ_TEXT, 0.35), l.note);
    draw_scale(cr, &l);
    for (int p = 0; p < l.npanels; p++) {
        draw_heat(cr, m, &l, &l.panel[p]);
        draw_values(cr, m, &l, &l.panel[p]);
        draw_dropped(cr, m, &l, &l.panel[p]);
        draw_axes(cr, m, &l, &l.panel[p]);
    }
    viz_canvas_close(&c);
    return true;
}
