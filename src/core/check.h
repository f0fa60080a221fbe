/* check.h — fail-fast checks for the whole code base.
 *
 * Every call that can fail goes through one of these macros. On failure they print
 * `file:line: what failed (detail)` and a hint, then end the process — and, under MPI,
 * the whole job (MPI_Abort), so a bad rank never leaves the others hanging.
 * There are no error codes threaded through callers: a reference implementation
 * either computes the right thing or stops loudly.
 *
 * Not here: checks of user input. Those are ordinary code that prints one clear line
 * naming the bad value and the rule (see die() below), not a file:line.
 */
#ifndef TRIDENT_CORE_CHECK_H
#define TRIDENT_CORE_CHECK_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* Ends the process (and the MPI job, when MPI is up) with exit status `code`.
 * Registered by the runtime; before that it is plain exit(). */
void fatal_exit(int code) __attribute__((noreturn));

/* Prints "trident: <message>\n" to stderr (prefixed by the rank under MPI) and ends the job.
 * For user errors: the message names the bad value and the rule it breaks. */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* The rank printed in front of messages; -1 (the default) prints no rank. */
void check_set_rank(int rank);

/* Called by fatal_exit() before exit(): the runtime installs MPI_Abort here once MPI is
 * up (src/runtime/dist.c), so one failing rank ends the whole job. */
void check_set_abort_hook(void (*hook)(int code));

void check_fail_(const char *file, int line, const char *what, const char *hint)
    __attribute__((noreturn));

/* CHECK(cond, hint): an internal invariant; `hint` says what probably went wrong. */
#define CHECK(cond, hint)                                                                          \
    do {                                                                                           \
        if (!(cond)) check_fail_(__FILE__, __LINE__, "check failed: " #cond, (hint));              \
    } while (0)

void *malloc_check_(size_t size, const char *file, int line);
void *calloc_check_(size_t n, size_t size, const char *file, int line);
FILE *fopen_check_(const char *path, const char *mode, const char *file, int line);

/* mallocCheck(size): malloc that never returns NULL (size 0 gives a valid pointer). */
#define mallocCheck(size) malloc_check_((size), __FILE__, __LINE__)
#define callocCheck(n, size) calloc_check_((n), (size), __FILE__, __LINE__)
/* fopenCheck(path, mode): fopen that names the path and errno's message on failure. */
#define fopenCheck(path, mode) fopen_check_((path), (mode), __FILE__, __LINE__)

#endif /* TRIDENT_CORE_CHECK_H */
