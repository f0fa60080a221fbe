/* canvas.c — see canvas.h. */
#include "viz/canvas.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/core/flags.h"
#include "src/core/nofollow.h"
#include "viz/canvas_internal.h"

/* ---- themes -------------------------------------------------------------------------- */

static const viz_theme k_default = {
    .name = "default",
    .forward = {0.27, 0.51, 0.80},
    .backward = {0.40, 0.72, 0.38},
    .weight = {0.22, 0.50, 0.47}, /* a darker teal beside backward's green */
    .optimizer = {0.60, 0.45, 0.75},
    .p2p = {0.95, 0.60, 0.20},
    .collective = {0.85, 0.33, 0.31},
    .idle = {0.93, 0.93, 0.93},
    .text = {0.10, 0.10, 0.12},
    .grid = {0.75, 0.75, 0.78},
    .memory = {0.55, 0.20, 0.45},
    .categorical = {{0.27, 0.51, 0.80},
                    {0.95, 0.55, 0.15},
                    {0.35, 0.70, 0.35},
                    {0.85, 0.30, 0.30},
                    {0.58, 0.44, 0.75},
                    {0.55, 0.36, 0.30},
                    {0.90, 0.47, 0.76},
                    {0.50, 0.50, 0.50}},
    .text_scale = 1.0,
    .line_scale = 1.0,
    .patterns = false,
};

/* Slides: the kinds that sit side by side (forward, backward, weight) are far apart in
 * lightness (grey levels 0.25, 0.79, 0.51), text is black, and patterns carry the rest.
 * The categorical colours alternate dark and light so neighbours differ in grey too. */
static const viz_theme k_slides = {
    .name = "slides",
    .forward = {0.00, 0.30, 0.65},
    .backward = {0.98, 0.78, 0.30},
    .weight = {0.15, 0.70, 0.50},
    .optimizer = {0.62, 0.40, 0.75},
    .p2p = {0.90, 0.42, 0.00},
    .collective = {0.70, 0.08, 0.12},
    .idle = {0.96, 0.96, 0.96},
    .text = {0.00, 0.00, 0.00},
    .grid = {0.45, 0.45, 0.45},
    .memory = {0.45, 0.05, 0.40},
    .categorical = {{0.00, 0.30, 0.65},
                    {0.98, 0.78, 0.30},
                    {0.70, 0.08, 0.12},
                    {0.55, 0.85, 0.55},
                    {0.35, 0.20, 0.55},
                    {0.95, 0.60, 0.75},
                    {0.20, 0.20, 0.20},
                    {0.60, 0.85, 0.95}},
    .text_scale = 1.35,
    .line_scale = 2.0,
    .patterns = true,
};

static const viz_theme *g_theme = &k_default;
static double g_out_width, g_out_height; /* 0: the picture's own size */

const char *const VIZ_THEME_CHOICES = "default|slides";

const viz_theme *viz_theme_current(void) { return g_theme; }

bool viz_theme_use(const char *name) {
    if (name && strcmp(name, k_default.name) == 0) g_theme = &k_default;
    else if (name && strcmp(name, k_slides.name) == 0) g_theme = &k_slides;
    else return false;
    return true;
}

void viz_output_size(double width, double height) {
    g_out_width = width > 0 ? width : 0;
    g_out_height = height > 0 ? height : 0;
}

void viz_picture_options(const char *who, const char *theme, int width, int height) {
    if (theme && !viz_theme_use(theme))
        die("%s: --theme '%s' is not a theme (one of default, slides)", who, theme);
    if (width != 0 && (width < 100 || width > 20000))
        die("%s: --width %d is out of range (100 to 20000 points; 0 = the picture's own)", who,
            width);
    if (height != 0 && (height < 100 || height > 20000))
        die("%s: --height %d is out of range (100 to 20000 points; 0 = the picture's own)", who,
            height);
    viz_output_size(width, height);
}

