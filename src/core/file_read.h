/* file_read.h — read an input file whole, with bounds: the one way Trident reads a file a
 * user hands it (data, prompts, checkpoints, traces, run metrics).
 *
 *   char err[256];
 *   size_t n; unsigned long long size;
 *   unsigned char *b = file_read_bounded(path, 1 << 20, &n, &size, err, sizeof err);
 *   if (!b) die("prompt '%s' %s", path, err);   // err: "is not a regular file (a FIFO)"
 *
 * What it guarantees, whatever the path names:
 *   - the open never blocks: O_NONBLOCK, so a FIFO without a writer cannot hang the program;
 *   - only a regular file is read: FIFOs, devices (/dev/zero, /dev/urandom), directories and
 *     sockets are refused with their kind;
 *   - a file larger than `max` bytes is refused before anything is read or allocated (*size
 *     still says how large it is, for the caller's own message);
 *   - at most the bytes its size said are read (a file that grows meanwhile cannot make the
 *     read endless; one that shrinks gives what was there);
 *   - a file whose size reads 0 (/proc/self/status, /sys files: made as they are read) is read
 *     to its end, at most `max` bytes: one that holds more is refused ("holds more than ...").
 * The buffer is 64-byte aligned (tensor files view their data in place), one byte longer than
 * the data with a NUL there (text readers may treat it as a string); free() it.
 *
 * On failure: NULL, and err holds a phrase meant to follow the file's name in the caller's
 * message ("is not a regular file (a FIFO)", "cannot be opened: No such file or directory",
 * "is 5368709120 bytes; at most 4294967296 are read"). Not here: writing (atomic_file.h).
 */
#ifndef TRIDENT_CORE_FILE_READ_H
#define TRIDENT_CORE_FILE_READ_H

#include <stddef.h>

unsigned char *file_read_bounded(const char *path, size_t max, size_t *n, unsigned long long *size,
                                 char *err, size_t errlen);

#endif /* TRIDENT_CORE_FILE_READ_H */
