/* trace.c — the recorder and the writer (see trace.h; byte layout in FORMAT.md).
 *
 * The recorder is one preallocated array of events filled front to back, plus a small
 * intern table for strings. Nothing here allocates or touches a file after trace_create()
 * (and trace_set_device_clock()), until trace_write() serialises everything into one buffer
 * and writes it atomically.
 *
 * Device time: beside the events, two marker slots per event (begin, end; -1 when none is
 * pending). Only events at index >= `unresolved` can hold one, so a resolve scans the events
 * recorded since the last one (a step's), plus any older span that ended since.
 */
#include "src/trace/trace.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/core/crc32.h"
#include "src/trace/format.h"

struct trace_recorder {
    trace_header h;  /* h.config_json points at `config` */
    char *config;    /* owned copy */
    trace_event *ev; /* (cap) events, the first n used */
    size_t cap, n;
    uint64_t dropped;
    char strings[TRACE_MAX_STRINGS][TRACE_MAX_STRING]; /* id 0 is "(other)" */
    int nstrings;
    trace_device_clock clk; /* valid when mark != NULL */
    int *mark;              /* (cap, 2) markers of event i's begin and end pending, else -1 */
    size_t unresolved;      /* every pending marker belongs to an event at this index or later */
    size_t pending;         /* markers taken and not yet resolved */
};

const char *trace_kind_name(int kind) {
    static const char *const names[TRACE_NUM_KINDS] = {
        "forward", "backward", "send", "recv", "collective", "optimizer",
        "step",    "memory",   "data", "eval", "weight",
    };
    return kind >= 0 && kind < TRACE_NUM_KINDS ? names[kind] : "?";
}

int trace_header_dp_cp_size(const trace_header *h) { return h->dp * h->cp; }
int trace_header_dp_cp_rank(const trace_header *h) { return h->cp_rank + h->cp * h->dp_rank; }

trace_recorder *trace_create(const trace_header *h, size_t capacity_events) {
    CHECK(h != NULL, "trace_create needs a header");
    trace_recorder *t = callocCheck(1, sizeof *t);
    t->h = *h;
    const char *cfg = h->config_json ? h->config_json : "";
    t->config = mallocCheck(strlen(cfg) + 1);
    strcpy(t->config, cfg);
    t->h.config_json = t->config;
    t->h.schedule[sizeof t->h.schedule - 1] = 0;
    t->h.run_id[sizeof t->h.run_id - 1] = 0;
    if (t->h.cp == 0) t->h.cp = 1; /* a layout without context or expert parallelism */
    if (t->h.ep == 0) t->h.ep = 1;
    t->cap = capacity_events;
    t->ev = mallocCheck(capacity_events * sizeof *t->ev);
    strcpy(t->strings[0], "(other)");
    t->nstrings = 1;
    return t;
}

/* Hands every pending marker back to the clock: resolved (trace_resolve), or not (destroy). */
static void drop_markers(trace_recorder *t) {
    for (size_t i = 2 * t->unresolved; i < 2 * t->n; i++) {
        if (t->mark[i] >= 0) t->clk.release(t->mark[i]);
        t->mark[i] = -1;
    }
    t->pending = 0;
    t->unresolved = t->n;
}

void trace_set_device_clock(trace_recorder *t, const trace_device_clock *clk) {
    CHECK(t->n == 0 && !t->mark,
          "trace_set_device_clock: set the device clock once, before the first event");
    if (!clk) return;
    CHECK(clk->take && clk->sync && clk->time && clk->release,
          "trace_set_device_clock needs all four functions of the clock");
    t->clk = *clk;
    t->mark = mallocCheck(2 * t->cap * sizeof *t->mark + 1);
    for (size_t i = 0; i < 2 * t->cap; i++) t->mark[i] = -1;
}

