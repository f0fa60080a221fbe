/* comm_stream.h — the CPU twin of a CUDA communication stream: collectives that run while
 * the rank computes.
 *
 * A comm_stream belongs to one group and owns one thread. The caller queues a collective and
 * gets a handle back at once; the thread starts the queued collectives in the order they were
 * queued (a FIFO, like work on a CUDA stream), up to 16 in flight at a time;
 * comm_stream_wait(handle) returns when that collective, and every one queued before it, is
 * complete:
 *
 *   comm_stream *s = comm_stream_create(ps->dp, n);         // collective over dp
 *   comm_handle h = comm_stream_all_reduce(s, grads + at, n, "grads");
 *   ... backward of the next layers ...                     // the sum moves meanwhile
 *   comm_stream_wait(s, h);                                 // exposed only if not done yet
 *
 *   main thread  ──backward l3──backward l2──backward l1──wait─optimizer──
 *   stream       ─────────────all-reduce b3──all-reduce b2──a-r b1──
 *
 * How the thread moves bytes, and why (measured on 2 ranks sharing 2 cores: each rank's
 * compute and its stream thread share one core):
 *   - not a blocking collective: Open MPI's blocking calls busy-poll, so a thread inside
 *     MPI_Allreduce takes the whole core from the compute it should hide behind;
 *   - not MPI's nonblocking collectives either (MPI_Iallreduce & co., the first version):
 *     Open MPI's libnbc moves one round of its schedule per MPI_Test, so on the stream a
 *     1 MiB bucket took ~5 ms during the backward against 0.3-0.6 ms blocking, ~25 buckets
 *     were still queued when the backward ended, and that tail was exposed;
 *   - its own ring (comm_stream_ring.h): p−1 steps per phase, each step ONE MPI_Irecv and ONE
 *     MPI_Isend of a whole block on the stream's communicator. With Open MPI's single-copy
 *     shared memory (CMA, dist.h) a block of any size is one handshake: the receiver's
 *     MPI_Testall finds the sender's envelope and copies the block with one process_vm_readv
 *     (a 512 KiB exchange between two ranks: one or two tests, 0.06-0.2 ms). A 1 MiB
 *     all-reduce at dp 2 is two exchanges; a bucket's reduce-scatter or all-gather, one.
 * The thread tests every ring in flight, adds what arrived, posts the next steps, then naps
 * (20 us, backing off to 500 us while no step completes: comm_stream.c) so the core goes back
 * to the compute; while the caller waits it tests back to back. Measured by `trident bench
 * --suite overlap` (12.7M parameters, 1 MiB buckets, seven runs at loads 1.7-4.3): exposed
 * gradient all-reduce 1.7-5.3 ms per step against 16-33 ms blocking (libnbc in the same
 * windows: 6-16 ms), ZeRO's reduce-scatter 0.06-0.11 and the parameter all-gather 0.00-0.24 of
 * the blocking time. What stays exposed is the tail: the buckets whose last gradient comes at
 * the very end of the backward (gpt_hooks.h reports gradients weight by weight to keep it
 * short).
 *
 * Ordering: the stream runs on a DUPLICATE of the group's communicator (MPI_Comm_dup at
 * create), so its messages never match the main thread's collectives and p2p on the group
 * itself; a job's messages carry its handle as their tag. Members must queue the stream's jobs
 * in the same order, with the same counts (the distributed optimizer does: every DP replica
 * walks the same schedule). Needs MPI started with MPI_THREAD_MULTIPLE (dist.c always asks
 * for it).
 *
 * Buffers (fp32 sum only: what gradient buckets and parameter gathers need). A buffer
 * belongs to the stream from the call until the wait returns: do not read or write it.
 *   all_reduce      buf[count], in place
 *   reduce_scatter  send[sum of counts] -> recv[counts[rank]]: rank d gets the sum of the
 *                   d-th part; uneven counts (zeros allowed); send and recv must not overlap
 *   all_gather      buf[sum of counts], in place: this rank's part is already at its offset
 *                   (the sum of the counts before it), the others' parts arrive
 * counts[] is copied; size-1 groups (and runs without MPI) complete at once, on the caller.
 * Sums are made once per block, in one fixed order (block j starts on rank j+1 and goes round
 * the ring, as comm_reduce_scatter's blocking ring does), then copied: every rank gets the
 * same bits.
 * Work space: the thread keeps scratch blocks for its rings in flight (up to 2 × 16 × the
 * largest block), reused from job to job.
 *
 * Tracing: comm_stream_set_trace_hook gets one comm_stream_event per collective, on the
 * CALLER's thread when it waits (so recorders need no lock): when the collective ran on the
 * stream (posted, started, finished) and how long the caller waited for it (the exposed part).
 *
 * Timeouts: with comm_set_timeout (--distributed-timeout-minutes), a wait that is not over
 * after that long ends the job with one line naming the operation and the group.
 *
 * Destroy drains: comm_stream_destroy waits for every queued job, then stops the thread and
 * frees the duplicate communicator (collective over the group, like create).
 *
 * Not here: which buffers to reduce when (src/zero/overlap.h), blocking collectives
 * (comm.h).
 */
#ifndef TRIDENT_RUNTIME_COMM_STREAM_H
#define TRIDENT_RUNTIME_COMM_STREAM_H

#include <stddef.h>
#include <stdint.h>

typedef struct comm_group comm_group;
typedef struct comm_stream comm_stream;
typedef int64_t comm_handle; /* 0, 1, 2, ... in queue order; -1 = nothing to wait for */

/* The tags a stream's messages use (handle mod this); MPI guarantees tags up to 32767. */
enum { COMM_STREAM_TAGS = 4096 };

/* max_jobs: the most jobs the caller queues and has not yet waited for (its buckets: one
 * gradient job and one parameter job each), the queue's size; more is a bug of the caller. */
comm_stream *comm_stream_create(comm_group *g, size_t max_jobs);
void comm_stream_destroy(comm_stream *s); /* NULL is fine */

/* `label` (a string literal: kept, not copied) says what the bytes are ("grads", "params"). */
comm_handle comm_stream_all_reduce(comm_stream *s, float *buf, size_t count, const char *label);
comm_handle comm_stream_reduce_scatter(comm_stream *s, const float *send, float *recv,
                                       const size_t *counts, const char *label);
comm_handle comm_stream_all_gather(comm_stream *s, float *buf, const size_t *counts,
                                   const char *label);

/* Returns when job h is complete (at once if it is, or h is -1). Any order; twice is fine. */
void comm_stream_wait(comm_stream *s, comm_handle h);
/* Waits for every queued job. */
void comm_stream_wait_all(comm_stream *s);

typedef struct {
    const char *op;    /* "all_reduce" "reduce_scatter" "all_gather" */
    const char *group; /* the group's name */
    int group_first;   /* lowest global rank of the group */
    const char *label;
    size_t bytes;    /* as comm.h counts them: the buffer, or the whole send / recv */
    double t_posted; /* time_now() when queued */
    double t_start;  /* when the stream thread posted it to MPI */
    double t_end;    /* when the stream thread saw it complete */
    double t_wait_start, t_wait_end; /* the caller's wait; equal when it did not wait */
} comm_stream_event;

/* One hook for the process; NULL turns it off. Called by comm_stream_wait, once per job. */
void comm_stream_set_trace_hook(void (*fn)(const comm_stream_event *e, void *ctx), void *ctx);

#endif /* TRIDENT_RUNTIME_COMM_STREAM_H */
