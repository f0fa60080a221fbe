/* comm_bench.c — what the timeout costs: a loop of all-reduces, blocking vs timed.
 *
 *   mpirun -np 2 bazel-bin/tests/robustness/comm_bench [ITERS [ROUNDS]]
 *
 * For a few message sizes, rank 0 prints microseconds per all-reduce, and per send/recv
 * round trip between ranks 0 and 1, with no timeout (the blocking MPI calls) and with a
 * timeout (polled), and their ratio. The
 * two modes alternate in ROUNDS rounds so that a noisy neighbour hurts both alike; the best
 * round of each counts. Not a test: a measurement for the record. */
#include <stdio.h>
#include <stdlib.h>

#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"

/* Microseconds per all-reduce (pingpong 0) or per send+recv round trip between ranks 0 and
 * 1 (pingpong 1). */
static double per_call_us(comm_group *w, float *buf, size_t n, int iters, int pingpong) {
    comm_barrier(w);
    double t0 = time_now();
    const int r = comm_rank(w);
    for (int i = 0; i < iters; i++) {
        if (!pingpong) {
            comm_all_reduce(w, buf, n, COMM_FLOAT32, COMM_SUM);
        } else if (r == 0) {
            comm_send(w, buf, n, COMM_FLOAT32, 1, 1);
            comm_recv(w, buf, n, COMM_FLOAT32, 1, 2);
        } else if (r == 1) {
            comm_recv(w, buf, n, COMM_FLOAT32, 0, 1);
            comm_send(w, buf, n, COMM_FLOAT32, 0, 2);
        }
    }
    comm_wait_sends(w);
    double t = time_now() - t0;
    comm_broadcast(w, &t, sizeof t, COMM_BYTE, 0); /* rank 0's clock decides */
    return t / iters * 1e6;
}

int main(int argc, char **argv) {
    dist_init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 20000, rounds = argc > 2 ? atoi(argv[2]) : 5;
    comm_group *w = comm_group_world(COMM_MPI);
    const size_t sizes[] = {1, 1024, 65536, 1u << 20};
    if (dist_rank() == 0)
        printf("%-10s %9s %12s %12s %7s\n", "op", "floats", "blocking us", "timed us", "ratio");
    for (int k = 0; k < 8; k++) {
        size_t n = sizes[k % 4];
        int pingpong = k >= 4;
        int it = (int)(iters / (1 + n / 1024));
        if (it < 20) it = 20;
        float *buf = callocCheck(n, sizeof *buf);
        double best[2] = {1e30, 1e30};
        for (int round = 0; round < rounds; round++) {
            for (int timed = 0; timed < 2; timed++) {
                comm_set_timeout(timed ? 600.0 : 0.0);
                double us = per_call_us(w, buf, n, it, pingpong);
                if (us < best[timed]) best[timed] = us;
            }
        }
        comm_set_timeout(0);
        if (dist_rank() == 0)
            printf("%-10s %9zu %12.2f %12.2f %7.3f\n", pingpong ? "send+recv" : "all_reduce", n,
                   best[0], best[1], best[1] / best[0]);
        free(buf);
    }
    comm_group_destroy(w);
    dist_finalize();
    return 0;
}
