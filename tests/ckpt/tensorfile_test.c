/* tensorfile_test.c — the tensor container: round trips, metadata lookups, and refusal of every
 * kind of damage (each truncation, each flipped byte, forged headers and tables, random noise)
 * with one clear message; atomic replacement and aborted writes. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/ckpt/tensorfile.h"
#include "src/core/crc32.h"
#include "src/core/rng.h"
#include "tests/support/testing.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n ? *n : 1);
    assert_int_equal(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
/* After editing header fields, re-seal the header so the reader gets past its checksum. */
static void reseal_header(unsigned char *b) { put_u32(b + 60, crc32_update(0, b, 60)); }

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* Opening `path` must fail with a message that starts "checkpoint '<path>': " and contains
 * `want` (when not NULL). Returns the message. */
static const char *expect_refused(const char *path, const char *want) {
    static char err[1024];
    memset(err, 'x', sizeof err);
    tf_reader *r = tf_reader_open(path, err, sizeof err);
    if (r) {
        tf_reader_close(r);
        fail_msg("'%s' was accepted, expected an error containing '%s'", path, want ? want : "");
    }
    char prefix[4200];
    snprintf(prefix, sizeof prefix, "checkpoint '%s': ", path);
    if (strncmp(err, prefix, strlen(prefix)) != 0 || strlen(err) <= strlen(prefix) ||
        strchr(err, '\n'))
        fail_msg("bad message for '%s': '%s'", path, err);
    if (want && !strstr(err, want)) fail_msg("message '%s' does not contain '%s'", err, want);
    return err;
}

/* The small file used by the damage tests: metadata and three tensors of different types. */
static const char *make_small_file(const char *dir, const char *name) {
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tf_writer *w = tf_writer_open(path, "{\"step\": 12, \"name\": \"small\"}");
    float a[6] = {1, 2, 3, 4, 5, 6};
    int64_t sa[2] = {2, 3};
    tf_writer_add(w, "a", TF_F32, 2, sa, a);
    int32_t b[3] = {-1, 0, 7};
    int64_t sb[1] = {3};
    tf_writer_add(w, "b", TF_I32, 1, sb, b);
    int64_t step = 12;
    tf_writer_add(w, "step", TF_I64, 0, NULL, &step);
    tf_writer_commit(w);
    return path;
}

/* Offsets of the small file's pieces (see FORMAT.md): header_len 128, a at 128 (24 B),
 * b at 192 (12 B), step at 256 (8 B), table at 320 (3 x 192), trailer at 896, length 912. */
enum { SMALL_A = 128, SMALL_B = 192, SMALL_TABLE = 320, SMALL_TRAILER = 896, SMALL_LEN = 912 };


/* ---- round trips ------------------------------------------------------------------------ */

