/* clock_sync.h — put every rank's trace times on rank 0's clock, with an honest error bar.
 *
 * A timeline of many ranks is only true if their clocks agree: a receive drawn ending
 * before its send began is a clock error, not physics. Two cases:
 *
 *   same host as rank 0   CLOCK_MONOTONIC is one clock for every process of a machine, so the
 *                         offset is 0 and exact (uncertainty 0). Measuring it anyway would
 *                         only add the measurement's error.
 *   another host          Cristian's method against rank 0, n ping-pongs, keeping the one of
 *                         least round trip (RTT):
 *
 *     this rank   t0 ──ping──────────────┐            ┌──────────> t1 (local clock)
 *     rank 0                             └── ts read ─┘              (rank 0's clock)
 *
 *                         ts was read somewhere in [t0, t1], so the offset (rank 0 time minus
 *                         local time) lies in [ts - t1, ts - t0]: estimate ts + RTT/2 - t1,
 *                         error at most RTT/2 (the uncertainty). Every rank of that host
 *                         measures, and all of them keep the best measurement (least RTT):
 *                         they read one clock, so they get one offset.
 *
 *   clock_sync_result cs = clock_sync(CLOCK_SYNC_EXCHANGES);   // every rank calls it
 *   header.clock_offset = cs.offset;  header.clock_uncertainty = cs.uncertainty;
 *
 * "Same host" is MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): the ranks of rank 0's node.
 *
 * Test-only switch: TRIDENT_TEST_CLOCK_SKEW="S" (seconds) makes every rank other than 0
 * pretend to be on another host whose clock reads time_now() + rank * S. The estimate is
 * made on that pretend clock (measured_offset, which should come out near -rank * S within
 * the uncertainty), and the pretend skew is then taken back out of `offset`, so a traced
 * run under the switch still gets offsets for its real time_now() — through the cross-host
 * path, with a non-zero uncertainty. Unset: one getenv.
 *
 * Not here: the trace header (src/trace), the run id (the trainer makes it).
 */
#ifndef TRIDENT_RUNTIME_CLOCK_SYNC_H
#define TRIDENT_RUNTIME_CLOCK_SYNC_H

#include <stdbool.h>

enum { CLOCK_SYNC_EXCHANGES = 16 }; /* ping-pongs per rank on another host */

typedef struct {
    double offset;          /* seconds to add to this rank's time_now() to get rank 0's */
    double uncertainty;     /* |true offset - offset| <= uncertainty; 0 on rank 0's host */
    bool same_host;         /* shares rank 0's clock: offset 0 by construction */
    double measured_offset; /* the estimate for the clock that was read: = offset, except
                             * under TRIDENT_TEST_CLOCK_SKEW (the pretend clock's offset) */
    double rtt;             /* round trip of the exchange kept; 0 on rank 0's host */
} clock_sync_result;

/* Collective over all ranks (after dist_init()): every rank calls it with the same
 * `exchanges` (>= 1). Without MPI, or with one rank, it returns offset 0 at once. */
clock_sync_result clock_sync(int exchanges);

#endif /* TRIDENT_RUNTIME_CLOCK_SYNC_H */
