/* comm.h — every byte that moves between ranks goes through here.
 *
 * A comm_group is a set of ranks that talk together: the tensor-, pipeline-, data- or
 * model-parallel group of this rank, the embedding group, or the whole world. Layers call
 * the operations of the Megatron paper by name (all-reduce, all-gather, reduce-scatter,
 * broadcast, point-to-point send/recv, the all-to-all of expert parallelism) on a group, and
 * never see MPI or NCCL:
 *
 *   comm_all_reduce(ps->tp, out, B * T * C, COMM_FLOAT32, COMM_SUM);  // "g" of the MLP
 *
 * Ranks are ranks *in the group* (0 .. comm_size-1) everywhere in this API;
 * comm_global_rank() translates.
 *
 * Buffers and counts:
 *   all_reduce      buf[count], in place
 *   all_gather      send[count] -> recv[size * count], rank i's part at recv + i * count
 *   reduce_scatter  send[size * count] -> recv[count], rank i keeps part i of the reduction
 *   broadcast       buf[count] from root to all, in place
 *   all_to_all_v    blocks of any size to and from every member: send_counts[j] elements at
 *                   send + send_displs[j] go to rank j, rank j's block for us lands at
 *                   recv + recv_displs[j] (recv_counts[j] elements, as rank j sends). MPI
 *                   backend only (the MoE token dispatcher, src/moe); NCCL groups fail.
 *   send / recv     buf[count] to / from one peer, matched by tag (0 .. COMM_MAX_TAG, comm_tag.h)
 * Zero counts are fine. bf16 and fp16 travel as uint16_t bit patterns. sendrecv's two
 * buffers must not overlap. In place (one contract for every backend):
 *   all_gather      send == recv + rank * count: this rank's part is already in its slot.
 *   reduce_scatter  send == recv, which holds size * count on entry; on return this rank's
 *                   summed part is at recv[0 .. count) (MPI_IN_PLACE's layout) and the rest
 *                   of the buffer holds unspecified partial sums. The CPU ring sums block i
 *                   where it lies and NCCL writes it at recv + rank * count (NCCL's in-place
 *                   rule); both then move that one block to the front, count elements, never
 *                   the whole buffer (comm_ring.c, comm_nccl.c). Any other overlap is an error.
 *
 * Backends:
 *   COMM_MPI   host memory, MPI; always built, used by every CI test.
 *   COMM_NCCL  device memory, NCCL (src/runtime/comm_nccl.c); only in CUDA builds
 *              (TRIDENT_CUDA). Each call waits for its stream, so on return the data is
 *              there, just as with MPI.
 * A group of size 1, and any group of a run without mpirun, never calls MPI: collectives are
 * copies (or nothing), and a send to oneself is kept in a local queue for the matching recv.
 *
 * Semantics that pipeline schedules rely on:
 *   - comm_send never waits for the receiver. MPI: a private copy of the data goes out with
 *     MPI_Isend and is freed once complete (checked lazily on every send, or forced by
 *     comm_wait_sends). NCCL: the copy is queued and posted together with this rank's next
 *     operation on the group (recv, sendrecv, a collective or comm_wait_sends), in one
 *     ncclGroupStart/End. So "send, send, then recv, recv" between two ranks cannot
 *     deadlock.
 *   - comm_recv first waits for the message to be there (MPI_Probe), then copies it: the
 *     trace event separates the time spent waiting for the peer (t_start..t_ready) from the
 *     transfer (t_ready..t_end).
 *   - comm_sendrecv is a paired exchange (send to dest, receive from src) and never
 *     deadlocks, e.g. in a ring.
 *
 * bf16/fp16 reductions (MPI): a user-defined MPI_Op widens both operands to fp32, adds (or
 * takes the max), and rounds back to nearest-even (src/precision/convert.h does the rounding;
 * use it to make or read 16-bit buffers). Each pairwise combine rounds, so a sum of
 * many ranks can differ from "sum in fp32, round once" in the last bit; sums of values whose
 * partial sums are exactly representable (small integers) are exact. NCCL does the same
 * natively (ncclBfloat16 / ncclFloat16).
 *
 * Timeouts (comm_set_timeout): every wait is MPI's own blocking call; by default it waits
 * forever. With a timeout of S seconds, each blocking call is announced to a watchdog
 * thread (two stores: the fast path stays MPI's), and if one wait is not through S seconds
 * after it began, the watchdog prints ONE line naming this rank, the operation, the group
 * and whom it waited for, and leaves the process; mpirun then ends the whole job:
 *
 *   trident[rank 3]: timed out after 600 s in recv from rank 2 (group pp, tag 17): a rank
 *   is stuck or dead (--distributed-timeout-minutes)
 *
 * A collective names the group's members instead of one peer. A rank that dies (rather
 * than hangs) is noticed by mpirun, which ends the job and names it. NCCL groups are not
 * covered (their waits are stream synchronisations in comm_nccl.c).
 *
 * Test-only fault hook (tests/robustness): TRIDENT_TEST_FAULT="kill:R:N" makes global rank R
 * raise(SIGKILL) at its N-th comm operation (counted from 1 over all groups); "hang:R:N"
 * makes it sleep there forever instead. Either prints one line first. Unset: one compare
 * per call.
 *
 * Tracing and counters: when a hook is set, every call reports one comm_event — sendrecv two,
 * its halves: a "send" to dest and a "recv" from src over the same time, so that a trace pairs
 * each with its partner's (it counts as one call). `bytes` is
 * the size of the caller's payload: buf for all_reduce/broadcast/send/recv, the full recv
 * buffer (size * count) for all_gather, the full send buffer (size * count) for
 * reduce_scatter, each half's message for sendrecv, and for all_to_all_v the bytes this rank
 * sends to OTHER members (the sum of its send blocks except its own block: what leaves the
 * rank; a group of one thus reports 0). Per group, counters add up the same bytes.
 * The event also carries the caller's label and layer (src/runtime/comm_label.h).
 *
 * Not here: which ranks form a group (groups.h computes it, parallel_state.h builds the
 * groups), and anything about what the bytes mean.
 */
