/* replay_test.c — the replay view on hand-made runs whose wall times are stretched by
 * time-sharing but whose CPU times are exact: it gives back the textbook timeline, a receive
 * waits for its send, a collective for its last member, nested communication stays inside its
 * forward, a communication stream's collective runs beside the program, a stalled collective
 * costs its class's typical transfer, a sendrecv's two halves count the call's CPU time once,
 * and a cycle of receives is reported as a deadlock naming the rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/trace/replay.h"
#include "src/trace/trace.h"
#include "tests/support/testing.h"

static trace_header header(int rank, int world, int tp, int pp, int dp) {
    trace_header h = {0};
    h.rank = rank, h.world_size = world, h.tp = tp, h.pp = pp, h.dp = dp, h.vpp = 1;
    h.tp_rank = rank % tp, h.dp_rank = (rank / tp) % dp, h.pp_rank = rank / (tp * dp);
    h.num_microbatches = 4;
    strcpy(h.schedule, "gpipe");
    h.clock_offset = 0.5 * rank; /* the replay ignores clocks: everything starts at 0 */
    strcpy(h.run_id, "handmade");
    h.config_json = "{}";
    return h;
}

/* The header with every rank on rank 0's clock: a matched collective's t_ready is its last
 * member's entry on the run's one clock (trace_run_read), so calls recorded at the same local
 * times must be on one clock to have entered together. */
static trace_header one_clock(trace_header h) {
    h.clock_offset = 0;
    return h;
}

/* A compute event with an exact CPU time (the recorder's explicit-time call leaves cpu
 * unknown; a real trace_begin/trace_end pair measures it). */
static void compute(trace_recorder *t, trace_kind k, int step, int mb, double t0, double t1,
                    double cpu) {
    trace_record(t, k, step, mb, 0, t0, t1);
    ((trace_event *)trace_event_at(t, trace_num_events(t) - 1))->cpu = cpu;
}

static void comm(trace_recorder *t, trace_kind k, const char *group, int peer, int tag, double t0,
                 double tr, double t1) {
    const char *op = k == TRACE_SEND ? "send" : k == TRACE_RECV ? "recv" : "all_reduce";
    trace_comm_info ci = {k, op, group, NULL, peer, tag, -1, -1, 4096, t0, tr, t1, -1};
    trace_comm_full(t, &ci);
}

/* Writes the recorders as a run directory, reads it back, frees the recorders. */
static trace_run *run_of(const char *name, trace_recorder **ts, int n) {
    const char *dir = test_tmpdir(name);
    char path[4200], err[512];
    for (int k = 0; k < n; k++) {
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, k);
        trace_write(ts[k], path);
        trace_destroy(ts[k]);
    }
    trace_run *r = trace_run_read(dir, err, sizeof err);
    if (!r) fail_msg("%s", err);
    return r;
}

static trace_run *replay(const trace_run *r) {
    char err[512];
    trace_run *out = trace_run_replay(r, err, sizeof err);
    if (!out) fail_msg("replay failed: %s", err);
    return out;
}

/* The replayed event of rank k with this kind and micro-batch (the n-th such one). */
static const trace_event *find(const trace_run *r, int k, trace_kind kind, int mb, int nth) {
    for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
        const trace_event *e = trace_file_event(r->ranks[k], i);
        if (e->kind == kind && e->microbatch == mb && nth-- == 0) return e;
    }
    fail_msg("rank %d has no %s of micro-batch %d", k, trace_kind_name(kind), mb);
    return NULL;
}

static double makespan(const trace_run *r) {
    double lo = 1e300, hi = -1e300;
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            const trace_event *e = trace_file_event(r->ranks[k], i);
            if (e->t_start < lo) lo = e->t_start;
            if (e->t_end > hi) hi = e->t_end;
        }
    return hi - lo;
}

/* Two-stage GPipe, m micro-batches: a forward costs F of CPU, a backward B, but each takes
 * `stretch` times longer in wall time (two ranks sharing one core); receives wait in wall time
 * for their send and copy for no time. Every rank's step holds all its events. */
