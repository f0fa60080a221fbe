/* stuck_helper.c — a tiny MPI program for timeout_test: one rank (global rank 1) stops
 * taking part, the others wait in one comm operation with a timeout, and must end the job
 * with one line that names the waiting rank, the operation, the group and the peer.
 *
 *   stuck_helper MODE SECONDS
 *     recv        rank 0 waits in comm_recv from rank 1 (tag 17) on the world group
 *     all_reduce  every other rank waits in comm_all_reduce on the world group
 *     barrier     every other rank waits in comm_barrier on the world group
 *     sendrecv    rank 0 exchanges with rank 1 (tag 9), which never answers
 *     wait_sends  rank 0 sends 4 MB to rank 1 (tag 5), which never receives, then waits
 *     subgroup    group "pp" = global ranks {1, 2}: rank 2 waits in recv from group rank 0
 *                 (global rank 1), tag 3
 *     ok          every operation once, all ranks healthy: prints "ok rank R" and exits 0
 *
 * The stuck rank sleeps (it does not exit: an exit would be noticed by mpirun instead). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"

int main(int argc, char **argv) {
    dist_init(&argc, &argv);
    CHECK(argc == 3, "usage: stuck_helper MODE SECONDS");
    const char *mode = argv[1];
    comm_set_timeout(atof(argv[2]));
    comm_group *world = comm_group_world(COMM_MPI);
    const int r = dist_rank();
    CHECK(dist_world_size() >= 3, "run with mpirun -np 3 or more");
    const int pp_members[2] = {1, 2};
    comm_group *pp = comm_group_split("pp", 0, r == 1 || r == 2 ? pp_members : NULL,
                                      r == 1 || r == 2 ? 2 : 0, COMM_MPI);
    float x[4] = {1, 2, 3, 4}, y[4];
    if (strcmp(mode, "ok") == 0) {
        comm_all_reduce(world, x, 4, COMM_FLOAT32, COMM_SUM);
        comm_barrier(world);
        if (r == 0) comm_send(world, x, 4, COMM_FLOAT32, 1, 1);
        if (r == 1) comm_recv(world, x, 4, COMM_FLOAT32, 0, 1);
        comm_wait_sends(world);
        printf("ok rank %d\n", r);
        fflush(stdout);
    } else {
        /* Who waits: rank 0 for one peer, every rank but 1 for a collective, rank 2 in "pp". */
        const bool collective = strcmp(mode, "all_reduce") == 0 || strcmp(mode, "barrier") == 0;
        const bool waits = collective ? r != 1 : r == (strcmp(mode, "subgroup") == 0 ? 2 : 0);
        if (!waits) {
            sleep(120); /* the stuck rank, and bystanders: alive, doing nothing */
        } else if (strcmp(mode, "recv") == 0) {
            comm_recv(world, x, 4, COMM_FLOAT32, 1, 17);
        } else if (strcmp(mode, "all_reduce") == 0) {
            comm_all_reduce(world, x, 4, COMM_FLOAT32, COMM_SUM);
        } else if (strcmp(mode, "barrier") == 0) {
            comm_barrier(world);
        } else if (strcmp(mode, "sendrecv") == 0) {
            comm_sendrecv(world, x, 4, 1, y, 4, 1, COMM_FLOAT32, 9);
        } else if (strcmp(mode, "wait_sends") == 0) {
            size_t n = 1u << 20;
            float *big = callocCheck(n, sizeof *big);
            comm_send(world, big, n, COMM_FLOAT32, 1, 5);
            free(big);
            comm_wait_sends(world);
        } else if (strcmp(mode, "subgroup") == 0) {
            comm_recv(pp, x, 4, COMM_FLOAT32, 0, 3);
        } else {
            die("stuck_helper: unknown mode '%s'", mode);
        }
        if (waits) printf("rank %d was not stopped\n", r); /* a wait returned: a bug */
        fflush(stdout);
        sleep(120);
    }
    comm_group_destroy(pp);
    comm_group_destroy(world);
    dist_finalize();
    return 0;
}
