/* zigzag.h — which positions of the sequence a context-parallel rank holds (Megatron's
 * zig-zag load balancing for causal attention).
 *
 * Context parallelism (--context-parallel-size cp) cuts each of the B sequences of T positions
 * among cp ranks. A causal query at position i attends to keys 0..i, so cutting the sequence
 * into cp consecutive pieces would give the last rank cp times the work of the first. Instead
 * the sequence is cut into 2·cp chunks of T/(2·cp) positions, and rank r holds chunk r and
 * chunk 2·cp−1−r — one from the cheap front, one from the expensive back:
 *
 *   cp = 2, T = 8:   positions  0 1 | 2 3 | 4 5 | 6 7
 *                    chunks        0  |  1  |  2  |  3
 *                    rank 0 holds chunks 0 and 3: local rows 0 1 2 3 = positions 0 1 6 7
 *                    rank 1 holds chunks 1 and 2: local rows 0 1 2 3 = positions 2 3 4 5
 *
 * Local layout: Tl = T/cp rows per sequence; rows [0, Tl/2) are chunk r and rows [Tl/2, Tl)
 * are chunk 2·cp−1−r, in that order. A (B, T, C) tensor becomes a (B, Tl, C) one holding, for
 * each of the B sequences, this rank's two chunks.
 *
 * cp = 1 holds the whole sequence in order, for any T (one chunk pair is 0 1, i.e. 0..T−1).
 *
 * Not here: attention over these positions (ring_attention.h) and anything about messages.
 */
#ifndef TRIDENT_CP_ZIGZAG_H
#define TRIDENT_CP_ZIGZAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Global position (0..T−1) of local row t_local (0..T/cp−1) of rank cp_rank. */
size_t cp_global_position(int cp_rank, int cp_size, size_t T, size_t t_local);

/* dst (B, T/cp) = this rank's positions of src (B, T), for token arrays. */
void cp_slice_tokens(int32_t *dst, const int32_t *src, size_t B, size_t T, int cp_rank,
                     int cp_size);

/* dst (B, T/cp, C) = this rank's rows of src (B, T, C). */
void cp_slice_rows(float *dst, const float *src, size_t B, size_t T, size_t C, int cp_rank,
                   int cp_size);
/* The inverse scatter: writes this rank's rows of dst (B, T, C) from src (B, T/cp, C); the
 * other rows of dst are left as they are (tests rebuild a whole tensor from every rank's part). */
void cp_unslice_rows(float *dst, const float *src, size_t B, size_t T, size_t C, int cp_rank,
                     int cp_size);

/* Whether T positions can be cut among cp_size ranks: cp_size >= 1 and, when cp_size > 1,
 * T divisible by 2·cp_size. Else false and one line in err naming --seq-length and
 * --context-parallel-size. */
bool cp_check(size_t T, int cp_size, char *err, size_t errlen);

#endif /* TRIDENT_CP_ZIGZAG_H */
