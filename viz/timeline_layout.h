/* timeline_layout.h — where everything of a timeline picture goes, computed without drawing.
 *
 * One or more timelines (panels) are stacked top to bottom on ONE time scale, so a GPipe,
 * a 1F1B and an interleaved run can be compared by eye. Inside a panel the rows are grouped
 * by pipeline stage (then data-parallel rank, then tensor rank). Every row is, top to bottom:
 *
 *   phase strip   | warmup | steady | cooldown |             (PHASE_H)
 *   compute lane  [F0][F1]..[B0]      [B1]                   (LANE_H)  labels = micro-batch;
 *                          ///            blank = idle, wait/transfer inside a box painted over
 *   ideal lane    [F0][F1][B0]  [B1]                      (only with an overlay's ideal rows:
 *                                                            timeline_overlay.h, --ideal)
 *   comm lane     ////wait////[xfer]   [all-reduce]          (COMM_H)
 *   stream lane         [grads b7][grads b6] [b5]           (STREAM_H, only when some rank ran
 *                                                            collectives on its communication
 *                                                            stream: --overlap-grad-reduce)
 *   memory strip  ___/‾‾‾\___                    peak 12 MiB (MEM_H, only if sampled)
 *
 *   page x:  0 .. plot_x (stage and rank labels) | plot (time) | right gutter (class shares,
 *                                                                                 peak memory)
 *
 * Every row carries its time classes (viz/timeline.h: compute, transfer, wait, idle) as
 * segments on the page and as the two share lines printed at its right.
 *
 * x = plot_x + (t - t0) * px_per_s for every time t (seconds from the panel's start), where
 * [t0, t1) is the time shown: the whole longest step (t0 = 0), or a window of it
 * (viz_tl_layout_compute_window, `trident render --window A:B`) drawn at the full plot width:
 *
 *   step   0 |-----------[a2a]------------------------------------------| 1000 ms
 *   window               99 |--------[   a2a 12.0 KiB   ]--------| 102 ms
 *
 * In a window, boxes crossing its edges are clipped to it, boxes outside it are hidden, the
 * axis ticks count the window's times, the time classes and the shares at the right cover the
 * window only (the title says so), while the bubble line and the peak memory stay those of the
 * whole step. Labels are shown when their estimated width (a fixed advance per character, so
 * the numbers do not depend on Cairo) fits inside the (clipped) box. The drawing code
 * (timeline_draw.h) only paints what this computes; the tests check these numbers directly.
 *
 * Texts are measured with the canvas's viz_measure (the theme's type size), so titles and
 * info lines wrap at a word boundary and the legend wraps onto further rows inside the page.
 *
 * Not here: drawing, files.
 */
#ifndef TRIDENT_VIZ_TIMELINE_LAYOUT_H
#define TRIDENT_VIZ_TIMELINE_LAYOUT_H

#include <stdbool.h>

#include "viz/timeline.h"

/* Heights at the default theme's type size; the slides' larger type scales the compute lane
 * (viz_tl_layout.lane_h), and a frame taller than the picture (--height) grows it further, up
 * to VIZ_TL_LANE_MAX. The comm and stream lanes are never below 12 points. */
enum {
    VIZ_TL_PHASE_H = 9,
    VIZ_TL_LANE_H = 22,
    VIZ_TL_LANE_MAX = 128,
    VIZ_TL_COMM_H = 12,
    VIZ_TL_STREAM_H = 12,
    VIZ_TL_MEM_H = 18,
    VIZ_TL_ROW_GAP = 5,
    VIZ_TL_STAGE_GAP = 9,
};
#define VIZ_TL_LABEL_SIZE 10.0 /* micro-batch numbers, points */
#define VIZ_TL_CHAR_W 6.4      /* estimated advance of one character at that size */
#define VIZ_TL_BYTES_SIZE 6.5  /* byte counts in the comm lane, points */
#define VIZ_TL_BYTES_CHAR_W 4.2

/* Box labels. A compute box shows its micro-batch number, centred on the box in the compute
 * lane. An all-to-all or ring box shows the bytes this rank sent ("12.0 KiB",
 * viz_tl_format_bytes), small, centred on its transfer part (x_ready .. x + w) in the comm
 * lane (or the stream lane); the other messages show nothing, as before. */
