/* trace.h — per-rank timelines: record what a rank did and when, write it to a file, read it back.
 *
 * Recording. The trainer creates one recorder per rank with a header (who am I, which layout,
 * which schedule) and a fixed capacity. While training it brackets work with begin/end, and
 * the communication layer reports each message after the fact:
 *
 *   trace_recorder *t = trace_create(&hdr, 1 << 16);
 *   int s = trace_begin(t, TRACE_STEP, step, -1, -1);
 *     int f = trace_begin(t, TRACE_FORWARD, step, mb, chunk);  ... trace_end(t, f);
 *     trace_comm(t, TRACE_SEND, "send", "pp", next_rank, nbytes, tag, t0, t_ready, t1);
 *     trace_memory(t, bytes_in_use);
 *   trace_end(t, s);
 *   trace_write(t, "run/trace/rank3.trace");   // atomic
 *
 * Every begin/end pair also reads the thread's CPU clock, so an event knows how much CPU it
 * really got (the replay view re-times runs of more ranks than cores from it).
 *
 * Device time. On a GPU a kernel runs after its launch returns, so the host clock at begin and
 * end times the launches, not the work. With a device clock set (trace_set_device_clock; the
 * trainer sets src/device/device.h's markers on --device cuda and cpu-guarded), every
 * begin/end span also drops a marker into the device's queue at its begin and at its end:
 *
 *   host     begin, launch k1 k2 k3, end  . . . . . . . . . . . step end: sync, resolve
 *   stream   ... earlier work ...][  k1  ][    k2    ][ k3 ]
 *                                ^                         ^
 *                      begin marker reached = t_start      end marker reached = t_end
 *
 * The begin marker is reached when the stream has finished everything queued before the span,
 * i.e. when the span's first kernel can start; the end marker when its last kernel finished.
 * Marker times are only known once the device has caught up, so they are resolved at a
 * natural sync point: when a TRACE_STEP span ends (the clock syncs the device, then every
 * pending span gets its device times in place of the host ones) and before trace_write (so
 * nothing stays pending; trace_resolve() does it on demand). The spans of one stream are thus
 * in stream order and never overlap one another. A span still open at a resolve gets its
 * device begin (and t_end = t_start while it is open); its end is resolved later. Until its
 * markers are resolved a span keeps its host times (trace_event_at shows them).
 * Communication events are reported with host times and keep them: comm stages device
 * buffers through host memory with synchronous copies, so the host clock is right there.
 * The cpu field of a device-timed span: on a device that runs its work on the recording
 * thread (the CPU devices' twin of the markers) the thread's CPU seconds, as ever; on a GPU
 * -1 (unknown), since the thread only launched the work: readers then take the span's
 * (device) duration, which is what it cost (the replay view, schedule --costs-from).
 * Without a device clock (NULL, the default and the cpu device) every time is the host's.
 *
 * Recording is cheap: the event buffer is allocated once by trace_create() (and the marker
 * slots once by trace_set_device_clock()); begin/end/comm only fill the next slot (no
 * allocation, no I/O, no device sync). When the buffer is full, further events are counted as
 * dropped (the count is stored in the file) and begin returns -1 (taking no marker), which
 * trace_end() accepts and ignores. Times are local time_now() seconds (src/core/clock.h);
 * the header's clock_offset turns them into rank-0 time.
 *
 * A p2p event keeps three times: t_start (posted) -> t_ready (the peer's data arrived, i.e.
 * the wait is over) -> t_end (transfer done). Pass t_ready = t_start when the split is unknown.
 * Strings (op names like "all-reduce", group names like "dp") are interned in a small table
 * (TRACE_MAX_STRINGS of at most TRACE_MAX_STRING-1 bytes); beyond it they become "(other)".
 *
 * Reading. trace_file_read() loads one rank's file and validates everything (magic, version,
 * sizes, checksum, kinds, string ids). On failure it returns NULL and puts ONE line in err
 * naming the file and the byte offset. trace_run_read() loads RUN_DIR/trace/rank<k>.trace for
 * every rank of the run, pairs every send with its receive and every collective with its
 * other members' part; trace_run_check_causality() then says whether the run's picture is
 * physically possible. The byte layout is documented in src/trace/FORMAT.md.
 *
 * Not here: MPI (the trainer passes rank, layout and clock offset in), the device itself (the
 * trainer passes its clock in), drawing (viz/).
 */
