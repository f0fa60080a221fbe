/* comm_test.c — every operation of comm.h under mpirun, at the world size given as argv[1]
 * (one Bazel target per size: 1, 2, 4, 8, oversubscribed). "0" runs without mpirun: the
 * plain serial case, where no MPI call may happen. Every rank runs every test.
 *
 * Values are chosen so that the expected result is exact (small integers), whatever order
 * the reduction adds them in. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/device/device.h"
#include "src/precision/convert.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"
#include "src/runtime/parallel_state.h"
#include "tests/support/testing.h"

static comm_group *g_world;

static int R(void) { return comm_rank(g_world); }
static int N(void) { return comm_size(g_world); }

static void all_reduce_sums_and_maxes_every_type(void **state) {
    (void)state;
    enum { n = 37 }; /* odd on purpose */
    int r = R(), size = N();
    float f[n], want[n];
    int32_t i32[n];
    int64_t i64[n];
    for (int i = 0; i < n; i++) {
        f[i] = (float)(r + i);
        want[i] = (float)(size * i + size * (size - 1) / 2);
        i32[i] = r * 1000 + i;
        i64[i] = (int64_t)r * 4000000000LL + i;
    }
    comm_all_reduce(g_world, f, n, COMM_FLOAT32, COMM_SUM);
    expect_close(f, want, n, 0, 0, "float sum");
    comm_all_reduce(g_world, i32, n, COMM_INT32, COMM_MAX);
    comm_all_reduce(g_world, i64, n, COMM_INT64, COMM_SUM);
    for (int i = 0; i < n; i++) {
        assert_int_equal(i32[i], (size - 1) * 1000 + i);
        assert_true(i64[i] == 4000000000LL * (size * (size - 1) / 2) + (int64_t)size * i);
    }
    uint8_t b[3] = {1, 2, (uint8_t)r};
    comm_all_reduce(g_world, b, 3, COMM_BYTE, COMM_MAX);
    assert_int_equal(b[2], size - 1);
}

static void half_precision_sums_round_like_fp32_then_nearest_even(void **state) {
    (void)state;
    /* The conversions themselves. */
    assert_int_equal(prec_fp32_to_bf16(1.0f), 0x3F80);
    assert_int_equal(prec_fp32_to_bf16(1.0f + 1.0f / 256), 0x3F80); /* tie -> even (down) */
    assert_int_equal(prec_fp32_to_bf16(1.0f + 3.0f / 256), 0x3F82); /* tie -> even (up) */
    assert_true(prec_bf16_to_fp32(prec_fp32_to_bf16(-2.5f)) == -2.5f);
    assert_int_equal(prec_fp32_to_fp16(1.0f), 0x3C00);
    assert_int_equal(prec_fp32_to_fp16(65504.0f), 0x7BFF);
    assert_int_equal(prec_fp32_to_fp16(65520.0f), 0x7C00);           /* rounds to inf */
    assert_int_equal(prec_fp32_to_fp16(1.0f + 1.0f / 2048), 0x3C00); /* tie -> even */
    assert_true(prec_fp16_to_fp32(prec_fp32_to_fp16(5.9604645e-8f)) ==
                5.9604645e-8f); /* subnormal */
    assert_true(prec_fp16_to_fp32(0xC500) == -5.0f);

    enum { n = 11 };
    int r = R(), size = N();
    uint16_t bf[n], hf[n], mx[n];
    for (int i = 0; i < n; i++) {
        bf[i] = prec_fp32_to_bf16((float)(r + i));
        hf[i] = prec_fp32_to_fp16(0.5f * (float)(r - i));
        mx[i] = prec_fp32_to_bf16((float)(r == i % size ? 100 + i : -i));
    }
    comm_all_reduce(g_world, bf, n, COMM_BF16, COMM_SUM);
    comm_all_reduce(g_world, hf, n, COMM_FP16, COMM_SUM);
    comm_all_reduce(g_world, mx, n, COMM_BF16, COMM_MAX);
    for (int i = 0; i < n; i++) {
        float s = (float)(size * i + size * (size - 1) / 2);
        assert_true(prec_bf16_to_fp32(bf[i]) == s);
        float h = 0.5f * (float)(size * (size - 1) / 2 - size * i);
        assert_true(prec_fp16_to_fp32(hf[i]) == h);
        assert_true(prec_bf16_to_fp32(mx[i]) == (float)(100 + i));
    }
}

