/* bench_hosts.c — the comm suite across hosts: how fast bytes move inside a host and between
 * hosts (trident bench --suite comm --launch "MPIRUN OPTIONS", e.g. the `launch:` line of
 * tools/cluster.sh without its "mpirun").
 *
 * The worker (`trident bench --worker hosts`, 4 ranks or more, at least two on rank 0's host
 * and one on another) times ping-pongs from rank 0: to the next rank of its own host (shared
 * memory) and to the first rank of another host (the network), best of a few round trips for
 * each message size; bandwidth = 2 · bytes / round trip. The parent prints both and their
 * ratio: with --link-rate on the cluster, the network's figure is the rate the link allows.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/bench/bench.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/runtime/dist.h"
#include "src/runtime/hosts.h"

static const size_t k_sizes[] = {64 << 10, 1 << 20, 8 << 20}; /* message bytes */
enum { NSIZES = 3, REPS = 5 };

/* Best round trip of `bytes` between rank 0 and `peer` (both call it; others do not). */
static double round_trip(int peer, char *buf, size_t bytes) {
    const int me = dist_rank();
    double best = 1e30;
    for (int i = 0; i < REPS; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = time_now();
        if (me == 0) {
            MPI_Send(buf, (int)bytes, MPI_CHAR, peer, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)bytes, MPI_CHAR, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (me == peer) {
            MPI_Recv(buf, (int)bytes, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)bytes, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
        }
        const double t = time_now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

int bench_worker_hosts(const char *run_dir, bool quick) {
    int argc = 0;
    char **argv = NULL;
    dist_init(&argc, &argv);
    const int world = dist_world_size();
    int near = -1, far = -1;
    for (int r = 1; r < world; r++) {
        if (near < 0 && hosts_same(0, r)) near = r;
        if (far < 0 && !hosts_same(0, r)) far = r;
    }
    if (near < 0 || far < 0)
        dist_fail_all("bench --worker hosts: needs a second rank on rank 0's host and a rank on "
                      "another host (got %d ranks on %d hosts)",
                      world, hosts_count());
    char *buf = callocCheck(k_sizes[NSIZES - 1], 1);
    char text[2048] = "";
    size_t at = 0;
    for (int s = 0; s < (quick ? 2 : NSIZES); s++) {
        const double tn = round_trip(near, buf, k_sizes[s]), tf = round_trip(far, buf, k_sizes[s]);
        at += (size_t)snprintf(text + at, sizeof text - at, "within_s_%d %.9g\nacross_s_%d %.9g\n",
                               s, tn, s, tf);
    }
    if (dist_rank() == 0) {
        char path[4200], hosts[512];
        snprintf(path, sizeof path, "%s/worker_hosts.txt", run_dir);
        atomic_file af;
        FILE *f = atomic_file_open(&af, path);
        fprintf(f, "%shosts %d\nnear %d\nfar %d\n# %s\n", text, hosts_count(), near, far,
                hosts_describe(hosts, sizeof hosts));
        atomic_file_commit(&af);
    }
    free(buf);
    dist_finalize();
    return 0;
}

void bench_hosts(bench_ctx *ctx) {
    char path[4200], log[4200];
    bench_path(ctx, path, sizeof path, "worker_hosts.txt");
    bench_path(ctx, log, sizeof log, "worker_hosts.log");
    remove(path);
    bench_launch(ctx, 4, log, "bench --worker hosts --run-dir %s%s", ctx->run_dir,
                 ctx->quick ? " --quick" : "");
    for (int s = 0; s < (ctx->quick ? 2 : NSIZES); s++) {
        char kn[32], kf[32], metric[160];
        snprintf(kn, sizeof kn, "within_s_%d", s);
        snprintf(kf, sizeof kf, "across_s_%d", s);
        const double tn = bench_kv_get(path, kn), tf = bench_kv_get(path, kf);
        const double bytes = (double)k_sizes[s];
        snprintf(metric, sizeof metric,
                 "%.0f KiB messages: bandwidth within a host ÷ between hosts", bytes / 1024);
        bench_row_info(ctx->report, "comm", metric, tf / tn, "%.1f");
        bench_note(ctx->report, "comm",
                   "%.0f KiB ping-pong from rank 0: to rank %.0f on its host %.3f ms (%.2f GB/s), "
                   "to rank %.0f on another host %.3f ms (%.3f GB/s)",
                   bytes / 1024, bench_kv_get(path, "near"), 1e3 * tn, 2 * bytes / tn / 1e9,
                   bench_kv_get(path, "far"), 1e3 * tf, 2 * bytes / tf / 1e9);
    }
}
