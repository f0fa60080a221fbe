/* tensorfile.c — the writer, the validating reader and the metadata scan of tensorfile.h.
 * The byte layout is specified in src/ckpt/FORMAT.md; this file implements that page.
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

#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/crc32.h"

#define HEADER_SIZE 64
#define ENTRY_SIZE 192 /* name[128] dtype ndim shape[4] offset nbytes crc reserved */
#define TRAILER_SIZE 16
#define END_MARK "TEND"

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

/* ---- little-endian fields --------------------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint64_t align_up(uint64_t x) { return (x + TF_ALIGN - 1) / TF_ALIGN * TF_ALIGN; }

static bool all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return false;
    return true;
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

struct tf_reader {
    char path[4096];
    unsigned char *buf; /* the whole file, 64-byte aligned */
    size_t size;
    char *meta;                /* NUL-terminated copy of the metadata */
    tf_tensor *tensors;        /* (count,) in file order; names point into buf */
    const tf_tensor **by_name; /* (count,) the same tensors sorted by name, for lookup */
    size_t count;
};

/* Writes "checkpoint '<path>': <message>" into err and returns false. */
static bool bad(const tf_reader *r, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool bad(const tf_reader *r, char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return false;
    int n = snprintf(err, errlen, "checkpoint '%s': ", r->path);
    if (n < 0 || (size_t)n >= errlen) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* A name from a file that may be corrupt, made safe to print: control bytes as '?'. */
static const char *printable(const char *s, char out[TF_MAX_NAME + 1]) {
    size_t i = 0;
    for (; s[i] && i < TF_MAX_NAME; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    out[i] = 0;
    return out;
}

static bool read_whole_file(tf_reader *r, char *err, size_t errlen) {
    int fd = open(r->path, O_RDONLY);
    if (fd < 0) return bad(r, err, errlen, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return bad(r, err, errlen, "is not a regular file");
    }
    if ((unsigned long long)st.st_size > (unsigned long long)(SIZE_MAX - TF_ALIGN)) {
        close(fd);
        return bad(r, err, errlen, "is too large to read (%lld bytes)", (long long)st.st_size);
    }
    size_t size = (size_t)st.st_size;
    r->buf = aligned_alloc(TF_ALIGN, (size_t)align_up(size ? size : 1));
    if (!r->buf) {
        close(fd);
        return bad(r, err, errlen, "does not fit in memory (%zu bytes)", size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t k = read(fd, r->buf + got, size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    r->size = got; /* a file that shrank while read is judged by what was read */
    return true;
}

static int compare_by_name(const void *a, const void *b) {
    return strcmp((*(const tf_tensor *const *)a)->name, (*(const tf_tensor *const *)b)->name);
}

/* Checks every rule of FORMAT.md, in the order it lists them; fills r's table on success.
 * Kept as one function over 80 lines on purpose: it reads as FORMAT.md does, rule by rule. */
static bool validate(tf_reader *r, char *err, size_t errlen) {
    const unsigned char *b = r->buf;
    const uint64_t n = r->size;
    char pn[TF_MAX_NAME + 1];

    /* Header. */
    if (n < HEADER_SIZE)
        return bad(r, err, errlen, "truncated at byte %llu: the header alone needs %d bytes",
                   (unsigned long long)n, HEADER_SIZE);
    if (memcmp(b, TF_MAGIC, 8) != 0) {
        char m[8 * 4 + 1];
        for (int i = 0; i < 8; i++) {
            if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\') m[i] = (char)b[i];
            else m[i] = '.';
        }
        m[8] = 0;
        return bad(r, err, errlen,
                   "not a Trident tensor file (magic '%s' at byte 0, expected '%s')", m, TF_MAGIC);
    }
    uint32_t version = get_u32(b + 8);
    if (version != TF_VERSION)
        return bad(r, err, errlen,
                   "format version %u is not supported (this build reads version %u)", version,
                   TF_VERSION);
    if (crc32_update(0, b, 60) != get_u32(b + 60))
        return bad(r, err, errlen, "header checksum mismatch (bytes 0..59): the header is corrupt");
    if (get_u32(b + 12) != 0)
        return bad(r, err, errlen, "unknown flags 0x%x at byte 12", get_u32(b + 12));
    if (get_u32(b + 56) != 0)
        return bad(r, err, errlen, "reserved header bytes 56..59 are not zero");
    uint64_t header_len = get_u64(b + 16), meta_len = get_u64(b + 24), count = get_u64(b + 32);
    uint64_t table_offset = get_u64(b + 40), file_length = get_u64(b + 48);

    /* Length. From here on n == file_length >= 80, so every offset below is checked against n. */
    if (n < file_length)
        return bad(r, err, errlen, "truncated at byte %llu of expected %llu", (unsigned long long)n,
                   (unsigned long long)file_length);
    if (n > file_length)
        return bad(r, err, errlen,
                   "is %llu bytes long but its header says %llu (extra bytes at the end)",
                   (unsigned long long)n, (unsigned long long)file_length);
    if (n < HEADER_SIZE + TRAILER_SIZE)
        return bad(r, err, errlen,
                   "file length %llu at byte 48 leaves no room for the %d-byte trailer",
                   (unsigned long long)n, TRAILER_SIZE);
    const uint64_t trailer_at = n - TRAILER_SIZE;

    /* Layout of the sections. */
    if (meta_len > trailer_at - HEADER_SIZE)
        return bad(r, err, errlen, "metadata length %llu at byte 24 runs past the end of the file",
                   (unsigned long long)meta_len);
    if (header_len != align_up(HEADER_SIZE + meta_len))
        return bad(r, err, errlen,
                   "header length %llu at byte 16 should be %llu (64 + %llu bytes of metadata, "
                   "rounded up to 64)",
                   (unsigned long long)header_len,
                   (unsigned long long)align_up(HEADER_SIZE + meta_len),
                   (unsigned long long)meta_len);
    if (table_offset % TF_ALIGN != 0 || table_offset < header_len || table_offset > trailer_at)
        return bad(
            r, err, errlen,
            "table offset %llu at byte 40 is not a 64-byte aligned offset between %llu and %llu",
            (unsigned long long)table_offset, (unsigned long long)header_len,
            (unsigned long long)trailer_at);
    if (count > (trailer_at - table_offset) / ENTRY_SIZE ||
        table_offset + count * ENTRY_SIZE != trailer_at)
        return bad(
            r, err, errlen,
            "tensor count %llu at byte 32 does not fit: a table at byte %llu must end at the "
            "trailer (byte %llu) in %d-byte entries",
            (unsigned long long)count, (unsigned long long)table_offset,
            (unsigned long long)trailer_at, ENTRY_SIZE);

    /* Trailer. */
    if (memcmp(b + trailer_at + 12, END_MARK, 4) != 0)
        return bad(r, err, errlen, "the end mark '%s' is missing at byte %llu", END_MARK,
                   (unsigned long long)(trailer_at + 12));
    if (get_u64(b + trailer_at) != file_length)
        return bad(r, err, errlen,
                   "the trailer at byte %llu says the file is %llu bytes, the header %llu",
                   (unsigned long long)trailer_at, (unsigned long long)get_u64(b + trailer_at),
                   (unsigned long long)file_length);

    /* Metadata. */
    const unsigned char *nul = memchr(b + HEADER_SIZE, 0, (size_t)meta_len);
    if (nul)
        return bad(r, err, errlen, "the metadata holds a NUL byte at byte %llu",
                   (unsigned long long)(nul - b));
    if (!all_zero(b + HEADER_SIZE + meta_len, (size_t)(header_len - HEADER_SIZE - meta_len)))
        return bad(r, err, errlen, "padding bytes %llu..%llu after the metadata are not zero",
                   (unsigned long long)(HEADER_SIZE + meta_len),
                   (unsigned long long)(header_len - 1));

    /* Table: entries in file order, data packed from header_len, each at the next multiple of 64. */
    r->count = (size_t)count;
    r->tensors = callocCheck(r->count ? r->count : 1, sizeof *r->tensors);
    r->by_name = callocCheck(r->count ? r->count : 1, sizeof *r->by_name);
    uint64_t expected = header_len;
    for (size_t i = 0; i < r->count; i++) {
        const uint64_t at = table_offset + (uint64_t)i * ENTRY_SIZE;
        const unsigned char *e = b + at;
        tf_tensor *t = &r->tensors[i];
        const unsigned char *end = memchr(e, 0, TF_MAX_NAME + 1);
        if (!end)
            return bad(r, err, errlen,
                       "table entry %zu at byte %llu: the name has no NUL within %d bytes", i,
                       (unsigned long long)at, TF_MAX_NAME + 1);
        if (end == e)
            return bad(r, err, errlen, "table entry %zu at byte %llu: the name is empty", i,
                       (unsigned long long)at);
        t->name = (const char *)e;
        printable(t->name, pn);
        if (!all_zero(end, (size_t)(e + TF_MAX_NAME + 1 - end)))
            return bad(r, err, errlen,
                       "tensor '%s' (entry at byte %llu): bytes after the name are not zero", pn,
                       (unsigned long long)at);
        uint32_t dtype = get_u32(e + 128), ndim = get_u32(e + 132);
        if (tf_dtype_size((tf_dtype)dtype) == 0)
            return bad(r, err, errlen, "tensor '%s': unknown dtype code %u at byte %llu", pn, dtype,
                       (unsigned long long)(at + 128));
        if (ndim > TF_MAX_NDIM)
            return bad(r, err, errlen, "tensor '%s': %u dimensions at byte %llu (at most %d)", pn,
                       ndim, (unsigned long long)(at + 132), TF_MAX_NDIM);
        t->dtype = (tf_dtype)dtype;
        t->ndim = (int)ndim;
        /* numel is capped at n (no tensor can hold more elements than the file has bytes),
         * so nothing below can overflow. */
        uint64_t numel = 1;
        bool empty = false, too_big = false;
        for (int d = 0; d < TF_MAX_NDIM; d++) {
            int64_t s = (int64_t)get_u64(e + 136 + 8 * d);
            uint64_t s_at = at + 136 + 8 * (uint64_t)d;
            if (d >= t->ndim) {
                if (s != 0)
                    return bad(r, err, errlen,
                               "tensor '%s': unused dimension %d at byte %llu is not zero", pn, d,
                               (unsigned long long)s_at);
                continue;
            }
            if (s < 0)
                return bad(r, err, errlen, "tensor '%s': dimension %d is %lld at byte %llu", pn, d,
                           (long long)s, (unsigned long long)s_at);
            t->shape[d] = s;
            if (s == 0) empty = true;
            else if (numel > n / (uint64_t)s) too_big = true;
            else numel *= (uint64_t)s;
        }
        if (empty) numel = 0;
        else if (too_big)
            return bad(r, err, errlen,
                       "tensor '%s': its shape holds more elements than the file has bytes", pn);
        uint64_t nbytes = get_u64(e + 176), offset = get_u64(e + 168);
        if (nbytes != numel * tf_dtype_size(t->dtype))
            return bad(
                r, err, errlen,
                "tensor '%s': byte size %llu at byte %llu does not match its shape (%llu bytes)",
                pn, (unsigned long long)nbytes, (unsigned long long)(at + 176),
                (unsigned long long)(numel * tf_dtype_size(t->dtype)));
        if (offset != expected)
            return bad(
                r, err, errlen,
                "tensor '%s': data offset %llu at byte %llu should be %llu (data is packed in "
                "table order, each tensor at the next multiple of 64)",
                pn, (unsigned long long)offset, (unsigned long long)(at + 168),
                (unsigned long long)expected);
        if (nbytes > table_offset - offset)
            return bad(r, err, errlen,
                       "tensor '%s': data at bytes %llu..%llu runs into the table at byte %llu", pn,
                       (unsigned long long)offset, (unsigned long long)(offset + nbytes - 1),
                       (unsigned long long)table_offset);
        if (get_u32(e + 188) != 0)
            return bad(r, err, errlen, "tensor '%s': reserved bytes at byte %llu are not zero", pn,
                       (unsigned long long)(at + 188));
        expected = align_up(offset + nbytes);
        if (!all_zero(b + offset + nbytes, (size_t)(expected - offset - nbytes)))
            return bad(r, err, errlen, "padding bytes %llu..%llu after tensor '%s' are not zero",
                       (unsigned long long)(offset + nbytes), (unsigned long long)(expected - 1),
                       pn);
        t->numel = (size_t)numel;
        t->nbytes = (size_t)nbytes;
        t->data = b + offset;
        r->by_name[i] = t;
    }
    if (expected != table_offset)
        return bad(r, err, errlen,
                   "the table at byte %llu should start at byte %llu, after the last tensor",
                   (unsigned long long)table_offset, (unsigned long long)expected);

    qsort(r->by_name, r->count, sizeof *r->by_name, compare_by_name);
    for (size_t i = 1; i < r->count; i++)
        if (strcmp(r->by_name[i - 1]->name, r->by_name[i]->name) == 0)
            return bad(r, err, errlen, "two tensors are named '%s'",
                       printable(r->by_name[i]->name, pn));

    /* Checksums: each tensor first (names the damaged one), then the whole file. */
    for (size_t i = 0; i < r->count; i++) {
        const tf_tensor *t = &r->tensors[i];
        uint32_t stored = get_u32(b + table_offset + (uint64_t)i * ENTRY_SIZE + 184);
        if (crc32_update(0, t->data, t->nbytes) != stored)
            return bad(r, err, errlen, "tensor '%s' checksum mismatch (%zu bytes at byte %llu)",
                       printable(t->name, pn), t->nbytes,
                       (unsigned long long)((const unsigned char *)t->data - b));
    }
    uint32_t stored = get_u32(b + trailer_at + 8),
             computed = crc32_update(0, b, (size_t)trailer_at);
    if (computed != stored)
        return bad(r, err, errlen,
                   "file checksum mismatch: 0x%08x stored at byte %llu, 0x%08x computed over bytes "
                   "0..%llu",
                   stored, (unsigned long long)(trailer_at + 8), computed,
                   (unsigned long long)(trailer_at - 1));

    r->meta = mallocCheck((size_t)meta_len + 1);
    memcpy(r->meta, b + HEADER_SIZE, (size_t)meta_len);
    r->meta[meta_len] = 0;
    return true;
}

tf_reader *tf_reader_open(const char *path, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    tf_reader *r = callocCheck(1, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    if (!read_whole_file(r, err, errlen) || !validate(r, err, errlen)) {
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