static void every_dtype_and_shape_round_trips(void **state) {
    (void)state;
    const char *dir = test_tmpdir("roundtrip");
    char path[4200];
    snprintf(path, sizeof path, "%s/model.bin", dir);

    float f32[3 * 5];
    for (int i = 0; i < 15; i++) f32[i] = rng_normal(1, 1, (uint64_t)i);
    uint16_t bf16[7], f16[8];
    for (int i = 0; i < 7; i++) bf16[i] = (uint16_t)(0x3f80 + i);
    for (int i = 0; i < 8; i++) f16[i] = (uint16_t)(0x3c00 + 3 * i);
    int32_t i32[1] = {-123456};
    int64_t i64 = 1LL << 40;
    unsigned char u8[65];
    for (int i = 0; i < 65; i++) u8[i] = (unsigned char)(i * 7);

    struct {
        const char *name;
        tf_dtype dtype;
        int ndim;
        int64_t shape[4];
        const void *data;
        size_t nbytes;
    } cases[] = {
        {"layers.0.qkv_w", TF_F32, 2, {3, 5}, f32, sizeof f32},
        {"bf16.vector", TF_BF16, 1, {7}, bf16, sizeof bf16},
        {"f16.cube", TF_F16, 3, {2, 2, 2}, f16, sizeof f16},
        {"i32.four_dims", TF_I32, 4, {1, 1, 1, 1}, i32, sizeof i32},
        {"step", TF_I64, 0, {0}, &i64, sizeof i64},
        {"empty", TF_U8, 2, {0, 9}, NULL, 0},
        {"bytes", TF_U8, 1, {65}, u8, sizeof u8},
    };
    const int n = (int)(sizeof cases / sizeof *cases);
    const char *meta =
        "{\"step\": 1099511627776, \"lr\": 3e-4, \"note\": \"caf\xc3\xa9 \\\"q\\\"\"}";
    tf_writer *w = tf_writer_open(path, meta);
    for (int i = 0; i < n; i++)
        tf_writer_add(w, cases[i].name, cases[i].dtype, cases[i].ndim, cases[i].shape,
                      cases[i].data);
    tf_writer_commit(w);
    assert_int_equal(count_entries(dir), 1); /* no temporary left */

    char err[512];
    tf_reader *r = tf_reader_open(path, err, sizeof err);
    if (!r) fail_msg("%s", err);
    assert_string_equal(tf_reader_meta(r), meta);
    assert_int_equal(tf_reader_count(r), n);
    for (int i = 0; i < n; i++) {
        const tf_tensor *t = tf_reader_find(r, cases[i].name);
        assert_non_null(t);
        assert_ptr_equal(t, tf_reader_tensor(r, (size_t)i)); /* file order is write order */
        assert_string_equal(t->name, cases[i].name);
        assert_int_equal(t->dtype, cases[i].dtype);
        assert_int_equal(t->ndim, cases[i].ndim);
        size_t numel = 1;
        for (int d = 0; d < 4; d++) {
            assert_int_equal(t->shape[d], d < cases[i].ndim ? cases[i].shape[d] : 0);
            if (d < cases[i].ndim) numel *= (size_t)cases[i].shape[d];
        }
        assert_int_equal(t->numel, numel);
        assert_int_equal(t->nbytes, cases[i].nbytes);
        assert_int_equal((uintptr_t)t->data % TF_ALIGN, 0);
        if (t->nbytes) assert_memory_equal(t->data, cases[i].data, t->nbytes);
    }
    assert_null(tf_reader_find(r, "missing"));
    assert_null(tf_reader_find(r, ""));
    int64_t qkv_shape[2] = {3, 5};
    assert_ptr_equal(tf_reader_require(r, "layers.0.qkv_w", TF_F32, 2, qkv_shape),
                     tf_reader_find(r, "layers.0.qkv_w")->data);
    tf_reader_close(r);

    /* An empty file: no metadata, no tensors. */
    w = tf_writer_open(path, NULL);
    tf_writer_commit(w);
    r = tf_reader_open(path, err, sizeof err);
    if (!r) fail_msg("%s", err);
    assert_string_equal(tf_reader_meta(r), "");
    assert_int_equal(tf_reader_count(r), 0);
    assert_null(tf_reader_find(r, "a"));
    tf_reader_close(r);
    size_t len;
    free(slurp(path, &len));
    assert_int_equal(len, 64 + 16);
}

static void many_tensors_are_found_by_name(void **state) {
    (void)state;
    const char *dir = test_tmpdir("many");
    char path[4200];
    snprintf(path, sizeof path, "%s/many.bin", dir);
    tf_writer *w = tf_writer_open(path, "{}");
    for (int i = 0; i < 500; i++) {
        char name[64];
        snprintf(name, sizeof name, "t%03d", (i * 37) % 500); /* written out of name order */
        float v = (float)((i * 37) % 500);
        int64_t shape[1] = {1};
        tf_writer_add(w, name, TF_F32, 1, shape, &v);
    }
    tf_writer_commit(w);
    char err[512];
    tf_reader *r = tf_reader_open(path, err, sizeof err);
    if (!r) fail_msg("%s", err);
    for (int i = 0; i < 500; i++) {
        char name[64];
        snprintf(name, sizeof name, "t%03d", i);
        const tf_tensor *t = tf_reader_find(r, name);
        assert_non_null(t);
        assert_true(*(const float *)t->data == (float)i);
    }
    tf_reader_close(r);
}

