/* check.c — the failure paths behind check.h. See check.h for the contract. */
#include "src/core/check.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

static int g_rank = -1;
static void (*g_abort_hook)(int code) = NULL;

void check_set_rank(int rank) { g_rank = rank; }

void check_set_abort_hook(void (*hook)(int code)) { g_abort_hook = hook; }

void fatal_exit(int code) {
    fflush(stdout);
    fflush(stderr);
    if (g_abort_hook) g_abort_hook(code);
    exit(code);
}

static void print_prefix(void) {
    if (g_rank >= 0) fprintf(stderr, "trident[rank %d]: ", g_rank);
    else fprintf(stderr, "trident: ");
}

void die(const char *fmt, ...) {
    /* Messages that already start with "trident <subcommand>:" need no second prefix. */
    if (g_rank >= 0 || strncmp(fmt, "trident ", 8) != 0) print_prefix();
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fatal_exit(1);
}

void check_fail_(const char *file, int line, const char *what, const char *hint) {
    print_prefix();
    fprintf(stderr, "%s:%d: %s\n", file, line, what);
    if (hint && hint[0]) fprintf(stderr, "  hint: %s\n", hint);
    fatal_exit(2);
}

void *malloc_check_(size_t size, const char *file, int line) {
    void *p = malloc(size ? size : 1);
    if (!p) {
        print_prefix();
        fprintf(stderr, "%s:%d: out of memory allocating %zu bytes\n", file, line, size);
        fprintf(stderr, "  hint: use a smaller model, micro-batch or more ranks\n");
        fatal_exit(2);
    }
    return p;
}

void *calloc_check_(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        print_prefix();
        fprintf(stderr, "%s:%d: out of memory allocating %zu x %zu bytes\n", file, line, n, size);
        fatal_exit(2);
    }
    return p;
}

FILE *fopen_check_(const char *path, const char *mode, const char *file, int line) {
    FILE *f = fopen(path, mode);
    if (!f) {
        print_prefix();
        fprintf(stderr, "cannot open '%s' (mode %s): %s [%s:%d]\n", path, mode, strerror(errno),
                file, line);
        fatal_exit(1);
    }
    return f;
}