#ifndef TRIDENT_TRACE_TRACE_H
#define TRIDENT_TRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    TRACE_FORWARD,    /* forward pass of one micro-batch through one model chunk */
    TRACE_BACKWARD,   /* backward pass of one micro-batch through one model chunk (in a
                       * zero-bubble schedule: its input-gradient part, "B") */
    TRACE_SEND,       /* p2p send (pipeline activations / gradients) */
    TRACE_RECV,       /* p2p receive */
    TRACE_COLLECTIVE, /* all-reduce, all-gather, reduce-scatter, broadcast … */
    TRACE_OPTIMIZER,  /* the optimizer step */
    TRACE_STEP,       /* one whole training step: bounds the other events */
    TRACE_MEMORY,     /* a counter sample: bytes in use (bytes field) */
    TRACE_DATA,       /* loading a batch */
    TRACE_EVAL,       /* evaluation */
    TRACE_WEIGHT,     /* weight-gradient part of a split backward ("W", zero-bubble schedules) */
    TRACE_NUM_KINDS
} trace_kind;

/* "forward", "backward", "send", "recv", "collective", "optimizer", "step", "memory", "data",
 * "eval", "weight"; "?" for anything else. */
const char *trace_kind_name(int kind);

typedef struct {                           /* who recorded and under which configuration */
    int rank, world_size, tp, pp, dp, vpp; /* layout; vpp = model chunks per pipeline rank (>= 1) */
    int tp_rank, pp_rank, dp_rank;         /* this rank's coordinates */
    int num_microbatches;                  /* per step, per DP rank */
    /* context and expert parallelism (src/runtime/groups.h): world = tp · cp · pp · dp, and ep
     * divides dp (ep_rank = dp_rank % ep). 0 is taken for 1 by trace_create. */
    int cp, ep, cp_rank, ep_rank;
    char schedule[16];        /* "gpipe" | "1f1b" | "interleaved" */
    double clock_offset;      /* add to local times to get rank-0 time */
    double clock_uncertainty; /* seconds: |true offset - clock_offset| is at most
                                            * this (0 for ranks sharing rank 0's host clock) */
    char run_id[32];          /* the same on every rank of one run, unique across
                                            * runs: traces of different runs never mix */
    char host[32];            /* the recording rank's host name ("" in files before version
                               * 4): ranks of one host share one clock */
    const char *config_json;  /* the full run configuration, stored verbatim */
} trace_header;

/* The data-parallel × context-parallel group of a header's rank (groups.h's dp_cp): its size
 * dp · cp and the rank's place in it, cp_rank + cp · dp_rank. Pictures that lay ranks out as
 * (tp, pp, dp) grids give the context-parallel ranks of a replica rows of their own there. */
int trace_header_dp_cp_size(const trace_header *h);
int trace_header_dp_cp_rank(const trace_header *h);

/* trace_event.flags. OPEN: begun but never ended (e.g. a crash mid-step). STREAM: a collective
 * that ran on the rank's communication stream (src/runtime/comm_stream.h) while the rank went
 * on computing: drawn on a lane of its own and not part of the rank's time classes. What the
 * rank waited for it is a separate collective event on the main lane, op "wait", t_ready =
 * t_end (all of it is waiting): the exposed part. */
enum { TRACE_OPEN = 1, TRACE_STREAM = 2 };

