/* comm.c — the communication API (comm.h): groups, collectives, point to point, tracing and
 * counters for every backend, the MPI backend on host memory, and the local path for groups
 * without a communicator.
 *
 * Each public call has the same shape:
 *
 *   comm_fault_point(op) -> test-only fault hook (comm_watchdog.c; one compare when unset)
 *   t0 = time_now()
 *   comm_stage_in(...)   -> buffers the backend cannot read are staged (comm_stage.c)
 *   size 1 / no MPI      -> local copy or nothing              (never an MPI call)
 *   NCCL                 -> comm_nccl_*()                       (comm_nccl.c)
 *   MPI                  -> one blocking MPI call on g->mpi (large fp32 reduce-scatter and
 *                           all-gather: a ring, comm_ring.c), bracketed by comm_wait_begin/end
 *                           for the timeout watchdog (comm_watchdog.c)
 *   comm_stage_out(...)  -> results copied back to the caller's device buffers
 *   comm_report_(...)    -> trace hook + counters
 *
 * Not here: NCCL itself (comm_nccl.c), the watchdog and fault hook (comm_watchdog.c), rings
 * (comm_ring.c), staging (comm_stage.c), fp32 <-> bf16/fp16 rounding (src/precision/convert.h),
 * which ranks form a group (parallel_state.c).
 */
#include "src/runtime/comm_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/device/device_memory.h"
#include "src/precision/convert.h"
#include "src/runtime/comm_label.h"
#include "src/runtime/comm_tag.h"
#include "src/runtime/dist.h"
#include "src/runtime/hosts.h"

/* ---------------------------------------------------------------- types and MPI ops */

size_t comm_dtype_size(comm_dtype dt) {
    switch (dt) {
    case COMM_FLOAT32: return 4;
    case COMM_BF16: return 2;
    case COMM_FP16: return 2;
    case COMM_INT32: return 4;
    case COMM_INT64: return 8;
    case COMM_BYTE: return 1;
    }
    CHECK(0, "unknown comm_dtype");
    return 0;
}

MPI_Datatype comm_mpi_type(comm_dtype dt) {
    switch (dt) {
    case COMM_FLOAT32: return MPI_FLOAT;
    case COMM_BF16: return MPI_UINT16_T;
    case COMM_FP16: return MPI_UINT16_T;
    case COMM_INT32: return MPI_INT32_T;
    case COMM_INT64: return MPI_INT64_T;
    case COMM_BYTE: return MPI_UINT8_T;
    }
    CHECK(0, "unknown comm_dtype");
    return MPI_DATATYPE_NULL;
}

/* User-defined reductions for 16-bit floats: widen, combine in fp32, round back (to nearest
 * even, with the one converter of src/precision). */
#define HALF_OP(fn, to32, to16, combine)                                                           \
    static void fn(void *in, void *inout, int *len, MPI_Datatype *type) {                          \
        (void)type;                                                                                \
        const uint16_t *a = in;                                                                    \
        uint16_t *b = inout;                                                                       \
        for (int i = 0; i < *len; i++) {                                                           \
            float x = to32(a[i]), y = to32(b[i]);                                                  \
            b[i] = to16(combine);                                                                  \
        }                                                                                          \
    }
HALF_OP(bf16_sum, prec_bf16_to_fp32, prec_fp32_to_bf16, x + y)
HALF_OP(bf16_max, prec_bf16_to_fp32, prec_fp32_to_bf16, (x > y || y != y) ? x : y)
HALF_OP(fp16_sum, prec_fp16_to_fp32, prec_fp32_to_fp16, x + y)
HALF_OP(fp16_max, prec_fp16_to_fp32, prec_fp32_to_fp16, (x > y || y != y) ? x : y)

static MPI_Op mpi_op(comm_dtype dt, comm_op op) {
    static MPI_Op half_ops[2][2]; /* [bf16, fp16][sum, max], created on first use */
    static bool made = false;
    if (dt != COMM_BF16 && dt != COMM_FP16) return op == COMM_SUM ? MPI_SUM : MPI_MAX;
    if (!made) {
        MPI_Op_create(bf16_sum, 1, &half_ops[0][0]);
        MPI_Op_create(bf16_max, 1, &half_ops[0][1]);
        MPI_Op_create(fp16_sum, 1, &half_ops[1][0]);
        MPI_Op_create(fp16_max, 1, &half_ops[1][1]);
        made = true;
    }
    return half_ops[dt == COMM_FP16][op == COMM_MAX];
}