static trace_run *gpipe_run(int m, double F, double B, double stretch) {
    enum { FWD, BWD, SEND, RECV };
    typedef struct {
        int type, mb, tag;
    } act;
    act prog[2][64];
    int n[2] = {0, 0};
    for (int mb = 0; mb < m; mb++) {
        prog[0][n[0]++] = (act){FWD, mb, -1};
        prog[0][n[0]++] = (act){SEND, mb, 2 * mb};
        prog[1][n[1]++] = (act){RECV, mb, 2 * mb};
        prog[1][n[1]++] = (act){FWD, mb, -1};
    }
    for (int mb = 0; mb < m; mb++) {
        prog[0][n[0]++] = (act){RECV, mb, 2 * mb + 1};
        prog[0][n[0]++] = (act){BWD, mb, -1};
        prog[1][n[1]++] = (act){BWD, mb, -1};
        prog[1][n[1]++] = (act){SEND, mb, 2 * mb + 1};
    }
    trace_recorder *ts[2];
    double sent[128], now[2] = {0.25, 0.0};
    int pc[2] = {0, 0};
    for (int i = 0; i < 128; i++) sent[i] = -1;
    for (int k = 0; k < 2; k++) {
        trace_header h = header(k, 2, 1, 2, 1);
        ts[k] = trace_create(&h, 256);
    }
    bool moved = true;
    while (moved) {
        moved = false;
        for (int k = 0; k < 2; k++)
            for (; pc[k] < n[k]; pc[k]++, moved = true) {
                const act *a = &prog[k][pc[k]];
                if (a->type == RECV) {
                    if (sent[a->tag] < 0) break;
                    double ready = sent[a->tag] > now[k] ? sent[a->tag] : now[k];
                    comm(ts[k], TRACE_RECV, "pp", 1 - k, a->tag, now[k], ready, ready);
                    now[k] = ready;
                } else if (a->type == SEND) {
                    comm(ts[k], TRACE_SEND, "pp", 1 - k, a->tag, now[k], now[k], now[k]);
                    sent[a->tag] = now[k];
                } else {
                    double cpu = a->type == FWD ? F : B;
                    compute(ts[k], a->type == FWD ? TRACE_FORWARD : TRACE_BACKWARD, 0, a->mb,
                            now[k], now[k] + stretch * cpu, cpu);
                    now[k] += stretch * cpu;
                }
            }
    }
    assert_int_equal(pc[0], n[0]);
    assert_int_equal(pc[1], n[1]);
    for (int k = 0; k < 2; k++)
        compute(ts[k], TRACE_STEP, 0, -1, k ? 0.0 : 0.25, now[k], m * (F + B));
    return run_of("replay_gpipe", ts, 2);
}

