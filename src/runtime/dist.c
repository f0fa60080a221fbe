/* dist.c — MPI start-up and shutdown, or nothing at all for a plain serial run.
 * See dist.h for the contract. The only file that calls MPI_Init / MPI_Finalize. */
#include "src/runtime/dist.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TRIDENT_CUDA
#include <cuda_runtime.h>
#endif

#include "src/core/check.h"

static struct {
    bool mpi; /* we called MPI_Init and not yet MPI_Finalize */
    int rank, world, local_rank, local_size;
} g_dist = {false, 0, 1, 0, 1};

static void abort_job(int code) {
    /* Called by fatal_exit(): one failing rank takes the whole job down with it. */
    if (g_dist.mpi) MPI_Abort(MPI_COMM_WORLD, code);
}

void dist_init(int *argc, char ***argv) {
    if (g_dist.mpi) return;
    if (!getenv("OMPI_COMM_WORLD_SIZE")) {
        g_dist.rank = 0;
        g_dist.world = 1;
        g_dist.local_rank = 0;
        g_dist.local_size = 1;
        return;
    }
    int already = 0;
    MPI_Initialized(&already);
    if (!already) MPI_Init(argc, argv);
    g_dist.mpi = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_dist.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_dist.world);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_dist.rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &g_dist.local_rank);
    MPI_Comm_size(node, &g_dist.local_size);
    MPI_Comm_free(&node);
    if (g_dist.world > 1) {
        check_set_abort_hook(abort_job);
        check_set_rank(g_dist.rank);
    }
}

void dist_finalize(void) {
    if (!g_dist.mpi) return;
    check_set_abort_hook(NULL);
    MPI_Finalize();
    g_dist.mpi = false;
}

int dist_rank(void) { return g_dist.rank; }
int dist_world_size(void) { return g_dist.world; }
int dist_local_rank(void) { return g_dist.local_rank; }
int dist_local_size(void) { return g_dist.local_size; }
bool dist_is_mpi(void) { return g_dist.mpi; }

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
        MPI_Finalize();
        g_dist.mpi = false;
    }
    exit(1);
}
