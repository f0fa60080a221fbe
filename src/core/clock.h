/* clock.h — the clocks: monotonic wall seconds since an arbitrary start, as a double, and the
 * calling thread's CPU seconds. Wall time is for progress lines, benchmarks and trace events
 * (which store offsets to rank 0); CPU time tells how much of a span a thread really ran,
 * which differs from wall time when more ranks than cores share a machine. */
#ifndef TRIDENT_CORE_CLOCK_H
#define TRIDENT_CORE_CLOCK_H

#include <time.h>

static inline double time_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double thread_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif /* TRIDENT_CORE_CLOCK_H */