viz_rgb viz_categorical(int i) {
    if (i < 0) i = -i;
    return g_theme->categorical[i % 8];
}

viz_rgb viz_shade(viz_rgb c, double t) {
    viz_rgb o;
    if (t >= 0) {
        o.r = c.r + (1 - c.r) * t;
        o.g = c.g + (1 - c.g) * t;
        o.b = c.b + (1 - c.b) * t;
    } else {
        o.r = c.r * (1 + t);
        o.g = c.g * (1 + t);
        o.b = c.b * (1 + t);
    }
    return o;
}

int viz_format_of(const char *path) {
    if (path_has_ext(path, ".png")) return VIZ_PNG;
    if (path_has_ext(path, ".svg")) return VIZ_SVG;
    if (path_has_ext(path, ".pdf")) return VIZ_PDF;
    return 0;
}

/* Cairo's image surfaces stop at 32767 pixels a side. */
enum { VIZ_PNG_MAX = 32767 };

/* The picture is written to `tmp` at the end and renamed over `path`: try that file now, so a
 * place that cannot be written is named before any drawing (Cairo would only say "error
 * while writing to output stream", after the work). */
static void probe_writable(const char *tmp, const char *path) {
    char why[9000]; /* a picture never replaces a link (src/core/nofollow.h) */
    if (!nofollow_check(path, why, sizeof why)) die("%s", why);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        die("cannot write '%s': %s (a picture's directory must exist and be writable)", path,
            strerror(errno));
    close(fd);
    unlink(tmp);
}

void viz_output_frame(double *width, double *height) {
    *width = g_out_width;
    *height = g_out_height;
}

static void canvas_open(viz_canvas *c, const char *path, double width, double height, bool fitted);

void viz_canvas_open(viz_canvas *c, const char *path, double width, double height) {
    canvas_open(c, path, width, height, false);
}

void viz_canvas_open_fitted(viz_canvas *c, const char *path, double width, double height) {
    canvas_open(c, path, width, height, true);
}

static void canvas_open(viz_canvas *c, const char *path, double width, double height, bool fitted) {
    memset(c, 0, sizeof *c);
    c->format = viz_format_of(path);
    if (!c->format)
        die("cannot draw '%s': the picture format follows the extension, which must be .png, .svg "
            "or .pdf",
            path);
    if (strlen(path) >= sizeof c->path) die("output path too long: '%s'", path);
    strcpy(c->path, path);
    snprintf(c->tmp, sizeof c->tmp, "%s.tmp.%d", path, (int)getpid());
    probe_writable(c->tmp, path);
    c->width = width;
    c->height = height;
    viz_audit_open(c);
    /* The drawing's extent: its own size; the slides' larger type may run past the layout's
     * right and bottom edges, so they get a margin. The frame: that extent, or the size
     * asked for (viz_output_size) with the drawing scaled uniformly into it and centred. */
    const double grow = fitted ? 0 : g_theme->text_scale - 1;
    const double dw = width * (1 + grow * 0.25), dh = height * (1 + grow * 0.1);
    double fw = dw, fh = dh, scale = 1;
    const bool framed = g_out_width > 0 || g_out_height > 0;
    if (framed) {
        double sx = g_out_width > 0 ? g_out_width / dw : g_out_height / dh;
        double sy = g_out_height > 0 ? g_out_height / dh : sx;
        scale = sx < sy ? sx : sy;
        fw = g_out_width > 0 ? g_out_width : dw * scale;
        fh = g_out_height > 0 ? g_out_height : dh * scale;
    }
    c->frame_w = c->format == VIZ_PNG ? (int)(fw + 0.5) : fw;
    c->frame_h = c->format == VIZ_PNG ? (int)(fh + 0.5) : fh;
    if (c->format == VIZ_PNG && (fw + 0.5 > VIZ_PNG_MAX || fh + 0.5 > VIZ_PNG_MAX))
        die("cannot draw '%s': the picture would be %.0f × %.0f pixels and a PNG holds at most "
            "%d in each direction (use .svg or .pdf, or a smaller --width/--height)",
            path, fw, fh, VIZ_PNG_MAX);
    if (c->format == VIZ_PNG)
        c->surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)(fw + 0.5),
                                                (int)(fh + 0.5));
    else if (c->format == VIZ_SVG) c->surface = cairo_svg_surface_create(c->tmp, fw, fh);
    else c->surface = cairo_pdf_surface_create(c->tmp, fw, fh);
    if (cairo_surface_status(c->surface) != CAIRO_STATUS_SUCCESS)
        die("cannot create a picture at '%s': %s", path,
            cairo_status_to_string(cairo_surface_status(c->surface)));
    c->cr = cairo_create(c->surface);
    cairo_set_source_rgb(c->cr, 1, 1, 1);
    cairo_paint(c->cr);
    if (framed) { /* the drawing keeps its own coordinates, centred in the frame */
        cairo_translate(c->cr, (fw - dw * scale) / 2, (fh - dh * scale) / 2);
        cairo_scale(c->cr, scale, scale);
    }
    cairo_set_line_width(c->cr, 1.0);
}

