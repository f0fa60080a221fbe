/* comm_stream.c — see comm_stream.h. The queue is a ring of COMM_STREAM_MAX_JOBS slots; job
 * h lives in slot h % COMM_STREAM_MAX_JOBS from its call until the wait after it is done:
 *
 *   handles  0 .. done-1        complete (and every one before them)
 *            done .. posted-1   posted to MPI by the thread, in flight (some may be complete)
 *            posted .. queued-1 queued, not yet posted
 *
 * The thread keeps up to COMM_STREAM_IN_FLIGHT queued jobs posted at once: MPI allows many
 * nonblocking collectives in flight on one communicator, as long as every member posts them
 * in the same order, and one MPI_Test pass then moves all of them. `done` only advances over
 * a complete prefix, so a wait for h is a wait for everything queued before h too (a CUDA
 * stream's order).
 *
 * One mutex guards queued, done and the done flags; the thread sleeps on `work` while nothing
 * is queued or in flight, a waiting caller sleeps on `finished` (a sleep, not a spin: the
 * core goes to the stream thread, which is what the caller is waiting for).
 */
#define _GNU_SOURCE /* prctl's timer slack */
#include "src/runtime/comm_stream.h"

#include <mpi.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/runtime/comm_internal.h"

/* How the thread drives its collectives (see comm_stream.h for why not a blocking call).
 * Each MPI_Test runs Open MPI's progress engine once: the next round of every posted libnbc
 * schedule moves (with single copy, a round is a rendezvous handshake and one
 * process_vm_readv). Right after something was posted or completed the thread tests every
 * 20 us, and doubles its nap every COMM_STREAM_BACKOFF passes without news up to 500 us, so
 * a collective waiting for a slower peer (its backward not done yet) costs little CPU. The
 * nap is what lets the compute run on a shared core; the wake-up of a napping thread costs
 * ~20-50 us of CPU on these VMs (dist.c measured the same for the p2p progress thread).
 * How many in flight (measured, 2 ranks on 2 cores under a load of 5-8, median exposed
 * DP time per step of a 12.7M-parameter model in 1 MiB buckets, two runs each): one at a
 * time, the next step's forward waited ~0.4 ms for each all-gather in turn (a collective's
 * handshakes moved only when the stream thread got the core; with several in flight one
 * pass moves them all); all of them (256) made bucket all-reduces crawl (253 and 587 ms
 * exposed, against 27 and 10 ms one at a time, and 41 and 12 ms with 4); with ZeRO and both
 * flags, 1: 45 and 33 ms, 4: 13 and 34 ms, 16: 365 and 96 ms. So 4.
 * While the caller waits (comm_stream_wait) its core has nothing else to do, so the thread
 * stops napping and tests back to back, like a blocking collective: a collective whose every
 * round costs a nap and a wake-up (1 MiB all-reduces took 10-40 ms each on the loaded
 * machine, napping) then runs at the speed of the blocking one. */
enum {
    COMM_STREAM_NAP_NS = 20000,
    COMM_STREAM_NAP_MAX_NS = 500000,
    COMM_STREAM_BACKOFF = 64,
    COMM_STREAM_IN_FLIGHT = 4,
};

typedef enum { JOB_ALL_REDUCE, JOB_REDUCE_SCATTER, JOB_ALL_GATHER } job_kind;

typedef struct {
    job_kind kind;
    float *buf;        /* all_reduce / all_gather buffer, reduce_scatter recv */
    const float *send; /* reduce_scatter */
    size_t count;      /* all_reduce */
    int *counts;       /* (size) reduce_scatter / all_gather, as MPI ints */
    int *displs;       /* (size) all_gather offsets */
    const char *label;
    double t_posted, t_start, t_end;
    bool done;
} job;

struct comm_stream {
    comm_group *g;
    MPI_Comm comm; /* duplicate of g->mpi: the stream's collectives only */
    int size, rank;
    job jobs[COMM_STREAM_MAX_JOBS];
    int64_t queued, done, waited; /* handles [waited.. queued) still hold a slot */
    bool running, stop;
    _Atomic int waiting; /* callers inside comm_stream_wait: the thread stops napping */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work, finished;
};

static void (*g_hook)(const comm_stream_event *e, void *ctx) = NULL;
static void *g_hook_ctx = NULL;

void comm_stream_set_trace_hook(void (*fn)(const comm_stream_event *e, void *ctx), void *ctx) {
    g_hook = fn;
    g_hook_ctx = ctx;
}

static job *slot(comm_stream *s, int64_t h) { return &s->jobs[h % COMM_STREAM_MAX_JOBS]; }