static void the_small_file_has_the_documented_layout(void **state) {
    (void)state;
    const char *path = make_small_file(test_tmpdir("layout"), "small.bin");
    size_t n;
    unsigned char *b = slurp(path, &n);
    assert_int_equal(n, SMALL_LEN);
    assert_memory_equal(b, "TRIDENTT", 8);
    assert_int_equal(get_u64(b + 16), 128); /* header_len */
    assert_int_equal(get_u64(b + 24), 29);  /* meta_len */
    assert_int_equal(get_u64(b + 32), 3);   /* tensor_count */
    assert_int_equal(get_u64(b + 40), SMALL_TABLE);
    assert_int_equal(get_u64(b + 48), SMALL_LEN);
    assert_int_equal(get_u64(b + SMALL_TABLE + 168), SMALL_A);
    assert_int_equal(get_u64(b + SMALL_TABLE + 192 + 168), SMALL_B);
    assert_int_equal(get_u64(b + SMALL_TRAILER), SMALL_LEN);
    assert_memory_equal(b + SMALL_LEN - 4, "TEND", 4);
    assert_int_equal(crc32_update(0, b, SMALL_TRAILER),
                     (uint32_t)get_u64(b + SMALL_TRAILER + 8) & 0xffffffffu);
    free(b);
}

/* ---- metadata --------------------------------------------------------------------------- */

static void metadata_lookups_read_top_level_keys(void **state) {
    (void)state;
    const char *j = " { \"config\": {\"step\": 5, \"list\": [1, {\"x\": \"]}\"}]},\n"
                    "  \"step\" : 7, \"neg\": -42, \"lr\": 2.5e-4, \"frac\": 1.5,\n"
                    "  \"s\": \"a\\\"b\\\\c\\n\\u00e9\\ud83d\\ude00/\", \"t\": true, \"big\": "
                    "99999999999999999999 } ";
    long long v;
    double x;
    char s[64];
    assert_true(tf_meta_get_int(j, "step", &v));
    assert_int_equal(v, 7); /* the nested "step" is not top level */
    assert_true(tf_meta_get_int(j, "neg", &v));
    assert_int_equal(v, -42);
    assert_false(tf_meta_get_int(j, "frac", &v)); /* not integral */
    assert_false(tf_meta_get_int(j, "big", &v));  /* does not fit */
    assert_false(tf_meta_get_int(j, "s", &v));
    assert_false(tf_meta_get_int(j, "missing", &v));
    assert_false(tf_meta_get_int(j, "x", &v));
    assert_true(tf_meta_get_double(j, "lr", &x));
    assert_true(x == 2.5e-4);
    assert_true(tf_meta_get_double(j, "step", &x));
    assert_true(x == 7.0);
    assert_false(tf_meta_get_double(j, "t", &x));
    assert_true(tf_meta_get_string(j, "s", s, sizeof s));
    assert_string_equal(s, "a\"b\\c\n\xc3\xa9\xf0\x9f\x98\x80/");
    assert_false(tf_meta_get_string(j, "s", s, 5)); /* does not fit */
    assert_false(tf_meta_get_string(j, "step", s, sizeof s));
    /* Not an object, malformed, or empty: every lookup is false, nothing crashes. */
    const char *bad[] = {"",
                         "[]",
                         "{",
                         "{\"a\"",
                         "{\"a\":",
                         "{\"a\" 1}",
                         "{\"x\": \"\\q\", \"a\": 1}",
                         "{\"x\": \"\\u12\", \"a\": 1}",
                         "{\"x\": {\"a\": 1}",
                         "{\"a\": -}",
                         "{\"a\": 1x}",
                         "null"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_false(tf_meta_get_int(bad[i], "a", &v));
        assert_false(tf_meta_get_string(bad[i], "a", s, sizeof s));
    }
    assert_false(tf_meta_get_int(NULL, "a", &v));
    /* The scan stops at the first match: what follows it is not checked. */
    assert_true(tf_meta_get_int("{\"a\": 1, oops", "a", &v));
    assert_true(tf_meta_get_int("{\"a\":1}", "a", &v));
    assert_int_equal(v, 1);
}

/* tf_meta_check: each top-level key once and written plainly, or one phrase naming the key;
 * nested objects may repeat their own keys (only the top level is metadata). */
