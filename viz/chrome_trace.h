/* chrome_trace.h — trace files as Chrome trace JSON, for Perfetto (ui.perfetto.dev) or
 * chrome://tracing.
 *
 * One process per rank, named "rank 3 (tp 1, pp 1, dp 0)" (prefixed by the run's name when
 * several runs share the file), with threads:
 *
 *   tid 1 "steps"        tid 2 "compute" (forward / backward / optimizer / data / eval)
 *   tid 3 "p2p send"     tid 4 "p2p recv"     tid 5 "collectives"
 *
 * Every slice carries its time class (viz/timeline.h) as its category and in args.class:
 * compute slices are "compute" (args.kind says forward / backward / …; for messages it says
 * send / recv / collective, or "all-to-all" and "ring" for the MoE dispatch and the ring
 * attention steps, as viz_tl_message_kind tells them apart); a send, receive or
 * collective becomes two slices, "wait" (start -> ready: blocked on a peer; category "wait")
 * and the transfer (ready -> end: bytes moving; category "transfer", args wait_us and
 * bandwidth_gbps). A number that is not finite (a bandwidth over zero seconds) is written as
 * null; JSON has no NaN.
 * Each matched send -> receive pair becomes a flow arrow (ph "s" on the send, ph "f" on the
 * receive, the same id). Memory samples become a counter track "memory" (ph "C").
 * Times are µs relative to the earliest event of each run, on rank 0's clock. Every event of
 * every step is written (the pictures show one step; this is for digging in).
 *
 * Not here: the timeline model (this reads trace files directly).
 */
#ifndef TRIDENT_VIZ_CHROME_TRACE_H
#define TRIDENT_VIZ_CHROME_TRACE_H

#include <stdio.h>

#include "src/trace/trace.h"

/* Writes one JSON document for nruns runs; names[i] names run i (used only when nruns > 1). */
void viz_chrome_trace_write(FILE *f, const trace_run *const *runs, const char *const *names,
                            int nruns);

enum {
    VIZ_CT_TID_STEPS = 1,
    VIZ_CT_TID_COMPUTE,
    VIZ_CT_TID_SEND,
    VIZ_CT_TID_RECV,
    VIZ_CT_TID_COLL,
    VIZ_CT_TID_STREAM, /* the communication stream's collectives (only when there are some) */
};

#endif /* TRIDENT_VIZ_CHROME_TRACE_H */
