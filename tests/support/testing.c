/* testing.c — see testing.h. */
#include "tests/support/testing.h"

#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/core/clock.h"
#include "src/trace/trace.h"

void expect_close(const float *got, const float *want, size_t n, double atol, double rtol,
                  const char *what) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        double tol = atol + rtol * fabs(w);
        if (!(fabs(g - w) <= tol)) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: got %.9g want %.9g (diff %.3g, tol %.3g)\n", what, i, g,
                        w, fabs(g - w), tol);
            bad++;
        }
    }
    if (bad)
        fail_msg("%s: %zu of %zu elements differ beyond atol %.2g rtol %.2g", what, bad, n, atol,
                 rtol);
}

double max_rel_diff(const float *got, const float *want, size_t n) {
    double md = 0, mw = 1e-30;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (d > md || d != d) md = d;
        if (fabs(want[i]) > mw) mw = fabs(want[i]);
    }
    return md / mw;
}

void mpi_test_launch(int argc, char **argv, int np) {
    const char *inside = getenv("OMPI_COMM_WORLD_SIZE");
    if (inside) {
        const char *r = getenv("OMPI_COMM_WORLD_RANK");
        if (r && atoi(r) != 0) {
            /* Quiet ranks: cmocka's progress lines come from rank 0 only; errors still show. */
            if (!freopen("/dev/null", "w", stdout)) perror("freopen");
        }
        return;
    }
    setenv("CMOCKA_TEST_ABORT", "1", 1);
    test_mpi_setenv();
    char npbuf[16];
    snprintf(npbuf, sizeof npbuf, "%d", np);
    char **args = calloc((size_t)argc + 12, sizeof *args);
    int k = 0;
    args[k++] = "mpirun";
    args[k++] = "-np";
    args[k++] = npbuf;
    args[k++] = "--oversubscribe";
    args[k++] = "--timeout";
    args[k++] = "600";
    for (int i = 0; i < argc; i++) args[k++] = argv[i];
    args[k] = NULL;
    fflush(stdout);
    execvp("mpirun", args);
    perror("execvp mpirun");
    exit(127);
}

/* ---- the Open MPI environment: tools/mpi_env.sh, through its generated header ---------------- */

static const struct {
    const char *name, *value;
    int keep_user; /* export NAME=${NAME:-VALUE}: the caller's value wins */
} k_mpi_env[] = {
#define MPI_ENV_VAR(name, value, keep_user) {name, value, keep_user},
#include "tools/mpi_env.h"
#undef MPI_ENV_VAR
};
enum { N_MPI_ENV = sizeof k_mpi_env / sizeof k_mpi_env[0] };

void test_mpi_setenv(void) {
    for (int i = 0; i < N_MPI_ENV; i++)
        setenv(k_mpi_env[i].name, k_mpi_env[i].value, !k_mpi_env[i].keep_user);
}

const char *test_mpirun_prefix(char *buf, size_t cap, int np, const char *extra_env) {
    size_t k = (size_t)snprintf(buf, cap, "env");
    for (int i = 0; i < N_MPI_ENV && k < cap; i++) {
        const char *user = k_mpi_env[i].keep_user ? getenv(k_mpi_env[i].name) : NULL;
        k += (size_t)snprintf(buf + k, cap - k, " %s='%s'", k_mpi_env[i].name,
                              user ? user : k_mpi_env[i].value);
    }
    if (k < cap)
        k += (size_t)snprintf(buf + k, cap - k, " %s%smpirun -np %d --oversubscribe", extra_env,
                              extra_env[0] ? " " : "", np);
    if (k >= cap) fail_msg("test_mpirun_prefix: %zu bytes are not enough", cap);
    return buf;
}

int test_run_job(int np, const char *extra_env, const char *program, const char *args, char *out,
                 size_t cap, double *secs) {
    char prefix[2048], cmd[8192];
    test_mpirun_prefix(prefix, sizeof prefix, np, extra_env);
    snprintf(cmd, sizeof cmd, "%s --timeout 60 %s %s", prefix, program, args);
    double t0 = time_now();
    int st = run_capture(cmd, out, cap);
    if (secs) *secs = time_now() - t0;
    return st;
}

const char *test_runfile(const char *relpath) {
    static char path[4096];
    const char *srcdir = getenv("TEST_SRCDIR"), *ws = getenv("TEST_WORKSPACE");
    if (srcdir && ws) {
        snprintf(path, sizeof path, "%s/%s/%s", srcdir, ws, relpath);
        if (access(path, F_OK) == 0) return path;
    }
    snprintf(path, sizeof path, "bazel-bin/%s", relpath);
    if (access(path, F_OK) == 0) return path;
    fail_msg("cannot find %s (is it a data dependency of this test?)", relpath);
    return NULL;
}

