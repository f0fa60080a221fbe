/* tp_fixture.c — see tp_fixture.h. */
#include "tests/tp/tp_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/core/rng.h"
#include "src/runtime/dist.h"
#include "src/runtime/parallel_state.h"

static parallel_state *g_ps;
static tp_traffic g_traffic;

static void tally(const comm_event *e, void *ctx) {
    (void)ctx;
    if (strcmp(e->group, "tp") != 0) return;
    if (strcmp(e->op, "all_reduce") == 0) {
        g_traffic.all_reduce_calls++;
        g_traffic.all_reduce_bytes += e->bytes;
    } else if (strcmp(e->op, "all_gather") == 0) {
        g_traffic.all_gather_calls++;
        g_traffic.all_gather_bytes += e->bytes;
    } else if (strcmp(e->op, "reduce_scatter") == 0) {
        g_traffic.reduce_scatter_calls++;
        g_traffic.reduce_scatter_bytes += e->bytes;
    } else {
        g_traffic.other_calls++;
    }
}

void tp_fixture_init(int *argc, char ***argv, int world) {
    dist_init(argc, argv);
    pg_layout l;
    char err[256];
    if (!pg_layout_make(&l, world, world, 1, 1, 1, 1, "tp-dp-pp", err, sizeof err))
        die("tp fixture: %s", err);
    g_ps = ps_create(&l, dist_rank());
    comm_set_trace_hook(tally, NULL);
}

int tp_fixture_finish(int rc) {
    comm_set_trace_hook(NULL, NULL);
    ps_destroy(g_ps);
    dist_finalize();
    return rc;
}

comm_group *tp_fixture_group(void) { return g_ps->tp; }
int tp_fixture_rank(void) { return g_ps->tp_rank; }
int tp_fixture_size(void) { return comm_size(g_ps->tp); }

float *tp_fixture_fill(float *x, size_t n, uint64_t stream, float scale) {
    if (!x) x = mallocCheck(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; i++) x[i] = scale * rng_normal(4242, stream, i);
    return x;
}

void tp_traffic_reset(void) {
    memset(&g_traffic, 0, sizeof g_traffic);
    comm_reset_counters(g_ps->tp);
}

tp_traffic tp_traffic_get(void) { return g_traffic; }

void tp_fixture_columns(float *out, const float *x, size_t rows, size_t ld, size_t c0, size_t w) {
    for (size_t r = 0; r < rows; r++) memcpy(out + r * w, x + r * ld + c0, w * sizeof(float));
}
