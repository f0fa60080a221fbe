/* zero_draw.c — the ZeRO-1 buffer picture painted (see zero_draw.h): title, the rows' names,
 * the parameters, the shards, the buckets, the boundary marks, the legend and the table of
 * pieces, each where zero_draw_layout_make (zero_draw_layout.c) put it.
 *
 * Not here: any position or size (zero_draw_layout.c).
 */
#include "viz/zero_draw.h"

#include <math.h>
#include <stdio.h>

#include "viz/canvas.h"
#include "viz/zero_draw_internal.h"

typedef struct {
    int line;
    double x0, x1;
} span;

/* Cuts [u0, u1) into its pieces on each line; returns how many (<= n_lines). */
static int split_span(const zero_draw_layout *L, double u0, double u1, span *out) {
    int n = 0;
    if (u1 <= u0) return 0;
    int first = (int)floor(u0 / L->line_w + 1e-9);
    int last = (int)ceil(u1 / L->line_w - 1e-9) - 1;
    if (last > L->n_lines - 1) last = L->n_lines - 1;
    for (int k = first; k <= last; k++) {
        double a = fmax(u0, k * L->line_w), b = fmin(u1, (k + 1) * L->line_w);
        if (b - a <= 1e-9) continue;
        out[n++] = (span){k, L->bar_x + a - k * L->line_w, L->bar_x + b - k * L->line_w};
    }
    return n;
}

static double line_top(const zero_draw_layout *L, int line) {
    return L->first_line_y + line * L->line_pitch;
}

static viz_rgb param_color(int p) { return viz_shade(viz_categorical(p), 0.45); }
static viz_rgb rank_color(int d) { return viz_shade(VIZ_OPTIMIZER, d % 2 ? 0.55 : 0.25); }
static viz_rgb bucket_color(int b) { return viz_shade(VIZ_COLLECTIVE, b % 2 ? 0.65 : 0.4); }
static const viz_rgb PAD_FILL = {0.93, 0.93, 0.93};
static const viz_rgb CUT_INK = {0.85, 0.10, 0.10};

/* Text centred in [x0, x1] at baseline y if it fits (measured); returns whether drawn. */
static bool text_if_fits(cairo_t *cr, double x0, double x1, double y, double size, bool bold,
                         const char *s) {
    if (viz_text_width(cr, size, bold, s) + 4 > x1 - x0) return false;
    viz_text(cr, (x0 + x1) / 2, y, size, bold, VIZ_CENTER, VIZ_TEXT, s);
    return true;
}

static void draw_title(cairo_t *cr, const zero_draw_layout *L, const zero_ranges *r,
                       const zero_memory_plan *plan) {
    char s[512], c1[32], c2[32], c3[32], c4[32];
    const int stage = plan ? plan->stage : 1; /* the stage in use: its name and what it shards */
    snprintf(s, sizeof s, "%s (%s): one flat gradient buffer, DP rank d owns shard d (dp = %d)",
             zero_stage_name(stage), zero_stage_strategy(stage), r->dp);
    viz_text(cr, 16, 26, 15, true, VIZ_LEFT, VIZ_TEXT, s);
    snprintf(s, sizeof s, "%s: %s", zero_stage_name(stage), zero_stage_sharded(stage));
    viz_text(cr, 16, 45, 10.5, false, VIZ_LEFT, VIZ_TEXT, s);
    snprintf(s, sizeof s,
             "Ψ = %s elements in %d parameter%s, padded by %s to %s (a multiple of dp × align = "
             "%d × %zu); shard S = %s elements per rank",
             zero_draw_count_str(r->numel, c1, sizeof c1), r->n_params, r->n_params == 1 ? "" : "s",
             zero_draw_count_str(r->padded_numel - r->numel, c2, sizeof c2),
             zero_draw_count_str(r->padded_numel, c3, sizeof c3), r->dp, r->align,
             zero_draw_count_str(r->shard_numel, c4, sizeof c4));
    viz_text(cr, 16, 63, 10.5, false, VIZ_LEFT, VIZ_TEXT, s);
    char m[256] = "reduce-scatter the gradients, AdamW on the rank's shard, all-gather the "
                  "parameters";
    if (plan) snprintf(s, sizeof s, "Memory at start: %s", zero_memory_plan_summary(plan, m, 256));
    else snprintf(s, sizeof s, "%s", m);
    viz_text(cr, 16, 81, 10.5, false, VIZ_LEFT, VIZ_TEXT, s);
    if (L->n_widened)
        snprintf(s, sizeof s,
                 "Widths are proportional to numel, except that %d small parameter%s (biases, "
                 "LayerNorm, padding) %s drawn at a minimum of %.0f px so they stay visible.",
                 L->n_widened, L->n_widened == 1 ? "" : "s", L->n_widened == 1 ? "is" : "are",
                 L->min_w);
    else snprintf(s, sizeof s, "Widths are proportional to numel.");
    viz_text(cr, 16, 99, 9.5, false, VIZ_LEFT, viz_shade(VIZ_TEXT, 0.35), s);
}

