/* synthetic_run.h — a 2-rank 1F1B step whose every number is known, for the analyze tests.
 *
 * p = 2, m = 2, one step (step 1). Stage 0 (rank 0) costs F 1 ms, B 2 ms; stage 1 (rank 1)
 * is the slow one: F 2 ms, B 3 ms. Every message moves in 0.1 ms; a send never waits, a
 * receive waits until its send began (the replay's rules, so its replay is itself):
 *
 *   ms       0    1   2   3       6  6.3      8.3      11.3  13.4
 *   rank 0   |F0..|s|F1|s|recv wait.....|x|B0....|recv wait...|x|B1....|
 *   rank 1   |wait|x|F0.....|B0.........|s|x|F1.....|B1........|s|
 *
 * The critical path (13.4 ms): rank 0 F0 1, rank 1 recv 0.1, F0 2, B0 3, send 0.1, recv 0.1,
 * F1 2, B1 3, rank 0 recv 0.1, B1 2 — forward 5, backward 8, transfer 0.4.
 */
#ifndef TRIDENT_TESTS_ANALYZE_SYNTHETIC_RUN_H
#define TRIDENT_TESTS_ANALYZE_SYNTHETIC_RUN_H

#include "src/trace/trace.h"

#define SYN_MS 1e-3
#define SYN_STEP (13.4 * SYN_MS)

/* Writes the run's two trace files under dir/trace/. */
void synthetic_run_write(const char *dir);

/* The run written into a fresh test directory called name, read back (trace_run_read); the
 * test fails with the reader's line if it cannot be. */
trace_run *synthetic_run_load(const char *name);

/* For other hand-timed runs: rank r's recorder of a pp × dp layout (tp 1, rank = pp_rank · dp
 * + dp_rank, m micro-batches, 1F1B, clock offset 0); its file written as dir/trace/rank<r>
 * .trace (the recorder freed); the run directory read back (the test fails if it cannot be). */
trace_recorder *synthetic_rank_open(int r, int pp, int dp, int m, const char *run_id);
void synthetic_rank_write(trace_recorder *t, const char *dir, int r);
trace_run *synthetic_run_read(const char *dir);


#endif /* TRIDENT_TESTS_ANALYZE_SYNTHETIC_RUN_H */