#ifndef TRIDENT_RUNTIME_COMM_H
#define TRIDENT_RUNTIME_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "src/runtime/comm_tag.h"

typedef enum { COMM_FLOAT32, COMM_BF16, COMM_FP16, COMM_INT32, COMM_INT64, COMM_BYTE } comm_dtype;
typedef enum { COMM_SUM, COMM_MAX } comm_op;
typedef enum { COMM_MPI, COMM_NCCL } comm_backend;

/* Opaque: name, size, rank in group, global ranks of the members, backend, the MPI
 * communicator (MPI_COMM_NULL when size 1 or no MPI), the NCCL communicator (NCCL only). */
typedef struct comm_group comm_group;

/* --- building groups ------------------------------------------------------------------- */

/* The group of all ranks ("world"). Cheap; no communicator split. */
comm_group *comm_group_world(comm_backend backend);

/* Collective over the world: EVERY rank calls it, even ranks that will get no group.
 * A rank passes the sorted global ranks of its own group (members[size], itself among
 * them) and gets that group back; a rank with members == NULL / size 0 takes part in the
 * split and gets NULL. `color` must be the same on all members of a group and different
 * between groups (the group's number from groups.h does). Groups of size 1 get no MPI
 * communicator. name is copied ("tp", "dp", ...). */
comm_group *comm_group_split(const char *name, int color, const int *members, int size,
                             comm_backend backend);

/* Completes outstanding sends, frees the communicators. NULL is fine. Every member calls
 * it (MPI_Comm_free is formally collective over the group). */
void comm_group_destroy(comm_group *g);

/* --- who is in the group --------------------------------------------------------------- */

int comm_size(const comm_group *g);
int comm_rank(const comm_group *g); /* this rank's rank in the group */
const char *comm_name(const comm_group *g);
int comm_global_rank(const comm_group *g, int group_rank);
comm_backend comm_backend_of(const comm_group *g);
size_t comm_dtype_size(comm_dtype dt); /* 4 2 2 4 8 1 */

/* --- collectives (every member calls, same counts) ------------------------------------- */

void comm_all_reduce(comm_group *g, void *buf, size_t count, comm_dtype dt, comm_op op);
void comm_all_gather(comm_group *g, const void *send, void *recv, size_t count_per_rank,
                     comm_dtype dt);
void comm_reduce_scatter(comm_group *g, const void *send, void *recv, size_t count_per_rank,
                         comm_dtype dt, comm_op op);
void comm_broadcast(comm_group *g, void *buf, size_t count, comm_dtype dt, int root_group_rank);
void comm_barrier(comm_group *g);
/* send: this rank's blocks in group-rank order, send_counts[j] elements for rank j at
 * send_displs[j]; recv likewise. Counts and displacements in elements of dt. Every member
 * must receive from j exactly what j sends it. send and recv must not overlap. */