static void all_gather_places_parts_in_rank_order(void **state) {
    (void)state;
    enum { count = 5 };
    int r = R(), size = N();
    int32_t send[count], *recv = malloc(sizeof(int32_t) * count * (size_t)size);
    for (int i = 0; i < count; i++) send[i] = 100 * r + i;
    comm_all_gather(g_world, send, recv, count, COMM_INT32);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < count; i++) assert_int_equal(recv[p * count + i], 100 * p + i);
    /* in place: our part already sits in our slot */
    memset(recv, 0xff, sizeof(int32_t) * count * (size_t)size);
    memcpy(recv + r * count, send, sizeof send);
    comm_all_gather(g_world, recv + r * count, recv, count, COMM_INT32);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < count; i++) assert_int_equal(recv[p * count + i], 100 * p + i);
    free(recv);
}

static void reduce_scatter_gives_each_rank_its_part_of_the_sum(void **state) {
    (void)state;
    enum { count = 3 };
    int r = R(), size = N();
    float *send = malloc(sizeof(float) * count * (size_t)size), recv[count], want[count];
    for (int j = 0; j < count * size; j++) send[j] = (float)((r + 1) * (j + 1));
    comm_reduce_scatter(g_world, send, recv, count, COMM_FLOAT32, COMM_SUM);
    for (int k = 0; k < count; k++) want[k] = (float)(size * (size + 1) / 2 * (r * count + k + 1));
    expect_close(recv, want, count, 0, 0, "reduce_scatter");
    free(send);
}

/* Large fp32 buffers take the ring path (comm.c): segments, in-place all-gather, odd sizes. */
static void large_reduce_scatter_and_all_gather_take_the_ring_and_stay_exact(void **state) {
    (void)state;
    const size_t count = 3 * 131072 + 17; /* several ring segments and a remainder */
    int r = R(), size = N();
    size_t total = count * (size_t)size;
    float *send = malloc(sizeof(float) * total), *recv = malloc(sizeof(float) * count);
    float *want = malloc(sizeof(float) * count), *all = malloc(sizeof(float) * total);
    for (size_t j = 0; j < total; j++) send[j] = (float)((r + 1) * (int)(j % 1000));
    comm_reduce_scatter(g_world, send, recv, count, COMM_FLOAT32, COMM_SUM);
    for (size_t k = 0; k < count; k++)
        want[k] = (float)(size * (size + 1) / 2 * (int)(((size_t)r * count + k) % 1000));
    expect_close(recv, want, count, 0, 0, "ring reduce_scatter"); /* small integers: exact */
    memcpy(all + (size_t)r * count, recv, sizeof(float) * count);
    comm_all_gather(g_world, all + (size_t)r * count, all, count, COMM_FLOAT32);
    for (int q = 0; q < size; q++)
        for (size_t k = 0; k < count; k++)
            if (all[(size_t)q * count + k] !=
                (float)(size * (size + 1) / 2 * (int)(((size_t)q * count + k) % 1000)))
                fail_msg("ring all_gather: part %d element %zu", q, k);
    free(send);
    free(recv);
    free(want);
    free(all);
}

/* In place (comm.h): the ring sums each block where it lies and leaves this rank's part at the
 * front, the same bits as out of place; small and ring sizes, odd counts. */
