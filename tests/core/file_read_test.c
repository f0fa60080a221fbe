/* file_read_test.c — reading a file a user hands Trident (src/core/file_read.h): a regular
 * file whole, a file whose size reads 0 (/proc) to its end within the bound, and every other
 * kind refused with a phrase naming it, never blocking. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/file_read.h"
#include "tests/support/testing.h"

static void a_regular_file_is_read_whole(void **state) {
    (void)state;
    char path[4200], err[256];
    snprintf(path, sizeof path, "%s/five.txt", test_tmpdir("file_read"));
    FILE *f = fopen(path, "w");
    fputs("hello", f);
    fclose(f);
    size_t n;
    unsigned long long size;
    unsigned char *b = file_read_bounded(path, 5, &n, &size, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(n, 5);
    assert_string_equal((char *)b, "hello");
    free(b);
    assert_null(file_read_bounded(path, 4, &n, &size, err, sizeof err));
    assert_int_equal(size, 5); /* the caller's own message can name the size */
    assert_non_null(strstr(err, "is 5 bytes; at most 4 are read"));
}

/* /proc/self/status says 0 bytes but holds text: it is read to its end, not taken as empty;
 * one that holds more than the bound is refused with "holds more than". */
static void a_file_whose_size_reads_zero_is_read_to_its_end(void **state) {
    (void)state;
    char err[256];
    size_t n;
    unsigned long long size;
    unsigned char *b = file_read_bounded("/proc/self/status", 1 << 20, &n, &size, err, sizeof err);
    if (!b) fail_msg("/proc/self/status: %s", err);
    assert_int_equal(size, 0);
    assert_true(n > 100);
    assert_int_equal(strlen((char *)b), n);
    assert_non_null(strstr((char *)b, "Name:"));
    free(b);
    assert_null(file_read_bounded("/proc/self/status", 8, &n, &size, err, sizeof err));
    assert_non_null(strstr(err, "holds more than 8 bytes"));
    assert_int_equal(n, 0);
}

static void special_files_are_refused_by_kind(void **state) {
    (void)state;
    char err[256];
    size_t n;
    assert_null(file_read_bounded("/dev/zero", 100, &n, NULL, err, sizeof err));
    assert_non_null(strstr(err, "is not a regular file (a character device)"));
    assert_null(file_read_bounded("/", 100, &n, NULL, err, sizeof err));
    assert_non_null(strstr(err, "is not a regular file (a directory)"));
    assert_null(file_read_bounded("/no/such/file", 100, &n, NULL, err, sizeof err));
    assert_non_null(strstr(err, "cannot be opened"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_regular_file_is_read_whole),
        cmocka_unit_test(a_file_whose_size_reads_zero_is_read_to_its_end),
        cmocka_unit_test(special_files_are_refused_by_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
