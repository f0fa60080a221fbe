/* comm_p2p.c — point-to-point messages of comm.h: send (never waits: MPI gets a private copy),
 * recv (waits for the peer, then the transfer: two times in the trace), sendrecv, and the
 * receive posted ahead (comm_irecv / comm_request_wait). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_internal.h"
#include "src/runtime/dist.h"

/* ---------------------------------------------------------------- point to point */

static void check_p2p(const comm_group *g, int peer, int tag) {
    CHECK(peer >= 0 && peer < g->size, "p2p peer is a group rank: 0 .. comm_size(g)-1");
    CHECK(tag >= 0 && tag <= COMM_MAX_TAG,
          "p2p tags must be in 0 .. COMM_MAX_TAG = 32766 (comm_tag.h: MPI's guaranteed range less "
          "the rings' tag)");
}

/* The private copy of a pending MPI send starts with where it goes, so that a wait that
 * times out can name the peer:
 *
 *   copy: [ send_head: peer, tag | pad to 16 bytes | payload (bytes) ]   MPI_Isend reads
 *                                                     ^ copy + SEND_HEAD    from here
 */
typedef struct {
    int peer, tag;
} send_head;
enum { SEND_HEAD = 16 };

/* Frees the copies of sends that have completed, keeping the rest in order. wait: completes
 * them all (MPI_Wait, watched by the timeout); otherwise only MPI_Test. */
static void reap_sends(comm_group *g, bool wait) {
    int kept = 0;
    for (int i = 0; i < g->nsends; i++) {
        int done = 0;
        if (wait) {
            const send_head *h = g->sends[i].copy;
            comm_wait_site w = {g, "send", "to", h->peer, h->tag};
            comm_wait_request(&g->sends[i].req, &w);
            done = 1;
        } else {
            MPI_Test(&g->sends[i].req, &done, MPI_STATUS_IGNORE);
        }
        if (done) free(g->sends[i].copy);
        else g->sends[kept++] = g->sends[i];
    }
    if (kept < g->nsends) dist_progress_add_sends(kept - g->nsends); /* the progress thread */
    g->nsends = kept;
}

void comm_send(comm_group *g, const void *buf, size_t count, comm_dtype dt, int peer_group_rank,
               int tag) {
    check_p2p(g, peer_group_rank, tag);
    comm_fault_point("send");
    double t0 = time_now(), c0 = thread_cpu_now();
    size_t bytes = count * comm_dtype_size(dt);
    comm_staged sb;
    buf = comm_stage_in(g, &sb, 0, buf, bytes, true); /* nothing comes back: no stage_out */
    if (comm_is_local(g)) {
        /* Only peer 0 = ourselves exists: keep the message for our own recv. */
        comm_loop_msg *m = mallocCheck(sizeof *m + bytes);
        m->next = NULL;
        m->tag = tag;
        m->bytes = bytes;
        if (bytes) memcpy(m->data, buf, bytes);
        comm_loop_msg **tail = &g->loop;
        while (*tail) tail = &(*tail)->next;
        *tail = m;
    } else if (comm_is_nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_send(g, buf, bytes, peer_group_rank);
#endif
    } else {
        reap_sends(g, false);
        if (g->nsends == g->cap_sends) {
            g->cap_sends = g->cap_sends ? 2 * g->cap_sends : 8;
            comm_pending_send *grown = mallocCheck(sizeof *grown * (size_t)g->cap_sends);
            if (g->nsends) memcpy(grown, g->sends, sizeof *grown * (size_t)g->nsends);
            free(g->sends);
            g->sends = grown;
        }
        comm_pending_send *s = &g->sends[g->nsends++];
        s->copy = mallocCheck(SEND_HEAD + bytes);
        send_head head = {peer_group_rank, tag};
        memcpy(s->copy, &head, sizeof head);
        unsigned char *payload = (unsigned char *)s->copy + SEND_HEAD;
        if (bytes) memcpy(payload, buf, bytes);
        MPI_Isend(payload, comm_mpi_count(count), comm_mpi_type(dt), peer_group_rank, tag, g->mpi,
                  &s->req);
        dist_progress_add_sends(1); /* keeps it moving while we compute (dist.h) */
    }
    double t1 = time_now();
    comm_report_(g, "send", peer_group_rank, bytes, tag, t0, t0, t1, c0);
}

