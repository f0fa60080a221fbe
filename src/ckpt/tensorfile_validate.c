/* tensorfile_validate.c — the validator of the tensor file reader: every rule of
 * src/ckpt/FORMAT.md, checked in the order that page lists them, on a file already in memory.
 * A file that passes has its tensor table, name index and metadata filled in; a file that fails
 * gives one message naming what is wrong and, where it helps, the byte offset.
 *
 * Not here: reading the file from disk and the accessors (tensorfile.c), writing (tensorfile.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/ckpt/tensorfile_internal.h"
#include "src/core/check.h"
#include "src/core/crc32.h"

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

static int compare_by_name(const void *a, const void *b) {
    return strcmp((*(const tf_tensor *const *)a)->name, (*(const tf_tensor *const *)b)->name);
}

/* Checks every rule of FORMAT.md, in the order it lists them; fills r's table on success.
 * Kept as one function over 80 lines on purpose: a table-like validator that follows
 * src/ckpt/FORMAT.md line by line, so it reads as that page does, rule by rule. */
bool tf_validate(tf_reader *r, char *err, size_t errlen) {
    const unsigned char *b = r->buf;
    const uint64_t n = r->size;
    char pn[TF_MAX_NAME + 1];

    /* Header. */
    if (n < HEADER_SIZE)
        return tf_reader_bad(r, err, errlen,
                             "truncated at byte %llu: the header alone needs %d bytes",
                             (unsigned long long)n, HEADER_SIZE);
    if (memcmp(b, TF_MAGIC, 8) != 0) {
        char m[8 * 4 + 1];
        for (int i = 0; i < 8; i++) {
            if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\') m[i] = (char)b[i];
            else m[i] = '.';
        }
        m[8] = 0;
        return tf_reader_bad(r, err, errlen,
                             "not a Trident tensor file (magic '%s' at byte 0, expected '%s')", m,
                             TF_MAGIC);
    }
    uint32_t version = get_u32(b + 8);
    if (version != TF_VERSION)
        return tf_reader_bad(r, err, errlen,
                             "format version %u is not supported (this build reads version %u)",
                             version, TF_VERSION);
    if (crc32_update(0, b, 60) != get_u32(b + 60))
        return tf_reader_bad(r, err, errlen,
                             "header checksum mismatch (bytes 0..59): the header is corrupt");
    if (get_u32(b + 12) != 0)
        return tf_reader_bad(r, err, errlen, "unknown flags 0x%x at byte 12", get_u32(b + 12));
    if (get_u32(b + 56) != 0)
        return tf_reader_bad(r, err, errlen, "reserved header bytes 56..59 are not zero");
    uint64_t header_len = get_u64(b + 16), meta_len = get_u64(b + 24), count = get_u64(b + 32);
    uint64_t table_offset = get_u64(b + 40), file_length = get_u64(b + 48);

    /* Length. From here on n == file_length >= 80, so every offset below is checked against n. */
    if (n < file_length)
        return tf_reader_bad(r, err, errlen, "truncated at byte %llu of expected %llu",
                             (unsigned long long)n, (unsigned long long)file_length);
    if (n > file_length)
        return tf_reader_bad(r, err, errlen,
                             "is %llu bytes long but its header says %llu (extra bytes at the end)",
                             (unsigned long long)n, (unsigned long long)file_length);
    if (n < HEADER_SIZE + TRAILER_SIZE)
        return tf_reader_bad(r, err, errlen,
                             "file length %llu at byte 48 leaves no room for the %d-byte trailer",
                             (unsigned long long)n, TRAILER_SIZE);
    const uint64_t trailer_at = n - TRAILER_SIZE;

    /* Layout of the sections. */
    if (meta_len > trailer_at - HEADER_SIZE)
        return tf_reader_bad(r, err, errlen,
                             "metadata length %llu at byte 24 runs past the end of the file",
                             (unsigned long long)meta_len);
    if (header_len != align_up(HEADER_SIZE + meta_len))
        return tf_reader_bad(
            r, err, errlen,
            "header length %llu at byte 16 should be %llu (64 + %llu bytes of metadata, "
            "rounded up to 64)",
            (unsigned long long)header_len, (unsigned long long)align_up(HEADER_SIZE + meta_len),
            (unsigned long long)meta_len);
    if (table_offset % TF_ALIGN != 0 || table_offset < header_len || table_offset > trailer_at)
        return tf_reader_bad(
            r, err, errlen,
            "table offset %llu at byte 40 is not a 64-byte aligned offset between %llu and %llu",
            (unsigned long long)table_offset, (unsigned long long)header_len,
            (unsigned long long)trailer_at);
    if (count > (trailer_at - table_offset) / ENTRY_SIZE ||
        table_offset + count * ENTRY_SIZE != trailer_at)
        return tf_reader_bad(
            r, err, errlen,
            "tensor count %llu at byte 32 does not fit: a table at byte %llu must end at the "
            "trailer (byte %llu) in %d-byte entries",
            (unsigned long long)count, (unsigned long long)table_offset,
            (unsigned long long)trailer_at, ENTRY_SIZE);

    /* Trailer. */
    if (memcmp(b + trailer_at + 12, END_MARK, 4) != 0)
        return tf_reader_bad(r, err, errlen, "the end mark '%s' is missing at byte %llu", END_MARK,
                             (unsigned long long)(trailer_at + 12));
    if (get_u64(b + trailer_at) != file_length)
        return tf_reader_bad(
            r, err, errlen, "the trailer at byte %llu says the file is %llu bytes, the header %llu",
            (unsigned long long)trailer_at, (unsigned long long)get_u64(b + trailer_at),
            (unsigned long long)file_length);

    /* Metadata. */
    const unsigned char *nul = memchr(b + HEADER_SIZE, 0, (size_t)meta_len);
    if (nul)
        return tf_reader_bad(r, err, errlen, "the metadata holds a NUL byte at byte %llu",
                             (unsigned long long)(nul - b));
    if (!all_zero(b + HEADER_SIZE + meta_len, (size_t)(header_len - HEADER_SIZE - meta_len)))
        return tf_reader_bad(
            r, err, errlen, "padding bytes %llu..%llu after the metadata are not zero",
            (unsigned long long)(HEADER_SIZE + meta_len), (unsigned long long)(header_len - 1));

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
            return tf_reader_bad(
                r, err, errlen, "table entry %zu at byte %llu: the name has no NUL within %d bytes",
                i, (unsigned long long)at, TF_MAX_NAME + 1);
        if (end == e)
            return tf_reader_bad(r, err, errlen, "table entry %zu at byte %llu: the name is empty",
                                 i, (unsigned long long)at);
        t->name = (const char *)e;
        printable(t->name, pn);
        if (!all_zero(end, (size_t)(e + TF_MAX_NAME + 1 - end)))
            return tf_reader_bad(
                r, err, errlen,
                "tensor '%s' (entry at byte %llu): bytes after the name are not zero", pn,
                (unsigned long long)at);
        uint32_t dtype = get_u32(e + 128), ndim = get_u32(e + 132);
        if (tf_dtype_size((tf_dtype)dtype) == 0)
            return tf_reader_bad(r, err, errlen, "tensor '%s': unknown dtype code %u at byte %llu",
                                 pn, dtype, (unsigned long long)(at + 128));
        if (ndim > TF_MAX_NDIM)
            return tf_reader_bad(r, err, errlen,
                                 "tensor '%s': %u dimensions at byte %llu (at most %d)", pn, ndim,
                                 (unsigned long long)(at + 132), TF_MAX_NDIM);
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
                    return tf_reader_bad(
                        r, err, errlen, "tensor '%s': unused dimension %d at byte %llu is not zero",
                        pn, d, (unsigned long long)s_at);
                continue;
            }
            if (s < 0)
                return tf_reader_bad(r, err, errlen,
                                     "tensor '%s': dimension %d is %lld at byte %llu", pn, d,
                                     (long long)s, (unsigned long long)s_at);
            t->shape[d] = s;
            if (s == 0) empty = true;
            else if (numel > n / (uint64_t)s) too_big = true;
            else numel *= (uint64_t)s;
        }
        if (empty) numel = 0;
        else if (too_big)
            return tf_reader_bad(
                r, err, errlen,
                "tensor '%s': its shape holds more elements than the file has bytes", pn);
        uint64_t nbytes = get_u64(e + 176), offset = get_u64(e + 168);
        if (nbytes != numel * tf_dtype_size(t->dtype))
            return tf_reader_bad(
                r, err, errlen,
                "tensor '%s': byte size %llu at byte %llu does not match its shape (%llu bytes)",
                pn, (unsigned long long)nbytes, (unsigned long long)(at + 176),
                (unsigned long long)(numel * tf_dtype_size(t->dtype)));
        if (offset != expected)
            return tf_reader_bad(
                r, err, errlen,
                "tensor '%s': data offset %llu at byte %llu should be %llu (data is packed in "
                "table order, each tensor at the next multiple of 64)",
                pn, (unsigned long long)offset, (unsigned long long)(at + 168),
                (unsigned long long)expected);
        if (nbytes > table_offset - offset)
            return tf_reader_bad(
                r, err, errlen,
                "tensor '%s': data at bytes %llu..%llu runs into the table at byte %llu", pn,
                (unsigned long long)offset, (unsigned long long)(offset + nbytes - 1),
                (unsigned long long)table_offset);
        if (get_u32(e + 188) != 0)
            return tf_reader_bad(r, err, errlen,
                                 "tensor '%s': reserved bytes at byte %llu are not zero", pn,
                                 (unsigned long long)(at + 188));
        expected = align_up(offset + nbytes);
        if (!all_zero(b + offset + nbytes, (size_t)(expected - offset - nbytes)))
            return tf_reader_bad(
                r, err, errlen, "padding bytes %llu..%llu after tensor '%s' are not zero",
                (unsigned long long)(offset + nbytes), (unsigned long long)(expected - 1), pn);
        t->numel = (size_t)numel;
        t->nbytes = (size_t)nbytes;
        t->data = b + offset;
        r->by_name[i] = t;
    }
    if (expected != table_offset)
        return tf_reader_bad(
            r, err, errlen,
            "the table at byte %llu should start at byte %llu, after the last tensor",
            (unsigned long long)table_offset, (unsigned long long)expected);

    qsort(r->by_name, r->count, sizeof *r->by_name, compare_by_name);
    for (size_t i = 1; i < r->count; i++)
        if (strcmp(r->by_name[i - 1]->name, r->by_name[i]->name) == 0)
            return tf_reader_bad(r, err, errlen, "two tensors are named '%s'",
                                 printable(r->by_name[i]->name, pn));

    /* Checksums: each tensor first (names the damaged one), then the whole file. */
    for (size_t i = 0; i < r->count; i++) {
        const tf_tensor *t = &r->tensors[i];
        uint32_t stored = get_u32(b + table_offset + (uint64_t)i * ENTRY_SIZE + 184);
        if (crc32_update(0, t->data, t->nbytes) != stored)
            return tf_reader_bad(r, err, errlen,
                                 "tensor '%s' checksum mismatch (%zu bytes at byte %llu)",
                                 printable(t->name, pn), t->nbytes,
                                 (unsigned long long)((const unsigned char *)t->data - b));
    }
    uint32_t stored = get_u32(b + trailer_at + 8),
             computed = crc32_update(0, b, (size_t)trailer_at);
    if (computed != stored)
        return tf_reader_bad(
            r, err, errlen,
            "file checksum mismatch: 0x%08x stored at byte %llu, 0x%08x computed over bytes "
            "0..%llu",
            stored, (unsigned long long)(trailer_at + 8), computed,
            (unsigned long long)(trailer_at - 1));

    r->meta = mallocCheck((size_t)meta_len + 1);
    memcpy(r->meta, b + HEADER_SIZE, (size_t)meta_len);
    r->meta[meta_len] = 0;
    return true;
}
