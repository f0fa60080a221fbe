/* canvas.h — the one place where Trident opens a Cairo surface.
 *
 * Every picture (groups, schedules, timelines, the ZeRO buffer, benchmark charts) is
 * drawn on a viz_canvas: the output format follows the file extension (.png, .svg,
 * .pdf), the file is written atomically (a crash never leaves half a picture over a good
 * one), text is DejaVu Sans, and colours come from one palette so the same kind of thing
 * has the same colour in every picture. PNG output is deterministic: the same drawing
 * calls give the same bytes.
 *
 * Not here: what to draw. This module knows nothing of ranks, schedules or traces.
 */
#ifndef TRIDENT_VIZ_CANVAS_H
#define TRIDENT_VIZ_CANVAS_H

#include <cairo.h>
#include <stdbool.h>

typedef struct {
    cairo_surface_t *surface;
    cairo_t *cr;
    double width, height; /* in points (= pixels for PNG) */
    int format;           /* VIZ_PNG, VIZ_SVG, VIZ_PDF */
    char path[4096];
    char tmp[4096 + 32];
} viz_canvas;

enum { VIZ_PNG = 1, VIZ_SVG = 2, VIZ_PDF = 3 };

/* Which picture format a path asks for (by extension), or 0 if none of the three. */
int viz_format_of(const char *path);

/* Opens a white canvas of width x height; dies naming the path for an unknown extension. */
void viz_canvas_open(viz_canvas *c, const char *path, double width, double height);
/* Finishes the drawing and atomically moves it into place. */
void viz_canvas_close(viz_canvas *c);

typedef struct {
    double r, g, b;
} viz_rgb;

/* The shared palette. */
extern const viz_rgb VIZ_FORWARD, VIZ_BACKWARD, VIZ_WEIGHT, VIZ_OPTIMIZER, VIZ_P2P, VIZ_COLLECTIVE,
    VIZ_IDLE, VIZ_TEXT, VIZ_GRID, VIZ_MEMORY;
/* Eight distinguishable colours for groups, ranks, parameters. */
viz_rgb viz_categorical(int i);
/* A lighter (t > 0) or darker (t < 0) version of a colour, t in [-1, 1]. */
viz_rgb viz_shade(viz_rgb c, double t);

void viz_set_rgb(cairo_t *cr, viz_rgb c);
/* A filled rectangle with a thin darker outline. */
void viz_box(cairo_t *cr, double x, double y, double w, double h, viz_rgb fill);
/* Diagonal hatching inside a rectangle (distinguishes model chunks without colour). */
void viz_hatch(cairo_t *cr, double x, double y, double w, double h, viz_rgb ink, double gap);

typedef enum { VIZ_LEFT, VIZ_CENTER, VIZ_RIGHT } viz_align;
/* Text in DejaVu Sans at `size` points; y is the baseline. bold selects the bold face. */
void viz_text(cairo_t *cr, double x, double y, double size, bool bold, viz_align align,
              viz_rgb color, const char *text);
/* The width `text` would take. */
double viz_text_width(cairo_t *cr, double size, bool bold, const char *text);

/* A legend: coloured squares with labels in a row starting at (x, y); returns its width. */
double viz_legend(cairo_t *cr, double x, double y, double size, int n, const viz_rgb *colors,
                  const char *const *labels);

#endif /* TRIDENT_VIZ_CANVAS_H */
