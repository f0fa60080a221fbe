/* equivalence_test.c — every parallel layout computes what one process computes.
 *
 * Run under mpirun with WORLD ranks (a build-time constant, one binary per world size).
 * Each case trains a few steps serially (on every rank, no communication) and at the
 * layout, and compares every step's loss (rtol 1e-5) and every final parameter element
 * (|diff| <= 1e-5 + 1e-4·|serial|: fp32 reductions in another order, through Adam).
 * Rows with activation recomputation are compared with the serial run without it, and so are
 * rows with sequence parallelism (.sequence_parallel: LayerNorms and residual stream on T/tp
 * positions per rank, pipeline messages of (B, T/tp, C)).
 */
#include <mpi.h>
#include <stdio.h>

#include "src/runtime/dist.h"
#include "tests/support/testing.h"
#include "tests/train/equivalence.h"

#include "tests/train/equivalence_cases.h"

static void every_layout_matches_the_serial_run(void **state) {
    (void)state;
    train_config base;
    equivalence_base_config(&base);
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
        equivalence_check(&base, &k_cases[i], 4, 1e-5, 1e-5, 1e-4);
}

int main(int argc, char **argv) {
    mpi_test_launch(argc, argv, WORLD);
    dist_init(&argc, &argv);
    const struct CMUnitTest tests[] = {cmocka_unit_test(every_layout_matches_the_serial_run)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dist_finalize();
    return rc;
}
