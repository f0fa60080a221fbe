/* canvas.h — the one place where Trident opens a Cairo surface.
 *
 * Every picture (groups, schedules, timelines, the ZeRO buffer, benchmark charts) is
 * drawn on a viz_canvas: the output format follows the file extension (.png, .svg,
 * .pdf), the file is written atomically (a crash never leaves half a picture over a good
 * one), text is DejaVu Sans, and colours come from one palette so the same kind of thing
 * has the same colour in every picture. The palette, type size and line weight are a theme
 * (default, or slides for a projector); the output size can be set apart from the drawing's
 * own (viz_output_size). PNG output is deterministic: the same drawing calls give the same
 * bytes.
 *
 * Not here: what to draw. This module knows nothing of ranks, schedules or traces.
 */
#ifndef TRIDENT_VIZ_CANVAS_H
#define TRIDENT_VIZ_CANVAS_H

#include <cairo.h>
#include <stdbool.h>
#include <stddef.h>

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

/* A theme: the palette, the type size and the line weight of every picture.
 *   "default"  the documentation's look (the tutorials' images are drawn with it)
 *   "slides"   for a projector and grey-scale print: type x1.35, lines x2, a palette whose
 *              kinds differ in lightness as well as hue, and a pattern on the boxes of the
 *              kinds that colour alone would tell apart (backward: diagonal hatching,
 *              weight-gradient: cross-hatching, p2p: reverse diagonals, collective: dots)
 * The command line picks one (--theme) before drawing; every picture reads it through the
 * palette names below, viz_text, viz_box, viz_line_width and viz_categorical. */
typedef struct {
    const char *name;
    viz_rgb forward, backward, weight, optimizer, p2p, collective, idle, text, grid, memory;
    viz_rgb categorical[8];
    double text_scale; /* every font size is multiplied by it */
    double line_scale; /* every outline and stroke width */
    bool patterns;     /* viz_box adds a pattern to the boxes of the schedule/traffic kinds */
} viz_theme;

/* The theme in use ("default" until viz_theme_use). */
const viz_theme *viz_theme_current(void);
/* Selects a theme by name; false (nothing changed) for an unknown name. */
bool viz_theme_use(const char *name);
/* The theme names, for --help and error messages: "default|slides". */
extern const char *const VIZ_THEME_CHOICES;

/* The size of the next pictures in points (pixels for PNG); 0 = the picture's own size. With
 * both, the drawing is scaled uniformly to fit the width x height frame and centred in it;
 * with one, the other follows the picture's aspect ratio. Vector formats stay vector. */
void viz_output_size(double width, double height);
/* The flags every picture command shares: checks them (dies naming the flag and the rule:
 * a theme outside VIZ_THEME_CHOICES, a size outside 100..20000) and applies them. `who` is
 * the command ("trident groups"). theme NULL = default; width/height 0 = unset. */
void viz_picture_options(const char *who, const char *theme, int width, int height);

/* The shared palette, read from the current theme. */
#define VIZ_FORWARD (viz_theme_current()->forward)
#define VIZ_BACKWARD (viz_theme_current()->backward)
#define VIZ_WEIGHT (viz_theme_current()->weight)
#define VIZ_OPTIMIZER (viz_theme_current()->optimizer)
#define VIZ_P2P (viz_theme_current()->p2p)
#define VIZ_COLLECTIVE (viz_theme_current()->collective)
#define VIZ_IDLE (viz_theme_current()->idle)
#define VIZ_TEXT (viz_theme_current()->text)
#define VIZ_GRID (viz_theme_current()->grid)
#define VIZ_MEMORY (viz_theme_current()->memory)
/* Eight distinguishable colours for groups, ranks, parameters. */
viz_rgb viz_categorical(int i);
/* A lighter (t > 0) or darker (t < 0) version of a colour, t in [-1, 1]. */
viz_rgb viz_shade(viz_rgb c, double t);

/* cairo_set_line_width scaled by the theme's line weight. */
void viz_line_width(cairo_t *cr, double width);
void viz_set_rgb(cairo_t *cr, viz_rgb c);
/* A filled rectangle with a thin darker outline. */
void viz_box(cairo_t *cr, double x, double y, double w, double h, viz_rgb fill);
/* Diagonal hatching inside a rectangle (distinguishes model chunks without colour). */
void viz_hatch(cairo_t *cr, double x, double y, double w, double h, viz_rgb ink, double gap);

typedef enum { VIZ_LEFT, VIZ_CENTER, VIZ_RIGHT } viz_align;
/* Text in DejaVu Sans at `size` points (times the theme's text scale); y is the baseline.
 * bold selects the bold face. */
void viz_text(cairo_t *cr, double x, double y, double size, bool bold, viz_align align,
              viz_rgb color, const char *text);
/* The width `text` would take. */
double viz_text_width(cairo_t *cr, double size, bool bold, const char *text);

/* A legend: coloured squares with labels in a row starting at (x, y); returns its width. */
double viz_legend(cairo_t *cr, double x, double y, double size, int n, const viz_rgb *colors,
                  const char *const *labels);

/* A title given on the command line (--title): one line of 1..VIZ_TITLE_MAX bytes of valid
 * UTF-8 without control characters. False with one line naming the rule in why. */
enum { VIZ_TITLE_MAX = 120 };
bool viz_title_check(const char *title, char *why, size_t cap);

#endif /* TRIDENT_VIZ_CANVAS_H */