static void in_place_reduce_scatter_leaves_the_part_at_the_front_like_out_of_place(void **state) {
    (void)state;
    const size_t counts[] = {5, 3 * 131072 + 17};
    int r = R(), size = N();
    for (int c = 0; c < 2; c++) {
        const size_t count = counts[c], total = count * (size_t)size;
        float *buf = malloc(sizeof(float) * total), *send = malloc(sizeof(float) * total);
        float *want = malloc(sizeof(float) * count);
        for (size_t j = 0; j < total; j++)
            send[j] = buf[j] = 0.25f * (float)((r + 3) * (int)(j % 997));
        comm_reduce_scatter(g_world, send, want, count, COMM_FLOAT32, COMM_SUM);
        comm_reduce_scatter(g_world, buf, buf, count, COMM_FLOAT32, COMM_SUM);
        expect_close(buf, want, count, 0, 0, "in-place reduce_scatter");
        free(buf);
        free(send);
        free(want);
    }
}

static void broadcast_copies_the_roots_buffer(void **state) {
    (void)state;
    enum { n = 9 };
    int r = R(), root = N() - 1;
    int64_t buf[n];
    for (int i = 0; i < n; i++) buf[i] = r == root ? 7 * i + 1 : -1;
    comm_broadcast(g_world, buf, n, COMM_INT64, root);
    for (int i = 0; i < n; i++) assert_true(buf[i] == 7 * i + 1);
    comm_barrier(g_world);
}

/* all_to_all_v: rank r sends c(r, j) = (r + 2j + 1) % 3 elements to rank j (zeros among
 * them, its own block too), blocks laid out with a one-element gap that must stay untouched;
 * the counter adds only what goes to OTHER ranks. */
static size_t a2a_count(int from, int to) { return (size_t)((from + 2 * to + 1) % 3); }

static void all_to_all_v_moves_uneven_blocks_and_counts_bytes_to_others(void **state) {
    (void)state;
    int r = R(), size = N();
    size_t *sc = malloc(sizeof(size_t) * 4 * (size_t)size), *sd = sc + size, *rc = sc + 2 * size,
           *rd = sc + 3 * size;
    size_t send_end = 0, recv_end = 0, to_others = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = a2a_count(r, j);
        sd[j] = send_end;
        send_end += sc[j] + 1; /* the gap */
        rc[j] = a2a_count(j, r);
        rd[j] = recv_end;
        recv_end += rc[j] + 1;
        if (j != r) to_others += sc[j] * sizeof(int32_t);
    }
    int32_t *send = malloc(sizeof(int32_t) * send_end), *recv = malloc(sizeof(int32_t) * recv_end);
    for (int j = 0; j < size; j++)
        for (size_t i = 0; i < sc[j]; i++) send[sd[j] + i] = 1000 * r + 100 * j + (int32_t)i;
    for (size_t i = 0; i < recv_end; i++) recv[i] = -7;
    comm_reset_counters(g_world);
    comm_all_to_all_v(g_world, send, sc, sd, recv, rc, rd, COMM_INT32);
    assert_int_equal(comm_bytes_collective(g_world), to_others);
    assert_int_equal(comm_calls(g_world), 1);
    for (int s = 0; s < size; s++) {
        for (size_t i = 0; i < rc[s]; i++)
            assert_int_equal(recv[rd[s] + i], 1000 * s + 100 * r + (int32_t)i);
        assert_int_equal(recv[rd[s] + rc[s]], -7); /* the gap after the block */
    }
    free(send);
    free(recv);
    free(sc);
}

static void zero_length_buffers_are_fine_everywhere(void **state) {
    (void)state;
    float a[1] = {42}, b[1] = {43};
    int peer = R() ^ 1;
    if (peer >= N()) peer = R();
    comm_all_reduce(g_world, a, 0, COMM_FLOAT32, COMM_SUM);
    comm_all_reduce(g_world, a, 0, COMM_BF16, COMM_SUM);
    comm_all_gather(g_world, a, b, 0, COMM_FLOAT32);
    comm_reduce_scatter(g_world, a, b, 0, COMM_FLOAT32, COMM_SUM);
    comm_broadcast(g_world, a, 0, COMM_FLOAT32, 0);
    comm_send(g_world, a, 0, COMM_FLOAT32, peer, 3);
    comm_recv(g_world, b, 0, COMM_FLOAT32, peer, 3);
    comm_sendrecv(g_world, a, 0, peer, b, 0, peer, COMM_FLOAT32, 4);
    comm_wait_sends(g_world);
    assert_true(a[0] == 42 && b[0] == 43);
}