static void stretched_gpipe_replays_to_the_textbook_timeline(void **state) {
    (void)state;
    const int m = 4, p = 2;
    const double F = 1, B = 2;
    trace_run *rec = gpipe_run(m, F, B, 2.0);
    assert_true(makespan(rec) > 2 * (m + p - 1) * (F + B) - 1); /* wall: twice the textbook */
    trace_run *r = replay(rec);
    assert_true(trace_run_is_replay(r));
    assert_false(trace_run_is_replay(rec));
    assert_string_equal(r->dir, rec->dir);
    assert_int_equal(r->nranks, 2);
    assert_int_equal(r->nflows, rec->nflows);
    assert_int_equal(r->unmatched, 0);
    if (fabs(makespan(r) - (m + p - 1) * (F + B)) > 1e-9)
        fail_msg("replayed makespan %g, textbook (m+p-1)(F+B) = %g", makespan(r),
                 (m + p - 1) * (F + B));
    for (int mb = 0; mb < m; mb++) {
        /* rank 0: F0..F3 back to back; rank 1: each forward right after rank 0's */
        assert_true(fabs(find(r, 0, TRACE_FORWARD, mb, 0)->t_start - mb * F) < 1e-9);
        assert_true(fabs(find(r, 1, TRACE_FORWARD, mb, 0)->t_start - (mb + 1) * F) < 1e-9);
        /* rank 1's backwards follow its last forward; rank 0's wait for rank 1's */
        assert_true(fabs(find(r, 1, TRACE_BACKWARD, mb, 0)->t_start - (m + 1) * F - mb * B) < 1e-9);
        assert_true(fabs(find(r, 0, TRACE_BACKWARD, mb, 0)->t_start - (m + 1) * F - (mb + 1) * B) <
                    1e-9);
        for (int k = 0; k < 2; k++) {
            const trace_event *f = find(r, k, TRACE_FORWARD, mb, 0),
                              *b = find(r, k, TRACE_BACKWARD, mb, 0);
            assert_true(fabs(f->t_end - f->t_start - F) < 1e-9);
            assert_true(fabs(b->t_end - b->t_start - B) < 1e-9);
        }
    }
    /* the step still holds every event of its rank */
    for (int k = 0; k < 2; k++) {
        const trace_event *s = find(r, k, TRACE_STEP, -1, 0);
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            const trace_event *e = trace_file_event(r->ranks[k], i);
            assert_true(e->t_start >= s->t_start - 1e-12 && e->t_end <= s->t_end + 1e-12);
        }
    }
    trace_run_free(r);
    trace_run_free(rec);
}

/* Rank 0 computes 3 s of CPU (6 s of wall) and sends; rank 1 posted its receive at 0 and
 * the copy took 0.5 s. In the replay the receive ends at 3 + 0.5, not before the send. */
static void a_receive_waits_for_its_send_plus_the_transfer(void **state) {
    (void)state;
    trace_recorder *ts[2];
    for (int k = 0; k < 2; k++) {
        trace_header h = header(k, 2, 1, 2, 1);
        ts[k] = trace_create(&h, 16);
    }
    compute(ts[0], TRACE_FORWARD, 0, 0, 0, 6, 3);
    comm(ts[0], TRACE_SEND, "pp", 1, 7, 6, 6, 6);
    comm(ts[1], TRACE_RECV, "pp", 0, 7, 0, 6, 6.5);
    compute(ts[1], TRACE_FORWARD, 0, 0, 6.5, 8.5, 1);
    trace_run *rec = run_of("replay_recv", ts, 2), *r = replay(rec);
    const trace_event *recv = find(r, 1, TRACE_RECV, -1, 0), *send = find(r, 0, TRACE_SEND, -1, 0);
    assert_true(fabs(send->t_start - 3) < 1e-9);
    assert_true(fabs(recv->t_start - 0) < 1e-9); /* posted at once ... */
    assert_true(fabs(recv->t_ready - 3) < 1e-9); /* ... the data is there when it is sent ... */
    assert_true(fabs(recv->t_end - 3.5) < 1e-9); /* ... and copied in 0.5 */
    assert_true(fabs(find(r, 1, TRACE_FORWARD, 0, 0)->t_start - 3.5) < 1e-9);
    assert_true(fabs(find(r, 1, TRACE_FORWARD, 0, 0)->t_end - 4.5) < 1e-9);
    trace_run_free(r);
    trace_run_free(rec);
}

/* Two data-parallel ranks (old traces: no group_first, so the instance comes from the
 * coordinates) on one clock all-reduce twice. Each all-reduce ends for both at the last
 * member's arrival plus the transfer, the least any member recorded after the last member
 * entered (0.3 s, then 0.7 s). */