void comm_all_to_all_v(comm_group *g, const void *send, const size_t *send_counts,
                       const size_t *send_displs, void *recv, const size_t *recv_counts,
                       const size_t *recv_displs, comm_dtype dt);

/* --- point to point (peers are group ranks) ------------------------------------------- */

void comm_send(comm_group *g, const void *buf, size_t count, comm_dtype dt, int peer_group_rank,
               int tag);
void comm_recv(comm_group *g, void *buf, size_t count, comm_dtype dt, int peer_group_rank, int tag);
void comm_sendrecv(comm_group *g, const void *sendbuf, size_t scount, int dest, void *recvbuf,
                   size_t rcount, int src, comm_dtype dt, int tag);
void comm_wait_sends(comm_group *g); /* completes outstanding sends and frees their copies */

/* A receive posted ahead (--overlap-p2p-comm): comm_irecv posts it and returns at once;
 * comm_request_wait completes it (buf holds the message on return) and frees the request.
 * Every request must be waited for, before buf is read or reused. Until then the message
 * can land whenever MPI progresses on this rank: inside any later comm call, or in the
 * p2p progress thread (dist.h) when it runs — the request counts as pending traffic for it.
 * The trace event ("recv") is reported by the wait: t_start = when the wait began, so its
 * length is the EXPOSED part of the transfer; a message that arrived while the rank
 * computed costs a wait of ~0. (MPI cannot say, inside a wait on a posted receive, when
 * the peer's data arrived, so t_ready = t_start: the whole wait counts as waiting.)
 * NCCL groups and local (size 1) groups receive at the wait: same result, no overlap. */
typedef struct comm_request comm_request;
comm_request *comm_irecv(comm_group *g, void *buf, size_t count, comm_dtype dt, int peer_group_rank,
                         int tag);
void comm_request_wait(comm_request *r);

/* --- timeouts ---------------------------------------------------------------------------- */

/* Seconds one operation may wait before the job is ended; 0 (the default) waits forever.
 * Process-wide; set it once after dist_init(), e.g. from --distributed-timeout-minutes. */
void comm_set_timeout(double seconds);
double comm_timeout(void);

/* --- tracing and counters --------------------------------------------------------------- */

typedef struct {
    const char *op;    /* "all_reduce" "all_gather" "reduce_scatter" "all_to_all_v"
                          "broadcast" "barrier" "send" "recv" (sendrecv: a send and a recv) */
    const char *group; /* comm_name() */
    int peer;          /* global rank of the peer; -1 for collectives */
    size_t bytes;      /* payload, see the manual above */
    int tag;           /* p2p tag; -1 for collectives */
    double t_start;    /* time_now() when the call began */
    double t_ready;    /* when the peer's data was there (recv); = t_start otherwise */
    double t_end;      /* when the call returned */
    const char *label; /* what the message is for (comm_label.h), NULL when unlabelled */
    int layer;         /* the label's transformer layer; -1 n/a */
    int group_first;   /* lowest global rank of the group: with the name, the group instance */
    double cpu;        /* CPU seconds this thread spent in the call (MPI's blocking waits spin,
                        * so a wait on a core of its own counts; a time-shared one does not) */
} comm_event;

/* One hook for the whole process; NULL turns tracing off. The event and its strings are
 * valid only during the call. */
void comm_set_trace_hook(void (*fn)(const comm_event *e, void *ctx), void *ctx);

size_t comm_bytes_sent(const comm_group *g);       /* p2p bytes sent (send, sendrecv) */
size_t comm_bytes_received(const comm_group *g);   /* p2p bytes received (recv, sendrecv) */
size_t comm_bytes_collective(const comm_group *g); /* sum of the collectives' event bytes */
size_t comm_calls(const comm_group *g);            /* number of calls (events) on the group */
void comm_reset_counters(comm_group *g);
/* This process's bytes since it started, by where they went (src/runtime/hosts.h): what it
 * sent to a rank on its own host or on another (p2p: by the peer; a collective's event bytes
 * by its group: across when the group spans hosts). One host: all within. */
size_t comm_bytes_within_host(void);
size_t comm_bytes_across_hosts(void);

#endif /* TRIDENT_RUNTIME_COMM_H */
