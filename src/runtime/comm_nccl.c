/* comm_nccl.c — the NCCL backend of comm.h: the same operations on device memory.
 *
 * Compiled only in CUDA builds (TRIDENT_CUDA); plain C against nccl.h and cuda_runtime.h.
 * A group's NCCL communicator is made from an id that group rank 0 draws
 * (ncclGetUniqueId) and broadcasts over the group's MPI communicator; a group of one rank
 * draws its own id and needs no MPI. Every operation runs on the group's stream and waits
 * for it, so on return the data is in place, exactly as with the MPI backend — a teaching
 * code base prefers that to overlapping.
 *
 * Sends (see comm.h): NCCL has no buffered send, so comm_send copies the data to a private
 * device buffer and queues it; the queue is posted inside the same ncclGroupStart/End as
 * this rank's next operation on the group. Two ranks that both send, then both receive,
 * thus post {send, recv} together and NCCL progresses both. NCCL has no tags: messages
 * between two ranks arrive in the order they were sent. The receiver must not enter a
 * collective on the same group before receiving a message queued for it.
 *
 * Sends to oneself never reach NCCL: it wants a send to self matched by a receive in the same
 * group call ("Trying to send to self without a matching recv", found on the first GPU run:
 * send, send, then recv, recv to oneself), so they stay queued until a receive from oneself
 * takes the oldest one with a device-to-device copy.
 *
 * Not here: bookkeeping, tracing, size-1 shortcuts (comm.c).
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/runtime/comm_internal.h"

typedef struct {
    void *copy; /* device buffer, (bytes) */
    size_t bytes;
    int peer;
} queued_send;

struct comm_nccl {
    ncclComm_t comm;
    cudaStream_t stream;
    queued_send *queue;
    int nqueue, cap;
};

static void cuda_check(cudaError_t err, const char *what, const char *file, int line) {
    if (err == cudaSuccess) return;
    fprintf(stderr, "%s:%d: CUDA error in %s: %s\n", file, line, what, cudaGetErrorString(err));
    check_fail_(file, line, "cuda call failed",
                "is a GPU visible (nvidia-smi) and the buffer on the device?");
}

static void nccl_check(ncclResult_t r, const char *what, const char *file, int line) {
    if (r == ncclSuccess) return;
    fprintf(stderr, "%s:%d: NCCL error in %s: %s\n", file, line, what, ncclGetErrorString(r));
    check_fail_(file, line, "nccl call failed", "run with NCCL_DEBUG=INFO for details");
}

#define cudaCheck(call) cuda_check((call), #call, __FILE__, __LINE__)
#define ncclCheck(call) nccl_check((call), #call, __FILE__, __LINE__)

static ncclDataType_t nccl_type(comm_dtype dt) {
    switch (dt) {
    case COMM_FLOAT32: return ncclFloat32;
    case COMM_BF16: return ncclBfloat16;
    case COMM_FP16: return ncclFloat16;
    case COMM_INT32: return ncclInt32;
    case COMM_INT64: return ncclInt64;
    case COMM_BYTE: return ncclUint8;
    }
    CHECK(0, "unknown comm_dtype");
    return ncclUint8;
}

static ncclRedOp_t nccl_op(comm_op op) { return op == COMM_MAX ? ncclMax : ncclSum; }

void comm_nccl_create(comm_group *g) {
    ncclUniqueId id;
    if (g->rank == 0) ncclCheck(ncclGetUniqueId(&id));
    if (g->size > 1) {
        CHECK(g->mpi != MPI_COMM_NULL, "a NCCL group of several ranks needs an MPI communicator");
        MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, g->mpi);
    }
    struct comm_nccl *n = callocCheck(1, sizeof *n);
    cudaCheck(cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking));
    ncclCheck(ncclCommInitRank(&n->comm, g->size, id, g->rank));
    g->nccl = n;
}

void comm_nccl_destroy(comm_group *g) {
    comm_nccl_flush(g);
    for (int i = 0; i < g->nccl->nqueue; i++) /* sends to oneself nobody received */
        cudaCheck(cudaFree(g->nccl->queue[i].copy));
    ncclCheck(ncclCommDestroy(g->nccl->comm));
    cudaCheck(cudaStreamDestroy(g->nccl->stream));
    free(g->nccl->queue);
    free(g->nccl);
    g->nccl = NULL;
}

/* Posts the queued sends to other ranks (inside the caller's ncclGroupStart/End); sends to
 * oneself (`self`) stay queued for a receive from oneself. */
static void post_queue(struct comm_nccl *n, int self) {
    for (int i = 0; i < n->nqueue; i++)
        if (n->queue[i].peer != self)
            ncclCheck(ncclSend(n->queue[i].copy, n->queue[i].bytes, ncclUint8, n->queue[i].peer,
                               n->comm, n->stream));
}

/* After the group ended: wait for the stream, free the copies of the posted sends; those to
 * oneself stay queued, in order. */
static void finish(struct comm_nccl *n, int self) {
    cudaCheck(cudaStreamSynchronize(n->stream));
    int kept = 0;
    for (int i = 0; i < n->nqueue; i++) {
        if (n->queue[i].peer == self) n->queue[kept++] = n->queue[i];
        else cudaCheck(cudaFree(n->queue[i].copy));
    }
    n->nqueue = kept;
}

void comm_nccl_flush(comm_group *g) {
    struct comm_nccl *n = g->nccl;
    if (!n || n->nqueue == 0) return;
    ncclCheck(ncclGroupStart());
    post_queue(n, g->rank);
    ncclCheck(ncclGroupEnd());
    finish(n, g->rank);
}

