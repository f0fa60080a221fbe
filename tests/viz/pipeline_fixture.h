/* pipeline_fixture.h — synthetic run directories for the viz tests.
 *
 * Simulates a pipeline schedule (gpipe, 1f1b or interleaved) with fixed costs and records it
 * through the real recording API (trace_record / trace_comm / trace_memory_at) with explicit
 * times, then writes RUN_DIR/trace/rank<k>.trace for every rank — exactly what the trainer
 * will leave behind, but deterministic. Each rank's local clock is shifted by a known offset
 * (stored as clock_offset) so that the loader's clock alignment is exercised.
 *
 * Not a schedule reference: it only has to produce plausible, repeatable traces.
 */
#ifndef TRIDENT_TESTS_VIZ_PIPELINE_FIXTURE_H
#define TRIDENT_TESTS_VIZ_PIPELINE_FIXTURE_H

typedef struct {
    const char *schedule;   /* "gpipe" | "1f1b" | "interleaved" */
    int tp, pp, dp, vpp, m; /* vpp > 1 only for interleaved (m must be a multiple of pp) */
    int steps;              /* complete steps to record */
    double t_fwd, t_bwd;    /* seconds per micro-batch per stage (divided by vpp per chunk) */
    double t_xfer;          /* seconds per p2p transfer */
    double t_opt;           /* optimizer seconds */
    int with_memory;        /* record memory samples */
    int open_last_step;     /* leave one more step unfinished (a crash mid-step) */
    int eval_last_step;     /* after the last complete step, a held-out evaluation (TRACE_EVAL
                               forwards carrying that step), 4 ms on every rank */
} fixture_run;

/* Defaults: 1 ms forward, 2 ms backward, 0.1 ms transfers, 0.5 ms optimizer, 2 steps. */
fixture_run fixture_defaults(const char *schedule, int pp, int m, int vpp);

/* Writes the run's trace files under dir/trace/. */
void fixture_write_run(const char *dir, const fixture_run *cfg);

#endif /* TRIDENT_TESTS_VIZ_PIPELINE_FIXTURE_H */
