/* nofollow.c — see nofollow.h. */
#include "src/core/nofollow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The one refusal: "'PATH' is a symbolic link (to 'TARGET'): ...". `at`/`name` as readlinkat. */
static void link_message(int at, const char *name, const char *path, char *why, size_t cap) {
    char to[1024];
    ssize_t n = readlinkat(at, name, to, sizeof to - 1);
    to[n > 0 ? n : 0] = '\0';
    snprintf(why, cap,
             "'%s' is a symbolic link%s%s%s: Trident does not remove, rename or overwrite through "
             "links it did not make",
             path, n > 0 ? " (to '" : "", to, n > 0 ? "')" : "");
}

static bool is_link(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

bool nofollow_check(const char *path, char *why, size_t cap) {
    if (!is_link(path)) return true;
    link_message(AT_FDCWD, path, path, why, cap);
    return false;
}

bool nofollow_is_dir(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* dir's own descriptor, never through a link: >= 0; -1 with why empty when dir is missing;
 * -1 with why when it is a link, not a directory, or cannot be opened. */
static int dir_open(const char *dir, char *why, size_t cap) {
    why[0] = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 || errno == ENOENT) return fd;
    const int e = errno;
    if (is_link(dir)) link_message(AT_FDCWD, dir, dir, why, cap);
    else if (e == ENOTDIR) snprintf(why, cap, "'%s' is not a directory", dir);
    else snprintf(why, cap, "cannot open '%s': %s", dir, strerror(e));
    return -1;
}

/* Every entry of the directory open as fd: each looked at (no link, no directory) or, with
 * remove, unlinked. False with why at the first refusal or failure. */
static bool entries_walk(int fd, const char *dir, bool remove, char *why, size_t cap) {
    int own = dup(fd);
    DIR *d = own >= 0 ? fdopendir(own) : NULL;
    if (!d) {
        if (own >= 0) close(own);
        snprintf(why, cap, "cannot list '%s': %s", dir, strerror(errno));
        return false;
    }
    rewinddir(d); /* the duplicate shares its position with fd: start from the first entry */
    bool ok = true;
    struct dirent *e;
    char path[4600];
    while (ok && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            snprintf(why, cap, "cannot look at '%s': %s", path, strerror(errno));
            ok = false;
        } else if (S_ISLNK(st.st_mode)) {
            link_message(fd, e->d_name, path, why, cap);
            ok = false;
        } else if (S_ISDIR(st.st_mode)) {
            snprintf(why, cap, "'%s' is a directory: Trident removes only directories of files",
                     path);
            ok = false;
        } else if (remove && unlinkat(fd, e->d_name, 0) != 0) {
            snprintf(why, cap, "cannot remove '%s': %s", path, strerror(errno));
            ok = false;
        }
    }
    closedir(d);
    return ok;
}

bool nofollow_dir_check(const char *dir, char *why, size_t cap) {
    int fd = dir_open(dir, why, cap);
    if (fd < 0) return why[0] == '\0';
    const bool ok = entries_walk(fd, dir, false, why, cap);
    close(fd);
    return ok;
}

bool nofollow_remove_dir(const char *dir, char *why, size_t cap) {
    int fd = dir_open(dir, why, cap);
    if (fd < 0) return why[0] == '\0';
    /* look at every entry first: a refusal leaves the directory as it was */
    bool ok = entries_walk(fd, dir, false, why, cap) && entries_walk(fd, dir, true, why, cap);
    close(fd);
    if (ok && rmdir(dir) != 0) {
        snprintf(why, cap, "cannot remove '%s': %s", dir, strerror(errno));
        ok = false;
    }
    return ok;
}

bool nofollow_rename(const char *from, const char *to, char *why, size_t cap) {
    if (!nofollow_check(from, why, cap) || !nofollow_check(to, why, cap)) return false;
    if (rename(from, to) == 0) return true;
    snprintf(why, cap, "cannot rename '%s' to '%s': %s", from, to, strerror(errno));
    return false;
}

bool nofollow_make_dir(const char *dir, char *why, size_t cap) {
    if (!nofollow_check(dir, why, cap)) return false;
    if (mkdir(dir, 0755) == 0) return true;
    const int e = errno;
    if (e == EEXIST && nofollow_is_dir(dir)) return true;
    if (!nofollow_check(dir, why, cap)) return false; /* a link planted since the look */
    if (e == EEXIST) snprintf(why, cap, "'%s' exists and is not a directory", dir);
    else snprintf(why, cap, "cannot create directory '%s': %s", dir, strerror(e));
    return false;
}

int nofollow_open_file(const char *path, bool truncate, char *why, size_t cap) {
    /* O_NONBLOCK: a FIFO planted here cannot block the open; it is refused below */
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0) {
        const int e = errno;
        if (is_link(path)) link_message(AT_FDCWD, path, path, why, cap);
        else snprintf(why, cap, "cannot write '%s': %s", path, strerror(e));
        return -1;
    }
    struct stat st;
    const char *fail = NULL;
    if (fstat(fd, &st) != 0) fail = strerror(errno);
    else if (!S_ISREG(st.st_mode)) fail = "it is not a regular file";
    else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) fail = strerror(errno);
    else if (truncate && ftruncate(fd, 0) != 0) fail = strerror(errno);
    if (!fail) return fd;
    snprintf(why, cap, "cannot write '%s': %s", path, fail);
    close(fd);
    return -1;
}