void trace_resolve(trace_recorder *t) {
    if (!t->mark || t->pending == 0) return;
    t->clk.sync();
    for (size_t i = t->unresolved; i < t->n; i++) {
        trace_event *e = &t->ev[i];
        int *m = &t->mark[2 * i];
        if (m[0] >= 0) {
            e->t_start = e->t_ready = t->clk.time(m[0]);
            if (e->flags & TRACE_OPEN) e->t_end = e->t_start; /* still running: a point */
        }
        if (m[1] >= 0) {
            e->t_end = t->clk.time(m[1]);
            if (!t->clk.runs_on_host) { /* the thread only launched the work */
                e->cpu = -1;
                if (e->kind == TRACE_BACKWARD) e->bytes = 0; /* its W share unknown too */
            }
        }
    }
    drop_markers(t); /* all resolved now */
}

/* A marker for event h's begin (which 0) or end (1). */
static void take_marker(trace_recorder *t, int h, int which) {
    int *m = &t->mark[2 * (size_t)h + (size_t)which];
    if (*m >= 0) t->clk.release(*m); /* a second trace_end of one span: the last one counts */
    else t->pending++;
    *m = t->clk.take();
    if ((size_t)h < t->unresolved) t->unresolved = (size_t)h;
}

void trace_destroy(trace_recorder *t) {
    if (!t) return;
    if (t->mark) drop_markers(t);
    free(t->mark);
    free(t->ev);
    free(t->config);
    free(t);
}

/* The id of `s` in the intern table: a short linear scan (the table holds a few names). */
static int intern(trace_recorder *t, const char *s) {
    if (!s) return -1;
    for (int i = 1; i < t->nstrings; i++)
        if (strncmp(t->strings[i], s, TRACE_MAX_STRING - 1) == 0) return i;
    if (t->nstrings == TRACE_MAX_STRINGS) return 0;
    snprintf(t->strings[t->nstrings], TRACE_MAX_STRING, "%s", s);
    return t->nstrings++;
}

/* The next free slot, or NULL (and one more dropped event) when the buffer is full. */
static trace_event *next_slot(trace_recorder *t, trace_kind kind, int step, int mb, int chunk) {
    if (t->n == t->cap) {
        t->dropped++;
        return NULL;
    }
    trace_event *e = &t->ev[t->n++];
    e->kind = kind;
    e->flags = 0;
    e->step = step;
    e->microbatch = mb;
    e->chunk = chunk;
    e->peer = -1;
    e->tag = -1;
    e->op = -1;
    e->group = -1;
    e->label = -1;
    e->layer = -1;
    e->group_first = -1;
    e->bytes = 0;
    e->cpu = -1;
    return e;
}

/* The device markers go inside the host times (begin after its clock read, end before), so
 * on the CPU devices, where a marker is the host clock, a span's device times lie within its
 * host times and around the messages reported in between. */
int trace_begin(trace_recorder *t, trace_kind kind, int step, int microbatch, int chunk) {
    double now = time_now();
    trace_event *e = next_slot(t, kind, step, microbatch, chunk);
    if (!e) return -1;
    e->flags = TRACE_OPEN;
    e->t_start = e->t_ready = e->t_end = now;
    e->cpu = thread_cpu_now(); /* the CPU clock at begin until trace_end turns it into a span */
    int h = (int)(e - t->ev);
    if (t->mark) take_marker(t, h, 0);
    return h;
}

void trace_end(trace_recorder *t, int handle) {
    if (handle < 0) return; /* the begin was dropped */
    CHECK((size_t)handle < t->n, "trace_end got a handle that trace_begin did not return");
    trace_event *e = &t->ev[handle];
    if (t->mark) take_marker(t, handle, 1);
    e->t_end = time_now();
    e->cpu = thread_cpu_now() - e->cpu;
    e->flags &= ~(uint32_t)TRACE_OPEN;
    if (e->kind == TRACE_STEP) trace_resolve(t); /* the step's natural sync point */
}

void trace_set_weight_share(trace_recorder *t, int handle, double share) {
    if (handle < 0 || !(share > 0)) return;
    CHECK((size_t)handle < t->n, "trace_set_weight_share got a handle trace_begin did not return");
    trace_event *e = &t->ev[handle];
    CHECK(e->kind == TRACE_BACKWARD, "trace_set_weight_share: a backward event");
    const uint64_t ppm = (uint64_t)((share < 1 ? share : 1) * TRACE_WEIGHT_PPM + 0.5);
    e->bytes = ppm > 0 ? ppm : 1;
}

