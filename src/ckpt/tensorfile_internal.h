/* tensorfile_internal.h — what the two halves of the tensor file module share, and nothing else.
 * tensorfile.c writes and reads; tensorfile_validate.c checks a file read into memory against
 * src/ckpt/FORMAT.md. Both need the section sizes, the little-endian field helpers and the
 * reader's struct.
 *
 * Not here: anything a caller of tensorfile.h needs; this header is private to src/ckpt:tensorfile.
 */
#ifndef TRIDENT_CKPT_TENSORFILE_INTERNAL_H
#define TRIDENT_CKPT_TENSORFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/ckpt/tensorfile.h"

#define HEADER_SIZE 64
#define ENTRY_SIZE 192 /* name[128] dtype ndim shape[4] offset nbytes crc reserved */
#define TRAILER_SIZE 16
#define END_MARK "TEND"

/* Little-endian fields. */
static inline void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static inline uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static inline uint64_t align_up(uint64_t x) { return (x + TF_ALIGN - 1) / TF_ALIGN * TF_ALIGN; }

static inline bool all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return false;
    return true;
}

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
bool tf_reader_bad(const tf_reader *r, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Checks r->buf[0..r->size) against every rule of FORMAT.md; on success fills r's tensor table,
 * name index and metadata and returns true, otherwise writes one message into err. */
bool tf_validate(tf_reader *r, char *err, size_t errlen);

#endif /* TRIDENT_CKPT_TENSORFILE_INTERNAL_H */