static void draw_segments(cairo_t *cr, const zero_draw_layout *L, const zero_ranges *r) {
    span sp[MAX_LINES];
    for (int i = 0; i < L->n_segments; i++) {
        const zero_draw_segment *s = &L->segments[i];
        int n = split_span(L, s->u0, s->u1, sp);
        int widest = 0;
        for (int k = 0; k < n; k++) {
            double y = line_top(L, sp[k].line);
            double w = sp[k].x1 - sp[k].x0;
            if (s->param < 0) {
                viz_box(cr, sp[k].x0, y, w, L->bar_h, PAD_FILL);
                viz_hatch(cr, sp[k].x0, y, w, L->bar_h, VIZ_GRID, 6);
            } else {
                viz_box(cr, sp[k].x0, y, w, L->bar_h, param_color(s->param));
            }
            if (w > sp[widest].x1 - sp[widest].x0) widest = k;
        }
        /* Name and size on the first piece (the widest if the first is too narrow) when
         * they fit; "(cont.)" on the other pieces of a segment wrapped over lines. */
        if (n == 0) continue;
        const char *name = s->param < 0 ? "padding" : r->params[s->param].name;
        char num[48], cont[96];
        zero_draw_count_str(s->world_end - s->world_start, num, sizeof num);
        snprintf(cont, sizeof cont, "%s (cont.)", name);
        int named = viz_text_width(cr, 9.5, false, name) + 4 <= sp[0].x1 - sp[0].x0 ? 0 : widest;
        for (int k = 0; k < n; k++) {
            double y = line_top(L, sp[k].line);
            if (k != named) {
                text_if_fits(cr, sp[k].x0, sp[k].x1, y + 24, 9.5, false, cont);
                continue;
            }
            if (text_if_fits(cr, sp[k].x0, sp[k].x1, y + 17, 9.5, false, name))
                text_if_fits(cr, sp[k].x0, sp[k].x1, y + 31, 8, false, num);
        }
    }
    /* Red outlines on the parameters split between ranks, on top of everything else. */
    for (int i = 0; i < L->n_segments; i++) {
        const zero_draw_segment *s = &L->segments[i];
        if (!s->cut) continue;
        int n = split_span(L, s->u0, s->u1, sp);
        for (int k = 0; k < n; k++) {
            cairo_rectangle(cr, sp[k].x0 + 1, line_top(L, sp[k].line) + 1, sp[k].x1 - sp[k].x0 - 2,
                            L->bar_h - 2);
            viz_set_rgb(cr, CUT_INK);
            viz_line_width(cr, 2.0);
            cairo_stroke(cr);
        }
    }
}

static void draw_shards(cairo_t *cr, const zero_draw_layout *L, const zero_ranges *r) {
    span sp[2 * MAX_LINES]; /* the real part's pieces, then the padding's */
    for (int d = 0; d < r->dp; d++) {
        const zero_shard *sh = &r->shards[d];
        double u0 = zero_draw_u_of(L, sh->world_start);
        double ur = zero_draw_u_of(L, sh->world_start + sh->real_numel);
        double u1 = zero_draw_u_of(L, sh->world_end);
        int n = split_span(L, u0, ur, sp);
        for (int k = 0; k < n; k++)
            viz_box(cr, sp[k].x0, line_top(L, sp[k].line) + L->band_y, sp[k].x1 - sp[k].x0,
                    L->band_h, rank_color(d));
        int np = split_span(L, ur, u1, sp + n);
        for (int k = n; k < n + np; k++) {
            double y = line_top(L, sp[k].line) + L->band_y;
            viz_box(cr, sp[k].x0, y, sp[k].x1 - sp[k].x0, L->band_h, viz_shade(rank_color(d), 0.6));
            viz_hatch(cr, sp[k].x0, y, sp[k].x1 - sp[k].x0, L->band_h, VIZ_GRID, 6);
        }
        /* Label on the widest piece of the shard. */
        int all = split_span(L, u0, u1, sp);
        int widest = 0;
        for (int k = 1; k < all; k++)
            if (sp[k].x1 - sp[k].x0 > sp[widest].x1 - sp[widest].x0) widest = k;
        if (all == 0) continue;
        double y = line_top(L, sp[widest].line) + L->band_y + 14;
        /* The longest label that fits: "DP rank 3 (only padding)", "DP rank 3", "3". */
        char s[3][64];
        snprintf(s[0], sizeof s[0], sh->real_numel ? "DP rank %d" : "DP rank %d (only padding)", d);
        snprintf(s[1], sizeof s[1], "DP rank %d", d);
        snprintf(s[2], sizeof s[2], "%d", d);
        for (int k = 0; k < 3; k++)
            if (text_if_fits(cr, sp[widest].x0, sp[widest].x1, y, 9.5, true, s[k])) break;
    }
}

