/* hosts.c — which machine each rank runs on (see hosts.h). */
#include "src/runtime/hosts.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/runtime/dist.h"

static struct {
    int world, nhosts;
    char (*name)[HOSTS_NAME_MAX]; /* (world) each rank's host name */
    int *host;                    /* (world) each rank's host index */
    int *first;                   /* (nhosts) each host's first rank */
} g_hosts;

/* This process's host name, or the k-th of TRIDENT_TEST_HOSTS. */
static void own_name(int rank, char out[HOSTS_NAME_MAX]) {
    memset(out, 0, HOSTS_NAME_MAX);
    const char *test = getenv("TRIDENT_TEST_HOSTS");
    if (test && *test) {
        const char *p = test;
        for (int k = 0; k < rank && p; k++) p = strchr(p, ','), p = p ? p + 1 : NULL;
        if (!p)
            die("TRIDENT_TEST_HOSTS='%s' names no host for rank %d (a test-only switch)", test,
                rank);
        const size_t n = strcspn(p, ",");
        memcpy(out, p, n < HOSTS_NAME_MAX - 1 ? n : HOSTS_NAME_MAX - 1);
        return;
    }
    if (gethostname(out, HOSTS_NAME_MAX - 1) != 0 || !out[0]) snprintf(out, HOSTS_NAME_MAX, "?");
    out[HOSTS_NAME_MAX - 1] = 0;
}

void hosts_init(void) {
    hosts_free();
    const int world = dist_world_size(), rank = dist_rank();
    g_hosts.world = world;
    g_hosts.name = callocCheck((size_t)world, sizeof *g_hosts.name);
    g_hosts.host = callocCheck((size_t)world, sizeof *g_hosts.host);
    g_hosts.first = callocCheck((size_t)world, sizeof *g_hosts.first);
    char mine[HOSTS_NAME_MAX];
    own_name(rank, mine);
    if (dist_is_mpi())
        MPI_Allgather(mine, HOSTS_NAME_MAX, MPI_CHAR, g_hosts.name, HOSTS_NAME_MAX, MPI_CHAR,
                      MPI_COMM_WORLD);
    else memcpy(g_hosts.name[0], mine, HOSTS_NAME_MAX);
    for (int r = 0; r < world; r++) {
        int h = 0;
        while (h < g_hosts.nhosts && strcmp(g_hosts.name[g_hosts.first[h]], g_hosts.name[r]) != 0)
            h++;
        if (h == g_hosts.nhosts) g_hosts.first[g_hosts.nhosts++] = r;
        g_hosts.host[r] = h;
    }
}

void hosts_free(void) {
    free(g_hosts.name);
    free(g_hosts.host);
    free(g_hosts.first);
    memset(&g_hosts, 0, sizeof g_hosts);
}

int hosts_count(void) { return g_hosts.nhosts > 0 ? g_hosts.nhosts : 1; }

int hosts_of(int rank) {
    if (!g_hosts.host) return 0;
    CHECK(rank >= 0 && rank < g_hosts.world, "hosts_of: a rank of the job");
    return g_hosts.host[rank];
}

const char *hosts_name(int h) {
    if (!g_hosts.name) return "?";
    CHECK(h >= 0 && h < g_hosts.nhosts, "hosts_name: a host of the job");
    return g_hosts.name[g_hosts.first[h]];
}

bool hosts_same(int a, int b) { return hosts_of(a) == hosts_of(b); }

const char *hosts_describe(char *buf, size_t cap) {
    const int n = hosts_count();
    size_t at = (size_t)snprintf(buf, cap, "%d host%s:", n, n == 1 ? "" : "s");
    for (int h = 0; h < n && at < cap; h++) {
        at += (size_t)snprintf(buf + at, cap - at, "%s %s (ranks", h ? "," : "", hosts_name(h));
        const int world = g_hosts.world > 0 ? g_hosts.world : 1;
        for (int r = 0, first = 1; r < world && at < cap; r++) {
            if (hosts_of(r) != h || (r > 0 && hosts_of(r - 1) == h)) continue;
            int e = r;
            while (e + 1 < world && hosts_of(e + 1) == h) e++;
            at += (size_t)(e > r ? snprintf(buf + at, cap - at, "%s %d-%d", first ? "" : ",", r, e)
                                 : snprintf(buf + at, cap - at, "%s %d", first ? "" : ",", r));
            first = 0;
        }
        if (at < cap) at += (size_t)snprintf(buf + at, cap - at, ")");
    }
    return buf;
}