int comm_mpi_count(size_t count) {
    CHECK(count <= (size_t)INT_MAX,
          "a single MPI message is limited to INT_MAX elements; split it");
    return (int)count;
}

/* ---------------------------------------------------------------- tracing and counters */

static void (*g_hook)(const comm_event *e, void *ctx) = NULL;
static void *g_hook_ctx = NULL;

void comm_set_trace_hook(void (*fn)(const comm_event *e, void *ctx), void *ctx) {
    g_hook = fn;
    g_hook_ctx = ctx;
}

static size_t g_within_host, g_across_hosts; /* this process's bytes, by where they went */

void comm_count_hosts_(const comm_group *g, int peer_group_rank, size_t bytes) {
    const bool across = peer_group_rank >= 0
                            ? !hosts_same(g->members[g->rank], g->members[peer_group_rank])
                            : g->spans_hosts;
    if (across) g_across_hosts += bytes;
    else g_within_host += bytes;
}

size_t comm_bytes_within_host(void) { return g_within_host; }
size_t comm_bytes_across_hosts(void) { return g_across_hosts; }

void comm_report_(comm_group *g, const char *op, int peer_group_rank, size_t bytes, int tag,
                  double t_start, double t_ready, double t_end, double cpu_start) {
    g->calls++;
    if (strcmp(op, "send") == 0) g->bytes_sent += bytes;
    else if (strcmp(op, "recv") == 0) g->bytes_received += bytes;
    else if (strcmp(op, "sendrecv") != 0) g->bytes_collective += bytes;
    if (strcmp(op, "recv") != 0) comm_count_hosts_(g, peer_group_rank, bytes); /* what left */
    comm_emit_(g, op, peer_group_rank, bytes, tag, t_start, t_ready, t_end, cpu_start);
}

void comm_emit_(comm_group *g, const char *op, int peer_group_rank, size_t bytes, int tag,
                double t_start, double t_ready, double t_end, double cpu_start) {
    if (!g_hook) return;
    comm_event e = {op,
                    g->name,
                    peer_group_rank >= 0 ? g->members[peer_group_rank] : -1,
                    bytes,
                    tag,
                    t_start,
                    t_ready,
                    t_end,
                    comm_label(),
                    comm_label_layer(),
                    g->members[0],
                    thread_cpu_now() - cpu_start};
    g_hook(&e, g_hook_ctx);
}

size_t comm_bytes_sent(const comm_group *g) { return g->bytes_sent; }
size_t comm_bytes_received(const comm_group *g) { return g->bytes_received; }
size_t comm_bytes_collective(const comm_group *g) { return g->bytes_collective; }
size_t comm_calls(const comm_group *g) { return g->calls; }

void comm_reset_counters(comm_group *g) {
    g->bytes_sent = g->bytes_received = g->bytes_collective = g->calls = 0;
}

/* ---------------------------------------------------------------- building groups */

