/* run_pictures.h — a run directory turned into pictures: what `trident train` draws when a
 * run ends and what `trident render` reads, through the same loaders.
 *
 *   RUN_DIR/groups.png            the process groups of the layout
 *   RUN_DIR/zero.png              with ZeRO: rank 0's buffer cut into dp shards
 *   RUN_DIR/loss.png              loss, learning rate, gradient norm, tokens/s against the step
 *                                 (with req.loss_levels: the data's floor and baseline lines)
 *   RUN_DIR/moe_load.png          MoE runs (metrics with moe_tokens): each expert's share of
 *                                 its layer's tokens per step, dropped tokens (moe_load_draw.h)
 *   RUN_DIR/timeline.png          the last training step (no evaluation), every rank, wall clock
 *   RUN_DIR/timeline-replay.png   the same step re-timed as if each rank had its own core
 *   RUN_DIR/trace.json            the whole run as a Chrome trace (Perfetto)
 *
 *   viz_run_pictures req = {.run_dir = "runs/x", .layout = &layout, .traced = true,
 *                           .pipeline = pp > 1, .who = "trident train", .out = stdout};
 *   viz_run_bubbles b;
 *   if (!viz_render_run_dir(&req, &b, err, sizeof err)) die("...: %s", err);
 *
 * The lines printed on req.out ("pictures:", one per file, the measured bubble of the last
 * step when the run is pipelined) are pinned by the tutorials and the demo test.
 *
 * Not here: reading trace files (src/trace/trace.h), the replay (src/trace/replay.h), the
 * drawings themselves (timeline_draw.h, groups_draw.h, zero_draw.h, metrics_plot.h,
 * moe_load_draw.h, chrome_trace.h), reading metrics.jsonl (src/trace/run_metrics.h).
 */
#ifndef TRIDENT_VIZ_RUN_PICTURES_H
#define TRIDENT_VIZ_RUN_PICTURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "src/precision/convert.h"
#include "src/runtime/groups.h"
#include "src/trace/trace.h"
#include "src/zero/shard_ranges.h"
#include "viz/metrics_plot.h"
#include "viz/timeline.h"

/* ---- loading: one run directory, as measured and as replayed --------------------------- */

typedef struct {
    trace_run *wall;   /* RUN_DIR/trace/ as measured */
    trace_run *replay; /* re-timed as if each rank had its own core (NULL: not asked, or failed) */
    char replay_err[512]; /* why replay is NULL when it was asked for */
} viz_run_views;

/* Reads RUN_DIR's trace files, and re-times them when want_replay. Returns false (err says
 * why) only when the traces cannot be read; a replay that fails leaves replay NULL. */
bool viz_run_load(const char *run_dir, bool want_replay, viz_run_views *out, char *err,
                  size_t errlen);
void viz_run_views_free(viz_run_views *v);

/* The runs as one Chrome trace JSON file (written atomically). */
void viz_chrome_trace_save(const char *path, const trace_run *const *runs, const char *const *names,
                           int n);

/* ---- the pictures of a finished run ----------------------------------------------------- */

typedef struct {
    const char *run_dir;
    const pg_layout *layout; /* groups.png (NULL: not drawn) */
    const zero_ranges
        *zero;        /* zero.png, the ZeRO-1 cut of the optimizer buffer (NULL: not drawn) */
    prec_dtype dtype; /* of the parameters, for zero.png's memory plan */
    bool traced;      /* the run wrote RUN_DIR/trace/: timelines and trace.json */
    bool pipeline;    /* pp > 1: stage bands and the bubble lines */
    const char *who;  /* prefix of the warning when there is no replay ("trident train") */
    const viz_mp_levels *loss_levels; /* loss.png's reference lines (the data's loss floor and
                                         no-copy baseline; NULL: none) */
    FILE *out;                        /* where the lines naming the files go */
} viz_run_pictures;

typedef struct {
    bool have[2];            /* [0] wall clock, [1] replay: a timeline was drawn and pipelined */
    viz_tl_bubble bubble[2]; /* the last step's bubble in each view */
} viz_run_bubbles;

/* Draws every picture the request names into req->run_dir and prints one line per file.
 * Returns false (err: why) when the traces cannot be read back. */
bool viz_render_run_dir(const viz_run_pictures *req, viz_run_bubbles *bubbles, char *err,
                        size_t errlen);

/* The ZeRO buffer picture alone (`--draw-zero PATH`): shards, padding, buckets, and the
 * memory plan of `stage` (0: no ZeRO). */
void viz_draw_zero_buffer(const char *path, const zero_ranges *r, prec_dtype dtype, int stage);

#endif /* TRIDENT_VIZ_RUN_PICTURES_H */
