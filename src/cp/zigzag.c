/* zigzag.c — the zig-zag positions of zigzag.h: two chunks per rank, a front one and a back one. */
#include "src/cp/zigzag.h"

#include <stdio.h>
#include <string.h>

#include "src/core/check.h"

/* Asserts the layout is possible (the callers' flags went through cp_check). */
static void check_layout(size_t T, int cp_rank, int cp_size) {
    CHECK(cp_size >= 1 && cp_rank >= 0 && cp_rank < cp_size,
          "the cp rank must be in 0 .. cp_size-1 (is the group the context-parallel one?)");
    CHECK(cp_size == 1 || T % (2 * (size_t)cp_size) == 0,
          "T must be divisible by 2*cp (cp_check on --seq-length and --context-parallel-size)");
}

size_t cp_global_position(int cp_rank, int cp_size, size_t T, size_t t_local) {
    check_layout(T, cp_rank, cp_size);
    CHECK(t_local < T / (size_t)cp_size, "t_local must be a row of this rank (0 .. T/cp-1)");
    if (cp_size == 1) return t_local;
    const size_t chunk = T / (2 * (size_t)cp_size); /* positions per chunk */
    if (t_local < chunk) return (size_t)cp_rank * chunk + t_local;
    return (size_t)(2 * cp_size - 1 - cp_rank) * chunk + (t_local - chunk);
}

/* Copies this rank's rows between the whole (B, T, width) tensor and the local (B, T/cp, width)
 * one, a chunk at a time: from whole to local (slice) when to_local, else back (unslice).
 * Elements are esize bytes. */
static void copy_rows(void *dst, const void *src, size_t B, size_t T, size_t width, size_t esize,
                      int cp_rank, int cp_size, bool to_local) {
    check_layout(T, cp_rank, cp_size);
    const size_t Tl = T / (size_t)cp_size;
    const size_t n_chunks = cp_size == 1 ? 1 : 2; /* per rank */
    const size_t chunk = Tl / n_chunks;
    const size_t row_bytes = width * esize;
    for (size_t b = 0; b < B; b++) {
        for (size_t k = 0; k < n_chunks; k++) {
            const size_t t_local = k * chunk;
            const size_t whole_row = b * T + cp_global_position(cp_rank, cp_size, T, t_local);
            const size_t local_row = b * Tl + t_local;
            const size_t d = to_local ? local_row : whole_row, s = to_local ? whole_row : local_row;
            memcpy((char *)dst + d * row_bytes, (const char *)src + s * row_bytes,
                   chunk * row_bytes);
        }
    }
}

void cp_slice_tokens(int32_t *dst, const int32_t *src, size_t B, size_t T, int cp_rank,
                     int cp_size) {
    copy_rows(dst, src, B, T, 1, sizeof(int32_t), cp_rank, cp_size, true);
}

void cp_slice_rows(float *dst, const float *src, size_t B, size_t T, size_t C, int cp_rank,
                   int cp_size) {
    copy_rows(dst, src, B, T, C, sizeof(float), cp_rank, cp_size, true);
}

void cp_unslice_rows(float *dst, const float *src, size_t B, size_t T, size_t C, int cp_rank,
                     int cp_size) {
    copy_rows(dst, src, B, T, C, sizeof(float), cp_rank, cp_size, false);
}

bool cp_check(size_t T, int cp_size, char *err, size_t errlen) {
    if (cp_size < 1) {
        snprintf(err, errlen, "--context-parallel-size %d must be at least 1", cp_size);
        return false;
    }
    if (cp_size > 1 && (T == 0 || T % (2 * (size_t)cp_size) != 0)) {
        snprintf(err, errlen,
                 "--seq-length %zu is not divisible by 2 * --context-parallel-size = %d (the "
                 "zig-zag layout gives each of the %d ranks two chunks of equal length)",
                 T, 2 * cp_size, cp_size);
        return false;
    }
    return true;
}