const char *test_trident_path(void) {
    static char path[4096];
    const char *srcdir = getenv("TEST_SRCDIR");
    const char *ws = getenv("TEST_WORKSPACE");
    if (srcdir && ws) {
        snprintf(path, sizeof path, "%s/%s/trident", srcdir, ws);
        if (access(path, X_OK) == 0) return path;
    }
    if (access("./trident", X_OK) == 0) return "./trident";
    if (access("bazel-bin/trident", X_OK) == 0) return "bazel-bin/trident";
    fail_msg("cannot find the trident binary (is //:trident a data dependency of this test?)");
    return NULL;
}

int run_capture(const char *cmd, char *out, size_t cap) {
    char full[8192];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t len = 0;
    if (cap) out[0] = 0;
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, p)) > 0) {
        if (cap && len + 1 < cap) {
            size_t take = got < cap - 1 - len ? got : cap - 1 - len;
            memcpy(out + len, buf, take);
            len += take;
            out[len] = 0;
        }
    }
    int st = pclose(p);
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

const char *test_tmpdir(const char *name) {
    static char dir[4096];
    const char *base = getenv("TEST_TMPDIR");
    if (!base) base = "/tmp";
    snprintf(dir, sizeof dir, "%s/%s.%d", base, name, (int)getpid());
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(cmd) != 0) fail_msg("cannot make %s", dir);
    return dir;
}

int read_metric_losses(const char *run_dir, double *loss, int cap) {
    char path[4200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < cap) {
        const char *p = strstr(line, "\"loss\":");
        if (p) loss[n++] = atof(p + 7);
    }
    fclose(f);
    return n;
}

int run_in_child(void (*fn)(const void *), const void *arg, char *out, size_t cap) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        fn(arg);
        _exit(0);
    }
    close(fds[1]);
    /* Read to the end even past cap (the rest is dropped): a child that writes more than out
     * holds — a sanitizer report, say — must not block on a full pipe while we wait for it. */
    size_t len = 0;
    ssize_t k;
    char drop[4096];
    while ((k = len + 1 < cap ? read(fds[0], out + len, cap - 1 - len)
                              : read(fds[0], drop, sizeof drop)) > 0)
        if (len + 1 < cap) len += (size_t)k;
    out[len] = 0;
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void assert_run_trace_causal(const char *run_dir) {
    char err[4096];
    trace_run *r = trace_run_read(run_dir, err, sizeof err);
    if (!r) fail_msg("%s", err);
    bool causal = trace_run_check_causality(r, err, sizeof err);
    int p2p = r->unmatched, coll = r->coll_unmatched;
    trace_run_free(r);
    if (!causal) fail_msg("%s", err);
    if (p2p || coll)
        fail_msg("trace of '%s': %d sends/receives and %d collectives found no partner", run_dir,
                 p2p, coll);
}

int assert_run_trace_spans_in_order(const char *run_dir) {
    char err[4096];
    trace_run *r = trace_run_read(run_dir, err, sizeof err);
    if (!r) fail_msg("%s", err);
    const double slack = 50e-6;
    int spans = 0;
    for (int k = 0; k < r->nranks; k++) {
        const trace_file *f = r->ranks[k];
        const trace_event *step = NULL, *prev = NULL;
        for (size_t i = 0; i < trace_file_num_events(f); i++) {
            const trace_event *e = trace_file_event(f, i);
            if (e->kind == TRACE_STEP) step = e;
            if (e->kind == TRACE_STEP || e->kind == TRACE_MEMORY || e->kind == TRACE_SEND ||
                e->kind == TRACE_RECV || e->kind == TRACE_COLLECTIVE || (e->flags & TRACE_OPEN))
                continue;
            const char *kind = trace_kind_name(e->kind);
            if (e->t_end < e->t_start) fail_msg("rank %d: %s %zu ends before it began", k, kind, i);
            if (prev && e->t_start < prev->t_end - slack)
                fail_msg("rank %d: %s %zu begins %.1f us before the %s before it ended", k, kind, i,
                         1e6 * (prev->t_end - e->t_start), trace_kind_name(prev->kind));
            if (e->kind != TRACE_EVAL &&
                (!step || e->t_start < step->t_start || e->t_end > step->t_end))
                fail_msg("rank %d: %s %zu (step %d) lies outside its step", k, kind, i, e->step);
            prev = e, spans++;
        }
    }
    trace_run_free(r);
    return spans;
}

static int causal_under(const char *root, int depth) {
    char path[4400];
    struct stat st;
    snprintf(path, sizeof path, "%s/trace/rank0.trace", root);
    if (stat(path, &st) == 0) {
        assert_run_trace_causal(root);
        return 1;
    }
    DIR *d = depth < 4 ? opendir(root) : NULL;
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", root, de->d_name);
        if (strlen(path) < 4000 && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            n += causal_under(path, depth + 1);
    }
    closedir(d);
    return n;
}

int assert_run_traces_causal_under(const char *root) { return causal_under(root, 0); }

int test_pdf_pages(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("%s was not written", path);
    static char buf[1 << 22];
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    int pages = 0;
    const char *key = "/Type /Page";
    const size_t k = strlen(key);
    for (size_t i = 0; i + k < n; i++)
        if (memcmp(buf + i, key, k) == 0 && buf[i + k] != 's') pages++;
    return pages;
}