static void a_collective_waits_for_its_last_member(void **state) {
    (void)state;
    trace_recorder *ts[2];
    for (int k = 0; k < 2; k++) {
        trace_header h = one_clock(header(k, 2, 1, 1, 2));
        ts[k] = trace_create(&h, 16);
    }
    compute(ts[0], TRACE_BACKWARD, 0, 0, 0, 2, 1); /* 1 s of CPU */
    comm(ts[0], TRACE_COLLECTIVE, "dp", -1, -1, 2, 2, 8.3);
    compute(ts[0], TRACE_OPTIMIZER, 0, -1, 8.3, 10.3, 1);
    comm(ts[0], TRACE_COLLECTIVE, "dp", -1, -1, 10.3, 10.3, 11.0);
    compute(ts[1], TRACE_BACKWARD, 0, 0, 0, 8, 4); /* 4 s of CPU */
    comm(ts[1], TRACE_COLLECTIVE, "dp", -1, -1, 8, 8, 8.3);
    compute(ts[1], TRACE_OPTIMIZER, 0, -1, 8.3, 9.3, 0.5);
    comm(ts[1], TRACE_COLLECTIVE, "dp", -1, -1, 9.3, 9.3, 11.0);
    trace_run *rec = run_of("replay_coll", ts, 2), *r = replay(rec);
    for (int k = 0; k < 2; k++) {
        const trace_event *a = find(r, k, TRACE_COLLECTIVE, -1, 0),
                          *b = find(r, k, TRACE_COLLECTIVE, -1, 1);
        assert_true(fabs(a->t_start - (k ? 4 : 1)) < 1e-9);
        assert_true(fabs(a->t_ready - 4) < 1e-9);
        assert_true(fabs(a->t_end - 4.3) < 1e-9);
        /* second call: rank 0 arrives at 5.3, rank 1 at 4.8; transfer 0.7 */
        assert_true(fabs(b->t_ready - 5.3) < 1e-9);
        assert_true(fabs(b->t_end - 6.0) < 1e-9);
    }
    trace_run_free(r);
    trace_run_free(rec);
}

/* A forward of 2 s CPU over 4 s wall with a tensor-parallel all-reduce inside it at [1, 2]:
 * the all-reduce is charged 1 s × the forward's CPU share 0.5, so the forward's own time is
 * 1.5 s, spread over its gaps (0.5 before, 1.0 after); the all-reduce (transfer 1 s) stays
 * inside the replayed forward. */
static void nested_communication_stays_inside_its_forward(void **state) {
    (void)state;
    trace_recorder *ts[2];
    for (int k = 0; k < 2; k++) {
        trace_header h = one_clock(header(k, 2, 2, 1, 1));
        ts[k] = trace_create(&h, 16);
        compute(ts[k], TRACE_FORWARD, 0, 0, 0, 4, 2);
        comm(ts[k], TRACE_COLLECTIVE, "tp", -1, -1, 1, 1, 2);
    }
    trace_run *rec = run_of("replay_nested", ts, 2), *r = replay(rec);
    for (int k = 0; k < 2; k++) {
        const trace_event *f = find(r, k, TRACE_FORWARD, 0, 0),
                          *c = find(r, k, TRACE_COLLECTIVE, -1, 0);
        assert_true(fabs(f->t_start - 0) < 1e-9);
        assert_true(fabs(c->t_start - 0.5) < 1e-9);
        assert_true(fabs(c->t_end - 1.5) < 1e-9);
        assert_true(fabs(f->t_end - 2.5) < 1e-9);
    }
    trace_run_free(r);
    trace_run_free(rec);
}

/* A collective of the communication stream with its group, issued at `t0`, ended at t1. */
static void stream(trace_recorder *t, const char *op, double t0, double t1) {
    trace_comm_info ci = {TRACE_COLLECTIVE, op, "dp", NULL, -1, -1, -1, 0, 4096, t0, t0, t1, -1};
    if (strcmp(op, "wait") == 0) ci.group_first = -1, trace_comm_full(t, &ci);
    else trace_comm_stream(t, &ci);
}

