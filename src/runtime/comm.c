/* comm.c — the communication API (comm.h): bookkeeping and tracing for every backend, the
 * MPI backend on host memory, and the local path for groups without a communicator.
 *
 * Each public call has the same shape:
 *
 *   fault_point(op)    -> test-only fault hook (one compare when unset)
 *   t0 = time_now()
 *   stage_in(...)      -> buffers the backend cannot read are staged (see "device memory")
 *   size 1 / no MPI  -> local copy or nothing           (never an MPI call)
 *   NCCL             -> comm_nccl_*()                    (comm_nccl.c)
 *   MPI              -> one blocking MPI call on g->mpi, announced to the timeout
 *                       watchdog (see "waiting" below)
 *   stage_out(...)     -> results copied back to the caller's device buffers
 *   comm_report_(...)  -> trace hook + counters
 *
 * Not here: NCCL itself (comm_nccl.c), which ranks form a group (parallel_state.c).
 */
#include "src/runtime/comm_internal.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/device/device.h"
#include "src/runtime/comm_label.h"
#include "src/runtime/dist.h"

/* ---------------------------------------------------------------- bf16 / fp16 rounding */

uint16_t comm_f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7FFFu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float comm_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

uint16_t comm_f32_to_fp16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);  /* NaN */
    if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* >= 65520 rounds to inf */
    if (a < 0x38800000u) {                                   /* below 2^-14: subnormal */
        float f;
        memcpy(&f, &a, 4);
        return (uint16_t)(sign | (uint32_t)rintf(f * 16777216.0f)); /* units of 2^-24 */
    }
    uint32_t h = ((((a >> 23) - 127 + 15) << 10) | ((a & 0x7FFFFFu) >> 13));
    uint32_t rem = a & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* a carry moves into the exponent */
    return (uint16_t)(sign | h);
}

float comm_fp16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, u;
    if (e == 0) {
        float x = (float)m * (1.0f / 16777216.0f);
        return sign ? -x : x;
    }
    if (e == 31) u = sign | 0x7F800000u | (m << 13);
    else u = sign | ((e - 15 + 127) << 23) | (m << 13);
    float x;
    memcpy(&x, &u, 4);
    return x;
}

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

