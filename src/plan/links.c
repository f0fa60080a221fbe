/* links.c — see links.h: the MPI worker, its launch, the fit. */
#include "src/plan/links.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"

enum { ROUNDS = 7 };

/* One call of kind k moving `bytes` (a rank's whole buffer) on the world of g ranks; p2p
 * between ranks 0 and 1 (measured on 2 ranks only). */
static void one_call(comm_group *w, plan_link_kind k, float *a, float *b, size_t bytes) {
    const int g = comm_size(w), me = comm_rank(w), peer = 1 - me;
    const size_t n = bytes / 4, part = n / (size_t)g ? n / (size_t)g : 1;
    switch (k) {
    case PLAN_P2P: /* half a ping-pong counts: the fit takes one message */
        if (me == 0)
            comm_send(w, a, n, COMM_FLOAT32, peer, 1), comm_recv(w, b, n, COMM_FLOAT32, peer, 2);
        else comm_recv(w, b, n, COMM_FLOAT32, peer, 1), comm_send(w, a, n, COMM_FLOAT32, peer, 2);
        comm_wait_sends(w);
        break;
    case PLAN_ALL_REDUCE: comm_all_reduce(w, a, n, COMM_FLOAT32, COMM_SUM); break;
    case PLAN_REDUCE_SCATTER: comm_reduce_scatter(w, a, b, part, COMM_FLOAT32, COMM_SUM); break;
    case PLAN_ALL_GATHER: comm_all_gather(w, a, b, part, COMM_FLOAT32); break;
    default: {
        size_t counts[PLAN_LINK_MAX_GROUP], displs[PLAN_LINK_MAX_GROUP];
        for (int r = 0; r < g; r++) counts[r] = part, displs[r] = (size_t)r * part;
        comm_all_to_all_v(w, a, counts, displs, b, counts, displs, COMM_FLOAT32);
    }
    }
}

/* One round of reps calls, the slowest rank's, seconds per call (a p2p: one message). */
static double time_kind(comm_group *w, plan_link_kind k, float *a, float *b, size_t bytes) {
    const int reps = bytes > 4096 ? 32 : 200;
    comm_barrier(w);
    const double t0 = time_now();
    for (int i = 0; i < reps; i++) one_call(w, k, a, b, bytes);
    float dt = (float)((time_now() - t0) / reps);
    comm_all_reduce(w, &dt, 1, COMM_FLOAT32, COMM_MAX);
    return k == PLAN_P2P ? dt / 2 : dt;
}

/* A layer's worth of work between calls, the same on both ranks (PLAN_LINK_WORK multiply-adds):
 * in training a collective follows compute, and the ranks reach it as unevenly as the machine
 * runs them; a tight loop of calls alone never sees that. */
static float work(const float *a) {
    float s = 0;
    for (int i = 0; i < PLAN_LINK_WORK; i++) s = s * 0.999f + a[i & 1023];
    return s;
}

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* How unevenly the two ranks finish the same work, as the replay view times it (each rank's
 * thread CPU time): the median over reps of (the slower rank's CPU time − this rank's), the
 * larger rank's median. What a collective after compute waits beyond its transfer. The median,
 * not the mean: one rep the machine's other work descheduled adds milliseconds to a mean of
 * microseconds, and every collective of a prediction would carry it. */
static double arrival_gap(comm_group *w, const float *a) {
    enum { REPS = 40 }; /* a round's: the worker keeps the quietest round's median */
    volatile float sink = 0;
    float gap[REPS];
    for (int i = 0; i < REPS; i++) {
        const double c0 = thread_cpu_now();
        sink += work(a);
        float mine = (float)(thread_cpu_now() - c0), most = mine;
        comm_all_reduce(w, &most, 1, COMM_FLOAT32, COMM_MAX);
        gap[i] = most - mine;
    }
    qsort(gap, REPS, sizeof gap[0], cmp_float);
    float median = gap[REPS / 2];
    comm_all_reduce(w, &median, 1, COMM_FLOAT32, COMM_MAX);
    return median;
}

int plan_links_worker(const char *out) {
    int argc = 0;
    char **argv = NULL;
    dist_init(&argc, &argv);
    comm_group *w = comm_group_world(COMM_MPI);
    const int g = comm_size(w);
    if (g < 2 || g > PLAN_LINK_MAX_GROUP)
        dist_fail_all("plan links worker: needs 2 to %d ranks, got %d", PLAN_LINK_MAX_GROUP, g);
    float *a = callocCheck(PLAN_LINK_LARGE / 4, sizeof *a),
          *b = callocCheck(PLAN_LINK_LARGE / 4, sizeof *b);
    double t[PLAN_NLINKS][3], gap = INFINITY;
    for (int k = 0; k < PLAN_NLINKS; k++) t[k][0] = t[k][1] = INFINITY;
    /* the fastest of ROUNDS rounds (and the smallest arrival gap), the rounds of one kind
     * spread over the whole job: another job's load comes in stretches longer than a round */
    for (int r = 0; r < ROUNDS; r++) {
        gap = fmin(gap, arrival_gap(w, a));
        for (int k = 0; k < PLAN_NLINKS; k++) {
            if (!plan_link_timed_at((plan_link_kind)k, g)) continue;
            t[k][0] = fmin(t[k][0], time_kind(w, (plan_link_kind)k, a, b, PLAN_LINK_SMALL));
            t[k][1] = fmin(t[k][1], time_kind(w, (plan_link_kind)k, a, b, PLAN_LINK_LARGE));
        }
    }
    /* a collective waits for the last arrival; a pipeline receive's wait is the schedule's (the
     * simulator plays it), so p2p gets none */
    for (int k = 0; k < PLAN_NLINKS; k++) t[k][2] = t[k][0] + (k == PLAN_P2P ? 0 : gap);
    if (comm_rank(w) == 0) {
        atomic_file af;
        FILE *f = atomic_file_open(&af, out);
        for (int k = 0; k < PLAN_NLINKS; k++)
            if (plan_link_timed_at((plan_link_kind)k, g))
                fprintf(f, "%s %d %.9g\n%s %d %.9g\n%s 0 %.9g\n", plan_link_name(k),
                        PLAN_LINK_SMALL, t[k][0], plan_link_name(k), PLAN_LINK_LARGE, t[k][1],
                        plan_link_name(k), t[k][2]);
        atomic_file_commit(&af);
    }
    free(a);
    free(b);
    comm_group_destroy(w);
    dist_finalize();
    return 0;
}

