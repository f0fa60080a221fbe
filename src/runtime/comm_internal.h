/* comm_internal.h — the inside of a comm_group and the helpers the comm files share:
 *
 *   comm.c           the API: groups, collectives, tracing; MPI backend and local path
 *   comm_p2p.c       point to point: send, recv, sendrecv, receives posted ahead
 *   comm_watchdog.c  waiting with a deadline (timeout watchdog) and the test-only fault hook
 *   comm_ring.c      ring reduce-scatter / all-gather for large fp32 buffers
 *   comm_stage.c     staging of buffers the backend cannot read (host <-> device)
 *   comm_nccl.c      NCCL backend (CUDA builds only)
 *
 * Nothing outside src/runtime includes this.
 *
 * Memory of a group:
 *   members[size]    global ranks, ascending; members[rank] is this process
 *   sends[nsends]    MPI sends still in flight: request + the private copy they read from
 *   loop             self-sends of a group without an MPI communicator, oldest first
 *   nccl             NCCL communicator, stream and queued sends (CUDA builds only)
 */
#ifndef TRIDENT_RUNTIME_COMM_INTERNAL_H
#define TRIDENT_RUNTIME_COMM_INTERNAL_H

#include <mpi.h>
#include <stdbool.h>

#include "src/runtime/comm.h"

typedef struct {
    MPI_Request req;
    void *copy;
} comm_pending_send;

typedef struct comm_loop_msg {
    struct comm_loop_msg *next;
    int tag;
    size_t bytes;
    unsigned char data[]; /* (bytes) */
} comm_loop_msg;

struct comm_nccl; /* defined in comm_nccl.c */

struct comm_group {
    char name[32];
    int size, rank;
    int *members; /* (size) global ranks */
    comm_backend backend;
    MPI_Comm mpi;  /* MPI_COMM_NULL when size 1 or no MPI */
    bool owns_mpi; /* we created mpi (split), so we free it */
    struct comm_nccl *nccl;
    comm_pending_send *sends;
    int nsends, cap_sends;
    comm_loop_msg *loop;
    size_t bytes_sent, bytes_received, bytes_collective, calls;
    bool spans_hosts; /* members on more than one host (hosts.h): its collectives cross */
    float *ring;      /* work space of the ring reduce-scatter (grown on demand) */
    size_t ring_cap;  /* its size in floats */
    void *stage[2];   /* staging slots for buffers on the wrong side (comm_stage.c) */
    size_t stage_cap[2];
    bool stage_on_device[2];
};

/* True when a call runs locally: MPI backend without a communicator (size 1 / serial). */
static inline bool comm_is_local(const comm_group *g) {
    return g->backend == COMM_MPI && g->mpi == MPI_COMM_NULL;
}
static inline bool comm_is_nccl(const comm_group *g) { return g->backend == COMM_NCCL; }

/* count as MPI's int, or a loud failure when one message would exceed INT_MAX elements. */
int comm_mpi_count(size_t count);
/* The MPI datatype of a comm_dtype (bf16 and fp16 travel as 16-bit integers). */
MPI_Datatype comm_mpi_type(comm_dtype dt);

/* Reports one event to the trace hook (if any) and updates the group's counters. cpu_start is
 * thread_cpu_now() when the call began (the event carries the CPU seconds spent in it). */
/* The trace event alone, no counter (comm_sendrecv reports its two halves with it). */
void comm_emit_(comm_group *g, const char *op, int peer_group_rank, size_t bytes, int tag,
                double t_start, double t_ready, double t_end, double cpu_start);
void comm_report_(comm_group *g, const char *op, int peer_group_rank, size_t bytes, int tag,
                  double t_start, double t_ready, double t_end, double cpu_start);

/* --- comm_watchdog.c: waiting with a deadline, and the fault hook ---------------------- */