static void metadata_keys_are_unique_and_unescaped(void **state) {
    (void)state;
    char err[256];
    assert_true(tf_meta_check("{}", err, sizeof err));
    assert_true(tf_meta_check(" {\"a\": 1, \"b\": {\"a\": 2, \"a\": 3}, \"c\": \"\\u0041\"} ", err,
                              sizeof err));
    struct {
        const char *json, *want;
    } bad[] = {
        {"{\"tp\":1,\"pp\":1,\"tp\":2}", "has the key \"tp\" twice"},
        {"{\"t\\u0070\":1}", "has the key \"t\\u0070\" written with an escape"},
        {"{\"a\\\"b\":1}", "written with an escape"},
        {"[1]", "is not a JSON object"},
        {"{\"a\" 1}", "is not a JSON object"},
        {"{\"a\":1 \"b\":2}", "is not a JSON object"},
        {"{\"a\":", "is not a JSON object"},
        {"", "is not a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        if (tf_meta_check(bad[i].json, err, sizeof err))
            fail_msg("accepted %s, want '%s'", bad[i].json, bad[i].want);
        if (!strstr(err, bad[i].want))
            fail_msg("%s: '%s', want '%s'", bad[i].json, err, bad[i].want);
    }
    assert_false(tf_meta_check(NULL, err, sizeof err));
}

/* ---- damage ------------------------------------------------------------------------------ */

static void every_truncation_is_refused_with_its_length(void **state) {
    (void)state;
    const char *dir = test_tmpdir("truncate");
    const char *path = make_small_file(dir, "small.bin");
    size_t n;
    unsigned char *b = slurp(path, &n);
    char cut[4200];
    snprintf(cut, sizeof cut, "%s/cut.bin", dir);
    for (size_t len = 0; len < n; len++) {
        spit(cut, b, len);
        char want[128];
        if (len < 64)
            snprintf(want, sizeof want, "truncated at byte %zu: the header alone needs 64 bytes",
                     len);
        else snprintf(want, sizeof want, "truncated at byte %zu of expected %zu", len, n);
        expect_refused(cut, want);
    }
    /* And one byte too many. */
    unsigned char *longer = calloc(n + 1, 1);
    memcpy(longer, b, n);
    spit(cut, longer, n + 1);
    expect_refused(cut, "is 913 bytes long but its header says 912 (extra bytes at the end)");
    free(longer);
    free(b);
}

static void every_flipped_byte_is_refused(void **state) {
    (void)state;
    const char *dir = test_tmpdir("flip");
    const char *path = make_small_file(dir, "small.bin");
    size_t n;
    unsigned char *b = slurp(path, &n);
    char bad_path[4200];
    snprintf(bad_path, sizeof bad_path, "%s/bad.bin", dir);
    const unsigned char masks[] = {0x01, 0x80, 0xff};
    for (size_t m = 0; m < sizeof masks; m++) {
        for (size_t i = 0; i < n; i++) {
            b[i] ^= masks[m];
            spit(bad_path, b, n);
            const char *want = NULL;
            if (i < 8) want = "not a Trident tensor file";
            else if (i >= 12 && i < 64) want = "header checksum mismatch";
            else if (i >= SMALL_A && i < SMALL_A + 24) want = "tensor 'a' checksum mismatch";
            else if (i >= SMALL_B && i < SMALL_B + 12) want = "tensor 'b' checksum mismatch";
            else if (i >= SMALL_TRAILER + 8 && i < SMALL_TRAILER + 12)
                want = "file checksum mismatch";
            expect_refused(bad_path, want);
            b[i] ^= masks[m];
        }
    }
    spit(bad_path, b, n); /* restored: accepted again */
    char err[512];
    tf_reader *r = tf_reader_open(bad_path, err, sizeof err);
    assert_non_null(r);
    tf_reader_close(r);
    free(b);
}

static void forged_headers_and_tables_are_refused_by_name(void **state) {
    (void)state;
    const char *dir = test_tmpdir("forged");
    const char *path = make_small_file(dir, "small.bin");
    size_t n;
    unsigned char *orig = slurp(path, &n);
    unsigned char *b = malloc(n);
    char bad_path[4200];
    snprintf(bad_path, sizeof bad_path, "%s/bad.bin", dir);
    const uint64_t huge = 0x7fffffffffffffffull;
    const size_t e0 = SMALL_TABLE, e1 = SMALL_TABLE + 192; /* entries of 'a' and 'b' */

#define FORGE(edit, want)                                                                          \
    do {                                                                                           \
        memcpy(b, orig, n);                                                                        \
        edit;                                                                                      \
        spit(bad_path, b, n);                                                                      \
        expect_refused(bad_path, want);                                                            \
    } while (0)

    FORGE(memcpy(b, "GGUF\0\0\0\0", 8),
          "not a Trident tensor file (magic 'GGUF....' at byte 0, expected 'TRIDENTT')");
    FORGE((put_u32(b + 8, 2), reseal_header(b)),
          "format version 2 is not supported (this build reads version 1)");
    FORGE(put_u32(b + 8, 0), "format version 0 is not supported");
    FORGE((put_u32(b + 12, 4), reseal_header(b)), "unknown flags 0x4 at byte 12");
    FORGE((put_u32(b + 56, 1), reseal_header(b)), "reserved header bytes 56..59 are not zero");
    FORGE((put_u64(b + 48, huge), reseal_header(b)),
          "truncated at byte 912 of expected 9223372036854775807");
    FORGE((put_u64(b + 48, 70), reseal_header(b)), "is 912 bytes long but its header says 70");
    FORGE((put_u64(b + 24, huge), reseal_header(b)),
          "metadata length 9223372036854775807 at byte 24");
    FORGE((put_u64(b + 24, 30), reseal_header(b)), "the metadata holds a NUL byte at byte 93");
    FORGE((put_u64(b + 16, 64), reseal_header(b)), "header length 64 at byte 16 should be 128");
    FORGE((put_u64(b + 40, 321), reseal_header(b)), "table offset 321 at byte 40");
    FORGE((put_u64(b + 40, huge), reseal_header(b)), "table offset 9223372036854775807");
    FORGE((put_u64(b + 32, huge), reseal_header(b)),
          "tensor count 9223372036854775807 at byte 32 does not fit");
    FORGE((put_u64(b + 32, 2), reseal_header(b)), "tensor count 2 at byte 32 does not fit");
    FORGE(memcpy(b + SMALL_TRAILER + 12, "DONE", 4), "the end mark 'TEND' is missing at byte 908");
    FORGE(put_u64(b + SMALL_TRAILER, 1000),
          "the trailer at byte 896 says the file is 1000 bytes, the header 912");
    FORGE(b[100] = 1, "padding bytes 93..127 after the metadata are not zero");
    FORGE(memset(b + e0, 'x', 128),
          "table entry 0 at byte 320: the name has no NUL within 128 bytes");
    FORGE(b[e0] = 0, "table entry 0 at byte 320: the name is empty");
    FORGE(b[e0 + 100] = 'z', "tensor 'a' (entry at byte 320): bytes after the name are not zero");
    FORGE(put_u32(b + e0 + 128, 77), "tensor 'a': unknown dtype code 77 at byte 448");
    FORGE(put_u32(b + e0 + 128, 0), "tensor 'a': unknown dtype code 0");
    FORGE(put_u32(b + e0 + 132, 9), "tensor 'a': 9 dimensions at byte 452 (at most 4)");
    FORGE(put_u64(b + e0 + 136, (uint64_t)-3), "tensor 'a': dimension 0 is -3 at byte 456");
    FORGE(put_u64(b + e0 + 144, huge),
          "tensor 'a': its shape holds more elements than the file has bytes");
    FORGE(put_u64(b + e0 + 160, 1), "tensor 'a': unused dimension 3 at byte 480 is not zero");
    FORGE(put_u64(b + e0 + 176, huge), "tensor 'a': byte size 9223372036854775807 at byte 496 does "
                                       "not match its shape (24 bytes)");
    FORGE(put_u64(b + e0 + 168, huge),
          "tensor 'a': data offset 9223372036854775807 at byte 488 should be 128");
    FORGE(put_u64(b + e1 + 168, 160), "tensor 'b': data offset 160 at byte 680 should be 192");
    FORGE(put_u32(b + e0 + 188, 5), "tensor 'a': reserved bytes at byte 508 are not zero");
    FORGE(b[SMALL_A + 30] = 9, "padding bytes 152..191 after tensor 'a' are not zero");
    FORGE(b[e1] = 'a', "two tensors are named 'a'");
    FORGE((b[e0] = '\n', b[SMALL_A] ^= 1), "tensor '?' checksum mismatch");
    FORGE(b[e0] = '\n', "file checksum mismatch"); /* names are covered by the file's CRC */
    FORGE(put_u32(b + e1 + 184, 0), "tensor 'b' checksum mismatch (12 bytes at byte 192)");
    /* 'b' grows to 17 elements (68 bytes): its data would run into 'step', whose offset no
     * longer follows the packing rule. */
    FORGE((put_u64(b + e1 + 136, 17), put_u64(b + e1 + 176, 68)),
          "tensor 'step': data offset 256 at byte 872 should be 320");
#undef FORGE
    free(b);
    free(orig);
}

static void random_damage_never_crashes(void **state) {
    (void)state;
    const char *dir = test_tmpdir("fuzz");
    const char *path = make_small_file(dir, "small.bin");
    size_t n;
    unsigned char *orig = slurp(path, &n);
    unsigned char *b = malloc(2 * n);
    char bad_path[4200];
    snprintf(bad_path, sizeof bad_path, "%s/bad.bin", dir);
    for (uint64_t it = 0; it < 3000; it++) {
        memcpy(b, orig, n);
        size_t len = n;
        uint64_t kind = rng_below(3, 1, it, 4);
        int edits = 1 + (int)rng_below(3, 2, it, 8);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)rng_below(3, 3, it * 16 + (uint64_t)e, n);
            b[at] ^= (unsigned char)(1 + rng_below(3, 4, it * 16 + (uint64_t)e, 255));
        }
        if (kind == 1) len = (size_t)rng_below(3, 5, it, n); /* and truncated */
        if (kind == 2) {                                     /* header fields kept consistent */
            put_u64(b + 16 + 8 * rng_below(3, 6, it, 5),
                    rng_bits(3, 7, it) >> rng_below(3, 8, it, 64));
            reseal_header(b);
        }
        if (kind == 3)
            for (size_t i = 0; i < n; i++) b[i] = (unsigned char)rng_bits(3, 9, it * n + i);
        spit(bad_path, b, len);
        expect_refused(bad_path, NULL);
    }
    free(b);
    free(orig);
}

