/* clock_sync_test.c — clock offsets to rank 0: exact (0 ± 0) for ranks of rank 0's host, and
 * Cristian's estimate recovering a known skew within its stated uncertainty for ranks that
 * pretend to be on other hosts (TRIDENT_TEST_CLOCK_SKEW). Run plainly ("0": no MPI) and
 * under mpirun with 4 ranks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "src/runtime/clock_sync.h"
#include "src/runtime/dist.h"
#include "tests/support/testing.h"

static void ranks_sharing_rank0s_host_get_offset_zero_exactly(void **state) {
    (void)state;
    unsetenv("TRIDENT_TEST_CLOCK_SKEW");
    clock_sync_result cs = clock_sync(CLOCK_SYNC_EXCHANGES);
    assert_true(cs.same_host);
    assert_true(cs.offset == 0.0);
    assert_true(cs.uncertainty == 0.0);
    assert_true(cs.rtt == 0.0);
}

/* Every rank but 0 pretends its clock reads time_now() + rank * skew. */
static void check_skew(double skew) {
    char s[32];
    snprintf(s, sizeof s, "%g", skew);
    setenv("TRIDENT_TEST_CLOCK_SKEW", s, 1);
    clock_sync_result cs = clock_sync(CLOCK_SYNC_EXCHANGES);
    unsetenv("TRIDENT_TEST_CLOCK_SKEW");
    int rank = dist_rank();
    if (rank == 0 || dist_world_size() == 1) {
        assert_true(cs.same_host);
        assert_true(cs.offset == 0.0 && cs.uncertainty == 0.0);
        return;
    }
    assert_false(cs.same_host);
    assert_true(cs.rtt > 0.0 && cs.uncertainty == 0.5 * cs.rtt);
    assert_true(cs.uncertainty < 1.0); /* a ping-pong on one host, even oversubscribed */
    /* The true offset of the pretend clock is -rank * skew; the estimate is within its bound. */
    double err = fabs(cs.measured_offset + rank * skew);
    if (err > cs.uncertainty + 1e-9)
        fail_msg("rank %d: estimated %.9f s for a true offset of %.9f s: error %.3g s beyond the "
                 "uncertainty %.3g s",
                 rank, cs.measured_offset, -rank * skew, err, cs.uncertainty);
    /* With the pretend skew taken back out, the offset of the real clock is ~0. */
    assert_true(fabs(cs.offset) <= cs.uncertainty + 1e-9);
}

static void pretend_skew_is_recovered_within_the_uncertainty(void **state) {
    (void)state;
    check_skew(100.0);
    check_skew(-3.25);
    check_skew(0.000250);
}

int main(int argc, char **argv) {
    int np = argc > 1 ? atoi(argv[1]) : 0;
    if (np > 0) mpi_test_launch(argc, argv, np);
    dist_init(&argc, &argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ranks_sharing_rank0s_host_get_offset_zero_exactly),
        cmocka_unit_test(pretend_skew_is_recovered_within_the_uncertainty),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    dist_finalize();
    return failed;
}
