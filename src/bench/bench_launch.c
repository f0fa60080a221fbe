/* bench_launch.c — running this program again (plainly or under mpirun) and reading back what
 * the run wrote: metrics.jsonl throughput and a worker's "key value" file. See bench.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/bench/bench.h"
#include "src/core/check.h"

/* Open MPI on one box as tools/mpi_env.sh sets it (compiled in: //tools:mpi_env), plus one
 * deliberate difference for measuring: waiting ranks give their core away instead of spinning
 * (mpi_yield_when_idle). Existing settings win, all of them: the user may be measuring one. */
static void mpi_environment(void) {
#define MPI_ENV_VAR(name, value, keep_user) setenv(name, value, 0);
#include "tools/mpi_env.h"
#undef MPI_ENV_VAR
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
}

void bench_launch(bench_ctx *ctx, int np, const char *log_path, const char *fmt, ...) {
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char cmd[12288];
    if (np >= 1) {
        mpi_environment();
        const char *launch = ctx->launch ? ctx->launch : "";
        snprintf(cmd, sizeof cmd, "mpirun %s%s-np %d --oversubscribe '%s' %s > '%s' 2>&1", launch,
                 *launch ? " " : "", np, ctx->self, args, log_path);
        bench_command(ctx->report, "mpirun %s%s-np %d trident %s", launch, *launch ? " " : "", np,
                      args);
    } else {
        snprintf(cmd, sizeof cmd, "'%s' %s > '%s' 2>&1", ctx->self, args, log_path);
        bench_command(ctx->report, "trident %s", args);
    }
    fflush(stdout);
    int rc = system(cmd);
    if (rc != 0)
        die("bench: a measurement failed (exit status %d): %s — see %s", rc, cmd, log_path);
}

int bench_read_tokens_per_sec(const char *run, double *out, int cap) {
    char path[4200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    FILE *f = fopen(path, "r");
    if (!f) die("bench: cannot read %s: the run wrote no metrics", path);
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < cap) {
        const char *p = strstr(line, "\"tokens_per_sec\":");
        if (p) out[n++] = atof(p + strlen("\"tokens_per_sec\":"));
    }
    fclose(f);
    return n;
}

double bench_kv_get(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) die("bench: cannot read the worker's results %s", path);
    char line[1024];
    double v = NAN;
    bool found = false;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ') {
            v = atof(line + kl + 1);
            found = true;
        }
    }
    fclose(f);
    if (!found) die("bench: the worker's results %s have no '%s'", path, key);
    return v;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(const double *x, int n) {
    if (n <= 0) return NAN;
    double *c = mallocCheck((size_t)n * sizeof(double));
    memcpy(c, x, (size_t)n * sizeof(double));
    qsort(c, (size_t)n, sizeof(double), cmp_double);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

char *bench_path(const bench_ctx *ctx, char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", ctx->run_dir, name);
    return out;
}
