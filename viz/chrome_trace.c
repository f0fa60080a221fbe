/* chrome_trace.c — see chrome_trace.h. A flat list of events, one per line, written with the
 * JSON writer of src/core/json.h (key order as in chrome_trace.h; no spaces). */
#include "viz/chrome_trace.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "src/core/json.h"
#include "viz/timeline.h"

/* Starts the next element of traceEvents: an event object. */
static void next(json_writer *w) { json_begin_object(w, JSON_COMPACT); }

static void meta(json_writer *w, int pid, int tid, const char *what, const char *name, int sort) {
    char key[32];
    next(w);
    json_field_string(w, "ph", "M");
    json_field_int(w, "pid", pid);
    json_field_int(w, "tid", tid);
    snprintf(key, sizeof key, "%s_name", what);
    json_field_string(w, "name", key);
    json_key(w, "args");
    json_begin_object(w, JSON_COMPACT);
    json_field_string(w, "name", name);
    json_end_object(w);
    json_end_object(w);
    next(w);
    json_field_string(w, "ph", "M");
    json_field_int(w, "pid", pid);
    json_field_int(w, "tid", tid);
    snprintf(key, sizeof key, "%s_sort_index", what);
    json_field_string(w, "name", key);
    json_key(w, "args");
    json_begin_object(w, JSON_COMPACT);
    json_field_int(w, "sort_index", sort);
    json_end_object(w);
    json_end_object(w);
}

/* Begins a complete slice ("X") from a to b seconds, up to and including the opening of its
 * args object; the caller writes the args and ends with slice_end(). A slice whose times are
 * not finite numbers is left out (it has no place on a time axis): false, nothing written. */
static bool slice_begin(json_writer *w, int pid, int tid, const char *name, const char *cat,
                        double a, double b, double t0) {
    if (!isfinite((a - t0) * 1e6) || !isfinite((b - a) * 1e6)) return false;
    next(w);
    json_field_string(w, "ph", "X");
    json_field_int(w, "pid", pid);
    json_field_int(w, "tid", tid);
    json_field_string(w, "name", name);
    json_field_string(w, "cat", cat);
    json_field_double(w, "ts", "%.3f", (a - t0) * 1e6);
    json_field_double(w, "dur", "%.3f", (b - a) * 1e6);
    json_key(w, "args");
    json_begin_object(w, JSON_COMPACT);
    return true;
}

static void slice_end(json_writer *w) {
    json_end_object(w); /* args */
    json_end_object(w);
}

/* The args of a message's wait: what it waited for. */
static void wait_args(json_writer *w, const char *kind, const trace_event *e) {
    json_field_string(w, "class", "wait");
    json_field_string(w, "kind", kind);
    json_field_int(w, "peer", e->peer);
    json_field_int(w, "tag", e->tag);
    json_field_uint(w, "bytes", (unsigned long long)e->bytes);
}

/* The tail of a transfer's args: wait, bandwidth, label and layer. */
static void transfer_tail(json_writer *w, const trace_file *tf, const trace_event *e, double a,
                          double m, double b) {
    json_field_double_or_null(w, "wait_us", "%.3f", (m - a) * 1e6);
    json_field_double_or_null(w, "bandwidth_gbps", "%.3f", (double)e->bytes / (b - m) / 1e9);
    json_field_string(w, "label", trace_file_string(tf, e->label));
    json_field_int(w, "layer", e->layer);
}

static double run_start(const trace_run *r) {
    double t0 = 0;
    bool have = false;
    for (int k = 0; k < r->nranks; k++) {
        double off = trace_file_header(r->ranks[k])->clock_offset;
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            double t = trace_file_event(r->ranks[k], i)->t_start + off;
            if (!have || t < t0) t0 = t, have = true;
        }
    }
    return t0;
}

/* Where an event of one rank goes: its process, its clock, its run. */
typedef struct {
    json_writer *w;
    const trace_run *r;
    const trace_file *tf;
    int k, pid, run_index; /* rank in the run, Chrome process id, which run */
    double t0;             /* the run's first event, on the shared clock: ts 0 */
} rank_out;

static void write_step(const rank_out *o, const trace_event *e, double a, double b) {
    char name[64];
    snprintf(name, sizeof name, "step %d", e->step);
    if (!slice_begin(o->w, o->pid, VIZ_CT_TID_STEPS, name, "step", a, b, o->t0)) return;
    json_field_int(o->w, "step", e->step);
    slice_end(o->w);
}