static void send_send_then_recv_recv_does_not_deadlock(void **state) {
    (void)state;
    /* Pairs (0,1), (2,3), ...; a lone rank talks to itself. Messages bigger than any eager
     * limit so that a blocking send would hang. */
    enum { n = 300000 };
    int r = R(), peer = r ^ 1;
    if (peer >= N()) peer = r;
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    float *ra = malloc(sizeof(float) * n), *rb = malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++) {
        a[i] = (float)(r * 10 + 1);
        b[i] = (float)(r * 10 + 2);
    }
    comm_send(g_world, a, n, COMM_FLOAT32, peer, 1);
    comm_send(g_world, b, n, COMM_FLOAT32, peer, 2);
    a[0] = b[0] = -1;                                 /* the copies went out, not these buffers */
    comm_recv(g_world, rb, n, COMM_FLOAT32, peer, 2); /* tags match out of order */
    comm_recv(g_world, ra, n, COMM_FLOAT32, peer, 1);
    comm_wait_sends(g_world);
    assert_true(ra[0] == (float)(peer * 10 + 1) && ra[n - 1] == (float)(peer * 10 + 1));
    assert_true(rb[0] == (float)(peer * 10 + 2) && rb[n - 1] == (float)(peer * 10 + 2));
    free(a);
    free(b);
    free(ra);
    free(rb);
}

/* --overlap-p2p-comm's receive posted ahead: posted before the peer sends, waited for out
 * of order, the payload is the peer's (large: rendezvous, and small: eager). A lone rank
 * (and the serial run) talks to itself. */
static void receives_posted_ahead_get_their_messages_in_any_wait_order(void **state) {
    (void)state;
    enum { big = 300000, small = 7 };
    int r = R(), peer = r ^ 1;
    if (peer >= N()) peer = r;
    float *a = malloc(sizeof(float) * big), *ra = malloc(sizeof(float) * big);
    float b[small], rb[small];
    for (int i = 0; i < big; i++) a[i] = (float)(r * 10 + 1);
    for (int i = 0; i < small; i++) b[i] = (float)(r * 10 + 2);
    comm_request *qa = NULL, *qb = NULL;
    if (peer != r) { /* a lone rank must send first: its receive is served at the wait */
        qa = comm_irecv(g_world, ra, big, COMM_FLOAT32, peer, 3);
        qb = comm_irecv(g_world, rb, small, COMM_FLOAT32, peer, 4);
    }
    comm_send(g_world, a, big, COMM_FLOAT32, peer, 3);
    comm_send(g_world, b, small, COMM_FLOAT32, peer, 4);
    if (peer == r) {
        qa = comm_irecv(g_world, ra, big, COMM_FLOAT32, peer, 3);
        qb = comm_irecv(g_world, rb, small, COMM_FLOAT32, peer, 4);
    }
    comm_request_wait(qb);
    comm_request_wait(qa);
    comm_wait_sends(g_world);
    for (int i = 0; i < small; i++) assert_true(rb[i] == (float)(peer * 10 + 2));
    assert_true(ra[0] == (float)(peer * 10 + 1) && ra[big - 1] == (float)(peer * 10 + 1));
    free(a);
    free(ra);
}

static void sendrecv_in_a_ring_passes_to_the_next_rank(void **state) {
    (void)state;
    enum { n = 13 };
    int r = R(), size = N();
    int32_t out[n], in[n];
    for (int i = 0; i < n; i++) out[i] = r * 100 + i;
    comm_sendrecv(g_world, out, n, (r + 1) % size, in, n, (r + size - 1) % size, COMM_INT32, 9);
    for (int i = 0; i < n; i++) assert_int_equal(in[i], ((r + size - 1) % size) * 100 + i);
}

/* For every layout of this world size (with context and expert parallelism of 1 and 2 too):
 * an all-reduce in each group adds up exactly its members' global ranks, group ranks equal
 * the coordinates, and activations flow stage to stage over the pp group. */
