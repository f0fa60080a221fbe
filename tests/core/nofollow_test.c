/* nofollow_test.c — removing, renaming, creating and locking never go through a symbolic link
 * Trident did not make (src/core/nofollow.h): a link in each dangerous place of a checkpoint
 * directory is refused with the link named, its target keeps every byte, and plain files and
 * directories still work. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/core/atomic_file.h"
#include "src/core/nofollow.h"
#include "tests/support/testing.h"

static char g_root[4096];

/* ROOT/name */
static const char *at(const char *name) {
    static char path[4][4400];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", g_root, name);
    return path[k];
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The whole text of path (a short file), "" when it cannot be read. */
static const char *text_of(const char *path) {
    static char buf[256];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    return buf;
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* A fresh ROOT with the victims: victim/ holding two files, victim.txt, a FIFO. */
static int fresh(void **state) {
    (void)state;
    snprintf(g_root, sizeof g_root, "%s", test_tmpdir("nofollow"));
    assert_int_equal(mkdir(at("victim"), 0755), 0);
    write_text(at("victim/thesis.txt"), "precious");
    write_text(at("victim/rank_00000.tck"), "weights");
    write_text(at("victim.txt"), "precious");
    assert_int_equal(mkfifo(at("victim.fifo"), 0644), 0);
    return 0;
}

static void assert_victims_whole(void) {
    assert_string_equal(text_of(at("victim/thesis.txt")), "precious");
    assert_string_equal(text_of(at("victim/rank_00000.tck")), "weights");
    assert_string_equal(text_of(at("victim.txt")), "precious");
}

static void assert_refused_as_link(const char *why, const char *path) {
    char want[4600];
    snprintf(want, sizeof want, "'%s' is a symbolic link (to '", path);
    if (!strstr(why, want)) fail_msg("expected \"%s\" in \"%s\"", want, why);
    assert_non_null(strstr(why, "Trident does not remove, rename or overwrite through links"));
}

static void a_link_as_the_directory_to_remove_is_refused_and_its_target_kept(void **state) {
    (void)state;
    char why[9000];
    assert_int_equal(symlink(at("victim"), at("iter_0000001")), 0);
    assert_false(nofollow_dir_check(at("iter_0000001"), why, sizeof why));
    assert_refused_as_link(why, at("iter_0000001"));
    assert_false(nofollow_remove_dir(at("iter_0000001"), why, sizeof why));
    assert_refused_as_link(why, at("iter_0000001"));
    assert_false(nofollow_is_dir(at("iter_0000001")));
    assert_true(exists(at("iter_0000001"))); /* the link itself stays too */
    assert_victims_whole();
}

static void a_leftover_tmp_or_old_that_is_a_link_is_neither_removed_nor_renamed(void **state) {
    (void)state;
    char why[9000];
    assert_int_equal(symlink(at("victim"), at("iter_0000001.tmp")), 0);
    assert_int_equal(symlink(at("victim"), at("iter_0000001.old")), 0);
    assert_int_equal(mkdir(at("iter_0000001"), 0755), 0);
    assert_false(nofollow_remove_dir(at("iter_0000001.tmp"), why, sizeof why));
    assert_refused_as_link(why, at("iter_0000001.tmp"));
    /* moving the real iteration aside onto the .old link, or the .tmp link into place */
    assert_false(nofollow_rename(at("iter_0000001"), at("iter_0000001.old"), why, sizeof why));
    assert_refused_as_link(why, at("iter_0000001.old"));
    assert_false(nofollow_rename(at("iter_0000001.tmp"), at("iter_0000002"), why, sizeof why));
    assert_refused_as_link(why, at("iter_0000001.tmp"));
    assert_true(nofollow_is_dir(at("iter_0000001")));
    assert_false(exists(at("iter_0000002")));
    assert_victims_whole();
}

static void a_link_inside_a_directory_refuses_the_whole_removal(void **state) {
    (void)state;
    char why[9000];
    assert_int_equal(mkdir(at("iter_0000001.old"), 0755), 0);
    write_text(at("iter_0000001.old/rank_00001.tck"), "mine");
    assert_int_equal(symlink(at("victim.txt"), at("iter_0000001.old/rank_00000.tck")), 0);
    assert_false(nofollow_dir_check(at("iter_0000001.old"), why, sizeof why));
    assert_false(nofollow_remove_dir(at("iter_0000001.old"), why, sizeof why));
    assert_refused_as_link(why, at("iter_0000001.old/rank_00000.tck"));
    /* nothing was removed: the look comes before the first unlink */
    assert_string_equal(text_of(at("iter_0000001.old/rank_00001.tck")), "mine");
    assert_true(exists(at("iter_0000001.old/rank_00000.tck")));
    /* a directory inside is refused too: an iteration directory holds files only */
    assert_int_equal(mkdir(at("iter_0000002"), 0755), 0);
    assert_int_equal(mkdir(at("iter_0000002/sub"), 0755), 0);
    assert_false(nofollow_remove_dir(at("iter_0000002"), why, sizeof why));
    assert_non_null(strstr(why, "is a directory"));
    assert_victims_whole();
}

static void a_lock_that_is_a_link_is_neither_opened_nor_truncated(void **state) {
    (void)state;
    char why[9000];
    static const char *const targets[3] = {"victim.txt", "victim", "victim.fifo"};
    for (int k = 0; k < 3; k++) { /* a file, a directory, a FIFO (must not block) */
        unlink(at(".lock"));
        assert_int_equal(symlink(at(targets[k]), at(".lock")), 0);
        assert_int_equal(nofollow_open_file(at(".lock"), false, why, sizeof why), -1);
        assert_refused_as_link(why, at(".lock"));
        assert_int_equal(nofollow_open_file(at(".lock"), true, why, sizeof why), -1);
    }
    assert_victims_whole();
}

/* atomic_file over `latest` that is a link: the program dies, naming it (run in a child). */
static void write_latest(const void *arg) {
    atomic_file af;
    fprintf(atomic_file_open(&af, (const char *)arg), "7\n");
    atomic_file_commit(&af);
}

/* The same, with a link planted first where this process's temporary will be. */
static void plant_then_write(const void *arg) {
    char tmp[4600];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", (const char *)arg, (int)getpid());
    if (symlink(at("victim.txt"), tmp) != 0) _exit(3);
    write_latest(arg);
}

static void latest_as_a_link_is_not_replaced(void **state) {
    (void)state;
    char why[9000], out[9000];
    assert_int_equal(symlink(at("victim.txt"), at("latest")), 0);
    assert_false(nofollow_check(at("latest"), why, sizeof why));
    assert_refused_as_link(why, at("latest"));
    assert_int_equal(run_in_child(write_latest, at("latest"), out, sizeof out), 1);
    assert_refused_as_link(out, at("latest"));
    char buf[16] = "";
    assert_true(readlink(at("latest"), buf, sizeof buf - 1) > 0); /* still the link */
    /* a link planted at the temporary's name is refused too, and not written through */
    assert_int_equal(run_in_child(plant_then_write, at("latest2"), out, sizeof out), 1);
    assert_non_null(strstr(out, ".tmp."));
    assert_non_null(strstr(out, "' is a symbolic link (to '"));
    assert_false(exists(at("latest2")));
    assert_victims_whole();
}

static void a_dangling_link_is_refused_and_its_target_never_created(void **state) {
    (void)state;
    char why[9000];
    assert_int_equal(symlink(at("nowhere"), at("dangling")), 0);
    assert_false(nofollow_check(at("dangling"), why, sizeof why));
    assert_refused_as_link(why, at("dangling"));
    assert_int_equal(nofollow_open_file(at("dangling"), false, why, sizeof why), -1);
    assert_refused_as_link(why, at("dangling"));
    assert_false(nofollow_make_dir(at("dangling"), why, sizeof why));
    assert_refused_as_link(why, at("dangling"));
    assert_false(nofollow_remove_dir(at("dangling"), why, sizeof why));
    assert_refused_as_link(why, at("dangling"));
    assert_false(exists(at("nowhere")));
}

static void plain_files_and_directories_still_work(void **state) {
    (void)state;
    char why[9000];
    assert_true(nofollow_make_dir(at("iter_0000001.tmp"), why, sizeof why));
    assert_true(nofollow_make_dir(at("iter_0000001.tmp"), why, sizeof why)); /* already there */
    assert_true(nofollow_is_dir(at("iter_0000001.tmp")));
    write_text(at("iter_0000001.tmp/rank_00000.tck"), "new");
    assert_true(nofollow_dir_check(at("iter_0000001.tmp"), why, sizeof why));
    assert_true(nofollow_rename(at("iter_0000001.tmp"), at("iter_0000001"), why, sizeof why));
    assert_string_equal(text_of(at("iter_0000001/rank_00000.tck")), "new");
    assert_true(nofollow_remove_dir(at("iter_0000001"), why, sizeof why));
    assert_false(exists(at("iter_0000001")));
    assert_true(nofollow_remove_dir(at("iter_0000001"), why, sizeof why)); /* missing: done */
    assert_true(nofollow_dir_check(at("missing"), why, sizeof why));
    /* the lock: created, kept, then truncated on demand */
    int fd = nofollow_open_file(at(".lock"), false, why, sizeof why);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "pid 1\n", 6), 6);
    close(fd);
    fd = nofollow_open_file(at(".lock"), false, why, sizeof why);
    assert_true(fd >= 0);
    close(fd);
    assert_string_equal(text_of(at(".lock")), "pid 1\n");
    fd = nofollow_open_file(at(".lock"), true, why, sizeof why);
    assert_true(fd >= 0);
    close(fd);
    assert_string_equal(text_of(at(".lock")), "");
    /* not a link, but not a regular file: refused without blocking */
    assert_int_equal(nofollow_open_file(at("victim.fifo"), false, why, sizeof why), -1);
    assert_non_null(strstr(why, "is not a regular file"));
    assert_false(nofollow_make_dir(at("victim.txt"), why, sizeof why));
    assert_non_null(strstr(why, "exists and is not a directory"));
    /* a whole-file replacement through atomic_file */
    write_latest(at("latest"));
    assert_string_equal(text_of(at("latest")), "7\n");
    assert_victims_whole();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(a_link_as_the_directory_to_remove_is_refused_and_its_target_kept,
                               fresh),
        cmocka_unit_test_setup(a_leftover_tmp_or_old_that_is_a_link_is_neither_removed_nor_renamed,
                               fresh),
        cmocka_unit_test_setup(a_link_inside_a_directory_refuses_the_whole_removal, fresh),
        cmocka_unit_test_setup(a_lock_that_is_a_link_is_neither_opened_nor_truncated, fresh),
        cmocka_unit_test_setup(latest_as_a_link_is_not_replaced, fresh),
        cmocka_unit_test_setup(a_dangling_link_is_refused_and_its_target_never_created, fresh),
        cmocka_unit_test_setup(plain_files_and_directories_still_work, fresh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
