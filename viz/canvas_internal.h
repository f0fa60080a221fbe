/* canvas_internal.h — what canvas.c and canvas_audit.c share: the record of one label.
 *
 * Not here: anything a picture calls (viz/canvas.h).
 */
#ifndef TRIDENT_VIZ_CANVAS_INTERNAL_H
#define TRIDENT_VIZ_CANVAS_INTERNAL_H

#include "viz/canvas.h"

/* One label as drawn: its ink extent on the page, its colours, and what an SVG <text> needs. */
struct viz_label {
    char *text;
    double x0, x1, y0, y1; /* ink extent, page coordinates (points) */
    viz_rgb ink, ground;
    bool patterned, plated;
    double ux, uy, size; /* left end of the baseline and font size, drawing's coordinates */
    double advance;      /* the text's width there */
    viz_align align;     /* how it was anchored (the SVG text-anchor) */
    bool bold;
    cairo_matrix_t ctm; /* the transform in force when it was drawn */
};

/* Selects DejaVu Sans at size x the theme's text scale. */
void viz_select_font(cairo_t *cr, double size, bool bold);
/* Records a label drawn at (x, y) (left end of the baseline) on the open canvas whose context
 * is cr; returns false when the glyphs must not be drawn (SVG: they become <text> at close). */
bool viz_audit_record(cairo_t *cr, double x, double y, double size, bool bold, viz_align align,
                      viz_rgb ink, const char *text, bool plated);
/* Canvas open/close hooks: the open canvas, and at close the check, the SVG text and the
 * TRIDENT_LAYOUT_CHECK report. viz_audit_svg runs after the file is written. */
void viz_audit_open(viz_canvas *c);
void viz_audit_close(viz_canvas *c);
void viz_audit_svg(viz_canvas *c);

#endif /* TRIDENT_VIZ_CANVAS_INTERNAL_H */