static cairo_status_t write_to_file(void *f, const unsigned char *data, unsigned int length) {
    return fwrite(data, 1, length, (FILE *)f) == length ? CAIRO_STATUS_SUCCESS
                                                        : CAIRO_STATUS_WRITE_ERROR;
}

/* The PNG into the temporary, opened never through a link (src/core/nofollow.h): one planted
 * at the temporary's name while the picture was drawn is refused, not written through. */
static cairo_status_t write_png(viz_canvas *c) {
    char why[9000];
    int fd = nofollow_open_file(c->tmp, true, why, sizeof why);
    if (fd < 0) die("%s", why);
    FILE *f = fdopen(fd, "wb");
    if (!f) die("cannot write '%s': %s", c->tmp, strerror(errno));
    cairo_status_t st = cairo_surface_write_to_png_stream(c->surface, write_to_file, f);
    if (fclose(f) != 0 && st == CAIRO_STATUS_SUCCESS) st = CAIRO_STATUS_WRITE_ERROR;
    return st;
}

void viz_canvas_close(viz_canvas *c) {
    viz_audit_close(c);
    cairo_status_t st = cairo_status(c->cr);
    cairo_destroy(c->cr);
    if (st == CAIRO_STATUS_SUCCESS && c->format == VIZ_PNG) st = write_png(c);
    cairo_surface_finish(c->surface);
    if (st == CAIRO_STATUS_SUCCESS) st = cairo_surface_status(c->surface);
    cairo_surface_destroy(c->surface);
    if (st != CAIRO_STATUS_SUCCESS) {
        remove(c->tmp);
        die("drawing '%s' failed: %s", c->path, cairo_status_to_string(st));
    }
    viz_audit_svg(c); /* SVG: the labels become <text> elements */
    char why[9000];
    if (!nofollow_rename(c->tmp, c->path, why, sizeof why)) {
        remove(c->tmp);
        die("%s", why);
    }
}

void viz_set_rgb(cairo_t *cr, viz_rgb c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }

void viz_line_width(cairo_t *cr, double width) {
    cairo_set_line_width(cr, width * g_theme->line_scale);
}

static bool same_rgb(viz_rgb a, viz_rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }

/* Slides: the pattern that tells a kind (its palette colour `fill`) apart in grey scale (see
 * viz_theme), drawn in `ink`. */
