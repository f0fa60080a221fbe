/* trace_read.c — reading one trace file back (see trace.h; the layout is FORMAT.md's).
 *
 * The reader never trusts the file: the whole file is read into memory and a cursor walks
 * it, checking before every read that the bytes are there. Sizes are compared with what is
 * left before any allocation, so a corrupt count cannot make it allocate or read wildly.
 * The first problem found becomes the one error line, naming the file and the byte offset.
 *
 * Order of checks: structure (magic, version, lengths) -> checksum -> meaning (kinds,
 * string ids, layout). A flipped byte is therefore reported either where it breaks the
 * structure or as a checksum mismatch.
 *
 * Not here: a whole run directory and the matching of messages across its ranks
 * (trace_run.c), the causality check (causality.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/core/crc32.h"
#include "src/core/file_read.h"
#include "src/trace/format.h"
#include "src/trace/trace.h"
#include "src/trace/trace_file.h"

/* A bounds-checked walk over the file's bytes. */
typedef struct {
    const uint8_t *b;
    size_t size, off;
    const char *path;
    char *err;
    size_t errlen;
    bool failed;
} cursor;

static void fail(cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(cursor *c, const char *fmt, ...) {
    if (c->failed) return;
    c->failed = true;
    if (!c->err || !c->errlen) return;
    int k = snprintf(c->err, c->errlen, "trace '%s': ", c->path);
    if (k < 0 || (size_t)k >= c->errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
    va_end(ap);
}

/* True if `n` more bytes are there; otherwise fails with "truncated at byte …". */
static bool need(cursor *c, size_t n, const char *what) {
    if (c->failed) return false;
    if (c->size - c->off >= n) return true;
    fail(c, "truncated at byte %zu (%s at byte %zu need %zu bytes)", c->size, what, c->off, n);
    return false;
}

static uint32_t take32(cursor *c) {
    uint32_t v = le_get32(c->b + c->off);
    c->off += 4;
    return v;
}

static void file_free_parts(trace_file *f) {
    if (!f) return;
    for (int i = 0; i < f->nstrings; i++) free(f->strings[i]);
    free(f->strings);
    free(f->config);
    free(f->ev);
    free(f);
}

static bool known_schedule(const char *name) {
    for (size_t k = 0; k < sizeof k_trace_schedules / sizeof k_trace_schedules[0]; k++)
        if (strcmp(name, k_trace_schedules[k]) == 0) return true;
    return false;
}

/* The ranks and chunk an event names lie inside the header's layout: a p2p peer is a rank of
 * the run (itself too: zbv's bottom of the V), a collective's lowest member one or -1, a chunk
 * one of the rank's or -1. Readers index per-rank arrays with these. */
static bool event_refs_ok(const trace_event *e, const trace_header *h) {
    const bool p2p = e->kind == TRACE_SEND || e->kind == TRACE_RECV;
    if (e->peer < (p2p ? 0 : -1) || e->peer >= h->world_size) return false;
    if (e->group_first < -1 || e->group_first >= h->world_size) return false;
    return e->chunk >= -1 && e->chunk < h->vpp;
}

/* The fixed-size header after the version (FORMAT.md): version 2's fields, and from version
 * 3 on the context- and expert-parallel sizes and ranks after them. */
static bool read_header(cursor *c, uint32_t version, trace_header *h) {
    const size_t bytes = version == 2   ? TRACE_HEADER_V2_BYTES
                         : version == 3 ? TRACE_HEADER_V3_BYTES
                                        : TRACE_HEADER_BYTES;
    if (!need(c, bytes, "the header")) return false;
    int v[10];
    for (int i = 0; i < 10; i++) v[i] = (int)take32(c);
    h->rank = v[0], h->world_size = v[1], h->tp = v[2], h->pp = v[3], h->dp = v[4];
    h->vpp = v[5], h->tp_rank = v[6], h->pp_rank = v[7], h->dp_rank = v[8];
    h->num_microbatches = v[9];
    memcpy(h->schedule, c->b + c->off, 16);
    c->off += 16;
    h->clock_offset = le_getf64(c->b + c->off);
    c->off += 8;
    h->clock_uncertainty = le_getf64(c->b + c->off);
    c->off += 8;
    memcpy(h->run_id, c->b + c->off, 32);
    c->off += 32;
    h->cp = 1, h->ep = 1, h->cp_rank = 0, h->ep_rank = 0;
    if (version == 2) return true;
    h->cp = (int)take32(c), h->ep = (int)take32(c);
    h->cp_rank = (int)take32(c), h->ep_rank = (int)take32(c);
    memset(h->host, 0, sizeof h->host);
    if (version == 3) return true;
    memcpy(h->host, c->b + c->off, 32);
    c->off += 32;
    return true;
}

/* An integer field of the configuration JSON ("key":N), or 1 when it is absent. */
static int config_size(const char *config_json, const char *key) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *s = strstr(config_json, pattern);
    if (!s) return 1;
    const long v = strtol(s + strlen(pattern), NULL, 10);
    return v > 1 && v <= TRACE_MAX_WORLD ? (int)v : 1;
}

/* Version 2 stored dp · cp ranks as dp, cp_rank + cp · dp_rank as dp_rank, and no ep. The
 * sizes come from the run's configuration (context_parallel_size, expert_model_parallel_size)
 * when they divide what the header holds; otherwise 1 (older runs, hand-made traces). */
static void v2_layout(trace_header *h) {
    const int cp = config_size(h->config_json, "context_parallel_size");
    if (cp > 1 && h->dp % cp == 0 && h->dp_rank >= 0) {
        h->cp = cp;
        h->cp_rank = h->dp_rank % cp;
        h->dp_rank /= cp;
        h->dp /= cp;
    }
    const int ep = config_size(h->config_json, "expert_model_parallel_size");
    if (ep > 1 && h->dp % ep == 0 && h->dp_rank >= 0) {
        h->ep = ep;
        h->ep_rank = h->dp_rank % ep;
    }
}

/* world = tp · cp · pp · dp (each at least 1, the products checked factor by factor so they
 * cannot overflow), ep divides dp, and the rank and its cp and ep ranks inside their sizes. */
static bool layout_ok(const trace_header *h) {
    if (h->world_size < 1 || h->world_size > TRACE_MAX_WORLD || h->rank < 0 ||
        h->rank >= h->world_size)
        return false;
    const int sizes[5] = {h->tp, h->cp, h->pp, h->dp, h->vpp};
    long long product = 1;
    for (int i = 0; i < 5; i++) {
        if (sizes[i] < 1) return false;
        if (i < 4 && (product *= sizes[i]) > h->world_size) return false;
    }
    return product == h->world_size && h->ep >= 1 && h->dp % h->ep == 0 && h->cp_rank >= 0 &&
           h->cp_rank < h->cp && h->ep_rank >= 0 && h->ep_rank < h->ep;
}

/* Parses a whole file image; NULL on failure (the cursor holds the message). Kept as one
 * function over 80 lines on purpose: it follows src/trace/FORMAT.md field by field. */
static trace_file *parse(cursor *c) {
    trace_file *f = callocCheck(1, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", c->path);

    if (!need(c, 8, "the magic number")) goto bad;
    if (memcmp(c->b, TRACE_MAGIC, 8) != 0) {
        fail(c, "bad magic at byte 0 (not a Trident trace file)");
        goto bad;
    }
    c->off = 8;
    if (!need(c, 4, "the version")) goto bad;
    uint32_t version = take32(c);
    if (version < 2 || version > TRACE_VERSION) {
        fail(c, "unsupported version %u at byte 8 (this build reads versions 2 to %d)", version,
             TRACE_VERSION);
        goto bad;
    }

    trace_header *h = &f->h;
    if (!read_header(c, version, h)) goto bad;
    const size_t sched_off = 8 + 4 + 10 * 4, run_id_off = sched_off + 16 + 8 + 8;

    if (!need(c, 4, "the config length")) goto bad;
    uint32_t cfg_len = take32(c);
    if (!need(c, cfg_len, "the config JSON")) goto bad;
    f->config = mallocCheck((size_t)cfg_len + 1);
    memcpy(f->config, c->b + c->off, cfg_len);
    f->config[cfg_len] = 0;
    h->config_json = f->config;
    c->off += cfg_len;
    if (version == 2) v2_layout(h);

    if (!need(c, 4, "the string count")) goto bad;
    size_t nstr_off = c->off;
    uint32_t nstr = take32(c);
    if (nstr > TRACE_NO_STRING || nstr > (c->size - c->off) / 2) {
        fail(c, "string count %u at byte %zu is impossible (the rest of the file is %zu bytes)",
             nstr, nstr_off, c->size - c->off);
        goto bad;
    }
    f->strings = callocCheck(nstr, sizeof *f->strings);
    for (uint32_t i = 0; i < nstr; i++) {
        if (!need(c, 2, "a string length")) goto bad;
        size_t len = le_get16(c->b + c->off);
        c->off += 2;
        if (!need(c, len, "a string")) goto bad;
        f->strings[i] = mallocCheck(len + 1);
        memcpy(f->strings[i], c->b + c->off, len);
        f->strings[i][len] = 0;
        f->nstrings++;
        c->off += len;
    }

    if (!need(c, 20, "the event counts")) goto bad;
    size_t count_off = c->off;
    uint64_t n = le_get64(c->b + c->off);
    f->dropped = le_get64(c->b + c->off + 8);
    c->off += 16;
    uint32_t ev_bytes = take32(c);
    if (ev_bytes != TRACE_EVENT_BYTES) {
        fail(c, "event size %u at byte %zu (version %d events are %d bytes)", ev_bytes, c->off - 4,
             TRACE_VERSION, TRACE_EVENT_BYTES);
        goto bad;
    }
    size_t left = c->size - c->off;
    if (n > left / TRACE_EVENT_BYTES) {
        /* Reported like any truncation: where the data ends and how much the events need. */
        if (n > (uint64_t)SIZE_MAX / TRACE_EVENT_BYTES)
            fail(c, "event count %llu at byte %zu is impossible", (unsigned long long)n, count_off);
        else need(c, (size_t)n * TRACE_EVENT_BYTES, "the events");
        goto bad;
    }
    size_t ev_off = c->off;
    c->off += (size_t)n * TRACE_EVENT_BYTES;

    if (!need(c, 4, "the checksum")) goto bad;
    size_t crc_off = c->off;
    uint32_t crc_file = take32(c);
    if (c->off != c->size) {
        fail(c, "%zu unexpected bytes after the checksum at byte %zu", c->size - c->off, c->off);
        goto bad;
    }
    uint32_t crc = crc32_update(0, c->b, crc_off);
    if (crc != crc_file) {
        fail(c,
             "checksum mismatch at byte %zu (stored 0x%08x, contents give 0x%08x): the file is "
             "corrupt",
             crc_off, crc_file, crc);
        goto bad;
    }

    /* Meaning: the layout must be sane. */
    if (memchr(h->schedule, 0, 16) == NULL) {
        fail(c, "schedule name at byte %zu is not NUL-terminated", sched_off);
        goto bad;
    }
    const size_t host_off = run_id_off + 32 + 16;
    if (memchr(h->host, 0, 32) == NULL) {
        fail(c, "host name at byte %zu is not NUL-terminated", host_off);
        goto bad;
    }
    for (const char *q = h->host; *q; q++)
        if (*q < 0x21 || *q > 0x7e) {
            fail(c, "host name at byte %zu holds a byte that is not printable (0x%02x)", host_off,
                 (unsigned char)*q);
            goto bad;
        }
    if (memchr(h->run_id, 0, 32) == NULL) {
        fail(c, "run id at byte %zu is not NUL-terminated", run_id_off);
        goto bad;
    }
    if (!(fabs(h->clock_offset) <= TRACE_MAX_SECONDS) || !(h->clock_uncertainty >= 0) ||
        !(h->clock_uncertainty <= TRACE_MAX_SECONDS)) {
        fail(c,
             "clock offset %g / uncertainty %g at byte %zu are not seconds within ±1e9 (the "
             "uncertainty not negative)",
             h->clock_offset, h->clock_uncertainty, sched_off + 16);
        goto bad;
    }
    if (!known_schedule(h->schedule)) {
        fail(c,
             "schedule name '%.15s' at byte %zu is not one of "
             "gpipe|1f1b|interleaved|zb-h1|zbv|dualpipev",
             h->schedule, sched_off);
        goto bad;
    }
    if (!layout_ok(h)) {
        fail(c,
             "header at byte 12 has an impossible layout (rank %d, world %d, tp %d, pp %d, dp %d, "
             "vpp %d, cp %d, ep %d, cp rank %d, ep rank %d)",
             h->rank, h->world_size, h->tp, h->pp, h->dp, h->vpp, h->cp, h->ep, h->cp_rank,
             h->ep_rank);
        goto bad;
    }

    f->n = (size_t)n;
    f->ev = mallocCheck(f->n * sizeof *f->ev);
    for (size_t i = 0; i < f->n; i++) {
        const uint8_t *p = c->b + ev_off + i * TRACE_EVENT_BYTES;
        size_t at = ev_off + i * TRACE_EVENT_BYTES;
        trace_event *e = &f->ev[i];
        if (p[EV_KIND] >= TRACE_NUM_KINDS) {
            fail(c, "event %zu at byte %zu has unknown kind %u", i, at, p[EV_KIND]);
            goto bad;
        }
        e->kind = (trace_kind)p[EV_KIND];
        e->flags = p[EV_FLAGS];
        const uint16_t ids[3] = {le_get16(p + EV_OP), le_get16(p + EV_GROUP),
                                 le_get16(p + EV_LABEL)};
        for (int s = 0; s < 3; s++)
            if (ids[s] != TRACE_NO_STRING && ids[s] >= nstr) {
                fail(c, "event %zu at byte %zu names string %u but the table has %u", i, at, ids[s],
                     nstr);
                goto bad;
            }
        e->op = ids[0] == TRACE_NO_STRING ? -1 : ids[0];
        e->group = ids[1] == TRACE_NO_STRING ? -1 : ids[1];
        e->label = ids[2] == TRACE_NO_STRING ? -1 : ids[2];
        e->layer = (int)le_get32(p + EV_LAYER);
        e->group_first = (int)le_get32(p + EV_GROUP_FIRST);
        e->cpu = le_getf64(p + EV_CPU);
        e->step = (int)le_get32(p + EV_STEP);
        e->microbatch = (int)le_get32(p + EV_MB);
        e->chunk = (int)le_get32(p + EV_CHUNK);
        e->peer = (int)le_get32(p + EV_PEER);
        e->tag = (int)le_get32(p + EV_TAG);
        e->bytes = le_get64(p + EV_BYTES);
        e->t_start = le_getf64(p + EV_START);
        e->t_ready = le_getf64(p + EV_READY);
        e->t_end = le_getf64(p + EV_END);
        if (!(fabs(e->t_start) <= TRACE_MAX_SECONDS && fabs(e->t_end) <= TRACE_MAX_SECONDS &&
              (e->cpu == -1 || (e->cpu >= 0 && e->cpu <= TRACE_MAX_SECONDS)))) {
            fail(c,
                 "event %zu at byte %zu has a time that is not a number of seconds within "
                 "±%g (or a CPU time that is neither -1 nor one)",
                 i, at, TRACE_MAX_SECONDS);
            goto bad;
        }
        if (!event_refs_ok(e, h)) {
            fail(c,
                 "event %zu at byte %zu names rank %d / group rank %d / chunk %d outside the "
                 "layout (world %d, %d chunks per rank)",
                 i, at, e->peer, e->group_first, e->chunk, h->world_size, h->vpp);
            goto bad;
        }
        if (!(e->t_start <= e->t_ready && e->t_ready <= e->t_end)) {
            fail(c,
                 "event %zu at byte %zu has times out of order (start %.9g, ready %.9g, end %.9g)",
                 i, at, e->t_start, e->t_ready, e->t_end);
            goto bad;
        }
    }
    return f;
bad:
    file_free_parts(f);
    return NULL;
}

trace_file *trace_file_read(const char *path, char *err, size_t errlen) {
    cursor c = {.path = path, .err = err, .errlen = errlen};
    if (err && errlen) err[0] = 0;
    char why[256];
    size_t size;
    uint8_t *buf = file_read_bounded(path, TRACE_MAX_FILE_BYTES, &size, NULL, why, sizeof why);
    if (!buf) {
        fail(&c, "%s", why);
        return NULL;
    }
    c.b = buf;
    c.size = size;
    trace_file *f = parse(&c);
    free(buf);
    return f;
}

void trace_file_free(trace_file *f) { file_free_parts(f); }

const trace_header *trace_file_header(const trace_file *f) { return &f->h; }
const char *trace_file_path(const trace_file *f) { return f->path; }
size_t trace_file_num_events(const trace_file *f) { return f->n; }
const trace_event *trace_file_event(const trace_file *f, size_t i) {
    CHECK(i < f->n, "event index out of range");
    return &f->ev[i];
}
uint64_t trace_file_dropped(const trace_file *f) { return f->dropped; }
const char *trace_file_string(const trace_file *f, int id) {
    return id >= 0 && id < f->nstrings ? f->strings[id] : "";
}

bool trace_file_is_stream_wait(const trace_file *f, size_t i) {
    CHECK(i < f->n, "event index out of range");
    const trace_event *e = &f->ev[i];
    return i > 0 && e->kind == TRACE_COLLECTIVE && !(e->flags & TRACE_STREAM) &&
           (f->ev[i - 1].flags & TRACE_STREAM) && strcmp(trace_file_string(f, e->op), "wait") == 0;
}

size_t trace_file_stream_issue(const trace_file *f, size_t i) {
    CHECK(i < f->n, "event index out of range");
    if (!(f->ev[i].flags & TRACE_STREAM) || i + 1 >= f->n || !trace_file_is_stream_wait(f, i + 1))
        return i;
    return f->ev[i + 1].t_start < f->ev[i].t_start ? i + 1 : i;
}
