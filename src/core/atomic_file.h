/* atomic_file.h — write a file so that readers see the old one or the new one, never half.
 *
 *   atomic_file af;
 *   FILE *f = atomic_file_open(&af, "run/metrics.json");  // writes run/metrics.json.tmp.<pid>
 *   ... fprintf(f, ...) ...
 *   atomic_file_commit(&af);   // fflush + fsync + rename over the target
 *
 * atomic_file_abort() removes the temporary and leaves any previous file untouched.
 * Every output Trident writes (checkpoints, traces, pictures, JSON) goes through this.
 * Neither the target nor the temporary may be a symbolic link (src/core/nofollow.h): a link
 * there is refused when opening and again when committing, and its target is never written.
 */
#ifndef TRIDENT_CORE_ATOMIC_FILE_H
#define TRIDENT_CORE_ATOMIC_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct {
    char path[4096];
    char tmp[4096 + 32];
    FILE *f;
} atomic_file;

/* Opens the temporary next to `path` for binary writing; dies with a clear message. */
FILE *atomic_file_open(atomic_file *af, const char *path);
/* Only the temporary's name, for writers that open the file themselves (Cairo). */
void atomic_file_prepare(atomic_file *af, const char *path);
/* Flushes, syncs and renames the temporary over the target; dies on failure. */
void atomic_file_commit(atomic_file *af);
void atomic_file_abort(atomic_file *af);

/* mkdir -p; dies with a message naming the directory on failure. */
void make_dirs(const char *dir);
/* The same, reporting instead of dying: false with the reason (naming the directory) in why. */
bool make_dirs_try(const char *dir, char *why, size_t cap);

#endif /* TRIDENT_CORE_ATOMIC_FILE_H */
