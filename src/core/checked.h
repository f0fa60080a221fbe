/* checked.h — arithmetic on sizes and conversions of numbers that are refused instead of
 * wrapped: the one place a product of sizes, a parsed integer or a float made into an integer
 * is checked, so that no value with another meaning ever reaches the code.
 *
 * Three things go wrong silently in C, and each has its function here:
 *
 *   a product (or sum) of sizes wraps     65536 × 65536 as int is 0, and `world % 0` is SIGFPE;
 *                                         641 × 6700417 is 1, which divides every world.
 *                                         checked_mul_int / checked_add_int / checked_mul_i64 /
 *                                         checked_mul_size say false instead.
 *   a parsed integer does not fit         strtol("4294967297") cast to int is 1.
 *                                         checked_parse_i64 takes the range the destination holds.
 *   a float becomes another integer       (size_t)1e30 is undefined (often 0 on x86);
 *   (or a smaller float)                  (float)1e-50 is 0, which for many settings means
 *                                         "off" or "forever". checked_to_i64 / checked_to_float
 *                                         refuse a value that is not finite, that lands outside
 *                                         the range, or that is not 0 but would become 0.
 *
 * Every function returns a status (CHECKED_OK or why not) and writes its result only on
 * success; checked_why() gives the rule in words, for the caller's one-line message, which
 * names the value as the user gave it:
 *
 *     int64_t n;
 *     const char *end;
 *     checked_status s = checked_parse_i64(p, &end, 1, INT_MAX, &n);
 *     if (s != CHECKED_OK)
 *         die("--stage-layers '%s': %.*s %s (a layer count is 1 to %d)", all, (int)(end - p), p,
 *             checked_why(s), INT_MAX);
 *
 * Not here: the rules of any one setting (their modules check them, with their flags' names).
 */
#ifndef TRIDENT_CORE_CHECKED_H
#define TRIDENT_CORE_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    CHECKED_OK = 0,
    CHECKED_NOT_INTEGER,  /* text that is not a decimal integer */
    CHECKED_OUT_OF_RANGE, /* outside [lo, hi] (after rounding), or a product that wraps */
    CHECKED_NOT_FINITE,   /* nan or ±inf */
    CHECKED_BECOMES_ZERO, /* not 0, but 0 once converted: a different meaning */
} checked_status;

/* The rule a status breaks, as words after the value: "is not an integer", "is out of range",
 * "is not a finite number", "is not 0 but would become 0"; "" for CHECKED_OK. */
const char *checked_why(checked_status s);

/* ---- products and sums: true and *out = the exact result, or false (nothing written) ---- */
bool checked_mul_int(int a, int b, int *out);
bool checked_add_int(int a, int b, int *out);
bool checked_mul_i64(int64_t a, int64_t b, int64_t *out);
bool checked_mul_size(size_t a, size_t b, size_t *out);

/* ---- parsing ---------------------------------------------------------------------------- */

/* A decimal integer (optional sign, then digits) from s, inside [lo, hi].
 * end == NULL: the whole of s must be the number. end != NULL: the number may be followed by
 * anything, and *end is set after its last digit (after the sign when there are no digits),
 * so that a list ("3,3,2") can be read one number at a time and a bad one printed as typed
 * ("%.*s", (int)(*end - s), s).
 * CHECKED_NOT_INTEGER: no digits, or (end == NULL) something after them; CHECKED_OUT_OF_RANGE:
 * digits whose value is outside [lo, hi], however many there are (never wrapped). */
checked_status checked_parse_i64(const char *s, const char **end, int64_t lo, int64_t hi,
                                 int64_t *out);

/* ---- conversions ------------------------------------------------------------------------ */

typedef enum { CHECKED_FLOOR, CHECKED_CEIL, CHECKED_NEAREST } checked_rounding;

/* x rounded as `r` into an integer in [lo, hi]. CHECKED_NOT_FINITE for nan and ±inf,
 * CHECKED_BECOMES_ZERO when x is not 0 but rounds to 0 (a positive capacity that would become
 * "none"), CHECKED_OUT_OF_RANGE when the rounded value is outside [lo, hi]. */
checked_status checked_to_i64(double x, checked_rounding r, int64_t lo, int64_t hi, int64_t *out);

/* x as the nearest float: CHECKED_NOT_FINITE for nan and ±inf, CHECKED_OUT_OF_RANGE when |x|
 * is above FLT_MAX (it would be inf), CHECKED_BECOMES_ZERO when x is not 0 but below the
 * smallest float (1.4e-45: it would be 0). */
checked_status checked_to_float(double x, float *out);

#endif /* TRIDENT_CORE_CHECKED_H */
