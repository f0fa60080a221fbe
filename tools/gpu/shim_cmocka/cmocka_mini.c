/* cmocka_mini.c — see cmocka.h in this folder. */
#include "cmocka.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>

static jmp_buf g_jump;

void shim_cmocka_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    longjmp(g_jump, 1);
}

int shim_cmocka_run(const char *group, const struct CMUnitTest *tests, size_t n, void *setup,
                    void *teardown) {
    (void)setup, (void)teardown;
    volatile int failed = 0; /* survives the longjmp */
    printf("[==========] %s: Running %zu test(s).\n", group, n);
    for (size_t i = 0; i < n; i++) {
        printf("[ RUN      ] %s\n", tests[i].name);
        fflush(stdout);
        if (setjmp(g_jump) == 0) {
            tests[i].test_func(NULL);
            printf("[       OK ] %s\n", tests[i].name);
        } else {
            printf("[  FAILED  ] %s\n", tests[i].name);
            failed++;
        }
    }
    printf("[==========] %s: %zu test(s) run, %zu passed, %d failed.\n", group, n,
           n - (size_t)failed, failed);
    return failed;
}
