/* zero_draw_internal.h — what the two halves of the ZeRO picture share, and nothing else.
 * zero_draw_layout.c turns the ranges into numbers; zero_draw.c paints them. Both need the
 * sizes below and the text under a shard boundary.
 *
 * Not here: anything a caller of zero_draw.h needs; this header is private to viz:zero_draw.
 */
#ifndef TRIDENT_VIZ_ZERO_DRAW_INTERNAL_H
#define TRIDENT_VIZ_ZERO_DRAW_INTERNAL_H

#include <stddef.h>

#include "viz/zero_draw.h"

enum { MAX_LINES = ZERO_DRAW_MAX_DP, TABLE_ROWS_MAX = 32 };

/* The three lines under a shard boundary: font size, line spacing, height of a row of them. */
static const double LABEL_FS = 8.5, LABEL_LINE = 11, LABEL_ROW_H = 37;

/* n with thousands separators ("38,597,376") into buf; returns buf. */
const char *zero_draw_count_str(size_t n, char *buf, size_t cap);

/* The three lines under shard boundary d: world index, local index on each side, and the
 * parameter index at that point. */
void zero_draw_boundary_label(const zero_ranges *r, int d, char out[3][80]);

/* The estimated width of those three lines (the widest), in pixels. */
double zero_draw_label_width(char text[3][80]);

#endif /* TRIDENT_VIZ_ZERO_DRAW_INTERNAL_H */