typedef struct {
    trace_kind kind;
    uint32_t flags;       /* TRACE_OPEN */
    int step, microbatch; /* -1 when not applicable */
    int chunk;            /* model chunk (virtual pipeline stage on this rank), -1 n/a */
    int peer;             /* p2p: the other side's global rank; -1 otherwise */
    int tag;              /* p2p tag; -1 otherwise */
    int op, group;        /* string ids (trace_string / trace_file_string), -1 none */
    int label;            /* string id of what a message is for, e.g. "g fwd attn"; -1 none */
    int layer;            /* transformer layer (global index) a message belongs to; -1 n/a */
    int group_first;      /* collectives: lowest global rank of the group, which together
                               * with the group name identifies the group instance; -1 n/a */
    uint64_t bytes;       /* message size, or bytes in use for TRACE_MEMORY; for a whole
                           * TRACE_BACKWARD, the share of its CPU time its W parts took, in
                           * parts per million (TRACE_WEIGHT_PPM; 0: not measured) */
    double t_start, t_ready, t_end; /* local seconds; t_ready = t_start unless p2p wait known */
    double cpu;                     /* CPU seconds the recording thread spent inside the event
                               * (CLOCK_THREAD_CPUTIME_ID); -1 when unknown */
} trace_event;

enum { TRACE_MAX_STRINGS = 64, TRACE_MAX_STRING = 32 };

/* ---- recording ------------------------------------------------------------------------ */

typedef struct trace_recorder trace_recorder;

/* Copies the header (and config_json) and allocates room for capacity_events events. */
trace_recorder *trace_create(const trace_header *h, size_t capacity_events);
/* A clock of the device's queue (see "Device time" above): markers that the device reaches in
 * queue order. src/device/device.h's device_marker_* fill it; tests fill it with fakes. */
typedef struct {
    int (*take)(void);       /* a marker queued on the device now, no wait; its id (>= 0) */
    void (*sync)(void);      /* waits for the device: every marker taken so far is reached */
    double (*time)(int id);  /* local time_now() seconds at which the device reached marker
                              * id; valid for markers taken before the last sync */
    void (*release)(int id); /* marker id is resolved (or dropped): it may be reused */
    bool runs_on_host;       /* the device's work runs on the recording thread, inside the
                              * calls (cpu, cpu-guarded): spans keep their thread CPU seconds */
} trace_device_clock;

/* Times the begin/end spans with clk (copied; NULL: host times only, the default). Once per
 * recorder, before its first event, so that every span is timed by one clock. Allocates two
 * marker slots per event. */
void trace_set_device_clock(trace_recorder *t, const trace_device_clock *clk);
/* Syncs the device and gives every span with pending markers its device times (a no-op
 * without a device clock or pending markers). Called by trace_end of a TRACE_STEP span and
 * by trace_write. */
void trace_resolve(trace_recorder *t);

/* Starts an event now; returns its handle for trace_end(), or -1 if the buffer is full. */
int trace_begin(trace_recorder *t, trace_kind kind, int step, int microbatch, int chunk);
/* Ends it now; the end of a TRACE_STEP span also resolves the device clock (trace_resolve). */
void trace_end(trace_recorder *t, int handle);
/* Records on the whole backward `handle` that its weight-gradient (W) parts took `share` of
 * it (0 < share <= 1; its bytes become the share in parts per million, at least 1). Where the
 * device's work does not run on the recording thread, trace_resolve clears it again: the
 * share is not known there. A schedule that splits the backward can then be planned from a
 * run that does not (src/pp/stage_costs.h). */
void trace_set_weight_share(trace_recorder *t, int handle, double share);
enum { TRACE_WEIGHT_PPM = 1000000 };
/* The share trace_set_weight_share recorded on e, read back: 0 < share <= 1 on a whole
 * backward that has one, else 0. */
double trace_event_weight_share(const trace_event *e);
/* A whole compute event with explicit times (tests, and producers that time things themselves). */
int trace_record(trace_recorder *t, trace_kind kind, int step, int microbatch, int chunk,
                 double t_start, double t_end); /* its handle, or -1 when the buffer is full */
