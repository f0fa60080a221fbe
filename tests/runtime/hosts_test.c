/* hosts_test.c — which host each rank is on (src/runtime/hosts.h), and the bytes counted by
 * where they went (comm_bytes_within_host / across_hosts, src/runtime/comm.h).
 *
 * Four ranks under mpirun on one machine, told by the test-only switch TRIDENT_TEST_HOSTS that
 * ranks 0, 1 are on host "a" and 2, 3 on host "b" (tests/cluster makes real separate hosts):
 * the table, the description, and a send, a receive and an all-reduce counted on the right side.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/runtime/comm.h"
#include "src/runtime/dist.h"
#include "src/runtime/hosts.h"
#include "tests/support/testing.h"

static void every_rank_knows_every_host(void **state) {
    (void)state;
    assert_int_equal(hosts_count(), 2);
    assert_int_equal(hosts_of(0), 0);
    assert_int_equal(hosts_of(1), 0);
    assert_int_equal(hosts_of(2), 1);
    assert_int_equal(hosts_of(3), 1);
    assert_string_equal(hosts_name(1), "b");
    assert_true(hosts_same(2, 3) && !hosts_same(1, 2));
    char buf[256];
    assert_string_equal(hosts_describe(buf, sizeof buf), "2 hosts: a (ranks 0-1), b (ranks 2-3)");
}

/* Rank 0 sends 400 bytes to rank 1 (its host) and 800 to rank 2 (the other); then all four
 * all-reduce 16 bytes over the world (a group across hosts) and over {2, 3} (inside b). */
static void bytes_are_counted_by_where_they_went(void **state) {
    (void)state;
    const int rank = dist_rank();
    comm_group *world = comm_group_world(COMM_MPI);
    const size_t within0 = comm_bytes_within_host(), across0 = comm_bytes_across_hosts();
    float buf[200] = {0};
    if (rank == 0) {
        comm_send(world, buf, 100, COMM_FLOAT32, 1, 5);
        comm_send(world, buf, 200, COMM_FLOAT32, 2, 6);
        comm_wait_sends(world);
    } else if (rank == 1) {
        comm_recv(world, buf, 100, COMM_FLOAT32, 0, 5);
    } else if (rank == 2) {
        comm_recv(world, buf, 200, COMM_FLOAT32, 0, 6);
    }
    comm_all_reduce(world, buf, 4, COMM_FLOAT32, COMM_SUM);
    const int pair[2] = {2, 3};
    comm_group *b = comm_group_split("b", rank >= 2, rank >= 2 ? pair : NULL, rank >= 2 ? 2 : 0,
                                     COMM_MPI);
    if (b) comm_all_reduce(b, buf, 4, COMM_FLOAT32, COMM_SUM);
    const size_t within = comm_bytes_within_host() - within0;
    const size_t across = comm_bytes_across_hosts() - across0;
    /* receives count nothing (what left a rank is counted once, by its sender) */
    const size_t want_within[4] = {400, 0, 16, 16}, want_across[4] = {800 + 16, 16, 16, 16};
    assert_int_equal(within, want_within[rank]);
    assert_int_equal(across, want_across[rank]);
    comm_group_destroy(b);
    comm_group_destroy(world);
}

int main(int argc, char **argv) {
    setenv("TRIDENT_TEST_HOSTS", "a,a,b,b", 1);
    mpi_test_launch(argc, argv, 4);
    dist_init(&argc, &argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_rank_knows_every_host),
        cmocka_unit_test(bytes_are_counted_by_where_they_went),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dist_finalize();
    return rc;
}
