/* checkpoint_dir.c — see checkpoint_dir.h. */
#include "src/ckpt/checkpoint_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/file_read.h"
#include "src/core/nofollow.h"

static const char *k_step_names[CKPT_NSTEPS] = {"tmp_dir", "rank_file", "written", "aside",
                                                "renamed", "latest",    "cleaned"};

const char *ckpt_save_step_name(ckpt_save_step s) {
    CHECK(s >= 0 && s < CKPT_NSTEPS, "a save step");
    return k_step_names[s];
}

void ckpt_dir_iter_path(char *out, size_t cap, const char *dir, int it, const char *suffix) {
    snprintf(out, cap, "%s/iter_%07d%s", dir, it, suffix);
}

void ckpt_dir_rank_path(char *out, size_t cap, const char *idir, int rank) {
    snprintf(out, cap, "%s/rank_%05d.tck", idir, rank);
}

/* Dies with "--save DIR: <why>" when a step on the directory was refused (src/core/nofollow.h). */
static void must(bool ok, const char *dir, const char *why) {
    if (!ok) die("--save %s: %s", dir, why);
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int ckpt_dir_latest(const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/latest", dir);
    /* Read bounded (src/core/file_read.h): a FIFO or a device planted as `latest` can neither
     * block the open nor be read; a regular file of at most a line's worth. */
    char why[256];
    size_t got;
    unsigned long long size;
    char *text = (char *)file_read_bounded(path, 63, &got, &size, why, sizeof why);
    if (!text && access(path, F_OK) != 0)
        die("--load %s: no checkpoint there ('%s' is missing: %s)", dir, path, strerror(errno));
    if (!text) die("--load %s: '%s' %s", dir, path, why);
    char *end;
    errno = 0;
    long it = got > 0 ? strtol(text, &end, 10) : -1;
    const bool ok = got > 0 && !errno && end != text && (!*end || *end == '\n') && it >= 0 &&
                    it <= 99999999;
    free(text);
    if (!ok)
        die("--load %s: '%s' does not hold an iteration number (expected a line like \"100\")", dir,
            path);
    return (int)it;
}

void ckpt_dir_iteration(char *out, size_t cap, const char *dir, int it) {
    ckpt_dir_iter_path(out, cap, dir, it, "");
    if (is_dir(out)) return;
    char old[4300];
    ckpt_dir_iter_path(old, sizeof old, dir, it, ".old");
    if (is_dir(old)) { /* a re-save of `it` crashed between its two renames */
        snprintf(out, cap, "%s", old);
        return;
    }
    die("--load %s: `latest` says iteration %d, but neither '%s' nor '%s' is a directory", dir, it,
        out, old);
}

bool ckpt_dir_lock(const char *dir, char *err, size_t cap) {
    char why[4400];
    if (!make_dirs_try(dir, why, sizeof why)) {
        snprintf(err, cap, "--save %s: %s", dir, why);
        return false;
    }
    char path[4200], latest[4200];
    snprintf(path, sizeof path, "%s/.lock", dir);
    snprintf(latest, sizeof latest, "%s/latest", dir);
    /* never through a link (nofollow.h): a `.lock` or `latest` that is one is refused now */
    int fd = nofollow_check(latest, why, sizeof why)
                 ? nofollow_open_file(path, false, why, sizeof why)
                 : -1;
    if (fd < 0) {
        snprintf(err, cap, "--save %s: %s", dir, why);
        return false;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char who[64] = "";
        ssize_t n = pread(fd, who, sizeof who - 1, 0);
        who[n > 0 ? n : 0] = '\0';
        who[strcspn(who, "\n")] = '\0';
        snprintf(
            err, cap,
            "--save %s: another run is saving into this directory (its lock '%s' is held%s%s): "
            "two runs must not save into one directory",
            dir, path, who[0] ? " by " : "", who);
        close(fd);
        return false;
    }
    char me[64];
    int len = snprintf(me, sizeof me, "pid %ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, me, (size_t)len, 0) != len) {
        snprintf(err, cap, "--save %s: cannot write into the checkpoint directory ('%s': %s)", dir,
                 path, strerror(errno));
        close(fd);
        return false;
    }
    return true; /* fd stays open: the lock lives as long as the process */
}

/* ---- the save's steps ------------------------------------------------------------------- */

static int g_saves; /* saves begun by this process, for the test hook */

void ckpt_save_crash_point(ckpt_save_step s, int rank) {
    if (rank != 0) return;
    const char *at = getenv("TRIDENT_TEST_CRASH_AT");
    const char *old = getenv("TRIDENT_TEST_CRASH_IN_SAVE");
    char want[64] = "";
    if (at) snprintf(want, sizeof want, "%s", at);
    else if (old) snprintf(want, sizeof want, "rank_file:%s", old);
    else return;
    char *colon = strchr(want, ':');
    if (!colon) return;
    *colon = '\0';
    if (strcmp(want, ckpt_save_step_name(s)) != 0 || atoi(colon + 1) != g_saves) return;
    fprintf(stderr, "trident: TRIDENT_TEST_CRASH_AT: rank 0 stops after step %s of save %d\n", want,
            g_saves);
    fflush(stderr);
    _exit(9);
}

uint64_t ckpt_save_new_id(void) {
    uint64_t id = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &id, sizeof id) != (ssize_t)sizeof id) id = 0;
        close(fd);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    id ^= (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec ^
          ((uint64_t)getpid() << 32);
    return id ? id : 1;
}

