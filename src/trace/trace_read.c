/* trace_read.c — reading trace files back, and a whole run directory (see trace.h).
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
 * A run: every rank's file, then the matching of messages across ranks (sends with
 * receives, collectives with their other members' part). Not here: the causality check
 * (causality.c), which only reads what the matching left.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/core/check.h"
#include "src/core/crc32.h"
#include "src/core/file_read.h"
#include "src/trace/format.h"
#include "src/trace/trace.h"

struct trace_file {
    char path[4096];
    trace_header h; /* h.config_json points at config */
    char *config;
    char **strings; /* nstrings NUL-terminated copies */
    int nstrings;
    trace_event *ev;
    size_t n;
    uint64_t dropped;
};

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
    if (!need(c, version == 2 ? TRACE_HEADER_V2_BYTES : TRACE_HEADER_BYTES, "the header"))
        return false;
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
    if (version != TRACE_VERSION && version != 2) {
        fail(c, "unsupported version %u at byte 8 (this build reads versions 2 and %d)", version,
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
        fail(c, "schedule name '%.15s' at byte %zu is not one of gpipe|1f1b|interleaved|zb-h1|zbv",
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

/* ---- a whole run -------------------------------------------------------------------------- */

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Something is there (a regular file or not: trace_file_read names what is wrong with it). */
static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* One p2p endpoint, for pairing: (sender, receiver, tag) then t_start order. */
typedef struct {
    int src, dst, tag;
    double t;
    int rank;
    size_t idx;
} endpoint;

static int endpoint_cmp(const void *a, const void *b) {
    const endpoint *x = a, *y = b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
    if (x->tag != y->tag) return x->tag < y->tag ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The k-th send from A to B with tag T pairs with the k-th receive on B from A with tag T
 * (MPI's non-overtaking rule), both counted in order of t_start. */
static void match_p2p(trace_run *r) {
    size_t ns = 0, nr = 0;
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            trace_kind kind = trace_file_event(r->ranks[k], i)->kind;
            ns += kind == TRACE_SEND;
            nr += kind == TRACE_RECV;
        }
    endpoint *s = mallocCheck(ns * sizeof *s), *v = mallocCheck(nr * sizeof *v);
    ns = nr = 0;
    for (int k = 0; k < r->nranks; k++) {
        r->flow[k] = mallocCheck((trace_file_num_events(r->ranks[k]) + 1) * sizeof(int));
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            const trace_event *e = trace_file_event(r->ranks[k], i);
            r->flow[k][i] = -1;
            if (e->kind == TRACE_SEND) s[ns++] = (endpoint){k, e->peer, e->tag, e->t_start, k, i};
            if (e->kind == TRACE_RECV) v[nr++] = (endpoint){e->peer, k, e->tag, e->t_start, k, i};
        }
    }
    qsort(s, ns, sizeof *s, endpoint_cmp);
    qsort(v, nr, sizeof *v, endpoint_cmp);
    size_t i = 0, j = 0;
    int matched = 0;
    while (i < ns && j < nr) {
        endpoint a = s[i], b = v[j];
        int key = a.src != b.src   ? (a.src < b.src ? -1 : 1)
                  : a.dst != b.dst ? (a.dst < b.dst ? -1 : 1)
                  : a.tag != b.tag ? (a.tag < b.tag ? -1 : 1)
                                   : 0;
        if (key < 0) i++;
        else if (key > 0) j++;
        else {
            r->flow[a.rank][a.idx] = r->flow[b.rank][b.idx] = r->nflows++;
            matched += 2;
            i++, j++;
        }
    }
    r->unmatched = (int)(ns + nr) - matched;
    free(s);
    free(v);
}

/* One collective event, for matching: (group name, group_first, rank) then t_start order. */
typedef struct {
    const char *group;
    int first, rank;
    double t;
    size_t idx;
} coll_entry;

static int coll_entry_cmp(const void *a, const void *b) {
    const coll_entry *x = a, *y = b;
    int c = strcmp(x->group, y->group);
    if (c) return c;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* How many members a group of this name has in the layout of h; -1 for names not known. */
static int group_size_of(const char *name, const trace_header *h) {
    if (strcmp(name, "tp") == 0) return h->tp;
    if (strcmp(name, "pp") == 0) return h->pp;
    if (strcmp(name, "dp") == 0) return h->dp;
    if (strcmp(name, "mp") == 0) return h->tp * h->pp;
    if (strcmp(name, "embedding") == 0) return h->pp == 1 ? 1 : 2;
    if (strcmp(name, "world") == 0) return h->world_size;
    return -1;
}

/* The k-th collective of a group instance on each member is one call (MPI runs the
 * collectives of a communicator in the same order on every member). Entries of one
 * instance are contiguous after sorting, rank by rank:
 *
 *   e:  [ rank 2: c0 c1 c2 | rank 3: c0 c1 c2 ]     members 2, count 3
 *   call k = { rank 2's c_k, rank 3's c_k }, entered at max(t_start + clock_offset)
 */
static void match_collectives(trace_run *r) {
    size_t n = 0;
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < r->ranks[k]->n; i++)
            n += r->ranks[k]->ev[i].kind == TRACE_COLLECTIVE;
    coll_entry *e = mallocCheck((n + 1) * sizeof *e);
    n = 0;
    for (int k = 0; k < r->nranks; k++) {
        trace_file *f = r->ranks[k];
        r->coll[k] = mallocCheck((f->n + 1) * sizeof(int));
        for (size_t i = 0; i < f->n; i++) {
            const trace_event *ev = &f->ev[i];
            r->coll[k][i] = -1;
            if (ev->kind == TRACE_COLLECTIVE && ev->group_first >= 0)
                e[n++] = (coll_entry){trace_file_string(f, ev->group), ev->group_first, k,
                                      ev->t_start, i};
        }
    }
    qsort(e, n, sizeof *e, coll_entry_cmp);
    r->coll_entered = mallocCheck((n + 1) * sizeof(double));
    r->coll_last = mallocCheck((n + 1) * sizeof(int));
    const trace_header *h0 = trace_file_header(r->ranks[0]);
    for (size_t a = 0; a < n;) {
        size_t b = a; /* e[a, b): one instance */
        while (b < n && strcmp(e[b].group, e[a].group) == 0 && e[b].first == e[a].first) b++;
        int members = 0;
        size_t count = 0;
        bool agree = true;
        for (size_t m = a; m < b;) { /* e[m, m2): one member's calls */
            size_t m2 = m;
            while (m2 < b && e[m2].rank == e[m].rank) m2++;
            if (members++ == 0) count = m2 - m;
            else if (m2 - m != count) agree = false;
            m = m2;
        }
        int want = group_size_of(e[a].group, h0);
        if (!agree || (want >= 0 && members != want)) {
            r->coll_unmatched += (int)(b - a);
            a = b;
            continue;
        }
        for (size_t k = 0; k < count; k++) {
            int id = r->ncolls++;
            r->coll_entered[id] = -INFINITY;
            r->coll_last[id] = -1;
            for (int m = 0; m < members; m++) {
                const coll_entry *x = &e[a + (size_t)m * count + k];
                double entered = x->t + trace_file_header(r->ranks[x->rank])->clock_offset;
                if (entered > r->coll_entered[id])
                    r->coll_entered[id] = entered, r->coll_last[id] = x->rank;
                r->coll[x->rank][x->idx] = id;
            }
            for (int m = 0; m < members; m++) { /* the last entry, on each member's own clock */
                const coll_entry *x = &e[a + (size_t)m * count + k];
                trace_event *ev = &r->ranks[x->rank]->ev[x->idx];
                double ready = r->coll_entered[id] -
                               trace_file_header(r->ranks[x->rank])->clock_offset;
                ev->t_ready = ready < ev->t_start ? ev->t_start
                              : ready > ev->t_end ? ev->t_end
                                                  : ready;
            }
        }
        a = b;
    }
    free(e);
}

trace_run *trace_run_read(const char *run_dir, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!is_dir(run_dir)) {
        snprintf(err, errlen, "run directory '%s' does not exist", run_dir);
        return NULL;
    }
    /* RUN_DIR/trace/rank<k>.trace, or RUN_DIR itself when it is the trace directory. */
    char tdir[4096 + 8], path[4096 + 64];
    snprintf(tdir, sizeof tdir, "%s/trace", run_dir);
    if (!is_dir(tdir)) snprintf(tdir, sizeof tdir, "%s", run_dir);
    snprintf(path, sizeof path, "%s/rank0.trace", tdir);
    if (!exists(path)) {
        snprintf(err, errlen,
                 "run directory '%s' has no trace/rank0.trace (was it trained with tracing on?)",
                 run_dir);
        return NULL;
    }
    trace_file *first = trace_file_read(path, err, errlen);
    if (!first) return NULL;
    const trace_header h0 = *trace_file_header(first);

    trace_run *r = callocCheck(1, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", run_dir);
    r->nranks = h0.world_size;
    r->ranks = callocCheck((size_t)r->nranks, sizeof *r->ranks);
    r->flow = callocCheck((size_t)r->nranks, sizeof *r->flow);
    r->coll = callocCheck((size_t)r->nranks, sizeof *r->coll);
    r->ranks[0] = first;
    for (int k = 1; k < r->nranks; k++) {
        snprintf(path, sizeof path, "%s/rank%d.trace", tdir, k);
        if (!exists(path)) {
            snprintf(err, errlen, "trace '%s' is missing (rank 0's header says world size %d)",
                     path, r->nranks);
            trace_run_free(r);
            return NULL;
        }
        r->ranks[k] = trace_file_read(path, err, errlen);
        if (!r->ranks[k]) {
            trace_run_free(r);
            return NULL;
        }
        const trace_header *h = trace_file_header(r->ranks[k]);
        if (h->rank != k || h->world_size != h0.world_size || h->tp != h0.tp || h->pp != h0.pp ||
            h->dp != h0.dp || h->vpp != h0.vpp || h->cp != h0.cp || h->ep != h0.ep ||
            strcmp(h->schedule, h0.schedule) != 0 || strcmp(h->run_id, h0.run_id) != 0) {
            snprintf(err, errlen,
                     "trace '%s' does not belong with rank0.trace (it says rank %d of %d, tp %d cp "
                     "%d pp %d dp %d ep %d vpp %d '%s', run '%s'; rank 0 says world %d, tp %d cp "
                     "%d pp %d dp %d ep %d vpp %d '%s', run '%s')",
                     path, h->rank, h->world_size, h->tp, h->cp, h->pp, h->dp, h->ep, h->vpp,
                     h->schedule, h->run_id, h0.world_size, h0.tp, h0.cp, h0.pp, h0.dp, h0.ep,
                     h0.vpp, h0.schedule, h0.run_id);
            trace_run_free(r);
            return NULL;
        }
    }
    match_p2p(r);
    match_collectives(r);
    return r;
}

void trace_run_free(trace_run *r) {
    if (!r) return;
    for (int k = 0; k < r->nranks; k++) {
        if (r->ranks) trace_file_free(r->ranks[k]);
        if (r->flow) free(r->flow[k]);
        if (r->coll) free(r->coll[k]);
    }
    free(r->ranks);
    free(r->flow);
    free(r->coll);
    free(r->coll_entered);
    free(r->coll_last);
    free(r);
}
