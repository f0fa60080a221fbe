/* zero_draw_layout.c — the numbers of the ZeRO-1 buffer picture (see zero_draw.h), computed
 * without drawing: zero_draw_layout_make turns the ranges into segment positions, boundary
 * marks, label rows and the canvas size, using an estimate of text widths so that it needs no
 * Cairo (zero_draw.c paints them). Positions along the buffer are first computed on one long
 * unwrapped bar (u, in pixels), then folded into lines of line_w. Every DP rank's shard starts
 * a new line and fills k = lines_per_shard whole lines, so the rows of the picture follow the
 * shards and each rank is labelled on its own rows:
 *
 *   u:  0 ...... k*line_w ...... 2k*line_w ...... dp*k*line_w
 *       [ shard 0 (k lines) ][ shard 1 (k lines) ][ ... ]
 *
 * Inside a shard the pieces (parameters cut at the shard's edges) are proportional to numel
 * with one scale per shard, except those widened to the minimum width.
 *
 * Not here: Cairo (zero_draw.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "viz/zero_draw_internal.h"

enum { SEGMENTS_PER_LINE = 12, LABEL_ROWS_MAX = 2 };

static const double DEFAULT_WIDTH = 1400, MIN_SEGMENT_W = 5;
static const double BAR_H = 40, BAND_H = 20, BUCKET_H = 14, GAP = 4;
static const double TITLE_H = 122; /* title + four lines of facts above the first bar */

/* Text width estimate for layout (DejaVu Sans averages about 0.6 em per character);
 * the drawing measures for real before placing names inside segments. */
static double est_width(const char *s, double size) { return (double)strlen(s) * 0.62 * size; }

const char *zero_draw_count_str(size_t n, char *buf, size_t cap) {
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%zu", n);
    size_t k = 0;
    for (int i = 0; i < len && k + 2 < cap; i++) {
        if (i > 0 && (len - i) % 3 == 0) buf[k++] = ',';
        buf[k++] = digits[i];
    }
    buf[k] = '\0';
    return buf;
}

static size_t shard_start(const zero_ranges *r, int d) { return (size_t)d * r->shard_numel; }

void zero_draw_boundary_label(const zero_ranges *r, int d, char out[3][80]) {
    size_t w = shard_start(r, d);
    char a[32], b[32];
    snprintf(out[0], 80, "world %s", zero_draw_count_str(w, a, sizeof a));
    zero_draw_count_str(r->shard_numel, b, sizeof b);
    if (d == 0) snprintf(out[1], 80, "local 0");
    else if (d == r->dp) snprintf(out[1], 80, "local %s (end)", b);
    else snprintf(out[1], 80, "local %s | 0", b);
    if (w >= r->numel) {
        snprintf(out[2], 80, w == r->numel && w == r->padded_numel ? "end" : "padding");
        return;
    }
    for (int p = 0; p < r->n_params; p++) {
        size_t o = r->offsets[p], n = r->params[p].numel;
        if (w >= o && w < o + n) {
            snprintf(out[2], 80, "%s[%s]", r->params[p].name,
                     zero_draw_count_str(w - o, a, sizeof a));
            return;
        }
    }
    snprintf(out[2], 80, "?");
}

double zero_draw_label_width(char text[3][80]) {
    double w = 0;
    for (int i = 0; i < 3; i++) w = fmax(w, est_width(text[i], LABEL_FS));
    return w;
}

double zero_draw_u_of(const zero_draw_layout *L, size_t w) {
    if (L->n_pieces == 0) return 0;
    int lo = 0, hi = L->n_pieces - 1; /* first piece with world_end > w */
    if (w >= L->pieces[hi].world_end) return L->pieces[hi].u1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (L->pieces[mid].world_end > w) hi = mid;
        else lo = mid + 1;
    }
    const zero_draw_piece *s = &L->pieces[lo];
    if (w <= s->world_start) return s->u0;
    double t = (double)(w - s->world_start) / (double)(s->world_end - s->world_start);
    return s->u0 + t * (s->u1 - s->u0);
}

void zero_draw_place(const zero_draw_layout *L, double u, int *line, double *x) {
    int k = (int)floor(u / L->line_w + 1e-9);
    if (k < 0) k = 0;
    if (k > L->n_lines - 1) k = L->n_lines - 1;
    *line = k;
    *x = L->bar_x + (u - k * L->line_w);
}

static zero_draw_mark make_mark(const zero_draw_layout *L, size_t w) {
    zero_draw_mark m = {w, zero_draw_u_of(L, w), 0, 0, -1};
    zero_draw_place(L, m.u, &m.line, &m.x);
    return m;
}

/* Finds the scale s with sum_i max(min_w, n_i * s) = U over pieces [first, first + n) by
 * bisection (the sum grows with s). */