static MPI_Datatype mpi_type(comm_dtype dt) {
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

/* User-defined reductions for 16-bit floats: widen, combine in fp32, round back. */
#define HALF_OP(fn, to32, to16, combine)                                                      \
    static void fn(void *in, void *inout, int *len, MPI_Datatype *type) {                      \
        (void)type;                                                                            \
        const uint16_t *a = in;                                                                \
        uint16_t *b = inout;                                                                   \
        for (int i = 0; i < *len; i++) {                                                       \
            float x = to32(a[i]), y = to32(b[i]);                                              \
            b[i] = to16(combine);                                                              \
        }                                                                                      \
    }
HALF_OP(bf16_sum, comm_bf16_to_f32, comm_f32_to_bf16, x + y)
HALF_OP(bf16_max, comm_bf16_to_f32, comm_f32_to_bf16, (x > y || y != y) ? x : y)
HALF_OP(fp16_sum, comm_fp16_to_f32, comm_f32_to_fp16, x + y)
HALF_OP(fp16_max, comm_fp16_to_f32, comm_f32_to_fp16, (x > y || y != y) ? x : y)

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

static int mpi_count(size_t count) {
    CHECK(count <= (size_t)INT_MAX, "a single MPI message is limited to INT_MAX elements; split it");
    return (int)count;
}

/* ---------------------------------------------------------------- tracing and counters */

static void (*g_hook)(const comm_event *e, void *ctx) = NULL;
static void *g_hook_ctx = NULL;

void comm_set_trace_hook(void (*fn)(const comm_event *e, void *ctx), void *ctx) {
    g_hook = fn;
    g_hook_ctx = ctx;
}

void comm_report_(comm_group *g, const char *op, int peer_group_rank, size_t bytes, int tag,
                  double t_start, double t_ready, double t_end, double cpu_start) {
    g->calls++;
    if (strcmp(op, "send") == 0) g->bytes_sent += bytes;
    else if (strcmp(op, "recv") == 0) g->bytes_received += bytes;
    else if (strcmp(op, "sendrecv") != 0) g->bytes_collective += bytes;
    if (!g_hook) return;
    comm_event e = {op,  g->name, peer_group_rank >= 0 ? g->members[peer_group_rank] : -1,
                    bytes, tag, t_start, t_ready, t_end, comm_label(), comm_label_layer(),
                    g->members[0], thread_cpu_now() - cpu_start};
    g_hook(&e, g_hook_ctx);
}

size_t comm_bytes_sent(const comm_group *g) { return g->bytes_sent; }
size_t comm_bytes_received(const comm_group *g) { return g->bytes_received; }
size_t comm_bytes_collective(const comm_group *g) { return g->bytes_collective; }
size_t comm_calls(const comm_group *g) { return g->calls; }

void comm_reset_counters(comm_group *g) {
    g->bytes_sent = g->bytes_received = g->bytes_collective = g->calls = 0;
}

/* ---------------------------------------------------------------- waiting, with a deadline
 *
 * Every blocking MPI call that waits for other ranks is bracketed by wait_begin(site) and
 * wait_end(): two stores, so the fast path is MPI's own blocking call. With a timeout set
 * (comm_set_timeout), a watchdog thread wakes a few times a second; when the wait in
 * progress began more than g_timeout ago, it writes one line naming this rank, the
 * operation, the group and the peer, and ends the process — mpirun then ends the job:
 *
 *   main thread:  wait_begin(site) ── MPI_Recv / MPI_Allreduce / MPI_Wait ... ── wait_end()
 *   watchdog:     every 0.25 s: since = g_wait.since; if since && now - since > timeout:
 *                 "trident[rank 3]: timed out after 600 s in recv from rank 2 (group pp, ...)"
 *
 * The watchdog never calls MPI; it leaves with _exit(1). (The one other thread that may call
 * MPI is dist.c's progress thread, which never touches our requests.)
 */

static double g_timeout = 0.0; /* seconds; 0 = wait forever */

/* Where a rank waits: for the timeout message. */
typedef struct {
    const comm_group *g;
    const char *op;  /* "recv", "all_reduce", ... */
    const char *dir; /* "from" or "to" the peer; NULL for collectives */
    int peer, tag;   /* group rank of the peer and the tag; -1 for collectives */
} wait_site;

/* The wait in progress, published by the main thread for the watchdog. `since` is written
 * last (release) and cleared at the end; the watchdog reads it first (acquire), then the
 * site, then `since` again to make sure it read one wait and not the next. */
static struct {
    _Atomic long long since_ns; /* 0 = not waiting */
    _Atomic(const comm_group *) g;
    _Atomic(const char *) op, dir;
    _Atomic int peer, tag;
} g_wait;

static long long now_ns(void) { return (long long)(time_now() * 1e9); }

static void wait_begin(const wait_site *w) {
    if (g_timeout <= 0) return;
    atomic_store_explicit(&g_wait.g, w->g, memory_order_relaxed);
    atomic_store_explicit(&g_wait.op, w->op, memory_order_relaxed);
    atomic_store_explicit(&g_wait.dir, w->dir, memory_order_relaxed);
    atomic_store_explicit(&g_wait.peer, w->peer, memory_order_relaxed);
    atomic_store_explicit(&g_wait.tag, w->tag, memory_order_relaxed);
    atomic_store_explicit(&g_wait.since_ns, now_ns(), memory_order_release);
}

static void wait_end(void) {
    if (g_timeout <= 0) return;
    atomic_store_explicit(&g_wait.since_ns, 0, memory_order_release);
}

/* One line to stderr in one write(), so that lines of ranks failing together do not mix. */
static void say(const char *line) {
    ssize_t n = write(STDERR_FILENO, line, strlen(line));
    (void)n; /* if stderr is gone, there is no one left to tell */
}

static void timed_out(const wait_site *w) {
    const comm_group *g = w->g;
    char who[160];
    if (w->peer >= 0) {
        snprintf(who, sizeof who, " %s rank %d (group %s, tag %d)", w->dir, g->members[w->peer],
                 g->name, w->tag);
    } else {
        /* A collective waits for every member; name them (the first 16). */
        int n = snprintf(who, sizeof who, " (group %s, ranks ", g->name);
        for (int i = 0; i < g->size && i < 16 && n < (int)sizeof who; i++)
            n += snprintf(who + n, sizeof who - (size_t)n, "%s%d", i ? "," : "", g->members[i]);
        if (n < (int)sizeof who)
            snprintf(who + n, sizeof who - (size_t)n, "%s)", g->size > 16 ? ",..." : "");
    }
    char line[400];
    snprintf(line, sizeof line,
             "trident[rank %d]: timed out after %g s in %s%s: a rank is stuck or dead "
             "(--distributed-timeout-minutes)\n",
             dist_rank(), g_timeout, w->op, who);
    say(line);
    _exit(1); /* mpirun sees a rank leave without finalizing and ends the whole job */
}

static void *watchdog(void *arg) {
    (void)arg;
    for (;;) {
        double nap = g_timeout / 4 < 0.25 ? g_timeout / 4 : 0.25;
        struct timespec ts = {(time_t)nap, (long)((nap - (double)(time_t)nap) * 1e9)};
        nanosleep(&ts, NULL);
        long long since = atomic_load_explicit(&g_wait.since_ns, memory_order_acquire);
        if (!since || (double)(now_ns() - since) * 1e-9 <= g_timeout) continue;
        wait_site w = {
            atomic_load_explicit(&g_wait.g, memory_order_relaxed),
            atomic_load_explicit(&g_wait.op, memory_order_relaxed),
            atomic_load_explicit(&g_wait.dir, memory_order_relaxed),
            atomic_load_explicit(&g_wait.peer, memory_order_relaxed),
            atomic_load_explicit(&g_wait.tag, memory_order_relaxed),
        };
        if (atomic_load_explicit(&g_wait.since_ns, memory_order_acquire) != since) continue;
        timed_out(&w);
    }
    return NULL;
}

void comm_set_timeout(double seconds) {
    if (!(seconds >= 0.0) || isinf(seconds))
        die("a communication timeout of %g s is not allowed: it must be finite and >= 0 "
            "(0 waits forever)",
            seconds);
    static bool started = false;
    g_timeout = seconds;
    if (seconds > 0 && !started) {
        pthread_t th;
        CHECK(pthread_create(&th, NULL, watchdog, NULL) == 0, "cannot start the timeout watchdog");
        pthread_detach(th);
        started = true;
    }
}

double comm_timeout(void) { return g_timeout; }

/* The blocking waits, each announced to the watchdog. */
static void wait_request(MPI_Request *req, const wait_site *w) {
    wait_begin(w);
    MPI_Wait(req, MPI_STATUS_IGNORE);
    wait_end();
}

/* ---------------------------------------------------------------- test-only fault hook
 *
 * TRIDENT_TEST_FAULT="kill:R:N" or "hang:R:N" (see comm.h): read on the first operation.
 * Lets tests/robustness check that a dead or stuck rank ends the job, and quickly. */

static struct {
    int mode;   /* -1 not read yet, 0 none, 1 kill, 2 hang */
    int rank;   /* global rank that misbehaves */
    long at;    /* at its at-th operation */
    long calls; /* operations so far on that rank */
} g_fault = {-1, -1, 0, 0};

static void fault_read(void) {
    const char *s = getenv("TRIDENT_TEST_FAULT");
    g_fault.mode = 0;
    if (!s || !*s) return;
    char what[8] = "";
    if (sscanf(s, "%7[a-z]:%d:%ld", what, &g_fault.rank, &g_fault.at) != 3 || g_fault.at < 1 ||
        (strcmp(what, "kill") != 0 && strcmp(what, "hang") != 0))
        die("TRIDENT_TEST_FAULT='%s': expected kill:RANK:N or hang:RANK:N with N >= 1", s);
    g_fault.mode = strcmp(what, "kill") == 0 ? 1 : 2;
}

/* Called first thing by every operation. */
static void fault_point(const char *op) {
    if (g_fault.mode == 0) return;
    if (g_fault.mode < 0) {
        fault_read();
        if (g_fault.mode == 0) return;
    }
    if (dist_rank() != g_fault.rank || ++g_fault.calls != g_fault.at) return;
    char line[160];
    snprintf(line, sizeof line, "trident[rank %d]: TRIDENT_TEST_FAULT: %s in %s (operation %ld)\n",
             g_fault.rank, g_fault.mode == 1 ? "killing this rank" : "this rank hangs", op,
             g_fault.at);
    say(line);
    if (g_fault.mode == 1) raise(SIGKILL);
    for (;;) pause(); /* until the job is torn down */
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

/* True when this call runs locally: MPI backend without a communicator (size 1 / serial). */
static bool local(const comm_group *g) { return g->backend == COMM_MPI && g->mpi == MPI_COMM_NULL; }

static bool nccl(const comm_group *g) { return g->backend == COMM_NCCL; }

/* ---------------------------------------------------------------- rings for large buffers
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
 * Tag RING_TAG is reserved for them (point-to-point tags stop below it). */
enum { RING_TAG = 32767, RING_MIN_FLOATS = 16384, RING_SEGMENT = 131072 /* floats */ };

static int ring_block(int r, int s, int p) { return ((r - s) % p + p) % p; }

static void ring_exchange(comm_group *g, const void *out, void *in, size_t bytes, const char *op) {
    const int p = g->size, next = (g->rank + 1) % p, prev = (g->rank + p - 1) % p;
    wait_site w = {g, op, NULL, -1, -1};
    wait_begin(&w);
    MPI_Sendrecv(out, mpi_count(bytes), MPI_BYTE, next, RING_TAG, in, mpi_count(bytes), MPI_BYTE, prev,
                 RING_TAG, g->mpi, MPI_STATUS_IGNORE);
    wait_end();
}

static void ring_reduce_scatter(comm_group *g, const float *send, float *recv, size_t count) {
    const int p = g->size, r = g->rank;
    if (!g->ring) {
        g->ring_cap = RING_SEGMENT;
        g->ring = mallocCheck(RING_SEGMENT * sizeof(float));
    }
    float *in = g->ring; /* the partial sum arriving from r-1 */
    for (int s = 0; s < p - 1; s++) {
        /* What goes out is the block summed in the previous step (at step 0, our own). */
        const float *out = s == 0 ? send + (size_t)ring_block(r, 1, p) * count : recv;
        const float *own = send + (size_t)ring_block(r, s + 2, p) * count;
        /* In segments, so each one is added while it is still in cache. */
        for (size_t at = 0; at < count; at += RING_SEGMENT) {
            size_t n = count - at < RING_SEGMENT ? count - at : RING_SEGMENT;
            ring_exchange(g, out + at, in, n * sizeof(float), "reduce_scatter");
            for (size_t i = 0; i < n; i++) recv[at + i] = own[at + i] + in[i];
        }
    }
    /* after p-1 steps recv holds block (r - p) mod p = r, summed over every rank */
}

static void ring_all_gather(comm_group *g, const void *send, void *recv, size_t bytes) {
    const int p = g->size, r = g->rank;
    char *all = recv;
    if (send != all + (size_t)r * bytes) memcpy(all + (size_t)r * bytes, send, bytes);
    for (int s = 0; s < p - 1; s++)
        ring_exchange(g, all + (size_t)ring_block(r, s, p) * bytes,
                      all + (size_t)ring_block(r, s + 1, p) * bytes, bytes, "all_gather");
}

/* ---------------------------------------------------------------- device memory
 *
 * Callers pass whatever memory their tensors live in (src/device/device.h). MPI reads host
 * memory only, NCCL device memory only, so a buffer on the wrong side goes through one of the
 * group's two staging slots (0: what is sent, 1: what is received), grown on demand:
 *
 *   MPI group,  device buffer:  download -> MPI on the host slot -> upload the result
 *   NCCL group, host buffer:    upload   -> NCCL on the device slot -> download the result
 *
 * So 8 ranks that share one GPU run the GPU path over MPI, with every collective and p2p
 * message staged through host memory, and ranks with a GPU each use NCCL directly. On the
 * cpu device nothing is ever staged (device_owns is false for every pointer). The staging
 * copies count in the operation's time on the timeline: they are part of what it costs. */
typedef struct {
    void *user;   /* the caller's buffer */
    void *backend; /* what the backend reads and writes: user, or a staging slot */
    size_t bytes;
    bool to_device; /* the slot is device memory (NCCL) */
} staged;

static bool needs_staging(const comm_group *g, const void *p) {
    if (!p) return false;
    return nccl(g) ? !device_owns(p) : device_owns(p);
}

static void *stage_slot(comm_group *g, int slot, size_t bytes, bool on_device) {
    if (g->stage_cap[slot] < bytes) {
        if (g->stage_on_device[slot]) device_free(g->stage[slot]);
        else free(g->stage[slot]);
        g->stage[slot] = on_device ? device_alloc(bytes, "NCCL staging") : mallocCheck(bytes);
        g->stage_cap[slot] = bytes;
        g->stage_on_device[slot] = on_device;
    }
    return g->stage[slot];
}

/* The pointer the backend should use for `user` (bytes long); `read`: the backend reads it,
 * so its contents are copied to the slot first. NCCL: the device's queued work is waited for
 * (NCCL runs on its own stream). */
static void *stage_in(comm_group *g, staged *st, int slot, const void *user, size_t bytes, bool read) {
    st->user = (void *)user;
    st->backend = (void *)user;
    st->bytes = 0;
    if (nccl(g)) device_sync();
    if (!bytes || !needs_staging(g, user)) return st->backend;
    st->to_device = nccl(g);
    st->backend = stage_slot(g, slot, bytes, st->to_device);
    st->bytes = bytes;
    if (read) {
        if (st->to_device) device_upload(st->backend, user, bytes);
        else device_download(st->backend, user, bytes);
    }
    return st->backend;
}

/* Copies the backend's result back into the caller's buffer (when it was staged). */
static void stage_out(const staged *st) {
    if (!st->bytes) return;
    if (st->to_device) device_download(st->user, st->backend, st->bytes);
    else device_upload(st->user, st->backend, st->bytes);
}

/* ---------------------------------------------------------------- collectives */

void comm_all_reduce(comm_group *g, void *buf, size_t count, comm_dtype dt, comm_op op) {
    fault_point("all_reduce");
    double t0 = time_now(), c0 = thread_cpu_now();
    staged sb;
    if (!local(g)) buf = stage_in(g, &sb, 0, buf, count * comm_dtype_size(dt), true);
    if (local(g)) {
        /* one rank: the sum of one value is itself */
    } else if (nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_all_reduce(g, buf, count, dt, op);
#endif
    } else {
        wait_site w = {g, "all_reduce", NULL, -1, -1};
        wait_begin(&w);
        MPI_Allreduce(MPI_IN_PLACE, buf, mpi_count(count), mpi_type(dt), mpi_op(dt, op), g->mpi);
        wait_end();
    }
    if (!local(g)) stage_out(&sb);
    comm_report_(g, "all_reduce", -1, count * comm_dtype_size(dt), -1, t0, t0, time_now(), c0);
}

void comm_all_gather(comm_group *g, const void *send, void *recv, size_t count_per_rank,
                     comm_dtype dt) {
    fault_point("all_gather");
    double t0 = time_now(), c0 = thread_cpu_now();
    size_t part = count_per_rank * comm_dtype_size(dt);
    staged ss, sr;
    if (device_owns(send) && send == (const char *)recv + (size_t)g->rank * part) {
        recv = stage_in(g, &sr, 1, recv, part * (size_t)g->size, true); /* in place, staged whole */
        send = (const char *)recv + (size_t)g->rank * part;
        ss.bytes = 0;
    } else {
        send = stage_in(g, &ss, 0, send, part, true);
        recv = stage_in(g, &sr, 1, recv, part * (size_t)g->size, false);
    }
    if (local(g)) {
        if (part && send != recv) memmove(recv, send, part);
    } else if (nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_all_gather(g, send, recv, count_per_rank, dt);
#endif
    } else {
        if (count_per_rank * comm_dtype_size(dt) >= RING_MIN_FLOATS * sizeof(float)) {
            ring_all_gather(g, send, recv, part);
        } else {
            /* Sending from our own slot of recv is MPI_IN_PLACE. */
            const void *src = send == (const char *)recv + (size_t)g->rank * part ? MPI_IN_PLACE : send;
            int n = mpi_count(count_per_rank);
            wait_site w = {g, "all_gather", NULL, -1, -1};
            wait_begin(&w);
            MPI_Allgather(src, n, mpi_type(dt), recv, n, mpi_type(dt), g->mpi);
            wait_end();
        }
    }
    stage_out(&sr);
    comm_report_(g, "all_gather", -1, part * (size_t)g->size, -1, t0, t0, time_now(), c0);
}

void comm_reduce_scatter(comm_group *g, const void *send, void *recv, size_t count_per_rank,
                         comm_dtype dt, comm_op op) {
    fault_point("reduce_scatter");
    double t0 = time_now(), c0 = thread_cpu_now();
    size_t part = count_per_rank * comm_dtype_size(dt);
    staged ss, sr;
    if (send == recv && needs_staging(g, send)) { /* in place: recv holds size * count */
        send = recv = stage_in(g, &sr, 1, recv, part * (size_t)g->size, true);
        sr.bytes = part; /* only this rank's part comes back */
    } else {
        send = stage_in(g, &ss, 0, send, part * (size_t)g->size, true);
        recv = stage_in(g, &sr, 1, recv, part, false);
    }
    if (local(g)) {
        if (part && send != recv) memmove(recv, send, part);
    } else if (nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_reduce_scatter(g, send, recv, count_per_rank, dt, op);
#endif
    } else {
        if (dt == COMM_FLOAT32 && op == COMM_SUM && count_per_rank >= RING_MIN_FLOATS) {
            /* the ring writes recv while it still reads the other blocks of send: in place,
             * it works on a copy of the input */
            void *copy = send == recv ? mallocCheck(part * (size_t)g->size) : NULL;
            if (copy) memcpy(copy, send, part * (size_t)g->size);
            ring_reduce_scatter(g, copy ? copy : send, recv, count_per_rank);
            free(copy);
        } else {
            const void *src = send == recv ? MPI_IN_PLACE : send;
            wait_site w = {g, "reduce_scatter", NULL, -1, -1};
            wait_begin(&w);
            MPI_Reduce_scatter_block(src, recv, mpi_count(count_per_rank), mpi_type(dt),
                                     mpi_op(dt, op), g->mpi);
            wait_end();
        }
    }
    stage_out(&sr);
    comm_report_(g, "reduce_scatter", -1, part * (size_t)g->size, -1, t0, t0, time_now(), c0);
}

void comm_broadcast(comm_group *g, void *buf, size_t count, comm_dtype dt, int root_group_rank) {
    CHECK(root_group_rank >= 0 && root_group_rank < g->size, "broadcast root outside the group");
    fault_point("broadcast");
    double t0 = time_now(), c0 = thread_cpu_now();
    staged sb;
    if (!local(g)) buf = stage_in(g, &sb, 0, buf, count * comm_dtype_size(dt), true);
    if (local(g)) {
        /* the root already holds the data */
    } else if (nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_broadcast(g, buf, count, dt, root_group_rank);
#endif
    } else {
        wait_site w = {g, "broadcast", NULL, -1, -1};
        wait_begin(&w);
        MPI_Bcast(buf, mpi_count(count), mpi_type(dt), root_group_rank, g->mpi);
        wait_end();
    }
    if (!local(g)) stage_out(&sb);
    comm_report_(g, "broadcast", -1, count * comm_dtype_size(dt), -1, t0, t0, time_now(), c0);
}

void comm_barrier(comm_group *g) {
    fault_point("barrier");
    double t0 = time_now(), c0 = thread_cpu_now();
#ifdef TRIDENT_CUDA
    if (nccl(g)) comm_nccl_flush(g);
#endif
    if (g->mpi != MPI_COMM_NULL) {
        wait_site w = {g, "barrier", NULL, -1, -1};
        wait_begin(&w);
        MPI_Barrier(g->mpi);
        wait_end();
    }
    comm_report_(g, "barrier", -1, 0, -1, t0, t0, time_now(), c0);
}

/* ---------------------------------------------------------------- point to point */

static void check_p2p(const comm_group *g, int peer, int tag) {
    CHECK(peer >= 0 && peer < g->size, "p2p peer is a group rank: 0 .. comm_size(g)-1");
    CHECK(tag >= 0 && tag < RING_TAG, "p2p tags must be in 0 .. 32766 (MPI's guaranteed range; 32767 is the rings')");
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
            wait_site w = {g, "send", "to", h->peer, h->tag};
            wait_request(&g->sends[i].req, &w);
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
    fault_point("send");
    double t0 = time_now(), c0 = thread_cpu_now();
    size_t bytes = count * comm_dtype_size(dt);
    staged sb;
    buf = stage_in(g, &sb, 0, buf, bytes, true); /* nothing comes back: no stage_out */
    if (local(g)) {
        /* Only peer 0 = ourselves exists: keep the message for our own recv. */
        comm_loop_msg *m = mallocCheck(sizeof *m + bytes);
        m->next = NULL;
        m->tag = tag;
        m->bytes = bytes;
        if (bytes) memcpy(m->data, buf, bytes);
        comm_loop_msg **tail = &g->loop;
        while (*tail) tail = &(*tail)->next;
        *tail = m;
    } else if (nccl(g)) {
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
        MPI_Isend(payload, mpi_count(count), mpi_type(dt), peer_group_rank, tag, g->mpi, &s->req);
        dist_progress_add_sends(1); /* keeps it moving while we compute (dist.h) */
    }
    double t1 = time_now();
    comm_report_(g, "send", peer_group_rank, bytes, tag, t0, t0, t1, c0);
}

/* Waits for a message from w->peer with w->tag (returns when it is there) and checks its
 * size. */
static void probe_message(comm_group *g, size_t count, comm_dtype dt, const wait_site *w) {
    MPI_Status st;
    wait_begin(w);
    MPI_Probe(w->peer, w->tag, g->mpi, &st);
    wait_end();
    int got = 0;
    MPI_Get_count(&st, mpi_type(dt), &got);
    if ((size_t)got != count) {
        fprintf(stderr, "comm_recv on group %s: peer %d sent %d elements with tag %d, expected %zu\n",
                g->name, g->members[w->peer], got, w->tag, count);
        CHECK(0, "sender and receiver disagree on the message size");
    }
}

/* Receives the message probe_message() found (a large one still needs the sender's progress). */
static void receive_message(comm_group *g, void *buf, size_t count, comm_dtype dt,
                            const wait_site *w) {
    wait_begin(w);
    MPI_Recv(buf, mpi_count(count), mpi_type(dt), w->peer, w->tag, g->mpi, MPI_STATUS_IGNORE);
    wait_end();
}

void comm_recv(comm_group *g, void *buf, size_t count, comm_dtype dt, int peer_group_rank,
               int tag) {
    check_p2p(g, peer_group_rank, tag);
    fault_point("recv");
    double t0 = time_now(), t_ready = t0, c0 = thread_cpu_now();
    size_t bytes = count * comm_dtype_size(dt);
    staged sb;
    buf = stage_in(g, &sb, 1, buf, bytes, false);
    if (local(g)) {
        comm_loop_msg **p = &g->loop;
        while (*p && (*p)->tag != tag) p = &(*p)->next;
        if (!*p)
            die("comm_recv on group %s (size 1) waits for a message with tag %d that this rank never "
                "sent to itself",
                g->name, tag);
        comm_loop_msg *m = *p;
        CHECK(m->bytes == bytes, "sender and receiver disagree on the message size");
        if (bytes) memcpy(buf, m->data, bytes);
        *p = m->next;
        free(m);
    } else if (nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_recv(g, buf, bytes, peer_group_rank);
#endif
    } else {
        wait_site w = {g, "recv", "from", peer_group_rank, tag};
        probe_message(g, count, dt, &w); /* waiting for the peer ... */
        t_ready = time_now();            /* ... then the transfer */
        receive_message(g, buf, count, dt, &w);
    }
    stage_out(&sb);
    comm_report_(g, "recv", peer_group_rank, bytes, tag, t0, t_ready, time_now(), c0);
}

void comm_sendrecv(comm_group *g, const void *sendbuf, size_t scount, int dest, void *recvbuf,
                   size_t rcount, int src, comm_dtype dt, int tag) {
    check_p2p(g, dest, tag);
    check_p2p(g, src, tag);
    fault_point("sendrecv");
    double t0 = time_now(), t_ready = t0, c0 = thread_cpu_now();
    size_t sbytes = scount * comm_dtype_size(dt), rbytes = rcount * comm_dtype_size(dt);
    staged ss, sr;
    sendbuf = stage_in(g, &ss, 0, sendbuf, sbytes, true);
    recvbuf = stage_in(g, &sr, 1, recvbuf, rbytes, false);
    if (local(g)) {
        CHECK(sbytes == rbytes, "sender and receiver disagree on the message size");
        if (sbytes && sendbuf != recvbuf) memmove(recvbuf, sendbuf, sbytes);
    } else if (nccl(g)) {
#ifdef TRIDENT_CUDA
        comm_nccl_sendrecv(g, sendbuf, sbytes, dest, recvbuf, rbytes, src);
#endif
    } else {
        MPI_Request req;
        MPI_Isend(sendbuf, mpi_count(scount), mpi_type(dt), dest, tag, g->mpi, &req);
        wait_site from = {g, "sendrecv", "from", src, tag};
        probe_message(g, rcount, dt, &from);
        t_ready = time_now();
        receive_message(g, recvbuf, rcount, dt, &from);
        wait_site to = {g, "sendrecv", "to", dest, tag};
        wait_request(&req, &to);
    }
    stage_out(&sr);
    g->bytes_sent += sbytes;
    g->bytes_received += rbytes;
    comm_report_(g, "sendrecv", dest, sbytes, tag, t0, t_ready, time_now(), c0);
}

void comm_wait_sends(comm_group *g) {
#ifdef TRIDENT_CUDA
    if (nccl(g)) comm_nccl_flush(g);
#endif
    if (g->nsends) reap_sends(g, true);
}