static comm_group *group_new(const char *name, const int *members, int size, int rank,
                             comm_backend backend) {
#ifndef TRIDENT_CUDA
    if (backend == COMM_NCCL)
        die("the NCCL backend needs a CUDA build (nvcc was not found when trident was built)");
#endif
    comm_group *g = callocCheck(1, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    g->size = size;
    g->rank = rank;
    g->members = mallocCheck(sizeof(int) * (size_t)size);
    memcpy(g->members, members, sizeof(int) * (size_t)size);
    g->backend = backend;
    g->mpi = MPI_COMM_NULL;
    for (int i = 1; i < size; i++) g->spans_hosts |= !hosts_same(members[0], members[i]);
    return g;
}

comm_group *comm_group_world(comm_backend backend) {
    int n = dist_world_size();
    int *members = mallocCheck(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) members[i] = i;
    comm_group *g = group_new("world", members, n, dist_rank(), backend);
    free(members);
    if (dist_is_mpi() && n > 1) g->mpi = MPI_COMM_WORLD; /* not ours to free */
#ifdef TRIDENT_CUDA
    if (backend == COMM_NCCL) comm_nccl_create(g);
#endif
    return g;
}

comm_group *comm_group_split(const char *name, int color, const int *members, int size,
                             comm_backend backend) {
    int me = dist_rank(), rank = -1;
    for (int i = 0; i < size; i++) {
        if (members[i] == me) rank = i;
        CHECK(i == 0 || members[i] > members[i - 1], "group members must be sorted ascending");
    }
    CHECK(size == 0 || rank >= 0, "a rank must be a member of the group it asks for");
    CHECK(color >= 0, "colors are group numbers, >= 0");
    MPI_Comm comm = MPI_COMM_NULL;
    if (dist_is_mpi() && dist_world_size() > 1) {
        /* Every rank takes part; size-1 groups and non-members opt out with MPI_UNDEFINED. */
        MPI_Comm_split(MPI_COMM_WORLD, size > 1 ? color : MPI_UNDEFINED, rank, &comm);
    }
    if (size == 0) return NULL;
    comm_group *g = group_new(name, members, size, rank, backend);
    g->mpi = comm;
    g->owns_mpi = comm != MPI_COMM_NULL;
    if (comm != MPI_COMM_NULL) {
        int n = 0, r = -1;
        MPI_Comm_size(comm, &n);
        MPI_Comm_rank(comm, &r);
        CHECK(n == size && r == rank, "ranks disagree on the members of a group (same color, "
                                      "different member lists?)");
    }
    CHECK(size == 1 || comm != MPI_COMM_NULL,
          "a group of several ranks needs MPI: launch with mpirun -np <world size>");
#ifdef TRIDENT_CUDA
    if (backend == COMM_NCCL) comm_nccl_create(g);
#endif
    return g;
}

void comm_group_destroy(comm_group *g) {
    if (!g) return;
    comm_wait_sends(g);
#ifdef TRIDENT_CUDA
    if (g->nccl) comm_nccl_destroy(g);
#endif
    if (g->owns_mpi) MPI_Comm_free(&g->mpi);
    while (g->loop) {
        comm_loop_msg *next = g->loop->next;
        free(g->loop);
        g->loop = next;
    }
    for (int i = 0; i < 2; i++) {
        if (g->stage_on_device[i]) device_free(g->stage[i]);
        else free(g->stage[i]);
    }
    free(g->sends);
    free(g->ring);
    free(g->members);
    free(g);
}

int comm_size(const comm_group *g) { return g->size; }
int comm_rank(const comm_group *g) { return g->rank; }
const char *comm_name(const comm_group *g) { return g->name; }
comm_backend comm_backend_of(const comm_group *g) { return g->backend; }

int comm_global_rank(const comm_group *g, int group_rank) {
    CHECK(group_rank >= 0 && group_rank < g->size, "group rank outside the group");
    return g->members[group_rank];
}


/* ---------------------------------------------------------------- collectives */

void comm_all_reduce(comm_group *g, void *buf, size_t count, comm_dtype dt, comm_op op) {
    comm_fault_point("all_reduce");
    double t0 = time_now(), c0 = thread_cpu_now();
    comm_staged sb;
    if (!comm_is_local(g)) buf = comm_stage_in(g, &sb, 0, buf, count * comm_dtype_size(dt), true);
    if (comm_is_local(g)) {
        /* one rank: the sum of one value is itself */
    } else if (comm_is_nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_all_reduce(g, buf, count, dt, op);
#endif
    } else {
        comm_wait_site w = {g, "all_reduce", NULL, -1, -1};
        comm_wait_begin(&w);
        MPI_Allreduce(MPI_IN_PLACE, buf, comm_mpi_count(count), comm_mpi_type(dt), mpi_op(dt, op),
                      g->mpi);
        comm_wait_end();
    }
    if (!comm_is_local(g)) comm_stage_out(&sb);
    comm_report_(g, "all_reduce", -1, count * comm_dtype_size(dt), -1, t0, t0, time_now(), c0);
}

void comm_all_gather(comm_group *g, const void *send, void *recv, size_t count_per_rank,
                     comm_dtype dt) {
    comm_fault_point("all_gather");
    double t0 = time_now(), c0 = thread_cpu_now();
    size_t part = count_per_rank * comm_dtype_size(dt);
    comm_staged ss, sr;
    if (device_owns(send) && send == (const char *)recv + (size_t)g->rank * part) {
        recv = comm_stage_in(g, &sr, 1, recv, part * (size_t)g->size,
                             true); /* in place, comm_staged whole */
        send = (const char *)recv + (size_t)g->rank * part;
        ss.bytes = 0;
    } else {
        send = comm_stage_in(g, &ss, 0, send, part, true);
        recv = comm_stage_in(g, &sr, 1, recv, part * (size_t)g->size, false);
    }
    if (comm_is_local(g)) {
        if (part && send != recv) memmove(recv, send, part);
    } else if (comm_is_nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_all_gather(g, send, recv, count_per_rank, dt);
#endif
    } else {
        if (count_per_rank * comm_dtype_size(dt) >= COMM_RING_MIN_FLOATS * sizeof(float)) {
            comm_ring_all_gather(g, send, recv, part);
        } else {
            /* Sending from our own slot of recv is MPI_IN_PLACE. */
            const void *src = send == (const char *)recv + (size_t)g->rank * part ? MPI_IN_PLACE
                                                                                  : send;
            int n = comm_mpi_count(count_per_rank);
            comm_wait_site w = {g, "all_gather", NULL, -1, -1};
            comm_wait_begin(&w);
            MPI_Allgather(src, n, comm_mpi_type(dt), recv, n, comm_mpi_type(dt), g->mpi);
            comm_wait_end();
        }
    }
    comm_stage_out(&sr);
    comm_report_(g, "all_gather", -1, part * (size_t)g->size, -1, t0, t0, time_now(), c0);
}

void comm_reduce_scatter(comm_group *g, const void *send, void *recv, size_t count_per_rank,
                         comm_dtype dt, comm_op op) {
    comm_fault_point("reduce_scatter");
    double t0 = time_now(), c0 = thread_cpu_now();
    size_t part = count_per_rank * comm_dtype_size(dt);
    comm_staged ss, sr;
    if (send == recv && comm_needs_staging(g, send)) { /* in place: recv holds size * count */
        send = recv = comm_stage_in(g, &sr, 1, recv, part * (size_t)g->size, true);
        sr.bytes = part; /* only this rank's part comes back */
    } else {
        send = comm_stage_in(g, &ss, 0, send, part * (size_t)g->size, true);
        recv = comm_stage_in(g, &sr, 1, recv, part, false);
    }
    if (comm_is_local(g)) {
        if (part && send != recv) memmove(recv, send, part);
    } else if (comm_is_nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_reduce_scatter(g, send, recv, count_per_rank, dt, op);
#endif
    } else {
        if (dt == COMM_FLOAT32 && op == COMM_SUM && count_per_rank >= COMM_RING_MIN_FLOATS) {
            comm_ring_reduce_scatter(g, send, recv, count_per_rank); /* in place too: no copy */
        } else {
            const void *src = send == recv ? MPI_IN_PLACE : send;
            comm_wait_site w = {g, "reduce_scatter", NULL, -1, -1};
            comm_wait_begin(&w);
            MPI_Reduce_scatter_block(src, recv, comm_mpi_count(count_per_rank), comm_mpi_type(dt),
                                     mpi_op(dt, op), g->mpi);
            comm_wait_end();
        }
    }
    comm_stage_out(&sr);
    comm_report_(g, "reduce_scatter", -1, part * (size_t)g->size, -1, t0, t0, time_now(), c0);
}

void comm_broadcast(comm_group *g, void *buf, size_t count, comm_dtype dt, int root_group_rank) {
    CHECK(root_group_rank >= 0 && root_group_rank < g->size, "broadcast root outside the group");
    comm_fault_point("broadcast");
    double t0 = time_now(), c0 = thread_cpu_now();
    comm_staged sb;
    if (!comm_is_local(g)) buf = comm_stage_in(g, &sb, 0, buf, count * comm_dtype_size(dt), true);
    if (comm_is_local(g)) {
        /* the root already holds the data */
    } else if (comm_is_nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_broadcast(g, buf, count, dt, root_group_rank);
#endif
    } else {
        comm_wait_site w = {g, "broadcast", NULL, -1, -1};
        comm_wait_begin(&w);
        MPI_Bcast(buf, comm_mpi_count(count), comm_mpi_type(dt), root_group_rank, g->mpi);
        comm_wait_end();
    }
    if (!comm_is_local(g)) comm_stage_out(&sb);
    comm_report_(g, "broadcast", -1, count * comm_dtype_size(dt), -1, t0, t0, time_now(), c0);
}

void comm_barrier(comm_group *g) {
    comm_fault_point("barrier");
    double t0 = time_now(), c0 = thread_cpu_now();
#ifdef TRIDENT_CUDA
    if (comm_is_nccl(g)) comm_nccl_flush(g);
#endif
    if (g->mpi != MPI_COMM_NULL) {
        comm_wait_site w = {g, "barrier", NULL, -1, -1};
        comm_wait_begin(&w);
        MPI_Barrier(g->mpi);
        comm_wait_end();
    }
    comm_report_(g, "barrier", -1, 0, -1, t0, t0, time_now(), c0);
}

/* Blocks of different sizes to and from every member. The extent of a buffer is the end of
 * its last block; a device buffer is staged whole (the receive side is read first, so the
 * gaps between blocks keep what they held). */
static size_t block_extent(const size_t *counts, const size_t *displs, int size) {
    size_t end = 0;
    for (int j = 0; j < size; j++)
        if (counts[j] && displs[j] + counts[j] > end) end = displs[j] + counts[j];
    return end;
}

void comm_all_to_all_v(comm_group *g, const void *send, const size_t *send_counts,
                       const size_t *send_displs, void *recv, const size_t *recv_counts,
                       const size_t *recv_displs, comm_dtype dt) {
    CHECK(!comm_is_nccl(g), "all_to_all_v: not available with NCCL (use an MPI group on host "
                            "memory)");
    comm_fault_point("all_to_all_v");
    double t0 = time_now(), c0 = thread_cpu_now();
    size_t es = comm_dtype_size(dt), to_others = 0;
    for (int j = 0; j < g->size; j++)
        if (j != g->rank) to_others += send_counts[j] * es;
    comm_staged ss, sr;
    send = comm_stage_in(g, &ss, 0, send, block_extent(send_counts, send_displs, g->size) * es,
                         true);
    recv = comm_stage_in(g, &sr, 1, recv, block_extent(recv_counts, recv_displs, g->size) * es,
                         true);
    if (comm_is_local(g)) {
        CHECK(send_counts[0] == recv_counts[0],
              "all_to_all_v: a rank alone must receive exactly what it sends");
        if (send_counts[0])
            memmove((char *)recv + recv_displs[0] * es, (const char *)send + send_displs[0] * es,
                    send_counts[0] * es);
    } else {
        int *ints = mallocCheck(sizeof(int) * 4 * (size_t)g->size); /* MPI takes int counts */
        int *sc = ints, *sd = ints + g->size, *rc = ints + 2 * g->size, *rd = ints + 3 * g->size;
        for (int j = 0; j < g->size; j++) {
            sc[j] = comm_mpi_count(send_counts[j]);
            sd[j] = comm_mpi_count(send_displs[j]);
            rc[j] = comm_mpi_count(recv_counts[j]);
            rd[j] = comm_mpi_count(recv_displs[j]);
        }
        comm_wait_site w = {g, "all_to_all_v", NULL, -1, -1};
        comm_wait_begin(&w);
        MPI_Alltoallv(send, sc, sd, comm_mpi_type(dt), recv, rc, rd, comm_mpi_type(dt), g->mpi);
        comm_wait_end();
        free(ints);
    }
    comm_stage_out(&sr);
    comm_report_(g, "all_to_all_v", -1, to_others, -1, t0, t0, time_now(), c0);
}