static double solve_scale(const zero_draw_layout *L, int first, int n, double U) {
    double total = 0;
    for (int i = first; i < first + n; i++)
        total += (double)(L->pieces[i].world_end - L->pieces[i].world_start);
    if (total <= 0) return 0;
    double lo = 0, hi = U / total;
    for (int it = 0; it < 200; it++) {
        double mid = (lo + hi) / 2, sum = 0;
        for (int i = first; i < first + n; i++)
            sum += fmax(L->min_w,
                        (double)(L->pieces[i].world_end - L->pieces[i].world_start) * mid);
        if (sum < U) lo = mid;
        else hi = mid;
    }
    return (lo + hi) / 2;
}

/* Greedy rows for the shard boundary labels of each line: a label goes into the first
 * row where it does not touch the previous label. A line holds at most two shard marks
 * (a shard's start, and on the last line also the end of the buffer), so the second row
 * always has room; a third mark on a line would be a layout bug and fails loudly. */
static void assign_label_rows(const zero_ranges *r, zero_draw_layout *L) {
    L->label_rows = 0;
    for (int line = 0; line < L->n_lines; line++) {
        double right[LABEL_ROWS_MAX];
        for (int k = 0; k < LABEL_ROWS_MAX; k++) right[k] = -1e9;
        for (int d = 0; d < L->n_marks; d++) {
            zero_draw_mark *m = &L->marks[d];
            if (m->line != line) continue;
            char text[3][80];
            zero_draw_boundary_label(r, d, text);
            double w = zero_draw_label_width(text);
            double x0 = fmax(L->bar_x - 40, fmin(m->x - w / 2, L->width - 6 - w));
            int k = 0;
            while (k < LABEL_ROWS_MAX && !(x0 > right[k] + 8)) k++;
            CHECK(k < LABEL_ROWS_MAX,
                  "a line of the ZeRO picture holds at most two shard boundaries");
            m->label_row = k;
            right[k] = x0 + w;
            if (k + 1 > L->label_rows) L->label_rows = k + 1;
        }
    }
}

/* Segments: each non-empty parameter, then the padding. Returns how many. */
static int make_segments(const zero_ranges *r, zero_draw_layout *L) {
    bool padded = r->padded_numel > r->numel;
    int n = padded ? 1 : 0;
    for (int p = 0; p < r->n_params; p++) n += r->params[p].numel > 0;
    L->n_segments = n;
    L->segments = mallocCheck((size_t)(n ? n : 1) * sizeof(zero_draw_segment));
    int k = 0;
    for (int p = 0; p < r->n_params; p++) {
        if (r->params[p].numel == 0) continue;
        L->segments[k++] = (zero_draw_segment){p,
                                               r->offsets[p],
                                               r->offsets[p] + r->params[p].numel,
                                               0,
                                               0,
                                               zero_ranges_param_is_cut(r, p),
                                               false};
    }
    if (padded)
        L->segments[k++] = (zero_draw_segment){-1, r->numel, r->padded_numel, 0, 0, false, false};
    return n;
}

/* Pieces: every segment cut at the shard boundaries, in buffer order; shard d's pieces are
 * first[d] .. first[d+1]-1 (first has dp + 1 entries). Returns the most pieces of a shard. */
static int make_pieces(const zero_ranges *r, zero_draw_layout *L, int *first) {
    const int n = L->n_segments;
    const size_t S = r->shard_numel;
    int max_pieces = 0;
    L->pieces = mallocCheck(((size_t)n + (size_t)r->dp + 1) * sizeof(zero_draw_piece));
    L->n_pieces = 0;
    for (int d = 0; d < r->dp; d++) {
        size_t a = shard_start(r, d), b = a + S;
        first[d] = L->n_pieces;
        for (int i = 0; i < n; i++) {
            size_t x = L->segments[i].world_start > a ? L->segments[i].world_start : a;
            size_t y = L->segments[i].world_end < b ? L->segments[i].world_end : b;
            if (y > x) L->pieces[L->n_pieces++] = (zero_draw_piece){i, d, x, y, 0, 0, false};
        }
        if (L->n_pieces - first[d] > max_pieces) max_pieces = L->n_pieces - first[d];
    }
    first[r->dp] = L->n_pieces;
    return max_pieces;
}

/* Lines (k per shard, enough for SEGMENTS_PER_LINE pieces a line, at most MAX_LINES) and the
 * pieces' positions along them: proportional, small pieces widened to min_w. */