/* p2p and collectives, reported after the fact. kind is TRACE_SEND, TRACE_RECV or
 * TRACE_COLLECTIVE; peer is a global rank (-1 for collectives). */
void trace_comm(trace_recorder *t, trace_kind kind, const char *op, const char *group, int peer,
                size_t bytes, int tag, double t_start, double t_ready, double t_end);
/* The same with everything a message can carry: a label (what the message is for), the layer,
 * the group instance (its lowest global rank) and the thread CPU seconds spent in the call. */
typedef struct {
    trace_kind kind;
    const char *op, *group, *label; /* label may be NULL */
    int peer, tag, layer, group_first;
    size_t bytes;
    double t_start, t_ready, t_end, cpu;
} trace_comm_info;
void trace_comm_full(trace_recorder *t, const trace_comm_info *ci);
/* The same for a collective that ran on the communication stream (flag TRACE_STREAM). */
void trace_comm_stream(trace_recorder *t, const trace_comm_info *ci);
/* A memory counter sample at now / at an explicit time. */
void trace_memory(trace_recorder *t, size_t bytes_in_use);
void trace_memory_at(trace_recorder *t, size_t bytes_in_use, double when);
/* Resolves pending device times, then writes the file atomically, creating its directory if
 * needed; dies on I/O errors. */
void trace_write(trace_recorder *t, const char *path);
void trace_destroy(trace_recorder *t);

size_t trace_num_events(const trace_recorder *t);
uint64_t trace_num_dropped(const trace_recorder *t);
const trace_event *trace_event_at(const trace_recorder *t, size_t i);
const char *trace_string(const trace_recorder *t, int id); /* "" for -1 */

/* ---- reading one file ------------------------------------------------------------------- */

typedef struct trace_file trace_file;

/* NULL and one line in err (naming path and byte offset) if the file is missing or bad. */
trace_file *trace_file_read(const char *path, char *err, size_t errlen);
void trace_file_free(trace_file *f);

const trace_header *trace_file_header(const trace_file *f); /* config_json lives in f */
const char *trace_file_path(const trace_file *f);
size_t trace_file_num_events(const trace_file *f);
const trace_event *trace_file_event(const trace_file *f, size_t i);
uint64_t trace_file_dropped(const trace_file *f);
const char *trace_file_string(const trace_file *f, int id); /* "" for -1 */

/* The communication stream, read back. Event i is the exposed wait for a stream collective
 * when it is a main-lane collective with op "wait" recorded right after that collective (at
 * i - 1; run.c's stream hook records them so). A stream collective was handed to the stream
 * where the program stood at its start, or at its wait's start when that came first (the
 * stream may begin it only after the program already waits): trace_file_stream_issue gives
 * the event whose t_start that is (i or i + 1; i for any other event). The replay issues
 * it there and the analysis's step graph cuts the rank's compute there (src/trace/replay.h,
 * src/analyze/step_graph.h): one rule, so both views re-time a step alike. */
bool trace_file_is_stream_wait(const trace_file *f, size_t i);
size_t trace_file_stream_issue(const trace_file *f, size_t i);

/* ---- reading a run: every rank, sends paired with receives ------------------------------ */

typedef struct {
    char dir[4096]; /* as given */
    int nranks;
    trace_file **ranks;    /* ranks[k] is rank k's file */
    int **flow;            /* flow[k][i]: pair id of rank k's event i if it is a matched
                           * send or receive (the same id on both sides), else -1 */
    int nflows;            /* number of matched send/receive pairs */
    int unmatched;         /* sends or receives that found no partner */
    int **coll;            /* coll[k][i]: id of the collective call rank k's event i belongs to
                           * (the same id on every member), else -1 */
    int ncolls;            /* number of matched collective calls */
    double *coll_entered;  /* coll_entered[id]: rank-0 time at which the last member entered */
    int *coll_last;        /* coll_last[id]: that member's rank */
    int coll_unmatched;    /* collective events that could not be matched (members disagree
                           * on the count, or the group has the wrong number of members) */
    double *clock_fix;     /* clock_fix[k]: seconds trace_run_read added to rank k's
                           * clock_offset (trace_run_fix_clocks); 0 on rank 0's host */
    double clock_fix_most; /* the largest |clock_fix| */
    int clock_fix_left;    /* bounds no shift could meet (a recording fault): then none */
} trace_run;

