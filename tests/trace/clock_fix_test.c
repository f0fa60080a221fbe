/* clock_fix_test.c — one clock shift per host from the run's own messages (trace_run_fix_clocks,
 * src/trace/trace.h), on hand-timed traces with a known answer.
 *
 * Four ranks, p2p between ranks 0/1 (host a) and 2/3 (host b). Host b's offset was measured
 * 1 ms too small, so its receives of host a's sends end 0.6 ms before the sends began (as
 * drawn); the least shift that makes them causal is known, and both ranks of host b get it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/trace/trace.h"
#include "tests/support/testing.h"

static trace_header header(int rank, const char *host, double offset, double unc) {
    trace_header h = {0};
    h.rank = rank, h.world_size = 4, h.tp = 2, h.pp = 2, h.dp = 1, h.vpp = 1;
    h.tp_rank = rank % 2, h.pp_rank = rank / 2;
    h.num_microbatches = 2;
    strcpy(h.schedule, "1f1b");
    h.clock_offset = offset;
    h.clock_uncertainty = unc;
    snprintf(h.host, sizeof h.host, "%s", host);
    strcpy(h.run_id, "run-fix");
    h.config_json = "{}";
    return h;
}

/* A run of 4 ranks; host b's local times are 10 s ahead and its measured offset is
 * -10 s + `error` (the truth is -10 s). Rank 0 sends to rank 2 at t = 1.0 (a's clock), the
 * message takes 0.4 ms; rank 3 sends back to rank 1 at b's local 11.002, 0.4 ms too. */
static const char *make_run(const char *name, double error, bool hosts) {
    const char *dir = test_tmpdir(name);
    char path[4200];
    const double skew = 10.0, lat = 0.4e-3;
    trace_recorder *t[4];
    for (int k = 0; k < 4; k++) {
        const bool b = k >= 2;
        trace_header h = header(k, hosts ? (b ? "node-b" : "node-a") : "", b ? -skew + error : 0.0,
                                b ? 0.05e-3 : 0.0);
        t[k] = trace_create(&h, 8);
    }
    trace_comm(t[0], TRACE_SEND, "send", "pp", 2, 8, 5, 1.0, 1.0, 1.0 + lat);
    trace_comm(t[2], TRACE_RECV, "recv", "pp", 0, 8, 5, skew + 0.9, skew + 1.0, skew + 1.0 + lat);
    trace_comm(t[3], TRACE_SEND, "send", "pp", 1, 8, 6, skew + 1.002, skew + 1.002,
               skew + 1.002 + lat);
    trace_comm(t[1], TRACE_RECV, "recv", "pp", 3, 8, 6, 1.0015, 1.002, 1.002 + lat);
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, k);
        trace_write(t[k], path);
        trace_destroy(t[k]);
    }
    return dir;
}

/* Receives that end before their send began, on the run's (corrected) clocks, no slack. */
static int backwards(const trace_run *r) {
    double sent[64];
    int n = 0;
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            const trace_event *e = trace_file_event(r->ranks[k], i);
            if (e->kind == TRACE_SEND && r->flow[k][i] >= 0)
                sent[r->flow[k][i]] = e->t_start + trace_file_header(r->ranks[k])->clock_offset;
        }
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            const trace_event *e = trace_file_event(r->ranks[k], i);
            if (e->kind == TRACE_RECV && r->flow[k][i] >= 0)
                n += e->t_end + trace_file_header(r->ranks[k])->clock_offset < sent[r->flow[k][i]];
        }
    return n;
}

static void a_host_measured_too_early_is_moved_by_what_its_messages_demand(void **state) {
    (void)state;
    char err[512];
    trace_run *r = trace_run_read(make_run("early", -1e-3, true), err, sizeof err);
    if (!r) fail_msg("%s", err);
    /* as measured, 0 -> 2 arrived 0.6 ms before it was sent; 3 -> 1 was fine. The least shift
     * of host b: +0.6 ms (then 3 -> 1 ends 1.002+0.4ms vs sent 1.002-0.4ms: still after). */
    assert_true(fabs(r->clock_fix[2] - 0.6e-3) < 1e-9);
    assert_true(r->clock_fix[3] == r->clock_fix[2]); /* one host, one shift */
    assert_true(r->clock_fix[0] == 0 && r->clock_fix[1] == 0);
    assert_true(fabs(r->clock_fix_most - 0.6e-3) < 1e-9);
    assert_int_equal(r->clock_fix_left, 0);
    assert_int_equal(backwards(r), 0);
    assert_true(fabs(trace_file_header(r->ranks[3])->clock_offset - (-10.0 - 0.4e-3)) < 1e-9);
    trace_run_free(r);
}

static void a_causal_run_is_left_as_measured(void **state) {
    (void)state;
    char err[512];
    trace_run *r = trace_run_read(make_run("fine", 0.0, true), err, sizeof err);
    if (!r) fail_msg("%s", err);
    for (int k = 0; k < 4; k++) assert_true(r->clock_fix[k] == 0);
    assert_int_equal(backwards(r), 0);
    trace_run_free(r);
}

/* Files without host names (before version 4): ranks with a measured offset are hosts of
 * their own, each moved by its own messages; rank 3's needs nothing. */
static void files_without_hosts_shift_each_measured_rank(void **state) {
    (void)state;
    char err[512];
    trace_run *r = trace_run_read(make_run("nohost", -1e-3, false), err, sizeof err);
    if (!r) fail_msg("%s", err);
    assert_true(fabs(r->clock_fix[2] - 0.6e-3) < 1e-9);
    assert_true(r->clock_fix[3] == 0);
    assert_int_equal(backwards(r), 0);
    trace_run_free(r);
}

/* Bounds that contradict each other (a round trip shorter than zero) are counted, not hidden. */
static void contradictions_are_counted(void **state) {
    (void)state;
    const char *dir = test_tmpdir("contra");
    char path[4200], err[512];
    trace_recorder *t[4];
    for (int k = 0; k < 4; k++) {
        trace_header h = header(k, k >= 2 ? "node-b" : "node-a", 0.0, 0.0);
        t[k] = trace_create(&h, 8);
    }
    trace_comm(t[0], TRACE_SEND, "send", "pp", 2, 8, 5, 2.0, 2.0, 2.1);
    trace_comm(t[2], TRACE_RECV, "recv", "pp", 0, 8, 5, 1.0, 1.0, 1.1); /* 0.9 s early */
    trace_comm(t[2], TRACE_SEND, "send", "pp", 0, 8, 6, 1.2, 1.2, 1.3);
    trace_comm(t[0], TRACE_RECV, "recv", "pp", 2, 8, 6, 1.0, 1.0, 1.5); /* and 0.2 s early */
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, k);
        trace_write(t[k], path);
        trace_destroy(t[k]);
    }
    trace_run *r = trace_run_read(dir, err, sizeof err);
    if (!r) fail_msg("%s", err);
    assert_true(r->clock_fix_left > 0);
    trace_run_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_host_measured_too_early_is_moved_by_what_its_messages_demand),
        cmocka_unit_test(a_causal_run_is_left_as_measured),
        cmocka_unit_test(files_without_hosts_shift_each_measured_rank),
        cmocka_unit_test(contradictions_are_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
