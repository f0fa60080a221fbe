/* canvas_audit.c — the label audit of viz/canvas.h: every label's extent and ground recorded,
 * the violations listed (outside the canvas, too little contrast, on hatching without a plate),
 * TRIDENT_LAYOUT_CHECK's report, and the SVG <text> elements written from the same record.
 *
 * Not here: drawing (canvas.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/core/nofollow.h"
#include "viz/canvas_internal.h"

static viz_canvas *g_open;           /* the canvas being drawn, NULL between pictures */
static viz_rgb g_ground = {1, 1, 1}; /* what the next labels sit on */
static bool g_ground_patterned;
static char g_last[1 << 20]; /* the last picture's violations */
static int g_nlast;
static int g_reported; /* violations printed under TRIDENT_LAYOUT_CHECK, all pictures */

/* ---- contrast ------------------------------------------------------------------------ */

static double channel(double c) { return c <= 0.03928 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4); }

static double luminance(viz_rgb c) {
    return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
}

double viz_contrast(viz_rgb a, viz_rgb b) {
    double la = luminance(a), lb = luminance(b);
    return la > lb ? (la + 0.05) / (lb + 0.05) : (lb + 0.05) / (la + 0.05);
}

viz_rgb viz_ink_on(viz_rgb fill) {
    const viz_rgb black = {0, 0, 0}, white = {1, 1, 1};
    return viz_contrast(black, fill) >= viz_contrast(white, fill) ? black : white;
}

void viz_text_ground(viz_rgb fill, bool patterned) {
    g_ground = fill;
    g_ground_patterned = patterned;
}

void viz_text_ground_page(void) { viz_text_ground((viz_rgb){1, 1, 1}, false); }

/* ---- the record ---------------------------------------------------------------------- */

void viz_audit_open(viz_canvas *c) {
    g_open = c;
    viz_text_ground_page();
}

bool viz_audit_record(cairo_t *cr, double x, double y, double size, bool bold, viz_align align,
                      viz_rgb ink, const char *text, bool plated) {
    viz_canvas *c = g_open;
    if (!c || c->cr != cr || !text[0]) return true; /* not a canvas of this module */
    if (c->nlabels == c->cap_labels) {
        c->cap_labels = c->cap_labels ? 2 * c->cap_labels : 64;
        c->labels = realloc(c->labels, (size_t)c->cap_labels * sizeof *c->labels);
        CHECK(c->labels, "out of memory recording labels");
    }
    struct viz_label *l = &c->labels[c->nlabels++];
    memset(l, 0, sizeof *l);
    l->text = strdup(text);
    CHECK(l->text, "out of memory recording labels");
    cairo_text_extents_t e;
    cairo_text_extents(cr, text, &e);
    double xs[4] = {x + e.x_bearing, x + e.x_bearing + e.width, x + e.x_bearing,
                    x + e.x_bearing + e.width};
    double ys[4] = {y + e.y_bearing, y + e.y_bearing, y + e.y_bearing + e.height,
                    y + e.y_bearing + e.height};
    l->x0 = l->y0 = INFINITY, l->x1 = l->y1 = -INFINITY;
    for (int i = 0; i < 4; i++) { /* the extent's corners on the page */
        cairo_user_to_device(cr, &xs[i], &ys[i]);
        l->x0 = fmin(l->x0, xs[i]), l->x1 = fmax(l->x1, xs[i]);
        l->y0 = fmin(l->y0, ys[i]), l->y1 = fmax(l->y1, ys[i]);
    }
    l->ink = ink, l->ground = g_ground;
    l->patterned = g_ground_patterned, l->plated = plated;
    l->ux = x, l->uy = y, l->size = size, l->bold = bold;
    l->advance = e.x_advance, l->align = align;
    cairo_get_matrix(cr, &l->ctm);
    return c->format != VIZ_SVG;
}

/* ---- the check ----------------------------------------------------------------------- */

static int add_line(char *out, size_t cap, size_t *used, const char *line) {
    size_t n = strlen(line);
    if (out && *used + n + 2 <= cap) {
        memcpy(out + *used, line, n);
        out[*used + n] = '\n';
        out[*used + n + 1] = '\0';
        *used += n + 1;
    }
    return 1;
}

/* A label's violations, appended to out. */
static int label_violations(const viz_canvas *c, const struct viz_label *l, char *out, size_t cap,
                            size_t *used) {
    char line[512];
    int n = 0;
    const double tol = 0.5;
    if (l->x0 < -tol || l->y0 < -tol || l->x1 > c->frame_w + tol || l->y1 > c->frame_h + tol) {
        snprintf(line, sizeof line,
                 "layout: label '%.80s' at %.0f..%.0f, %.0f..%.0f outside the "
                 "%.0f x %.0f canvas",
                 l->text, l->x0, l->x1, l->y0, l->y1, c->frame_w, c->frame_h);
        n += add_line(out, cap, used, line);
    }
    const double k = viz_contrast(l->ink, l->ground);
    if (k < VIZ_MIN_CONTRAST) {
        snprintf(line, sizeof line,
                 "layout: label '%.80s' has contrast %.2f:1 on its ground "
                 "(rgb %.2f %.2f %.2f), below %.1f:1",
                 l->text, k, l->ground.r, l->ground.g, l->ground.b, VIZ_MIN_CONTRAST);
        n += add_line(out, cap, used, line);
    }
    if (l->patterned && !l->plated) {
        snprintf(line, sizeof line,
                 "layout: label '%.80s' is drawn over hatching or a pattern "
                 "without a backing plate",
                 l->text);
        n += add_line(out, cap, used, line);
    }
    return n;
}

