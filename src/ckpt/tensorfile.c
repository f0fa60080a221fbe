/* tensorfile.c — the writer, the reader and the metadata scan of tensorfile.h.
 * The byte layout is specified in src/ckpt/FORMAT.md; this file writes it, and the reader
 * hands what it read to tf_validate() (tensorfile_validate.c), which checks that page rule by rule.
 *
 *   byte 0            64               header_len            table_offset         file_length
 *        | header     | metadata, 0-pad | t0 |pad| t1 |pad|...| table (192 B each) | trailer 16 B |
 *
 * Not here: what the tensors mean, and sharding (each rank writes its own file).
 */
#include "src/ckpt/tensorfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/ckpt/tensorfile_internal.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/file_read.h"
#include "src/core/crc32.h"

size_t tf_dtype_size(tf_dtype dtype) {
    switch (dtype) {
    case TF_F32: return 4;
    case TF_BF16: return 2;
    case TF_F16: return 2;
    case TF_I32: return 4;
    case TF_I64: return 8;
    case TF_U8: return 1;
    }
    return 0;
}

const char *tf_dtype_name(tf_dtype dtype) {
    switch (dtype) {
    case TF_F32: return "f32";
    case TF_BF16: return "bf16";
    case TF_F16: return "f16";
    case TF_I32: return "i32";
    case TF_I64: return "i64";
    case TF_U8: return "u8";
    }
    return "?";
}

/* One table entry, as the writer builds it and as FORMAT.md lays it out. */
typedef struct {
    char name[TF_MAX_NAME + 1];
    uint32_t dtype, ndim;
    int64_t shape[TF_MAX_NDIM];
    uint64_t offset, nbytes;
    uint32_t crc;
} tf_entry;

static void encode_entry(unsigned char e[ENTRY_SIZE], const tf_entry *t) {
    memset(e, 0, ENTRY_SIZE);
    memcpy(e, t->name, strlen(t->name));
    put_u32(e + 128, t->dtype);
    put_u32(e + 132, t->ndim);
    for (int d = 0; d < TF_MAX_NDIM; d++) put_u64(e + 136 + 8 * d, (uint64_t)t->shape[d]);
    put_u64(e + 168, t->offset);
    put_u64(e + 176, t->nbytes);
    put_u32(e + 184, t->crc);
}

/* ---- writer ----------------------------------------------------------------------------- */

struct tf_writer {
    atomic_file af;
    uint64_t pos; /* bytes written so far: the temporary's length */
    uint64_t meta_len, header_len;
    tf_entry *entries; /* the table, written at commit */
    size_t count, cap;
};

/* Removes the temporary, then dies naming the target. */
static void writer_fail(tf_writer *w, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));
static void writer_fail(tf_writer *w, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    atomic_file_abort(&w->af);
    die("checkpoint '%s': %s", w->af.path, msg);
}

static void write_bytes(tf_writer *w, const void *p, size_t n) {
    if (n && fwrite(p, 1, n, w->af.f) != n) writer_fail(w, "write failed: %s", strerror(errno));
    w->pos += n;
}

static void write_zeros_to_alignment(tf_writer *w) {
    static const unsigned char zeros[TF_ALIGN];
    write_bytes(w, zeros, (size_t)(align_up(w->pos) - w->pos));
}

tf_writer *tf_writer_open(const char *path, const char *meta_json) {
    tf_writer *w = callocCheck(1, sizeof *w);
    atomic_file_open(&w->af, path);
    if (!meta_json) meta_json = "";
    unsigned char placeholder[HEADER_SIZE] = {0}; /* the real header is written at commit */
    write_bytes(w, placeholder, HEADER_SIZE);
    w->meta_len = strlen(meta_json);
    write_bytes(w, meta_json, (size_t)w->meta_len);
    write_zeros_to_alignment(w);
    w->header_len = w->pos;
    return w;
}

