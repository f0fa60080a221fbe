/* clock.h — the one clock: monotonic seconds since an arbitrary start, as a double.
 * Used for progress lines, benchmarks and trace events (which store offsets to rank 0). */
#ifndef TRIDENT_CORE_CLOCK_H
#define TRIDENT_CORE_CLOCK_H

#include <time.h>

static inline double time_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif /* TRIDENT_CORE_CLOCK_H */
