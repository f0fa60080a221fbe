/* cmocka_includes_test.c — a cmocka test may include <limits.h> and, in CUDA builds, the
 * CUDA runtime's header (which includes <limits.h> itself).
 *
 * @cmocka's repository is all of /usr/include, and GCC's limits.h reaches the system one
 * through `-iquote external/cmocka` (see third_party/system/cmocka.BUILD); Bazel's include
 * check refused that until cmocka.BUILD declared it. Compiling is most of the test: the
 * #error below fails the build if GCC's limits.h stopped reaching the system one (only the
 * C library's limits.h has the POSIX minimums). At run time the system must agree with the
 * header it was built against, and with CUDA the runtime must answer a call. */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#ifdef TRIDENT_CUDA
#include <cuda_runtime.h>
#endif

#include "tests/support/testing.h"

#ifndef _POSIX_ARG_MAX
#error "<limits.h> is GCC's alone: the system limits.h (with the POSIX minimums) was not reached"
#endif

static void limits_h_and_cmocka_build_together(void **state) {
    (void)state;
    long arg_max = sysconf(_SC_ARG_MAX);
    if (arg_max < _POSIX_ARG_MAX)
        fail_msg("sysconf(_SC_ARG_MAX) = %ld is below the header's _POSIX_ARG_MAX = %d", arg_max,
                 _POSIX_ARG_MAX);
}

static void cuda_runtime_h_and_cmocka_build_together(void **state) {
    (void)state;
#ifdef TRIDENT_CUDA
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    (void)cudaGetLastError(); /* clear a sticky "no device" */
    if (err != cudaSuccess) {
        /* The runtime linked and answered; "no device" is a fine answer on a CPU machine. */
        assert_non_null(cudaGetErrorName(err));
        printf("cudaGetDeviceCount: %s: %s\n", cudaGetErrorName(err), cudaGetErrorString(err));
        skip();
    }
    /* Success means at least one device (no device is cudaErrorNoDevice), and it can be used. */
    assert_true(n >= 1);
    int dev = -1;
    assert_int_equal(cudaGetDevice(&dev), cudaSuccess);
    assert_true(dev >= 0 && dev < n);
#else
    skip();
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(limits_h_and_cmocka_build_together),
        cmocka_unit_test(cuda_runtime_h_and_cmocka_build_together),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