/* Waits for a message from w->peer with w->tag (returns when it is there) and checks its
 * size. */
/* Dies loudly when the message `st` describes does not hold `count` elements. */
static void check_message_size(const comm_group *g, const MPI_Status *st, size_t count,
                               comm_dtype dt, int peer, int tag) {
    int got = 0;
    MPI_Get_count(st, comm_mpi_type(dt), &got);
    if ((size_t)got != count) {
        fprintf(stderr,
                "comm_recv on group %s: peer %d sent %d elements with tag %d, expected %zu\n",
                g->name, g->members[peer], got, tag, count);
        CHECK(0, "sender and receiver disagree on the message size");
    }
}

static void probe_message(comm_group *g, size_t count, comm_dtype dt, const comm_wait_site *w) {
    MPI_Status st;
    comm_wait_begin(w);
    MPI_Probe(w->peer, w->tag, g->mpi, &st);
    comm_wait_end();
    check_message_size(g, &st, count, dt, w->peer, w->tag);
}

/* Receives the message probe_message() found (a large one still needs the sender's progress). */
static void receive_message(comm_group *g, void *buf, size_t count, comm_dtype dt,
                            const comm_wait_site *w) {
    comm_wait_begin(w);
    MPI_Recv(buf, comm_mpi_count(count), comm_mpi_type(dt), w->peer, w->tag, g->mpi,
             MPI_STATUS_IGNORE);
    comm_wait_end();
}

void comm_recv(comm_group *g, void *buf, size_t count, comm_dtype dt, int peer_group_rank,
               int tag) {
    check_p2p(g, peer_group_rank, tag);
    comm_fault_point("recv");
    double t0 = time_now(), t_ready = t0, c0 = thread_cpu_now();
    size_t bytes = count * comm_dtype_size(dt);
    comm_staged sb;
    buf = comm_stage_in(g, &sb, 1, buf, bytes, false);
    if (comm_is_local(g)) {
        comm_loop_msg **p = &g->loop;
        while (*p && (*p)->tag != tag) p = &(*p)->next;
        if (!*p)
            die("comm_recv on group %s (size 1) waits for a message with tag %d that this rank "
                "never "
                "sent to itself",
                g->name, tag);
        comm_loop_msg *m = *p;
        CHECK(m->bytes == bytes, "sender and receiver disagree on the message size");
        if (bytes) memcpy(buf, m->data, bytes);
        *p = m->next;
        free(m);
    } else if (comm_is_nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_recv(g, buf, bytes, peer_group_rank);
#endif
    } else {
        comm_wait_site w = {g, "recv", "from", peer_group_rank, tag};
        probe_message(g, count, dt, &w); /* waiting for the peer ... */
        t_ready = time_now();            /* ... then the transfer */
        receive_message(g, buf, count, dt, &w);
    }
    comm_stage_out(&sb);
    comm_report_(g, "recv", peer_group_rank, bytes, tag, t0, t_ready, time_now(), c0);
}

