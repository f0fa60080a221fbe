/* checkpoint_dir.h — a checkpoint directory on disk: its iteration directories, `latest`,
 * how a save becomes visible all at once, and who may write into it.
 *
 *   SAVE/.lock                      held (flock) by rank 0 of the run that saves here
 *   SAVE/latest                     "100\n": the last complete iteration
 *   SAVE/iter_0000100/              its rank files (checkpoint.h)
 *   SAVE/iter_0000100.tmp/          a save in progress (or one that crashed)
 *   SAVE/iter_0000100.old/          a replaced save of the same iteration, being removed
 *
 * A save, and what a crash after each file-system step leaves (ckpt_save_step):
 *
 *   step            what it did                                 `latest` still loads
 *   TMP_DIR         rank 0 made iter_N.tmp/ (after removing a leftover one)   the previous
 *   RANK_FILE       rank 0 is halfway through its file                       the previous
 *   WRITTEN         every rank's file is complete in iter_N.tmp/             the previous
 *   ASIDE           an existing iter_N/ (a re-save) was renamed iter_N.old/  iter_N.old/ (*)
 *   RENAMED         iter_N.tmp/ became iter_N/                               the new iter_N/
 *   LATEST          `latest` says N (temp file + rename)                     the new iter_N/
 *   CLEANED         iter_N.old/ removed                                      the new iter_N/
 *
 * (*) the one window a plain "move aside, move in" has: `latest` may name N while iter_N/ is
 * missing. The reader closes it: ckpt_dir_iteration() falls back to iter_N.old/, which is the
 * complete earlier save of that same iteration. So at every step `latest` names something
 * complete. (These are process crashes; surviving power loss would also need fsync of the
 * directories, which Trident does not do.)
 *
 * Identity: every save has a random 64-bit id, drawn by rank 0 and shared by all its rank
 * files (metadata "save_id"); loading refuses rank files of different saves found together
 * (among the files it reads: a load stops opening files once it has every element it needs).
 * Two runs saving into one directory at once are refused by the lock, at start-up.
 *
 * Links: every remove, rename, replace and the lock go through src/core/nofollow.h, so a
 * symbolic link at `.lock` or `latest` (refused at start-up), or at iter_N, iter_N.tmp,
 * iter_N.old or one of their rank files (refused by rank 0 before the save of N changes
 * anything) is never followed: the target of such a link is never emptied or overwritten. SAVE
 * itself may be a link (the user named it); loading reads through links (reading loses nothing).
 *
 * Test hook: TRIDENT_TEST_CRASH_AT="STEP:k" (STEP one of tmp_dir, rank_file, written, aside,
 * renamed, latest, cleaned) makes rank 0 _exit(9) right after that step of the k-th save of
 * the process; TRIDENT_TEST_CRASH_IN_SAVE=k is the older spelling of "rank_file:k".
 */
#ifndef TRIDENT_CKPT_CHECKPOINT_DIR_H
#define TRIDENT_CKPT_CHECKPOINT_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    CKPT_STEP_TMP_DIR,
    CKPT_STEP_RANK_FILE,
    CKPT_STEP_WRITTEN,
    CKPT_STEP_ASIDE,
    CKPT_STEP_RENAMED,
    CKPT_STEP_LATEST,
    CKPT_STEP_CLEANED,
    CKPT_NSTEPS
} ckpt_save_step;

/* "tmp_dir", "rank_file", ... */
const char *ckpt_save_step_name(ckpt_save_step s);

/* SAVE/iter_0000100 plus suffix ("", ".tmp" or ".old"). */
void ckpt_dir_iter_path(char *out, size_t cap, const char *dir, int it, const char *suffix);
/* IDIR/rank_00003.tck */
void ckpt_dir_rank_path(char *out, size_t cap, const char *idir, int rank);

/* The iteration named by DIR/latest; dies with a clear message if there is none. */
int ckpt_dir_latest(const char *dir);
/* The directory holding the complete save of iteration it: iter_N/, or iter_N.old/ when a
 * re-save crashed between its two renames (above). Dies naming both when neither exists. */
void ckpt_dir_iteration(char *out, size_t cap, const char *dir, int it);

/* Rank 0, at start-up: makes DIR and takes its lock for the life of the process. Returns
 * false with a message when DIR cannot be made or written, or another run holds the lock. */
bool ckpt_dir_lock(const char *dir, char *err, size_t cap);

/* A save, as its steps. Every rank calls ckpt_save_begin (it counts saves for the test hook);
 * only rank 0 touches the directories: it removes a leftover iter_N.tmp/ (a crashed save's,
 * which may hold stale rank files) and makes a fresh one. */
void ckpt_save_begin(const char *dir, int it, int rank);
/* A fresh random save id (rank 0 draws it; every rank of the save writes the same). */
uint64_t ckpt_save_new_id(void);
/* Rank 0, after every rank's file is complete: the renames and `latest`, as in the table. */
void ckpt_save_publish(const char *dir, int it, int rank);
/* The test hook: exits if TRIDENT_TEST_CRASH_AT names this step of this save (rank 0). */
void ckpt_save_crash_point(ckpt_save_step s, int rank);

#endif /* TRIDENT_CKPT_CHECKPOINT_DIR_H */
