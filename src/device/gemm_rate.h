/* gemm_rate.h — the machine's measured sgemm rate: the denominator of MFU on the cpu device.
 *
 * One process multiplies float matrices of a given shape (the trainer asks for a large square
 * one, GEMM_RATE_PEAK_DIM) through OpenBLAS at the run's BLAS thread count for about
 * GEMM_RATE_SECONDS, once per machine: the result is cached in
 *
 *   $XDG_CACHE_HOME/trident/gemm-rate   (else ~/.cache/trident/gemm-rate)
 *
 * one line per key "<cpu model> | threads <t> | <N>x<C>x<OC>" and its FLOP/s, rewritten
 * atomically. The measurement is cut into short windows and the fastest counts: on a shared
 * machine the slower windows measured a neighbour holding the core. TRIDENT_GEMM_RATE=<FLOP/s>
 * (e.g. 2.4e10) overrides both. Under mpirun rank 0 measures while its peers wait in their
 * first step (Open MPI yields when oversubscribed, yet the waiting ranks still take some CPU):
 * on a busy machine the first value can be low and every later MFU high; delete the cache
 * line (or the file) to measure again, or set TRIDENT_GEMM_RATE.
 *
 * What a job is compared with (gemm_rate_job_peak): ranks share the cores of one machine,
 * so the job can at best run min(world, cores / threads) processes at the measured rate at
 * once. 8 ranks with one thread each on 2 cores: 2 × the one-process rate, not 8 ×. A job's
 * model FLOP/s (all ranks together) divided by that is its MFU.
 *
 *   gemm_rate r = gemm_rate_get(threads, N, C, 4 * C);
 *   double peak = gemm_rate_job_peak(&r, world, gemm_rate_cores());
 *
 * Not here: the model's FLOP count (src/model/flops.h); GPUs (the cuda device has no rate
 * here, and its runs print model FLOP/s alone).
 */
#ifndef TRIDENT_DEVICE_GEMM_RATE_H
#define TRIDENT_DEVICE_GEMM_RATE_H

#include <stdbool.h>
#include <stddef.h>

#define GEMM_RATE_SECONDS 0.3 /* length of one measurement */
#define GEMM_RATE_WINDOWS 6   /* ... cut into windows; the fastest counts */
#define GEMM_RATE_PEAK_DIM                                                                         \
    512 /* the trainer's peak: a (512,512) @ (512,512) product, where
                                * OpenBLAS runs near the core's peak (the model's own products,
                                * often far smaller, reach less: MFU counts that shortfall) */

typedef struct {
    double flops_per_s; /* one process, `threads` BLAS threads, at the shape below */
    int threads;
    size_t N, C, OC;    /* the product measured: (N,C) @ (OC,C)^T */
    const char *source; /* "measured", "cached" or "TRIDENT_GEMM_RATE" */
} gemm_rate;

/* The rate from TRIDENT_GEMM_RATE, else the cache, else measured now (and cached). Dies
 * naming the value when TRIDENT_GEMM_RATE is not a positive number. Sets the BLAS thread
 * count to `threads` (as the trainer does). */
gemm_rate gemm_rate_get(int threads, size_t N, size_t C, size_t OC);

/* One measurement of about `seconds`, at the current BLAS thread count: FLOP/s of the
 * fastest of GEMM_RATE_WINDOWS windows. */
double gemm_rate_measure(size_t N, size_t C, size_t OC, double seconds);

/* The cache file's path into buf (false: neither XDG_CACHE_HOME nor HOME is set). */
bool gemm_rate_cache_path(char *buf, size_t cap);

/* The machine's name in the cache: /proc/cpuinfo's "model name" ("unknown cpu" elsewhere),
 * without '|', tabs or newlines. */
void gemm_rate_cpu_model(char *buf, size_t cap);

/* Cores this process may run on (its CPU affinity), at least 1. */
int gemm_rate_cores(void);

/* What `world` ranks of `r->threads` threads sharing `cores` can reach at most:
 * r->flops_per_s × min(world, max(1, cores / threads)). */
double gemm_rate_job_peak(const gemm_rate *r, int world, int cores);

#endif /* TRIDENT_DEVICE_GEMM_RATE_H */