/* Loads RUN_DIR/trace/rank<k>.trace for k = 0 .. world_size-1 (RUN_DIR may also be the trace
 * directory itself). Every file must agree on the layout and run id, and each file's rank
 * must match its name. NULL and one line in err on any problem (missing directory, missing
 * rank file, bad file). Then it matches messages across ranks:
 *   - sends with receives by (sender, receiver, tag), in order of t_start;
 *   - collectives by group instance (group name + group_first, or in traces written before
 *     group_first was recorded the coordinates the group shares; the communication stream's
 *     calls apart from the program's, the exposed waits for them not at all): the k-th
 *     collective of the instance on each member (in order of t_start) is one call. Every
 *     member must have the same count, and the instance as many members as its group has
 *     for the header's layout ("tp" tp, "pp" pp, "dp" dp, "mp" tp·pp, "embedding" 1 or 2,
 *     "world" all);
 *     otherwise its events stay unmatched (coll_unmatched). A matched collective's t_ready
 *     is set to when its last member entered (clock offsets applied, clamped into
 *     [t_start, t_end]): start -> ready is waiting for the others, ready -> end the transfer.
 */
trace_run *trace_run_read(const char *run_dir, char *err, size_t errlen);
void trace_run_free(trace_run *r);

/* ---- clocks of several hosts, corrected from the run's own messages ---------------------- */

/* Ranks on other hosts than rank 0's carry an offset measured before the run (Cristian's
 * method, src/runtime/clock_sync.h), good to its uncertainty — a few microseconds to
 * milliseconds, often more than a message's latency, so a receive can be drawn ending before
 * its send began. The run's own messages bound the truth: a receive ends after its send
 * began; a collective ends on every member after its last member entered. trace_run_read
 * calls this after matching: it finds one shift per host (ranks of a host share a clock:
 * header.host, or, for files without it, rank 0's host for ranks with zero uncertainty and a
 * host of their own otherwise), rank 0's host fixed at 0, as small as the bounds allow —
 * starting from 0 it raises a host's shift only by what a backwards message demands (or lowers
 * the sender's when the receiver is rank 0's host), repeating until no pair is backwards
 * (a longest-path relaxation over the hosts: Bellman-Ford, at most one pass per host). This
 * is the offset-only form of the controlled logical clock (Rabenseifner; Scalasca, Vampir):
 * over one short run the hosts' clocks do not drift apart, so one constant per host is
 * enough. Adds the shift to each rank's header clock_offset and records it (clock_fix,
 * clock_fix_most). When the bounds contradict each other (a message round trip shorter than
 * zero: a recording fault, not a clock) no shift is applied and the bounds still broken are
 * counted in clock_fix_left. The collectives' t_ready are then set again. */
void trace_run_fix_clocks(trace_run *r);

/* ---- is the run's picture physically possible? ----------------------------------------- */

/* Times on rank 0's clock (clock_offset applied), with the two ranks' clock uncertainties
 * plus TRACE_CAUSALITY_EPSILON of slack, every matched receive must end no earlier than its
 * send began, and every matched collective must end, on every member, no earlier than its
 * last member entered it. True when all do; otherwise false and one line in err naming the
 * earliest violation (ranks, event, times) and counting all of them. */
#define TRACE_CAUSALITY_EPSILON 1e-6 /* seconds: two clock reads on one host, in either order */
bool trace_run_check_causality(const trace_run *r, char *err, size_t errlen);

#endif /* TRIDENT_TRACE_TRACE_H */
