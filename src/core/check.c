/* check.c — the failure paths behind check.h. See check.h for the contract. */
#include "src/core/check.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

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

/* Each message leaves in one write(), so the lines of ranks failing together never mix. */
static void emit(const char *body, bool prefix) {
    char line[2048];
    int n = 0;
    if (prefix) {
        if (g_rank >= 0) n = snprintf(line, sizeof line, "trident[rank %d]: ", g_rank);
        else n = snprintf(line, sizeof line, "trident: ");
    }
    snprintf(line + n, sizeof line - (size_t)n, "%s", body);
    fflush(stdout);
    fflush(stderr);
    ssize_t w = write(STDERR_FILENO, line, strlen(line));
    (void)w; /* nothing more can be done if stderr is gone */
}

void die(const char *fmt, ...) {
    char body[1800];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(body, sizeof body - 1, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n > sizeof body - 2) n = (int)sizeof body - 2;
    body[n] = '\n';
    body[n + 1] = 0;
    /* Messages that already start with "trident <subcommand>:" need no second prefix. */
    emit(body, g_rank >= 0 || strncmp(body, "trident ", 8) != 0);
    fatal_exit(1);
}

void check_fail_(const char *file, int line, const char *what, const char *hint) {
    char body[1800];
    snprintf(body, sizeof body, "%s:%d: %s\n%s%s%s", file, line, what,
             hint && hint[0] ? "  hint: " : "", hint && hint[0] ? hint : "",
             hint && hint[0] ? "\n" : "");
    emit(body, true);
    fatal_exit(2);
}

void *malloc_check_(size_t size, const char *file, int line) {
    void *p = malloc(size ? size : 1);
    if (!p) {
        char what[128];
        snprintf(what, sizeof what, "out of memory allocating %zu bytes", size);
        check_fail_(file, line, what, "use a smaller model, micro-batch or more ranks");
    }
    return p;
}

void *calloc_check_(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        char what[128];
        snprintf(what, sizeof what, "out of memory allocating %zu x %zu bytes", n, size);
        check_fail_(file, line, what, "use a smaller model, micro-batch or more ranks");
    }
    return p;
}

FILE *fopen_check_(const char *path, const char *mode, const char *file, int line) {
    FILE *f = fopen(path, mode);
    if (!f) {
        die("cannot open '%s' (mode %s): %s [%s:%d]", path, mode, strerror(errno), file, line);
    }
    return f;
}
