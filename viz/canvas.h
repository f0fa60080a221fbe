/* canvas.h — the one place where Trident opens a Cairo surface.
 *
 * Every picture (groups, schedules, timelines, the ZeRO buffer, benchmark charts) is
 * drawn on a viz_canvas: the output format follows the file extension (.png, .svg,
 * .pdf), the file is written atomically (a crash never leaves half a picture over a good
 * one), text is DejaVu Sans, and colours come from one palette so the same kind of thing
 * has the same colour in every picture. The palette, type size and line weight are a theme
 * (default, or slides for a projector); the output size can be set apart from the drawing's
 * own (viz_output_size). PNG output is deterministic: the same drawing calls give the same
 * bytes. SVG output carries its text as real <text> elements (font, size, colour, anchor), so
 * a slide can be edited; PNG and PDF draw the glyphs.
 *
 * The label audit. Every label (viz_text, viz_legend, viz_text_on_fill) is recorded with its
 * extent on the page and the ground it is drawn on: the page (white) unless the drawing code
 * said otherwise (viz_text_ground, viz_text_on_fill). A label is a violation when
 *   - any part of its ink lies outside the canvas ("outside the 1200 x 500 canvas");
 *   - its colour against its ground has a WCAG 2 contrast ratio below VIZ_MIN_CONTRAST (4.5:1,
 *     WCAG's AA level for normal-size text: box digits and byte counts are small text);
 *   - it sits on a hatched or patterned fill without a backing plate.
 * viz_canvas_check lists them while the canvas is open; viz_canvas_close keeps the list of the
 * last picture (viz_last_violations). With TRIDENT_LAYOUT_CHECK=1 in the environment every
 * picture prints each violation to stderr as one line,
 *     layout: label 'xyz' at 1180..1232, 40..52 outside the 1200 x 500 canvas
 * and the program, once it has written all its pictures, exits with status VIZ_LAYOUT_EXIT,
 * so the tutorials' test and figures.sh can require zero violations.
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
    double frame_w, frame_h;  /* the page as written (points), after viz_output_size */
    struct viz_label *labels; /* the audit's record of every label (canvas.c) */
    int nlabels, cap_labels;
} viz_canvas;

enum { VIZ_PNG = 1, VIZ_SVG = 2, VIZ_PDF = 3 };

/* Which picture format a path asks for (by extension), or 0 if none of the three. */
int viz_format_of(const char *path);

/* Opens a white canvas of width x height; dies naming the path for an unknown extension. */
void viz_canvas_open(viz_canvas *c, const char *path, double width, double height);
/* The same for a drawing laid out in the current theme (its type size measured with
 * viz_measure): no margin is added for the slides' larger type, so a drawing laid out for the
 * asked frame fills it exactly. */
void viz_canvas_open_fitted(viz_canvas *c, const char *path, double width, double height);
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

/* The size of the next pictures in points (pixels for PNG); 0 = the picture's own size. A
 * picture that lays itself out for the frame (timelines and schedules read it through
 * viz_output_frame: the plot takes the width, the rows the spare height) fills it; whatever
 * does not fit exactly is scaled uniformly to fit the width x height frame and centred in it;
 * with one, the other follows the picture's aspect ratio. Vector formats stay vector. */
void viz_output_size(double width, double height);
/* The size asked for by viz_output_size (0 where unset), so a picture can lay itself out for
 * the frame (a timeline's or a schedule's rows grow to fill its height). */
void viz_output_frame(double *width, double *height);
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
/* Its pale twin (a plan drawn under what was measured): filled with fill lightened by t
 * (viz_shade), the slides' kind pattern lightened too, outlined in fill itself. */
void viz_box_pale(cairo_t *cr, double x, double y, double w, double h, viz_rgb fill, double t);
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
/* The same, wrapped onto further rows (viz_legend_pitch apart) so no row passes x + max_w;
 * hatched[i] (hatched may be NULL) hatches the swatch, as the boxes it stands for; returns the
 * number of rows. viz_legend_rows says how many beforehand (to size a picture). */
int viz_legend_wrap(cairo_t *cr, double x, double y, double size, int n, const viz_rgb *colors,
                    const char *const *labels, const bool *hatched, double max_w);
int viz_legend_rows(double size, int n, const char *const *labels, double max_w);
double viz_legend_pitch(double size);
/* The width of one legend item (swatch, label, space after it) at `size`. */
double viz_legend_item_width(double size, const char *label);

/* ---- measuring, wrapping and auditing labels ------------------------------------------- */

#define VIZ_MIN_CONTRAST 4.5  /* WCAG 2 AA for normal text */
enum { VIZ_LAYOUT_EXIT = 3 }; /* exit status of a picture command with layout violations */

/* The width `text` takes at `size` points in the current theme, without a canvas (the same
 * number viz_text_width gives on a PNG canvas). */
double viz_measure(double size, bool bold, const char *text);
/* Breaks `text` at spaces into lines no wider than max_w, written to `out` with '\n' between
 * them; returns the number of lines. A word wider than max_w keeps a line of its own. */
int viz_wrap(const char *text, double size, bool bold, double max_w, char *out, size_t cap);
/* The distance between the baselines of two wrapped lines at `size`. */
double viz_line_pitch(double size);
/* Text with '\n' line breaks, viz_line_pitch apart, the first baseline at y. */
void viz_text_lines(cairo_t *cr, double x, double y, double size, bool bold, viz_align align,
                    viz_rgb color, const char *text);

/* WCAG 2 contrast ratio of two colours (1 .. 21). */
double viz_contrast(viz_rgb a, viz_rgb b);
/* Black or white, whichever contrasts more with `fill`. */
viz_rgb viz_ink_on(viz_rgb fill);
/* The ground of the labels that follow: they sit on `fill` (patterned: hatching or a pattern
 * under them). viz_text_ground_page() goes back to the white page. */
void viz_text_ground(viz_rgb fill, bool patterned);
void viz_text_ground_page(void);
/* Text on a box: black or white by contrast with `fill`; over a hatched or patterned fill
 * (patterned) a plate of the plain fill goes under the text first, so the lines never cross
 * it (on a plain fill the plate is invisible). */
void viz_text_on_fill(cairo_t *cr, double x, double y, double size, bool bold, viz_align align,
                      viz_rgb fill, bool patterned, const char *text);

/* The violations of the labels drawn so far on c, one line each ('\n'-separated) into out;
 * returns how many. */
int viz_canvas_check(const viz_canvas *c, char *out, size_t cap);
/* The same for the last picture closed. */
int viz_last_violations(char *out, size_t cap);

/* A title given on the command line (--title): one line of 1..VIZ_TITLE_MAX bytes of valid
 * UTF-8 without control characters. False with one line naming the rule in why. */
enum { VIZ_TITLE_MAX = 120 };
bool viz_title_check(const char *title, char *why, size_t cap);

#endif /* TRIDENT_VIZ_CANVAS_H */
