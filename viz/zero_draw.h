/* zero_draw.h — the picture of ZeRO: one flat gradient buffer cut into dp shards.
 *
 *   title:  the stage in use (ZeRO-1 (optim), from the plan; ZeRO-1 without one) and what it
 *           shards and gathers when (zero_stage_sharded); Ψ, dp, padding, shard size, bytes
 *           per rank
 *
 *      params     |  wte              | wpe   |l|b| qkv (cut)   |   parameters in buffer
 *   DP rank 0     |<------------- DP rank 0's shard ------------>|   order; every shard
 *      buckets    |== bucket 0 ==|== bucket 1 ===================|   starts a new row, so
 *                 world 0, local 0, wte[0]                           the rows break at the
 *      params     | qkv (cont.)  | proj | ... |lnf|////pad//////|   shard boundaries and
 *   DP rank 1     |<------------- DP rank 1's shard ------------>|   each DP rank is named
 *      buckets    |== bucket 1 ==|== bucket 2 ==|                |   on its own rows
 *                 world 6, local 6 | 0, qkv[2]
 *
 *   legend, then one row per DP rank listing its pieces in the three index spaces.
 *
 * Every shard fills the same number of whole lines (lines_per_shard: more than one when a
 * shard holds many pieces). Inside a shard widths are proportional to numel (one scale per
 * shard), except that no piece is drawn narrower than a minimum width (5 px), so biases and
 * LayerNorm weights stay visible next to a large embedding; the picture says so when it
 * happens. A parameter cut by a shard boundary has
 * a red outline; padding is hatched.
 *
 * The geometry is computed by zero_draw_layout_make without any drawing, so tests can
 * check positions; zero_draw only paints what the layout says.
 *
 * Not here: the index arithmetic (src/zero/shard_ranges.h) or the byte counts
 * (src/zero/memory_plan.h); this module only draws them.
 */
#ifndef TRIDENT_VIZ_ZERO_DRAW_H
#define TRIDENT_VIZ_ZERO_DRAW_H

#include <stdbool.h>
#include <stddef.h>

#include "src/zero/memory_plan.h"
#include "src/zero/shard_ranges.h"

/* One parameter (or the padding) as drawn along the unwrapped bar. u is the distance in
 * pixels from the bar's start if the lines were laid end to end. */
typedef struct {
    int param; /* index into r->params, or -1 for the padding */
    size_t world_start, world_end;
    double u0, u1;
    bool cut;     /* split between two or more ranks' shards */
    bool widened; /* some piece is drawn at the minimum width */
} zero_draw_segment;

/* A segment's part inside one shard (a parameter cut by shard boundaries has several). */
typedef struct {
    int segment; /* index into segments */
    int shard;   /* the DP rank owning it */
    size_t world_start, world_end;
    double u0, u1;
    bool widened; /* drawn at the minimum width */
} zero_draw_piece;

/* A position in the buffer that gets a vertical mark (shard or bucket boundary). */
typedef struct {
    size_t world;
    double u;
    int line;      /* which wrapped line */
    double x;      /* on the canvas */
    int label_row; /* shard marks: row (0 or 1) of its text block under the line, always
                     * found (zero_draw_layout.c); bucket marks: -1, they carry no label */
} zero_draw_mark;

typedef struct {
    double width, height;            /* canvas */
    double bar_x, line_w;            /* every line starts at bar_x and is line_w long */
    int n_lines;                     /* dp * lines_per_shard */
    int lines_per_shard;             /* shard d fills lines [d*k, (d+1)*k) */
    double first_line_y, line_pitch; /* top of line i's bar = first_line_y + i * line_pitch */
    double bar_h, band_y, band_h, bucket_y, bucket_h, label_y; /* offsets from a line's top */
    int label_rows;            /* rows of boundary labels used under each line */
    double min_w;              /* minimum segment width in px */
    double px_per_elem;        /* scale of a shard where nothing is widened */
    double *shard_px_per_elem; /* (dp,) the scale of the pieces not widened, per shard */
    int n_widened;
    int n_segments;
    zero_draw_segment *segments; /* parameters with numel > 0, then the padding */
    int n_pieces;
    zero_draw_piece *pieces; /* segments cut at shard boundaries, in buffer order */
    int n_marks;
    zero_draw_mark *marks; /* shard boundaries: world d * S for d = 0..dp; mark d
                                     * starts line d * lines_per_shard, mark dp ends the bar */
    int n_bucket_marks;
    zero_draw_mark *bucket_marks; /* bucket starts, then the end of the last bucket */
    double legend_y, table_y;     /* baselines of the legend and the first table row */
} zero_draw_layout;

/* The most data-parallel ranks the picture draws (one line each at least); train's flag check
 * refuses --draw-zero beyond it, and the run's zero.png is left out. */
enum { ZERO_DRAW_MAX_DP = 128 };

/* The whole geometry for a canvas `width` pixels wide (<= 0: 1400); r->dp <= ZERO_DRAW_MAX_DP. */
void zero_draw_layout_make(const zero_ranges *r, double width, zero_draw_layout *L);
void zero_draw_layout_free(zero_draw_layout *L);
/* Distance along the unwrapped bar of world index w (0 <= w <= padded_numel). */
double zero_draw_u_of(const zero_draw_layout *L, size_t w);
/* Where u falls on the canvas: its line and x. u = k * line_w starts line k. */
void zero_draw_place(const zero_draw_layout *L, double u, int *line, double *x);

/* Draws the picture to path (.png, .svg or .pdf by extension, written atomically).
 * plan may be NULL (then the title shows no byte counts). */
void zero_draw(const char *path, const zero_ranges *r, const zero_memory_plan *plan);

#endif /* TRIDENT_VIZ_ZERO_DRAW_H */
