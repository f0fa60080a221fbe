/* memory_draw.c — the memory bill picture (see memory_draw.h). viz_memory_layout_make turns the
 * bill into positions (bar edges, box tops and bottoms, grid lines) without Cairo;
 * viz_memory_draw paints them. */
#include "viz/memory_draw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/core/check.h"
#include "viz/axis.h"

static const double DEFAULT_WIDTH = 1000, LEFT = 78, RIGHT = 24, TOP = 78, PLOT_H = 340;
static const double MIN_SLOT = 4, MAX_SLOT = 120;

viz_rgb viz_memory_kind_color(zero_mem_kind k) {
    switch (k) {
    case ZERO_MEM_PARAMS: return viz_categorical(0);
    case ZERO_MEM_GRADS: return viz_categorical(1);
    case ZERO_MEM_MASTER: return viz_categorical(2);
    case ZERO_MEM_ADAM: return viz_categorical(3);
    case ZERO_MEM_ACTIVATIONS: return VIZ_MEMORY;
    case ZERO_MEM_HANDOVER: return VIZ_WEIGHT;
    case ZERO_MEM_WORK_SPACE: return viz_categorical(4);
    case ZERO_MEM_P2P: return viz_categorical(7);
    case ZERO_MEM_BUCKETS: return viz_categorical(6);
    default: return viz_shade(viz_categorical(5), 0.4);
    }
}

/* The unit of the axis (a power of 1024) and a grid step of 1, 2 or 5 × 10^k units giving
 * at most 6 lines up to `top` bytes. */
static double axis_unit(double top, const char **name) {
    static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double unit = 1;
    int u = 0;
    while (top / unit >= 1024 && u < 5) unit *= 1024, u++;
    *name = names[u];
    return unit;
}

/* Grid lines 1-2-5 apart, about four of them below the top (viz/axis.h). */
static double nice_step(double top_units) { return viz_axis_step(top_units / 4); }

/* The legend's labels: the kinds drawn. */
static int legend_labels(const viz_memory_layout *L, const char **labels) {
    int n = 0;
    for (int k = 0; k < ZERO_MEM_NKINDS; k++)
        if (L->kinds_present[k]) labels[n++] = zero_mem_kind_name((zero_mem_kind)k);
    return n;
}

void viz_memory_layout_make(viz_memory_layout *L, const viz_memory_chart *ch, double width) {
    CHECK(ch->nranks >= 1 && ch->nranks <= VIZ_MEMORY_MAX_RANKS,
          "a memory picture has 1 .. VIZ_MEMORY_MAX_RANKS ranks (the caller says so)");
    memset(L, 0, sizeof *L);
    const int n = ch->nranks, K = ZERO_MEM_NKINDS;
    double want = width > 0 ? width : DEFAULT_WIDTH;
    L->slot = fmin(MAX_SLOT, fmax(MIN_SLOT, (want - LEFT - RIGHT) / n));
    L->width = fmax(want, LEFT + RIGHT + L->slot * n);
    L->plot_x = LEFT;
    L->plot_w = L->slot * n;
    /* the title and subtitle wrap inside the page, moving the plot down */
    const int tl = viz_wrap(ch->title ? ch->title : "", 14, true, L->width - 32, L->title_drawn,
                            sizeof L->title_drawn);
    const int sl = viz_wrap(ch->subtitle ? ch->subtitle : "", 10, false, L->width - 32,
                            L->subtitle_drawn, sizeof L->subtitle_drawn);
    L->title_y = 28;
    L->subtitle_y = L->title_y + (tl - 1) * viz_line_pitch(14) + 20;
    L->plot_y = TOP + (tl - 1) * viz_line_pitch(14) + (sl - 1) * viz_line_pitch(10);
    L->plot_h = PLOT_H;
    L->bar_w = L->slot * (L->slot >= 12 ? 0.7 : 0.85);
    L->nranks = n;
    double top = 1;
    for (int r = 0; r < n; r++) {
        top = fmax(top, (double)ch->ranks[r].total);
        if (ch->measured) top = fmax(top, (double)ch->measured[r]);
    }
    const char *uname;
    const double unit = axis_unit(top, &uname);
    L->tick_bytes = nice_step(top / unit) * unit;
    L->nticks = (int)ceil(top / L->tick_bytes - 1e-9);
    L->top_bytes = L->nticks * L->tick_bytes;
    const double base = L->plot_y + L->plot_h, scale = L->plot_h / L->top_bytes;
    L->bar_x = callocCheck((size_t)n, sizeof *L->bar_x);
    L->seg_y0 = callocCheck((size_t)n * K, sizeof *L->seg_y0);
    L->seg_y1 = callocCheck((size_t)n * K, sizeof *L->seg_y1);
    if (ch->measured) L->measured_y = callocCheck((size_t)n, sizeof *L->measured_y);
    for (int r = 0; r < n; r++) {
        L->bar_x[r] = L->plot_x + r * L->slot + (L->slot - L->bar_w) / 2;
        double below = 0; /* bytes stacked so far */
        for (int k = 0; k < K; k++) {
            const double b = (double)ch->ranks[r].bytes[k];
            L->seg_y1[r * K + k] = base - below * scale;
            below += b;
            L->seg_y0[r * K + k] = base - below * scale;
            if (b > 0) L->kinds_present[k] = true;
        }
        if (ch->measured) L->measured_y[r] = base - (double)ch->measured[r] * scale;
    }
    L->rank_labels = L->slot >= 18;
    L->totals = L->slot >= 40;
    const char *labels[ZERO_MEM_NKINDS + 1];
    L->legend_rows = viz_legend_rows(10, legend_labels(L, labels), labels,
                                     L->width - L->plot_x - 16);
    L->legend_y = base + (L->rank_labels ? 44 : 26);
    L->note_y = L->legend_y + 40 + (L->legend_rows - 1) * viz_legend_pitch(10);
    L->height = ceil(L->note_y + 18);
}