static void unreadable_paths_are_refused(void **state) {
    (void)state;
    const char *dir = test_tmpdir("unreadable");
    char path[4200];
    snprintf(path, sizeof path, "%s/none.bin", dir);
    expect_refused(path, "cannot be opened: No such file or directory");
    expect_refused(dir, "is not a regular file");
    /* A short error buffer is filled, truncated, and stays a C string. */
    char err[8];
    assert_null(tf_reader_open(path, err, sizeof err));
    assert_int_equal(strlen(err), 7);
    assert_null(tf_reader_open(path, NULL, 0));
}

/* ---- atomic replacement ------------------------------------------------------------------ */

static void abort_keeps_the_previous_file_and_no_temporary(void **state) {
    (void)state;
    const char *dir = test_tmpdir("abort");
    const char *path = make_small_file(dir, "ck.bin");
    size_t n0;
    unsigned char *before = slurp(path, &n0);

    tf_writer *w = tf_writer_open(path, "{\"step\": 13}");
    float big[4096] = {0};
    int64_t shape[1] = {4096};
    tf_writer_add(w, "a", TF_F32, 1, shape, big);
    assert_int_equal(count_entries(dir), 2); /* the target and the temporary beside it */
    tf_writer_abort(w);
    assert_int_equal(count_entries(dir), 1);
    size_t n1;
    unsigned char *after = slurp(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(after);

    /* A commit replaces the file whole. */
    w = tf_writer_open(path, "{\"step\": 13}");
    tf_writer_add(w, "a", TF_F32, 1, shape, big);
    tf_writer_commit(w);
    assert_int_equal(count_entries(dir), 1);
    char err[512];
    tf_reader *r = tf_reader_open(path, err, sizeof err);
    if (!r) fail_msg("%s", err);
    long long step;
    assert_true(tf_meta_get_int(tf_reader_meta(r), "step", &step));
    assert_int_equal(step, 13);
    assert_int_equal(tf_reader_count(r), 1);
    tf_reader_close(r);
    free(before);
}

static void crash_mid_save(const void *arg) {
    tf_writer *w = tf_writer_open((const char *)arg, "{\"step\": 99}");
    float x[256] = {0};
    int64_t shape[1] = {256};
    tf_writer_add(w, "a", TF_F32, 1, shape, x);
    _exit(3); /* no commit, no cleanup: as if killed */
}

static void crash_mid_save_keeps_the_previous_file(void **state) {
    (void)state;
    const char *dir = test_tmpdir("crash");
    const char *path = make_small_file(dir, "ck.bin");
    char out[1024];
    assert_int_equal(run_in_child(crash_mid_save, path, out, sizeof out), 3);
    char err[512];
    tf_reader *r = tf_reader_open(path, err, sizeof err);
    if (!r) fail_msg("%s", err);
    long long step;
    assert_true(tf_meta_get_int(tf_reader_meta(r), "step", &step));
    assert_int_equal(step, 12);
    tf_reader_close(r);
}

static void add_twice(const void *arg) {
    tf_writer *w = tf_writer_open((const char *)arg, NULL);
    int64_t shape[1] = {1};
    float x = 1;
    tf_writer_add(w, "w", TF_F32, 1, shape, &x);
    tf_writer_add(w, "w", TF_F32, 1, shape, &x);
}

static void long_name(const void *arg) {
    tf_writer *w = tf_writer_open((const char *)arg, NULL);
    char name[200];
    memset(name, 'n', 128);
    name[128] = 0;
    tf_writer_add(w, name, TF_U8, 0, NULL, "x");
}

static void bad_shape(const void *arg) {
    tf_writer *w = tf_writer_open((const char *)arg, NULL);
    int64_t shape[5] = {1, 1, 1, 1, 1};
    tf_writer_add(w, "w", TF_U8, 5, shape, "x");
}

typedef struct {
    const char *path;
    int64_t rows;
} require_args;

static void require_shape(const void *arg) {
    const require_args *a = arg;
    char err[512];
    tf_reader *r = tf_reader_open(a->path, err, sizeof err);
    int64_t shape[2] = {a->rows, 3};
    tf_reader_require(r, a->rows ? "a" : "nope", TF_F32, 2, shape);
}

static void writer_and_require_misuse_die_with_one_line(void **state) {
    (void)state;
    const char *dir = test_tmpdir("misuse");
    char path[4200], out[2048], want[4400];
    snprintf(path, sizeof path, "%s/w.bin", dir);
    assert_int_equal(run_in_child(add_twice, path, out, sizeof out), 1);
    snprintf(want, sizeof want, "trident: checkpoint '%s': tensor 'w' added twice\n", path);
    assert_string_equal(out, want);
    assert_int_equal(run_in_child(long_name, path, out, sizeof out), 1);
    assert_non_null(strstr(out, "must be 1 to 127 bytes long"));
    assert_int_equal(run_in_child(bad_shape, path, out, sizeof out), 1);
    assert_non_null(strstr(out, "tensor 'w': 5 dimensions, the format allows 0 to 4"));
    assert_int_equal(count_entries(dir), 0); /* the temporaries were removed */

    const char *small = make_small_file(dir, "small.bin");
    require_args wrong = {small, 4}, missing = {small, 0};
    assert_int_equal(run_in_child(require_shape, &wrong, out, sizeof out), 1);
    snprintf(want, sizeof want,
             "trident: checkpoint '%s': tensor 'a' is f32 (2, 3) but f32 (4, 3) was expected\n",
             small);
    assert_string_equal(out, want);
    assert_int_equal(run_in_child(require_shape, &missing, out, sizeof out), 1);
    snprintf(want, sizeof want, "trident: checkpoint '%s': has no tensor 'nope'\n", small);
    assert_string_equal(out, want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_dtype_and_shape_round_trips),
        cmocka_unit_test(many_tensors_are_found_by_name),
        cmocka_unit_test(the_small_file_has_the_documented_layout),
        cmocka_unit_test(metadata_lookups_read_top_level_keys),
        cmocka_unit_test(every_truncation_is_refused_with_its_length),
        cmocka_unit_test(every_flipped_byte_is_refused),
        cmocka_unit_test(forged_headers_and_tables_are_refused_by_name),
        cmocka_unit_test(random_damage_never_crashes),
        cmocka_unit_test(unreadable_paths_are_refused),
        cmocka_unit_test(abort_keeps_the_previous_file_and_no_temporary),
        cmocka_unit_test(crash_mid_save_keeps_the_previous_file),
        cmocka_unit_test(writer_and_require_misuse_die_with_one_line),
        cmocka_unit_test(metadata_keys_are_unique_and_unescaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