double trace_event_weight_share(const trace_event *e) {
    return e->kind == TRACE_BACKWARD ? (double)e->bytes / TRACE_WEIGHT_PPM : 0;
}

int trace_record(trace_recorder *t, trace_kind kind, int step, int microbatch, int chunk,
                 double t_start, double t_end) {
    trace_event *e = next_slot(t, kind, step, microbatch, chunk);
    if (!e) return -1;
    e->t_start = e->t_ready = t_start;
    e->t_end = t_end;
    return (int)(e - t->ev);
}

void trace_comm_full(trace_recorder *t, const trace_comm_info *ci) {
    CHECK(ci->kind == TRACE_SEND || ci->kind == TRACE_RECV || ci->kind == TRACE_COLLECTIVE,
          "trace_comm records only TRACE_SEND, TRACE_RECV or TRACE_COLLECTIVE");
    trace_event *e = next_slot(t, ci->kind, -1, -1, -1);
    if (!e) return;
    e->op = intern(t, ci->op);
    e->group = intern(t, ci->group);
    e->label = intern(t, ci->label);
    e->peer = ci->peer;
    e->tag = ci->tag;
    e->layer = ci->layer;
    e->group_first = ci->group_first;
    e->bytes = ci->bytes;
    e->t_start = ci->t_start;
    e->t_ready = ci->t_ready;
    e->t_end = ci->t_end;
    e->cpu = ci->cpu;
}

void trace_comm_stream(trace_recorder *t, const trace_comm_info *ci) {
    size_t n = t->n;
    trace_comm_full(t, ci);
    if (t->n > n) t->ev[n].flags |= TRACE_STREAM; /* not when the buffer was full */
}

void trace_comm(trace_recorder *t, trace_kind kind, const char *op, const char *group, int peer,
                size_t bytes, int tag, double t_start, double t_ready, double t_end) {
    trace_comm_info ci = {.kind = kind,
                          .op = op,
                          .group = group,
                          .peer = peer,
                          .tag = tag,
                          .layer = -1,
                          .group_first = -1,
                          .bytes = bytes,
                          .t_start = t_start,
                          .t_ready = t_ready,
                          .t_end = t_end,
                          .cpu = -1};
    trace_comm_full(t, &ci);
}

void trace_memory_at(trace_recorder *t, size_t bytes_in_use, double when) {
    trace_event *e = next_slot(t, TRACE_MEMORY, -1, -1, -1);
    if (!e) return;
    e->bytes = bytes_in_use;
    e->t_start = e->t_ready = e->t_end = when;
}

void trace_memory(trace_recorder *t, size_t bytes_in_use) {
    trace_memory_at(t, bytes_in_use, time_now());
}

size_t trace_num_events(const trace_recorder *t) { return t->n; }
uint64_t trace_num_dropped(const trace_recorder *t) { return t->dropped; }
const trace_event *trace_event_at(const trace_recorder *t, size_t i) {
    CHECK(i < t->n, "event index out of range");
    return &t->ev[i];
}
const char *trace_string(const trace_recorder *t, int id) {
    return id >= 0 && id < t->nstrings ? t->strings[id] : "";
}

/* ---- writer ------------------------------------------------------------------------------ */

static uint16_t string_id16(int id) { return id < 0 ? (uint16_t)TRACE_NO_STRING : (uint16_t)id; }

