/* comm_ring.c — ring reduce-scatter and all-gather for large buffers (MPI backend).
 *
 * ZeRO moves the whole gradient buffer through a reduce-scatter and the parameters through an
 * all-gather every step. For large fp32 buffers these are rings of MPI_Sendrecv between
 * neighbours, the textbook algorithm (each rank sends (p-1)/p of the buffer once), because
 * Open MPI 4.1's own reduce_scatter_block + allgather take 2-3x as long as its all-reduce of
 * the same bytes. Blocks are numbered by the rank that ends up owning them.
 *
 *   reduce-scatter, step s = 0 .. p-2: rank r sends block (r-s-1) mod p to r+1 and adds
 *   block (r-s-2) mod p received from r-1 into its copy; block j's sum starts on rank j+1,
 *   goes round the ring, and ends on rank j (a fixed order: the same bits on every run).
 *   all-gather, step s: rank r sends block (r-s) mod p to r+1, receives (r-s-1) mod p.
 *
 * In place (send == recv, ZeRO's gradient buffer) the partial sums are made in the blocks
 * themselves, so the ring needs no copy of the input; only the finished block r is moved to
 * the front (comm.h: in-place reduce-scatter leaves this rank's part at recv[0 .. count)).
 *
 * Tag COMM_RING_TAG is reserved for them (point-to-point tags stop below it, comm_tag.h).
 * comm.c decides when a collective takes a ring (COMM_RING_MIN_FLOATS).
 *
 * Not here: the small-buffer path (MPI's own collectives, comm.c), NCCL (comm_nccl.c). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/runtime/comm_internal.h"
#include "src/runtime/comm_tag.h"

enum { RING_SEGMENT = 131072 /* floats: a ring step adds one segment while it is in cache */ };

static int ring_block(int r, int s, int p) { return ((r - s) % p + p) % p; }

static void ring_exchange(comm_group *g, const void *out, void *in, size_t bytes, const char *op) {
    const int p = g->size, next = (g->rank + 1) % p, prev = (g->rank + p - 1) % p;
    comm_wait_site w = {g, op, NULL, -1, -1};
    comm_wait_begin(&w);
    MPI_Sendrecv(out, comm_mpi_count(bytes), MPI_BYTE, next, COMM_RING_TAG, in,
                 comm_mpi_count(bytes), MPI_BYTE, prev, COMM_RING_TAG, g->mpi, MPI_STATUS_IGNORE);
    comm_wait_end();
}

void comm_ring_reduce_scatter(comm_group *g, const float *send, float *recv, size_t count) {
    const int p = g->size, r = g->rank;
    const bool in_place = send == recv;
    if (!g->ring) {
        g->ring_cap = RING_SEGMENT;
        g->ring = mallocCheck(RING_SEGMENT * sizeof(float));
    }
    float *in = g->ring; /* the partial sum arriving from r-1 */
    for (int s = 0; s < p - 1; s++) {
        /* What goes out is the block summed in the previous step (at step 0, our own):
         * block (r-s-1) mod p. Out of place the running sum lives in recv; in place it is
         * added into its own block of the buffer, so nothing else is overwritten. */
        const float *out = s == 0 || in_place ? send + (size_t)ring_block(r, s + 1, p) * count
                                              : recv;
        const float *own = send + (size_t)ring_block(r, s + 2, p) * count;
        float *sum = in_place ? recv + (size_t)ring_block(r, s + 2, p) * count : recv;
        /* In segments, so each one is added while it is still in cache. */
        for (size_t at = 0; at < count; at += RING_SEGMENT) {
            size_t n = count - at < RING_SEGMENT ? count - at : RING_SEGMENT;
            ring_exchange(g, out + at, in, n * sizeof(float), "reduce_scatter");
            for (size_t i = 0; i < n; i++) sum[at + i] = own[at + i] + in[i];
        }
    }
    /* After p-1 steps block (r - p) mod p = r holds the sum over every rank: out of place in
     * recv; in place at recv + r * count (NCCL's in-place layout), moved to the front as the
     * contract of comm.h asks — one block, count floats, never the whole buffer. */
    if (in_place && r != 0) memcpy(recv, recv + (size_t)r * count, count * sizeof(float));
}

void comm_ring_all_gather(comm_group *g, const void *send, void *recv, size_t bytes) {
    const int p = g->size, r = g->rank;
    char *all = recv;
    if (send != all + (size_t)r * bytes) memcpy(all + (size_t)r * bytes, send, bytes);
    for (int s = 0; s < p - 1; s++)
        ring_exchange(g, all + (size_t)ring_block(r, s, p) * bytes,
                      all + (size_t)ring_block(r, s + 1, p) * bytes, bytes, "all_gather");
}