void tf_writer_add(tf_writer *w, const char *name, tf_dtype dtype, int ndim, const int64_t *shape,
                   const void *data) {
    size_t len = name ? strlen(name) : 0;
    if (len < 1 || len > TF_MAX_NAME)
        writer_fail(w, "tensor name '%s' must be 1 to %d bytes long", name ? name : "(null)",
                    TF_MAX_NAME);
    for (size_t i = 0; i < w->count; i++) /* quadratic, but files hold hundreds of tensors */
        if (strcmp(w->entries[i].name, name) == 0) writer_fail(w, "tensor '%s' added twice", name);
    if (tf_dtype_size(dtype) == 0)
        writer_fail(w, "tensor '%s': unknown dtype code %d", name, (int)dtype);
    if (ndim < 0 || ndim > TF_MAX_NDIM)
        writer_fail(w, "tensor '%s': %d dimensions, the format allows 0 to %d", name, ndim,
                    TF_MAX_NDIM);
    tf_entry t = {0};
    memcpy(t.name, name, len + 1);
    t.dtype = (uint32_t)dtype;
    t.ndim = (uint32_t)ndim;
    uint64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            writer_fail(w, "tensor '%s': dimension %d is %lld", name, d, (long long)shape[d]);
        t.shape[d] = shape[d];
        if (shape[d] && numel > (SIZE_MAX / 8) / (uint64_t)shape[d])
            writer_fail(w, "tensor '%s': shape is too large to address", name);
        numel *= (uint64_t)shape[d];
    }
    t.nbytes = numel * tf_dtype_size(dtype);
    if (t.nbytes && !data) writer_fail(w, "tensor '%s': data is NULL", name);

    write_zeros_to_alignment(w);
    t.offset = w->pos;
    t.crc = crc32_update(0, data, (size_t)t.nbytes);
    write_bytes(w, data, (size_t)t.nbytes);

    if (w->count == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        tf_entry *grown = realloc(w->entries, w->cap * sizeof *grown);
        if (!grown) writer_fail(w, "out of memory for the tensor table");
        w->entries = grown;
    }
    w->entries[w->count++] = t;
}

/* CRC-32 of the temporary's first n bytes, read back from disk (the header is written last,
 * so the checksum of everything before the trailer cannot be accumulated on the way out). */
static uint32_t crc_of_written_prefix(tf_writer *w, uint64_t n) {
    if (fflush(w->af.f) != 0) writer_fail(w, "write failed: %s", strerror(errno));
    FILE *f = fopen(w->af.tmp, "rb");
    if (!f) writer_fail(w, "cannot read back '%s': %s", w->af.tmp, strerror(errno));
    const size_t chunk = 1 << 20;
    unsigned char *buf = mallocCheck(chunk);
    uint32_t crc = 0;
    while (n > 0) {
        size_t want = n < chunk ? (size_t)n : chunk;
        if (fread(buf, 1, want, f) != want) {
            fclose(f);
            free(buf);
            writer_fail(w, "cannot read back '%s'", w->af.tmp);
        }
        crc = crc32_update(crc, buf, want);
        n -= want;
    }
    fclose(f);
    free(buf);
    return crc;
}

void tf_writer_commit(tf_writer *w) {
    write_zeros_to_alignment(w);
    uint64_t table_offset = w->pos;
    for (size_t i = 0; i < w->count; i++) {
        unsigned char e[ENTRY_SIZE];
        encode_entry(e, &w->entries[i]);
        write_bytes(w, e, ENTRY_SIZE);
    }
    uint64_t file_length = w->pos + TRAILER_SIZE;

    unsigned char h[HEADER_SIZE] = {0};
    memcpy(h, TF_MAGIC, 8);
    put_u32(h + 8, TF_VERSION);
    put_u32(h + 12, 0); /* flags */
    put_u64(h + 16, w->header_len);
    put_u64(h + 24, w->meta_len);
    put_u64(h + 32, (uint64_t)w->count);
    put_u64(h + 40, table_offset);
    put_u64(h + 48, file_length);
    put_u32(h + 56, 0); /* reserved */
    put_u32(h + 60, crc32_update(0, h, 60));
    if (fseek(w->af.f, 0, SEEK_SET) != 0 || fwrite(h, 1, HEADER_SIZE, w->af.f) != HEADER_SIZE)
        writer_fail(w, "write failed: %s", strerror(errno));

    unsigned char t[TRAILER_SIZE];
    put_u64(t, file_length);
    put_u32(t + 8, crc_of_written_prefix(w, file_length - TRAILER_SIZE));
    memcpy(t + 12, END_MARK, 4);
    if (fseek(w->af.f, 0, SEEK_END) != 0) writer_fail(w, "seek failed: %s", strerror(errno));
    write_bytes(w, t, TRAILER_SIZE);

    atomic_file_commit(&w->af);
    free(w->entries);
    free(w);
}

void tf_writer_abort(tf_writer *w) {
    if (!w) return;
    atomic_file_abort(&w->af);
    free(w->entries);
    free(w);
}

/* ---- reader ----------------------------------------------------------------------------- */

