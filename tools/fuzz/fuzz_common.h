/* fuzz_common.h — what the libFuzzer harnesses of tools/fuzz/ share.
 *
 * The readers under test take a path, so each input is written to one scratch file per
 * process first. Readers that report bad input by die() end the process through
 * fatal_exit(); fuzz_catch_die() turns that into a return to the harness (a clean
 * rejection), while crashes, sanitizer reports and hangs still stop the fuzzer.
 *
 * Not here: building or running the harnesses (run.sh does that); this is not part of the
 * Bazel build.
 */
#ifndef TRIDENT_TOOLS_FUZZ_COMMON_H
#define TRIDENT_TOOLS_FUZZ_COMMON_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "src/core/check.h"

/* The scratch file of this process: $FUZZ_SCRATCH_DIR (default /tmp)/trident-fuzz-<pid>.bin. */
static const char *fuzz_write_input(const uint8_t *data, size_t size) {
    static char path[4096];
    if (!path[0]) {
        const char *dir = getenv("FUZZ_SCRATCH_DIR");
        snprintf(path, sizeof path, "%s/trident-fuzz-%d.bin", dir ? dir : "/tmp", (int)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        abort();
    }
    return path;
}

static jmp_buf fuzz_die_jump;
static void fuzz_die_hook(int code) { longjmp(fuzz_die_jump, code ? code : 1); }

/* Use as: if (setjmp(fuzz_die_jump) == 0) { fuzz_catch_die(); ...code that may die()... } */
static void fuzz_catch_die(void) { check_set_abort_hook(fuzz_die_hook); }

#endif /* TRIDENT_TOOLS_FUZZ_COMMON_H */
