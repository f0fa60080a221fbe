/* dist_progress_test.c — a pipeline send makes progress while its sender computes (issue 15).
 *
 * Two ranks. Rank 0 sends 16 MiB (far above the 4 KiB eager limit, so it goes by rendezvous)
 * with comm_send, then computes WITHOUT calling MPI until rank 1 says, through a flag in a
 * file both ranks have mmap'd, that its comm_recv is complete — or 20 s pass. The flag must
 * come: either the receiver copies from rank 0's memory itself (single copy, CMA) or rank 0's
 * progress thread moves the bytes (no single copy). With neither, the receive would wait
 * until rank 0 calls MPI again, i.e. never within the 20 s.
 *
 * One argument names the transport the run must have chosen and that the description line
 * must state: "cma" (the default here), "refused" (the test sets TRIDENT_TEST_REFUSE_CMA=1
 * before mpirun: the progress thread) or "none" (the user forces
 * OMPI_MCA_btl_vader_single_copy_mechanism=none: the progress thread).
 *
 * Hand check that the property is real: TRIDENT_NO_PROGRESS_THREAD=1 (a diagnostic of dist.c)
 * with "none" or "refused" must FAIL a_large_send_arrives_while_the_sender_computes:
 *   TRIDENT_NO_PROGRESS_THREAD=1 bazel-bin/tests/runtime/dist_progress_test_none none
 *
 * Not here: how fast the bytes move (that is a measurement, not a property).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/core/clock.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"
#include "tests/support/testing.h"

enum { MESSAGE_BYTES = 16 << 20, TAG = 7 };
static const double k_patience_s = 20.0;

static const char *g_mode = "cma";
static comm_group *g_world;

/* A page shared by the two ranks through a file under $TEST_TMPDIR whose name rank 0 picks. */
static volatile int *shared_flag(void) {
    char path[512] = "";
    if (dist_rank() == 0) {
        const char *dir = getenv("TEST_TMPDIR");
        snprintf(path, sizeof path, "%s/dist_progress_flag.%d", dir ? dir : "/tmp", (int)getpid());
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 4096), 0);
        close(fd);
    }
    comm_broadcast(g_world, path, sizeof path, COMM_BYTE, 0); /* the file exists now */
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(p != MAP_FAILED);
    close(fd);
    return p;
}

static void the_description_names_the_mechanism(void **state) {
    (void)state;
    if (getenv("TRIDENT_NO_PROGRESS_THREAD")) skip(); /* the hand check below */
    const char *d = dist_transport_description();
    if (strcmp(g_mode, "cma") == 0) {
        if (!strstr(d, "single copy (CMA)")) fprintf(stderr, "description: %s\n", d);
        assert_non_null(strstr(d, "p2p: shared memory, single copy (CMA)"));
    } else {
        if (!strstr(d, "progress thread moves")) fprintf(stderr, "description: %s\n", d);
        assert_non_null(strstr(d, "no single copy"));
        assert_non_null(strstr(d, "a progress thread moves messages while the rank computes"));
        assert_non_null(strstr(d, strcmp(g_mode, "refused") == 0
                                      ? "CMA refused: TRIDENT_TEST_REFUSE_CMA=1"
                                      : "OMPI_MCA_btl_vader_single_copy_mechanism=none"));
    }
}

static void a_large_send_arrives_while_the_sender_computes(void **state) {
    (void)state;
    volatile int *flag = shared_flag();
    unsigned char *buf = malloc(MESSAGE_BYTES);
    assert_non_null(buf);
    comm_barrier(g_world); /* both ranks have the page, the flag is 0 */
    if (dist_rank() == 0) {
        for (size_t i = 0; i < MESSAGE_BYTES; i++) buf[i] = (unsigned char)(i * 131 + 7);
        comm_send(g_world, buf, MESSAGE_BYTES, COMM_BYTE, 1, TAG);
        /* Compute, and no MPI call, until rank 1 has the message or patience runs out. */
        double t0 = time_now(), waited = 0;
        volatile double x = 1.0;
        while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE) &&
               (waited = time_now() - t0) < k_patience_s)
            for (int i = 0; i < 10000; i++) x = x * 1.0000001 + 1e-9;
        int arrived = __atomic_load_n(flag, __ATOMIC_ACQUIRE);
        if (arrived)
            printf("[%s] 16 MiB arrived after %.3f s of compute on the sender (%s)\n", g_mode,
                   waited, dist_transport_description());
        else
            fprintf(stderr,
                    "rank 1 did not receive 16 MiB within %.0f s while rank 0 computed "
                    "without calling MPI (%s)\n",
                    k_patience_s, dist_transport_description());
        assert_true(arrived);
    } else {
        comm_recv(g_world, buf, MESSAGE_BYTES, COMM_BYTE, 0, TAG);
        __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
        for (size_t i = 0; i < MESSAGE_BYTES; i++)
            if (buf[i] != (unsigned char)(i * 131 + 7)) fail_msg("byte %zu differs", i);
    }
    comm_wait_sends(g_world);
    comm_barrier(g_world);
    munmap((void *)flag, 4096);
    free(buf);
}

int main(int argc, char **argv) {
    g_mode = argc > 1 ? argv[1] : "cma";
    if (!getenv("OMPI_COMM_WORLD_SIZE")) { /* before mpirun: the environment of the ranks */
        if (strcmp(g_mode, "refused") == 0) setenv("TRIDENT_TEST_REFUSE_CMA", "1", 1);
        if (strcmp(g_mode, "none") == 0)
            setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    }
    mpi_test_launch(argc, argv, 2);
    dist_init(&argc, &argv);
    g_world = comm_group_world(COMM_MPI);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_description_names_the_mechanism),
        cmocka_unit_test(a_large_send_arrives_while_the_sender_computes),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    comm_group_destroy(g_world);
    dist_finalize();
    return failed;
}
