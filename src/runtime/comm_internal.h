/* comm_internal.h — the inside of a comm_group, shared by comm.c (API, MPI backend, local
 * size-1 path) and comm_nccl.c (NCCL backend). Nothing outside src/runtime includes this.
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
    MPI_Comm mpi; /* MPI_COMM_NULL when size 1 or no MPI */
    bool owns_mpi; /* we created mpi (split), so we free it */
    struct comm_nccl *nccl;
    comm_pending_send *sends;
    int nsends, cap_sends;
    comm_loop_msg *loop;
    size_t bytes_sent, bytes_received, bytes_collective, calls;
    float *ring;      /* work space of the ring reduce-scatter (grown on demand) */
    size_t ring_cap;  /* its size in floats */
    void *stage[2];   /* staging slots for buffers on the wrong side (comm.c, "device memory") */
    size_t stage_cap[2];
    bool stage_on_device[2];
};

/* Reports one event to the trace hook (if any) and updates the group's counters. cpu_start is
 * thread_cpu_now() when the call began (the event carries the CPU seconds spent in it). */
void comm_report_(comm_group *g, const char *op, int peer_group_rank, size_t bytes, int tag,
                  double t_start, double t_ready, double t_end, double cpu_start);

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

#endif /* TRIDENT_RUNTIME_COMM_INTERNAL_H */
