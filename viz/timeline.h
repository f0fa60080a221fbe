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
 * TIME CLASSES. Every instant of a row, inside [0, duration], is exactly one of
 *
 *   compute   a forward, backward, optimizer, data or eval box covers it, and no message does;
 *   transfer  a send, receive or collective is moving bytes (its ready -> end);
 *   wait      a send, receive or collective is blocked on a peer (its start -> ready):
 *             the peer has not posted, or the slowest member of the group has not arrived;
 *   idle      nothing is scheduled (no box of this step covers it).
 *
 * Messages happen INSIDE compute spans (TP all-reduces inside a forward, the DP
 * reduce-scatter inside the optimizer), so the innermost event decides: where boxes overlap
 * the class is the first of transfer > wait > compute > idle that covers the instant. Hence
 * compute = compute spans minus the message time inside them, and the four seconds of a row
 * add up to the duration:
 *
 *   ms      0    1    2    3    4    5    6    7    8    9    10
 *   boxes   [======== forward =======][======== recv =======]
 *                [all-reduce]         (waits 5..8, moves 8..9)
 *                (waits 1..2, moves 2..3)
 *   class   |  C |  W |  T |  C |  C |  W |  W |  W |  T |  I |
 *   -> compute 3, transfer 2, wait 4, idle 1 (tests/viz/timeline_test.c pins these numbers)
 *
 * THE BUBBLE (viz_timeline_bubble). The pipeline's span is first forward start to last
 * backward end over all ranks. The measured bubble is the time each rank spends waiting or
 * idle inside that span, averaged over ranks:
 *     measured_total = mean(wait + idle in span) / span          (theory (p-1)/(v m + p-1))
 *     measured_ideal = mean(wait + idle) / mean(compute + transfer in span)   ((p-1)/(v m))
 * The theory numbers are the schedule's (src/pp/schedule.h: pp_bubble_of_total/of_ideal).
 *
 * PHASES come from the schedule's own counts (src/pp/schedule.h): a rank runs W warmup
 * forwards (gpipe: all m·v; 1f1b: min(p-r-1, m); interleaved: Megatron's formula), then
 * m·v - W steady forward/backward pairs, then W cooldown backwards. The phase boundaries in
 * time are where the W-th forward ends and the (m·v - W + 1)-th backward starts, counting
 * the row's boxes in time order. A timeline whose schedule is not one of the three has no
 * phases.
 *
 * Not here: files (timeline_load.h), positions on a page (timeline_layout.h), Cairo.
 * Depends on src/pp/schedule.h (pure data) for the phase counts and the theory numbers.
 */
#ifndef TRIDENT_VIZ_TIMELINE_H
#define TRIDENT_VIZ_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "src/pp/schedule.h"

typedef enum {
    VIZ_TL_FORWARD,
    VIZ_TL_BACKWARD,
    VIZ_TL_OPTIMIZER,
    VIZ_TL_SEND,
    VIZ_TL_RECV,
    VIZ_TL_COLLECTIVE,
    VIZ_TL_DATA,
    VIZ_TL_EVAL,
    VIZ_TL_WEIGHT,     /* the W (weight gradient) of a split backward; BACKWARD is then B */
    VIZ_TL_ALL_TO_ALL, /* a collective all-to-all: MoE token dispatch on the "ep" group */
    VIZ_TL_RING,       /* a p2p message on the "cp" group: one step of ring attention */
    VIZ_TL_NUM_KINDS
} viz_tl_kind;

/* "forward", "backward", "optimizer", "send", "recv", "collective", "data", "eval", "weight",
 * "all-to-all", "ring". */
const char *viz_tl_kind_name(viz_tl_kind k);
/* Compute kinds occupy a rank's main lane; send/recv/collective/all-to-all/ring its
 * communication lane. */
bool viz_tl_is_comm(viz_tl_kind k);

/* The kind a message of the trace is drawn as. `base` is what the trace kind says (SEND, RECV
 * or COLLECTIVE); two kinds of message are told apart by their op and group names:
 *
 *   COLLECTIVE whose op is an all-to-all ("all_to_all", "all_to_all_v", "all-to-all")
 *                                     -> ALL_TO_ALL   (MoE dispatch: counts, tokens out, back)
 *   SEND or RECV on the group "cp"    -> RING         (ring attention: one sendrecv per step)
 *
 * Everything else keeps `base`. op and group may be NULL or "". */
viz_tl_kind viz_tl_message_kind(viz_tl_kind base, const char *op, const char *group);

typedef struct {
    viz_tl_kind kind;
    int microbatch;           /* -1 when not applicable */
    int chunk;                /* model chunk 0 .. vpp-1, -1 when not applicable */
    double start, ready, end; /* seconds; send/recv/collective: start -> ready is waiting for
                                * a peer, ready -> end the transfer; ready = start for compute */
    int peer;                 /* p2p: the other global rank, else -1 */
    int flow;                 /* p2p: id shared by a send and its matching receive, else -1 */
    char op[24];              /* collective / p2p op name ("all-reduce"), may be empty */
    double bytes;             /* messages: the bytes the trace gives (what this rank sent),
                               * else 0; all-to-all and ring boxes print it */
    bool stream;              /* a collective of the communication stream (overlapped with the
                               * rank's compute, trace flag STREAM): drawn on the stream lane
                               * under the comm lane, and in none of the rank's time classes */
    int event;                /* viz_timeline_from_run: the index of the box's event in its
                               * rank's trace file (trace_file_event), for readers that need
                               * more of it (src/analyze/); unused by other producers */
} viz_tl_box;

typedef struct {
    double t, bytes; /* seconds, bytes in use */
} viz_tl_sample;

typedef struct {
    int rank, tp_rank, pp_rank, dp_rank;
    char host[32];     /* the host that recorded the row ("" unknown: one host) */
    double clock_unc;  /* its clock offset's uncertainty, seconds (0 on rank 0's host) */
    viz_tl_box *boxes; /* sorted by start after viz_timeline_finish() */
    int nboxes, cap_boxes;
    viz_tl_sample *mem; /* sorted by t */
    int nmem, cap_mem;
} viz_tl_row;

typedef struct {
    char name[256];    /* the panel's name: a run directory, "predicted", … */
    char schedule[16]; /* "gpipe" | "1f1b" | "interleaved" | … */
    int world_size, tp, pp, dp, vpp, num_microbatches;
    int step;         /* the step shown, -1 for a whole trace or a prediction */
    int cp;           /* context-parallel size (1 without): dp counts dp · cp ranks, cp varying
                         fastest (src/trace/trace.h, trace_header_dp_cp_size) */
    int zero_stage;   /* ZeRO stage of the run (src/zero/memory_plan.h), -1 unknown: titles
                         name it, since the memory strip draws the activations only */
    double duration;  /* seconds; every box lies in [0, duration] */
    uint64_t dropped; /* events the recorder could not keep (a warning is shown) */
    viz_tl_row *rows; /* world_size rows, rows[k] is rank k */
    int nrows;
} viz_timeline;

/* A window of a timeline's time for the views to show: [t0, t1) seconds from the start, as the
 * pictures' axis counts them (`trident render --window A:B`). The views (timeline_layout.h,
 * text_timeline.h) map and clip to it; the model itself is never cut. */
typedef struct {
    double t0, t1;
} viz_tl_window;

/* What a picture can lay over a measured timeline (`trident render --ideal --critical-path`;
 * the producers are in src/analyze, the drawer only paints this data):
 *
 *   ideal   a second timeline whose rows[k] is drawn, thinner and pale, under rank k's row:
 *           the schedule's plan with the run's own costs, on the same time axis;
 *   path    the critical path as segments (rank, start, end) in time order: each one
 *           outlined on its rank's compute lane, and an arrow where the path changes rank. */
typedef struct {
    int rank;          /* the row the segment lies on */
    double start, end; /* seconds, on the timeline's clock */
    bool idle;         /* untraced time or the lead-in: underlined, not outlined */
} viz_tl_path_seg;

typedef struct {
    const viz_timeline *ideal;   /* NULL: no ideal rows; else as many rows as the panel */
    const viz_tl_path_seg *path; /* (npath) NULL: no critical path */
    int npath;
    char caption[512]; /* one line under the panel's note saying what they are */
} viz_tl_overlay;

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

typedef enum {
    VIZ_TC_COMPUTE,
    VIZ_TC_TRANSFER,
    VIZ_TC_WAIT,
    VIZ_TC_IDLE,
    VIZ_TC_NUM
} viz_time_class;

/* "compute", "transfer", "wait", "idle". */
const char *viz_time_class_name(viz_time_class c);

/* A stretch of one row's time that has a single class. */
typedef struct {
    double a, b; /* seconds, a < b */
    viz_time_class cls;
} viz_tc_segment;

/* Row `rank`'s time in [a, b) cut into class segments: in time order, covering [a, b)
 * exactly, neighbours of the same class merged. Returns their number; *out is malloc'd
 * (free it). */
int viz_timeline_class_segments(const viz_timeline *tl, int rank, double a, double b,
                                viz_tc_segment **out);

typedef struct {
    double seconds[VIZ_TC_NUM]; /* per class; they add up to b - a */
    double share[VIZ_TC_NUM];   /* seconds / (b - a); all 0 when b <= a */
} viz_tc_shares;

/* The seconds and shares of each class of row `rank` inside [a, b). */
viz_tc_shares viz_timeline_class_shares(const viz_timeline *tl, int rank, double a, double b);

typedef struct {
    viz_tc_shares classes;             /* over the whole timeline [0, duration] */
    double busy;                       /* compute + transfer seconds (not waiting, not idle) */
    double idle_frac;                  /* idle share: nothing scheduled (waiting is NOT idle) */
    double first_fwd, first_bwd;       /* starts; -1 when the row has none */
    double last_fwd_end, last_bwd_end; /* ends; -1 when the row has none */
    bool has_phases;                   /* the schedule is known: the phase fields below are set */
    double warmup_end;                 /* warmup = [first_fwd, warmup_end]: end of the W-th forward
                                * in time order; -1 none */
    double cooldown_start;             /* cooldown = [cooldown_start, last_bwd_end]: start of the
                                * (backwards - W + 1)-th backward; -1 none */
    int forwards, backwards;           /* how many of each the row ran */
    int warmup_forwards;               /* W, the schedule's warmup count for this pipeline rank
                                * (clipped to the forwards present); -1 unknown schedule */
    int cooldown_backwards;            /* W again (the schedule ends with W backwards), clipped */
    double mem_peak;                   /* bytes, 0 without samples */
} viz_tl_row_stats;

viz_tl_row_stats viz_timeline_row_stats(const viz_timeline *tl, int rank);

typedef struct {
    double span_start, span_end;   /* the pipeline's forward/backward span, seconds */
    double measured_total;         /* mean (wait + idle) / span      (compare theory_total) */
    double measured_ideal;         /* mean (wait + idle) / mean (compute + transfer), in span
                                  *                                (compare theory_ideal) */
    double wait_total, idle_total; /* the two parts of measured_total: mean wait / span,
                                    * mean idle / span */
    double theory_total;           /* the schedule's textbook (src/pp/schedule.h), e.g. */
    double theory_ideal;           /* (p-1) / (v m + p - 1) and (p-1) / (v m) */
    pp_textbook_text theory_text;  /* their formulas as text, for the printers */
} viz_tl_bubble;

/* All zeros when the timeline has no forward/backward boxes. */
viz_tl_bubble viz_timeline_bubble(const viz_timeline *tl);

/* The bubble's shares as the picture and the text print them ("20.1%"), and the condition
 * the theory holds under (", v=2", ", F = B = W" or ""). */
typedef struct {
    char measured_total[16], measured_ideal[16], wait_total[16], idle_total[16];
    char theory_total[16], theory_ideal[16];
    char cond[32];
} viz_tl_bubble_text;
void viz_timeline_bubble_text(const viz_timeline *tl, const viz_tl_bubble *bb,
                              viz_tl_bubble_text *out);

/* A formula of src/pp/schedule.h (ASCII) as the pictures print it: '-' becomes the minus
 * sign "−" and '*' the dot "·", e.g. "(p-1)/(v*m+p-1)" -> "(p−1)/(v·m+p−1)". */
void viz_formula_pretty(char *dst, size_t cap, const char *ascii);

#endif /* TRIDENT_VIZ_TIMELINE_H */
