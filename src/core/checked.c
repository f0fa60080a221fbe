/* checked.c — see checked.h. The products use the compiler's overflow builtins (GCC, Clang);
 * the conversions compare in double before converting, where every bound below is exact. */
#include "src/core/checked.h"

#include <float.h>
#include <math.h>

const char *checked_why(checked_status s) {
    switch (s) {
    case CHECKED_OK: return "";
    case CHECKED_NOT_INTEGER: return "is not an integer";
    case CHECKED_OUT_OF_RANGE: return "is out of range";
    case CHECKED_NOT_FINITE: return "is not a finite number";
    case CHECKED_BECOMES_ZERO: return "is not 0 but would become 0";
    }
    return "";
}

bool checked_mul_int(int a, int b, int *out) {
    int r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

bool checked_add_int(int a, int b, int *out) {
    int r;
    if (__builtin_add_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

bool checked_mul_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

bool checked_mul_size(size_t a, size_t b, size_t *out) {
    size_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

checked_status checked_parse_i64(const char *s, const char **end, int64_t lo, int64_t hi,
                                 int64_t *out) {
    const char *p = s;
    const bool neg = *p == '-';
    if (*p == '-' || *p == '+') p++;
    const char *digits = p;
    /* The magnitude, saturated: digits beyond what int64 holds stay out of range. */
    uint64_t m = 0;
    bool big = false;
    for (; *p >= '0' && *p <= '9'; p++) {
        const uint64_t d = (uint64_t)(*p - '0');
        if (m > (UINT64_MAX - d) / 10) big = true;
        else m = m * 10 + d;
    }
    if (end) *end = p;
    if (p == digits || (!end && *p)) return CHECKED_NOT_INTEGER;
    /* [lo, hi] inside int64: a magnitude above 2^63 is outside it, whatever its sign */
    if (big || m > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) return CHECKED_OUT_OF_RANGE;
    const int64_t v = neg ? (m == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)m) : (int64_t)m;
    if (v < lo || v > hi) return CHECKED_OUT_OF_RANGE;
    *out = v;
    return CHECKED_OK;
}

checked_status checked_to_i64(double x, checked_rounding r, int64_t lo, int64_t hi, int64_t *out) {
    if (!isfinite(x)) return CHECKED_NOT_FINITE;
    const double y = r == CHECKED_FLOOR ? floor(x) : r == CHECKED_CEIL ? ceil(x) : nearbyint(x);
    if (x != 0 && y == 0) return CHECKED_BECOMES_ZERO;
    /* 2^63 is exact in double; every int64 below it converts without undefined behaviour */
    if (!(y >= -9223372036854775808.0 && y < 9223372036854775808.0)) return CHECKED_OUT_OF_RANGE;
    const int64_t v = (int64_t)y;
    if (v < lo || v > hi) return CHECKED_OUT_OF_RANGE;
    *out = v;
    return CHECKED_OK;
}

checked_status checked_to_float(double x, float *out) {
    if (!isfinite(x)) return CHECKED_NOT_FINITE;
    if (fabs(x) > FLT_MAX) return CHECKED_OUT_OF_RANGE;
    const float f = (float)x;
    if (x != 0 && f == 0) return CHECKED_BECOMES_ZERO;
    *out = f;
    return CHECKED_OK;
}
