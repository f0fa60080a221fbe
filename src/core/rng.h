/* rng.h — counter-based random numbers: a value is a pure function of (seed, stream, index).
 *
 * Nothing in Trident keeps a hidden RNG state that advances as it runs. Weight element
 * (r, c) of tensor k is rng_normal(seed, stream_of(k), r * cols + c) wherever it is
 * computed, so a tensor-parallel rank initialises exactly its slice of the serial model
 * without ever building the whole, and a data sample is the same on any layout.
 * The mixer is splitmix64's finaliser applied to a combined key.
 */
#ifndef TRIDENT_CORE_RNG_H
#define TRIDENT_CORE_RNG_H

#include <math.h>
#include <stdint.h>

static inline uint64_t rng_mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 64 random bits for (seed, stream, index). */
static inline uint64_t rng_bits(uint64_t seed, uint64_t stream, uint64_t index) {
    return rng_mix64(rng_mix64(seed ^ rng_mix64(stream)) + index);
}

/* Uniform in [0, 1) with 24 random bits (exactly representable as float). */
static inline float rng_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
    return (float)(rng_bits(seed, stream, index) >> 40) * (1.0f / 16777216.0f);
}

/* Uniform integer in [0, n). */
static inline uint64_t rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n) {
    return n ? rng_bits(seed, stream, index) % n : 0;
}

/* Standard normal by Box-Muller from two independent draws of the same counter. */
static inline float rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
    uint64_t b = rng_bits(seed, stream, index);
    double u1 = ((double)(b >> 11) + 1.0) * (1.0 / 9007199254740993.0); /* (0, 1] */
    double u2 = (double)(rng_mix64(b) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

#endif /* TRIDENT_CORE_RNG_H */
