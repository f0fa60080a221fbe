/* comm_watchdog.c — waiting with a deadline, and the test-only fault hook (see comm.h,
 * "Timeouts" and "Test-only fault hook"). comm.c brackets every blocking MPI call with
 * comm_wait_begin/comm_wait_end and calls comm_fault_point first thing in every operation.
 *
 * Every blocking MPI call that waits for other ranks is bracketed by comm_wait_begin(site) and
 * comm_wait_end(): two stores, so the fast path is MPI's own blocking call. With a timeout set
 * (comm_set_timeout), a watchdog thread wakes a few times a second; when the wait in
 * progress began more than g_timeout ago, it writes one line naming this rank, the
 * operation, the group and the peer, and ends the process — mpirun then ends the job:
 *
 *   main thread:  comm_wait_begin(site) ── MPI_Recv / MPI_Wait ... ── comm_wait_end()
 *   watchdog:     every 0.25 s: since = g_wait.since; if since && now - since > timeout:
 *                 "trident[rank 3]: timed out after 600 s in recv from rank 2 (group pp, ...)"
 *
 * The watchdog never calls MPI; it leaves with _exit(1). (The one other thread that may call
 * MPI is dist.c's progress thread, which never touches our requests.)
 *
 * Not here: the MPI calls themselves (comm.c, comm_ring.c); NCCL waits (not watched).
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/runtime/comm_internal.h"
#include "src/runtime/dist.h"
#include "src/runtime/hosts.h"

static double g_timeout = 0.0; /* seconds; 0 = wait forever */

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

void comm_wait_begin(const comm_wait_site *w) {
    if (g_timeout <= 0) return;
    atomic_store_explicit(&g_wait.g, w->g, memory_order_relaxed);
    atomic_store_explicit(&g_wait.op, w->op, memory_order_relaxed);
    atomic_store_explicit(&g_wait.dir, w->dir, memory_order_relaxed);
    atomic_store_explicit(&g_wait.peer, w->peer, memory_order_relaxed);
    atomic_store_explicit(&g_wait.tag, w->tag, memory_order_relaxed);
    atomic_store_explicit(&g_wait.since_ns, now_ns(), memory_order_release);
}

void comm_wait_end(void) {
    if (g_timeout <= 0) return;
    atomic_store_explicit(&g_wait.since_ns, 0, memory_order_release);
}

/* One line to stderr in one write(), so that lines of ranks failing together do not mix. */
static void say(const char *line) {
    ssize_t n = write(STDERR_FILENO, line, strlen(line));
    (void)n; /* if stderr is gone, there is no one left to tell */
}

/* " on HOST" for a rank when the job spans hosts (hosts.h), else "". */
static const char *on_host(int rank, char *buf, size_t cap) {
    buf[0] = 0;
    if (hosts_count() > 1) snprintf(buf, cap, " on %s", hosts_name(hosts_of(rank)));
    return buf;
}

static void timed_out(const comm_wait_site *w) {
    const comm_group *g = w->g;
    char who[200], here[48], there[48];
    if (w->peer >= 0) {
        snprintf(who, sizeof who, " %s rank %d%s (group %s, tag %d)", w->dir, g->members[w->peer],
                 on_host(g->members[w->peer], there, sizeof there), g->name, w->tag);
    } else {
        /* A collective waits for every member; name them (the first 16). */
        int n = snprintf(who, sizeof who, " (group %s, ranks ", g->name);
        for (int i = 0; i < g->size && i < 16 && n < (int)sizeof who; i++)
            n += snprintf(who + n, sizeof who - (size_t)n, "%s%d", i ? "," : "", g->members[i]);
        if (n < (int)sizeof who)
            snprintf(who + n, sizeof who - (size_t)n, "%s)", g->size > 16 ? ",..." : "");
    }
    char line[480];
    snprintf(line, sizeof line,
             "trident[rank %d%s]: timed out after %g s in %s%s: a rank is stuck or dead "
             "(--distributed-timeout-minutes)\n",
             dist_rank(), on_host(dist_rank(), here, sizeof here), g_timeout, w->op, who);
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
        comm_wait_site w = {
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
void comm_wait_request(MPI_Request *req, const comm_wait_site *w) {
    comm_wait_begin(w);
    MPI_Wait(req, MPI_STATUS_IGNORE);
    comm_wait_end();
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
void comm_fault_point(const char *op) {
    if (g_fault.mode == 0) return;
    if (g_fault.mode < 0) {
        fault_read();
        if (g_fault.mode == 0) return;
    }
    if (dist_rank() != g_fault.rank || ++g_fault.calls != g_fault.at) return;
    char line[200], here[48];
    snprintf(line, sizeof line,
             "trident[rank %d%s]: TRIDENT_TEST_FAULT: %s in %s (operation %ld)\n", g_fault.rank,
             on_host(g_fault.rank, here, sizeof here),
             g_fault.mode == 1 ? "killing this rank" : "this rank hangs", op, g_fault.at);
    say(line);
    if (g_fault.mode == 1) raise(SIGKILL);
    for (;;) pause(); /* until the job is torn down */
}