static void write_compute(const rank_out *o, const trace_event *e, double a, double b) {
    json_writer *w = o->w;
    const char *kn = trace_kind_name(e->kind);
    char name[512];
    if (e->microbatch >= 0 && e->chunk >= 0)
        snprintf(name, sizeof name, "%s mb %d chunk %d", kn, e->microbatch, e->chunk);
    else if (e->microbatch >= 0) snprintf(name, sizeof name, "%s mb %d", kn, e->microbatch);
    else snprintf(name, sizeof name, "%s", kn);
    if (!slice_begin(w, o->pid, VIZ_CT_TID_COMPUTE, name, "compute", a, b, o->t0)) return;
    json_field_string(w, "class", "compute");
    json_field_string(w, "kind", kn);
    json_field_int(w, "step", e->step);
    json_field_int(w, "microbatch", e->microbatch);
    json_field_int(w, "chunk", e->chunk);
    json_field_double_or_null(w, "cpu_s", "%.6f", e->cpu >= 0 ? e->cpu : NAN);
    slice_end(w);
}

/* A send or receive: its wait, its transfer, and its end of the flow arrow. */
static void write_p2p(const rank_out *o, size_t i, const trace_event *e, double a, double m,
                      double b) {
    json_writer *w = o->w;
    bool send = e->kind == TRACE_SEND;
    /* A ring-attention step (the "cp" group) is its own kind, as in the pictures. */
    const char *kn = viz_tl_message_kind(send ? VIZ_TL_SEND : VIZ_TL_RECV, NULL,
                                         trace_file_string(o->tf, e->group)) == VIZ_TL_RING
                         ? viz_tl_kind_name(VIZ_TL_RING)
                         : trace_kind_name(e->kind);
    int tid = send ? VIZ_CT_TID_SEND : VIZ_CT_TID_RECV;
    if (m > a && slice_begin(w, o->pid, tid, "wait", "wait", a, m, o->t0)) {
        wait_args(w, kn, e);
        slice_end(w);
    }
    char name[64];
    snprintf(name, sizeof name, send ? "send → rank %d" : "recv ← rank %d", e->peer);
    if (slice_begin(w, o->pid, tid, name, "transfer", m, b, o->t0)) {
        json_field_string(w, "class", "transfer");
        json_field_string(w, "kind", kn);
        json_field_int(w, "peer", e->peer);
        json_field_int(w, "tag", e->tag);
        json_field_uint(w, "bytes", (unsigned long long)e->bytes);
        json_field_string(w, "op", trace_file_string(o->tf, e->op));
        json_field_string(w, "group", trace_file_string(o->tf, e->group));
        transfer_tail(w, o->tf, e, a, m, b);
        slice_end(w);
    }
    int flow = o->r->flow[o->k][i];
    if (flow < 0 || !isfinite((m - o->t0) * 1e6)) return; /* no place on a time axis */
    /* the arrow starts in the send's transfer, ends in the receive's */
    next(w);
    json_field_string(w, "ph", send ? "s" : "f");
    if (!send) json_field_string(w, "bp", "e");
    json_field_int(w, "id", (long long)o->run_index * 100000000LL + flow);
    json_field_int(w, "pid", o->pid);
    json_field_int(w, "tid", tid);
    json_field_double(w, "ts", "%.3f", (m - o->t0) * 1e6);
    json_field_string(w, "name", "p2p");
    json_field_string(w, "cat", "p2p");
    json_end_object(w);
}

static void write_collective(const rank_out *o, const trace_event *e, double a, double m,
                             double b) {
    json_writer *w = o->w;
    const char *group = trace_file_string(o->tf, e->group);
    /* A collective of the communication stream ran beside the rank: a thread of its own. */
    const int tid = e->flags & TRACE_STREAM ? VIZ_CT_TID_STREAM : VIZ_CT_TID_COLL;
    const char *op = e->op >= 0 ? trace_file_string(o->tf, e->op) : "collective";
    /* An all-to-all (MoE dispatch) is its own kind, as in the pictures. */
    const char *kind = viz_tl_kind_name(viz_tl_message_kind(VIZ_TL_COLLECTIVE, op, group));
    if (m > a && slice_begin(w, o->pid, tid, "wait", "wait", a, m, o->t0)) {
        json_field_string(w, "class", "wait");
        json_field_string(w, "kind", kind);
        json_field_string(w, "group", group);
        slice_end(w);
    }
    if (slice_begin(w, o->pid, tid, op, "transfer", m, b, o->t0)) {
        json_field_string(w, "class", "transfer");
        json_field_string(w, "kind", kind);
        json_field_string(w, "group", group);
        json_field_uint(w, "bytes", (unsigned long long)e->bytes);
        transfer_tail(w, o->tf, e, a, m, b);
        slice_end(w);
    }
}

