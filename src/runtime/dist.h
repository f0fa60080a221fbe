/* dist.h — the process's place in the job: start-up, rank, world size, device, shutdown.
 *
 *   dist_init(&argc, &argv);     // first thing in a subcommand that may run under mpirun
 *   int r = dist_rank(), n = dist_world_size();
 *   int dev = dist_bind_device(); // CUDA device of this rank, -1 on a CPU build
 *   ...
 *   dist_finalize();
 *
 * Launched by mpirun (the environment has OMPI_COMM_WORLD_SIZE), dist_init() starts MPI,
 * finds the rank and the local rank (rank among the processes of the same node, from
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)), and — with more than one rank — makes every
 * fatal error end the whole job (check_set_abort_hook → MPI_Abort) and prefixes messages with
 * the rank. Started plainly (`trident train`), it makes no MPI call at all: world 1, rank 0.
 * Before dist_init() the accessors already answer as for a plain start.
 *
 * Transport (issue 15): a pipeline stage sends its activations and then computes; the next
 * stage must get them while the sender computes, not when the sender next calls MPI.
 * Before MPI_Init, dist_init() therefore probes whether one process may read another's
 * memory here (Linux CMA, process_vm_readv) and sets
 * OMPI_MCA_btl_vader_single_copy_mechanism to "cma" (the receiver copies from the sender's
 * memory itself) or "none". A value the user set is respected. MPI always starts with
 * MPI_THREAD_MULTIPLE (the communication stream, comm_stream.h, needs it; measured free).
 * Without single copy each rank runs a progress thread that, only while
 * this rank has sends in flight (dist_progress_add_sends), polls MPI (every 50 us after a
 * send, backing off to 1 ms) so that the bytes keep moving while the rank computes;
 * dist_finalize() and dist_fail_all() stop it. It never touches comm.c's requests.
 * dist_transport_description() says in one line which of these a run uses.
 *   TRIDENT_TEST_REFUSE_CMA=1     (tests) the probe reports CMA refused
 *   TRIDENT_NO_PROGRESS_THREAD=1  (diagnostic) no progress thread: shows what it is for
 *
 * Not here: process groups (parallel_state.h) and communication (comm.h).
 */
#ifndef TRIDENT_RUNTIME_DIST_H
#define TRIDENT_RUNTIME_DIST_H

#include <stdbool.h>

void dist_init(int *argc, char ***argv);
void dist_finalize(void);

int dist_rank(void);       /* global rank, 0 .. world-1 */
int dist_world_size(void); /* 1 without mpirun */
int dist_local_rank(void); /* rank among the processes on this node */
int dist_local_size(void); /* processes on this node (1 without mpirun) */
bool dist_is_mpi(void);    /* MPI was started by dist_init() and not yet finalized */

/* One line for the run header, e.g. "p2p: shared memory, single copy (CMA): a receiver
 * copies from the sender's memory while it computes", or "p2p: shared memory, no single
 * copy (CMA refused: <reason>); a progress thread moves messages while the rank computes".
 * Valid for the whole run; "p2p: none (...)" for a plain run or a single rank. */
const char *dist_transport_description(void);

/* For comm.c: `delta` sends were posted (> 0) or completed (< 0) on this rank. While the
 * count is above zero the progress thread (if any) polls MPI; otherwise it sleeps. */
void dist_progress_add_sends(int delta);

/* Binds this process to CUDA device local_rank % device_count and returns it. Returns -1
 * when built without CUDA (no TRIDENT_CUDA) or when no device is visible. */
int dist_bind_device(void);

/* For a user error that every rank finds identically (a bad flag, an impossible layout):
 * rank 0 prints "trident: <message>" once (just "<message>" when it already starts with
 * "trident ", as in "trident train: ..."), then every rank leaves with exit status 1 —
 * no hang, no N copies of the message, no MPI_Abort banner. Without MPI it is die(). */
void dist_fail_all(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#endif /* TRIDENT_RUNTIME_DIST_H */
