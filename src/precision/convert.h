/* convert.h — the number formats of mixed-precision training, done by hand in C.
 *
 * Trident keeps its tensors in fp32 buffers. Mixed precision rounds values to the 16-bit
 * format (round to nearest, ties to even) where the hardware would hold them in 16 bits, and
 * widens them back to fp32 where they are used:
 *   - parameters and gradients (--bf16, --fp16): rounded in place after each step and each
 *     backward, kept as floats, beside the fp32 master weights of the optimizer;
 *   - the operands of the linear layers' products (--bf16 only; src/device/device.h): on a GPU
 *     cast to bf16 and multiplied by the bf16 tensor-core GEMMs with fp32 accumulation; on the
 *     CPU devices rounded to bf16 values with prec_round_array and multiplied by the fp32 sgemm,
 *     which is the same product (a product of two bf16 values is exact in fp32) up to the order
 *     of the sums. fp16 runs keep fp32 products, and so do the attention's products.
 * The 16-bit values are stored as raw bit patterns in uint16_t:
 *
 *   fp32  s eeeeeeee mmmmmmmmmmmmmmmmmmmmmmm   8-bit exponent, 23-bit mantissa
 *   bf16  s eeeeeeee mmmmmmm                   fp32's range, 7-bit mantissa (= top half of fp32)
 *   fp16  s eeeee    mmmmmmmmmm                5-bit exponent (max 65504), subnormals down to 2^-24
 *
 * Rules kept by every conversion here:
 *   - round to nearest, ties to even;
 *   - NaN stays NaN (quiet, sign kept); ±inf stays ±inf;
 *   - fp16: a value beyond the largest finite (65504, or rather >= 65520 after rounding)
 *     becomes ±inf; tiny values become fp16 subnormals, then ±0;
 *   - widening (16 -> 32 bits) is exact.
 *
 *   uint16_t h = prec_fp32_to_fp16(0.1f);   // 0x2E66
 *   float back = prec_fp16_to_fp32(h);       // 0.0999755859375
 *   prec_round_array(PREC_BF16, w, n);       // w[i] = nearest bf16 of w[i], kept as float
 *
 * Not here: the loss scaler (loss_scaler.h) and any choice of which tensors are kept in
 * which format (the trainer decides that).
 */
#ifndef TRIDENT_PRECISION_CONVERT_H
#define TRIDENT_PRECISION_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The precision a run trains in: pure fp32, or mixed precision with 16-bit params/grads
 * and fp32 master weights. */
typedef enum { PREC_FP32 = 0, PREC_BF16 = 1, PREC_FP16 = 2 } prec_dtype;

/* "fp32", "bf16", "fp16". */
const char *prec_dtype_name(prec_dtype t);
/* Bytes of one element: 4, 2, 2. */
size_t prec_dtype_bytes(prec_dtype t);
/* Parses "fp32" | "bf16" | "fp16" into *out; false for anything else. */
bool prec_dtype_parse(const char *s, prec_dtype *out);

uint16_t prec_fp32_to_bf16(float x);
float prec_bf16_to_fp32(uint16_t h);
uint16_t prec_fp32_to_fp16(float x);
float prec_fp16_to_fp32(uint16_t h);

/* Array versions: out[i] = convert(in[i]) for i < n. */
void prec_fp32_to_bf16_array(const float *in, uint16_t *out, size_t n);
void prec_bf16_to_fp32_array(const uint16_t *in, float *out, size_t n);
void prec_fp32_to_fp16_array(const float *in, uint16_t *out, size_t n);
void prec_fp16_to_fp32_array(const uint16_t *in, float *out, size_t n);

/* The nearest value of format t, as a float: round-trip through the 16-bit format
 * (identity for PREC_FP32). */
float prec_round(prec_dtype t, float x);
/* x[i] = prec_round(t, x[i]) in place. */
void prec_round_array(prec_dtype t, float *x, size_t n);

#endif /* TRIDENT_PRECISION_CONVERT_H */
