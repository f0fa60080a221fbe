/* gemm_rate.c — see gemm_rate.h. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "src/device/gemm_rate.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/ops.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/clock.h"

enum { KEY_MAX = 256, CACHE_MAX_LINES = 256 };

double gemm_rate_measure(size_t N, size_t C, size_t OC, double seconds) {
    float *inp = mallocCheck(N * C * sizeof(float));  /* (N, C) */
    float *w = mallocCheck(OC * C * sizeof(float));   /* (OC, C) */
    float *out = mallocCheck(N * OC * sizeof(float)); /* (N, OC) */
    for (size_t i = 0; i < N * C; i++) inp[i] = (float)((i * 7) % 13) * 0.01f;
    for (size_t i = 0; i < OC * C; i++) w[i] = (float)((i * 5) % 11) * 0.01f;
    matmul_forward(out, inp, w, NULL, N, C, OC); /* warm-up: threads started, pages touched */
    /* The best of GEMM_RATE_WINDOWS short windows: on a shared machine a window in which
     * another process held the core measures the neighbour, not the machine. */
    const double flops = 2.0 * (double)N * (double)C * (double)OC;
    double best = 0;
    for (int k = 0; k < GEMM_RATE_WINDOWS; k++) {
        long reps = 0;
        const double t0 = time_now();
        double t = t0;
        while (t - t0 < seconds / GEMM_RATE_WINDOWS || reps < 2) {
            matmul_forward(out, inp, w, NULL, N, C, OC);
            reps++;
            t = time_now();
        }
        const double rate = flops * (double)reps / (t - t0);
        if (rate > best) best = rate;
    }
    free(inp);
    free(w);
    free(out);
    return best;
}

int gemm_rate_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

double gemm_rate_job_peak(const gemm_rate *r, int world, int cores) {
    int at_once = cores / (r->threads > 0 ? r->threads : 1);
    if (at_once < 1) at_once = 1;
    if (at_once > world) at_once = world;
    return r->flops_per_s * at_once;
}

bool gemm_rate_cache_path(char *buf, size_t cap) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(buf, cap, "%s/trident/gemm-rate", xdg);
    else if (home && *home) snprintf(buf, cap, "%s/.cache/trident/gemm-rate", home);
    else return false;
    return true;
}

/* "model name" of /proc/cpuinfo ("unknown cpu" elsewhere); '|' and newlines are kept out of
 * the key. */
void gemm_rate_cpu_model(char *buf, size_t cap) {
    snprintf(buf, cap, "unknown cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *p = strchr(line, ':');
        if (!p) continue;
        p++;
        while (*p == ' ' || *p == '\t') p++;
        snprintf(buf, cap, "%s", p);
        break;
    }
    fclose(f);
    for (char *q = buf; *q; q++)
        if (*q == '\n' || *q == '|' || *q == '\t') *q = ' ';
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == ' ') buf[--n] = 0;
}

static void cache_key(char *buf, size_t cap, int threads, size_t N, size_t C, size_t OC) {
    char cpu[160];
    gemm_rate_cpu_model(cpu, sizeof cpu);
    snprintf(buf, cap, "%s | threads %d | %zux%zux%zu", cpu, threads, N, C, OC);
}

/* The cached rate of `key`, or 0. Lines are "<key>\t<FLOP/s>"; anything else is ignored. */
static double cache_lookup(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[KEY_MAX + 64];
    double rate = 0;
    const size_t kl = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) != 0 || line[kl] != '\t') continue;
        char *end;
        double v = strtod(line + kl + 1, &end);
        if (end != line + kl + 1 && isfinite(v) && v > 0) rate = v;
    }
    fclose(f);
    return rate;
}

/* mkdir of the cache directory and its parent; false when it cannot be made. */
static bool make_cache_dir(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return false;
    *slash = 0;
    char *parent_end = strrchr(dir, '/');
    if (parent_end) {
        *parent_end = 0;
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return false;
        *parent_end = '/';
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return false;
    return access(dir, W_OK) == 0;
}

/* The cache with `key` set to `rate`, written atomically; silently skipped when the cache
 * directory cannot be made (a read-only home must not stop a run). */
static void cache_store(const char *path, const char *key, double rate) {
    if (!make_cache_dir(path)) return;
    char *lines[CACHE_MAX_LINES];
    int n = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        char line[KEY_MAX + 64];
        const size_t kl = strlen(key);
        while (n < CACHE_MAX_LINES - 1 && fgets(line, sizeof line, f)) {
            if (strncmp(line, key, kl) == 0 && line[kl] == '\t') continue;
            if (!strchr(line, '\t')) continue;
            lines[n++] = strdup(line);
        }
        fclose(f);
    }
    atomic_file af;
    FILE *w = atomic_file_open(&af, path);
    for (int i = 0; i < n; i++) {
        fputs(lines[i], w);
        free(lines[i]);
    }
    fprintf(w, "%s\t%.6g\n", key, rate);
    atomic_file_commit(&af);
}

gemm_rate gemm_rate_get(int threads, size_t N, size_t C, size_t OC) {
    CHECK(threads >= 1 && N > 0 && C > 0 && OC > 0, "gemm_rate_get: a product of positive shape");
    gemm_rate r = {.threads = threads, .N = N, .C = C, .OC = OC};
    const char *env = getenv("TRIDENT_GEMM_RATE");
    if (env && *env) {
        char *end;
        double v = strtod(env, &end);
        if (end == env || *end || !isfinite(v) || v <= 0)
            die("TRIDENT_GEMM_RATE='%s' is not a rate: give the machine's sgemm FLOP/s per process "
                "as "
                "a positive number (e.g. 2.4e10), or unset it to measure",
                env);
        r.flops_per_s = v;
        r.source = "TRIDENT_GEMM_RATE";
        return r;
    }
    char key[KEY_MAX], path[4096];
    cache_key(key, sizeof key, threads, N, C, OC);
    const bool cached = gemm_rate_cache_path(path, sizeof path);
    if (cached && (r.flops_per_s = cache_lookup(path, key)) > 0) {
        r.source = "cached";
        return r;
    }
    ops_set_threads(threads);
    r.flops_per_s = gemm_rate_measure(N, C, OC, GEMM_RATE_SECONDS);
    r.source = "measured";
    if (cached) cache_store(path, key, r.flops_per_s);
    return r;
}
