/* plan_draw.c — see plan_draw.h: the geometry, then the paint. */
#include "viz/plan_draw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/core/check.h"

enum { TITLE_H = 40, AXIS_H = 40, LEGEND_H = 30, ROW_PITCH = 22 };
#define LABEL_W 330.0 /* the label column (fixed: a picture's size never depends on its rows) */
#define TIME_W 420.0
#define MEM_W 200.0
#define GAP 30.0

static const char *const k_parts[VIZ_PLAN_PARTS] = {"compute", "exposed communication", "bubble",
                                                    "optimizer"};

const char *viz_plan_part_name(int k) { return k_parts[k]; }

void viz_plan_layout_make(const viz_plan_chart *ch, viz_plan_layout *out) {
    CHECK(ch->n >= 1 && ch->n <= VIZ_PLAN_MAX_ROWS, "viz_plan: 1 to VIZ_PLAN_MAX_ROWS rows");
    memset(out, 0, sizeof *out);
    double most_ms = 0, most_mb = ch->memory_limit / 1e6;
    for (int i = 0; i < ch->n; i++) {
        double step = 0;
        for (int k = 0; k < VIZ_PLAN_PARTS; k++) step += ch->rows[i].part[k];
        most_ms = fmax(most_ms, step * 1e3);
        most_mb = fmax(most_mb, ch->rows[i].memory / 1e6);
    }
    out->label_x = 20;
    out->time_x = out->label_x + LABEL_W;
    out->time_w = TIME_W;
    out->mem_x = out->time_x + TIME_W + GAP;
    out->mem_w = MEM_W;
    out->width = out->mem_x + MEM_W + 30;
    out->height = TITLE_H + ch->n * ROW_PITCH + AXIS_H + LEGEND_H;
    out->ms_scale = most_ms > 0 ? TIME_W / most_ms : 0;
    out->mb_scale = most_mb > 0 ? MEM_W / most_mb : 0;
    out->row_h = ROW_PITCH - 6;
    for (int i = 0; i < ch->n; i++) {
        out->row_y[i] = TITLE_H + i * ROW_PITCH;
        double x = out->time_x;
        for (int k = 0; k < VIZ_PLAN_PARTS; k++) {
            out->seg_x[i][k] = x;
            out->seg_w[i][k] = ch->rows[i].part[k] * 1e3 * out->ms_scale;
            x += out->seg_w[i][k];
        }
        out->mem_bar_w[i] = ch->rows[i].memory / 1e6 * out->mb_scale;
    }
    out->limit_x = ch->memory_limit > 0 ? out->mem_x + ch->memory_limit / 1e6 * out->mb_scale : -1;
}

static viz_rgb part_colour(int k) {
    const viz_rgb c[VIZ_PLAN_PARTS] = {VIZ_FORWARD, VIZ_COLLECTIVE, VIZ_IDLE, VIZ_OPTIMIZER};
    return c[k];
}

/* The axes under the two columns: 0 and the largest value, with their units. */
static void axes(cairo_t *cr, const viz_plan_layout *l, int n) {
    const double y = TITLE_H + n * ROW_PITCH + 14;
    char a[64];
    viz_text(cr, l->time_x, y, 10, false, VIZ_LEFT, VIZ_TEXT, "0");
    snprintf(a, sizeof a, "%.3g ms per step", l->ms_scale > 0 ? l->time_w / l->ms_scale : 0);
    viz_text(cr, l->time_x + l->time_w, y, 10, false, VIZ_RIGHT, VIZ_TEXT, a);
    viz_text(cr, l->mem_x, y, 10, false, VIZ_LEFT, VIZ_TEXT, "0");
    snprintf(a, sizeof a, "%.3g MB peak", l->mb_scale > 0 ? l->mem_w / l->mb_scale : 0);
    viz_text(cr, l->mem_x + l->mem_w, y, 10, false, VIZ_RIGHT, VIZ_TEXT, a);
}

/* A row's label as drawn: cut at a character with "…" after it where it is wider than the
 * label column (the table printed beside the picture keeps every flag). */
static void fit_label(const char *label, char *out, size_t cap) {
    snprintf(out, cap, "%s", label && label[0] ? label : "(one rank's layout)");
    size_t n = strlen(out);
    while (n > 1 && viz_measure(9, false, out) > LABEL_W - GAP) {
        do n--;
        while (n > 1 && (out[n] & 0xC0) == 0x80); /* whole UTF-8 characters */
        snprintf(out + n, cap - n, "…");
    }
}

void viz_plan_draw(const char *path, const viz_plan_chart *ch) {
    viz_plan_layout l;
    viz_plan_layout_make(ch, &l);
    viz_canvas cv;
    viz_canvas_open(&cv, path, l.width, l.height);
    cairo_t *cr = cv.cr;
    viz_text(cr, l.label_x, 24, 14, true, VIZ_LEFT, VIZ_TEXT, ch->title);
    for (int i = 0; i < ch->n; i++) {
        const double y = l.row_y[i];
        char label[256];
        fit_label(ch->rows[i].label, label, sizeof label);
        viz_text(cr, l.label_x, y + l.row_h - 4, 9, false, VIZ_LEFT, VIZ_TEXT, label);
        for (int k = 0; k < VIZ_PLAN_PARTS; k++)
            if (l.seg_w[i][k] > 0.2)
                viz_box(cr, l.seg_x[i][k], y, l.seg_w[i][k], l.row_h, part_colour(k));
        viz_box(cr, l.mem_x, y, fmax(l.mem_bar_w[i], 0.5), l.row_h, VIZ_MEMORY);
    }
    if (l.limit_x >= 0) {
        cairo_set_source_rgb(cr, 0.8, 0.1, 0.1);
        viz_line_width(cr, 1.5);
        cairo_move_to(cr, l.limit_x, TITLE_H - 4);
        cairo_line_to(cr, l.limit_x, TITLE_H + ch->n * ROW_PITCH);
        cairo_stroke(cr);
    }
    axes(cr, &l, ch->n);
    viz_rgb colours[VIZ_PLAN_PARTS + 1];
    const char *labels[VIZ_PLAN_PARTS + 1];
    for (int k = 0; k < VIZ_PLAN_PARTS; k++) colours[k] = part_colour(k), labels[k] = k_parts[k];
    colours[VIZ_PLAN_PARTS] = VIZ_MEMORY, labels[VIZ_PLAN_PARTS] = "peak memory (largest rank)";
    viz_legend(cr, l.label_x, l.height - 14, 10, VIZ_PLAN_PARTS + 1, colours, labels);
    viz_canvas_close(&cv);
}