typedef struct {
    bool hidden;    /* a window is shown and the box lies outside it: nothing is drawn */
    double x, w;    /* the whole box (in a window: its part inside the window) */
    double x_ready; /* p2p: where waiting ends and the transfer starts (= x otherwise) */
    bool label_shown;
    char label[16]; /* micro-batch number, or byte count ("" when there is none) */
    double label_x; /* the label's centre */
} viz_tl_box_layout;

typedef struct {
    int rank;                              /* which row of the timeline this is */
    int stage;                             /* its pipeline stage */
    double y;                              /* top of the row (the phase strip) */
    double phase_y, lane_y, comm_y, mem_y; /* tops of the four parts */
    double stream_y, stream_h;             /* the stream lane: top, and 0 high when the panel
                                            * has no stream collectives (then as before) */
    double lane_h, comm_h;                 /* heights of the compute and the comm lane */
    double mem_h;                          /* 0 when the panel has no memory samples */
    double ideal_y, ideal_h;               /* the ideal row under the compute lane (--ideal):
                                            * 0 high when the panel has none */
    viz_tl_box_layout *ideal_boxes;        /* parallel to the ideal timeline's row boxes */
    double bottom;                         /* y just below the row */
    viz_tl_box_layout *boxes;              /* parallel to the timeline row's boxes */
    int nseg; /* the row's time classes over the time shown, as x and width */
    double *seg_x, *seg_w;
    viz_time_class *seg_cls;
    viz_tc_shares shares; /* seconds and shares of each class over the time shown: the whole
                           * step, or the window's part of it (all 0: the step ended before) */
    bool has_phases;      /* phase boundaries below are meaningful (the schedule is known); a
                           * phase with x1 <= x0 is absent (GPipe has no steady phase) */
    double warmup_x0, warmup_x1, steady_x0, steady_x1, cooldown_x0, cooldown_x1;
    char share_text[2][48]; /* "compute 61.2% · transfer 4.0%", "wait 20.1% · idle 14.7%" */
    char mem_text[32];      /* "peak 1.2 GiB" or "" */
} viz_tl_row_layout;

typedef struct {
    double x1, y1, x2, y2; /* from the send (transfer start) to the receive (transfer end) */
} viz_tl_arrow;

/* A critical-path segment on the page: its rectangle on the rank's compute lane. */
typedef struct {
    double x, y, w, h;
    bool idle;                /* untraced time or the lead-in: drawn as a line under the lane */
    bool hidden;              /* outside the window */
    bool cut_left, cut_right; /* crossing the window's start or end: no side drawn there */
} viz_tl_path_rect;

typedef struct {
    const viz_timeline *tl;
    double top, title_y, info_y, note_y; /* baselines of the title and the two text lines */
    char title[512], info[512], note[512];
    char title_drawn[512], info_drawn[512], note_drawn[512]; /* the same, as drawn: wrapped
                                                               * at the page width ('\n') */
    int title_lines, info_lines, note_lines;
    double rows_top, rows_bottom, axis_y, bottom;
    double t_end;              /* the last time drawn: the panel's duration, or the
                                * window's end if sooner */
    int tick_first, tick_last; /* axis ticks at k * tick_s, k = tick_first .. tick_last */
    int nrows;
    viz_tl_row_layout *rows; /* in display order (by stage, then dp, then tp) */
    int nstages;
    double *stage_y0, *stage_y1; /* vertical extent of each stage group */
    double mem_max;              /* bytes at the top of every memory strip of this panel */
    int narrows;
    viz_tl_arrow *arrows;
    /* The overlay (viz_tl_overlay, NULL: none): the caption under the note, the critical
     * path's segments as rectangles on their compute lanes, its hops between ranks. */
    const viz_tl_overlay *overlay;
    char caption_drawn[600];
    int caption_lines;
    double caption_y;
    int npath;
    viz_tl_path_rect *path;
    int nhops;
    viz_tl_arrow *hops;
} viz_tl_panel_layout;

/* A legend item: a swatch (a kind's colour, the hatching of odd chunks, the memory strip's
 * colour, one of the time classes, or none for a bold heading) and its label, placed at x
 * (the swatch's left) on the baseline y. */
