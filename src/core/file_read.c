/* file_read.c — see file_read.h. */
#include "src/core/file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { FILE_READ_ALIGN = 64 };

/* "a FIFO", "a directory", ... for an st_mode that is not a regular file. */
static const char *file_kind_name(unsigned mode) {
    return S_ISFIFO(mode)   ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISDIR(mode)  ? "a directory"
           : S_ISSOCK(mode) ? "a socket"
                            : "a special file";
}

__attribute__((format(printf, 4, 5))) static unsigned char *fail(int fd, char *err, size_t errlen,
                                                                 const char *fmt, ...) {
    if (fd >= 0) close(fd);
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

/* A regular file whose size reads 0 may still hold bytes (/proc and /sys files are made when
 * read): read it to its end, growing the buffer, at most max bytes (one more says it is over). */
static unsigned char *read_unsized(int fd, size_t max, size_t *n, char *err, size_t errlen) {
    size_t cap = FILE_READ_ALIGN, got = 0;
    unsigned char *buf = aligned_alloc(FILE_READ_ALIGN, cap);
    for (;;) {
        if (!buf) return fail(fd, err, errlen, "does not fit in memory (%zu bytes)", cap);
        if (got + 1 == cap) { /* full but for the NUL: double (aligned_alloc has no realloc) */
            unsigned char *grown = aligned_alloc(FILE_READ_ALIGN, 2 * cap);
            if (grown) memcpy(grown, buf, got);
            free(buf);
            buf = grown, cap *= 2;
            continue;
        }
        const size_t room = cap - 1 - got, want = max + 1 - got;
        ssize_t k = read(fd, buf + got, room < want ? room : want);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            free(buf);
            return fail(fd, err, errlen, "cannot be read: %s", strerror(errno));
        }
        if (k == 0) break;
        got += (size_t)k;
        if (got > max) {
            free(buf);
            return fail(fd, err, errlen,
                        "holds more than %zu bytes, the most that is read (its size reads 0, "
                        "as /proc files' do)",
                        max);
        }
    }
    close(fd);
    buf[got] = 0;
    *n = got;
    return buf;
}

unsigned char *file_read_bounded(const char *path, size_t max, size_t *n, unsigned long long *size,
                                 char *err, size_t errlen) {
    *n = 0;
    if (size) *size = 0;
    if (err && errlen) err[0] = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return fail(-1, err, errlen, "cannot be opened: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) return fail(fd, err, errlen, "cannot be read: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fail(fd, err, errlen, "is not a regular file (%s)", file_kind_name(st.st_mode));
    const unsigned long long bytes = (unsigned long long)st.st_size;
    if (size) *size = bytes;
    if (bytes > max)
        return fail(fd, err, errlen, "is %llu bytes; at most %zu are read", bytes, max);
    if (bytes == 0) return read_unsized(fd, max, n, err, errlen);
    const size_t want = (size_t)bytes;
    const size_t cap = (want + 1 + FILE_READ_ALIGN - 1) / FILE_READ_ALIGN * FILE_READ_ALIGN;
    unsigned char *buf = aligned_alloc(FILE_READ_ALIGN, cap);
    if (!buf) return fail(fd, err, errlen, "does not fit in memory (%zu bytes)", want);
    size_t got = 0;
    while (got < want) {
        ssize_t k = read(fd, buf + got, want - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            free(buf);
            return fail(fd, err, errlen, "cannot be read: %s", strerror(errno));
        }
        if (k == 0) break; /* shrank while we read: take what is there */
        got += (size_t)k;
    }
    close(fd);
    buf[got] = 0;
    *n = got;
    return buf;
}
