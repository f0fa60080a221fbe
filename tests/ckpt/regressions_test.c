/* regressions_test.c — replays the inputs kept in tests/ckpt/regressions/ through the readers
 * the fuzzers of tools/fuzz/ attack, the way each harness feeds them:
 *
 *   regressions/tensorfile/    tf_reader_open (+ every tensor read, the metadata scan)
 *   regressions/trace/         trace_file_read (+ every event and string)
 *   regressions/dataset/       byte 0 -> seq_len 1 + b % 64, byte 1 -> seed, rest -> the file;
 *                              dataset_open, samples, evaluation windows
 *   regressions/metrics/       the file as RUN_DIR/metrics.jsonl: run_metrics_read; and its
 *                              text as config.json: run_metrics_layout_label
 *
 * Each input runs in a child process: it must end normally — accepted, or refused with a
 * message (the dataset refuses by die(), exit status 1) — never by a signal. Under
 * `bazel test --config=asan` the sanitizers check every memory access too. Crashing inputs
 * found by tools/fuzz/run.sh go into these directories once fixed.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/ckpt/tensorfile.h"
#include "src/data/dataset.h"
#include "src/trace/run_metrics.h"
#include "src/trace/trace.h"
#include "tests/support/testing.h"

static const char *regressions_dir(void) {
    static char dir[4096];
    const char *srcdir = getenv("TEST_SRCDIR"), *ws = getenv("TEST_WORKSPACE");
    if (srcdir && ws) snprintf(dir, sizeof dir, "%s/%s/tests/ckpt/regressions", srcdir, ws);
    else snprintf(dir, sizeof dir, "tests/ckpt/regressions");
    return dir;
}

/* ---- what the child does with one input; its exit status says how it went -------------- */

enum { ACCEPTED = 0, REFUSED = 1, REFUSED_SILENTLY = 3 };

static int read_tensorfile(const char *path) {
    char err[512] = "";
    tf_reader *r = tf_reader_open(path, err, sizeof err);
    if (!r) return err[0] ? REFUSED : REFUSED_SILENTLY;
    long long v;
    (void)tf_meta_get_int(tf_reader_meta(r), "iteration", &v);
    volatile unsigned sum = 0; /* makes every byte's read happen */
    for (size_t k = 0; k < tf_reader_count(r); k++) {
        const tf_tensor *t = tf_reader_tensor(r, k);
        for (size_t b = 0; b < t->nbytes; b++) sum += ((const unsigned char *)t->data)[b];
    }
    tf_reader_close(r);
    return ACCEPTED;
}

static int read_trace(const char *path) {
    char err[512] = "";
    trace_file *f = trace_file_read(path, err, sizeof err);
    if (!f) return err[0] ? REFUSED : REFUSED_SILENTLY;
    volatile size_t sum = 0;
    for (size_t i = 0; i < trace_file_num_events(f); i++) {
        const trace_event *e = trace_file_event(f, i);
        sum += strlen(trace_file_string(f, e->op)) + strlen(trace_file_string(f, e->group));
    }
    trace_file_free(f);
    return ACCEPTED;
}