void trace_write(trace_recorder *t, const char *path) {
    trace_resolve(t); /* no span left with launch times where the device has its times */
    size_t cfg_len = strlen(t->config);
    size_t str_bytes = 4;
    for (int i = 0; i < t->nstrings; i++) str_bytes += 2 + strlen(t->strings[i]);
    size_t total = 8 + 4 + TRACE_HEADER_BYTES + 4 + cfg_len + str_bytes + 8 + 8 + 4 +
                   t->n * TRACE_EVENT_BYTES + 4;
    uint8_t *buf = callocCheck(total, 1);
    uint8_t *p = buf;

    memcpy(p, TRACE_MAGIC, 8), p += 8;
    le_put32(p, TRACE_VERSION), p += 4;
    const trace_header *h = &t->h;
    const int ints[10] = {h->rank, h->world_size, h->tp,      h->pp,      h->dp,
                          h->vpp,  h->tp_rank,    h->pp_rank, h->dp_rank, h->num_microbatches};
    for (int i = 0; i < 10; i++) le_put32(p, (uint32_t)ints[i]), p += 4;
    memcpy(p, h->schedule, strnlen(h->schedule, 15)), p += 16; /* NUL-padded */
    le_putf64(p, h->clock_offset), p += 8;
    le_putf64(p, h->clock_uncertainty), p += 8;
    memcpy(p, h->run_id, strnlen(h->run_id, 31)), p += 32;         /* NUL-padded */
    const int layout5[4] = {h->cp, h->ep, h->cp_rank, h->ep_rank}; /* since version 3 */
    for (int i = 0; i < 4; i++) le_put32(p, (uint32_t)layout5[i]), p += 4;
    memcpy(p, h->host, strnlen(h->host, 31)), p += 32; /* NUL-padded, since version 4 */
    le_put32(p, (uint32_t)cfg_len), p += 4;
    memcpy(p, t->config, cfg_len), p += cfg_len;

    le_put32(p, (uint32_t)t->nstrings), p += 4;
    for (int i = 0; i < t->nstrings; i++) {
        size_t len = strlen(t->strings[i]);
        le_put16(p, (uint16_t)len), p += 2;
        memcpy(p, t->strings[i], len), p += len;
    }

    le_put64(p, (uint64_t)t->n), p += 8;
    le_put64(p, t->dropped), p += 8;
    le_put32(p, TRACE_EVENT_BYTES), p += 4;
    for (size_t i = 0; i < t->n; i++, p += TRACE_EVENT_BYTES) {
        const trace_event *e = &t->ev[i];
        p[EV_KIND] = (uint8_t)e->kind;
        p[EV_FLAGS] = (uint8_t)e->flags;
        le_put16(p + EV_OP, string_id16(e->op));
        le_put16(p + EV_GROUP, string_id16(e->group));
        le_put16(p + EV_LABEL, string_id16(e->label));
        le_put32(p + EV_LAYER, (uint32_t)e->layer);
        le_put32(p + EV_STEP, (uint32_t)e->step);
        le_put32(p + EV_MB, (uint32_t)e->microbatch);
        le_put32(p + EV_CHUNK, (uint32_t)e->chunk);
        le_put32(p + EV_PEER, (uint32_t)e->peer);
        le_put32(p + EV_TAG, (uint32_t)e->tag);
        le_put64(p + EV_BYTES, e->bytes);
        le_putf64(p + EV_START, e->t_start);
        le_putf64(p + EV_READY, e->t_ready);
        le_putf64(p + EV_END, e->t_end);
        le_putf64(p + EV_CPU, e->cpu);
        le_put32(p + EV_GROUP_FIRST, (uint32_t)e->group_first);
    }
    le_put32(p, crc32_update(0, buf, (size_t)(p - buf))), p += 4;
    CHECK((size_t)(p - buf) == total, "trace_write's size arithmetic is off");

    /* The directory part of path, created if missing (run/trace/ on the first write). */
    const char *slash = strrchr(path, '/');
    if (slash && slash != path) {
        char dir[4096];
        size_t len = (size_t)(slash - path);
        if (len >= sizeof dir) die("trace path too long: '%s'", path);
        memcpy(dir, path, len);
        dir[len] = 0;
        make_dirs(dir);
    }
    atomic_file af;
    FILE *f = atomic_file_open(&af, path);
    if (fwrite(buf, 1, total, f) != total) {
        atomic_file_abort(&af);
        die("cannot write trace '%s' (%zu bytes): disk full?", path, total);
    }
    atomic_file_commit(&af);
    free(buf);
}