/* Rank 0, before a save changes anything: every name it will remove, rename or replace is
 * not a symbolic link, and the iteration directories hold files only (nofollow.h). */
static void save_refuse_links(const char *dir, int it) {
    char path[4300], why[9000];
    snprintf(path, sizeof path, "%s/latest", dir);
    must(nofollow_check(path, why, sizeof why), dir, why);
    static const char *const suffix[3] = {".tmp", "", ".old"};
    for (int k = 0; k < 3; k++) {
        ckpt_dir_iter_path(path, sizeof path, dir, it, suffix[k]);
        must(nofollow_dir_check(path, why, sizeof why), dir, why);
    }
}

void ckpt_save_begin(const char *dir, int it, int rank) {
    g_saves++;
    if (rank != 0) return;
    save_refuse_links(dir, it);
    char tmpdir[4200], why[9000];
    ckpt_dir_iter_path(tmpdir, sizeof tmpdir, dir, it, ".tmp");
    /* left over from a crashed save: may hold stale ranks */
    must(nofollow_remove_dir(tmpdir, why, sizeof why), dir, why);
    /* SAVE itself as mkdir -p (the user named it, links allowed); iter_N.tmp/ never a link */
    must(make_dirs_try(dir, why, sizeof why) && nofollow_make_dir(tmpdir, why, sizeof why), dir,
         why);
    ckpt_save_crash_point(CKPT_STEP_TMP_DIR, rank);
}

void ckpt_save_publish(const char *dir, int it, int rank) {
    if (rank != 0) return;
    char tmpdir[4200], findir[4200], old[4300], path[4200], why[9000];
    ckpt_dir_iter_path(tmpdir, sizeof tmpdir, dir, it, ".tmp");
    ckpt_dir_iter_path(findir, sizeof findir, dir, it, "");
    ckpt_dir_iter_path(old, sizeof old, dir, it, ".old");
    ckpt_save_crash_point(CKPT_STEP_WRITTEN, rank);
    /* every step refuses a link (nofollow.h): one planted since ckpt_save_begin's look */
    must(nofollow_check(findir, why, sizeof why), dir, why);
    if (nofollow_is_dir(findir)) { /* an earlier save of the same iteration: move it aside */
        must(nofollow_remove_dir(old, why, sizeof why), dir, why);
        must(nofollow_rename(findir, old, why, sizeof why), dir, why);
        ckpt_save_crash_point(CKPT_STEP_ASIDE, rank);
    }
    must(nofollow_rename(tmpdir, findir, why, sizeof why), dir, why);
    ckpt_save_crash_point(CKPT_STEP_RENAMED, rank);
    snprintf(path, sizeof path, "%s/latest", dir);
    atomic_file af;
    FILE *f = atomic_file_open(&af, path);
    fprintf(f, "%d\n", it);
    atomic_file_commit(&af);
    ckpt_save_crash_point(CKPT_STEP_LATEST, rank);
    /* also a leftover of a crash inside the window */
    must(nofollow_remove_dir(old, why, sizeof why), dir, why);
    ckpt_save_crash_point(CKPT_STEP_CLEANED, rank);
}
