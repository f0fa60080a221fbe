/* comm_stream_ring.h — inside the communication stream (comm_stream.h): a queued job, and the
 * ring that moves its bytes over nonblocking point-to-point messages. Private to
 * comm_stream.c and comm_stream_ring.c.
 *
 * Every job is cut into blocks, one per group rank: block d = [displs[d], displs[d] + counts[d])
 * of the buffer (an all-reduce cuts its buffer evenly; a reduce-scatter or all-gather takes the
 * caller's counts). Ring steps, p = group size, next = rank + 1, prev = rank − 1 (mod p):
 *
 *   reduce-scatter, s = 0 .. p−2: send block (r−s−1) to next, receive block (r−s−2) from prev
 *                  into scratch and add this rank's own copy of it: block j's sum starts on
 *                  rank j+1 and goes round the ring to rank j, in one fixed order
 *   all-gather,     s = 0 .. p−2: send block (r−s) to next, receive block (r−s−1) from prev
 *                  straight into its place in the buffer
 *   all_reduce     reduce-scatter in place (partial sums in the buffer's own blocks), then
 *                  all-gather: 2(p−1) steps; each block is summed once, on one rank, and
 *                  copied to the others, so every rank ends with the same bits
 *   reduce_scatter out of place: partial sums in two scratch blocks, the last one into recv
 *   all_gather     in place
 *
 * A step is one MPI_Irecv and one MPI_Isend, tag = the job's handle mod COMM_STREAM_TAGS (a
 * job in flight owns its tag; the steps of one job match in order, MPI messages between two
 * ranks with one tag do not overtake). An empty block travels as an empty message, so a job
 * completes on a rank only after every member has started it.
 */
#ifndef TRIDENT_RUNTIME_COMM_STREAM_RING_H
#define TRIDENT_RUNTIME_COMM_STREAM_RING_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/runtime/comm_stream.h"

typedef enum { JOB_ALL_REDUCE, JOB_REDUCE_SCATTER, JOB_ALL_GATHER } stream_job_kind;

typedef struct {
    stream_job_kind kind;
    float *buf;        /* all_reduce / all_gather: the buffer, in place; reduce_scatter: recv */
    const float *send; /* reduce_scatter: the input, sum of counts long */
    size_t *counts;    /* (size) the blocks */
    size_t *displs;    /* (size) their offsets: running sums of counts */
    const char *label;
    double t_posted, t_start, t_end;
    bool done;
} stream_job;

/* One job moving on the ring (the stream thread's). */
typedef struct {
    stream_job *job;
    MPI_Comm comm;
    int size, rank, tag;
    int step, nsteps;
    MPI_Request req[2]; /* receive from prev, send to next */
    float *in, *part;   /* scratch: the block arriving; out of place, the partial sum going out */
    size_t cap;         /* floats in each scratch block */
} stream_ring;

/* Starts job j (posts its first step); `r` keeps its scratch between jobs. */
void stream_ring_start(stream_ring *r, stream_job *j, int64_t handle, MPI_Comm comm, int size,
                       int rank);
/* Tests the step in flight; completes and posts as many steps as are ready (then sets *moved).
 * True when the job is complete. */
bool stream_ring_advance(stream_ring *r, bool *moved);
void stream_ring_free(stream_ring *r); /* the scratch */

#endif /* TRIDENT_RUNTIME_COMM_STREAM_RING_H */
