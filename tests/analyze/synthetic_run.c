/* synthetic_run.c — the hand-timed 1F1B step of synthetic_run.h. */
#include "tests/analyze/synthetic_run.h"

#include <stdio.h>
#include <string.h>

#include "src/pp/schedule.h"
#include "src/trace/trace.h"
#include "tests/support/testing.h"

trace_recorder *synthetic_rank_open(int r, int pp, int dp, int m, const char *run_id) {
    trace_header h = {0};
    h.rank = r, h.world_size = pp * dp, h.tp = 1, h.pp = pp, h.dp = dp, h.vpp = 1;
    h.dp_rank = r % dp, h.pp_rank = r / dp;
    h.num_microbatches = m;
    strcpy(h.schedule, "1f1b");
    snprintf(h.run_id, sizeof h.run_id, "%s", run_id);
    h.config_json = "{}";
    return trace_create(&h, 256);
}

void synthetic_rank_write(trace_recorder *t, const char *dir, int r) {
    char path[4200];
    snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, r);
    trace_write(t, path);
    trace_destroy(t);
}

static trace_recorder *open_rank(int r) {
    return synthetic_rank_open(r, 2, 1, 2, "analyze-synthetic");
}

/* A message of rank `r` (kind SEND or RECV) to or from `peer`: posted at a, data there at
 * ready, done at end (milliseconds). */
static void msg(trace_recorder *t, trace_kind kind, int peer, int mb, int dir, double a,
                double ready, double end) {
    const int dst_stage = kind == TRACE_SEND ? peer : 1 - peer; /* rank = stage here */
    trace_comm_info ci = {.kind = kind,
                          .op = kind == TRACE_SEND ? "send" : "recv",
                          .group = "pp",
                          .label = dir == PP_ACTIVATION ? "act fwd" : "grad bwd",
                          .peer = peer,
                          .tag = pp_tag((pp_dir)dir, mb, dst_stage, 2),
                          .layer = -1,
                          .group_first = -1,
                          .bytes = 1024,
                          .t_start = a * SYN_MS,
                          .t_ready = ready * SYN_MS,
                          .t_end = end * SYN_MS,
                          .cpu = -1};
    trace_comm_full(t, &ci);
}

static void compute(trace_recorder *t, trace_kind kind, int mb, double a, double b) {
    trace_record(t, kind, 1, mb, 0, a * SYN_MS, b * SYN_MS);
}

static void finish(trace_recorder *t, const char *dir, int r, double end) {
    trace_record(t, TRACE_STEP, 1, -1, -1, 0, end * SYN_MS);
    synthetic_rank_write(t, dir, r);
}

void synthetic_run_write(const char *dir) {
    trace_recorder *t = open_rank(0);
    compute(t, TRACE_FORWARD, 0, 0, 1);
    msg(t, TRACE_SEND, 1, 0, PP_ACTIVATION, 1, 1, 1.1);
    compute(t, TRACE_FORWARD, 1, 1.1, 2.1);
    msg(t, TRACE_SEND, 1, 1, PP_ACTIVATION, 2.1, 2.1, 2.2);
    msg(t, TRACE_RECV, 1, 0, PP_GRADIENT, 2.2, 6.1, 6.2);
    compute(t, TRACE_BACKWARD, 0, 6.2, 8.2);
    msg(t, TRACE_RECV, 1, 1, PP_GRADIENT, 8.2, 11.3, 11.4);
    compute(t, TRACE_BACKWARD, 1, 11.4, 13.4);
    finish(t, dir, 0, 13.4);

    t = open_rank(1);
    msg(t, TRACE_RECV, 0, 0, PP_ACTIVATION, 0, 1, 1.1);
    compute(t, TRACE_FORWARD, 0, 1.1, 3.1);
    compute(t, TRACE_BACKWARD, 0, 3.1, 6.1);
    msg(t, TRACE_SEND, 0, 0, PP_GRADIENT, 6.1, 6.1, 6.2);
    msg(t, TRACE_RECV, 0, 1, PP_ACTIVATION, 6.2, 6.2, 6.3);
    compute(t, TRACE_FORWARD, 1, 6.3, 8.3);
    compute(t, TRACE_BACKWARD, 1, 8.3, 11.3);
    msg(t, TRACE_SEND, 0, 1, PP_GRADIENT, 11.3, 11.3, 11.4);
    finish(t, dir, 1, 11.4);
}

trace_run *synthetic_run_read(const char *dir) {
    char err[512];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    return run;
}

trace_run *synthetic_run_load(const char *name) {
    const char *dir = test_tmpdir(name);
    synthetic_run_write(dir);
    return synthetic_run_read(dir);
}
