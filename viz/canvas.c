/* canvas.c — see canvas.h. */
#include "viz/canvas.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/core/flags.h"

const viz_rgb VIZ_FORWARD = {0.27, 0.51, 0.80};
const viz_rgb VIZ_BACKWARD = {0.40, 0.72, 0.38};
const viz_rgb VIZ_WEIGHT = {0.22, 0.50, 0.47}; /* a darker teal beside backward's green */
const viz_rgb VIZ_OPTIMIZER = {0.60, 0.45, 0.75};
const viz_rgb VIZ_P2P = {0.95, 0.60, 0.20};
const viz_rgb VIZ_COLLECTIVE = {0.85, 0.33, 0.31};
const viz_rgb VIZ_IDLE = {0.93, 0.93, 0.93};
const viz_rgb VIZ_TEXT = {0.10, 0.10, 0.12};
const viz_rgb VIZ_GRID = {0.75, 0.75, 0.78};
const viz_rgb VIZ_MEMORY = {0.55, 0.20, 0.45};

viz_rgb viz_categorical(int i) {
    static const viz_rgb k[8] = {
        {0.27, 0.51, 0.80}, {0.95, 0.55, 0.15}, {0.35, 0.70, 0.35}, {0.85, 0.30, 0.30},
        {0.58, 0.44, 0.75}, {0.55, 0.36, 0.30}, {0.90, 0.47, 0.76}, {0.50, 0.50, 0.50},
    };
    if (i < 0) i = -i;
    return k[i % 8];
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

void viz_canvas_open(viz_canvas *c, const char *path, double width, double height) {
    memset(c, 0, sizeof *c);
    c->format = viz_format_of(path);
    if (!c->format)
        die("cannot draw '%s': the picture format follows the extension, which must be .png, .svg "
            "or .pdf",
            path);
    if (strlen(path) >= sizeof c->path) die("output path too long: '%s'", path);
    /* Name a missing directory plainly (Cairo would only say "error while writing"). */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (access(dir, W_OK) != 0)
            die("cannot write '%s': directory '%s' does not exist or is not writable", path, dir);
    }
    strcpy(c->path, path);
    snprintf(c->tmp, sizeof c->tmp, "%s.tmp.%d", path, (int)getpid());
    c->width = width;
    c->height = height;
    if (c->format == VIZ_PNG)
        c->surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)(width + 0.5),
                                                (int)(height + 0.5));
    else if (c->format == VIZ_SVG) c->surface = cairo_svg_surface_create(c->tmp, width, height);
    else c->surface = cairo_pdf_surface_create(c->tmp, width, height);
    if (cairo_surface_status(c->surface) != CAIRO_STATUS_SUCCESS)
        die("cannot create a picture at '%s': %s", path,
            cairo_status_to_string(cairo_surface_status(c->surface)));
    c->cr = cairo_create(c->surface);
    cairo_set_source_rgb(c->cr, 1, 1, 1);
    cairo_paint(c->cr);
    cairo_set_line_width(c->cr, 1.0);
}

void viz_canvas_close(viz_canvas *c) {
    cairo_status_t st = cairo_status(c->cr);
    cairo_destroy(c->cr);
    if (st == CAIRO_STATUS_SUCCESS && c->format == VIZ_PNG)
        st = cairo_surface_write_to_png(c->surface, c->tmp);
    cairo_surface_finish(c->surface);
    if (st == CAIRO_STATUS_SUCCESS) st = cairo_surface_status(c->surface);
    cairo_surface_destroy(c->surface);
    if (st != CAIRO_STATUS_SUCCESS) {
        remove(c->tmp);
        die("drawing '%s' failed: %s", c->path, cairo_status_to_string(st));
    }
    if (rename(c->tmp, c->path) != 0) {
        int e = errno;
        remove(c->tmp);
        die("cannot write '%s': %s", c->path, strerror(e));
    }
}

void viz_set_rgb(cairo_t *cr, viz_rgb c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }

void viz_box(cairo_t *cr, double x, double y, double w, double h, viz_rgb fill) {
    cairo_rectangle(cr, x, y, w, h);
    viz_set_rgb(cr, fill);
    cairo_fill_preserve(cr);
    viz_set_rgb(cr, viz_shade(fill, -0.35));
    cairo_set_line_width(cr, w > 3 && h > 3 ? 0.8 : 0.3);
    cairo_stroke(cr);
}

void viz_hatch(cairo_t *cr, double x, double y, double w, double h, viz_rgb ink, double gap) {
    cairo_save(cr);
    cairo_rectangle(cr, x, y, w, h);
    cairo_clip(cr);
    viz_set_rgb(cr, ink);
    cairo_set_line_width(cr, 0.9);
    for (double d = -h; d < w; d += gap) {
        cairo_move_to(cr, x + d, y + h);
        cairo_line_to(cr, x + d + h, y);
    }
    cairo_stroke(cr);
    cairo_restore(cr);
}

static void select_font(cairo_t *cr, double size, bool bold) {
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

double viz_text_width(cairo_t *cr, double size, bool bold, const char *text) {
    cairo_text_extents_t e;
    select_font(cr, size, bold);
    cairo_text_extents(cr, text, &e);
    return e.x_advance;
}

void viz_text(cairo_t *cr, double x, double y, double size, bool bold, viz_align align,
              viz_rgb color, const char *text) {
    double w = viz_text_width(cr, size, bold, text);
    if (align == VIZ_CENTER) x -= w / 2;
    else if (align == VIZ_RIGHT) x -= w;
    viz_set_rgb(cr, color);
    cairo_move_to(cr, x, y);
    cairo_show_text(cr, text);
}

double viz_legend(cairo_t *cr, double x, double y, double size, int n, const viz_rgb *colors,
                  const char *const *labels) {
    double x0 = x;
    for (int i = 0; i < n; i++) {
        viz_box(cr, x, y - size, size, size, colors[i]);
        x += size * 1.4;
        viz_text(cr, x, y - size * 0.12, size, false, VIZ_LEFT, VIZ_TEXT, labels[i]);
        x += viz_text_width(cr, size, false, labels[i]) + size * 1.6;
    }
    return x - x0;
}