static void subgroups_of_parallel_state_reduce_over_their_members(void **state) {
    (void)state;
    static const int sizes[] = {1, 2, 4, 8};
    int size = N(), me = dist_rank();
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int o = 0; o < 2; o++)
                for (int cp = 1; cp <= 2; cp++)
                    for (int ep = 1; ep <= 2; ep++) {
                        int tp = sizes[a], pp = sizes[b];
                        if (size % (tp * cp * pp) || (size / (tp * cp * pp)) % ep) continue;
                        pg_layout l;
                        char err[256];
                        assert_true(pg_layout_make(&l, size, tp, cp, ep, pp, 1,
                                                   o ? "tp-cp-ep-pp-dp" : "tp-cp-ep-dp-pp", err,
                                                   sizeof err));
                        parallel_state *ps = ps_create(&l, me);
                        assert_int_equal(comm_size(ps->tp), tp);
                        assert_int_equal(comm_size(ps->pp), pp);
                        assert_int_equal(comm_size(ps->dp), l.dp);
                        assert_int_equal(comm_size(ps->mp), tp * pp);
                        assert_int_equal(comm_size(ps->cp), cp);
                        assert_int_equal(comm_size(ps->ep), ep);
                        assert_int_equal(comm_size(ps->edp), l.edp);
                        assert_int_equal(comm_size(ps->dp_cp), l.dp * cp);
                        assert_int_equal(comm_size(ps->edp_cp), l.edp * cp);
                        assert_int_equal(comm_rank(ps->cp), ps->cp_rank);
                        assert_int_equal(comm_rank(ps->ep), ps->ep_rank);
                        assert_int_equal(comm_rank(ps->edp), ps->edp_rank);
                        assert_int_equal(ps->dp_rank, ps->ep_rank + ep * ps->edp_rank);
                        comm_group *gs[PG_NKINDS] = {[PG_TP] = ps->tp,
                                                     [PG_DP] = ps->dp,
                                                     [PG_PP] = ps->pp,
                                                     [PG_MP] = ps->mp,
                                                     [PG_EMBEDDING] = ps->embedding,
                                                     [PG_CP] = ps->cp,
                                                     [PG_EP] = ps->ep,
                                                     [PG_EDP] = ps->edp,
                                                     [PG_DP_CP] = ps->dp_cp,
                                                     [PG_EDP_CP] = ps->edp_cp,
                                                     [PG_TP_CP] = ps->tp_cp};
                        for (int k = 0; k < PG_NKINDS; k++) {
                            int m[64], idx;
                            int number = pg_group_of(&l, (pg_kind)k, me, m, &idx);
                            if (number < 0) {
                                assert_null(gs[k]);
                                continue;
                            }
                            assert_non_null(gs[k]);
                            assert_string_equal(comm_name(gs[k]), pg_kind_name((pg_kind)k));
                            assert_int_equal(comm_rank(gs[k]), idx);
                            int64_t want = 0;
                            for (int i = 0; i < comm_size(gs[k]); i++) {
                                assert_int_equal(comm_global_rank(gs[k], i), m[i]);
                                want += m[i];
                            }
                            int64_t v = me;
                            comm_all_reduce(gs[k], &v, 1, COMM_INT64, COMM_SUM);
                            assert_true(v == want);
                        }
                        /* pipeline: forward activations from the first stage to the last */
                        float act[6];
                        if (!ps->is_first_stage) {
                            comm_recv(ps->pp, act, 6, COMM_FLOAT32, ps->pp_rank - 1, 0);
                            assert_true(act[5] == (float)(ps->prev_pp_rank + 5));
                        }
                        for (int i = 0; i < 6; i++) act[i] = (float)(me + i);
                        if (!ps->is_last_stage)
                            comm_send(ps->pp, act, 6, COMM_FLOAT32, ps->pp_rank + 1, 0);
                        assert_int_equal(comm_global_rank(ps->pp, (ps->pp_rank + 1) % pp),
                                         ps->next_pp_rank);
                        comm_barrier(ps->world);
                        ps_destroy(ps);
                    }
}