typedef enum {
    VIZ_TL_SW_KIND,
    VIZ_TL_SW_CHUNK,
    VIZ_TL_SW_MEMORY,
    VIZ_TL_SW_COMPUTE,
    VIZ_TL_SW_TRANSFER,
    VIZ_TL_SW_WAIT,
    VIZ_TL_SW_IDLE,
    VIZ_TL_SW_HEADING,
    VIZ_TL_SW_IDEAL, /* a pale, outlined box: the ideal rows (--ideal) */
    VIZ_TL_SW_PATH,  /* a bold outline: the critical path (--critical-path) */
} viz_tl_swatch;
typedef struct {
    viz_tl_swatch swatch;
    viz_tl_kind kind; /* VIZ_TL_SW_KIND */
    char label[160];  /* wrapped ('\n') when one item is wider than the page */
    double x, y;
} viz_tl_legend_item;
#define VIZ_TL_LEGEND_SIZE 10.0 /* legend type, points */

typedef struct {
    double width, height;
    const char *title; /* --title for the first panel, or NULL (viz_tl_layout_compute_frame) */
    double plot_x, plot_w, px_per_s, duration; /* duration: longest panel, seconds */
    bool windowed;                             /* a window was asked for */
    double t0, t1;         /* the time shown, seconds: [0, duration], or the window clipped to it */
    double tick_s;         /* spacing of axis ticks, seconds */
    double lane_h, comm_h; /* compute and comm lane heights of every row */
    double legend_y;
    int nlegend; /* the legend's items, placed (wrapped inside the page width) */
    viz_tl_legend_item legend[24];
    char legend_note[640]; /* the last legend line, wrapped ('\n') */
    double legend_note_y;
    bool kinds_present[VIZ_TL_NUM_KINDS];
    bool any_chunks;                /* some box has chunk >= 1: the legend explains hatching */
    bool any_wait;                  /* some message waited: the legend shows the wait pattern */
    const viz_tl_overlay *overlays; /* (npanels) or NULL: what lies over each panel */
    bool any_ideal, any_path;       /* some panel has ideal rows, a critical path */
    int npanels;
    viz_tl_panel_layout *panels;
} viz_tl_layout;

/* Lays out n timelines on a page `width` points wide (height follows from the rows). */
void viz_tl_layout_compute(viz_tl_layout *L, const viz_timeline *const *tls, int n, double width);
/* The same, showing only the window [w->t0, w->t1) of every panel (NULL: the whole step, as
 * above). The window's end is clipped to the longest panel; it must start at or after 0 and
 * before that panel's end (the caller checks and names the flag). */
void viz_tl_layout_compute_window(viz_tl_layout *L, const viz_timeline *const *tls, int n,
                                  double width, const viz_tl_window *w);
/* The same, to fill a frame `height` points tall (0: as tall as the content): the spare height
 * goes to the compute lanes, up to VIZ_TL_LANE_MAX each; a page that stays shorter is centred
 * in the frame by the canvas. title (NULL: generated) replaces the first panel's title
 * (`--title`), wrapped like it. */
void viz_tl_layout_compute_frame(viz_tl_layout *L, const viz_timeline *const *tls, int n,
                                 double width, const viz_tl_window *w, double height,
                                 const char *title);
/* The same with an overlay per panel (overlays: n of them, or NULL for none): ideal rows
 * under the rows, the critical path outlined, their caption under each panel's note. */
void viz_tl_layout_compute_overlaid(viz_tl_layout *L, const viz_timeline *const *tls,
                                    const viz_tl_overlay *overlays, int n, double width,
                                    const viz_tl_window *w, double height, const char *title);
void viz_tl_layout_free(viz_tl_layout *L);

/* The page x of time t (seconds from the panel start): plot_x + (t - t0) * px_per_s. */
double viz_tl_x(const viz_tl_layout *L, double t);

/* A 1-2-5 tick spacing (seconds) giving at most about max_ticks ticks over duration. */
double viz_tl_nice_tick(double duration, int max_ticks);

/* "12.3 MiB"-style byte count into buf. */
void viz_tl_format_bytes(double bytes, char *buf, int cap);

#endif /* TRIDENT_VIZ_TIMELINE_LAYOUT_H */
