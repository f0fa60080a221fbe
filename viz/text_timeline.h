/* text_timeline.h — timelines as text, for a terminal or a log.
 *
 * Per panel: the title, then one line per rank (grouped by pipeline stage) with one
 * character per time bucket. The bucket's time class (viz/timeline.h) is the one covering
 * most of it; its character:
 *
 *   compute   F forward  B backward  (lowercase f, b: an odd model chunk)  O optimizer
 *             D data     E eval                     — the compute kind covering most of it
 *   transfer  > send     < receive   C collective   — the message moving bytes longest
 *             A all-to-all (MoE)     R ring step (CP)   (named in the legend when present)
 *   wait      ~          (blocked on a peer)
 *   idle      .          (nothing scheduled)
 *
 * then the rank's four shares (compute, transfer, wait, idle: they add up to 100%), and below
 * the rows the measured bubble (wait + idle in the pipeline span) and the theory.
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
/* The same, for the window [w->t0, w->t1) of every panel only (NULL: all, as above): the
 * buckets cover the window (its end clipped to the longest panel), the title names it, the
 * shares count it; the bubble line stays the whole step's. */
void viz_text_timeline_write_window(FILE *f, const viz_timeline *const *tls, int n, int columns,
                                    const viz_tl_window *w);

/* The character of one kind of box (chunk picks the case of F and B). */
char viz_text_timeline_char(viz_tl_kind kind, int chunk);

#endif /* TRIDENT_VIZ_TEXT_TIMELINE_H */
