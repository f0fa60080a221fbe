/* comm_stream.c — see comm_stream.h: the queue, the thread and the waits (the rings that move
 * a job's bytes are comm_stream_ring.c). The queue is a ring of `max_jobs` slots (the caller's
 * count, at creation); job h lives in slot h % max_jobs from its call until the wait after it
 * is done:
 *
 *   handles  0 .. done-1        complete (and every one before them)
 *            done .. posted-1   started by the thread, in flight (some may be complete)
 *            posted .. queued-1 queued, not yet started
 *
 * The thread keeps up to COMM_STREAM_IN_FLIGHT jobs moving at once, each on a ring of its own
 * whose messages carry the job's handle mod COMM_STREAM_TAGS as their tag (the thread starts
 * no job COMM_STREAM_TAGS or more after the oldest unfinished one, so the jobs in flight have
 * distinct tags however long the queue), and one pass tests them all. `done` only
 * advances over a complete prefix, so a wait for h is a wait for everything queued before h
 * too (a CUDA stream's order).
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
#include "src/runtime/comm_stream_ring.h"

/* How the thread drives its rings (comm_stream.h says why not a blocking call, nor MPI's
 * nonblocking collectives). Each MPI_Testall runs Open MPI's progress engine once: an envelope
 * that has arrived is matched and its block copied (single copy), a copy the peer finished is
 * acknowledged. A step needs the peer's thread to test as well, so right after progress (a job
 * started, a STEP completed) the thread tests every 20 us, and doubles its nap every
 * COMM_STREAM_BACKOFF passes without progress up to 500 us, so a ring waiting for a slower
 * peer (its backward not done yet) costs little CPU. The nap is what lets the compute run on
 * a shared core; waking a napping thread costs ~20-50 us of CPU on these VMs (dist.c measured
 * the same for the p2p progress thread). Steps count as progress, not only whole jobs: when
 * only a job's end reset the nap, the thread of the rank that was ahead had backed off to
 * 500 us by the time its peer caught up, and each later step waited for one of its naps (a
 * 512 KiB step took 1.2-1.6 ms beside a compute loop, against 0.06-0.2 ms alone; in training
 * runs of the bench's model the exposed gradient time went from ~10 ms to ~3 ms per step).
 * How many in flight (the bench's model, --overlap-grad-reduce, medians of 12-18 steps, run in
 * turn on a quiet machine, two sessions): 4 left 1.9 and 1.3 ms exposed per step, 16 left 0.3
 * and 0.3 ms (blocking: 14 and 31 ms): at the end of the backward the last buckets come nearly
 * at once, and one pass moves all of them; with ZeRO and both flags, 4: 1.0 ms reduce-scatter
 * + 0.0 ms gather exposed, 16: 0.8 + 0.5 ms (blocking 12 + 8 ms). (With MPI's nonblocking collectives 16 had crawled; a ring step costs one test
 * whatever else is in flight.) Each ring in flight keeps its scratch blocks (comm_stream.h).
 * While the caller waits (comm_stream_wait) its core has nothing else to do, so the thread
 * stops napping and tests back to back, like a blocking collective. */
enum {
    COMM_STREAM_NAP_NS = 20000,
    COMM_STREAM_NAP_MAX_NS = 500000,
    COMM_STREAM_BACKOFF = 64,
    COMM_STREAM_IN_FLIGHT = 16,
};

typedef stream_job job;

struct comm_stream {
    comm_group *g;
    MPI_Comm comm; /* duplicate of g->mpi: the stream's collectives only */
    int size, rank;
    job *jobs; /* (max_jobs) slots */
    int64_t max_jobs;
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

static job *slot(comm_stream *s, int64_t h) { return &s->jobs[h % s->max_jobs]; }

/* The jobs in flight: their rings and handles (thread only). */
typedef struct {
    stream_ring ring[COMM_STREAM_IN_FLIGHT]; /* ring[0 .. n) in flight; the rest keep scratch */
    int64_t id[COMM_STREAM_IN_FLIGHT];
    int n;
    int64_t posted;
} in_flight;

/* Starts job `posted` on a free ring. */
static void start_next(comm_stream *s, in_flight *f) {
    job *j = slot(s, f->posted);
    j->t_start = time_now();
    stream_ring_start(&f->ring[f->n], j, f->posted, s->comm, s->size, s->rank);
    f->id[f->n++] = f->posted++;
}

/* One pass over the jobs in flight: each ring moves as far as its messages allow (*moved is
 * set when any step completed). Completed jobs are marked done under the lock and `done`
 * advances over the complete prefix. */
static void advance_all(comm_stream *s, in_flight *f, bool *moved) {
    int64_t complete[COMM_STREAM_IN_FLIGHT];
    int nc = 0;
    for (int i = 0; i < f->n;) {
        if (!stream_ring_advance(&f->ring[i], moved)) {
            i++;
            continue;
        }
        slot(s, f->id[i])->t_end = time_now();
        complete[nc++] = f->id[i];
        /* Keep the ring's scratch: swap the finished ring with the last one in flight. */
        stream_ring t = f->ring[i];
        f->ring[i] = f->ring[f->n - 1], f->ring[f->n - 1] = t;
        f->id[i] = f->id[f->n - 1], f->n--;
    }
    if (nc == 0) return;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < nc; i++) slot(s, complete[i])->done = true;
    while (s->done < f->posted && slot(s, s->done)->done) s->done++;
    pthread_cond_broadcast(&s->finished);
    pthread_mutex_unlock(&s->mu);
}

