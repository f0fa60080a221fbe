/* trace_test.c — the recorder, the file format and the reader: events in order, handles,
 * dropped counting, device times from a fake device clock (resolved when a step ends and
 * before writing; messages keep their host times), a byte-exact round trip of every field,
 * one clear error for every truncated or corrupted file, loading a run directory with
 * send/receive pairing and collective matching (t_ready = the last member's entry), and the
 * causality check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/core/crc32.h"
#include "src/trace/trace.h"
#include "tests/support/testing.h"

static trace_header header(int rank, int world) {
    trace_header h = {0};
    h.rank = rank, h.world_size = world, h.tp = 1, h.pp = world, h.dp = 1, h.vpp = 2;
    h.pp_rank = rank;
    h.num_microbatches = 4;
    strcpy(h.schedule, "interleaved"); /* 2 chunks per rank: events of chunk 1 are valid */
    h.clock_offset = 0.125 * rank;
    h.clock_uncertainty = 0.0625 * rank;
    strcpy(h.run_id, "run-42");
    h.config_json = "{\"pp\": 2, \"note\": \"quote \\\" inside\"}";
    return h;
}

static void events_are_kept_in_order_with_handles(void **state) {
    (void)state;
    trace_header h = header(0, 1);
    trace_recorder *t = trace_create(&h, 16);
    int s = trace_begin(t, TRACE_STEP, 3, -1, -1);
    int f = trace_begin(t, TRACE_FORWARD, 3, 1, 0);
    trace_end(t, f);
    int b = trace_begin(t, TRACE_BACKWARD, 3, 1, 0);
    trace_end(t, b);
    trace_end(t, s);
    assert_int_equal(s, 0);
    assert_int_equal(f, 1);
    assert_int_equal(b, 2);
    assert_int_equal(trace_num_events(t), 3);
    const trace_event *es = trace_event_at(t, 0), *ef = trace_event_at(t, 1),
                      *eb = trace_event_at(t, 2);
    assert_int_equal(es->kind, TRACE_STEP);
    assert_int_equal(ef->kind, TRACE_FORWARD);
    assert_int_equal(ef->microbatch, 1);
    assert_int_equal(eb->kind, TRACE_BACKWARD);
    assert_true(es->t_start <= ef->t_start && ef->t_end <= eb->t_start && eb->t_end <= es->t_end);
    for (int i = 0; i < 3; i++) {
        const trace_event *e = trace_event_at(t, (size_t)i);
        assert_int_equal(e->flags & TRACE_OPEN, 0);
        /* The thread's CPU time inside a span is known and never more than its wall time
         * (plus the clocks' granularity). */
        assert_true(e->cpu >= 0 && e->cpu <= e->t_end - e->t_start + 1e-3);
    }
    trace_destroy(t);
}

/* A whole backward carries the share of it its W parts took, in parts per million: rounded,
 * at least 1 when measured, capped at the whole; nothing for an unmeasured share. */
static void a_whole_backward_carries_its_weight_share(void **state) {
    (void)state;
    trace_header h = header(0, 1);
    trace_recorder *t = trace_create(&h, 16);
    int b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = trace_begin(t, TRACE_BACKWARD, 1, i, 0);
        trace_end(t, b[i]);
    }
    trace_set_weight_share(t, b[0], 0.375);
    trace_set_weight_share(t, b[1], 1e-9);
    trace_set_weight_share(t, b[2], 1.5);
    trace_set_weight_share(t, b[3], 0);
    trace_set_weight_share(t, -1, 0.5); /* a dropped begin: nothing */
    assert_int_equal(trace_event_at(t, 0)->bytes, 375000);
    assert_int_equal(trace_event_at(t, 1)->bytes, 1);
    assert_int_equal(trace_event_at(t, 2)->bytes, TRACE_WEIGHT_PPM);
    assert_int_equal(trace_event_at(t, 3)->bytes, 0);
    trace_destroy(t);
}

