/* comm_stream_ring.c — the ring of a stream job (comm_stream_ring.h): its steps posted as
 * MPI_Irecv + MPI_Isend on the stream's communicator, tested with MPI_Testall, the partial sums
 * added on the stream's thread. Not here: the queue and the thread (comm_stream.c), the
 * blocking rings of the main thread (comm_ring.c, the same algorithm).
 *
 * Two ranks, one 1 MiB all-reduce (buf = [block 0 | block 1], 512 KiB each):
 *
 *            step 0 (reduce-scatter)                  step 1 (all-gather)
 *   rank 0   sends block 1; rank 1's block 0 lands    sends block 0 (the sum); rank 1's
 *            in `in`: block 0 = block 0 + in          block 1 (the sum) lands in place
 *   rank 1   sends block 0; rank 0's block 1 lands    sends block 1 (the sum); rank 0's
 *            in `in`: block 1 = block 1 + in          block 0 (the sum) lands in place
 *
 * With Open MPI's single-copy shared memory (CMA) each message is one handshake: the receiver's
 * MPI_Testall finds the sender's envelope and copies the whole block with process_vm_readv.
 */
#include "src/runtime/comm_stream_ring.h"

#include <stdlib.h>

#include "src/core/check.h"
#include "src/runtime/comm_internal.h"

static int ring_block(int r, int s, int p) { return ((r - s) % p + p) % p; }

static int prev_of(const stream_ring *r) { return (r->rank + r->size - 1) % r->size; }
static int next_of(const stream_ring *r) { return (r->rank + 1) % r->size; }

/* Whether the current step is a reduce-scatter step (else all-gather), and its number s
 * within its phase. */
static bool reducing(const stream_ring *r, int *s) {
    const stream_job_kind k = r->job->kind;
    const int p = r->size;
    const bool rs = k == JOB_REDUCE_SCATTER || (k == JOB_ALL_REDUCE && r->step < p - 1);
    *s = k == JOB_ALL_REDUCE && !rs ? r->step - (p - 1) : r->step;
    return rs;
}

/* Posts one step. An empty block still goes as an empty message: a step then completes only
 * once prev has posted it too, so after its p−1 steps a rank has heard from every member
 * (nobody finishes a collective that a member has not started: what the trace's causality
 * check asserts, and what an uneven ZeRO bucket with nothing for this rank would break). */
static void post_pair(stream_ring *r, float *in, size_t nin, const float *out, size_t nout) {
    MPI_Irecv(in, comm_mpi_count(nin), MPI_FLOAT, prev_of(r), r->tag, r->comm, &r->req[0]);
    MPI_Isend(out, comm_mpi_count(nout), MPI_FLOAT, next_of(r), r->tag, r->comm, &r->req[1]);
}

/* The input this rank adds into the ring: the buffer itself in place, else `send`. */
static const float *own_of(const stream_job *j) {
    return j->kind == JOB_REDUCE_SCATTER ? j->send : j->buf;
}

static void post_step(stream_ring *r) {
    const stream_job *j = r->job;
    const int p = r->size, me = r->rank;
    int s;
    if (reducing(r, &s)) {
        const int bo = ring_block(me, s + 1, p), bi = ring_block(me, s + 2, p);
        /* What goes out is the block summed at the step before (at step 0, our own); in place
         * it was summed in the buffer, out of place into r->part. */
        const bool scratch = j->kind == JOB_REDUCE_SCATTER && s > 0;
        const float *out = scratch ? r->part : own_of(j) + j->displs[bo];
        post_pair(r, r->in, j->counts[bi], out, j->counts[bo]);
    } else {
        const int bo = ring_block(me, s, p), bi = ring_block(me, s + 1, p);
        post_pair(r, j->buf + j->displs[bi], j->counts[bi], j->buf + j->displs[bo], j->counts[bo]);
    }
}

/* After a reduce-scatter step: the arriving partial sum plus our own copy of its block. In
 * place into the buffer; out of place into r->in, which then becomes the part to send next
 * (the send from r->part is complete, so the two scratch blocks swap), or into recv at the
 * last step. */
static void finish_step(stream_ring *r) {
    const stream_job *j = r->job;
    const int p = r->size;
    int s;
    if (!reducing(r, &s)) return;
    const int bi = ring_block(r->rank, s + 2, p);
    const size_t n = j->counts[bi];
    const float *own = own_of(j) + j->displs[bi], *in = r->in;
    float *sum = j->kind != JOB_REDUCE_SCATTER ? j->buf + j->displs[bi]
                 : s == p - 2                  ? j->buf
                                               : r->in;
    for (size_t i = 0; i < n; i++) sum[i] = own[i] + in[i];
    if (j->kind == JOB_REDUCE_SCATTER && s < p - 2) {
        float *t = r->in;
        r->in = r->part, r->part = t;
    }
}

void stream_ring_start(stream_ring *r, stream_job *j, int64_t handle, MPI_Comm comm, int size,
                       int rank) {
    size_t most = 0;
    for (int d = 0; d < size; d++) most = j->counts[d] > most ? j->counts[d] : most;
    const size_t need = j->kind == JOB_ALL_GATHER ? 0 : most;
    if (need > r->cap) {
        free(r->in), free(r->part);
        r->in = mallocCheck(need * sizeof(float));
        r->part = j->kind == JOB_REDUCE_SCATTER ? mallocCheck(need * sizeof(float)) : NULL;
        r->cap = need;
    } else if (j->kind == JOB_REDUCE_SCATTER && !r->part && need) {
        r->part = mallocCheck(r->cap * sizeof(float));
    }
    r->job = j;
    r->comm = comm;
    r->size = size;
    r->rank = rank;
    r->tag = (int)(handle % COMM_STREAM_TAGS);
    r->step = 0;
    r->nsteps = (j->kind == JOB_ALL_REDUCE ? 2 : 1) * (size - 1);
    post_step(r);
}

bool stream_ring_advance(stream_ring *r, bool *moved) {
    while (r->step < r->nsteps) {
        int flag = 0;
        MPI_Testall(2, r->req, &flag, MPI_STATUSES_IGNORE);
        if (!flag) return false;
        *moved = true;
        finish_step(r);
        if (++r->step < r->nsteps) post_step(r);
    }
    return true;
}

void stream_ring_free(stream_ring *r) {
    free(r->in);
    free(r->part);
    r->in = r->part = NULL;
    r->cap = 0;
}