static void *stream_main(void *arg) {
    comm_stream *s = arg;
    (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); /* a 20 us nap is ~20 us */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the main thread's business */
    in_flight f;
    memset(&f, 0, sizeof f);
    long nap = COMM_STREAM_NAP_NS, quiet = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (f.posted == s->queued && f.n == 0 && !s->stop) pthread_cond_wait(&s->work, &s->mu);
        const int64_t queued = s->queued;
        const bool stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop && f.posted == queued && f.n == 0) break; /* destroy drains first */
        bool news = false;
        for (; f.posted < queued && f.n < COMM_STREAM_IN_FLIGHT &&
               f.posted - s->done < COMM_STREAM_TAGS; /* done: this thread's own writes */
             news = true)
            start_next(s, &f);
        advance_all(s, &f, &news); /* a step done is news too: the peer is active */
        if (news) nap = COMM_STREAM_NAP_NS, quiet = 0;
        else if (++quiet % COMM_STREAM_BACKOFF == 0 && nap < COMM_STREAM_NAP_MAX_NS)
            nap = 2 * nap < COMM_STREAM_NAP_MAX_NS ? 2 * nap : COMM_STREAM_NAP_MAX_NS;
        if (f.n > 0 && atomic_load_explicit(&s->waiting, memory_order_relaxed) == 0) {
            struct timespec ts = {0, nap};
            nanosleep(&ts, NULL);
        }
    }
    for (int i = 0; i < COMM_STREAM_IN_FLIGHT; i++) stream_ring_free(&f.ring[i]);
    return NULL;
}

comm_stream *comm_stream_create(comm_group *g, size_t max_jobs) {
    CHECK(g != NULL, "comm_stream_create needs a group");
    CHECK(max_jobs >= 1 && max_jobs <= (size_t)INT64_MAX / 2, "comm_stream_create: 1 job at least");
    CHECK(comm_backend_of(g) == COMM_MPI, "comm_stream runs on MPI groups (host memory) only");
    comm_stream *s = callocCheck(1, sizeof *s);
    s->jobs = callocCheck(max_jobs, sizeof *s->jobs);
    s->max_jobs = (int64_t)max_jobs;
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
    for (int64_t k = 0; k < s->max_jobs; k++) free_slot(&s->jobs[k]); /* freed lazily */
    free(s->jobs);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->finished);
    free(s);
}

/* Takes the next slot (the caller fills it, then queue() hands it to the thread). */
static job *next_job(comm_stream *s, stream_job_kind kind, const char *label) {
    CHECK(s->queued - s->waited < s->max_jobs,
          "more collectives queued and not waited for than the max_jobs the stream was made for");
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
            memmove(j->buf, j->send, j->counts[0] * sizeof(float));
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

/* The job's blocks (comm_stream_ring.h): counts[] copied, displs[] their running sums;
 * returns the total. */
static size_t set_blocks(comm_stream *s, job *j, const size_t *counts) {
    j->counts = mallocCheck(sizeof(size_t) * (size_t)s->size);
    j->displs = mallocCheck(sizeof(size_t) * (size_t)s->size);
    size_t total = 0;
    for (int d = 0; d < s->size; d++) {
        j->counts[d] = counts[d];
        j->displs[d] = total;
        total += counts[d];
    }
    return total;
}

comm_handle comm_stream_all_reduce(comm_stream *s, float *buf, size_t count, const char *label) {
    job *j = next_job(s, JOB_ALL_REDUCE, label);
    /* Even blocks for the ring: the first count % size ranks hold one element more. */
    size_t *even = mallocCheck(sizeof(size_t) * (size_t)s->size);
    for (int d = 0; d < s->size; d++)
        even[d] = count / (size_t)s->size + ((size_t)d < count % (size_t)s->size);
    (void)set_blocks(s, j, even);
    free(even);
    j->buf = buf;
    return queue(s, j);
}

comm_handle comm_stream_reduce_scatter(comm_stream *s, const float *send, float *recv,
                                       const size_t *counts, const char *label) {
    job *j = next_job(s, JOB_REDUCE_SCATTER, label);
    size_t total = set_blocks(s, j, counts);
    CHECK(s->size == 1 || recv + counts[s->rank] <= send || recv >= send + total,
          "comm_stream_reduce_scatter: send and recv overlap");
    j->send = send;
    j->buf = recv;
    return queue(s, j);
}

comm_handle comm_stream_all_gather(comm_stream *s, float *buf, const size_t *counts,
                                   const char *label) {
    job *j = next_job(s, JOB_ALL_GATHER, label);
    (void)set_blocks(s, j, counts);
    j->buf = buf;
    return queue(s, j);
}

static void report(comm_stream *s, const job *j, double w0, double w1) {
    static const char *const ops[] = {"all_reduce", "reduce_scatter", "all_gather"};
    size_t n = 0; /* comm.h's count: the buffer, or the whole send (reduce-scatter) */
    for (int d = 0; d < s->size; d++) n += j->counts[d];
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