/* Posts job j on the stream's communicator (thread only). */
static MPI_Request post(comm_stream *s, job *j) {
    MPI_Request req = MPI_REQUEST_NULL;
    j->t_start = time_now();
    switch (j->kind) {
    case JOB_ALL_REDUCE:
        MPI_Iallreduce(MPI_IN_PLACE, j->buf, comm_mpi_count(j->count), MPI_FLOAT, MPI_SUM, s->comm,
                       &req);
        break;
    case JOB_REDUCE_SCATTER:
        MPI_Ireduce_scatter(j->send, j->buf, j->counts, MPI_FLOAT, MPI_SUM, s->comm, &req);
        break;
    case JOB_ALL_GATHER:
        MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, j->buf, j->counts, j->displs, MPI_FLOAT,
                        s->comm, &req);
        break;
    }
    return req;
}

/* The jobs in flight: their MPI requests and handles (thread only). */
typedef struct {
    MPI_Request req[COMM_STREAM_IN_FLIGHT];
    int64_t id[COMM_STREAM_IN_FLIGHT];
    int n;
    int64_t posted;
} in_flight;

/* One MPI_Test pass over the jobs in flight; returns how many completed (marked done under
 * the lock, and `done` advanced over the complete prefix). */
static int test_all(comm_stream *s, in_flight *f) {
    int64_t complete[COMM_STREAM_IN_FLIGHT];
    int nc = 0;
    for (int i = 0; i < f->n;) {
        int flag = 0;
        MPI_Test(&f->req[i], &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            i++;
            continue;
        }
        slot(s, f->id[i])->t_end = time_now();
        complete[nc++] = f->id[i];
        f->req[i] = f->req[f->n - 1], f->id[i] = f->id[f->n - 1], f->n--;
    }
    if (nc == 0) return 0;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < nc; i++) slot(s, complete[i])->done = true;
    while (s->done < f->posted && slot(s, s->done)->done) s->done++;
    pthread_cond_broadcast(&s->finished);
    pthread_mutex_unlock(&s->mu);
    return nc;
}

static void *stream_main(void *arg) {
    comm_stream *s = arg;
    (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); /* a 20 us nap is ~20 us */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the main thread's business */
    in_flight f = {.n = 0, .posted = 0};
    long nap = COMM_STREAM_NAP_NS, quiet = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (f.posted == s->queued && f.n == 0 && !s->stop) pthread_cond_wait(&s->work, &s->mu);
        const int64_t queued = s->queued;
        const bool stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop && f.posted == queued && f.n == 0) break; /* destroy drains first */
        bool news = false;
        for (; f.posted < queued && f.n < COMM_STREAM_IN_FLIGHT; f.posted++, news = true) {
            f.req[f.n] = post(s, slot(s, f.posted));
            f.id[f.n++] = f.posted;
        }
        news |= test_all(s, &f) > 0;
        if (news) nap = COMM_STREAM_NAP_NS, quiet = 0;
        else if (++quiet % COMM_STREAM_BACKOFF == 0 && nap < COMM_STREAM_NAP_MAX_NS)
            nap = 2 * nap < COMM_STREAM_NAP_MAX_NS ? 2 * nap : COMM_STREAM_NAP_MAX_NS;
        if (f.n > 0 && atomic_load_explicit(&s->waiting, memory_order_relaxed) == 0) {
            struct timespec ts = {0, nap};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

comm_stream *comm_stream_create(comm_group *g) {
    CHECK(g != NULL, "comm_stream_create needs a group");
    CHECK(comm_backend_of(g) == COMM_MPI, "comm_stream runs on MPI groups (host memory) only");
    comm_stream *s = callocCheck(1, sizeof *s);
    s->g = g;
    s->size = comm_size(g);
    s->rank = comm_rank(g);
    s->comm = MPI_COMM_NULL;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->finished, NULL);
    if (comm_is_local(g)) return s; /* size 1: every job completes on the caller */
    int level = 0;
    MPI_Query_thread(&level);
    CHECK(level >= MPI_THREAD_MULTIPLE,
          "comm_stream needs MPI started with MPI_THREAD_MULTIPLE (dist_init asks for it)");
    MPI_Comm_dup(g->mpi, &s->comm);
    CHECK(pthread_create(&s->thread, NULL, stream_main, s) == 0,
          "cannot start the communication stream's thread (out of threads?)");
    s->running = true;
    return s;
}

static void free_slot(job *j) {
    free(j->counts);
    free(j->displs);
    j->counts = j->displs = NULL;
}

void comm_stream_destroy(comm_stream *s) {
    if (!s) return;
    comm_stream_wait_all(s);
    if (s->running) {
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_signal(&s->work);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
        MPI_Comm_free(&s->comm);
    }
    for (int k = 0; k < COMM_STREAM_MAX_JOBS; k++) free_slot(&s->jobs[k]); /* freed lazily */
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->finished);
    free(s);
}

