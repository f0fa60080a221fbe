/* build.c — a picture cut into K time slices, one page each. See build.h.
 *
 * A PDF is one canvas: page k is painted, cairo_show_page, page k+1 on the same surface, and
 * the canvas moves the file into place once at the end. A PNG or SVG sequence is K canvases,
 * each moved to a staged name ("frame-03.png.build<pid>.png") when drawn; only when all K are
 * drawn are the staged files renamed to their final names, so an error on page 3 leaves every
 * old frame as it was. If the command dies before that, the staged files are removed at exit.
 */
#include "viz/build.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/core/flags.h"
#include "src/core/nofollow.h"
#include "viz/canvas.h"

double viz_build_cut(double T, int K, int k) { return k >= K ? T : T * k / K; }

bool viz_build_check(int K, const char *path, char *why, size_t cap) {
    if (K < 1 || K > VIZ_BUILD_MAX) {
        snprintf(why, cap, "--build %d must be between 1 and %d (the number of pages)", K,
                 VIZ_BUILD_MAX);
        return false;
    }
    if (!path || !viz_format_of(path)) {
        snprintf(why, cap,
                 "--build writes pages: -o '%s' must end in .pdf (one file of %d pages) or .png "
                 "/ .svg (numbered frames)",
                 path ? path : "", K);
        return false;
    }
    return true;
}

bool viz_build_parse(const char *text, const char *path, int *K, char *why, size_t cap) {
    char *end = NULL;
    errno = 0;
    const long k = strtol(text, &end, 10);
    if (end == text || *end != 0 || errno != 0 || k < INT_MIN || k > INT_MAX) {
        snprintf(why, cap, "--build '%s' is not a number of pages (1 to %d)", text, VIZ_BUILD_MAX);
        return false;
    }
    *K = (int)k;
    return viz_build_check(*K, path, why, cap);
}

void viz_build_page_name(const char *path, int k, char *out, size_t cap) {
    if (viz_format_of(path) == VIZ_PDF) {
        snprintf(out, cap, "%s", path);
        return;
    }
    const char *dot = strrchr(path, '.'); /* there is one: viz_build_check saw the extension */
    snprintf(out, cap, "%.*s-%02d%s", (int)(dot - path), path, k, dot);
}

void viz_build_describe(const char *path, int K, char *out, size_t cap) {
    if (viz_format_of(path) == VIZ_PDF) {
        snprintf(out, cap, "wrote %s (%d page%s)", path, K, K == 1 ? "" : "s");
        return;
    }
    char first[4096], last[4096];
    viz_build_page_name(path, 1, first, sizeof first);
    viz_build_page_name(path, K, last, sizeof last);
    if (K == 1) snprintf(out, cap, "wrote %s (1 frame)", first);
    else snprintf(out, cap, "wrote %s .. %s (%d frames)", first, last, K);
}

/* The staged frames not yet moved into place: removed if the command ends before. */
static char g_staged[VIZ_BUILD_MAX][4200];
static int g_nstaged;

static void remove_staged(void) {
    for (int i = 0; i < g_nstaged; i++) remove(g_staged[i]);
    g_nstaged = 0;
}

void viz_build_now(cairo_t *cr, double x, double y0, double y1, int k, int K) {
    if (k >= K) return; /* the last page is the whole picture: no cut to mark */
    cairo_save(cr);
    cairo_set_source_rgba(cr, 0.80, 0.10, 0.10, 0.85);
    viz_line_width(cr, 1.2);
    cairo_move_to(cr, x, y0);
    cairo_line_to(cr, x, y1);
    cairo_stroke(cr);
    cairo_restore(cr);
    viz_text(cr, x + 3, y0 + 9, 8, true, VIZ_LEFT, (viz_rgb){0.80, 0.10, 0.10}, "now");
}

void viz_build_page_number(cairo_t *cr, int k, int K, double right, double top) {
    char buf[32];
    snprintf(buf, sizeof buf, "%d / %d", k, K);
    viz_text(cr, right, top, 13, true, VIZ_RIGHT, VIZ_TEXT, buf);
}

void viz_build_write(const char *path, int K, double T, double width, double height,
                     viz_build_paint_fn paint, void *ctx) {
    char why[512];
    if (!viz_build_check(K, path, why, sizeof why)) die("%s", why);
    viz_canvas cv;
    if (viz_format_of(path) == VIZ_PDF) {
        viz_canvas_open(&cv, path, width, height);
        for (int k = 1; k <= K; k++) {
            if (k > 1) cairo_show_page(cv.cr); /* the next page keeps the frame's transform */
            paint(cv.cr, k, K, viz_build_cut(T, K, k), ctx);
        }
        viz_canvas_close(&cv);
        return;
    }
    static bool registered;
    if (!registered) atexit(remove_staged), registered = true;
    char name[4096], moved[9000];
    for (int k = 1; k <= K; k++) {
        viz_build_page_name(path, k, name, sizeof name);
        char *staged = g_staged[g_nstaged];
        snprintf(staged, sizeof g_staged[0], "%s.build%d%s", name, (int)getpid(),
                 strrchr(path, '.'));
        g_nstaged++;
        viz_canvas_open(&cv, staged, width, height);
        paint(cv.cr, k, K, viz_build_cut(T, K, k), ctx);
        viz_canvas_close(&cv);
    }
    for (int k = 1; k <= K; k++) { /* every page drawn: now move them all */
        viz_build_page_name(path, k, name, sizeof name);
        if (!nofollow_rename(g_staged[k - 1], name, moved, sizeof moved)) die("%s", moved);
    }
    g_nstaged = 0;
}