bool tf_reader_bad(const tf_reader *r, char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return false;
    int n = snprintf(err, errlen, "checkpoint '%s': ", r->path);
    if (n < 0 || (size_t)n >= errlen) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* The whole file into r->buf (64-byte aligned, so tensors are viewed in place). */
static bool read_whole_file(tf_reader *r, char *err, size_t errlen) {
    char why[256];
    r->buf = file_read_bounded(r->path, SIZE_MAX - TF_ALIGN, &r->size, NULL, why, sizeof why);
    if (!r->buf) return tf_reader_bad(r, err, errlen, "%s", why);
    return true;
}

tf_reader *tf_reader_open(const char *path, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    tf_reader *r = callocCheck(1, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    if (!read_whole_file(r, err, errlen) || !tf_validate(r, err, errlen)) {
        tf_reader_close(r);
        return NULL;
    }
    return r;
}

void tf_reader_close(tf_reader *r) {
    if (!r) return;
    free(r->buf);
    free(r->meta);
    free(r->tensors);
    free(r->by_name);
    free(r);
}

const char *tf_reader_meta(const tf_reader *r) { return r->meta; }

size_t tf_reader_count(const tf_reader *r) { return r->count; }

const tf_tensor *tf_reader_tensor(const tf_reader *r, size_t i) {
    CHECK(i < r->count, "tensor index past tf_reader_count()");
    return &r->tensors[i];
}

const tf_tensor *tf_reader_find(const tf_reader *r, const char *name) {
    size_t lo = 0, hi = r->count; /* binary search over the names in sorted order */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->by_name[mid]->name, name);
        if (c == 0) return r->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* "f32 (256, 64)" into out. */
static void format_type(char *out, size_t cap, tf_dtype dtype, int ndim, const int64_t *shape) {
    int n = snprintf(out, cap, "%s (", tf_dtype_name(dtype));
    for (int d = 0; d < ndim && n >= 0 && (size_t)n < cap; d++)
        n += snprintf(out + n, cap - (size_t)n, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (n >= 0 && (size_t)n < cap) snprintf(out + n, cap - (size_t)n, ")");
}

const void *tf_reader_require(const tf_reader *r, const char *name, tf_dtype dtype, int ndim,
                              const int64_t *shape) {
    const tf_tensor *t = tf_reader_find(r, name);
    if (!t) die("checkpoint '%s': has no tensor '%s'", r->path, name);
    bool same = t->dtype == dtype && t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!same) {
        char have[128], want[128];
        format_type(have, sizeof have, t->dtype, t->ndim, t->shape);
        format_type(want, sizeof want, dtype, ndim, shape);
        die("checkpoint '%s': tensor '%s' is %s but %s was expected", r->path, name, have, want);
    }
    return t->data;
}

/* ---- metadata scan ----------------------------------------------------------------------
 * A forward scan over one JSON object: keys are decoded and compared, values skipped by
 * matching brackets outside strings. No recursion, so deep nesting cannot exhaust the stack. */

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

static int hex4(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int x = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (x < 0) return -1;
        v = v * 16 + x;
    }
    return v;
}

/* Decodes the JSON string at p (which is at its opening quote) into out[0..cap) when out is
 * not NULL. Returns the position after the closing quote, or NULL if the string is malformed
 * or (with out) does not fit. */
static const char *scan_string(const char *p, char *out, size_t cap) {
    if (*p != '"') return NULL;
    p++;
    size_t n = 0;
    for (;;) {
        unsigned char c = (unsigned char)*p;
        uint32_t cp;
        if (c == 0 || c < 0x20) return NULL;
        if (c == '"') break;
        if (c != '\\') {
            if (out && n + 1 >= cap) return NULL;
            if (out) out[n] = (char)c;
            n++;
            p++;
            continue;
        }
        p++;
        switch (*p) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u': {
            int hi = hex4(p + 1);
            if (hi < 0) return NULL;
            p += 4;
            cp = (uint32_t)hi;
            if (hi >= 0xD800 && hi < 0xDC00) { /* a surrogate pair: \uD83D\uDE00 */
                if (p[1] != '\\' || p[2] != 'u') return NULL;
                int lo = hex4(p + 3);
                if (lo < 0xDC00 || lo >= 0xE000) return NULL;
                cp = 0x10000 + (((uint32_t)hi - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
                p += 6;
            } else if (hi >= 0xDC00 && hi < 0xE000) {
                return NULL;
            }
            break;
        }
        default: return NULL;
        }
        p++;
        /* UTF-8 encode cp. */
        unsigned char u[4];
        size_t k;
        if (cp < 0x80) {
            u[0] = (unsigned char)cp;
            k = 1;
        } else if (cp < 0x800) {
            u[0] = (unsigned char)(0xC0 | (cp >> 6));
            u[1] = (unsigned char)(0x80 | (cp & 0x3F));
            k = 2;
        } else if (cp < 0x10000) {
            u[0] = (unsigned char)(0xE0 | (cp >> 12));
            u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[2] = (unsigned char)(0x80 | (cp & 0x3F));
            k = 3;
        } else {
            u[0] = (unsigned char)(0xF0 | (cp >> 18));
            u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[3] = (unsigned char)(0x80 | (cp & 0x3F));
            k = 4;
        }
        if (out && n + k >= cap) return NULL;
        if (out) memcpy(out + n, u, k);
        n += k;
    }
    if (out) out[n] = 0;
    return p + 1;
}

/* Skips one value (string, number, literal, or a bracketed object/array); NULL if malformed. */
static const char *skip_value(const char *p) {
    if (*p == '"') return scan_string(p, NULL, 0);
    if (*p != '{' && *p != '[') {
        const char *s = p;
        while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' && *p != '\n' &&
               *p != '\r')
            p++;
        return p > s ? p : NULL;
    }
    size_t depth = 0;
    do {
        if (*p == 0) return NULL;
        if (*p == '"') {
            p = scan_string(p, NULL, 0);
            if (!p) return NULL;
            continue;
        }
        if (*p == '{' || *p == '[') depth++;
        else if (*p == '}' || *p == ']') depth--;
        p++;
    } while (depth > 0);
    return p;
}

