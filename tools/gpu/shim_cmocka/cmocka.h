/* cmocka.h (shim) — the part of cmocka's API Trident's tests use, for GPU machines without
 * libcmocka. tools/gpu/run_gpu_checks.sh uses it only when no system cmocka is found.
 * A failed assertion prints file:line and the reason and ends the current test (longjmp);
 * cmocka_run_group_tests returns the number of failed tests, as cmocka does.
 * Not cmocka: no mocks, no fixtures beyond NULL, no output formats.
 */
#ifndef TRIDENT_TOOLS_GPU_SHIM_CMOCKA_H
#define TRIDENT_TOOLS_GPU_SHIM_CMOCKA_H

#include <stddef.h>

typedef void (*CMUnitTestFunction)(void **state);
struct CMUnitTest {
    const char *name;
    CMUnitTestFunction test_func;
};

#define cmocka_unit_test(f)                                                                        \
    { #f, f }
#define cmocka_run_group_tests(tests, setup, teardown)                                             \
    shim_cmocka_run(#tests, tests, sizeof(tests) / sizeof((tests)[0]), (setup), (teardown))

int shim_cmocka_run(const char *group, const struct CMUnitTest *tests, size_t n, void *setup,
                    void *teardown);
void shim_cmocka_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

#define fail() shim_cmocka_fail(__FILE__, __LINE__, "fail()")
#define fail_msg(...) shim_cmocka_fail(__FILE__, __LINE__, __VA_ARGS__)
#define assert_true(c)                                                                             \
    do {                                                                                           \
        if (!(c)) shim_cmocka_fail(__FILE__, __LINE__, "%s is false", #c);                         \
    } while (0)
#define assert_false(c)                                                                            \
    do {                                                                                           \
        if (c) shim_cmocka_fail(__FILE__, __LINE__, "%s is true", #c);                             \
    } while (0)
#define assert_int_equal(a, b)                                                                     \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) shim_cmocka_fail(__FILE__, __LINE__, "%lld != %lld", a_, b_);                \
    } while (0)

#endif /* TRIDENT_TOOLS_GPU_SHIM_CMOCKA_H */
