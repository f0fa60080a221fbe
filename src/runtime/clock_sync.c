/* clock_sync.c — clock offsets to rank 0 (see clock_sync.h).
 *
 * Steps, all on a private duplicate of MPI_COMM_WORLD (no tag can meet the trainer's):
 *   1. who shares rank 0's host: MPI_Comm_split_type(SHARED), then the lowest world rank of
 *      each node (an all-reduce MIN inside the node) — 0 means rank 0's node;
 *   2. rank 0 learns which ranks are remote (a gather of the flags);
 *   3. rank 0 serves the remote ranks one after the other, `exchanges` ping-pongs each;
 *      each remote rank keeps the exchange of least round trip;
 *   4. the ranks of each host take the best of their measurements (least round trip): one
 *      clock, one offset (host_best).
 * Rank 0 serves serially, so a remote rank's first ping may wait for the previous rank's
 * turn; that exchange simply has a long round trip and is not the one kept.
 */
#include "src/runtime/clock_sync.h"

#include <math.h>
#include <mpi.h>
#include <stdlib.h>

#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/runtime/dist.h"

enum { TAG_PING = 1, TAG_PONG = 2 };

/* The pretend skew per rank of TRIDENT_TEST_CLOCK_SKEW, 0 when unset. */
static double test_skew(void) {
    const char *s = getenv("TRIDENT_TEST_CLOCK_SKEW");
    if (!s || !*s) return 0.0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (*end != 0 || !isfinite(v))
        die("TRIDENT_TEST_CLOCK_SKEW='%s' is not a number of seconds (a test-only switch)", s);
    return v;
}

/* The ranks of one host read one clock, so they keep one offset: the measurement of least
 * round trip among them (the tightest bound), given to every rank of the host. Without it
 * two ranks of one host would draw the same instant apart by their measurements' errors. */
static void host_best(clock_sync_result *res, MPI_Comm node) {
    struct {
        double rtt;
        int who;
    } mine = {res->same_host ? 0.0 : res->rtt, 0}, best;
    MPI_Comm_rank(node, &mine.who);
    MPI_Allreduce(&mine, &best, 1, MPI_DOUBLE_INT, MPI_MINLOC, node);
    double v[4] = {res->offset, res->uncertainty, res->measured_offset, res->rtt};
    MPI_Bcast(v, 4, MPI_DOUBLE, best.who, node);
    res->offset = v[0], res->uncertainty = v[1], res->measured_offset = v[2], res->rtt = v[3];
}

clock_sync_result clock_sync(int exchanges) {
    CHECK(exchanges >= 1, "clock_sync needs at least one exchange");
    clock_sync_result res = {0.0, 0.0, true, 0.0, 0.0};
    if (!dist_is_mpi() || dist_world_size() == 1) return res;
    const int rank = dist_rank(), world = dist_world_size();
    const double skew = test_skew() * rank; /* this rank's pretend clock: time_now() + skew */
    const bool pretend = test_skew() != 0.0;

    MPI_Comm comm, node;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int node_lowest = rank;
    MPI_Allreduce(MPI_IN_PLACE, &node_lowest, 1, MPI_INT, MPI_MIN, node);
    int remote = node_lowest != 0 || (pretend && rank != 0);

    int *flags = rank == 0 ? mallocCheck(sizeof(int) * (size_t)world) : NULL;
    MPI_Gather(&remote, 1, MPI_INT, flags, 1, MPI_INT, 0, comm);
    if (rank == 0) { /* the server: answer each remote rank's pings with rank 0's clock */
        for (int r = 1; r < world; r++) {
            if (!flags[r]) continue;
            for (int i = 0; i < exchanges; i++) {
                char ping;
                MPI_Recv(&ping, 1, MPI_CHAR, r, TAG_PING, comm, MPI_STATUS_IGNORE);
                double ts = time_now();
                MPI_Send(&ts, 1, MPI_DOUBLE, r, TAG_PONG, comm);
            }
        }
        free(flags);
    } else if (remote) { /* a client: Cristian's method on its own (possibly pretend) clock */
        res.same_host = false;
        res.rtt = INFINITY;
        for (int i = 0; i < exchanges; i++) {
            char ping = 0;
            double ts;
            double t0 = time_now() + skew;
            MPI_Send(&ping, 1, MPI_CHAR, 0, TAG_PING, comm);
            MPI_Recv(&ts, 1, MPI_DOUBLE, 0, TAG_PONG, comm, MPI_STATUS_IGNORE);
            double t1 = time_now() + skew;
            if (t1 - t0 < res.rtt) {
                res.rtt = t1 - t0;
                res.measured_offset = ts + 0.5 * (t1 - t0) - t1;
            }
        }
        res.uncertainty = 0.5 * res.rtt;
        res.offset = res.measured_offset + skew; /* for the real time_now() */
    }
    if (!pretend) host_best(&res, node);
    MPI_Comm_free(&node);
    MPI_Comm_free(&comm);
    return res;
}
