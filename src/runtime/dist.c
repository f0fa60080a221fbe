/* dist.c — MPI start-up and shutdown, or nothing at all for a plain serial run, and the choice
 * of how point-to-point messages move between the ranks of one node (the "transport").
 * See dist.h for the contract. The only file that calls MPI_Init / MPI_Finalize.
 *
 * Not here: communication itself (comm.c). comm.c only tells the progress thread, through
 * dist_progress_add_sends(), how many of its sends are in flight.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include "src/runtime/dist.h"

#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef TRIDENT_CUDA
#include <cuda_runtime.h>
#endif

#include "src/core/check.h"
#include "src/runtime/hosts.h"

static struct {
    bool mpi; /* we called MPI_Init and not yet MPI_Finalize */
    int rank, world, local_rank, local_size;
    char transport[320]; /* dist_transport_description() */
} g_dist = {false, 0, 1, 0, 1, "p2p: none (one process, no MPI)"};

static void abort_job(int code) {
    /* Called by fatal_exit(): one failing rank takes the whole job down with it. */
    if (g_dist.mpi) MPI_Abort(MPI_COMM_WORLD, code);
}

/* ---------------------------------------------------------------- the transport
 *
 * Open MPI sends a large message (above the eager limit, 4 KiB for shared memory) by
 * rendezvous: the sender posts a header, the receiver answers, and then the bytes move.
 * Who moves them decides whether a pipeline overlaps its transfers with compute:
 *
 *   single copy (CMA):  rank 0: send ── forward(mb 2) ──────────────────── (no MPI call)
 *                       rank 1: recv ── copies rank 0's buffer itself (process_vm_readv) ── ok
 *
 *   no single copy:     rank 0: send ── forward(mb 2) ──────────────── MPI ── pushes bytes
 *                       rank 1: recv ── waits ─────────────────────────────────────── ok
 *                       (the bytes go through shared-memory fragments that the SENDER copies,
 *                       so they move only while the sender is inside MPI: 1F1B's bubble grew
 *                       from 20% to 37% on 2 ranks)
 *
 *   no single copy      rank 0: send ── forward(mb 2) ───────────────────── (no MPI call)
 *   + progress thread:  rank 0's thread: MPI_Iprobe, nap, MPI_Iprobe, ...   pushes bytes
 *                       rank 1: recv ── ok
 *
 * So dist_init, before MPI_Init, finds out whether CMA works here (a probe, below) and sets
 * OMPI_MCA_btl_vader_single_copy_mechanism to "cma" or "none" — unless the user set it, which
 * is respected. Without single copy, every rank runs a progress thread that calls MPI only
 * while this rank has sends in flight. (MPI always starts with MPI_THREAD_MULTIPLE: see
 * dist_init.) */

#define SINGLE_COPY_VAR "OMPI_MCA_btl_vader_single_copy_mechanism"

/* How often the progress thread polls. One poll (MPI_Iprobe) costs ~0.1 us of CPU, but each
 * nap costs the thread 20-50 us (measured on these VMs: waking a thread is not cheap). Each
 * poll lets Open MPI push the next fragments of a pending send (32 KiB each, at most
 * pml_ob1_send_pipeline_depth = 3 in flight; ~50 KiB per poll measured). So the thread polls
 * every 50 us right after a send is posted — a pipeline's activations (a few hundred KiB) go
 * out within a few polls — and doubles its nap every 128 polls up to 1 ms: comm.c learns
 * that a send completed only at its next send, so the count stays up while the rank
 * computes, and idle polls every 50 us took 13-21% of a core from that compute (every 20 us:
 * 21%, every 100 us: 13%); backed off to 1 ms, ~2%. 20 us moved 16 MiB no faster than 50 us
 * on 2 loaded cores. */
enum {
    PROGRESS_POLL_NS = 50000,       /* 50 us right after a send is posted */
    PROGRESS_POLL_MAX_NS = 1000000, /* 1 ms at most */
    PROGRESS_BACKOFF_POLLS = 128,   /* polls between two doublings of the nap */
};

/* Whether one rank can read another's memory with process_vm_readv (Linux CMA). Two ranks
 * of a job are siblings (children of mpirun), not each other's ancestors, so the probe has
 * a forked CHILD read its PARENT: under yama ptrace_scope 1 a parent may always read its
 * child, which would pass where siblings fail. The parent first allows any process to trace
 * it (PR_SET_PTRACER_ANY, what Open MPI's vader does itself when ptrace_scope != 0) and
 * takes it back afterwards; seccomp filters and ptrace_scope 2/3 apply to the child just as
 * they will to the ranks. The parent writes the pattern after the fork, so the child's
 * own (copied) memory cannot fake a pass. Returns true, or false with the reason in why. */