void viz_memory_layout_free(viz_memory_layout *L) {
    free(L->bar_x);
    free(L->seg_y0);
    free(L->seg_y1);
    free(L->measured_y);
    memset(L, 0, sizeof *L);
}

/* Grid lines with their values on the left, in the axis unit. */
static void draw_axis(cairo_t *cr, const viz_memory_layout *L) {
    const char *uname;
    const double unit = axis_unit(L->top_bytes, &uname), base = L->plot_y + L->plot_h;
    char s[48];
    viz_line_width(cr, 0.6);
    for (int i = 0; i <= L->nticks; i++) {
        const double y = base - L->plot_h * i / L->nticks;
        viz_set_rgb(cr, VIZ_GRID);
        cairo_move_to(cr, L->plot_x - 4, y);
        cairo_line_to(cr, L->plot_x + L->plot_w, y);
        cairo_stroke(cr);
        snprintf(s, sizeof s, "%g %s", i * L->tick_bytes / unit, uname);
        viz_text(cr, L->plot_x - 8, y + 3.5, 9, false, VIZ_RIGHT, VIZ_TEXT, s);
    }
}

/* Whether some rank has a context- or expert-parallel coordinate: the labels under the bars
 * then name cp and ep too (a layout without either is drawn as it always was). */
static bool has_cp_ep(const viz_memory_chart *ch) {
    for (int r = 0; r < ch->nranks; r++)
        if (ch->ranks[r].cp_rank > 0 || ch->ranks[r].ep_rank > 0) return true;
    return false;
}