/* ZeRO-3's prefetch: a stream all-gather issued inside each rank's forward (2 s of CPU over
 * 4 s of wall), at wall 1 on rank 0 and 1.5 on rank 1 (whose clock is 0.5 s behind: both
 * entered by 2.0, transfer min(1, 1.5) = 1 s); rank 0 waits for it at [3, 3.5]. The wait
 * sleeps: rank 0's own time is all 2 s, over 3.5 s of gaps (scale 4/7); rank 1's 2 s over 4
 * (scale 1/2). The replay issues it at 4/7 and 0.75 and runs it [0.75, 1.75], so rank 0's
 * wait, reached at 12/7, ends at 1.75 and its forward at 1.75 + 2/7; rank 1 never waits
 * (2.0). A main-lane all-reduce on the same group (entered at 4 on rank 0, 4.5 on rank 1,
 * ended at 5 on both) is matched with the other main-lane call only: it runs from the later
 * arrival, 1.75 + 2/7, for its 0.5 s. Rank 0 samples its memory at 2, between the issue and
 * the wait, recorded before the pair (the trainer records both when it waits): the replayed
 * file keeps the wait right after its collective, so the replayed run still reads it as the
 * stream's wait, not as a call. */
static void a_stream_collective_runs_beside_the_program(void **state) {
    (void)state;
    trace_recorder *ts[2];
    for (int k = 0; k < 2; k++) {
        trace_header h = header(k, 2, 1, 1, 2);
        ts[k] = trace_create(&h, 16);
        compute(ts[k], TRACE_FORWARD, 0, 0, 0, 4, 2);
        if (k == 0) trace_memory_at(ts[k], 4096, 2);
        stream(ts[k], "all_gather", k ? 1.5 : 1, 3);
        if (k == 0) stream(ts[k], "wait", 3, 3.5);
        comm(ts[k], TRACE_COLLECTIVE, "dp", -1, -1, 4, 4, k ? 4.5 : 5.0);
    }
    trace_run *rec = run_of("replay_stream", ts, 2), *r = replay(rec);
    for (int k = 0; k < 2; k++) {
        const trace_event *f = find(r, k, TRACE_FORWARD, 0, 0);
        const double f0 = 1.75 + 2.0 / 7; /* rank 0's forward ends */
        assert_true(fabs(f->t_end - (k ? 2.0 : f0)) < 1e-9);
        int seen = 0;
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            const trace_event *e = trace_file_event(r->ranks[k], i);
            const char *op = trace_file_string(r->ranks[k], e->op);
            if (e->kind != TRACE_COLLECTIVE) continue;
            if (e->flags & TRACE_STREAM) {
                assert_true(fabs(e->t_start - (k ? 0.75 : 4.0 / 7)) < 1e-9);
                assert_true(fabs(e->t_end - 1.75) < 1e-9);
            } else if (strcmp(op, "wait") == 0) {
                assert_true(trace_file_is_stream_wait(r->ranks[k], i));
                assert_true(fabs(e->t_start - 12.0 / 7) < 1e-9 && fabs(e->t_end - 1.75) < 1e-9);
            } else {
                assert_true(fabs(e->t_start - (k ? 2.0 : f0)) < 1e-9); /* each its arrival */
                assert_true(fabs(e->t_end - (f0 + 0.5)) < 1e-9);
            }
            seen++;
        }
        assert_int_equal(seen, k ? 2 : 3);
    }
    trace_run_free(r);
    trace_run_free(rec);
}

/* Tensor parallelism alone (no p2p copy to cap by): 8 all-reduces of one size, back to back
 * (each 0.1 s of CPU before it); seven moved in 0.2 s, one stalled for 2 s behind a
 * descheduled member. Every call costs at most the class's lower quartile, 0.2 s: the step
 * replays to 8 × (0.1 + 0.2) = 2.4 s. */