void comm_sendrecv(comm_group *g, const void *sendbuf, size_t scount, int dest, void *recvbuf,
                   size_t rcount, int src, comm_dtype dt, int tag) {
    check_p2p(g, dest, tag);
    check_p2p(g, src, tag);
    comm_fault_point("sendrecv");
    double t0 = time_now(), t_ready = t0, c0 = thread_cpu_now();
    size_t sbytes = scount * comm_dtype_size(dt), rbytes = rcount * comm_dtype_size(dt);
    comm_staged ss, sr;
    sendbuf = comm_stage_in(g, &ss, 0, sendbuf, sbytes, true);
    recvbuf = comm_stage_in(g, &sr, 1, recvbuf, rbytes, false);
    if (comm_is_local(g)) {
        CHECK(sbytes == rbytes, "sender and receiver disagree on the message size");
        if (sbytes && sendbuf != recvbuf) memmove(recvbuf, sendbuf, sbytes);
    } else if (comm_is_nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_sendrecv(g, sendbuf, sbytes, dest, recvbuf, rbytes, src);
#endif
    } else {
        MPI_Request req;
        MPI_Isend(sendbuf, comm_mpi_count(scount), comm_mpi_type(dt), dest, tag, g->mpi, &req);
        comm_wait_site from = {g, "sendrecv", "from", src, tag};
        probe_message(g, rcount, dt, &from);
        t_ready = time_now();
        receive_message(g, recvbuf, rcount, dt, &from);
        comm_wait_site to = {g, "sendrecv", "to", dest, tag};
        comm_wait_request(&req, &to);
    }
    comm_stage_out(&sr);
    /* One call, counted once; traced as its two halves — a send to dest and a receive from
     * src, over the same time — so that a trace pairs each with its partner's (a ring step of
     * ring attention is one of each) and checks the receive came after the send. */
    g->calls++;
    g->bytes_sent += sbytes;
    g->bytes_received += rbytes;
    comm_count_hosts_(g, dest, sbytes);
    const double t1 = time_now();
    comm_emit_(g, "send", dest, sbytes, tag, t0, t0, t1, c0);
    comm_emit_(g, "recv", src, rbytes, tag, t0, t_ready, t1, c0);
}

struct comm_request {
    comm_group *g;
    void *buf;
    size_t count;
    comm_dtype dt;
    int peer, tag;
    bool posted;     /* an MPI_Irecv is in flight (MPI backend with a communicator) */
    MPI_Request req; /* when posted */
};

comm_request *comm_irecv(comm_group *g, void *buf, size_t count, comm_dtype dt, int peer_group_rank,
                         int tag) {
    check_p2p(g, peer_group_rank, tag);
    comm_request *r = callocCheck(1, sizeof *r);
    *r = (comm_request){g, buf, count, dt, peer_group_rank, tag, false, MPI_REQUEST_NULL};
    /* Only a plain MPI receive into host memory can be posted ahead; the others (local loop,
     * NCCL, a buffer that needs staging) receive at the wait. */
    if (!comm_is_local(g) && !comm_is_nccl(g) && !comm_needs_staging(g, buf)) {
        MPI_Irecv(buf, comm_mpi_count(count), comm_mpi_type(dt), peer_group_rank, tag, g->mpi,
                  &r->req);
        r->posted = true;
        dist_progress_add_sends(1); /* the progress thread (if any) moves it while we compute */
    }
    return r;
}

void comm_request_wait(comm_request *r) {
    CHECK(r != NULL, "comm_request_wait: no request (comm_irecv returns one per receive)");
    if (!r->posted) {
        comm_recv(r->g, r->buf, r->count, r->dt, r->peer, r->tag);
        free(r);
        return;
    }
    comm_group *g = r->g;
    comm_fault_point("recv");
    double t0 = time_now(), c0 = thread_cpu_now();
    comm_wait_site w = {g, "recv", "from", r->peer, r->tag};
    MPI_Status st;
    comm_wait_begin(&w);
    MPI_Wait(&r->req, &st);
    comm_wait_end();
    dist_progress_add_sends(-1);
    check_message_size(g, &st, r->count, r->dt, r->peer, r->tag);
    const size_t bytes = r->count * comm_dtype_size(r->dt);
    comm_report_(g, "recv", r->peer, bytes, r->tag, t0, t0, time_now(), c0);
    free(r);
}

void comm_wait_sends(comm_group *g) {
#ifdef TRIDENT_CUDA
    if (comm_is_nccl(g)) comm_nccl_flush(g);
#endif
    if (g->nsends) reap_sends(g, true);
}