static void full_buffer_counts_dropped_events_instead_of_crashing(void **state) {
    (void)state;
    trace_header h = header(0, 1);
    trace_recorder *t = trace_create(&h, 2);
    trace_record(t, TRACE_FORWARD, 0, 0, 0, 1.0, 2.0);
    int k = trace_begin(t, TRACE_BACKWARD, 0, 0, 0);
    int dropped = trace_begin(t, TRACE_FORWARD, 0, 1, 0);
    assert_int_equal(dropped, -1);
    trace_end(t, dropped); /* accepted and ignored */
    trace_end(t, k);
    trace_comm(t, TRACE_SEND, "send", "pp", 1, 10, 0, 1, 1, 2);
    trace_memory(t, 100);
    assert_int_equal(trace_num_events(t), 2);
    assert_int_equal(trace_num_dropped(t), 3);

    const char *dir = test_tmpdir("dropped");
    char path[4200];
    snprintf(path, sizeof path, "%s/x/rank0.trace", dir); /* trace_write makes x/ */
    trace_write(t, path);
    char err[512];
    trace_file *f = trace_file_read(path, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(trace_file_dropped(f), 3);
    assert_int_equal(trace_file_num_events(f), 2);
    trace_file_free(f);
    trace_destroy(t);
}

static void strings_beyond_the_table_become_other(void **state) {
    (void)state;
    trace_header h = header(0, 1);
    trace_recorder *t = trace_create(&h, 200);
    char name[32];
    for (int i = 0; i < TRACE_MAX_STRINGS + 10; i++) {
        snprintf(name, sizeof name, "op%d", i);
        trace_comm(t, TRACE_COLLECTIVE, name, "dp", -1, 1, -1, 0, 0, 1);
    }
    assert_string_equal(trace_string(t, trace_event_at(t, 0)->op), "op0");
    assert_string_equal(trace_string(t, trace_event_at(t, TRACE_MAX_STRINGS + 5)->op), "(other)");
    assert_string_equal(trace_string(t, -1), "");
    trace_destroy(t);
}

/* A small file with one event of every kind and explicit times. */
static void write_small(const char *path, int rank, int world) {
    trace_header h = header(rank, world);
    trace_recorder *t = trace_create(&h, 64);
    trace_record(t, TRACE_STEP, 7, -1, -1, 10.0, 20.0);
    trace_record(t, TRACE_FORWARD, 7, 2, 1, 10.5, 11.5);
    trace_record(t, TRACE_BACKWARD, 7, 2, 1, 12.0, 14.0);
    trace_comm(t, TRACE_SEND, "send", "pp", (rank + 1) % world, 4096, 5, 11.5, 11.75, 12.0);
    trace_comm(t, TRACE_RECV, "recv", "pp", (rank + world - 1) % world, 4096, 5, 10.0, 10.25, 10.5);
    trace_comm_info ci = {.kind = TRACE_COLLECTIVE,
                          .op = "all-reduce",
                          .group = "dp",
                          .label = "grads",
                          .peer = -1,
                          .tag = -1,
                          .layer = 3,
                          .group_first = 0,
                          .bytes = 1 << 20,
                          .t_start = 14.0,
                          .t_ready = 14.0,
                          .t_end = 15.0,
                          .cpu = 0.5};
    trace_comm_full(t, &ci);
    trace_record(t, TRACE_OPTIMIZER, 7, -1, -1, 15.0, 16.0);
    trace_record(t, TRACE_DATA, 7, -1, -1, 9.0, 9.5);
    trace_record(t, TRACE_EVAL, 7, -1, -1, 16.0, 17.0);
    trace_memory_at(t, 123456789012ULL, 11.0);
    trace_write(t, path);
    trace_destroy(t);
}

static void write_then_read_keeps_every_field(void **state) {
    (void)state;
    const char *dir = test_tmpdir("roundtrip");
    char path[4200];
    snprintf(path, sizeof path, "%s/rank1.trace", dir);
    write_small(path, 1, 2);
    char err[512] = "";
    trace_file *f = trace_file_read(path, err, sizeof err);
    assert_non_null(f);
    assert_string_equal(err, "");
    const trace_header *h = trace_file_header(f);
    trace_header w = header(1, 2);
    assert_int_equal(h->rank, 1);
    assert_int_equal(h->world_size, 2);
    assert_int_equal(h->tp, 1);
    assert_int_equal(h->pp, 2);
    assert_int_equal(h->dp, 1);
    assert_int_equal(h->vpp, 2);
    assert_int_equal(h->tp_rank, 0);
    assert_int_equal(h->pp_rank, 1);
    assert_int_equal(h->dp_rank, 0);
    assert_int_equal(h->num_microbatches, 4);
    assert_string_equal(h->schedule, "interleaved");
    assert_true(h->clock_offset == 0.125);
    assert_true(h->clock_uncertainty == 0.0625);
    assert_string_equal(h->run_id, "run-42");
    assert_string_equal(h->config_json, w.config_json);
    assert_string_equal(trace_file_path(f), path);
    assert_int_equal(trace_file_num_events(f), 10);
    assert_int_equal(trace_file_dropped(f), 0);

    const trace_event *e = trace_file_event(f, 1);
    assert_int_equal(e->kind, TRACE_FORWARD);
    assert_int_equal(e->step, 7);
    assert_int_equal(e->microbatch, 2);
    assert_int_equal(e->chunk, 1);
    assert_int_equal(e->peer, -1);
    assert_int_equal(e->tag, -1);
    assert_int_equal(e->op, -1);
    assert_int_equal(e->label, -1);
    assert_int_equal(e->layer, -1);
    assert_int_equal(e->group_first, -1);
    assert_true(e->cpu == -1);
    assert_true(e->t_start == 10.5 && e->t_ready == 10.5 && e->t_end == 11.5);
    e = trace_file_event(f, 3);
    assert_int_equal(e->kind, TRACE_SEND);
    assert_int_equal(e->peer, 0);
    assert_int_equal(e->tag, 5);
    assert_int_equal(e->bytes, 4096);
    assert_string_equal(trace_file_string(f, e->op), "send");
    assert_string_equal(trace_file_string(f, e->group), "pp");
    assert_true(e->t_start == 11.5 && e->t_ready == 11.75 && e->t_end == 12.0);
    e = trace_file_event(f, 5);
    assert_int_equal(e->kind, TRACE_COLLECTIVE);
    assert_string_equal(trace_file_string(f, e->op), "all-reduce");
    assert_string_equal(trace_file_string(f, e->group), "dp");
    assert_string_equal(trace_file_string(f, e->label), "grads");
    assert_int_equal(e->layer, 3);
    assert_int_equal(e->group_first, 0);
    assert_true(e->cpu == 0.5);
    assert_int_equal(e->bytes, 1 << 20);
    e = trace_file_event(f, 9);
    assert_int_equal(e->kind, TRACE_MEMORY);
    assert_true(e->bytes == 123456789012ULL);
    assert_true(e->t_start == 11.0);
    for (int k = 0; k < 10; k++) assert_int_equal(trace_file_event(f, (size_t)k)->flags, 0);
    trace_file_free(f);
}

/* A collective of the communication stream keeps its STREAM flag through the file; the
 * exposed wait beside it is an ordinary collective. */
static void stream_collectives_keep_their_flag_through_the_file(void **state) {
    (void)state;
    trace_header h = header(0, 1);
    trace_recorder *t = trace_create(&h, 8);
    trace_comm_info ci = {.kind = TRACE_COLLECTIVE,
                          .op = "all_reduce",
                          .group = "dp",
                          .label = "grads",
                          .peer = -1,
                          .tag = -1,
                          .layer = -1,
                          .group_first = 0,
                          .bytes = 4096,
                          .t_start = 1.0,
                          .t_ready = 1.0,
                          .t_end = 2.0,
                          .cpu = -1};
    trace_comm_stream(t, &ci);
    ci.op = "wait", ci.group_first = -1, ci.t_start = 1.8, ci.t_ready = ci.t_end = 2.1;
    trace_comm_full(t, &ci);
    char path[4200];
    snprintf(path, sizeof path, "%s/rank0.trace", test_tmpdir("stream"));
    trace_write(t, path);
    trace_destroy(t);
    char err[512] = "";
    trace_file *f = trace_file_read(path, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(trace_file_num_events(f), 2);
    assert_int_equal(trace_file_event(f, 0)->flags, TRACE_STREAM);
    assert_int_equal(trace_file_event(f, 1)->flags, 0);
    assert_string_equal(trace_file_string(f, trace_file_event(f, 1)->op), "wait");
    assert_string_equal(trace_file_string(f, trace_file_event(f, 1)->label), "grads");
    trace_file_free(f);
}

static void unfinished_events_are_marked_open(void **state) {
    (void)state;
    trace_header h = header(0, 1);
    trace_recorder *t = trace_create(&h, 4);
    trace_begin(t, TRACE_STEP, 0, -1, -1);
    const char *dir = test_tmpdir("open");
    char path[4200];
    snprintf(path, sizeof path, "%s/rank0.trace", dir);
    trace_write(t, path);
    trace_destroy(t);
    char err[512];
    trace_file *f = trace_file_read(path, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(trace_file_event(f, 0)->flags & TRACE_OPEN, TRACE_OPEN);
    trace_file_free(f);
}

/* ---- device time (trace_set_device_clock) ------------------------------------------------
 *
 * A fake device clock: the k-th marker taken (k = 0, 1, ...) is reached at DEVICE_T0 + k
 * seconds, far from any host time, and only a sync makes a marker's time readable. It counts
 * syncs and live markers, so the tests see when the recorder waits and that every marker
 * goes back. */
/* above any host time (time_now() counts from boot), within TRACE_MAX_SECONDS */
#define DEVICE_T0 1e8
enum { FAKE_MARKERS = 16 };
static struct {
    int seq[FAKE_MARKERS];   /* the order in which live marker i was taken */
    int epoch[FAKE_MARKERS]; /* syncs before it was taken: its time is readable after more */
    bool live[FAKE_MARKERS];
    int taken, syncs, nlive;
} fake;

static int fake_take(void) {
    int i = 0;
    while (i < FAKE_MARKERS && fake.live[i]) i++;
    assert_true(i < FAKE_MARKERS);
    fake.live[i] = true, fake.seq[i] = fake.taken++, fake.epoch[i] = fake.syncs, fake.nlive++;
    return i;
}
static void fake_sync(void) { fake.syncs++; }
static double fake_time(int i) {
    assert_true(fake.live[i]);
    if (fake.epoch[i] == fake.syncs) fail_msg("marker %d read before a sync", i);
    return DEVICE_T0 + fake.seq[i];
}
static void fake_release(int i) {
    assert_true(fake.live[i]);
    fake.live[i] = false, fake.nlive--;
}

/* A recorder on the fake clock of a GPU (runs_on_host false) or of a CPU device. */
static trace_recorder *device_timed(size_t capacity, bool runs_on_host) {
    memset(&fake, 0, sizeof fake);
    trace_header h = header(0, 1);
    trace_recorder *t = trace_create(&h, capacity);
    const trace_device_clock clock = {fake_take, fake_sync, fake_time, fake_release, runs_on_host};
    trace_set_device_clock(t, &clock);
    return t;
}

static void expect_times(const trace_event *e, double start, double end) {
    if (e->t_start != start || e->t_ready != start || e->t_end != end)
        fail_msg("%s: [%.9g, %.9g] (ready %.9g), want [%.9g, %.9g]", trace_kind_name(e->kind),
                 e->t_start, e->t_end, e->t_ready, start, end);
}

static void compute_spans_take_device_times_when_the_step_ends(void **state) {
    (void)state;
    trace_recorder *t = device_timed(16, false);
    int s = trace_begin(t, TRACE_STEP, 1, -1, -1);  /* marker 0 */
    int f = trace_begin(t, TRACE_FORWARD, 1, 0, 0); /* 1 */
    trace_comm(t, TRACE_COLLECTIVE, "all_reduce", "tp", -1, 64, -1, 5.0, 5.25, 6.0);
    trace_end(t, f); /* 2 */
    trace_memory_at(t, 4096, 6.5);
    int b = trace_begin(t, TRACE_BACKWARD, 1, 0, 0); /* 3 */
    trace_end(t, b);                                 /* 4 */
    /* Nothing waited for the device yet: the spans still hold their host times. */
    assert_int_equal(fake.syncs, 0);
    assert_int_equal(fake.nlive, 5);
    assert_true(trace_event_at(t, (size_t)f)->t_end < DEVICE_T0);
    trace_end(t, s); /* 5; the step's end syncs once and resolves */
    assert_int_equal(fake.syncs, 1);
    assert_int_equal(fake.nlive, 0);
    expect_times(trace_event_at(t, (size_t)s), DEVICE_T0, DEVICE_T0 + 5);
    expect_times(trace_event_at(t, (size_t)f), DEVICE_T0 + 1, DEVICE_T0 + 2);
    expect_times(trace_event_at(t, (size_t)b), DEVICE_T0 + 3, DEVICE_T0 + 4);
    /* Messages and memory samples keep the host times they were reported with. */
    const trace_event *c = trace_event_at(t, 2), *m = trace_event_at(t, 3);
    assert_true(c->t_start == 5.0 && c->t_ready == 5.25 && c->t_end == 6.0);
    assert_true(m->kind == TRACE_MEMORY && m->t_start == 6.5);
    for (size_t i = 0; i < trace_num_events(t); i++)
        assert_int_equal(trace_event_at(t, i)->flags, 0);
    /* The thread only launched the work: its CPU seconds say nothing of the device span. */
    assert_true(trace_event_at(t, (size_t)f)->cpu == -1 && trace_event_at(t, (size_t)s)->cpu == -1);
    /* A second step resolves only what came since: the first step's spans are left alone. */
    int s2 = trace_begin(t, TRACE_STEP, 2, -1, -1); /* 6 */
    trace_end(t, s2);                               /* 7 */
    assert_int_equal(fake.syncs, 2);
    expect_times(trace_event_at(t, (size_t)s2), DEVICE_T0 + 6, DEVICE_T0 + 7);
    expect_times(trace_event_at(t, (size_t)f), DEVICE_T0 + 1, DEVICE_T0 + 2);
    trace_destroy(t);
}

/* An evaluation around a step: open when the step resolves, so it gets its device begin and
 * stays open; its end comes with the next resolve, here trace_write's. A span never ended is
 * written open, at its device begin. The file keeps the device times. */
static void open_spans_resolve_their_begin_now_and_their_end_later(void **state) {
    (void)state;
    trace_recorder *t = device_timed(16, false);
    int ev = trace_begin(t, TRACE_EVAL, 3, -1, -1); /* 0 */
    int s = trace_begin(t, TRACE_STEP, 3, -1, -1);  /* 1 */
    int f = trace_begin(t, TRACE_FORWARD, 3, 0, 0); /* 2 */
    trace_end(t, f);                                /* 3 */
    trace_end(t, s);                                /* 4: resolve */
    const trace_event *e = trace_event_at(t, (size_t)ev);
    assert_int_equal(e->flags, TRACE_OPEN);
    expect_times(e, DEVICE_T0, DEVICE_T0); /* open: a point at its device begin */
    expect_times(trace_event_at(t, (size_t)f), DEVICE_T0 + 2, DEVICE_T0 + 3);
    trace_end(t, ev); /* 5 */
    assert_int_equal(e->flags, 0);
    assert_true(e->t_start == DEVICE_T0 && e->t_end < DEVICE_T0); /* its end: host, for now */
    int w = trace_begin(t, TRACE_WEIGHT, 3, 0, 0);                /* 6, never ended */
    char path[4200];
    snprintf(path, sizeof path, "%s/rank0.trace", test_tmpdir("device_time"));
    trace_write(t, path);
    assert_int_equal(fake.syncs, 2);
    assert_int_equal(fake.nlive, 0);
    trace_destroy(t);

    char err[512] = "";
    trace_file *file = trace_file_read(path, err, sizeof err);
    assert_non_null(file);
    assert_int_equal(trace_file_num_events(file), 4);
    expect_times(trace_file_event(file, (size_t)ev), DEVICE_T0, DEVICE_T0 + 5);
    expect_times(trace_file_event(file, (size_t)s), DEVICE_T0 + 1, DEVICE_T0 + 4);
    expect_times(trace_file_event(file, (size_t)f), DEVICE_T0 + 2, DEVICE_T0 + 3);
    expect_times(trace_file_event(file, (size_t)w), DEVICE_T0 + 6, DEVICE_T0 + 6);
    assert_int_equal(trace_file_event(file, (size_t)w)->flags, TRACE_OPEN);
    assert_int_equal(trace_file_event(file, (size_t)ev)->flags, 0);
    trace_file_free(file);
}

/* A dropped begin takes no marker (its trace_end takes none either); a recorder destroyed with
 * markers pending gives them back unresolved. On a device that runs on the recording thread
 * the spans keep their CPU seconds. */
static void dropped_spans_take_no_markers_and_none_leak(void **state) {
    (void)state;
    trace_recorder *t = device_timed(2, true);
    int s = trace_begin(t, TRACE_STEP, 0, -1, -1);
    int f = trace_begin(t, TRACE_FORWARD, 0, 0, 0);
    int dropped = trace_begin(t, TRACE_BACKWARD, 0, 0, 0);
    assert_int_equal(dropped, -1);
    trace_end(t, dropped);
    assert_int_equal(fake.taken, 2);
    trace_end(t, f);
    trace_end(t, s);
    assert_int_equal(fake.taken, 4);
    assert_int_equal(fake.nlive, 0);
    assert_int_equal(trace_num_dropped(t), 1);
    expect_times(trace_event_at(t, (size_t)f), DEVICE_T0 + 1, DEVICE_T0 + 2);
    /* A device that runs on the recording thread (the CPU twin): the CPU seconds stay. */
    assert_true(trace_event_at(t, (size_t)f)->cpu >= 0 && trace_event_at(t, (size_t)s)->cpu >= 0);
    trace_destroy(t);

    t = device_timed(4, false);
    trace_begin(t, TRACE_STEP, 0, -1, -1);
    trace_end(t, trace_begin(t, TRACE_FORWARD, 0, 0, 0));
    assert_int_equal(fake.nlive, 3);
    trace_destroy(t);
    assert_int_equal(fake.nlive, 0);
    assert_int_equal(fake.syncs, 0);
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n);
    assert_int_equal(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

static void spill(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* Rank 5 of world 8 = cp 2 × dp 4 (ep 2): cp_rank 1, dp_rank 2, ep_rank 0 (groups.h's order,
 * rank = cp + 2·dp). The run's configuration names the sizes too, as trident train's does. */
static trace_header header_5d(void) {
    trace_header h = header(5, 8);
    h.tp = 1, h.pp = 1, h.dp = 4, h.vpp = 1, h.pp_rank = 0, h.dp_rank = 2;
    h.cp = 2, h.ep = 2, h.cp_rank = 1, h.ep_rank = 0;
    strcpy(h.schedule, "1f1b");
    h.config_json = "{\"context_parallel_size\":2,\"expert_model_parallel_size\":2}";
    return h;
}

static void expect_5d(const trace_header *h) {
    assert_int_equal(h->world_size, 8);
    assert_int_equal(h->dp, 4);
    assert_int_equal(h->dp_rank, 2);
    assert_int_equal(h->cp, 2);
    assert_int_equal(h->cp_rank, 1);
    assert_int_equal(h->ep, 2);
    assert_int_equal(h->ep_rank, 0);
    /* the dp_cp group: 8 ranks, this one fifth (cp fastest) */
    assert_int_equal(trace_header_dp_cp_size(h), 8);
    assert_int_equal(trace_header_dp_cp_rank(h), 5);
}

/* Version 3 keeps the context- and expert-parallel sizes and ranks; a header that leaves them
 * 0 (a 3-D layout) is written with 1. */
static void context_and_expert_parallelism_are_in_the_header(void **state) {
    (void)state;
    char path[4200], err[512] = "";
    snprintf(path, sizeof path, "%s/rank5.trace", test_tmpdir("header_5d"));
    trace_header h = header_5d();
    trace_recorder *t = trace_create(&h, 4);
    trace_write(t, path);
    trace_destroy(t);
    trace_file *f = trace_file_read(path, err, sizeof err);
    if (!f) fail_msg("%s", err);
    expect_5d(trace_file_header(f));
    trace_file_free(f);

    trace_header flat = header(0, 1); /* cp and ep left 0 */
    t = trace_create(&flat, 4);
    trace_write(t, path);
    trace_destroy(t);
    f = trace_file_read(path, err, sizeof err);
    assert_non_null(f);
    const trace_header *r = trace_file_header(f);
    assert_true(r->cp == 1 && r->ep == 1 && r->cp_rank == 0 && r->ep_rank == 0);
    assert_int_equal(trace_header_dp_cp_size(r), 1);
    trace_file_free(f);
}

/* The file at path rewritten in version 3's layout (FORMAT.md, "Older versions"): no host
 * name after the cp, ep fields, the checksum recomputed. */
static void rewrite_as_version_3(const char *path) {
    size_t n;
    unsigned char *b = slurp(path, &n);
    const uint32_t three = 3;
    memcpy(b + 8, &three, 4);
    memmove(b + 132, b + 164, n - 164);
    n -= 32;
    const uint32_t crc = crc32_update(0, b, n - 4);
    memcpy(b + n - 4, &crc, 4);
    spill(path, b, n);
    free(b);
}

/* The file at path rewritten in version 2's layout (FORMAT.md, "Older versions"): no cp, ep
 * fields nor host after the run id, dp holding dp · cp and dp_rank cp_rank + cp · dp_rank, the
 * checksum recomputed. */
static void rewrite_as_version_2(const char *path) {
    size_t n;
    unsigned char *b = slurp(path, &n);
    int32_t v[4]; /* cp, ep, cp_rank, ep_rank at 116 */
    memcpy(v, b + 116, sizeof v);
    int32_t dp, dp_rank;
    memcpy(&dp, b + 12 + 4 * 4, 4), memcpy(&dp_rank, b + 12 + 8 * 4, 4);
    dp *= v[0], dp_rank = v[2] + v[0] * dp_rank;
    memcpy(b + 12 + 4 * 4, &dp, 4), memcpy(b + 12 + 8 * 4, &dp_rank, 4);
    const uint32_t two = 2;
    memcpy(b + 8, &two, 4);
    memmove(b + 116, b + 164, n - 164);
    n -= 48;
    const uint32_t crc = crc32_update(0, b, n - 4);
    memcpy(b + n - 4, &crc, 4);
    spill(path, b, n);
    free(b);
}

/* Runs recorded before version 3 (the saved runs of the baseline pictures among them) still
 * read, and read as the same run: the sizes come from their configuration. */
static void version_2_files_read_as_the_same_layout(void **state) {
    (void)state;
    char path[4200], err[512] = "";
    snprintf(path, sizeof path, "%s/rank5.trace", test_tmpdir("version_2"));
    trace_header h = header_5d();
    trace_recorder *t = trace_create(&h, 4);
    trace_record(t, TRACE_STEP, 1, -1, -1, 1.0, 2.0);
    trace_write(t, path);
    trace_destroy(t);
    rewrite_as_version_2(path);
    size_t n;
    unsigned char *b = slurp(path, &n);
    uint32_t version;
    memcpy(&version, b + 8, 4);
    assert_int_equal(version, 2);
    free(b);
    trace_file *f = trace_file_read(path, err, sizeof err);
    if (!f) fail_msg("%s", err);
    expect_5d(trace_file_header(f));
    assert_int_equal(trace_file_num_events(f), 1);
    assert_true(trace_file_event(f, 0)->t_end == 2.0);
    trace_file_free(f);

    /* A configuration without the sizes (an older run, a hand-made trace): dp stays dp · cp. */
    h.config_json = "{}";
    t = trace_create(&h, 4);
    trace_write(t, path);
    trace_destroy(t);
    rewrite_as_version_2(path);
    f = trace_file_read(path, err, sizeof err);
    if (!f) fail_msg("%s", err);
    const trace_header *r = trace_file_header(f);
    assert_true(r->dp == 8 && r->dp_rank == 5 && r->cp == 1 && r->ep == 1);
    trace_file_free(f);
}

/* The host name travels with the header; a version 3 file (before it) reads with none. */
static void host_names_round_trip_and_version_3_reads_without(void **state) {
    (void)state;
    char path[4200], err[512] = "";
    snprintf(path, sizeof path, "%s/rank5.trace", test_tmpdir("version_3"));
    trace_header h = header_5d();
    strcpy(h.host, "node2");
    trace_recorder *t = trace_create(&h, 4);
    trace_record(t, TRACE_STEP, 1, -1, -1, 1.0, 2.0);
    trace_write(t, path);
    trace_destroy(t);
    trace_file *f = trace_file_read(path, err, sizeof err);
    if (!f) fail_msg("%s", err);
    assert_string_equal(trace_file_header(f)->host, "node2");
    trace_file_free(f);
    rewrite_as_version_3(path);
    f = trace_file_read(path, err, sizeof err);
    if (!f) fail_msg("%s", err);
    assert_string_equal(trace_file_header(f)->host, "");
    expect_5d(trace_file_header(f));
    assert_true(trace_file_event(f, 0)->t_end == 2.0);
    trace_file_free(f);
}

/* Two ranks of dp 2 that disagree on the expert-parallel size are not one run. */
static void ranks_of_another_expert_layout_do_not_belong(void **state) {
    (void)state;
    const char *dir = test_tmpdir("run_ep");
    char path[4200], err[1024];
    for (int r = 0; r < 2; r++) {
        trace_header h = header(r, 2);
        h.pp = 1, h.pp_rank = 0, h.dp = 2, h.dp_rank = r, h.vpp = 1;
        h.ep = r == 0 ? 1 : 2, h.ep_rank = r == 0 ? 0 : 1;
        strcpy(h.schedule, "1f1b");
        trace_recorder *t = trace_create(&h, 4);
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, r);
        trace_write(t, path);
        trace_destroy(t);
    }
    assert_null(trace_run_read(dir, err, sizeof err));
    assert_non_null(strstr(err, "does not belong with rank0.trace (it says rank 1 of 2, tp 1 cp 1 "
                                "pp 1 dp 2 ep 2 vpp 1 '1f1b'"));
}

/* The layout's rules: tp · cp · pp · dp is the world, ep divides dp, the ranks inside. */
static void impossible_context_or_expert_layouts_are_refused(void **state) {
    (void)state;
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/rank5.trace", test_tmpdir("bad_5d"));
    for (int k = 0; k < 3; k++) {
        trace_header h = header_5d();
        if (k == 0) h.cp = 4;      /* 1 · 4 · 1 · 4 = 16 ranks, not 8 */
        if (k == 1) h.ep = 3;      /* does not divide dp 4 */
        if (k == 2) h.cp_rank = 2; /* cp is 2 */
        trace_recorder *t = trace_create(&h, 4);
        trace_write(t, path);
        trace_destroy(t);
        assert_null(trace_file_read(path, err, sizeof err));
        assert_non_null(strstr(err, "header at byte 12 has an impossible layout (rank 5, world 8"));
    }
}

static void every_truncation_gives_one_error_naming_file_and_offset(void **state) {
    (void)state;
    const char *dir = test_tmpdir("truncated");
    char good[4200], bad[4200];
    snprintf(good, sizeof good, "%s/good.trace", dir);
    snprintf(bad, sizeof bad, "%s/rank3.trace", dir);
    write_small(good, 0, 1);
    size_t n;
    unsigned char *b = slurp(good, &n);
    char want_prefix[4400];
    snprintf(want_prefix, sizeof want_prefix, "trace '%s': ", bad);
    for (size_t len = 0; len < n; len++) {
        spill(bad, b, len);
        char err[1024] = "";
        trace_file *f = trace_file_read(bad, err, sizeof err);
        if (f) fail_msg("a %zu-byte prefix of a %zu-byte file was accepted", len, n);
        if (strncmp(err, want_prefix, strlen(want_prefix)) != 0 || !strstr(err, "byte") ||
            strchr(err, '\n'))
            fail_msg("prefix %zu: unclear error '%s'", len, err);
    }
    /* A cut inside the events reads like the documented example. */
    spill(bad, b, n - 20);
    char err[1024];
    assert_null(trace_file_read(bad, err, sizeof err));
    char want[4600];
    size_t ev_bytes = 10 * 80; /* ten 80-byte event records */
    snprintf(want, sizeof want,
             "trace '%s': truncated at byte %zu (the events at byte %zu need %zu bytes)", bad,
             n - 20, n - 4 - ev_bytes, ev_bytes);
    assert_string_equal(err, want);
    free(b);
}

static void every_flipped_byte_is_detected(void **state) {
    (void)state;
    const char *dir = test_tmpdir("flipped");
    char good[4200], bad[4200];
    snprintf(good, sizeof good, "%s/good.trace", dir);
    snprintf(bad, sizeof bad, "%s/bad.trace", dir);
    write_small(good, 0, 1);
    size_t n;
    unsigned char *b = slurp(good, &n);
    for (size_t i = 0; i < n; i++)
        for (int bit = 0; bit < 8; bit += 7) {
            b[i] ^= (unsigned char)(1u << bit);
            spill(bad, b, n);
            b[i] ^= (unsigned char)(1u << bit);
            char err[1024] = "";
            trace_file *f = trace_file_read(bad, err, sizeof err);
            if (f) fail_msg("flipping bit %d of byte %zu went unnoticed", bit, i);
            if (!strstr(err, bad) || !strstr(err, "byte"))
                fail_msg("byte %zu: unclear error '%s'", i, err);
        }
    /* Garbage appended after the checksum. */
    unsigned char *longer = malloc(n + 3);
    memcpy(longer, b, n);
    memset(longer + n, 0xAB, 3);
    spill(bad, longer, n + 3);
    char err[1024];
    assert_null(trace_file_read(bad, err, sizeof err));
    assert_non_null(strstr(err, "3 unexpected bytes after the checksum"));
    /* Not a trace at all. */
    spill(bad, (const unsigned char *)"hello, world, this is text", 26);
    assert_null(trace_file_read(bad, err, sizeof err));
    assert_non_null(strstr(err, "bad magic at byte 0"));
    free(longer);
    free(b);
}

static void missing_file_is_one_clear_error(void **state) {
    (void)state;
    char err[512];
    assert_null(trace_file_read("/nonexistent/rank0.trace", err, sizeof err));
    assert_non_null(strstr(err, "trace '/nonexistent/rank0.trace': cannot be opened"));
}

static void run_directory_loads_all_ranks_and_pairs_sends_with_receives(void **state) {
    (void)state;
    const char *dir = test_tmpdir("run");
    char path[4200];
    for (int r = 0; r < 3; r++) {
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, r);
        write_small(path, r, 3);
    }
    char err[1024] = "";
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    assert_int_equal(run->nranks, 3);
    for (int r = 0; r < 3; r++) assert_int_equal(trace_file_header(run->ranks[r])->rank, r);
    /* Each rank sends to rank+1 with tag 5 and receives from rank-1: a ring of 3 pairs. */
    assert_int_equal(run->nflows, 3);
    assert_int_equal(run->unmatched, 0);
    for (int r = 0; r < 3; r++) {
        int send_flow = run->flow[r][3], recv_flow = run->flow[(r + 1) % 3][4];
        assert_true(send_flow >= 0);
        assert_int_equal(send_flow, recv_flow);
        assert_int_equal(run->flow[r][1], -1); /* a forward is no p2p */
    }
    trace_run_free(run);

    /* The trace directory itself works too. */
    snprintf(path, sizeof path, "%s/trace", dir);
    run = trace_run_read(path, err, sizeof err);
    assert_non_null(run);
    trace_run_free(run);

    /* A missing rank is named. */
    snprintf(path, sizeof path, "%s/trace/rank1.trace", dir);
    remove(path);
    assert_null(trace_run_read(dir, err, sizeof err));
    assert_non_null(strstr(err, "rank1.trace' is missing (rank 0's header says world size 3)"));

    /* A file of another layout is refused. */
    write_small(path, 1, 4);
    assert_null(trace_run_read(dir, err, sizeof err));
    assert_non_null(strstr(err, "does not belong with rank0.trace"));

    /* So is a file of the same layout written by another run: traces are never stitched. */
    trace_header other = header(1, 3);
    strcpy(other.run_id, "run-43");
    trace_recorder *t = trace_create(&other, 4);
    trace_write(t, path);
    trace_destroy(t);
    assert_null(trace_run_read(dir, err, sizeof err));
    assert_non_null(strstr(err, "run 'run-43'; rank 0 says"));

    assert_null(trace_run_read("/nonexistent/run", err, sizeof err));
    assert_string_equal(err, "run directory '/nonexistent/run' does not exist");
    const char *empty = test_tmpdir("empty");
    assert_null(trace_run_read(empty, err, sizeof err));
    assert_non_null(strstr(err, "has no trace/rank0.trace"));
}

static void pairs_follow_sender_receiver_and_tag_in_order(void **state) {
    (void)state;
    const char *dir = test_tmpdir("pairs");
    char path[4200];
    trace_header h0 = header(0, 2), h1 = header(1, 2);
    trace_recorder *a = trace_create(&h0, 16), *b = trace_create(&h1, 16);
    /* rank 0 sends tag 1 twice and tag 2 once; reported out of order (after the fact). */
    trace_comm(a, TRACE_SEND, "send", "pp", 1, 8, 1, 3.0, 3.0, 3.5); /* second tag-1 send */
    trace_comm(a, TRACE_SEND, "send", "pp", 1, 8, 1, 1.0, 1.0, 1.5); /* first tag-1 send */
    trace_comm(a, TRACE_SEND, "send", "pp", 1, 8, 2, 2.0, 2.0, 2.5);
    trace_comm(b, TRACE_RECV, "recv", "pp", 0, 8, 2, 1.9, 2.0, 2.5);
    trace_comm(b, TRACE_RECV, "recv", "pp", 0, 8, 1, 0.5, 1.0, 1.5);
    trace_comm(b, TRACE_RECV, "recv", "pp", 0, 8, 1, 2.9, 3.0, 3.5);
    trace_comm(b, TRACE_RECV, "recv", "pp", 0, 8, 3, 4.0, 4.0, 4.5); /* nobody sent it */
    snprintf(path, sizeof path, "%s/trace/rank0.trace", dir);
    trace_write(a, path);
    snprintf(path, sizeof path, "%s/trace/rank1.trace", dir);
    trace_write(b, path);
    trace_destroy(a);
    trace_destroy(b);
    char err[512];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    assert_non_null(run);
    assert_int_equal(run->nflows, 3);
    assert_int_equal(run->unmatched, 1);
    assert_int_equal(run->flow[0][1], run->flow[1][1]); /* first tag-1 pair */
    assert_int_equal(run->flow[0][0], run->flow[1][2]); /* second tag-1 pair */
    assert_int_equal(run->flow[0][2], run->flow[1][0]); /* tag 2 */
    assert_int_equal(run->flow[1][3], -1);
    trace_run_free(run);
}

/* ---- collectives matched across ranks, and the causality check ---------------------------- */

/* A collective with its group instance, as the trainer's hook records it. */
static void coll(trace_recorder *t, const char *group, int first, const char *label, int layer,
                 double t0, double t1) {
    trace_comm_info ci = {.kind = TRACE_COLLECTIVE,
                          .op = "all_reduce",
                          .group = group,
                          .label = label,
                          .peer = -1,
                          .tag = -1,
                          .layer = layer,
                          .group_first = first,
                          .bytes = 64,
                          .t_start = t0,
                          .t_ready = t0,
                          .t_end = t1,
                          .cpu = -1};
    trace_comm_full(t, &ci);
}

/* Two ranks, tp 2: rank 1's clock reads 0.5 s behind rank 0's (offset +0.5). */
static trace_header tp2_header(int rank, double uncertainty) {
    trace_header h = header(rank, 2);
    h.tp = 2, h.pp = 1, h.tp_rank = rank, h.pp_rank = 0;
    h.clock_offset = rank ? 0.5 : 0.0;
    h.clock_uncertainty = uncertainty;
    return h;
}

static trace_run *write_and_read(const char *dir, trace_recorder *a, trace_recorder *b) {
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/trace/rank0.trace", dir);
    trace_write(a, path);
    snprintf(path, sizeof path, "%s/trace/rank1.trace", dir);
    trace_write(b, path);
    trace_destroy(a);
    trace_destroy(b);
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    return run;
}

static void collectives_are_matched_and_ready_when_the_last_member_entered(void **state) {
    (void)state;
    trace_header h0 = tp2_header(0, 0.0), h1 = tp2_header(1, 0.0);
    trace_recorder *a = trace_create(&h0, 16), *b = trace_create(&h1, 16);
    /* call 0: rank 0 enters at 1.0, rank 1 at 0.8 local = 1.3 rank-0 time (the last) */
    coll(a, "tp", 0, "g fwd attn", 3, 1.0, 2.0);
    coll(b, "tp", 0, "g fwd attn", 3, 0.8, 1.6);
    /* call 1: rank 0 enters last, at 3.0; rank 1 at 2.0 local = 2.5 */
    coll(a, "tp", 0, "g fwd mlp", 3, 3.0, 3.5);
    coll(b, "tp", 0, "g fwd mlp", 3, 2.0, 3.0);
    /* a world call, reported in the other order on rank 1 (matching goes by t_start) */
    coll(a, "world", 0, "loss", -1, 4.0, 4.2);
    coll(b, "world", 0, "loss", -1, 3.6, 3.7);
    /* dp is a group of 1 in this layout: two members is impossible -> unmatched */
    coll(a, "dp", 0, "grads", -1, 5.0, 5.1);
    coll(b, "dp", 0, "grads", -1, 4.5, 4.6);
    /* members that disagree on the count -> unmatched; a tp call without group_first (the
     * instance from the coordinates) that only rank 1 made -> unmatched */
    coll(a, "xx", 0, NULL, -1, 6.0, 6.1);
    coll(a, "xx", 0, NULL, -1, 6.2, 6.3);
    coll(b, "xx", 0, NULL, -1, 5.6, 5.7);
    trace_comm(b, TRACE_COLLECTIVE, "all_reduce", "tp", -1, 8, -1, 7.0, 7.0, 7.1);
    trace_run *run = write_and_read(test_tmpdir("coll"), a, b);

    assert_int_equal(run->ncolls, 3);
    assert_int_equal(run->coll_unmatched, 6);
    assert_int_equal(run->coll[0][0], run->coll[1][0]);
    assert_int_equal(run->coll[0][1], run->coll[1][1]);
    assert_int_equal(run->coll[0][2], run->coll[1][2]);
    assert_true(run->coll[0][0] != run->coll[0][1]);
    for (int i = 3; i < 6; i++) assert_int_equal(run->coll[0][i], -1);
    for (int i = 3; i < 6; i++) assert_int_equal(run->coll[1][i], -1);
    int c0 = run->coll[0][0], c1 = run->coll[0][1];
    assert_int_equal(run->coll_last[c0], 1);
    assert_true(fabs(run->coll_entered[c0] - 1.3) < 1e-12);
    assert_int_equal(run->coll_last[c1], 0);
    assert_true(fabs(run->coll_entered[c1] - 3.0) < 1e-12);
    /* t_ready: the last entry on each member's own clock; the last member's is its start */
    assert_true(fabs(trace_file_event(run->ranks[0], 0)->t_ready - 1.3) < 1e-12);
    assert_true(fabs(trace_file_event(run->ranks[1], 0)->t_ready - 0.8) < 1e-12);
    assert_true(fabs(trace_file_event(run->ranks[0], 1)->t_ready - 3.0) < 1e-12);
    assert_true(fabs(trace_file_event(run->ranks[1], 1)->t_ready - 2.5) < 1e-12);
    /* unmatched collectives keep t_ready = t_start */
    assert_true(trace_file_event(run->ranks[0], 3)->t_ready == 5.0);
    char err[1024];
    assert_true(trace_run_check_causality(run, err, sizeof err));
    assert_string_equal(err, "");
    trace_run_free(run);
}

static void causality_check_finds_receives_before_sends_and_early_collectives(void **state) {
    (void)state;
    char err[2048];
    /* A correct run: the recv ends (0.7 local = 1.2) after the send began (1.0). */
    trace_header h0 = tp2_header(0, 0.0), h1 = tp2_header(1, 0.0);
    trace_recorder *a = trace_create(&h0, 16), *b = trace_create(&h1, 16);
    trace_comm(a, TRACE_SEND, "send", "pp", 1, 8, 5, 1.0, 1.0, 1.1);
    trace_comm(b, TRACE_RECV, "recv", "pp", 0, 8, 5, 0.4, 0.6, 0.7);
    coll(a, "tp", 0, "loss max", -1, 2.0, 2.5);
    coll(b, "tp", 0, "loss max", -1, 1.6, 2.0); /* enters at 2.1, ends at 2.5 */
    trace_run *run = write_and_read(test_tmpdir("causal_ok"), a, b);
    assert_true(trace_run_check_causality(run, err, sizeof err));
    trace_run_free(run);

    /* A recv that ends (0.45 local = 0.95) before its send began (1.0), and a collective on
     * rank 0 that ends (2.05) before rank 1 entered it (1.6 local = 2.1). */
    a = trace_create(&h0, 16), b = trace_create(&h1, 16);
    trace_comm(a, TRACE_SEND, "send", "pp", 1, 8, 5, 1.0, 1.0, 1.1);
    trace_comm(b, TRACE_RECV, "recv", "pp", 0, 8, 5, 0.4, 0.42, 0.45);
    coll(a, "tp", 0, "loss max", -1, 2.0, 2.05);
    coll(b, "tp", 0, "loss max", -1, 1.6, 2.0);
    run = write_and_read(test_tmpdir("causal_bad"), a, b);
    assert_false(trace_run_check_causality(run, err, sizeof err));
    assert_non_null(strstr(err,
                           "is not causal: 2 violations (1 receive ending before the send began, "
                           "1 collective ending before the last member entered)"));
    /* the earliest is the receive, at 0.95 s */
    assert_non_null(strstr(err, "earliest: rank 1's recv from rank 0 (tag 5, group pp"));
    assert_non_null(
        strstr(err, "ends at 0.950000 s but the send began at 1.000000 s, 50000.0 us later"));
    /* the collective's t_ready is clamped to its end: the wait covers the whole call */
    assert_true(trace_file_event(run->ranks[0], 1)->t_ready == 2.05);
    trace_run_free(run);

    /* The same times with clock uncertainties of 30 ms on each rank: 60 ms of slack covers
     * both (50 ms and 50 ms early), so nothing can be said against them. */
    h0 = tp2_header(0, 0.03), h1 = tp2_header(1, 0.03);
    a = trace_create(&h0, 16), b = trace_create(&h1, 16);
    trace_comm(a, TRACE_SEND, "send", "pp", 1, 8, 5, 1.0, 1.0, 1.1);
    trace_comm(b, TRACE_RECV, "recv", "pp", 0, 8, 5, 0.4, 0.42, 0.45);
    coll(a, "tp", 0, "loss max", -1, 2.0, 2.05);
    coll(b, "tp", 0, "loss max", -1, 1.6, 2.0);
    run = write_and_read(test_tmpdir("causal_slack"), a, b);
    assert_true(trace_run_check_causality(run, err, sizeof err));
    trace_run_free(run);

    /* Only the collective is early: named with its group instance, label and the ranks. */
    h0 = tp2_header(0, 0.0), h1 = tp2_header(1, 0.0);
    a = trace_create(&h0, 16), b = trace_create(&h1, 16);
    coll(a, "tp", 0, "g fwd mlp", 7, 2.0, 2.05);
    coll(b, "tp", 0, "g fwd mlp", 7, 1.6, 2.0);
    run = write_and_read(test_tmpdir("causal_coll"), a, b);
    assert_false(trace_run_check_causality(run, err, sizeof err));
    assert_non_null(
        strstr(err, "1 violation (0 receives ending before the send began, 1 collective"));
    assert_non_null(
        strstr(err, "rank 0's all_reduce on group tp of rank 0 (label 'g fwd mlp', layer 7"));
    assert_non_null(strstr(err, "but rank 1 entered it only at 2.100000 s"));
    trace_run_free(run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(events_are_kept_in_order_with_handles),
        cmocka_unit_test(a_whole_backward_carries_its_weight_share),
        cmocka_unit_test(full_buffer_counts_dropped_events_instead_of_crashing),
        cmocka_unit_test(strings_beyond_the_table_become_other),
        cmocka_unit_test(write_then_read_keeps_every_field),
        cmocka_unit_test(unfinished_events_are_marked_open),
        cmocka_unit_test(stream_collectives_keep_their_flag_through_the_file),
        cmocka_unit_test(compute_spans_take_device_times_when_the_step_ends),
        cmocka_unit_test(open_spans_resolve_their_begin_now_and_their_end_later),
        cmocka_unit_test(dropped_spans_take_no_markers_and_none_leak),
        cmocka_unit_test(context_and_expert_parallelism_are_in_the_header),
        cmocka_unit_test(version_2_files_read_as_the_same_layout),
        cmocka_unit_test(impossible_context_or_expert_layouts_are_refused),
        cmocka_unit_test(ranks_of_another_expert_layout_do_not_belong),
        cmocka_unit_test(every_truncation_gives_one_error_naming_file_and_offset),
        cmocka_unit_test(host_names_round_trip_and_version_3_reads_without),
        cmocka_unit_test(every_flipped_byte_is_detected),
        cmocka_unit_test(missing_file_is_one_clear_error),
        cmocka_unit_test(run_directory_loads_all_ranks_and_pairs_sends_with_receives),
        cmocka_unit_test(pairs_follow_sender_receiver_and_tag_in_order),
        cmocka_unit_test(collectives_are_matched_and_ready_when_the_last_member_entered),
        cmocka_unit_test(causality_check_finds_receives_before_sends_and_early_collectives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
