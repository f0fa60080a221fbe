/* replay.h — a run re-timed "as if each rank had its own core".
 *
 * When 8 ranks time-share 2 cores, a rank's wall clock counts the time it sat descheduled:
 * forwards look 4x longer, and a receive seems to wait for a send that was only late because
 * the sender was not running. The replay view keeps what each rank did and in which order,
 * and re-times it from what the rank really spent:
 *
 *     recorded (wall)   rank 0 |F0~~~~~|F1~~~~~~|   ...      ~ = descheduled
 *                       rank 1      |recv....|F0~~~~~~|
 *     replayed          rank 0 |F0|F1|                       F lasts its thread CPU time
 *                       rank 1    |r|F0|                     recv ends at send + transfer
 *
 * It is a discrete-event simulation over the run's own dependency graph:
 *   - each rank runs its recorded events in recorded (start-time) order, starting at 0;
 *   - a compute event (forward, backward, optimizer, data, eval, and the step around them)
 *     lasts its own CPU time `cpu`, its wall time when cpu < 0; events nested inside it
 *     (e.g. the tensor-parallel all-reduces of a forward) are replayed in place, and the
 *     parent's own time, excluding them, is spread over the gaps between them;
 *   - a receive ends at max(its start, its matched send's start) + its transfer cost;
 *   - a send lasts its transfer cost and never waits for the receiver (sends are posted);
 *   - a collective ends at max(start of every member) + its transfer cost, the same for all;
 *   - a collective of the communication stream (TRACE_STREAM: ZeRO-3's prefetched gathers,
 *     the overlapped buckets) runs beside the rank's program: it is issued where the last
 *     piece of compute before it ended (as src/analyze/step_graph.h hands off), starts when
 *     issued and the stream is free, ends like a collective (matched only with the other
 *     ranks' stream calls), and the main lane's "wait" recorded with it lasts until it ends;
 *   - time outside any recorded event (start-up, logging between steps) is not replayed.
 * The result is a NEW trace_run of the same shape (ranks, events, send/receive pairs) with
 * times from 0, clock offsets 0 and run id "replay:<original id>", so every reader and the
 * renderer take it as they are; pictures label it TRACE_REPLAY_LABEL.
 *
 * The estimates, and why (details at the top of replay.c):
 *   own time of a parent  = cpu − cpu of children, where a child whose cpu is unknown gets
 *                           wall × (the parent's cpu / wall): the CPU share a time-shared
 *                           rank got is taken as uniform across the parent — except a wait
 *                           for the stream, which sleeps (0: ZeRO-3's forward, mostly waits
 *                           in wall time, had been left a third of its compute);
 *   transfer cost         = t_end − t_ready (the part after the data was there), capped by
 *                           the event's cpu when known; for a send or receive also capped by
 *                           bytes / the fastest p2p copy measured in the run; for a collective
 *                           the least over its members (the last member to arrive hardly waited),
 *                           capped by its bus bytes / that fastest p2p copy, and by the lower
 *                           quartile of its class (op, bytes, members) when the run made at
 *                           least 8 such calls: a member descheduled mid-ring stalls a call, and
 *                           runs without p2p messages (tensor parallelism alone) have no copy
 *                           speed to cap it by.
 * Collectives are the calls trace_run_read matched across ranks (trace.h: group instance,
 * k-th call on each member), so the replay and the wall view pair the same events; a call it
 * could not match is replayed alone, on its own transfer.
 *
 * Not here: reading files (trace.h), drawing (viz/). No MPI.
 */
#ifndef TRIDENT_TRACE_REPLAY_H
#define TRIDENT_TRACE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>

#include "src/trace/trace.h"

/* What pictures of a replayed run say about it. */
#define TRACE_REPLAY_LABEL "replay: as if each rank had its own core"
/* The run id of a replayed run starts with this. */
#define TRACE_REPLAY_ID_PREFIX "replay:"

/* The re-timed run (free with trace_run_free), or NULL and one line in err: a rank stuck in
 * the replay ("replay deadlock: rank 2 waits at event 57 (recv from rank 1, tag 12) ..."),
 * or no room for the temporary files the run is rebuilt from. Events begun but never ended
 * (TRACE_OPEN) are left out. `r` is not changed. */
trace_run *trace_run_replay(const trace_run *r, char *err, size_t errlen);

/* True when `r` came from trace_run_replay (its run id says so). */
bool trace_run_is_replay(const trace_run *r);

#endif /* TRIDENT_TRACE_REPLAY_H */