/* Takes the next slot (the caller fills it, then queue() hands it to the thread). */
static job *next_job(comm_stream *s, job_kind kind, const char *label) {
    CHECK(s->queued - s->waited < COMM_STREAM_MAX_JOBS,
          "more than COMM_STREAM_MAX_JOBS collectives queued and not waited for");
    job *j = slot(s, s->queued);
    free_slot(j);
    memset(j, 0, sizeof *j);
    j->kind = kind;
    j->label = label;
    j->t_posted = time_now();
    return j;
}

static comm_handle queue(comm_stream *s, job *j) {
    if (!s->running) { /* size 1: the collective is the identity (reduce-scatter: a copy) */
        if (j->kind == JOB_REDUCE_SCATTER && j->buf != j->send)
            memmove(j->buf, j->send, (size_t)j->counts[0] * sizeof(float));
        j->t_start = j->t_end = j->t_posted;
        j->done = true;
        s->done = ++s->queued;
        return s->queued - 1;
    }
    pthread_mutex_lock(&s->mu);
    comm_handle h = s->queued++;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    return h;
}

/* counts[] as MPI ints, and (for displs) their running sums; returns the total. */
static size_t copy_counts(comm_stream *s, job *j, const size_t *counts, bool displs) {
    j->counts = mallocCheck(sizeof(int) * (size_t)s->size);
    if (displs) j->displs = mallocCheck(sizeof(int) * (size_t)s->size);
    size_t total = 0;
    for (int d = 0; d < s->size; d++) {
        j->counts[d] = comm_mpi_count(counts[d]);
        if (displs) j->displs[d] = comm_mpi_count(total);
        total += counts[d];
    }
    return total;
}

comm_handle comm_stream_all_reduce(comm_stream *s, float *buf, size_t count, const char *label) {
    job *j = next_job(s, JOB_ALL_REDUCE, label);
    j->buf = buf;
    j->count = count;
    return queue(s, j);
}

comm_handle comm_stream_reduce_scatter(comm_stream *s, const float *send, float *recv,
                                       const size_t *counts, const char *label) {
    job *j = next_job(s, JOB_REDUCE_SCATTER, label);
    size_t total = copy_counts(s, j, counts, false);
    CHECK(s->size == 1 || recv + counts[s->rank] <= send || recv >= send + total,
          "comm_stream_reduce_scatter: send and recv overlap");
    j->send = send;
    j->buf = recv;
    return queue(s, j);
}

comm_handle comm_stream_all_gather(comm_stream *s, float *buf, const size_t *counts,
                                   const char *label) {
    job *j = next_job(s, JOB_ALL_GATHER, label);
    (void)copy_counts(s, j, counts, true);
    j->buf = buf;
    return queue(s, j);
}

static void report(comm_stream *s, const job *j, double w0, double w1) {
    static const char *const ops[] = {"all_reduce", "reduce_scatter", "all_gather"};
    size_t n = j->kind == JOB_ALL_REDUCE ? j->count : 0;
    for (int d = 0; j->counts && d < s->size; d++) n += (size_t)j->counts[d];
    comm_stream_event e = {ops[j->kind],
                           comm_name(s->g),
                           comm_global_rank(s->g, 0),
                           j->label,
                           n * sizeof(float),
                           j->t_posted,
                           j->t_start,
                           j->t_end,
                           w0,
                           w1};
    g_hook(&e, g_hook_ctx);
}

void comm_stream_wait(comm_stream *s, comm_handle h) {
    if (h < 0) return;
    if (h >= s->queued) die("comm_stream_wait: handle %lld was never queued", (long long)h);
    if (h < s->waited) return; /* already waited for: its slot may be reused */
    const double w0 = time_now(), limit = comm_timeout();
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* pthread_cond_timedwait's clock */
    until.tv_sec += (time_t)limit + 1;
    atomic_fetch_add(&s->waiting, 1);
    pthread_mutex_lock(&s->mu);
    while (h >= s->done) {
        if (limit <= 0) {
            pthread_cond_wait(&s->finished, &s->mu);
        } else if (pthread_cond_timedwait(&s->finished, &s->mu, &until) == ETIMEDOUT &&
                   h >= s->done) {
            static const char *const ops[] = {"all_reduce", "reduce_scatter", "all_gather"};
            die("timed out after %.0f s waiting for the communication stream's %s (group %s): "
                "a rank is stuck or dead (--distributed-timeout-minutes)",
                limit, ops[slot(s, s->done)->kind], comm_name(s->g));
        }
    }
    pthread_mutex_unlock(&s->mu);
    atomic_fetch_sub(&s->waiting, 1);
    const double w1 = time_now();
    /* Report every job up to h once, in queue order (waits may come in any order). */
    for (; s->waited <= h; s->waited++) {
        job *j = slot(s, s->waited);
        if (g_hook) report(s, j, s->waited == h ? w0 : j->t_end, s->waited == h ? w1 : j->t_end);
    }
}

void comm_stream_wait_all(comm_stream *s) {
    if (s && s->queued > 0) comm_stream_wait(s, s->queued - 1);
}
