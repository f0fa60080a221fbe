/* timeline.h — the in-memory timeline every timeline picture is drawn from.
 *
 * A timeline is one row per rank; a row is a list of boxes (what ran, for which micro-batch
 * and model chunk, from when to when) plus memory samples. Times are seconds from the start
 * of what is shown (0 .. duration). Two producers fill it: the trace reader
 * (viz/timeline_load.h: a measured step of a real run) and, later, the pipeline schedule
 * simulator (a predicted timeline). Everything downstream — layout, PNG/SVG/PDF, text —
 * reads only this model.
 *
 *   viz_timeline *tl = viz_timeline_new("run-1f1b", "1f1b", tp, pp, dp, vpp, m);
 *   viz_timeline_add_box(tl, rank, (viz_tl_box){.kind = VIZ_TL_FORWARD, .microbatch = 0,
 *                                               .chunk = 0, .start = 0, .ready = 0, .end = 1e-3,
 *                                               .peer = -1, .flow = -1});
 *   viz_timeline_add_sample(tl, rank, t, bytes);
 *   viz_timeline_finish(tl);   // sorts boxes, sets duration if 0
 *
 * The statistics here are the numbers printed beside the pictures:
 *   - a row's idle fraction: time covered by no compute, no collective and no transfer
 *     (the waiting part of a p2p, start -> ready, counts as idle), over the duration;
 *   - the measured pipeline bubble: within the forward/backward span of the whole pipeline
 *     (first forward start to last backward end, over all ranks), the time each rank does
 *     no forward/backward work, averaged over ranks — as a fraction of the span ("of total",
 *     theory (p-1)/(m+p-1)) and of the busy time ("of ideal", theory (p-1)/m); for the
 *     interleaved schedule the theory divides the p-1 by v: (p-1)/(v m) and (p-1)/(v m+p-1);
 *   - a row's phases: warmup = forwards before its first backward, cooldown = backwards
 *     after its last forward, steady = in between.
 *
 * Not here: files (timeline_load.h), positions on a page (timeline_layout.h), Cairo.
 */
#ifndef TRIDENT_VIZ_TIMELINE_H
#define TRIDENT_VIZ_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    VIZ_TL_FORWARD,
    VIZ_TL_BACKWARD,
    VIZ_TL_OPTIMIZER,
    VIZ_TL_SEND,
    VIZ_TL_RECV,
    VIZ_TL_COLLECTIVE,
    VIZ_TL_DATA,
    VIZ_TL_EVAL,
    VIZ_TL_NUM_KINDS
} viz_tl_kind;

/* "forward", "backward", "optimizer", "send", "recv", "collective", "data", "eval". */
const char *viz_tl_kind_name(viz_tl_kind k);
/* Compute kinds occupy a rank's main lane; send/recv/collective its communication lane. */
bool viz_tl_is_comm(viz_tl_kind k);

typedef struct {
    viz_tl_kind kind;
    int microbatch;            /* -1 when not applicable */
    int chunk;                 /* model chunk 0 .. vpp-1, -1 when not applicable */
    double start, ready, end;  /* seconds; p2p: start -> ready is waiting, ready -> end transfer;
                                * ready = start for everything else */
    int peer;                  /* p2p: the other global rank, else -1 */
    int flow;                  /* p2p: id shared by a send and its matching receive, else -1 */
    char op[24];               /* collective / p2p op name ("all-reduce"), may be empty */
} viz_tl_box;

typedef struct {
    double t, bytes;           /* seconds, bytes in use */
} viz_tl_sample;

typedef struct {
    int rank, tp_rank, pp_rank, dp_rank;
    viz_tl_box *boxes;         /* sorted by start after viz_timeline_finish() */
    int nboxes, cap_boxes;
    viz_tl_sample *mem;        /* sorted by t */
    int nmem, cap_mem;
} viz_tl_row;

typedef struct {
    char name[256];            /* the panel's name: a run directory, "predicted", … */
    char schedule[16];         /* "gpipe" | "1f1b" | "interleaved" | … */
    int world_size, tp, pp, dp, vpp, num_microbatches;
    int step;                  /* the step shown, -1 for a whole trace or a prediction */
    double duration;           /* seconds; every box lies in [0, duration] */
    uint64_t dropped;          /* events the recorder could not keep (a warning is shown) */
    viz_tl_row *rows;          /* world_size rows, rows[k] is rank k */
    int nrows;
} viz_timeline;

/* A timeline with tp*pp*dp empty rows. Coordinates default to Megatron's order (tp fastest,
 * then dp, then pp: rank = tp_rank + tp * (dp_rank + dp * pp_rank)); change them with
 * viz_timeline_set_coords() when the producer knows better. vpp >= 1. */
viz_timeline *viz_timeline_new(const char *name, const char *schedule, int tp, int pp, int dp,
                               int vpp, int num_microbatches);
void viz_timeline_set_coords(viz_timeline *tl, int rank, int tp_rank, int pp_rank, int dp_rank);
void viz_timeline_add_box(viz_timeline *tl, int rank, viz_tl_box box);
void viz_timeline_add_sample(viz_timeline *tl, int rank, double t, double bytes);
/* Sorts boxes by start and samples by time; if duration is 0, sets it to the last end. */
void viz_timeline_finish(viz_timeline *tl);
void viz_timeline_free(viz_timeline *tl);

typedef struct {
    double busy;               /* seconds covered by compute, collectives or p2p transfers */
    double idle_frac;          /* 1 - busy / duration */
    double first_fwd, first_bwd;        /* starts; -1 when the row has none */
    double last_fwd_end, last_bwd_end;  /* ends; -1 when the row has none */
    double warmup_end;         /* warmup = [first_fwd, warmup_end]: end of the last forward
                                * that started before the first backward; -1 none */
    double cooldown_start;     /* cooldown = [cooldown_start, last_bwd_end]: start of the first
                                * backward that started after the last forward ended; -1 none */
    int forwards, backwards;   /* how many of each the row ran */
    int warmup_forwards;       /* forwards started before the first backward */
    int cooldown_backwards;    /* backwards started after the last forward ended */
    double mem_peak;           /* bytes, 0 without samples */
} viz_tl_row_stats;

viz_tl_row_stats viz_timeline_row_stats(const viz_timeline *tl, int rank);

typedef struct {
    double span_start, span_end; /* the pipeline's forward/backward span, seconds */
    double measured_total;       /* mean idle / span           (compare theory_total) */
    double measured_ideal;       /* mean idle / mean busy      (compare theory_ideal) */
    double theory_total;         /* (p-1) / (v m + p - 1) */
    double theory_ideal;         /* (p-1) / (v m) */
} viz_tl_bubble;

/* All zeros when the timeline has no forward/backward boxes. */
viz_tl_bubble viz_timeline_bubble(const viz_timeline *tl);

/* The row's busy intervals (what idle_frac counts as busy), merged and sorted by time.
 * Returns their number; *starts and *ends are malloc'd (free them). */
int viz_timeline_busy_intervals(const viz_timeline *tl, int rank, double **starts, double **ends);

/* Seconds of [a, b) covered by the union of the given intervals (sorted or not); intervals
 * are clipped to [a, b). Exposed for the layout and the tests. */
double viz_union_length(const double *starts, const double *ends, int n, double a, double b);

#endif /* TRIDENT_VIZ_TIMELINE_H */