/* Where a rank waits: for the timeout message. */
typedef struct {
    const comm_group *g;
    const char *op;  /* "recv", "all_reduce", ... */
    const char *dir; /* "from" or "to" the peer; NULL for collectives */
    int peer, tag;   /* group rank of the peer and the tag; -1 for collectives */
} comm_wait_site;

/* Brackets one blocking MPI call: two stores when a timeout is set, nothing otherwise. */
void comm_wait_begin(const comm_wait_site *w);
void comm_wait_end(void);
/* MPI_Wait(req), announced to the watchdog. */
void comm_wait_request(MPI_Request *req, const comm_wait_site *w);
/* Called first thing by every operation: TRIDENT_TEST_FAULT (comm.h); one compare when unset. */
void comm_fault_point(const char *op);

/* --- comm_ring.c: rings for large buffers ---------------------------------------------- */

/* Collectives of at least this many floats (all-gather: bytes / 4) take the rings. */
enum { COMM_RING_MIN_FLOATS = 16384 };
/* send[size * count] -> recv[count], fp32 sum. send and recv either do not overlap or are
 * equal (in place: the blocks are summed where they are, block rank is then moved to the
 * front; the rest of the buffer is left with partial sums). */
void comm_ring_reduce_scatter(comm_group *g, const float *send, float *recv, size_t count);
/* send[bytes] -> recv[size * bytes]; send may be recv's own slot. */
void comm_ring_all_gather(comm_group *g, const void *send, void *recv, size_t bytes);

/* --- comm_stage.c: buffers on the wrong side of the host/device line ------------------- */

typedef struct {
    void *user;     /* the caller's buffer */
    void *backend;  /* what the backend reads and writes: user, or a staging slot */
    size_t bytes;   /* 0: nothing staged, nothing to copy back */
    bool to_device; /* the slot is device memory (NCCL) */
} comm_staged;

/* True when the backend of g cannot use p directly. */
bool comm_needs_staging(const comm_group *g, const void *p);
/* The pointer the backend should use for `user` (bytes long), through staging slot `slot`
 * (0: what is sent, 1: what is received); `read`: the backend reads it, so its contents are
 * copied to the slot first. */
void *comm_stage_in(comm_group *g, comm_staged *st, int slot, const void *user, size_t bytes,
                    bool read);
/* Copies the backend's result back into the caller's buffer (when it was staged). */
void comm_stage_out(const comm_staged *st);

#ifdef TRIDENT_CUDA
/* comm_nccl.c: NCCL on device memory. Every call leaves its stream synchronised. */
void comm_nccl_create(comm_group *g); /* after g->mpi, size, rank are set */
void comm_nccl_destroy(comm_group *g);
void comm_nccl_all_reduce(comm_group *g, void *buf, size_t count, comm_dtype dt, comm_op op);
void comm_nccl_all_gather(comm_group *g, const void *send, void *recv, size_t count, comm_dtype dt);
void comm_nccl_reduce_scatter(comm_group *g, const void *send, void *recv, size_t count,
                              comm_dtype dt, comm_op op);
void comm_nccl_broadcast(comm_group *g, void *buf, size_t count, comm_dtype dt, int root);
void comm_nccl_send(comm_group *g, const void *buf, size_t bytes, int peer); /* queued */
void comm_nccl_recv(comm_group *g, void *buf, size_t bytes, int peer);
void comm_nccl_sendrecv(comm_group *g, const void *sendbuf, size_t sbytes, int dest, void *recvbuf,
                        size_t rbytes, int src);
void comm_nccl_flush(comm_group *g); /* posts queued sends and waits for them */
#endif

/* Adds a call's bytes to the process's host counters (comm_bytes_within_host/across_hosts):
 * a message by where its peer is (peer_group_rank >= 0), a collective by its group. */
void comm_count_hosts_(const comm_group *g, int peer_group_rank, size_t bytes);

#endif /* TRIDENT_RUNTIME_COMM_INTERNAL_H */
