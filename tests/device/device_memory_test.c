/* device_memory_test.c — src/device/device_memory.h on its own (the target links no kernels
 * and no BLAS): allocation is zeroed and counted on every device (Trident's own allocator
 * accounting: in use, and the high-water mark with its reset), copies round-trip on the cpu
 * and cpu-guarded devices, device_owns tells device memory from host memory, and the guard
 * nests. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "src/device/device_memory.h"
#include "tests/support/testing.h"

static void round_trip(void) {
    enum { n = 1000 };
    float host[n], back[n];
    for (int i = 0; i < n; i++) host[i] = 0.5f * (float)i;
    float *d = device_alloc(n * sizeof(float), "test buffer");
    float *e = device_alloc(n * sizeof(float), "test copy");
    /* counted on every device, the cpu one included (plain calloc, in the same table) */
    assert_int_equal(device_bytes_in_use(), 2 * n * sizeof(float));
    device_download(back, d, sizeof back);
    for (int i = 0; i < n; i++) assert_true(back[i] == 0.0f); /* zeroed */
    device_upload(d, host, sizeof host);
    device_copy(e, d, sizeof host);
    memset(back, 0, sizeof back);
    device_download(back, e, sizeof back);
    assert_memory_equal(back, host, sizeof host);
    device_zero(e, sizeof host);
    device_download(back, e, sizeof back);
    for (int i = 0; i < n; i++) assert_true(back[i] == 0.0f);
    assert_true(device_owns(d) == !device_is_host());
    assert_false(device_owns(host));
    device_free(d);
    device_free(e);
    assert_int_equal(device_bytes_in_use(), 0);
}

/* The high-water mark: the most at once, not the sum of everything ever allocated; a reset
 * starts it again from what is in use. */
static void the_peak_is_the_most_at_once_and_resets(void **state) {
    (void)state;
    device_bytes_peak_reset();
    assert_int_equal(device_bytes_peak(), 0);
    void *a = device_alloc(1000, "a"), *b = device_alloc(3000, "b");
    device_free(b);
    void *c = device_alloc(2000, "c"); /* 3000 in use: below the 4000 of a + b */
    assert_int_equal(device_bytes_in_use(), 3000);
    assert_int_equal(device_bytes_peak(), 4000);
    assert_int_equal(device_bytes_in_use_of("c"), 2000); /* by label: what a kind measures */
    assert_int_equal(device_bytes_in_use_of("b"), 0);
    device_bytes_peak_reset();
    assert_int_equal(device_bytes_peak(), 3000);
    device_free(a);
    device_free(c);
    assert_int_equal(device_bytes_in_use(), 0);
    assert_int_equal(device_bytes_peak(), 3000);
    void *z = device_alloc(0, "empty"); /* counts 0 bytes, still a pointer to free */
    assert_non_null(z);
    device_free(z);
    assert_int_equal(device_bytes_in_use(), 0);
}

static void memory_round_trips_on_the_cpu_device(void **state) {
    (void)state;
    assert_int_equal(device_current(), DEVICE_CPU);
    round_trip();
}

static void memory_round_trips_on_the_guarded_device_and_the_guard_nests(void **state) {
    (void)state;
    char err[256];
    assert_true(device_init(DEVICE_CPU_GUARDED, -1, err, sizeof err));
    round_trip();
    float *d = device_alloc(16 * sizeof(float), "guarded");
    device_guard_open();
    device_guard_open();
    d[3] = 2.0f; /* host access is fine inside the guard, nested or not */
    device_guard_close();
    d[4] = d[3];
    device_guard_close();
    float back[16];
    device_download(back, d, sizeof back);
    assert_true(back[4] == 2.0f);
    device_free(d);
    device_shutdown();
    assert_int_equal(device_current(), DEVICE_CPU);
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(memory_round_trips_on_the_cpu_device),
        cmocka_unit_test(the_peak_is_the_most_at_once_and_resets),
        cmocka_unit_test(memory_round_trips_on_the_guarded_device_and_the_guard_nests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