static int read_dataset(const char *path) {
    FILE *in = fopen(path, "rb");
    if (!in) return REFUSED_SILENTLY;
    unsigned char head[2];
    if (fread(head, 1, 2, in) != 2) {
        fclose(in);
        return ACCEPTED; /* the harness skips inputs shorter than 2 bytes */
    }
    char data[4200];
    snprintf(data, sizeof data, "%s/dataset_input.%d",
             getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", (int)getpid());
    FILE *out = fopen(data, "wb");
    int c;
    while ((c = fgetc(in)) != EOF) fputc(c, out);
    fclose(in);
    fclose(out);
    const int T = 1 + head[0] % 64;
    dataset *d = dataset_open(data, T, head[1]); /* die() on a short file: exit status 1 */
    int32_t tokens[65];
    for (uint64_t i = 0; i < 16; i++) {
        dataset_sample(d, i * 7919u, tokens);
        for (int k = 0; k <= T; k++)
            if (tokens[k] < 0 || tokens[k] > 255) return 4;
    }
    for (size_t k = 0; k < dataset_eval_windows(d) && k < 64; k++)
        dataset_eval_window(d, k, tokens);
    dataset_close(d);
    unlink(data);
    return ACCEPTED;
}

static int read_metrics(const char *path) {
    char dir[4200], cmd[9000], err[512] = "";
    snprintf(dir, sizeof dir, "%s/metrics_run.%d",
             getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", (int)getpid());
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s' '%s/metrics.jsonl'", dir, path, dir);
    if (system(cmd) != 0) return REFUSED_SILENTLY;
    run_metrics *m = run_metrics_read(dir, err, sizeof err);
    run_metrics_free(m);
    FILE *in = fopen(path, "rb");
    static char text[1 << 20], label[256];
    size_t n = in ? fread(text, 1, sizeof text - 1, in) : 0;
    if (in) fclose(in);
    text[n] = 0;
    if (run_metrics_layout_label(text, label, sizeof label) && !memchr(label, 0, sizeof label))
        return 4;
    return m ? ACCEPTED : err[0] ? REFUSED : REFUSED_SILENTLY;
}

/* Runs reader(path) in a child; fails the test unless it exits with ACCEPTED or REFUSED.
 * Returns that status. */
static int replay(int (*reader)(const char *), const char *path) {
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr)) _exit(5); /* refusals print their one line */
        _exit(reader(path));
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st)) fail_msg("'%s' crashed the reader (signal %d)", path, WTERMSIG(st));
    int code = WEXITSTATUS(st);
    if (code == REFUSED_SILENTLY) fail_msg("'%s' was refused without a message", path);
    if (code != ACCEPTED && code != REFUSED)
        fail_msg("'%s': the reader's child exited %d", path, code);
    return code;
}

/* Replays every file of regressions/<sub>; returns how many. */
static int replay_dir(const char *sub, int (*reader)(const char *), int *accepted) {
    char dir[4200], path[4600];
    snprintf(dir, sizeof dir, "%s/%s", regressions_dir(), sub);
    DIR *d = opendir(dir);
    if (!d) fail_msg("cannot open %s (is the corpus a data dependency?)", dir);
    struct dirent *e;
    int n = 0;
    *accepted = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        *accepted += replay(reader, path) == ACCEPTED;
        n++;
    }
    closedir(d);
    printf("  %-10s %d inputs replayed, %d accepted, the rest refused with a message\n", sub, n,
           *accepted);
    return n;
}

static void tensor_file_inputs_are_accepted_or_refused_never_crash(void **state) {
    (void)state;
    int accepted;
    assert_true(replay_dir("tensorfile", read_tensorfile, &accepted) >= 10);
    assert_true(accepted >= 1); /* the worked example of FORMAT.md at least */
    char path[4200];
    snprintf(path, sizeof path, "%s/tensorfile/worked_example.tck", regressions_dir());
    assert_int_equal(replay(read_tensorfile, path), ACCEPTED);
}

static void trace_inputs_are_accepted_or_refused_never_crash(void **state) {
    (void)state;
    int accepted;
    assert_true(replay_dir("trace", read_trace, &accepted) >= 3);
}

static void dataset_inputs_are_accepted_or_refused_never_crash(void **state) {
    (void)state;
    int accepted;
    assert_true(replay_dir("dataset", read_dataset, &accepted) >= 3);
    char path[4200];
    snprintf(path, sizeof path, "%s/dataset/one_byte_short", regressions_dir());
    assert_int_equal(replay(read_dataset, path), REFUSED);
    snprintf(path, sizeof path, "%s/dataset/exactly_seq_plus_one", regressions_dir());
    assert_int_equal(replay(read_dataset, path), ACCEPTED);
}

static void metrics_inputs_are_accepted_or_refused_never_crash(void **state) {
    (void)state;
    int accepted;
    assert_true(replay_dir("metrics", read_metrics, &accepted) >= 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tensor_file_inputs_are_accepted_or_refused_never_crash),
        cmocka_unit_test(trace_inputs_are_accepted_or_refused_never_crash),
        cmocka_unit_test(dataset_inputs_are_accepted_or_refused_never_crash),
        cmocka_unit_test(metrics_inputs_are_accepted_or_refused_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