static bool cma_probe(char *why, size_t cap) {
    const char *refuse = getenv("TRIDENT_TEST_REFUSE_CMA");
    if (refuse && strcmp(refuse, "1") == 0) {
        snprintf(why, cap, "TRIDENT_TEST_REFUSE_CMA=1");
        return false;
    }
    static volatile unsigned char probe[64]; /* the parent's pattern, read by the child */
    memset((void *)probe, 0xA5, sizeof probe);
    int go[2];
    if (pipe(go) != 0) {
        snprintf(why, cap, "pipe: %s", strerror(errno));
        return false;
    }
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* EINVAL without yama: fine */
    pid_t child = fork();
    if (child < 0) {
        snprintf(why, cap, "fork: %s", strerror(errno));
        close(go[0]);
        close(go[1]);
        (void)prctl(PR_SET_PTRACER, 0, 0, 0, 0);
        return false;
    }
    if (child == 0) {
        close(go[1]);
        char c;
        if (read(go[0], &c, 1) != 1) _exit(254);
        unsigned char got[sizeof probe];
        struct iovec local = {got, sizeof got}, remote = {(void *)probe, sizeof probe};
        ssize_t n = process_vm_readv(getppid(), &local, 1, &remote, 1, 0);
        if (n < 0) _exit(errno > 0 && errno < 250 ? errno : 253);
        for (size_t i = 0; i < sizeof got; i++)
            if (got[i] != 0x5A) _exit(255);
        _exit(0);
    }
    close(go[0]);
    memset((void *)probe, 0x5A, sizeof probe); /* only the parent's memory holds this */
    if (write(go[1], "x", 1) != 1) {           /* the child sees EOF and fails: reported below */
    }
    close(go[1]);
    int st = 0;
    while (waitpid(child, &st, 0) < 0 && errno == EINTR) {}
    (void)prctl(PR_SET_PTRACER, 0, 0, 0, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return true;
    char scope[32] = "";
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (f) {
        int s = -1;
        if (fscanf(f, "%d", &s) == 1) snprintf(scope, sizeof scope, ", yama ptrace_scope %d", s);
        fclose(f);
    }
    if (WIFSIGNALED(st))
        snprintf(why, cap, "process_vm_readv killed the probe with signal %d (seccomp?)%s",
                 WTERMSIG(st), scope);
    else if (WEXITSTATUS(st) >= 253)
        snprintf(why, cap, "process_vm_readv did not read the parent's memory%s", scope);
    else snprintf(why, cap, "process_vm_readv: %s%s", strerror(WEXITSTATUS(st)), scope);
    return false;
}

/* The progress thread. It sleeps on a condition variable while this rank has no send in
 * flight; while it has, it calls MPI_Iprobe on a communicator of its own that nobody sends
 * on (so it never matches or steals a message) — which runs Open MPI's progress engine and
 * pushes the pending sends' fragments — and naps 50 us to 1 ms between calls (see above). It never
 * touches a request of the main thread (comm.c tests and frees those). */
static struct {
    bool running;
    pthread_t thread;
    MPI_Comm comm;       /* private duplicate of MPI_COMM_WORLD; nothing is ever sent on it */
    _Atomic long sends;  /* sends in flight, from comm.c */
    _Atomic long posted; /* sends ever posted: a new one resets the thread's nap */
    _Atomic bool stop;
    pthread_mutex_t mu;
    pthread_cond_t wake; /* signalled when sends goes 0 -> 1, and to stop */
} g_prog = {
    false, 0, MPI_COMM_NULL, 0, 0, false, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

void dist_progress_add_sends(int delta) {
    if (delta > 0) atomic_fetch_add_explicit(&g_prog.posted, delta, memory_order_relaxed);
    long before = atomic_fetch_add_explicit(&g_prog.sends, delta, memory_order_relaxed);
    if (before == 0 && delta > 0 && g_prog.running) {
        pthread_mutex_lock(&g_prog.mu);
        pthread_cond_signal(&g_prog.wake);
        pthread_mutex_unlock(&g_prog.mu);
    }
}

static void *progress_main(void *arg) {
    (void)arg;
    /* Let a 50 us nap be ~50 us, not 50 us + the default 50 us of timer slack. */
    (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    /* Signals are the main thread's business (the fault hook, mpirun's SIGTERM). */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    long nap_ns = PROGRESS_POLL_NS, polls = 0, seen = -1;
    while (!atomic_load(&g_prog.stop)) {
        if (atomic_load_explicit(&g_prog.sends, memory_order_relaxed) <= 0) {
            pthread_mutex_lock(&g_prog.mu);
            while (atomic_load(&g_prog.sends) <= 0 && !atomic_load(&g_prog.stop))
                pthread_cond_wait(&g_prog.wake, &g_prog.mu);
            pthread_mutex_unlock(&g_prog.mu);
            continue;
        }
        long posted = atomic_load_explicit(&g_prog.posted, memory_order_relaxed);
        if (posted != seen) { /* a new send: poll fast again */
            seen = posted;
            nap_ns = PROGRESS_POLL_NS;
            polls = 0;
        } else if (++polls % PROGRESS_BACKOFF_POLLS == 0 && nap_ns < PROGRESS_POLL_MAX_NS) {
            nap_ns = 2 * nap_ns < PROGRESS_POLL_MAX_NS ? 2 * nap_ns : PROGRESS_POLL_MAX_NS;
        }
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, g_prog.comm, &flag, MPI_STATUS_IGNORE);
        struct timespec nap = {0, nap_ns};
        nanosleep(&nap, NULL);
    }
    return NULL;
}

static void progress_start(void) {
    MPI_Comm_dup(MPI_COMM_WORLD, &g_prog.comm); /* collective: every rank starts one */
    atomic_store(&g_prog.stop, false);
    CHECK(pthread_create(&g_prog.thread, NULL, progress_main, NULL) == 0,
          "cannot start the p2p progress thread (out of threads?)");
    g_prog.running = true;
}

/* Before MPI_Finalize: the thread leaves its loop and is joined, its communicator freed. */
static void progress_stop(void) {
    if (!g_prog.running) return;
    pthread_mutex_lock(&g_prog.mu);
    atomic_store(&g_prog.stop, true);
    pthread_cond_signal(&g_prog.wake);
    pthread_mutex_unlock(&g_prog.mu);
    pthread_join(g_prog.thread, NULL);
    g_prog.running = false;
    MPI_Comm_free(&g_prog.comm);
}

/* Decides the transport before MPI_Init (see above); returns whether the progress thread is
 * wanted, and writes the description. */
static bool transport_choose(void) {
    const char *btl = getenv("OMPI_MCA_btl");
    const char *user = getenv(SINGLE_COPY_VAR);
    const char *nothread = getenv("TRIDENT_NO_PROGRESS_THREAD");
    bool thread_off = nothread && strcmp(nothread, "1") == 0;
    const char *world = getenv("OMPI_COMM_WORLD_SIZE");
    char why[200] = "";
    bool single, probed = false, shm = true;
    if (world && strcmp(world, "1") == 0) {
        snprintf(g_dist.transport, sizeof g_dist.transport, "p2p: none (one rank)");
        return false;
    }
    bool names_shm = btl && (strstr(btl, "vader") || strstr(btl, "sm"));
    if (btl && *btl && (btl[0] == '^' ? names_shm : !names_shm)) { /* "^x": all but x */
        single = shm = false;
        snprintf(why, sizeof why, "OMPI_MCA_btl=%s", btl);
    } else if (user && *user) {
        single = strcmp(user, "none") != 0 && strcmp(user, "emulated") != 0;
        snprintf(why, sizeof why, "%s=%s", SINGLE_COPY_VAR, user);
    } else {
        single = cma_probe(why, sizeof why);
        probed = true;
        setenv(SINGLE_COPY_VAR, single ? "cma" : "none", 1);
    }
    /* One line for the run header: what moves the bytes, and why. */
    char cause[240];
    snprintf(cause, sizeof cause, "%s%s", probed ? "CMA refused: " : "", why);
    const char *medium = shm ? "shared memory, " : "";
    if (single && probed)
        snprintf(g_dist.transport, sizeof g_dist.transport,
                 "p2p: shared memory, single copy (CMA): a receiver copies from the sender's "
                 "memory while it computes");
    else if (single)
        snprintf(g_dist.transport, sizeof g_dist.transport,
                 "p2p: shared memory, single copy (%s): a receiver copies from the sender's "
                 "memory while it computes",
                 why);
    else if (thread_off)
        snprintf(g_dist.transport, sizeof g_dist.transport,
                 "p2p: %sno single copy (%s); no progress thread (TRIDENT_NO_PROGRESS_THREAD=1): "
                 "a large message waits until its sender calls MPI again",
                 medium, cause);
    else
        snprintf(g_dist.transport, sizeof g_dist.transport,
                 "p2p: %sno single copy (%s); a progress thread moves messages while the rank "
                 "computes",
                 medium, cause);
    return !single && !thread_off;
}

/* ---------------------------------------------------------------- start-up and shutdown */

void dist_init(int *argc, char ***argv) {
    if (g_dist.mpi) return;
    if (!getenv("OMPI_COMM_WORLD_SIZE")) {
        g_dist.rank = 0;
        g_dist.world = 1;
        g_dist.local_rank = 0;
        g_dist.local_size = 1;
        hosts_init();
        return;
    }
    int already = 0;
    MPI_Initialized(&already);
    bool progress = false;
    int provided = MPI_THREAD_MULTIPLE;
    if (!already) {
        progress = transport_choose();
        /* Always MPI_THREAD_MULTIPLE: the p2p progress thread and the communication stream
         * (comm_stream.h, --overlap-grad-reduce) call MPI beside the main thread, and the
         * flags are parsed only after this. Asking for it costs nothing we could see: 2 ranks
         * on 2 loaded cores, MPI_Init vs MPI_Init_thread(MULTIPLE), three alternating runs,
         * medians of 31 x 200 calls: 8-byte all-reduce 0.47-0.68 us vs 0.57-0.86 us (one
         * outlier each way), 8-byte one-way p2p 0.40-0.61 us vs 0.46-0.60 us, 4 MiB
         * all-reduce 15-38 ms vs 12-35 ms: the spread between runs is larger than any
         * difference. */
        MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        snprintf(g_dist.transport, sizeof g_dist.transport,
                 "p2p: as configured by whoever started MPI before dist_init (no progress thread)");
    }
    g_dist.mpi = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_dist.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_dist.world);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_dist.rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &g_dist.local_rank);
    MPI_Comm_size(node, &g_dist.local_size);
    MPI_Comm_free(&node);
    hosts_init();
    if (g_dist.world > 1) {
        check_set_abort_hook(abort_job);
        check_set_rank(g_dist.rank);
    }
    if (progress && provided < MPI_THREAD_MULTIPLE) /* every rank finds the same */
        dist_fail_all("the p2p progress thread needs MPI_THREAD_MULTIPLE, but this MPI provides "
                      "thread level %d (MULTIPLE is %d): set %s=cma where the kernel allows "
                      "CMA, or use an MPI built with thread support",
                      provided, MPI_THREAD_MULTIPLE, SINGLE_COPY_VAR);
    if (progress && g_dist.world > 1) progress_start();
}

