/* metrics_plot.h — loss curves: the metrics of one or more training runs against the step,
 * as small multiples sharing the step axis, the runs overlaid (`trident render --metrics`,
 * and RUN_DIR/loss.png at the end of `trident train`).
 *
 *   ┌ title; one legend line per run: colour, layout label, run directory ─────────────┐
 *   │ loss           ── training   ┄•┄ held-out   - - reference levels (floor, baseline) │
 *   │ learning rate                                                                     │
 *   │ gradient norm                                                                     │
 *   │ tokens/s                                                                          │
 *   └ step ─────────────────────────────────────────────────────────────────────────────┘
 *
 * The loss panel can carry reference levels the caller knows and the runs do not: for the
 * synthetic copy task, the loss floor a perfect model reaches and the no-copy baseline
 * (src/data/dataset.h computes both; `trident train` passes them for RUN_DIR/loss.png). Each is
 * a dashed horizontal line labelled with its name and value. The steps are mapped inside the
 * panel, VIZ_MP_INSET from its frame, so the last held-out point (usually at the last step) is
 * a whole dot, ringed and labelled with its value, not half hidden by the frame.
 *
 * Runs of one model at different layouts compute the same numbers, so their curves must lie
 * on top of each other: run k is drawn thinner than run k-1 (a wide band under a thin line),
 * so that coinciding curves stay visible as one band with lines inside it.
 *
 * Layout first (viz_metrics_layout_of: panels, axis ranges, ticks; testable without
 * drawing), then Cairo (viz_metrics_plot, by file extension .png/.svg/.pdf, written
 * atomically through viz/canvas.h).
 *
 * Not here: reading metrics.jsonl (src/trace/run_metrics.h).
 */
#ifndef TRIDENT_VIZ_METRICS_PLOT_H
#define TRIDENT_VIZ_METRICS_PLOT_H

#include <stdbool.h>
#include <stddef.h>

#include "src/trace/run_metrics.h"

/* The panels, top to bottom. The loss panel also holds the held-out loss. */
typedef enum {
    VIZ_MP_LOSS,
    VIZ_MP_LR,
    VIZ_MP_GRAD_NORM,
    VIZ_MP_TOKENS,
    VIZ_MP_PANELS
} viz_mp_quantity;

typedef struct {
    double x, y, w, h; /* the plotting area */
    double lo, hi;     /* value at the bottom and at the top edge */
    double tick_step;  /* y ticks at lo + k·tick_step, k = 0 .. ticks (viz/axis.h) */
    int ticks;         /* intervals between lo and hi, at most VIZ_AXIS_MAX_INTERVALS */
    bool empty;        /* no run has a value: drawn as "no data" */
    const char *title; /* "loss (nats)", "learning rate", ... */
} viz_mp_panel;

/* A horizontal reference level of the loss panel, e.g. {1.245, "loss floor (a perfect model)"}:
 * drawn dashed, labelled "LABEL: VALUE" (NAN: skipped). */
typedef struct {
    double value;
    const char *label;
} viz_mp_level;

enum { VIZ_MP_MAX_LEVELS = 4, VIZ_MP_INSET = 10 };

typedef struct {
    int n;
    viz_mp_level level[VIZ_MP_MAX_LEVELS];
} viz_mp_levels;

typedef struct {
    double width, height;
    double step_lo, step_hi; /* the shared x range: smallest and largest step of all runs */
    double step_tick;        /* x ticks at multiples of step_tick inside the range */
    double legend_y;         /* baseline of the first legend line */
    viz_mp_panel panel[VIZ_MP_PANELS];
    int nlevels;                           /* the finite levels, in the loss panel */
    viz_mp_level level[VIZ_MP_MAX_LEVELS]; /* their values and labels */
    double level_y[VIZ_MP_MAX_LEVELS];     /* the y of each line */
} viz_metrics_layout;

/* Where everything goes for n runs on a page `width` points wide, with the loss panel's
 * reference levels (NULL: none; the loss axis spans them too). False, with err naming the
 * run, the key, the step and the value, when a value lies beyond what an axis spans
 * (VIZ_AXIS_LIMIT, viz/axis.h: losses near ±1e308 would make the axis's width overflow). */
bool viz_metrics_layout_of(const run_metrics *const *runs, int n, double width,
                           const viz_mp_levels *levels, viz_metrics_layout *out, char *err,
                           size_t errlen);

/* The x of a step (step_lo .. step_hi at VIZ_MP_INSET inside the frame) and the y of a
 * value in panel p. */
double viz_mp_x(const viz_metrics_layout *l, double step);
double viz_mp_y(const viz_mp_panel *p, double value);

/* The value panel q plots for one logged step (NAN: none). */
double viz_mp_value(const run_metrics_step *s, viz_mp_quantity q);

/* The legend text of a run: "tp2×pp2×dp2, interleaved v2, ZeRO — runs/demo" (the directory
 * alone when the layout is unknown). */
void viz_mp_label(const run_metrics *m, char *buf, size_t cap);

/* Draws the runs' curves to path (.png, .svg or .pdf); dies naming the path on a bad
 * extension. title NULL: "training curves". False, err set and nothing written, where
 * viz_metrics_layout_of refuses the values. */
bool viz_metrics_plot(const char *path, const run_metrics *const *runs, int n, double width,
                      const char *title, char *err, size_t errlen);
/* The same with the loss panel's reference levels (NULL: none). */
bool viz_metrics_plot_levels(const char *path, const run_metrics *const *runs, int n, double width,
                             const char *title, const viz_mp_levels *levels, char *err,
                             size_t errlen);

#endif /* TRIDENT_VIZ_METRICS_PLOT_H */
