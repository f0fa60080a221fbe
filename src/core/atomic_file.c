/* atomic_file.c — see atomic_file.h. */
#include "src/core/atomic_file.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/core/nofollow.h"

void atomic_file_prepare(atomic_file *af, const char *path) {
    if (strlen(path) >= sizeof af->path) die("output path too long: '%s'", path);
    strcpy(af->path, path);
    snprintf(af->tmp, sizeof af->tmp, "%s.tmp.%d", path, (int)getpid());
    af->f = NULL;
}

FILE *atomic_file_open(atomic_file *af, const char *path) {
    atomic_file_prepare(af, path);
    char why[4400];
    /* neither the target nor the temporary may be a link (nofollow.h): refused before writing */
    int fd = nofollow_check(path, why, sizeof why)
                 ? nofollow_open_file(af->tmp, true, why, sizeof why)
                 : -1;
    if (fd < 0) die("%s", why);
    af->f = fdopen(fd, "wb");
    if (!af->f) die("cannot write '%s': %s", af->tmp, strerror(errno));
    return af->f;
}

void atomic_file_commit(atomic_file *af) {
    if (af->f) {
        if (fflush(af->f) != 0 || ferror(af->f)) {
            fclose(af->f);
            remove(af->tmp);
            die("write to '%s' failed: %s", af->path, strerror(errno));
        }
        fsync(fileno(af->f));
        fclose(af->f);
        af->f = NULL;
    }
    char why[9000];
    if (!nofollow_rename(af->tmp, af->path, why, sizeof why)) {
        unlink(af->tmp); /* removes a link itself, never its target */
        die("%s", why);
    }
}

void atomic_file_abort(atomic_file *af) {
    if (af->f) fclose(af->f);
    af->f = NULL;
    remove(af->tmp);
}

bool make_dirs_try(const char *dir, char *why, size_t cap) {
    char buf[4096];
    if (strlen(dir) >= sizeof buf) {
        snprintf(why, cap, "directory path too long: '%s'", dir);
        return false;
    }
    strcpy(buf, dir);
    for (char *p = buf + 1;; p++) {
        const bool end = *p == '\0';
        if (*p != '/' && !end) continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            snprintf(why, cap, "cannot create directory '%s': %s", buf, strerror(errno));
            return false;
        }
        struct stat st; /* every component, so that a file in the path is named as such */
        if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(why, cap, "'%s' exists and is not a directory", buf);
            return false;
        }
        if (end) return true;
        *p = '/';
    }
}

void make_dirs(const char *dir) {
    char why[4400];
    if (!make_dirs_try(dir, why, sizeof why)) die("%s", why);
}
