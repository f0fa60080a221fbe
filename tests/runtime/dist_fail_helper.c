/* dist_fail_helper.c — a tiny MPI program for dist_test: ways for a job to fail.
 *   die       rank 1 calls die() while every other rank waits in a barrier
 *   check     rank 1 fails a CHECK while the others wait in an all-reduce
 *   fail_all  every rank finds the same user error and calls dist_fail_all()
 *   ok        prints the rank and world size and exits 0 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "src/core/check.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"

int main(int argc, char **argv) {
    dist_init(&argc, &argv);
    const char *mode = argc > 1 ? argv[1] : "ok";
    comm_group *world = comm_group_world(COMM_MPI);
    struct timespec pause = {0, 300000000};
    if (strcmp(mode, "die") == 0) {
        if (dist_rank() == 1) {
            nanosleep(&pause, NULL);
            die("rank 1 gives up: --answer 41 must be 42");
        }
        comm_barrier(world);
    } else if (strcmp(mode, "check") == 0) {
        if (dist_rank() == 1) {
            nanosleep(&pause, NULL);
            CHECK(1 + 1 == 3, "arithmetic is broken");
        }
        float x = 1;
        comm_all_reduce(world, &x, 1, COMM_FLOAT32, COMM_SUM);
    } else if (strcmp(mode, "fail_all") == 0) {
        dist_fail_all("helper: --tensor-model-parallel-size 3 does not divide the world size %d",
                      dist_world_size());
    }
    printf("ok rank %d of %d local %d mpi %d\n", dist_rank(), dist_world_size(), dist_local_rank(),
           (int)dist_is_mpi());
    comm_group_destroy(world);
    dist_finalize();
    return 0;
}