typedef struct {
    int n;
    comm_event ev[16];
    char ops[16][16];
} trace_log;

static void record(const comm_event *e, void *ctx) {
    trace_log *t = ctx;
    if (t->n >= 16) return;
    t->ev[t->n] = *e;
    snprintf(t->ops[t->n], sizeof t->ops[t->n], "%s", e->op);
    t->ev[t->n].op = t->ops[t->n];
    t->ev[t->n].group = NULL;
    t->n++;
}

static void trace_hook_reports_every_call_with_its_bytes(void **state) {
    (void)state;
    trace_log t = {0};
    int r = R(), size = N(), next = (r + 1) % size, prev = (r + size - 1) % size;
    float x[10] = {0}, y[10 * 8];
    comm_reset_counters(g_world);
    comm_set_trace_hook(record, &t);
    comm_all_reduce(g_world, x, 10, COMM_FLOAT32, COMM_SUM);
    comm_all_gather(g_world, x, y, 10, COMM_FLOAT32);
    comm_send(g_world, x, 7, COMM_FLOAT32, next, 5);
    comm_recv(g_world, y, 7, COMM_FLOAT32, prev, 5);
    comm_sendrecv(g_world, x, 3, next, y, 3, prev, COMM_BF16, 6);
    comm_wait_sends(g_world);
    comm_set_trace_hook(NULL, NULL);
    comm_barrier(g_world); /* not traced */
    assert_int_equal(t.n, 6); /* sendrecv is traced as its two halves */
    assert_string_equal(t.ops[0], "all_reduce");
    assert_int_equal(t.ev[0].bytes, 40);
    assert_int_equal(t.ev[0].peer, -1);
    assert_string_equal(t.ops[1], "all_gather");
    assert_int_equal(t.ev[1].bytes, 40 * size);
    assert_string_equal(t.ops[2], "send");
    assert_int_equal(t.ev[2].bytes, 28);
    assert_int_equal(t.ev[2].peer, comm_global_rank(g_world, next));
    assert_int_equal(t.ev[2].tag, 5);
    assert_string_equal(t.ops[3], "recv");
    assert_int_equal(t.ev[3].peer, comm_global_rank(g_world, prev));
    assert_int_equal(t.ev[3].bytes, 28);
    assert_true(t.ev[3].t_start <= t.ev[3].t_ready && t.ev[3].t_ready <= t.ev[3].t_end);
    /* sendrecv: a send to next and a receive from prev, over the same time, counted once */
    assert_string_equal(t.ops[4], "send");
    assert_int_equal(t.ev[4].bytes, 6);
    assert_int_equal(t.ev[4].peer, comm_global_rank(g_world, next));
    assert_int_equal(t.ev[4].tag, 6);
    assert_string_equal(t.ops[5], "recv");
    assert_int_equal(t.ev[5].bytes, 6);
    assert_int_equal(t.ev[5].peer, comm_global_rank(g_world, prev));
    assert_true(t.ev[5].t_start <= t.ev[5].t_ready && t.ev[5].t_ready <= t.ev[5].t_end);
    for (int i = 0; i < 6; i++) assert_true(t.ev[i].t_start <= t.ev[i].t_end);
    assert_int_equal(comm_bytes_sent(g_world), 28 + 6);
    assert_int_equal(comm_bytes_received(g_world), 28 + 6);
    assert_int_equal(comm_bytes_collective(g_world), 40 + 40 * size);
    assert_int_equal(comm_calls(g_world), 6);
}