static void kind_pattern(cairo_t *cr, double x, double y, double w, double h, viz_rgb fill,
                         viz_rgb ink) {
    const viz_theme *t = g_theme;
    if (!t->patterns || w < 6 || h < 6) return;
    bool diag = same_rgb(fill, t->backward) || same_rgb(fill, t->weight);
    bool back = same_rgb(fill, t->weight) || same_rgb(fill, t->p2p);
    if (diag) viz_hatch(cr, x, y, w, h, ink, 7);
    if (back) { /* mirror the diagonals: the weight's cross-hatching, p2p's reverse slant */
        cairo_save(cr);
        cairo_translate(cr, 2 * x + w, 0);
        cairo_scale(cr, -1, 1);
        viz_hatch(cr, x, y, w, h, ink, 7);
        cairo_restore(cr);
    }
    if (same_rgb(fill, t->collective)) {
        cairo_save(cr);
        cairo_rectangle(cr, x, y, w, h);
        cairo_clip(cr);
        viz_set_rgb(cr, viz_shade(fill, 0.6));
        for (int row = 0; 3 + 6 * row < h; row++) /* staggered rows of dots */
            for (double dx = x + 3 + 3 * (row % 2); dx < x + w; dx += 6) {
                cairo_new_sub_path(cr);
                cairo_arc(cr, dx, y + 3 + 6 * row, 1.3, 0, 6.283185307179586);
            }
        cairo_fill(cr);
        cairo_restore(cr);
    }
}

void viz_box(cairo_t *cr, double x, double y, double w, double h, viz_rgb fill) {
    cairo_rectangle(cr, x, y, w, h);
    viz_set_rgb(cr, fill);
    if (g_theme->patterns) {
        cairo_fill(cr);
        kind_pattern(cr, x, y, w, h, fill, viz_shade(fill, -0.55));
        cairo_rectangle(cr, x, y, w, h);
    } else {
        cairo_fill_preserve(cr);
    }
    viz_set_rgb(cr, viz_shade(fill, -0.35));
    viz_line_width(cr, w > 3 && h > 3 ? 0.8 : 0.3);
    cairo_stroke(cr);
}

void viz_box_pale(cairo_t *cr, double x, double y, double w, double h, viz_rgb fill, double t) {
    cairo_rectangle(cr, x, y, w, h);
    viz_set_rgb(cr, viz_shade(fill, t));
    cairo_fill(cr);
    kind_pattern(cr, x, y, w, h, fill, viz_shade(fill, t / 3));
    if (w < 2 || h < 2) return;
    cairo_rectangle(cr, x + 0.5, y + 0.5, w - 1, h - 1);
    viz_set_rgb(cr, fill);
    viz_line_width(cr, 1);
    cairo_stroke(cr);
}

void viz_hatch(cairo_t *cr, double x, double y, double w, double h, viz_rgb ink, double gap) {
    cairo_save(cr);
    cairo_rectangle(cr, x, y, w, h);
    cairo_clip(cr);
    viz_set_rgb(cr, ink);
    viz_line_width(cr, 0.9);
    for (double d = -h; d < w; d += gap) {
        cairo_move_to(cr, x + d, y + h);
        cairo_line_to(cr, x + d + h, y);
    }
    cairo_stroke(cr);
    cairo_restore(cr);
}

void viz_select_font(cairo_t *cr, double size, bool bold) {
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size * g_theme->text_scale);
}

double viz_text_width(cairo_t *cr, double size, bool bold, const char *text) {
    cairo_text_extents_t e;
    viz_select_font(cr, size, bold);
    cairo_text_extents(cr, text, &e);
    return e.x_advance;
}

static void text_at(cairo_t *cr, double x, double y, double size, bool bold, viz_align align,
                    viz_rgb color, const char *text, bool plated) {
    double w = viz_text_width(cr, size, bold, text);
    if (align == VIZ_CENTER) x -= w / 2;
    else if (align == VIZ_RIGHT) x -= w;
    if (!viz_audit_record(cr, x, y, size, bold, align, color, text, plated)) return;
    viz_set_rgb(cr, color);
    cairo_move_to(cr, x, y);
    cairo_show_text(cr, text);
}

