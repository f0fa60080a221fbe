/* convert.c — fp32 <-> bf16 / fp16 by bit manipulation (see convert.h for the rules).
 *
 * Everything works on the IEEE bit pattern obtained with memcpy (the one portable way to
 * reinterpret a float in C). Rounding to nearest-even when dropping the low k bits of q:
 *
 *     rem = low k bits, half = 1 << (k-1)
 *     round up  if rem > half, or rem == half and q is odd
 *
 * A round-up that carries out of the mantissa increments the exponent, which is exactly
 * right (and turns the largest finite value into inf when it overflows).
 */
#include "src/precision/convert.h"

#include <string.h>

static uint32_t bits_of(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static float float_of(uint32_t b) {
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* q >> k rounded to nearest, ties to even (k in 1..31). */
static uint32_t shift_round_even(uint32_t q, int k) {
    uint32_t kept = q >> k;
    uint32_t rem = q & ((1u << k) - 1);
    uint32_t half = 1u << (k - 1);
    if (rem > half || (rem == half && (kept & 1))) kept++;
    return kept;
}

const char *prec_dtype_name(prec_dtype t) {
    switch (t) {
    case PREC_FP32: return "fp32";
    case PREC_BF16: return "bf16";
    case PREC_FP16: return "fp16";
    }
    return "?";
}

size_t prec_dtype_bytes(prec_dtype t) { return t == PREC_FP32 ? 4 : 2; }

bool prec_dtype_parse(const char *s, prec_dtype *out) {
    static const prec_dtype all[] = {PREC_FP32, PREC_BF16, PREC_FP16};
    for (int i = 0; i < 3; i++) {
        if (strcmp(s, prec_dtype_name(all[i])) == 0) {
            *out = all[i];
            return true;
        }
    }
    return false;
}

/* bf16 is the top half of fp32: round away the low 16 bits. */
uint16_t prec_fp32_to_bf16(float x) {
    uint32_t b = bits_of(x);
    if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu)) {
        /* NaN: keep sign and the top payload bits, force the quiet bit so that a payload
         * living only in the low 16 bits cannot turn the NaN into inf. */
        return (uint16_t)((b >> 16) | 0x0040u);
    }
    return (uint16_t)shift_round_even(b, 16); /* carries into the exponent as needed */
}

float prec_bf16_to_fp32(uint16_t h) { return float_of((uint32_t)h << 16); }

/*   fp32 exponent E (bias 127)  ->  fp16 exponent e = E - 112 (bias 15)
 *   e >= 31          overflow: ±inf
 *   1 <= e <= 30     normal: keep 10 of the 23 mantissa bits
 *   e <= 0           fp16 subnormal: mantissa = (1.m * 2^23) >> (14 - e), in units of 2^-24
 */
uint16_t prec_fp32_to_fp16(float x) {
    uint32_t b = bits_of(x);
    uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
    uint32_t exp32 = (b >> 23) & 0xffu;
    uint32_t man = b & 0x007fffffu;

    if (exp32 == 0xff) /* inf, or NaN made quiet with its top payload bits */
        return (uint16_t)(sign | 0x7c00u | (man ? 0x0200u | (man >> 13) : 0));
    int e = (int)exp32 - 112;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e >= 1) {
        uint32_t q = ((uint32_t)e << 23) | man;            /* exponent and mantissa side by side */
        return (uint16_t)(sign | shift_round_even(q, 13)); /* may carry up to 0x7c00 = inf */
    }
    /* Subnormal result (or zero). Below 2^-25 everything rounds to zero, so the shift
     * 14 - e is at most 24 here; fp32 subnormal inputs (exp32 == 0) land in this case. */
    if (e < -10) return sign;
    uint32_t m24 = man | 0x00800000u;                        /* the implicit leading 1 */
    return (uint16_t)(sign | shift_round_even(m24, 14 - e)); /* 0x400 = smallest normal */
}

float prec_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (e == 0) { /* zero or subnormal: man * 2^-24, exact in fp32 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    if (e == 31) return float_of(sign | 0x7f800000u | (man << 13));
    return float_of(sign | ((e + 112) << 23) | (man << 13));
}

void prec_fp32_to_bf16_array(const float *in, uint16_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = prec_fp32_to_bf16(in[i]);
}

void prec_bf16_to_fp32_array(const uint16_t *in, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = prec_bf16_to_fp32(in[i]);
}

void prec_fp32_to_fp16_array(const float *in, uint16_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = prec_fp32_to_fp16(in[i]);
}

void prec_fp16_to_fp32_array(const uint16_t *in, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = prec_fp16_to_fp32(in[i]);
}

float prec_round(prec_dtype t, float x) {
    switch (t) {
    case PREC_BF16: return prec_bf16_to_fp32(prec_fp32_to_bf16(x));
    case PREC_FP16: return prec_fp16_to_fp32(prec_fp32_to_fp16(x));
    case PREC_FP32: break;
    }
    return x;
}

/* prec_round(PREC_BF16, x) on the bit pattern, without a branch the compiler cannot turn into
 * a select, so that the loop vectorises: the CPU twin of the bf16 GEMMs rounds every operand
 * of every linear product with it (src/device/device.c). The same bits for every input:
 *   b + 0x7fff + (bit 16 of b), low half cleared    shift_round_even(b, 16) << 16: a carry out
 *                                                   of the low half exactly when rem > half, or
 *                                                   rem == half with the kept part odd
 *   a NaN: (b & 0xffff0000) | 0x00400000            prec_fp32_to_bf16's quiet NaN, widened */
static void round_bf16_array(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const uint32_t b = bits_of(x[i]);
        const uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
        const uint32_t quiet_nan = (b & 0xffff0000u) | 0x00400000u;
        x[i] = float_of((b & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
    }
}

void prec_round_array(prec_dtype t, float *x, size_t n) {
    if (t == PREC_FP32) return;
    if (t == PREC_BF16) {
        round_bf16_array(x, n);
        return;
    }
    for (size_t i = 0; i < n; i++) x[i] = prec_round(t, x[i]);
}