static void a_stalled_collective_costs_its_class_typical_transfer(void **state) {
    (void)state;
    trace_recorder *ts[2];
    for (int k = 0; k < 2; k++) {
        trace_header h = one_clock(header(k, 2, 2, 1, 1));
        ts[k] = trace_create(&h, 32);
        double t = 0;
        for (int i = 0; i < 8; i++) {
            compute(ts[k], TRACE_FORWARD, 0, i, t, t + 0.1, 0.1);
            const double cost = i == 5 ? 2.0 : 0.2;
            comm(ts[k], TRACE_COLLECTIVE, "tp", -1, -1, t + 0.1, t + 0.1, t + 0.1 + cost);
            t += 0.1 + cost;
        }
    }
    trace_run *rec = run_of("replay_class", ts, 2), *r = replay(rec);
    assert_true(fabs(makespan(r) - 2.4) < 1e-9);
    const trace_event *c = find(r, 0, TRACE_COLLECTIVE, -1, 5);
    assert_true(fabs(c->t_end - c->t_ready - 0.2) < 1e-9);
    trace_run_free(r);
    trace_run_free(rec);
}

/* Ring attention's step: one sendrecv call traced as a send and a receive over the same
 * [1, 2] inside a forward of 2 s CPU over 4 s wall, each half carrying the call's 1 s of CPU:
 * the forward's own time is 2 − 1 = 1 s (not 0: the call counted once), spread over its 3 s
 * of gaps. Each half moves 4096 bytes in 0.1 s (the copy after the data was there), so the
 * forward replays to 1/3 + 0.1 + 0.1 + 2/3 = 1.2 s on both ranks. */
static void a_sendrecv_call_counts_its_cpu_once(void **state) {
    (void)state;
    trace_recorder *ts[2];
    for (int k = 0; k < 2; k++) {
        trace_header h = header(k, 2, 1, 1, 2);
        ts[k] = trace_create(&h, 16);
        compute(ts[k], TRACE_FORWARD, 0, 0, 0, 4, 2);
        trace_comm_info ci = {TRACE_SEND, "send", "cp", NULL, 1 - k, 0, 0, -1, 4096, 1, 1, 2, 1};
        trace_comm_full(ts[k], &ci);
        ci.kind = TRACE_RECV, ci.op = "recv", ci.t_ready = 1.9;
        trace_comm_full(ts[k], &ci);
    }
    trace_run *rec = run_of("replay_sendrecv", ts, 2), *r = replay(rec);
    for (int k = 0; k < 2; k++) {
        const trace_event *f = find(r, k, TRACE_FORWARD, 0, 0);
        assert_true(fabs(f->t_end - f->t_start - 1.2) < 1e-9);
    }
    trace_run_free(r);
    trace_run_free(rec);
}

static void a_cycle_of_receives_is_a_deadlock_naming_the_rank(void **state) {
    (void)state;
    trace_recorder *ts[2];
    for (int k = 0; k < 2; k++) {
        trace_header h = header(k, 2, 1, 2, 1);
        ts[k] = trace_create(&h, 16);
        comm(ts[k], TRACE_RECV, "pp", 1 - k, k, 0, 0, 1);     /* each first receives ... */
        comm(ts[k], TRACE_SEND, "pp", 1 - k, 1 - k, 1, 1, 1); /* ... what the other sends after */
    }
    trace_run *rec = run_of("replay_deadlock", ts, 2);
    char err[512];
    assert_null(trace_run_replay(rec, err, sizeof err));
    if (!strstr(err, "replay deadlock: rank 0 waits at its event 0 (recv from rank 1, tag 0"))
        fail_msg("unexpected message: %s", err);
    trace_run_free(rec);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stretched_gpipe_replays_to_the_textbook_timeline),
        cmocka_unit_test(a_receive_waits_for_its_send_plus_the_transfer),
        cmocka_unit_test(a_collective_waits_for_its_last_member),
        cmocka_unit_test(nested_communication_stays_inside_its_forward),
        cmocka_unit_test(a_stream_collective_runs_beside_the_program),
        cmocka_unit_test(a_stalled_collective_costs_its_class_typical_transfer),
        cmocka_unit_test(a_sendrecv_call_counts_its_cpu_once),
        cmocka_unit_test(a_cycle_of_receives_is_a_deadlock_naming_the_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