static void draw_buckets(cairo_t *cr, const zero_draw_layout *L, const zero_ranges *r) {
    span sp[MAX_LINES];
    for (int b = 0; b < r->n_buckets; b++) {
        double u0 = L->bucket_marks[b].u, u1 = L->bucket_marks[b + 1].u;
        int n = split_span(L, u0, u1, sp);
        int widest = 0;
        for (int k = 0; k < n; k++) {
            viz_box(cr, sp[k].x0, line_top(L, sp[k].line) + L->bucket_y, sp[k].x1 - sp[k].x0,
                    L->bucket_h, bucket_color(b));
            if (sp[k].x1 - sp[k].x0 > sp[widest].x1 - sp[widest].x0) widest = k;
        }
        if (n == 0) continue;
        char s[48];
        snprintf(s, sizeof s, "bucket %d", b);
        double y = line_top(L, sp[widest].line) + L->bucket_y + 10.5;
        if (!text_if_fits(cr, sp[widest].x0, sp[widest].x1, y, 8, false, s)) {
            snprintf(s, sizeof s, "%d", b);
            text_if_fits(cr, sp[widest].x0, sp[widest].x1, y, 8, false, s);
        }
    }
}

static void draw_marks(cairo_t *cr, const zero_draw_layout *L, const zero_ranges *r) {
    static const double dash[] = {4, 3};
    for (int d = 0; d < L->n_marks; d++) {
        const zero_draw_mark *m = &L->marks[d];
        double top = line_top(L, m->line);
        double bottom = top + L->label_y - 8 + m->label_row * LABEL_ROW_H;
        cairo_save(cr);
        cairo_set_dash(cr, dash, 2, 0);
        viz_line_width(cr, 1.3);
        viz_set_rgb(cr, VIZ_TEXT);
        cairo_move_to(cr, m->x, top - 5);
        cairo_line_to(cr, m->x, bottom);
        cairo_stroke(cr);
        cairo_restore(cr);
        char text[3][80];
        zero_draw_boundary_label(r, d, text);
        double w = zero_draw_label_width(text);
        double cx = fmax(L->bar_x - 40 + w / 2, fmin(m->x, L->width - 6 - w / 2));
        double y = top + L->label_y + m->label_row * LABEL_ROW_H;
        viz_text(cr, cx, y, LABEL_FS, true, VIZ_CENTER, VIZ_TEXT, text[0]);
        viz_text(cr, cx, y + LABEL_LINE, LABEL_FS, false, VIZ_CENTER, VIZ_TEXT, text[1]);
        viz_text(cr, cx, y + 2 * LABEL_LINE, LABEL_FS, false, VIZ_CENTER, VIZ_MEMORY, text[2]);
    }
}

/* Every line belongs to one DP rank's shard: its name on the band row, in the rank's colour. */
static void draw_row_names(cairo_t *cr, const zero_draw_layout *L) {
    viz_rgb ink = viz_shade(VIZ_TEXT, 0.4);
    char s[32];
    for (int i = 0; i < L->n_lines; i++) {
        double t = line_top(L, i), x = L->bar_x - 8;
        int d = i / L->lines_per_shard;
        viz_text(cr, x, t + L->bar_h / 2 + 4, 9, false, VIZ_RIGHT, ink, "params");
        snprintf(s, sizeof s, "DP rank %d", d);
        viz_text(cr, x, t + L->band_y + 14, 9, true, VIZ_RIGHT, VIZ_TEXT, s);
        viz_text(cr, x, t + L->bucket_y + 10.5, 9, false, VIZ_RIGHT, ink, "buckets");
        if (i % L->lines_per_shard == 0 && i > 0) { /* a rule between two ranks' rows */
            viz_set_rgb(cr, VIZ_GRID);
            viz_line_width(cr, 0.8);
            cairo_move_to(cr, 8, t - 14.5);
            cairo_line_to(cr, L->width - 8, t - 14.5);
            cairo_stroke(cr);
        }
    }
}

