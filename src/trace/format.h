/* format.h — the byte layout of a trace file, shared by the writer (trace.c) and the reader
 * (trace_read.c). Internal to src/trace; the layout is documented in FORMAT.md.
 *
 *   magic "TRDTRACE" | version u32 | header | config | strings | counts | events | crc32
 *
 * The writer writes TRACE_VERSION; the reader reads it and versions 2 and 3 (FORMAT.md, "Older
 * versions").
 *
 * Every integer is little-endian and written byte by byte, so files are the same on every host.
 */
#ifndef TRIDENT_TRACE_FORMAT_H
#define TRIDENT_TRACE_FORMAT_H

#include <stdint.h>
#include <string.h>

#define TRACE_MAGIC "TRDTRACE" /* 8 bytes, no NUL */
enum {
    TRACE_VERSION = 4,
    /* version 2's header: ten i32, schedule[16], clock_offset f64, clock_uncertainty f64,
     * run_id[32] (its dp counted dp · cp ranks, and it had no ep) */
    TRACE_HEADER_V2_BYTES = 10 * 4 + 16 + 8 + 8 + 32,
    /* version 3 appends four i32: cp, ep, cp_rank, ep_rank (dp is the data-parallel size) */
    TRACE_HEADER_V3_BYTES = TRACE_HEADER_V2_BYTES + 4 * 4,
    /* version 4 appends host[32]: the recording rank's host name */
    TRACE_HEADER_BYTES = TRACE_HEADER_V3_BYTES + 32,
    TRACE_EVENT_BYTES = 80,   /* one fixed-size event record */
    TRACE_NO_STRING = 0xFFFF, /* string id meaning "none" */
};

/* What a reader accepts (FORMAT.md, "Validation by the reader"): files up to 1 GiB (13
 * million events), layouts up to TRACE_MAX_WORLD ranks (trident groups' bound), and the
 * schedule names of src/pp/schedule.h. */
#define TRACE_MAX_FILE_BYTES ((size_t)1 << 30)
enum { TRACE_MAX_WORLD = 1 << 20 };
/* Times are seconds of CLOCK_MONOTONIC (since boot): 1e9 s is 31 years; beyond it a file is
 * forged or corrupt, and its microseconds would not print as the short numbers JSON wants. */
#define TRACE_MAX_SECONDS 1e9
static const char *const k_trace_schedules[] = {"gpipe", "1f1b", "interleaved",
                                                "zb-h1", "zbv",  "dualpipev"};

/* Offsets inside one 64-byte event record. */
enum {
    EV_KIND = 0,         /* u8  */
    EV_FLAGS = 1,        /* u8  */
    EV_OP = 2,           /* u16 string id */
    EV_GROUP = 4,        /* u16 string id */
    EV_LABEL = 6,        /* u16 string id */
    EV_STEP = 8,         /* i32 */
    EV_MB = 12,          /* i32 */
    EV_CHUNK = 16,       /* i32 */
    EV_PEER = 20,        /* i32 */
    EV_TAG = 24,         /* i32 */
    EV_LAYER = 28,       /* i32 */
    EV_BYTES = 32,       /* u64 */
    EV_START = 40,       /* f64 */
    EV_READY = 48,       /* f64 */
    EV_END = 56,         /* f64 */
    EV_CPU = 64,         /* f64 */
    EV_GROUP_FIRST = 72, /* i32 */
    EV_PAD = 76,         /* u32 zero */
};

static inline void le_put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void le_put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void le_put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void le_putf64(uint8_t *p, double d) {
    uint64_t v;
    memcpy(&v, &d, 8);
    le_put64(p, v);
}
static inline uint16_t le_get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t le_get32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static inline uint64_t le_get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static inline double le_getf64(const uint8_t *p) {
    uint64_t v = le_get64(p);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

#endif /* TRIDENT_TRACE_FORMAT_H */