int viz_canvas_check(const viz_canvas *c, char *out, size_t cap) {
    size_t used = 0;
    if (out && cap) out[0] = '\0';
    int n = 0;
    for (int i = 0; i < c->nlabels; i++) n += label_violations(c, &c->labels[i], out, cap, &used);
    return n;
}

int viz_last_violations(char *out, size_t cap) {
    if (out && cap) snprintf(out, cap, "%s", g_last);
    return g_nlast;
}

/* TRIDENT_LAYOUT_CHECK: after the last picture, the exit status says there were violations. */
static void exit_with_violations(void) {
    if (g_reported == 0) return;
    fflush(NULL);
    _exit(VIZ_LAYOUT_EXIT);
}

void viz_audit_close(viz_canvas *c) {
    g_nlast = viz_canvas_check(c, g_last, sizeof g_last);
    g_open = NULL;
    viz_text_ground_page();
    const char *env = getenv("TRIDENT_LAYOUT_CHECK");
    if (!env || strcmp(env, "1") != 0 || g_nlast == 0) return;
    fprintf(stderr, "%s: %d layout violation%s\n%s", c->path, g_nlast, g_nlast == 1 ? "" : "s",
            g_last);
    if (g_reported == 0) atexit(exit_with_violations);
    g_reported += g_nlast;
}

/* ---- SVG text ------------------------------------------------------------------------ */

static void xml_escaped(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '&') fputs("&amp;", f);
        else if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

static void svg_text(FILE *f, const struct viz_label *l) {
    const cairo_matrix_t *m = &l->ctm;
    const viz_theme *t = viz_theme_current();
    const char *anchor = l->align == VIZ_CENTER  ? "middle"
                         : l->align == VIZ_RIGHT ? "end"
                                                 : "start";
    const double ax = l->ux + (l->align == VIZ_CENTER  ? l->advance / 2
                               : l->align == VIZ_RIGHT ? l->advance
                                                       : 0);
    fprintf(f,
            "<text transform=\"matrix(%g %g %g %g %g %g)\" x=\"%g\" y=\"%g\" "
            "font-family=\"DejaVu Sans\" font-size=\"%g\" font-weight=\"%s\" "
            "fill=\"rgb(%d,%d,%d)\" text-anchor=\"%s\" xml:space=\"preserve\">",
            m->xx, m->yx, m->xy, m->yy, m->x0, m->y0, ax, l->uy, l->size * t->text_scale,
            l->bold ? "bold" : "normal", (int)lround(l->ink.r * 255), (int)lround(l->ink.g * 255),
            (int)lround(l->ink.b * 255), anchor);
    xml_escaped(f, l->text);
    fputs("</text>\n", f);
}

/* The file Cairo wrote, with a <text> per label put in before its closing </svg>. */
static void insert_svg_text(viz_canvas *c) {
    FILE *in = fopen(c->tmp, "rb");
    if (!in) die("cannot read back '%s': %s", c->tmp, strerror(errno));
    fseek(in, 0, SEEK_END);
    long n = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *svg = mallocCheck((size_t)n + 1);
    size_t got = fread(svg, 1, (size_t)n, in);
    fclose(in);
    svg[got] = '\0';
    char *end = NULL;
    for (char *p = strstr(svg, "</svg>"); p; p = strstr(p + 1, "</svg>")) end = p;
    CHECK(end, "Cairo's SVG ends with </svg>");
    char why[9000];
    int fd = nofollow_open_file(c->tmp, true, why, sizeof why);
    if (fd < 0) die("%s", why);
    FILE *f = fdopen(fd, "wb");
    if (!f) die("cannot write '%s': %s", c->tmp, strerror(errno));
    fwrite(svg, 1, (size_t)(end - svg), f);
    for (int i = 0; i < c->nlabels; i++) svg_text(f, &c->labels[i]);
    fputs(end, f);
    if (fclose(f) != 0) die("cannot write '%s': %s", c->tmp, strerror(errno));
    free(svg);
}

void viz_audit_svg(viz_canvas *c) {
    if (c->format == VIZ_SVG) insert_svg_text(c);
    for (int i = 0; i < c->nlabels; i++) free(c->labels[i].text);
    free(c->labels);
    c->labels = NULL;
    c->nlabels = c->cap_labels = 0;
}