void plan_links_fit(plan_link_kind k, int g, double t_small, double t_large, double t_after,
                    plan_link *l) {
    double s0, w0, s1, w1;
    plan_link_shape(k, g, PLAN_LINK_SMALL, &s0, &w0);
    plan_link_shape(k, g, PLAN_LINK_LARGE, &s1, &w1);
    l->beta = t_large > t_small ? (t_large - t_small) / (w1 - w0) : 0;
    l->alpha = t_small - l->beta * w0 > 0 ? (t_small - l->beta * w0) / s0 : 0;
    l->sync = t_after > t_small ? t_after - t_small : 0;
    snprintf(l->source, sizeof l->source, "measured");
}

plan_link plan_links_network(double bytes_per_s, double latency_s, const char *source) {
    plan_link l = {latency_s, 1 / bytes_per_s, 0, ""};
    snprintf(l.source, sizeof l.source, "%s", source);
    return l;
}

/* Open MPI on one box as tools/mpi_env.sh sets it; existing settings win. */
static void mpi_environment(void) {
#define MPI_ENV_VAR(name, value, keep_user) setenv(name, value, 0);
#include "tools/mpi_env.h"
#undef MPI_ENV_VAR
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
}

/* The fitted time of a large message of kind k on g ranks, its transfer alone (the sync is
 * kept apart). */
static double link_large_time(const plan_link *l, plan_link_kind k, int g) {
    plan_link transfer = *l;
    transfer.sync = 0;
    return plan_link_time(&transfer, k, g, PLAN_LINK_LARGE);
}

/* The worker on g ranks: the kinds it timed (plan_link_timed_at) fitted into link[]. */
static void measure_group(int g, plan_link *link, const char *who) {
    char self[4096], out[64], cmd[8400];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) die("%s: cannot find this program (/proc/self/exe) to run the links worker", who);
    self[n] = 0;
    snprintf(out, sizeof out, "/tmp/trident-plan-links.%d", (int)getpid());
    mpi_environment();
    snprintf(cmd, sizeof cmd,
             "mpirun -np %d --oversubscribe '%s' plan --links-worker '%s' > '%s.log' 2>&1", g, self,
             out, out);
    const int rc = system(cmd);
    FILE *f = rc == 0 ? fopen(out, "r") : NULL;
    if (!f) die("%s: the links worker failed (exit status %d): %s — see %s.log", who, rc, cmd, out);
    double t[PLAN_NLINKS][3] = {{0}};
    char name[32];
    int bytes;
    double secs;
    while (fscanf(f, "%31s %d %lf", name, &bytes, &secs) == 3)
        for (int k = 0; k < PLAN_NLINKS; k++)
            if (strcmp(name, plan_link_name(k)) == 0)
                t[k][bytes == 0 ? 2 : bytes == PLAN_LINK_LARGE] = secs;
    fclose(f);
    for (int k = 0; k < PLAN_NLINKS; k++) {
        if (!plan_link_timed_at((plan_link_kind)k, g)) continue;
        if (!(t[k][0] > 0 && t[k][1] > 0))
            die("%s: the links worker on %d ranks wrote no time for %s (%s)", who, g,
                plan_link_name(k), out);
        plan_links_fit(k, g, t[k][0], t[k][1], t[k][2], &link[k]);
    }
    remove(out);
    char log[80];
    snprintf(log, sizeof log, "%s.log", out);
    remove(log);
}

void plan_links_measure(plan_calibration *cal, int world, const char *who) {
    measure_group(2, cal->link, who);
    cal->nlink_groups = 0;
    for (int g = 4; g <= world && g <= PLAN_LINK_MAX_GROUP; g *= 2) {
        plan_link_group *lg = &cal->link_group[cal->nlink_groups++];
        lg->g = g;
        plan_link_group_untimed_from_pair(cal, lg);
        measure_group(g, lg->link, who);
    }
}

/* The faster of two fits of one kind on g ranks: the one whose large message takes less. */
static void keep_faster_link(plan_link *keep, const plan_link *other, plan_link_kind k, int g) {
    const plan_link a = *keep;
    if (link_large_time(other, k, g) < link_large_time(&a, k, g)) *keep = *other;
    keep->sync = fmin(a.sync, other->sync);
}

void plan_links_keep_faster(plan_calibration *cal, const plan_calibration *other) {
    for (int k = 0; k < PLAN_NLINKS; k++)
        keep_faster_link(&cal->link[k], &other->link[k], (plan_link_kind)k, 2);
    for (int i = 0; i < cal->nlink_groups; i++)
        for (int j = 0; j < other->nlink_groups; j++)
            if (other->link_group[j].g == cal->link_group[i].g)
                for (int k = 0; k < PLAN_NLINKS; k++)
                    if (plan_link_timed_at((plan_link_kind)k, cal->link_group[i].g))
                        keep_faster_link(&cal->link_group[i].link[k], &other->link_group[j].link[k],
                                         (plan_link_kind)k, cal->link_group[i].g);
}
