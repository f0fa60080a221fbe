/* text_timeline.h — timelines as text, for a terminal or a log.
 *
 * Per panel: the title, then one line per rank (grouped by pipeline stage) with one
 * character per time bucket — the kind that covers most of the bucket:
 *
 *   F forward   B backward   (lowercase f, b: an odd model chunk)   O optimizer
 *   > send      < receive    C collective   D data   E eval   . idle (nothing, or waiting)
 *
 * then the rank's idle %, and below the rows the measured and theoretical bubble.
 * Plain ASCII; the same time scale for every panel.
 *
 * Not here: files (the caller opens the stream), trace parsing.
 */
#ifndef TRIDENT_VIZ_TEXT_TIMELINE_H
#define TRIDENT_VIZ_TEXT_TIMELINE_H

#include <stdio.h>

#include "viz/timeline.h"

/* Writes n timelines with `columns` time buckets per row (the longest panel fills them). */
void viz_text_timeline_write(FILE *f, const viz_timeline *const *tls, int n, int columns);

/* The character of one kind of box (chunk picks the case of F and B). */
char viz_text_timeline_char(viz_tl_kind kind, int chunk);

#endif /* TRIDENT_VIZ_TEXT_TIMELINE_H */