static void draw_legend(cairo_t *cr, const zero_draw_layout *L, const zero_ranges *r) {
    char bucket_label[96], c[32];
    if (r->bucket_numel)
        snprintf(bucket_label, sizeof bucket_label, "gradient bucket (at most %s elements)",
                 zero_draw_count_str(r->bucket_numel, c, sizeof c));
    else snprintf(bucket_label, sizeof bucket_label, "gradient bucket (one for the whole buffer)");
    const viz_rgb row1c[] = {param_color(0), CUT_INK, PAD_FILL};
    const char *row1[] = {"parameter (width ∝ numel)",
                          "parameter cut by a shard boundary (red outline)", "padding (hatched)"};
    const viz_rgb row2c[] = {rank_color(0), bucket_color(0)};
    const char *row2[] = {"DP rank's shard (its fp32 master, Adam m and v)", bucket_label};
    double y2 = L->legend_y + 18;
    viz_legend(cr, 16, L->legend_y, 11, 3, row1c, row1);
    double x = 16 + viz_legend(cr, 16, y2, 11, 2, row2c, row2);
    static const double dash[] = {4, 3};
    cairo_save(cr);
    cairo_set_dash(cr, dash, 2, 0);
    viz_set_rgb(cr, VIZ_TEXT);
    cairo_move_to(cr, x + 5, y2 - 12);
    cairo_line_to(cr, x + 5, y2 + 2);
    cairo_stroke(cr);
    cairo_restore(cr);
    viz_text(cr, x + 14, y2 - 1, 11, false, VIZ_LEFT, VIZ_TEXT,
             "shard boundary, labelled: world index | local index | parameter[index]");
}

/* One row per DP rank: its world and local range, then its pieces. */
static void draw_table(cairo_t *cr, const zero_draw_layout *L, const zero_ranges *r) {
    viz_text(cr, 16, L->table_y - 14, 9.5, true, VIZ_LEFT, VIZ_TEXT,
             "Each rank's pieces — name [param start, end) → local [start, end):");
    double limit = L->width - 20;
    for (int d = 0; d < r->dp && d <= TABLE_ROWS_MAX; d++) {
        double y = L->table_y + 4 + d * 15;
        if (d == TABLE_ROWS_MAX) {
            viz_text(cr, 16, y, 9, false, VIZ_LEFT, VIZ_TEXT,
                     "… (more ranks: see trident train --verbose)");
            break;
        }
        const zero_shard *sh = &r->shards[d];
        char s[160];
        snprintf(s, sizeof s, "DP rank %d   world [%zu, %zu)", d, sh->world_start, sh->world_end);
        viz_text(cr, 16, y, 9, true, VIZ_LEFT, VIZ_TEXT, s);
        double x = 16 + 250;
        for (int k = 0; k <= sh->n_pieces; k++) {
            if (k == sh->n_pieces) {
                if (sh->real_numel == r->shard_numel) break;
                snprintf(s, sizeof s, "padding → local [%zu, %zu)", sh->real_numel, r->shard_numel);
            } else {
                const zero_piece *pc = &sh->pieces[k];
                snprintf(s, sizeof s, "%s [%zu, %zu) → [%zu, %zu)", r->params[pc->param].name,
                         pc->param_start, pc->param_end, pc->local_start, pc->local_end);
            }
            double w = viz_text_width(cr, 9, false, s);
            if (x + w > limit - 60) {
                int left = sh->n_pieces - k + (sh->real_numel < r->shard_numel ? 1 : 0);
                snprintf(s, sizeof s, "… +%d more", left);
                viz_text(cr, x, y, 9, false, VIZ_LEFT, VIZ_TEXT, s);
                break;
            }
            viz_text(cr, x, y, 9, false, VIZ_LEFT,
                     k == sh->n_pieces ? viz_shade(VIZ_TEXT, 0.35) : VIZ_TEXT, s);
            x += w + 18;
        }
    }
}

void zero_draw(const char *path, const zero_ranges *r, const zero_memory_plan *plan) {
    zero_draw_layout L;
    zero_draw_layout_make(r, 0, &L);
    viz_canvas c;
    viz_canvas_open(&c, path, L.width, L.height);
    cairo_t *cr = c.cr;
    draw_title(cr, &L, r, plan);
    draw_row_names(cr, &L);
    draw_segments(cr, &L, r);
    draw_shards(cr, &L, r);
    draw_buckets(cr, &L, r);
    draw_marks(cr, &L, r);
    draw_legend(cr, &L, r);
    draw_table(cr, &L, r);
    viz_canvas_close(&c);
    zero_draw_layout_free(&L);
}
