/* cmocka_includes_test.c — a cmocka test may include <limits.h> and, in CUDA builds, the
 * CUDA runtime's header (which includes <limits.h> itself).
 *
 * @cmocka's repository is all of /usr/include, and GCC's limits.h reaches the system one
 * through `-iquote external/cmocka` (see third_party/system/cmocka.BUILD); Bazel's include
 * check refused that until cmocka.BUILD declared it. This test only has to compile and
 * link; with CUDA it also asks for the device count, which may well be "no device". */
#include <limits.h>

#ifdef TRIDENT_CUDA
#include <cuda_runtime.h>
#endif

#include "tests/support/testing.h"

static void limits_h_and_cmocka_build_together(void **state) {
    (void)state;
    assert_int_equal(CHAR_BIT, 8);
}

static void cuda_runtime_h_and_cmocka_build_together(void **state) {
    (void)state;
#ifdef TRIDENT_CUDA
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    (void)cudaGetLastError(); /* clear a sticky "no device" */
    if (err == cudaSuccess) assert_true(n >= 0);
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