static void recv_waits_for_a_late_sender_and_says_so(void **state) {
    (void)state;
    if (N() < 2) skip();
    trace_log t = {0};
    float x[4] = {1, 2, 3, 4};
    if (R() == 1) {
        comm_set_trace_hook(record, &t);
        comm_recv(g_world, x, 4, COMM_FLOAT32, 0, 11);
        comm_set_trace_hook(NULL, NULL);
        assert_int_equal(t.n, 1);
        /* rank 0 sleeps 0.3 s before sending: that is waiting, not transfer */
        double waiting = t.ev[0].t_ready - t.ev[0].t_start,
               transfer = t.ev[0].t_end - t.ev[0].t_ready;
        assert_true(waiting > 0.15);
        assert_true(transfer < waiting);
    } else if (R() == 0) {
        struct timespec ts = {0, 300000000};
        nanosleep(&ts, NULL);
        comm_send(g_world, x, 4, COMM_FLOAT32, 1, 11);
        comm_wait_sends(g_world);
    }
    comm_barrier(g_world);
}

static void serial_run_never_starts_mpi(void **state) {
    (void)state;
    if (getenv("OMPI_COMM_WORLD_SIZE")) skip();
    assert_false(dist_is_mpi());
    assert_int_equal(dist_world_size(), 1);
    assert_int_equal(dist_rank(), 0);
    assert_int_equal(dist_local_rank(), 0);
    pg_layout l;
    char err[64];
    assert_true(pg_layout_make(&l, 1, 1, 1, 1, 1, 1, NULL, err, sizeof err));
    parallel_state *ps = ps_create(&l, 0);
    assert_true(ps->is_first_stage && ps->is_last_stage);
    assert_int_equal(ps->next_pp_rank, 0);
    assert_non_null(ps->embedding);
    assert_int_equal(comm_size(ps->embedding), 1);
    ps_destroy(ps);
}

/* Buffers in device memory (here the cpu-guarded device, whose pages the host cannot touch
 * outside a kernel) go through host staging on MPI groups: every operation, in place or not,
 * small or ring-sized, gives what it gives on host buffers. */
static float *to_device(const float *h, size_t n) {
    float *d = device_alloc(n * sizeof(float), "comm test");
    device_upload(d, h, n * sizeof(float));
    return d;
}

static void expect_device_equals(const float *d, const float *want, size_t n, const char *what) {
    float *h = malloc(n * sizeof(float) + 1);
    device_download(h, d, n * sizeof(float));
    expect_close(h, want, n, 0, 0, what);
    free(h);
}