void viz_text(cairo_t *cr, double x, double y, double size, bool bold, viz_align align,
              viz_rgb color, const char *text) {
    text_at(cr, x, y, size, bold, align, color, text, false);
}

void viz_text_on_fill(cairo_t *cr, double x, double y, double size, bool bold, viz_align align,
                      viz_rgb fill, bool patterned, const char *text) {
    if (patterned) { /* a plate of the plain fill over the hatching, a little larger than the ink */
        cairo_text_extents_t e;
        viz_select_font(cr, size, bold);
        cairo_text_extents(cr, text, &e);
        double x0 = align == VIZ_CENTER  ? x - e.x_advance / 2
                    : align == VIZ_RIGHT ? x - e.x_advance
                                         : x;
        const double pad = 1.5 * g_theme->text_scale;
        cairo_rectangle(cr, x0 + e.x_bearing - pad, y + e.y_bearing - pad, e.width + 2 * pad,
                        e.height + 2 * pad);
        viz_set_rgb(cr, fill);
        cairo_fill(cr);
    }
    viz_text_ground(fill, patterned);
    text_at(cr, x, y, size, bold, align, viz_ink_on(fill), text, patterned);
    viz_text_ground_page();
}

double viz_line_pitch(double size) { return size * g_theme->text_scale * 1.3; }

void viz_text_lines(cairo_t *cr, double x, double y, double size, bool bold, viz_align align,
                    viz_rgb color, const char *text) {
    char line[1024];
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)n, p);
        viz_text(cr, x, y, size, bold, align, color, line);
        y += viz_line_pitch(size);
        p += n + (p[n] == '\n');
    }
}

/* A scratch context on a tiny image surface: text measured like on a PNG canvas. */
static cairo_t *scratch(void) {
    static cairo_t *cr;
    if (!cr) cr = cairo_create(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1));
    return cr;
}

double viz_measure(double size, bool bold, const char *text) {
    return viz_text_width(scratch(), size, bold, text);
}

/* How much of word[0..n) fits in max_w on a line of its own: up to its last '/' that fits
 * (a path breaks after a directory), else as many whole UTF-8 characters as fit (at least
 * one). */
static size_t fitting_part(const char *word, size_t n, double size, bool bold, double max_w) {
    char buf[1024];
    size_t best_slash = 0, best_char = 0;
    for (size_t k = 1; k <= n && k < sizeof buf; k++) {
        if (k < n && (word[k] & 0xC0) == 0x80) continue; /* inside a UTF-8 character */
        memcpy(buf, word, k);
        buf[k] = '\0';
        if (viz_measure(size, bold, buf) > max_w) break;
        best_char = k;
        if (word[k - 1] == '/') best_slash = k;
    }
    if (best_char == n) return n; /* the whole word fits */
    if (best_slash) return best_slash;
    if (best_char) return best_char;
    size_t k = 1;
    while (k < n && (word[k] & 0xC0) == 0x80) k++;
    return k;
}

int viz_wrap(const char *text, double size, bool bold, double max_w, char *out, size_t cap) {
    size_t used = 0, line_start = 0;
    int lines = 1;
    out[0] = '\0';
    for (const char *p = text; *p;) {
        size_t gap = strspn(p, " "), n = strcspn(p + gap, " ");
        if (n == 0) break;
        if (used + gap + n + 3 > cap) break; /* out is full: the rest is left off */
        if (used > line_start) {             /* the word on this line, its spaces kept */
            memcpy(out + used, p, gap + n);
            out[used + gap + n] = '\0';
            if (viz_measure(size, bold, out + line_start) <= max_w) {
                used += gap + n;
                p += gap + n;
                continue;
            }
            out[used] = '\n', line_start = ++used, lines++; /* no: on a line of its own */
        }
        size_t k = fitting_part(p + gap, n, size, bold, max_w); /* a word too long is cut */
        memcpy(out + used, p + gap, k);
        used += k;
        out[used] = '\0';
        p += gap + k;
        if (k < n) out[used] = '\n', line_start = ++used, lines++, out[used] = '\0';
    }
    return lines;
}

