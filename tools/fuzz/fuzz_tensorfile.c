/* fuzz_tensorfile.c — libFuzzer harness for the tensor file reader (src/ckpt/tensorfile.c).
 *
 * Every input is a candidate file: tf_reader_open must either refuse it with a message or
 * return a reader whose tensors all lie inside the file. The same bytes, as text, also go
 * through the metadata scan (tf_meta_get_*), which must never read past the NUL.
 * Checksums would stop almost every mutation at the first check, so each input is tried
 * twice: as it is, and with every CRC the header and table point at recomputed (where they
 * point inside the input), which lets mutations of sizes, offsets and names reach the deeper
 * checks.
 * Not a unit test: run it with tools/fuzz/run.sh.
 */
#include <string.h>

#include "src/ckpt/tensorfile.h"
#include "src/core/crc32.h"
#include "tools/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes each table entry's data CRC, the header CRC, then the file CRC that covers both
 * (FORMAT.md), for the parts that lie inside the buffer. */
static void fix_checksums(uint8_t *b, size_t n) {
    if (n < 64) return;
    const uint64_t count = get_u64(b + 32), table = get_u64(b + 40), length = get_u64(b + 48);
    for (uint64_t i = 0; i < count && i < 4096; i++) {
        uint64_t e = table + 192 * i;
        if (table > n || e > n || n - e < 192) break;
        uint64_t off = get_u64(b + e + 168), nbytes = get_u64(b + e + 176);
        if (off <= n && nbytes <= n - off)
            put_u32(b + e + 184, crc32_update(0, b + off, (size_t)nbytes));
    }
    put_u32(b + 60, crc32_update(0, b, 60)); /* the header's CRC covers bytes 0..59 */
    if (length >= 16 && length <= n)
        put_u32(b + length - 8, crc32_update(0, b, (size_t)(length - 16)));
}

/* The reader, on bytes as a file. */
static void read_one(const uint8_t *data, size_t size) {
    char err[512];
    tf_reader *r = tf_reader_open(fuzz_write_input(data, size), err, sizeof err);
    if (!r) {
        if (!err[0]) abort(); /* a refusal always says why */
        return;
    }
    volatile uint32_t sum = 0;
    long long i;
    (void)tf_meta_get_int(tf_reader_meta(r), "iteration", &i);
    for (size_t k = 0; k < tf_reader_count(r); k++) {
        const tf_tensor *t = tf_reader_tensor(r, k);
        if (tf_reader_find(r, t->name) != t) abort(); /* names are unique */
        const unsigned char *p = t->data;
        for (size_t b = 0; b < t->nbytes; b++) sum += p[b]; /* every byte readable */
    }
    (void)sum;
    tf_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* The metadata scan, on the input as a NUL-terminated string. */
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    long long i;
    double d;
    char s[64];
    static const char *keys[] = {"iteration", "format", "tp", "loss_scale", "", "a"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        (void)tf_meta_get_int(text, keys[k], &i);
        (void)tf_meta_get_double(text, keys[k], &d);
        (void)tf_meta_get_string(text, keys[k], s, sizeof s);
        (void)tf_meta_get_string(text, keys[k], s, 1);
    }
    free(text);

    read_one(data, size);
    uint8_t *fixed = malloc(size ? size : 1);
    memcpy(fixed, data, size);
    fix_checksums(fixed, size);
    read_one(fixed, size);
    free(fixed);
    return 0;
}