void dist_finalize(void) {
    if (!g_dist.mpi) return;
    check_set_abort_hook(NULL);
    progress_stop();
    hosts_free();
    MPI_Finalize();
    g_dist.mpi = false;
}

int dist_rank(void) { return g_dist.rank; }
int dist_world_size(void) { return g_dist.world; }
int dist_local_rank(void) { return g_dist.local_rank; }
int dist_local_size(void) { return g_dist.local_size; }
bool dist_is_mpi(void) { return g_dist.mpi; }
const char *dist_transport_description(void) { return g_dist.transport; }

int dist_bind_device(void) {
#ifdef TRIDENT_CUDA
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        (void)cudaGetLastError(); /* clear the sticky "no device" error */
        return -1;
    }
    int dev = g_dist.local_rank % n;
    cudaError_t err = cudaSetDevice(dev);
    if (err != cudaSuccess)
        die("cannot bind rank %d to CUDA device %d: %s", g_dist.rank, dev, cudaGetErrorString(err));
    return dev;
#else
    return -1;
#endif
}

void dist_fail_all(const char *fmt, ...) {
    if (g_dist.rank == 0) {
        if (strncmp(fmt, "trident ", 8) != 0) fprintf(stderr, "trident: ");
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
    fflush(stdout);
    fflush(stderr);
    if (g_dist.mpi) {
        /* Every rank reached the same verdict, so an orderly exit needs no abort: finalize
         * (a collective — all ranks are here) and leave with status 1. */
        check_set_abort_hook(NULL);
        progress_stop();
        MPI_Finalize();
        g_dist.mpi = false;
    }
    exit(1);
}