/* The start of the value of top-level `key` in the object `json`, or NULL. */
static const char *find_value(const char *json, const char *key) {
    if (!json || !key) return NULL;
    const char *p = skip_ws(json);
    if (*p != '{') return NULL;
    p = skip_ws(p + 1);
    if (*p == '}') return NULL;
    char name[256];
    for (;;) {
        const char *after = scan_string(p, name, sizeof name);
        bool fits = after != NULL;
        if (!after) after = scan_string(p, NULL, 0); /* a key too long to be ours */
        if (!after) return NULL;
        p = skip_ws(after);
        if (*p != ':') return NULL;
        p = skip_ws(p + 1);
        if (fits && strcmp(name, key) == 0) return p;
        p = skip_value(p);
        if (!p) return NULL;
        p = skip_ws(p);
        if (*p != ',') return NULL;
        p = skip_ws(p + 1);
    }
}

static bool ends_value(char c) {
    return c == 0 || c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' ||
           c == '\r';
}

bool tf_meta_get_int(const char *json, const char *key, long long *out) {
    const char *p = find_value(json, key);
    if (!p || !(*p == '-' || (*p >= '0' && *p <= '9'))) return false;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (errno == ERANGE || end == p || !ends_value(*end)) return false;
    *out = v;
    return true;
}

bool tf_meta_get_double(const char *json, const char *key, double *out) {
    const char *p = find_value(json, key);
    if (!p || !(*p == '-' || (*p >= '0' && *p <= '9'))) return false;
    char *end;
    double v = strtod(p, &end);
    if (end == p || !ends_value(*end)) return false;
    *out = v;
    return true;
}

bool tf_meta_get_string(const char *json, const char *key, char *out, size_t cap) {
    const char *p = find_value(json, key);
    if (!p || *p != '"' || cap == 0) return false;
    return scan_string(p, out, cap) != NULL;
}

bool tf_meta_has(const char *json, const char *key) { return find_value(json, key) != NULL; }

/* Each top-level key once, none escaped: the keys seen so far are kept as offsets into json
 * (at most TF_META_MAX_KEYS of them; metadata is a small flat object). */
enum { TF_META_MAX_KEYS = 256 };

bool tf_meta_check(const char *json, char *err, size_t errlen) {
    const char *p = skip_ws(json ? json : "");
    if (*p != '{') return snprintf(err, errlen, "is not a JSON object"), false;
    p = skip_ws(p + 1);
    if (*p == '}') return true;
    const char *keys[TF_META_MAX_KEYS];
    size_t lens[TF_META_MAX_KEYS], n = 0;
    for (;;) {
        const char *after = scan_string(p, NULL, 0);
        if (!after) return snprintf(err, errlen, "is not a JSON object (a malformed key)"), false;
        const char *k = p + 1;
        const size_t len = (size_t)(after - 1 - k);
        if (memchr(k, '\\', len))
            return snprintf(err, errlen,
                            "has the key \"%.*s\" written with an escape (keys are "
                            "written plainly)",
                            (int)(len < 64 ? len : 64), k),
                   false;
        for (size_t i = 0; i < n; i++)
            if (lens[i] == len && memcmp(keys[i], k, len) == 0)
                return snprintf(err, errlen, "has the key \"%.*s\" twice (each key once)",
                                (int)(len < 64 ? len : 64), k),
                       false;
        if (n == TF_META_MAX_KEYS)
            return snprintf(err, errlen, "has more than %d keys", TF_META_MAX_KEYS), false;
        keys[n] = k, lens[n++] = len;
        p = skip_ws(after);
        if (*p != ':') return snprintf(err, errlen, "is not a JSON object (no ':')"), false;
        p = skip_value(skip_ws(p + 1));
        if (!p) return snprintf(err, errlen, "is not a JSON object (a malformed value)"), false;
        p = skip_ws(p);
        if (*p == '}') return true;
        if (*p != ',') return snprintf(err, errlen, "is not a JSON object (no ',')"), false;
        p = skip_ws(p + 1);
    }
}