static void draw_bars(cairo_t *cr, const viz_memory_layout *L, const viz_memory_chart *ch) {
    const int K = ZERO_MEM_NKINDS;
    const double base = L->plot_y + L->plot_h;
    char s[48];
    for (int r = 0; r < L->nranks; r++) {
        for (int k = 0; k < K; k++) {
            const double y0 = L->seg_y0[r * K + k], y1 = L->seg_y1[r * K + k];
            if (y1 - y0 <= 0) continue;
            viz_box(cr, L->bar_x[r], y0, L->bar_w, y1 - y0,
                    viz_memory_kind_color((zero_mem_kind)k));
        }
        const double cx = L->bar_x[r] + L->bar_w / 2;
        if (L->measured_y) {
            viz_set_rgb(cr, VIZ_TEXT);
            viz_line_width(cr, 2);
            cairo_move_to(cr, L->bar_x[r] - 2, L->measured_y[r]);
            cairo_line_to(cr, L->bar_x[r] + L->bar_w + 2, L->measured_y[r]);
            cairo_stroke(cr);
        }
        if (L->rank_labels) {
            snprintf(s, sizeof s, "r%d", ch->ranks[r].rank);
            viz_text(cr, cx, base + 14, 9, false, VIZ_CENTER, VIZ_TEXT, s);
        }
        if (L->slot >= 60) {
            const zero_memory_rank *m = &ch->ranks[r];
            if (has_cp_ep(ch))
                snprintf(s, sizeof s, "%d,%d,%d,%d,%d", m->tp_rank, m->pp_rank, m->dp_rank,
                         m->cp_rank, m->ep_rank);
            else snprintf(s, sizeof s, "%d,%d,%d", m->tp_rank, m->pp_rank, m->dp_rank);
            viz_text(cr, cx, base + 26, 7.5, false, VIZ_CENTER, viz_shade(VIZ_TEXT, 0.4), s);
        }
        if (L->totals) {
            const double top = L->seg_y0[r * K + K - 1];
            zero_bytes_text((double)ch->ranks[r].total, s, sizeof s);
            viz_text(cr, cx, top - 4, 8, false, VIZ_CENTER, VIZ_TEXT, s);
        }
    }
}

static void draw_legend(cairo_t *cr, const viz_memory_layout *L, const viz_memory_chart *ch) {
    viz_rgb colors[ZERO_MEM_NKINDS + 1];
    const char *labels[ZERO_MEM_NKINDS + 1];
    const int n = legend_labels(L, labels);
    for (int i = 0, k = 0; k < ZERO_MEM_NKINDS; k++)
        if (L->kinds_present[k]) colors[i++] = viz_memory_kind_color((zero_mem_kind)k);
    viz_legend_wrap(cr, L->plot_x, L->legend_y, 10, n, colors, labels, NULL,
                    L->width - L->plot_x - 16);
    const double below = (L->legend_rows - 1) * viz_legend_pitch(10); /* the wrapped rows */
    double xc = L->plot_x; /* the caption line: the measured peak's tick first */
    if (L->measured_y) {
        const double y = L->legend_y + 18 + below - 3.5;
        viz_set_rgb(cr, VIZ_TEXT);
        viz_line_width(cr, 2);
        cairo_move_to(cr, xc, y);
        cairo_line_to(cr, xc + 14, y);
        cairo_stroke(cr);
        viz_text(cr, xc + 20, y + 3.5, 9, false, VIZ_LEFT, VIZ_TEXT, "measured peak");
        xc += 20 + viz_text_width(cr, 9, false, "measured peak") + 16;
    }
    const char *caption = !(L->rank_labels && L->slot >= 60) ? "bars: ranks 0, 1, ... left to right"
                          : has_cp_ep(ch) ? "bars: ranks (tp, pp, dp, cp, ep under each)"
                                          : "bars: ranks (tp, pp, dp under each)";
    viz_text(cr, xc, L->legend_y + 18 + below, 9, false, VIZ_LEFT, viz_shade(VIZ_TEXT, 0.35),
             caption);
    if (ch->note)
        viz_text(cr, 16, L->note_y, 9, false, VIZ_LEFT, viz_shade(VIZ_TEXT, 0.35), ch->note);
}

void viz_memory_draw(const char *path, const viz_memory_chart *ch) {
    viz_memory_layout L;
    viz_memory_layout_make(&L, ch, 0);
    viz_canvas c;
    viz_canvas_open_fitted(&c, path, L.width, L.height); /* texts measured in the theme */
    cairo_t *cr = c.cr;
    viz_text_lines(cr, 16, L.title_y, 14, true, VIZ_LEFT, VIZ_TEXT, L.title_drawn);
    viz_text_lines(cr, 16, L.subtitle_y, 10, false, VIZ_LEFT, VIZ_TEXT, L.subtitle_drawn);
    draw_axis(cr, &L);
    draw_bars(cr, &L, ch);
    draw_legend(cr, &L, ch);
    viz_canvas_close(&c);
    viz_memory_layout_free(&L);
}