double viz_legend_pitch(double size) { return size * g_theme->text_scale * 1.7; }

double viz_legend_item_width(double size, const char *label) {
    double sw = size * g_theme->text_scale;
    return sw * 1.4 + viz_measure(size, false, label) + sw * 1.6;
}

double viz_legend(cairo_t *cr, double x, double y, double size, int n, const viz_rgb *colors,
                  const char *const *labels) {
    double x0 = x, sw = size * g_theme->text_scale; /* the swatch grows with the type */
    for (int i = 0; i < n; i++) {
        viz_box(cr, x, y - sw, sw, sw, colors[i]);
        x += sw * 1.4;
        viz_text(cr, x, y - size * 0.12, size, false, VIZ_LEFT, VIZ_TEXT, labels[i]);
        x += viz_text_width(cr, size, false, labels[i]) + sw * 1.6;
    }
    return x - x0;
}

/* The length of the UTF-8 sequence starting at s (1..4), or 0 if it is not one. */
static int utf8_len(const unsigned char *s) {
    const int n = s[0] < 0x80             ? 1
                  : (s[0] & 0xE0) == 0xC0 ? 2
                  : (s[0] & 0xF0) == 0xE0 ? 3
                  : (s[0] & 0xF8) == 0xF0 ? 4
                                          : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return n;
}

bool viz_title_check(const char *title, char *why, size_t cap) {
    const size_t len = strlen(title);
    if (len == 0 || len > VIZ_TITLE_MAX) {
        snprintf(why, cap, "--title '%.40s%s' is %zu bytes: a title is 1 to %d bytes long", title,
                 len > 40 ? "..." : "", len, VIZ_TITLE_MAX);
        return false;
    }
    for (const unsigned char *c = (const unsigned char *)title; *c;) {
        if (*c < 0x20 || *c == 0x7f) {
            snprintf(why, cap,
                     "--title has a control character (byte 0x%02x at %d): a title is one line "
                     "of printable text",
                     *c, (int)(c - (const unsigned char *)title));
            return false;
        }
        const int n = utf8_len(c);
        if (n == 0) {
            snprintf(why, cap, "--title is not valid UTF-8 (at byte %d)",
                     (int)(c - (const unsigned char *)title));
            return false;
        }
        c += n;
    }
    return true;
}

/* Walks the legend's items as they wrap: calls draw (when cr) for each; returns the rows. */
static int legend_walk(cairo_t *cr, double x, double y, double size, int n, const viz_rgb *colors,
                       const char *const *labels, const bool *hatched, double max_w) {
    int rows = 1;
    double used = 0, sw = size * g_theme->text_scale;
    for (int i = 0; i < n; i++) {
        double w = viz_legend_item_width(size, labels[i]);
        if (used > 0 && used + w - sw * 1.6 > max_w) rows++, used = 0;
        const double yr = y + (rows - 1) * viz_legend_pitch(size);
        if (cr) viz_legend(cr, x + used, yr, size, 1, &colors[i], &labels[i]);
        if (cr && hatched && hatched[i])
            viz_hatch(cr, x + used, yr - sw, sw, sw, viz_shade(colors[i], -0.5), 4);
        used += w;
    }
    return rows;
}

int viz_legend_wrap(cairo_t *cr, double x, double y, double size, int n, const viz_rgb *colors,
                    const char *const *labels, const bool *hatched, double max_w) {
    return legend_walk(cr, x, y, size, n, colors, labels, hatched, max_w);
}

int viz_legend_rows(double size, int n, const char *const *labels, double max_w) {
    return legend_walk(NULL, 0, 0, size, n, NULL, labels, NULL, max_w);
}