static void place_pieces(const zero_ranges *r, zero_draw_layout *L, const int *first,
                         int max_pieces) {
    int lps = (max_pieces + SEGMENTS_PER_LINE - 1) / SEGMENTS_PER_LINE;
    if (lps < 1) lps = 1;
    if (lps * r->dp > MAX_LINES) lps = MAX_LINES / r->dp > 1 ? MAX_LINES / r->dp : 1;
    CHECK(lps * r->dp <= MAX_LINES, "the ZeRO picture draws at most 128 data-parallel ranks");
    L->lines_per_shard = lps;
    L->n_lines = lps * r->dp;
    const double Ud = lps * L->line_w, U = L->n_lines * L->line_w;
    L->min_w = MIN_SEGMENT_W;
    if (max_pieces * L->min_w > 0.5 * Ud) L->min_w = 0.5 * Ud / max_pieces;
    L->px_per_elem = r->shard_numel ? Ud / (double)r->shard_numel : 0;
    L->shard_px_per_elem = callocCheck((size_t)r->dp, sizeof *L->shard_px_per_elem);
    for (int d = 0; d < r->dp; d++) {
        int np = first[d + 1] - first[d];
        double sc = solve_scale(L, first[d], np, Ud), u = d * Ud;
        L->shard_px_per_elem[d] = sc;
        for (int i = first[d]; i < first[d + 1]; i++) {
            zero_draw_piece *pc = &L->pieces[i];
            double prop = (double)(pc->world_end - pc->world_start) * sc;
            pc->widened = prop < L->min_w;
            pc->u0 = u;
            u += pc->widened ? L->min_w : prop;
            pc->u1 = u;
            L->segments[pc->segment].widened |= pc->widened;
        }
        if (np) L->pieces[first[d + 1] - 1].u1 = (d + 1) * Ud; /* absorb the bisection's rounding */
    }
    const int n = L->n_segments;
    for (int i = 0; i < n; i++) {
        L->segments[i].u0 = zero_draw_u_of(L, L->segments[i].world_start);
        L->segments[i].u1 = zero_draw_u_of(L, L->segments[i].world_end);
        L->n_widened += L->segments[i].widened;
    }
    if (n) L->segments[n - 1].u1 = U;
}

/* Marks at the dp + 1 shard boundaries and at the bucket boundaries. */
static void make_marks(const zero_ranges *r, zero_draw_layout *L) {
    const double Ud = L->lines_per_shard * L->line_w;
    L->n_marks = r->dp + 1;
    L->marks = mallocCheck((size_t)L->n_marks * sizeof(zero_draw_mark));
    for (int d = 0; d <= r->dp; d++) { /* shard d starts line d*k; the last mark ends the bar */
        zero_draw_mark *m = &L->marks[d];
        *m = (zero_draw_mark){shard_start(r, d), d * Ud, 0, 0, -1};
        zero_draw_place(L, m->u, &m->line, &m->x);
    }
    L->n_bucket_marks = r->n_buckets ? r->n_buckets + 1 : 0;
    L->bucket_marks = mallocCheck((size_t)(L->n_bucket_marks ? L->n_bucket_marks : 1) *
                                  sizeof(zero_draw_mark));
    for (int b = 0; b < r->n_buckets; b++)
        L->bucket_marks[b] = make_mark(L, r->buckets[b].world_start);
    if (r->n_buckets)
        L->bucket_marks[r->n_buckets] = make_mark(L, r->buckets[r->n_buckets - 1].world_end);
    assign_label_rows(r, L);
}

void zero_draw_layout_make(const zero_ranges *r, double width, zero_draw_layout *L) {
    memset(L, 0, sizeof *L);
    L->width = width > 0 ? width : DEFAULT_WIDTH;
    L->bar_x = 78;
    L->line_w = L->width - L->bar_x - 28;
    CHECK(L->line_w > 100, "the ZeRO picture needs a canvas at least ~210 px wide");

    make_segments(r, L);
    int *first = callocCheck((size_t)r->dp + 1, sizeof *first);
    int max_pieces = make_pieces(r, L, first);
    place_pieces(r, L, first, max_pieces);
    free(first);
    make_marks(r, L);

    /* Vertical layout: per line, bar / band / buckets / label rows. */
    L->bar_h = BAR_H;
    L->band_y = BAR_H + GAP;
    L->band_h = BAND_H;
    L->bucket_y = L->band_y + BAND_H + GAP;
    L->bucket_h = BUCKET_H;
    L->label_y = L->bucket_y + BUCKET_H + 12;
    L->first_line_y = TITLE_H;
    L->line_pitch = L->label_y + L->label_rows * LABEL_ROW_H + 18;
    L->legend_y = L->first_line_y + L->n_lines * L->line_pitch + 8;
    L->table_y = L->legend_y + 52; /* two legend rows, then the table's heading */
    int rows = r->dp < TABLE_ROWS_MAX ? r->dp : TABLE_ROWS_MAX + 1;
    L->height = ceil(L->table_y + rows * 15 + 16);
}

void zero_draw_layout_free(zero_draw_layout *L) {
    free(L->segments);
    free(L->pieces);
    free(L->shard_px_per_elem);
    free(L->marks);
    free(L->bucket_marks);
    memset(L, 0, sizeof *L);
}
