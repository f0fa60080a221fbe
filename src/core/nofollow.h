/* nofollow.h — remove, rename, create and lock without following symbolic links Trident did not
 * make: the one way Trident changes a name on disk.
 *
 *   char why[4400];
 *   if (!nofollow_remove_dir("ck/iter_0000100.old", why, sizeof why)) die("%s", why);
 *   // why: 'ck/iter_0000100.old' is a symbolic link (to '/home/me/thesis'): Trident does not
 *   //      remove, rename or overwrite through links it did not make
 *
 * The rule. A name Trident removes, renames, replaces, truncates or creates — an iteration
 * directory (iter_N, iter_N.tmp, iter_N.old) and its rank files, `latest`, `.lock`, a run
 * directory's metrics.jsonl, config.json, trace/ and pictures, every temporary next to them —
 * must not be a symbolic link, dangling or not. A link there is refused with the line above and
 * nothing is changed: the link's target (a directory of someone's files, a file, a FIFO, a
 * device) is never emptied, truncated, written or created, and the link itself stays.
 *
 * Allowed: the directories a user names (--save DIR, --load DIR, --run-dir DIR, the folder of
 * -o FILE) and the folders above them may be links: they are the user's own words, followed
 * as written. So only the LAST component of a path is checked: the one Trident made or will
 * make. Reading (--load, eval, render) follows links: reading loses nothing.
 *
 * How: lstat() to look; open(O_NOFOLLOW) to create or lock, so a link planted between the look
 * and the open fails the open (ELOOP) instead of being followed; a directory is emptied through
 * its own descriptor (opened O_DIRECTORY | O_NOFOLLOW, entries looked at with fstatat(...,
 * AT_SYMLINK_NOFOLLOW) and removed with unlinkat), after every entry has passed the look, so a
 * refusal leaves the directory whole.
 *
 * Every function returns false (or -1) with one line in why, naming the path; callers die()
 * with it, prefixed by the flag that named the directory. Not here: hard links (a hard link is
 * the file itself, not a pointer to it); replacing a file whole (atomic_file.h, built on this).
 */
#ifndef TRIDENT_CORE_NOFOLLOW_H
#define TRIDENT_CORE_NOFOLLOW_H

#include <stdbool.h>
#include <stddef.h>

/* True when path is not a symbolic link (a missing path is not one); else false and why. */
bool nofollow_check(const char *path, char *why, size_t cap);

/* True when path is a directory itself (not a link to one, not missing). */
bool nofollow_is_dir(const char *path);

/* What nofollow_remove_dir would refuse, looked at without removing anything: true when dir is
 * missing, or is a directory (not a link) whose entries are files (no link, no directory). */
bool nofollow_dir_check(const char *dir, char *why, size_t cap);

/* Removes a directory of files (an iteration directory): true when it is gone, or was never
 * there. Refuses, removing nothing, what nofollow_dir_check refuses. */
bool nofollow_remove_dir(const char *dir, char *why, size_t cap);

/* rename(from, to), refused when either is a link (to may be missing; an existing `to` that is
 * a file or an empty directory is replaced, as rename() does). */
bool nofollow_rename(const char *from, const char *to, char *why, size_t cap);

/* mkdir of one directory (its parent exists); an existing directory is fine, a link is not. */
bool nofollow_make_dir(const char *dir, char *why, size_t cap);

/* Opens path for reading and writing, creating it (0644) when missing, never through a link:
 * a descriptor of a regular file (a FIFO, device or directory is refused without blocking),
 * emptied first when truncate is true; -1 and why on failure. */
int nofollow_open_file(const char *path, bool truncate, char *why, size_t cap);

#endif /* TRIDENT_CORE_NOFOLLOW_H */