static void device_buffers_are_staged_through_host_memory(void **state) {
    (void)state;
    char err[256];
    assert_true(device_init(DEVICE_CPU_GUARDED, -1, err, sizeof err));
    const int r = R(), size = N();
    const size_t sizes[2] = {37, 40000}; /* the MPI call and the ring path */
    for (int k = 0; k < 2; k++) {
        const size_t n = sizes[k], total = n * (size_t)size;
        float *h = malloc(total * sizeof(float)), *want = malloc(total * sizeof(float));
        for (size_t i = 0; i < total; i++) h[i] = (float)((r + 1) * (int)(i % 97));
        /* all-reduce */
        memcpy(want, h, n * sizeof(float));
        comm_all_reduce(g_world, want, n, COMM_FLOAT32, COMM_SUM);
        float *d = to_device(h, n);
        comm_all_reduce(g_world, d, n, COMM_FLOAT32, COMM_SUM);
        expect_device_equals(d, want, n, "all_reduce of a device buffer");
        device_free(d);
        /* reduce-scatter, separate buffers and in place */
        comm_reduce_scatter(g_world, h, want, n, COMM_FLOAT32, COMM_SUM);
        float *ds = to_device(h, total), *dr = device_alloc(n * sizeof(float), "comm test");
        comm_reduce_scatter(g_world, ds, dr, n, COMM_FLOAT32, COMM_SUM);
        expect_device_equals(dr, want, n, "reduce_scatter of device buffers");
        comm_reduce_scatter(g_world, ds, ds, n, COMM_FLOAT32, COMM_SUM);
        expect_device_equals(ds, want, n, "in-place reduce_scatter of a device buffer");
        device_free(ds);
        device_free(dr);
        /* all-gather, separate buffers and in place */
        comm_all_gather(g_world, h, want, n, COMM_FLOAT32);
        float *dsend = to_device(h, n), *dall = device_alloc(total * sizeof(float), "comm test");
        comm_all_gather(g_world, dsend, dall, n, COMM_FLOAT32);
        expect_device_equals(dall, want, total, "all_gather of device buffers");
        device_zero(dall, total * sizeof(float));
        device_upload(dall + (size_t)r * n, h, n * sizeof(float));
        comm_all_gather(g_world, dall + (size_t)r * n, dall, n, COMM_FLOAT32);
        expect_device_equals(dall, want, total, "in-place all_gather of a device buffer");
        /* broadcast from the last rank */
        memcpy(want, h, n * sizeof(float));
        comm_broadcast(g_world, want, n, COMM_FLOAT32, size - 1);
        device_upload(dsend, h, n * sizeof(float));
        comm_broadcast(g_world, dsend, n, COMM_FLOAT32, size - 1);
        expect_device_equals(dsend, want, n, "broadcast of a device buffer");
        /* a ring of send / recv and of sendrecv */
        const int next = (r + 1) % size, prev = (r + size - 1) % size;
        for (size_t i = 0; i < n; i++) want[i] = (float)((prev + 1) * (int)(i % 97));
        device_upload(dsend, h, n * sizeof(float));
        comm_send(g_world, dsend, n, COMM_FLOAT32, next, 7);
        comm_recv(g_world, dall, n, COMM_FLOAT32, prev, 7);
        comm_wait_sends(g_world);
        expect_device_equals(dall, want, n, "send/recv of device buffers");
        device_zero(dall, n * sizeof(float));
        comm_sendrecv(g_world, dsend, n, next, dall, n, prev, COMM_FLOAT32, 8);
        expect_device_equals(dall, want, n, "sendrecv of device buffers");
        device_free(dsend);
        device_free(dall);
        free(h);
        free(want);
    }
    /* host buffers are untouched by staging: a plain all-reduce still works */
    float one = 1.0f;
    comm_all_reduce(g_world, &one, 1, COMM_FLOAT32, COMM_SUM);
    assert_true(one == (float)size);
    assert_int_equal(device_bytes_in_use(), 0);
    device_shutdown();
}

int main(int argc, char **argv) {
    int np = argc > 1 ? atoi(argv[1]) : 0;
    if (np > 0) mpi_test_launch(argc, argv, np);
    dist_init(&argc, &argv);
    if (np > 0) {
        assert_true(dist_is_mpi());
        if (dist_world_size() != np)
            fail_msg("launched with %d ranks, expected %d", dist_world_size(), np);
    }
    g_world = comm_group_world(COMM_MPI);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_reduce_sums_and_maxes_every_type),
        cmocka_unit_test(half_precision_sums_round_like_fp32_then_nearest_even),
        cmocka_unit_test(all_gather_places_parts_in_rank_order),
        cmocka_unit_test(reduce_scatter_gives_each_rank_its_part_of_the_sum),
        cmocka_unit_test(large_reduce_scatter_and_all_gather_take_the_ring_and_stay_exact),
        cmocka_unit_test(in_place_reduce_scatter_leaves_the_part_at_the_front_like_out_of_place),
        cmocka_unit_test(broadcast_copies_the_roots_buffer),
        cmocka_unit_test(all_to_all_v_moves_uneven_blocks_and_counts_bytes_to_others),
        cmocka_unit_test(zero_length_buffers_are_fine_everywhere),
        cmocka_unit_test(send_send_then_recv_recv_does_not_deadlock),
        cmocka_unit_test(receives_posted_ahead_get_their_messages_in_any_wait_order),
        cmocka_unit_test(sendrecv_in_a_ring_passes_to_the_next_rank),
        cmocka_unit_test(subgroups_of_parallel_state_reduce_over_their_members),
        cmocka_unit_test(trace_hook_reports_every_call_with_its_bytes),
        cmocka_unit_test(recv_waits_for_a_late_sender_and_says_so),
        cmocka_unit_test(serial_run_never_starts_mpi),
        cmocka_unit_test(device_buffers_are_staged_through_host_memory),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    comm_group_destroy(g_world);
    dist_finalize();
    return failed;
}