/* A receive from oneself: the oldest send to oneself still queued, copied on the device. */
static void recv_from_self(comm_group *g, void *buf, size_t bytes) {
    struct comm_nccl *n = g->nccl;
    int i = 0;
    while (i < n->nqueue && n->queue[i].peer != g->rank) i++;
    if (i == n->nqueue)
        die("NCCL group '%s': a receive from oneself (%zu bytes) with no send to oneself before "
            "it",
            g->name, bytes);
    if (n->queue[i].bytes != bytes)
        die("NCCL group '%s': a receive from oneself of %zu bytes, but the send to oneself it "
            "takes carries %zu (messages arrive in the order they were sent)",
            g->name, bytes, n->queue[i].bytes);
    cudaCheck(cudaMemcpyAsync(buf, n->queue[i].copy, bytes, cudaMemcpyDeviceToDevice, n->stream));
    cudaCheck(cudaStreamSynchronize(n->stream));
    cudaCheck(cudaFree(n->queue[i].copy));
    for (int j = i + 1; j < n->nqueue; j++) n->queue[j - 1] = n->queue[j];
    n->nqueue--;
}

void comm_nccl_all_reduce(comm_group *g, void *buf, size_t count, comm_dtype dt, comm_op op) {
    struct comm_nccl *n = g->nccl;
    comm_nccl_flush(g);
    if (count)
        ncclCheck(ncclAllReduce(buf, buf, count, nccl_type(dt), nccl_op(op), n->comm, n->stream));
    finish(n, g->rank);
}

void comm_nccl_all_gather(comm_group *g, const void *send, void *recv, size_t count,
                          comm_dtype dt) {
    struct comm_nccl *n = g->nccl;
    comm_nccl_flush(g);
    if (count) ncclCheck(ncclAllGather(send, recv, count, nccl_type(dt), n->comm, n->stream));
    finish(n, g->rank);
}

/* In place (send == recv) NCCL wants recvbuff == sendbuff + rank * count and leaves the
 * rank's sum there; comm.h promises it at recv[0 .. count) (MPI_IN_PLACE's layout, which the
 * CPU ring keeps too), so the one block is moved to the front afterwards. Passing recv
 * itself, as an earlier version did, let ranks > 0 overwrite block 0 while NCCL still read it. */
void comm_nccl_reduce_scatter(comm_group *g, const void *send, void *recv, size_t count,
                              comm_dtype dt, comm_op op) {
    struct comm_nccl *n = g->nccl;
    comm_nccl_flush(g);
    const size_t part = count * comm_dtype_size(dt);
    const bool in_place = send == recv;
    void *out = in_place ? (char *)recv + (size_t)g->rank * part : recv;
    if (count)
        ncclCheck(
            ncclReduceScatter(send, out, count, nccl_type(dt), nccl_op(op), n->comm, n->stream));
    if (count && out != recv) /* rank > 0: blocks rank and 0 do not overlap */
        cudaCheck(cudaMemcpyAsync(recv, out, part, cudaMemcpyDeviceToDevice, n->stream));
    finish(n, g->rank);
}

void comm_nccl_broadcast(comm_group *g, void *buf, size_t count, comm_dtype dt, int root) {
    struct comm_nccl *n = g->nccl;
    comm_nccl_flush(g);
    if (count) ncclCheck(ncclBroadcast(buf, buf, count, nccl_type(dt), root, n->comm, n->stream));
    finish(n, g->rank);
}

void comm_nccl_send(comm_group *g, const void *buf, size_t bytes, int peer) {
    struct comm_nccl *n = g->nccl;
    if (bytes == 0) return; /* the receiver skips zero-byte messages too */
    if (n->nqueue == n->cap) {
        n->cap = n->cap ? 2 * n->cap : 8;
        queued_send *grown = mallocCheck(sizeof *grown * (size_t)n->cap);
        if (n->nqueue) memcpy(grown, n->queue, sizeof *grown * (size_t)n->nqueue);
        free(n->queue);
        n->queue = grown;
    }
    queued_send *q = &n->queue[n->nqueue++];
    q->bytes = bytes;
    q->peer = peer;
    cudaCheck(cudaMalloc(&q->copy, bytes));
    cudaCheck(cudaMemcpyAsync(q->copy, buf, bytes, cudaMemcpyDeviceToDevice, n->stream));
}

void comm_nccl_recv(comm_group *g, void *buf, size_t bytes, int peer) {
    struct comm_nccl *n = g->nccl;
    if (peer == g->rank) {
        if (bytes) recv_from_self(g, buf, bytes); /* zero bytes: the send was not queued */
        return;
    }
    ncclCheck(ncclGroupStart());
    post_queue(n, g->rank);
    if (bytes) ncclCheck(ncclRecv(buf, bytes, ncclUint8, peer, n->comm, n->stream));
    ncclCheck(ncclGroupEnd());
    finish(n, g->rank);
}

void comm_nccl_sendrecv(comm_group *g, const void *sendbuf, size_t sbytes, int dest, void *recvbuf,
                        size_t rbytes, int src) {
    struct comm_nccl *n = g->nccl;
    ncclCheck(ncclGroupStart());
    post_queue(n, g->rank);
    if (sbytes) ncclCheck(ncclSend(sendbuf, sbytes, ncclUint8, dest, n->comm, n->stream));
    if (rbytes) ncclCheck(ncclRecv(recvbuf, rbytes, ncclUint8, src, n->comm, n->stream));
    ncclCheck(ncclGroupEnd());
    finish(n, g->rank);
}
