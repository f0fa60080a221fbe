/* testing.h — what every Trident test shares.
 *
 * - expect_close(): the one numeric comparison (absolute + relative tolerance); on a
 *   mismatch it prints the first few differing elements, then fails the cmocka test.
 * - mpi_test_launch(): makes a cmocka test binary an MPI program. Run by Bazel (no
 *   mpirun around it), it re-executes itself under `mpirun -np N --oversubscribe`;
 *   already under mpirun, it returns and the tests run on every rank. Only rank 0
 *   prints cmocka's progress; failures print on every rank, and a failure aborts the
 *   whole job (CMOCKA_TEST_ABORT) so no rank waits forever in a collective.
 * - The Open MPI environment: tools/mpi_env.sh is the one source, for scripts, tests and
 *   `trident bench` alike (a genrule turns it into tools/mpi_env.h). test_mpi_setenv() sets it in this process, test_mpirun_prefix() writes it in front
 *   of an mpirun command line, test_run_job() runs a program under that command line.
 * - test_trident_path(): the built `trident` binary, for tests that run the CLI.
 * - assert_run_trace_causal(): the trace of every traced multi-rank run a test makes must
 *   be physically possible (no receive before its send, no collective before its last member).
 */
#ifndef TRIDENT_TESTS_TESTING_H
#define TRIDENT_TESTS_TESTING_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka must come after the headers above. */
#include <cmocka.h>

/* |got - want| <= atol + rtol * |want| for every element, else fail with the first mismatches. */
void expect_close(const float *got, const float *want, size_t n, double atol, double rtol,
                  const char *what);
/* Largest relative difference max|got-want| / max(max|want|, tiny) over the arrays. */
double max_rel_diff(const float *got, const float *want, size_t n);

/* Re-executes argv under mpirun with `np` ranks unless already inside an MPI job. */
void mpi_test_launch(int argc, char **argv, int np);

/* Sets the Open MPI environment of tools/mpi_env.sh (compiled in through //tools:mpi_env):
 * `export NAME=VALUE` sets NAME, `export NAME=${NAME:-VALUE}` sets it unless the caller's
 * environment already has it. */
void test_mpi_setenv(void);

/* Forces the shared-memory single-copy mechanism off, so that Trident's progress-thread
 * fallback (src/runtime/dist.h) carries large messages. Passed as extra_env, explicitly, by
 * the tests that exercise that path on purpose (failures, timeouts, checkpoints). */
#define TEST_MPI_NO_SINGLE_COPY "OMPI_MCA_btl_vader_single_copy_mechanism=none"

/* "env <tools/mpi_env.sh> EXTRA_ENV mpirun -np NP --oversubscribe" into buf[cap] (returned);
 * extra_env: more NAME=VALUE words, or "". The program and its arguments follow. */
const char *test_mpirun_prefix(char *buf, size_t cap, int np, const char *extra_env);

/* Runs `PROGRAM ARGS` under test_mpirun_prefix(np, extra_env) with `--timeout 60` (mpirun
 * ends a job that outlives it), stdout+stderr captured into out[cap]; returns the exit
 * status (as run_capture) and the wall time in *secs (NULL: not wanted). */
int test_run_job(int np, const char *extra_env, const char *program, const char *args, char *out,
                 size_t cap, double *secs);

/* Path of the trident binary (a data dependency of the test), or dies. */
const char *test_trident_path(void);

/* Path of a runfile given by its path in the repository ("tests/runtime/dist_fail_helper"):
 * under Bazel in the test's runfiles, else under bazel-bin/. Fails the test if absent. */
const char *test_runfile(const char *relpath);

/* Runs a shell command, captures stdout+stderr into out (NUL-terminated, truncated to cap),
 * and returns the exit status (or 128+signal). */
int run_capture(const char *cmd, char *out, size_t cap);

/* Runs fn(arg) in a forked child with stdout+stderr captured into out (NUL-terminated);
 * returns its exit status (or 128+signal). For code that ends the process (die()). */
int run_in_child(void (*fn)(const void *), const void *arg, char *out, size_t cap);

/* The "loss" of every line of RUN_DIR/metrics.jsonl, in order; returns how many (0 if no file). */
int read_metric_losses(const char *run_dir, double *loss, int cap);

/* The trace of a traced run (RUN_DIR/trace/rank<k>.trace) must be physically possible: every
 * receive ends after its send began and every collective after its last member entered
 * (trace_run_check_causality, clock uncertainties as slack), and every send, receive and
 * collective found its partners. Fails the cmocka test with the checker's message. */
void assert_run_trace_causal(const char *run_dir);
/* Every rank's compute spans (the begin/end spans but steps: data, forward, backward, weight,
 * optimizer, eval), in the order they were begun, follow each other without overlap, and all
 * but evaluations lie inside their step: what one device stream does, however it is timed
 * (host clock, or device markers: src/trace/trace.h, "Device time"; 50 us of slack between
 * marker times resolved against different reference pairs). Returns the spans checked. */
int assert_run_trace_spans_in_order(const char *run_dir);
/* The same for every run directory (a directory with trace/rank0.trace) under root, up to
 * a few levels deep; returns how many were checked. For tests that run scripts. */
int assert_run_traces_causal_under(const char *root);

/* A fresh empty directory under $TEST_TMPDIR (or /tmp); returns a static buffer. */
const char *test_tmpdir(const char *name);

/* The page count of the PDF at path: its "/Type /Page" objects (not "/Type /Pages"). The test
 * fails naming the path when it was not written. */
int test_pdf_pages(const char *path);

#endif /* TRIDENT_TESTS_TESTING_H */