static void write_memory(const rank_out *o, const trace_event *e, double a) {
    json_writer *w = o->w;
    if (!isfinite((a - o->t0) * 1e6)) return; /* no place on a time axis */
    next(w);
    json_field_string(w, "ph", "C");
    json_field_int(w, "pid", o->pid);
    json_field_string(w, "name", "memory");
    json_field_double(w, "ts", "%.3f", (a - o->t0) * 1e6);
    json_key(w, "args");
    json_begin_object(w, JSON_COMPACT);
    json_field_uint(w, "bytes", (unsigned long long)e->bytes);
    json_end_object(w);
    json_end_object(w);
}

/* One closed event of the rank, times moved to the shared clock. */
static void write_event(const rank_out *o, size_t i) {
    const trace_event *e = trace_file_event(o->tf, i);
    if (e->flags & TRACE_OPEN) return;
    const double off = trace_file_header(o->tf)->clock_offset;
    const double a = e->t_start + off, m = e->t_ready + off, b = e->t_end + off;
    switch (e->kind) {
    case TRACE_STEP: write_step(o, e, a, b); break;
    case TRACE_FORWARD:
    case TRACE_BACKWARD:
    case TRACE_WEIGHT:
    case TRACE_OPTIMIZER:
    case TRACE_DATA:
    case TRACE_EVAL: write_compute(o, e, a, b); break;
    case TRACE_SEND:
    case TRACE_RECV: write_p2p(o, i, e, a, m, b); break;
    case TRACE_COLLECTIVE: write_collective(o, e, a, m, b); break;
    case TRACE_MEMORY: write_memory(o, e, a); break;
    default: break;
    }
}

static void write_run(json_writer *w, const trace_run *r, const char *prefix, int run_index) {
    const double t0 = run_start(r);
    char name[512];
    for (int k = 0; k < r->nranks; k++) {
        const trace_file *tf = r->ranks[k];
        const trace_header *h = trace_file_header(tf);
        const rank_out o = {w, r, tf, k, run_index * 100000 + k, run_index, t0};
        snprintf(name, sizeof name, "%s%srank %d (tp %d, pp %d, dp %d)", prefix,
                 prefix[0] ? ": " : "", k, h->tp_rank, h->pp_rank, trace_header_dp_cp_rank(h));
        meta(w, o.pid, 0, "process", name, o.pid);
        static const char *const threads[] = {"",         "steps",    "compute",
                                              "p2p send", "p2p recv", "collectives"};
        for (int t = VIZ_CT_TID_STEPS; t <= VIZ_CT_TID_COLL; t++)
            meta(w, o.pid, t, "thread", threads[t], t);
        for (size_t i = 0; i < trace_file_num_events(tf); i++)
            if (trace_file_event(tf, i)->flags & TRACE_STREAM) {
                meta(w, o.pid, VIZ_CT_TID_STREAM, "thread", "comm stream", VIZ_CT_TID_STREAM);
                break;
            }
        for (size_t i = 0; i < trace_file_num_events(tf); i++) write_event(&o, i);
    }
}

void viz_chrome_trace_write(FILE *f, const trace_run *const *runs, const char *const *names,
                            int nruns) {
    json_writer w;
    json_init_file(&w, f, 0);
    json_begin_object(&w, JSON_COMPACT);
    json_field_string(&w, "displayTimeUnit", "ms");
    json_key(&w, "traceEvents");
    json_begin_array(&w, JSON_LINES); /* one event per line */
    for (int r = 0; r < nruns; r++) write_run(&w, runs[r], nruns > 1 ? names[r] : "", r);
    json_end_array(&w);
    json_key(&w, "otherData");
    json_begin_object(&w, JSON_COMPACT);
    for (int r = 0; r < nruns; r++) {
        const trace_header *h = trace_file_header(runs[r]->ranks[0]);
        char key[32];
        snprintf(key, sizeof key, "run%d", r);
        json_field_string(&w, key, runs[r]->dir);
        snprintf(key, sizeof key, "schedule%d", r);
        json_field_string(&w, key, h->schedule);
        snprintf(key, sizeof key, "config%d", r);
        json_field_string(&w, key, h->config_json);
    }
    json_end_object(&w);
    json_end_object(&w);
    fputc('\n', f);
}
