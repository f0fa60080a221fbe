/* build.h — a picture cut into K time slices, one page per slice, for stepping through it on
 * slides (`trident schedule --build K`, `trident render --build K`).
 *
 *   page 1 of 4     page 2 of 4          page 3 of 4               page 4 of 4
 *   [F0][F1|        [F0][F1][F2][B0|     [F0][F1][F2][B0][F3][B1|  ... the whole picture
 *          ^now                    ^now                         ^now
 *   0    T/4        0          2T/4      0                  3T/4   0                  T
 *
 * The time shown, 0 .. T (a schedule's makespan, a step's duration), is cut into K equal
 * slices; page k (1..K) shows everything up to the cut k·T/K on the full, fixed time axis:
 * a box that started before the cut is drawn up to it, a box that starts after it is absent.
 * A thin "now" line marks the cut and "k / K" sits in the top right corner. The last page is
 * the whole picture.
 *
 * One output holds the pages:
 *   deck.pdf    one PDF of K pages (one surface, cairo_show_page between pages)
 *   frame.png   frame-01.png .. frame-K.png (frame.svg likewise), numbered with two digits
 * Every file is written atomically, and a sequence all or nothing: the frames are drawn under
 * hidden temporary names and moved into place only when every one was drawn, so a failing
 * page never leaves a half sequence over a good one.
 *
 * What a page shows is the caller's: it gets the page number and the cut, and paints (the
 * schedule picture with its layout cut, viz/schedule_draw.h; a run's timeline with a time
 * limit, viz/timeline_draw.h).
 *
 * Not here: what the pictures are, or flag parsing.
 */
#ifndef TRIDENT_VIZ_BUILD_H
#define TRIDENT_VIZ_BUILD_H

#include <cairo.h>
#include <stdbool.h>
#include <stddef.h>

enum { VIZ_BUILD_MAX = 64 }; /* pages of one build */

/* The end of slice k (1..K) of 0..T: k·T/K (the last one exactly T). */
double viz_build_cut(double T, int K, int k);

/* Checks a build of K pages into `path`: K in 1..VIZ_BUILD_MAX and a picture extension (.pdf,
 * .png, .svg). False with one line naming the value and the rule in why. */
bool viz_build_check(int K, const char *path, char *why, size_t cap);
/* The same for the flag's text: a whole decimal number, then checked as above into *K. */
bool viz_build_parse(const char *text, const char *path, int *K, char *why, size_t cap);

/* The name of page k of a sequence: "dir/frame.png" -> "dir/frame-03.png". For a .pdf: the
 * path itself (every page in one file). */
void viz_build_page_name(const char *path, int k, char *out, size_t cap);

/* Paints page k (1..K) of a build of a picture width x height points, whose time is shown
 * up to `cut`. ctx is the caller's. */
typedef void (*viz_build_paint_fn)(cairo_t *cr, int k, int K, double cut, void *ctx);

/* Writes the K pages of the picture into `path` (see above), cutting 0..T. Dies (one line) if
 * a page cannot be written; nothing is moved over an existing file before all were drawn. */
void viz_build_write(const char *path, int K, double T, double width, double height,
                     viz_build_paint_fn paint, void *ctx);

/* The marks of page k of K, painted last: the thin "now" line at page x from y0 to y1 (not on
 * the last page, which is the whole picture; once per panel of a stack), and "k / K"
 * right-aligned with its baseline at (right, top). */
void viz_build_now(cairo_t *cr, double x, double y0, double y1, int k, int K);
void viz_build_page_number(cairo_t *cr, int k, int K, double right, double top);

/* "wrote deck.pdf (4 pages)" or "wrote frame-01.png .. frame-04.png (4 frames)" into out. */
void viz_build_describe(const char *path, int K, char *out, size_t cap);

#endif /* TRIDENT_VIZ_BUILD_H */
