/* mappings.c — f, g, scatter and gather over the tensor-parallel group, and the sequence-parallel
 * g and ḡ (all-gather / reduce-scatter along the sequence). See mappings.h. */
#include "src/tp/mappings.h"

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/runtime/comm.h"

static int active(const comm_group *tp) { return tp && comm_size(tp) > 1; }

/* exercise 2 begins: f and g (tutorials/exercises/02-f-and-g) */
void tp_copy_to_region_forward(comm_group *tp, float *x, size_t n) {
    (void)tp;
    (void)x;
    (void)n; /* identity: every TP rank already holds the full input */
}

void tp_copy_to_region_backward(comm_group *tp, float *dx, size_t n) {
    if (active(tp)) comm_all_reduce(tp, dx, n, COMM_FLOAT32, COMM_SUM);
}

void tp_reduce_from_region_forward(comm_group *tp, float *x, size_t n) {
    if (active(tp)) comm_all_reduce(tp, x, n, COMM_FLOAT32, COMM_SUM);
}

void tp_reduce_from_region_backward(comm_group *tp, float *dx, size_t n) {
    (void)tp;
    (void)dx;
    (void)n; /* identity: the sum's gradient reaches every term unchanged */
}

/* exercise 2 ends */

void tp_all_reduce_sum(comm_group *tp, float *x, size_t n) {
    if (active(tp)) comm_all_reduce(tp, x, n, COMM_FLOAT32, COMM_SUM);
}

void tp_all_reduce_max(comm_group *tp, float *x, size_t n) {
    if (active(tp)) comm_all_reduce(tp, x, n, COMM_FLOAT32, COMM_MAX);
}

/* Columns [r*K, (r+1)*K) of each of the N rows of x (N, K*tp). */
static void take_columns(float *out, const float *x, size_t N, size_t K, size_t tp, size_t r) {
    for (size_t n = 0; n < N; n++)
        device_copy(out + n * K, x + n * K * tp + r * K, K * sizeof(float));
}

/* x_all (N, K*tp) from per-rank blocks gathered as (tp, N, K). */
static void interleave_columns(float *out, const float *blocks, size_t N, size_t K, size_t tp) {
    for (size_t r = 0; r < tp; r++)
        for (size_t n = 0; n < N; n++)
            device_copy(out + n * K * tp + r * K, blocks + (r * N + n) * K, K * sizeof(float));
}

void tp_scatter_to_region_forward(comm_group *tp, float *out, const float *x, size_t N, size_t K) {
    size_t p = tp ? (size_t)comm_size(tp) : 1, r = tp ? (size_t)comm_rank(tp) : 0;
    take_columns(out, x, N, K, p, r);
}

/* out (N, K*tp) = [x_0 | x_1 | ...], x_r (N, K) from rank r. One row: the gathered blocks are
 * already in place. */
static void gather_columns(comm_group *tp, float *out, const float *x, size_t N, size_t K) {
    size_t p = tp ? (size_t)comm_size(tp) : 1;
    if (p == 1) {
        device_copy(out, x, N * K * sizeof(float));
        return;
    }
    if (N == 1) {
        comm_all_gather(tp, x, out, K, COMM_FLOAT32);
        return;
    }
    float *blocks = device_alloc(p * N * K * sizeof(float), "gathered columns");
    comm_all_gather(tp, x, blocks, N * K, COMM_FLOAT32);
    interleave_columns(out, blocks, N, K, p);
    device_free(blocks);
}

void tp_scatter_to_region_backward(comm_group *tp, float *dx, const float *dout, size_t N,
                                   size_t K) {
    gather_columns(tp, dx, dout, N, K);
}

void tp_gather_from_region_forward(comm_group *tp, float *out, const float *x, size_t N, size_t K) {
    gather_columns(tp, out, x, N, K);
}

void tp_gather_from_region_backward(comm_group *tp, float *dx, const float *dout, size_t N,
                                    size_t K) {
    size_t p = tp ? (size_t)comm_size(tp) : 1, r = tp ? (size_t)comm_rank(tp) : 0;
    take_columns(dx, dout, N, K, p, r);
}

/* ---------------------------------------------------------------- sequence parallelism */

/* out (N, K) = Σ over ranks of their x (N, K*tp), columns [r*K, (r+1)*K) on rank r. The
 * reduce-scatter wants rank r's part contiguous, so with several rows the column blocks are
 * laid out (tp, N, K) first. */
static void reduce_scatter_columns(comm_group *tp, float *out, const float *x, size_t N, size_t K) {
    size_t p = tp ? (size_t)comm_size(tp) : 1;
    if (p == 1) {
        device_copy(out, x, N * K * sizeof(float));
        return;
    }
    if (N == 1) {
        comm_reduce_scatter(tp, x, out, K, COMM_FLOAT32, COMM_SUM);
        return;
    }
    float *blocks = device_alloc(p * N * K * sizeof(float), "sequence blocks");
    for (size_t r = 0; r < p; r++) take_columns(blocks + r * N * K, x, N, K, p, r);
    comm_reduce_scatter(tp, blocks, out, N * K, COMM_FLOAT32, COMM_SUM);
    device_free(blocks);
}

/* A (B, T, C) tensor is B rows of T*C floats; rank r's positions are the column block
 * [r*Tl*C, (r+1)*Tl*C) of each row, so the sequence operators are the column ones with
 * N = B and K = Tl*C. */
void tp_gather_from_sequence_region_forward(comm_group *tp, float *out, const float *x, size_t B,
                                            size_t Tl, size_t C) {
    gather_columns(tp, out, x, B, Tl * C); /* g: all-gather */
}

void tp_gather_from_sequence_region_backward(comm_group *tp, float *dx, const float *dout, size_t B,
                                             size_t Tl, size_t C) {
    reduce_scatter_columns(tp, dx, dout, B, Tl * C); /* g backward: reduce-scatter */
}

void tp_reduce_scatter_to_sequence_region_forward(comm_group *tp, float *out, const float *x,
                                                  size_t B, size_t Tl, size_t C) {
    reduce_scatter_columns(tp, out, x, B, Tl * C); /* ḡ: reduce-scatter */
}

void tp_reduce_scatter_to_sequence_region_backward(comm_group *tp, float *dx, const float *dout,
                                                   size_t B, size_t Tl, size_t C) {
    gather_columns(tp, dx, dout, B, Tl * C); /* ḡ backward: all-gather */
}
