/* timeline_test.c — the timeline model, its time classes (compute / transfer / wait / idle),
 * the bubble, the schedule's phases, step windows and the layout numbers (of the whole step
 * and of a --window of it), on hand-made timelines and traces with times chosen so every
 * number can be checked by hand. No drawing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testing.h"
#include "tests/viz/pipeline_fixture.h"
#include "viz/timeline.h"
#include "viz/timeline_layout.h"
#include "viz/timeline_load.h"

static viz_tl_box box(viz_tl_kind k, int mb, int chunk, double a, double b) {
    return (viz_tl_box){.kind = k,
                        .microbatch = mb,
                        .chunk = chunk,
                        .start = a,
                        .ready = a,
                        .end = b,
                        .peer = -1,
                        .flow = -1};
}

/* GPipe, p = 2, m = 2, forward 1 s, backward 2 s:
 *
 *   stage 0  F0 F1 .  .  .  B0 B0 B1 B1 .     (seconds 0..10)
 *   stage 1  .  F0 F1 B0 B0 B1 B1 .  .  .
 *
 * plus a send on stage 0 that waits 2 -> 3 and transfers 3 -> 3.5. */
static viz_timeline *gpipe_2x2(void) {
    viz_timeline *tl = viz_timeline_new("hand", "gpipe", 1, 2, 1, 1, 2);
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 0, 0, 0, 1));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 1, 0, 1, 2));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_BACKWARD, 0, 0, 5, 7));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_BACKWARD, 1, 0, 7, 9));
    viz_tl_box send = box(VIZ_TL_SEND, -1, -1, 2, 3.5);
    send.ready = 3;
    send.peer = 1;
    viz_timeline_add_box(tl, 0, send);
    viz_timeline_add_box(tl, 1, box(VIZ_TL_FORWARD, 0, 0, 1, 2));
    viz_timeline_add_box(tl, 1, box(VIZ_TL_FORWARD, 1, 0, 2, 3));
    viz_timeline_add_box(tl, 1, box(VIZ_TL_BACKWARD, 0, 0, 3, 5));
    viz_timeline_add_box(tl, 1, box(VIZ_TL_BACKWARD, 1, 0, 5, 7));
    viz_timeline_add_sample(tl, 1, 0, 100);
    viz_timeline_add_sample(tl, 1, 2, 300);
    tl->duration = 10;
    viz_timeline_finish(tl);
    return tl;
}

static bool near(double a, double b) { return fabs(a - b) < 1e-12; }

static void classes_split_wait_from_transfer_and_idle(void **state) {
    (void)state;
    viz_timeline *tl = gpipe_2x2();
    viz_tl_row_stats s0 = viz_timeline_row_stats(tl, 0), s1 = viz_timeline_row_stats(tl, 1);
    /* stage 0: 6 s compute, the send waits 2 -> 3 and transfers 3 -> 3.5, idle 2.5 s. */
    const double *c = s0.classes.seconds;
    assert_true(near(c[VIZ_TC_COMPUTE], 6) && near(c[VIZ_TC_TRANSFER], 0.5));
    assert_true(near(c[VIZ_TC_WAIT], 1) && near(c[VIZ_TC_IDLE], 2.5));
    assert_true(near(s0.busy, 6.5));
    assert_true(near(s0.idle_frac, 0.25)); /* waiting is not idle */
    assert_true(near(s1.idle_frac, 0.40));
    assert_true(s1.mem_peak == 300);
    viz_timeline_free(tl);
}

/* The communication stream's collectives ran beside the rank: they change none of its time
 * classes, and the layout gives them a lane of their own under the comm lane only when
 * some rank has one (pictures without overlap keep their rows). */
static void stream_collectives_are_outside_the_time_classes_on_their_own_lane(void **state) {
    (void)state;
    viz_timeline *tl = gpipe_2x2();
    viz_tl_layout L0;
    const viz_timeline *one[1] = {tl};
    viz_tl_layout_compute(&L0, one, 1, 1200);
    const viz_tl_row_stats before = viz_timeline_row_stats(tl, 0);
    viz_tl_box s = box(VIZ_TL_COLLECTIVE, -1, -1, 5.5, 8);
    s.stream = true;
    viz_timeline_add_box(tl, 0, s);
    viz_timeline_finish(tl);
    const viz_tl_row_stats after = viz_timeline_row_stats(tl, 0);
    for (int c = 0; c < VIZ_TC_NUM; c++)
        assert_true(near(before.classes.seconds[c], after.classes.seconds[c]));
    viz_tl_layout L1;
    viz_tl_layout_compute(&L1, one, 1, 1200);
    const viz_tl_row_layout *r0 = &L0.panels[0].rows[0], *r1 = &L1.panels[0].rows[0];
    assert_true(r0->stream_h == 0 && r0->mem_y == r0->comm_y + VIZ_TL_COMM_H);
    assert_true(r1->stream_h == VIZ_TL_STREAM_H && r1->stream_y == r1->comm_y + VIZ_TL_COMM_H);
    assert_true(r1->mem_y == r1->stream_y + VIZ_TL_STREAM_H);
    assert_true(r0->comm_h >= 12 && r1->stream_h >= 12); /* no lane thinner than 12 points */
    assert_true(L1.panels[0].rows[1].stream_h == VIZ_TL_STREAM_H); /* every row, for alignment */
    viz_tl_layout_free(&L0);
    viz_tl_layout_free(&L1);
    viz_timeline_free(tl);
}

/* One rank, one 10 ms step: a forward [0, 5] with an all-reduce inside it [1, 3] that waits
 * 1 ms for the slowest member and then transfers 1 ms; a receive [5, 9] that waits 3 ms and
 * transfers 1 ms; nothing in [9, 10]. The innermost event decides:
 *   compute 3 (the forward minus its all-reduce), wait 1 + 3, transfer 1 + 1, idle 1. */
static void nested_messages_take_their_time_out_of_compute(void **state) {
    (void)state;
    viz_timeline *tl = viz_timeline_new("nest", "1f1b", 1, 1, 1, 1, 1);
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 0, 0, 0, 5e-3));
    viz_tl_box ar = box(VIZ_TL_COLLECTIVE, -1, -1, 1e-3, 3e-3);
    ar.ready = 2e-3;
    viz_timeline_add_box(tl, 0, ar);
    viz_tl_box rv = box(VIZ_TL_RECV, -1, -1, 5e-3, 9e-3);
    rv.ready = 8e-3;
    viz_timeline_add_box(tl, 0, rv);
    tl->duration = 10e-3;
    viz_timeline_finish(tl);
    viz_tc_shares sh = viz_timeline_class_shares(tl, 0, 0, tl->duration);
    assert_true(fabs(sh.seconds[VIZ_TC_COMPUTE] - 3e-3) < 1e-15);
    assert_true(fabs(sh.seconds[VIZ_TC_WAIT] - 4e-3) < 1e-15);
    assert_true(fabs(sh.seconds[VIZ_TC_TRANSFER] - 2e-3) < 1e-15);
    assert_true(fabs(sh.seconds[VIZ_TC_IDLE] - 1e-3) < 1e-15);
    double total = 0;
    for (int k = 0; k < VIZ_TC_NUM; k++) total += sh.share[k];
    assert_true(fabs(total - 1) < 1e-12);
    /* Only the receive: it waits 3 ms and transfers 1 ms of [5, 10]. */
    viz_tc_shares r = viz_timeline_class_shares(tl, 0, 5e-3, 10e-3);
    assert_true(fabs(r.seconds[VIZ_TC_WAIT] - 3e-3) < 1e-15 &&
                fabs(r.seconds[VIZ_TC_TRANSFER] - 1e-3) < 1e-15);
    /* The segments, in order: compute, wait, transfer, compute, wait, transfer, idle. */
    viz_tc_segment *seg;
    int n = viz_timeline_class_segments(tl, 0, 0, tl->duration, &seg);
    const viz_time_class want[7] = {VIZ_TC_COMPUTE, VIZ_TC_WAIT, VIZ_TC_TRANSFER,
                                    VIZ_TC_COMPUTE, VIZ_TC_WAIT, VIZ_TC_TRANSFER,
                                    VIZ_TC_IDLE};
    assert_int_equal(n, 7);
    for (int i = 0; i < n; i++) {
        assert_int_equal(seg[i].cls, want[i]);
        if (i > 0) assert_true(seg[i].a == seg[i - 1].b);
    }
    assert_true(seg[0].a == 0 && seg[6].b == tl->duration);
    assert_string_equal(viz_time_class_name(VIZ_TC_WAIT), "wait");
    free(seg);
    viz_timeline_free(tl);
}

static void bubble_matches_both_definitions_for_even_stages(void **state) {
    (void)state;
    viz_timeline *tl = gpipe_2x2();
    viz_tl_bubble b = viz_timeline_bubble(tl);
    /* span 0..9. stage 0: compute 6, transfer 0.5, wait 1, idle 1.5; stage 1: compute 6,
     * idle 3. Bubble = mean (wait + idle) = (2.5 + 3) / 2 = 2.75 s of 9. */
    assert_true(b.span_start == 0 && b.span_end == 9);
    assert_true(near(b.measured_total, 2.75 / 9));
    assert_true(near(b.wait_total, 0.5 / 9) && near(b.idle_total, 2.25 / 9));
    assert_true(near(b.measured_ideal, 5.5 / 12.5)); /* (wait + idle) / (compute + transfer) */
    assert_true(near(b.theory_total, 1.0 / 3));      /* (p-1)/(m+p-1) */
    assert_true(near(b.theory_ideal, 0.5));          /* (p-1)/m */
    viz_tl_layout L;                                 /* the figures printed above the picture */
    const viz_timeline *one[1] = {tl};
    viz_tl_layout_compute(&L, one, 1, 1000);
    assert_non_null(
        strstr(L.panels[0].info,
               "measured: 30.6% of total time (wait 5.6% + idle 25.0%), 44.0% of ideal time"));
    assert_non_null(strstr(L.panels[0].note, "bubble = wait + idle"));
    viz_tl_layout_free(&L);
    tl->vpp = 2; /* interleaved: divide by v */
    b = viz_timeline_bubble(tl);
    assert_true(fabs(b.theory_ideal - 0.25) < 1e-12);
    assert_true(fabs(b.theory_total - 1.0 / 5) < 1e-12);
    viz_timeline_free(tl);
}

static void phases_come_from_the_schedule_counts(void **state) {
    (void)state;
    viz_timeline *tl = gpipe_2x2();
    viz_tl_row_stats s = viz_timeline_row_stats(tl, 0);
    assert_true(s.has_phases);
    assert_int_equal(s.warmup_forwards, 2); /* GPipe: W = m, every forward is warmup */
    assert_int_equal(s.cooldown_backwards, 2);
    assert_true(s.warmup_end == 2 && s.cooldown_start == 5 && s.last_bwd_end == 9);
    viz_timeline_free(tl);

    /* 1F1B, p = 2, m = 3, rank 0: F0 F1 B0 F2 B1 B2. By box positions two forwards come
     * before the first backward, but the schedule's warmup is min(p - r - 1, m) = 1: warmup
     * is F0, steady F1 B0 F2 B1, cooldown B2. */
    tl = viz_timeline_new("1f1b", "1f1b", 1, 2, 1, 1, 3);
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 0, 0, 0, 1));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 1, 0, 1, 2));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_BACKWARD, 0, 0, 3, 5));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 2, 0, 5, 6));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_BACKWARD, 1, 0, 6, 8));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_BACKWARD, 2, 0, 9, 11));
    viz_timeline_finish(tl);
    assert_true(tl->duration == 11);
    s = viz_timeline_row_stats(tl, 0);
    assert_int_equal(s.warmup_forwards, 1);
    assert_int_equal(s.cooldown_backwards, 1);
    assert_true(s.warmup_end == 1 && s.cooldown_start == 9);
    viz_tl_layout L;
    const viz_timeline *one[1] = {tl};
    viz_tl_layout_compute(&L, one, 1, 1000);
    const viz_tl_row_layout *R = &L.panels[0].rows[0];
    assert_true(R->has_phases);
    assert_true(R->warmup_x1 == viz_tl_x(&L, 1) && R->cooldown_x0 == viz_tl_x(&L, 9));
    assert_true(R->steady_x1 > R->steady_x0);
    viz_tl_layout_free(&L);
    /* The last stage (r = 1) has no warmup: W = 0, everything is steady. */
    viz_timeline_add_box(tl, 1, box(VIZ_TL_FORWARD, 0, 0, 1, 2));
    viz_timeline_add_box(tl, 1, box(VIZ_TL_BACKWARD, 0, 0, 2, 3));
    viz_timeline_finish(tl);
    s = viz_timeline_row_stats(tl, 1);
    assert_int_equal(s.warmup_forwards, 0);
    assert_int_equal(s.cooldown_backwards, 0);
    /* A schedule Trident does not know: no phases at all. */
    snprintf(tl->schedule, sizeof tl->schedule, "dualpipe");
    s = viz_timeline_row_stats(tl, 0);
    assert_false(s.has_phases);
    assert_int_equal(s.warmup_forwards, -1);
    viz_timeline_free(tl);
}

static void boxes_sit_at_their_times_and_labels_show_only_when_they_fit(void **state) {
    (void)state;
    viz_timeline *tl = gpipe_2x2();
    viz_timeline_add_box(tl, 1,
                         box(VIZ_TL_FORWARD, 12, 0, 9.0, 9.2)); /* 13.5 px: "12" does not fit */
    viz_timeline_add_box(tl, 1, box(VIZ_TL_FORWARD, 3, 0, 9.5, 9.7)); /* 13.5 px: "3" fits */
    viz_timeline_finish(tl);
    viz_tl_layout L;
    const viz_timeline *one[1] = {tl};
    viz_tl_layout_compute(&L, one, 1, 1000);
    /* plot from x = 150 to 1000 - 176 = 824: 674 px for 10 s. */
    assert_true(L.plot_x == 150 && L.plot_w == 674);
    assert_true(fabs(L.px_per_s - 67.4) < 1e-9);
    assert_true(fabs(viz_tl_x(&L, 5) - 487) < 1e-9);
    assert_true(L.tick_s == 1);

    const viz_tl_panel_layout *P = &L.panels[0];
    const viz_tl_row_layout *R0 = &P->rows[0], *R1 = &P->rows[1];
    assert_int_equal(R0->rank, 0);
    const viz_tl_box_layout *f1 = &R0->boxes[1]; /* F1 at 1..2 s */
    assert_true(fabs(f1->x - 217.4) < 1e-9 && fabs(f1->w - 67.4) < 1e-9);
    assert_true(f1->label_shown);
    assert_string_equal(f1->label, "1");
    /* The send (third box of row 0 by start: F0, F1, send, B0, B1) keeps its ready point. */
    const viz_tl_box_layout *s = &R0->boxes[2];
    assert_true(fabs(s->x - viz_tl_x(&L, 2)) < 1e-9 && fabs(s->x_ready - viz_tl_x(&L, 3)) < 1e-9);
    assert_false(s->label_shown);
    int last = tl->rows[1].nboxes - 1;
    assert_string_equal(R1->boxes[last - 1].label, "12");
    assert_false(R1->boxes[last - 1].label_shown);
    assert_true(R1->boxes[last].label_shown);

    /* Stage 0's time classes: compute 0..2, wait 2..3, transfer 3..3.5, idle 3.5..5,
     * compute 5..9, idle 9..10. */
    const viz_time_class want[6] = {VIZ_TC_COMPUTE, VIZ_TC_WAIT,    VIZ_TC_TRANSFER,
                                    VIZ_TC_IDLE,    VIZ_TC_COMPUTE, VIZ_TC_IDLE};
    assert_int_equal(R0->nseg, 6);
    for (int i = 0; i < 6; i++) assert_int_equal(R0->seg_cls[i], want[i]);
    assert_true(fabs(R0->seg_x[1] - viz_tl_x(&L, 2)) < 1e-9 && fabs(R0->seg_w[1] - 67.4) < 1e-9);
    assert_true(fabs(R0->seg_x[3] - viz_tl_x(&L, 3.5)) < 1e-9);
    assert_true(fabs(R0->seg_w[5] - 67.4) < 1e-9);
    assert_string_equal(R0->share_text[0], "compute 60.0% · transfer 5.0%");
    assert_string_equal(R0->share_text[1], "wait 10.0% · idle 25.0%");
    assert_true(L.any_wait);

    /* Rows stack downward; the panel title carries the bubble figures of both definitions. */
    assert_true(R1->y > R0->bottom);
    assert_non_null(strstr(P->info, "(p−1)/(m+p−1) = 33.3% of total, (p−1)/m = 50.0% of ideal"));
    assert_true(R1->mem_h > 0);
    assert_string_equal(R1->mem_text, "peak 300 B");
    assert_true(L.kinds_present[VIZ_TL_FORWARD] && L.kinds_present[VIZ_TL_SEND]);
    assert_false(L.kinds_present[VIZ_TL_OPTIMIZER]);
    viz_tl_layout_free(&L);
    viz_timeline_free(tl);
}

static void rows_are_grouped_by_pipeline_stage(void **state) {
    (void)state;
    viz_timeline *tl = viz_timeline_new("order", "1f1b", 1, 2, 2, 1, 1);
    /* A rank order that is not stage order: ranks 0, 2 on stage 1; ranks 1, 3 on stage 0. */
    viz_timeline_set_coords(tl, 0, 0, 1, 1);
    viz_timeline_set_coords(tl, 1, 0, 0, 1);
    viz_timeline_set_coords(tl, 2, 0, 1, 0);
    viz_timeline_set_coords(tl, 3, 0, 0, 0);
    for (int r = 0; r < 4; r++) viz_timeline_add_box(tl, r, box(VIZ_TL_FORWARD, 0, 0, 0, 1));
    viz_timeline_finish(tl);
    viz_tl_layout L;
    const viz_timeline *one[1] = {tl};
    viz_tl_layout_compute(&L, one, 1, 1200);
    const viz_tl_panel_layout *P = &L.panels[0];
    const int want[4] = {3, 1, 2, 0}; /* stage 0 (dp 0, dp 1), then stage 1 (dp 0, dp 1) */
    for (int d = 0; d < 4; d++) assert_int_equal(P->rows[d].rank, want[d]);
    assert_true(P->rows[1].y == P->rows[0].bottom + VIZ_TL_ROW_GAP);
    assert_true(P->rows[2].y == P->rows[1].bottom + VIZ_TL_ROW_GAP + VIZ_TL_STAGE_GAP);
    assert_int_equal(P->nstages, 2);
    assert_true(P->stage_y0[1] == P->rows[2].y && P->stage_y1[1] == P->rows[3].bottom);
    assert_true(P->rows[0].mem_h == 0); /* no memory samples: no strip */
    viz_tl_layout_free(&L);

    /* Default coordinates follow Megatron's order: tp fastest, then dp, then pp. */
    viz_timeline *d = viz_timeline_new("d", "1f1b", 2, 2, 2, 1, 1);
    assert_int_equal(d->rows[5].tp_rank, 1);
    assert_int_equal(d->rows[5].dp_rank, 0);
    assert_int_equal(d->rows[5].pp_rank, 1);
    viz_timeline_free(d);
    viz_timeline_free(tl);
}

static void several_panels_share_one_time_scale(void **state) {
    (void)state;
    viz_timeline *a = gpipe_2x2();
    viz_timeline *b = viz_timeline_new("short", "1f1b", 1, 1, 1, 1, 1);
    viz_timeline_add_box(b, 0, box(VIZ_TL_FORWARD, 0, 0, 0, 5));
    viz_timeline_finish(b);
    const viz_timeline *two[2] = {b, a};
    viz_tl_layout L;
    viz_tl_layout_compute(&L, two, 2, 1000);
    assert_true(L.duration == 10);
    assert_true(fabs(L.panels[0].rows[0].boxes[0].w - 337) < 1e-9); /* 5 s of 10 */
    assert_true(L.panels[1].top > L.panels[0].bottom);
    assert_true(L.height > L.panels[1].bottom);
    viz_tl_layout_free(&L);
    viz_timeline_free(a);
    viz_timeline_free(b);
}

static void ticks_are_one_two_five(void **state) {
    (void)state;
    assert_true(fabs(viz_tl_nice_tick(0.036, 12) - 0.005) < 1e-15);
    assert_true(fabs(viz_tl_nice_tick(10, 12) - 1) < 1e-15);
    assert_true(fabs(viz_tl_nice_tick(0.0019, 12) - 0.0002) < 1e-15);
    char buf[32];
    viz_tl_format_bytes(3 * 1024.0 * 1024 * 1024 / 2, buf, sizeof buf);
    assert_string_equal(buf, "1.5 GiB");
}

/* The loader: clock offsets undone, the last complete step by default, --step, errors. */
static void loader_picks_a_complete_step_on_rank0_clock(void **state) {
    (void)state;
    const char *dir = test_tmpdir("load");
    fixture_run cfg = fixture_defaults("1f1b", 2, 4, 1);
    cfg.steps = 3;
    cfg.open_last_step = 1;
    fixture_write_run(dir, &cfg);
    char err[1024] = "";
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    int steps[8];
    assert_int_equal(viz_run_complete_steps(run, steps, 8), 3);
    assert_int_equal(steps[2], 2);

    viz_timeline *tl = viz_timeline_from_run(run, "load", -1, err, sizeof err);
    assert_non_null(tl);
    assert_int_equal(tl->step, 2); /* step 3 never finished */
    assert_int_equal(tl->nrows, 2);
    /* The fixture's costs: 4 forwards of 1 ms and 4 backwards of 2 ms per stage. */
    int fw = 0, bw = 0;
    double first_fwd1 = 1e9, first_fwd0 = 1e9;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < tl->rows[r].nboxes; i++) {
            const viz_tl_box *x = &tl->rows[r].boxes[i];
            if (x->kind == VIZ_TL_FORWARD) {
                fw++;
                assert_true(fabs(x->end - x->start - 1e-3) < 1e-9);
                if (r == 1 && x->start < first_fwd1) first_fwd1 = x->start;
                if (r == 0 && x->start < first_fwd0) first_fwd0 = x->start;
            }
            if (x->kind == VIZ_TL_BACKWARD) bw++;
            assert_true(x->start >= 0 && x->end <= tl->duration + 1e-12);
        }
    assert_int_equal(fw, 8);
    assert_int_equal(bw, 8);
    /* On one clock, stage 1 starts F0 after stage 0's F0 plus the 0.1 ms transfer. */
    assert_true(fabs(first_fwd1 - first_fwd0 - 1.1e-3) < 1e-9);
    viz_timeline_free(tl);

    tl = viz_timeline_from_run(run, "load", 0, err, sizeof err);
    assert_non_null(tl);
    assert_int_equal(tl->step, 0);
    viz_timeline_free(tl);

    assert_null(viz_timeline_from_run(run, "load", 3, err, sizeof err));
    assert_non_null(strstr(err, "step 3 is not a complete step"));
    assert_non_null(strstr(err, "complete steps: 0..2"));
    trace_run_free(run);
}

static int count_kind(const viz_timeline *tl, viz_tl_kind kind) {
    int n = 0;
    for (int r = 0; r < tl->nrows; r++)
        for (int i = 0; i < tl->rows[r].nboxes; i++) n += tl->rows[r].boxes[i].kind == kind;
    return n;
}

/* A run that evaluated after its last step: the default timeline is the step before (the
 * evaluation would fill most of the picture), its title names that step; the evaluated step
 * is drawn, evaluation and all, only when asked for by number. */
static void default_step_is_the_last_without_evaluation(void **state) {
    (void)state;
    const char *dir = test_tmpdir("eval");
    fixture_run cfg = fixture_defaults("1f1b", 2, 4, 1);
    cfg.steps = 3;
    cfg.eval_last_step = 1;
    fixture_write_run(dir, &cfg);
    char err[1024] = "";
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    assert_int_equal(viz_run_complete_steps(run, NULL, 0), 3);
    assert_int_equal(viz_run_default_step(run), 1);

    viz_timeline *tl = viz_timeline_from_run(run, "eval", -1, err, sizeof err);
    assert_non_null(tl);
    assert_int_equal(tl->step, 1);
    assert_int_equal(count_kind(tl, VIZ_TL_EVAL), 0);
    viz_tl_layout L;
    const viz_timeline *one[1] = {tl};
    viz_tl_layout_compute(&L, one, 1, 1200);
    assert_non_null(strstr(L.panels[0].title, "step 1 "));
    viz_tl_layout_free(&L);
    viz_timeline_free(tl);

    tl = viz_timeline_from_run(run, "eval", 2, err, sizeof err); /* asked for: drawn */
    assert_non_null(tl);
    assert_int_equal(count_kind(tl, VIZ_TL_EVAL), 2 * 4);
    viz_timeline_free(tl);
    trace_run_free(run);

    /* A run whose only step evaluated shows that step: there is no other. */
    dir = test_tmpdir("eval-only");
    cfg.steps = 1;
    fixture_write_run(dir, &cfg);
    run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    assert_int_equal(viz_run_default_step(run), 0);
    trace_run_free(run);
}

/* Two pipeline ranks whose steps overlap in time:
 *
 *   rank 0  step 0 [0, 10] ms: F [0, 4], optimizer [8, 10], a send posted at 9 that ends at 11
 *           step 1 [10, 20]:   F [10, 14], B [14, 18]
 *   rank 1  step 0 [0, 6]:     F [1, 3], optimizer [5, 6]
 *           step 1 [6, 16]:    a receive [6.5, 11] (waits until 10), F [11, 13], B [13, 15]
 *
 * Step 1's picture starts at 6 ms (rank 1's step) and holds no step-0 event, although rank
 * 0's step-0 optimizer and send overlap it; step 0's picture holds the send whole (to 11). */
static const char *write_overlapping_steps(void) {
    const char *dir = test_tmpdir("windows");
    for (int r = 0; r < 2; r++) {
        trace_header h = {0};
        h.rank = r, h.world_size = 2, h.tp = 1, h.pp = 2, h.dp = 1, h.vpp = 1, h.pp_rank = r;
        h.num_microbatches = 1;
        strcpy(h.schedule, "1f1b");
        h.config_json = "{}";
        trace_recorder *t = trace_create(&h, 64);
        double ms = 1e-3;
        if (r == 0) {
            trace_record(t, TRACE_STEP, 0, -1, -1, 0, 10 * ms);
            trace_record(t, TRACE_FORWARD, 0, 0, 0, 0, 4 * ms);
            trace_record(t, TRACE_OPTIMIZER, 0, -1, -1, 8 * ms, 10 * ms);
            trace_comm(t, TRACE_SEND, "send", "pp", 1, 64, 7, 9 * ms, 10 * ms, 11 * ms);
            trace_record(t, TRACE_STEP, 1, -1, -1, 10 * ms, 20 * ms);
            trace_record(t, TRACE_FORWARD, 1, 0, 0, 10 * ms, 14 * ms);
            trace_record(t, TRACE_BACKWARD, 1, 0, 0, 14 * ms, 18 * ms);
        } else {
            trace_record(t, TRACE_STEP, 0, -1, -1, 0, 6 * ms);
            trace_record(t, TRACE_FORWARD, 0, 0, 0, 1 * ms, 3 * ms);
            trace_record(t, TRACE_OPTIMIZER, 0, -1, -1, 5 * ms, 6 * ms);
            trace_record(t, TRACE_STEP, 1, -1, -1, 6 * ms, 16 * ms);
            trace_comm(t, TRACE_RECV, "recv", "pp", 0, 64, 7, 6.5 * ms, 10 * ms, 11 * ms);
            trace_record(t, TRACE_FORWARD, 1, 0, 0, 11 * ms, 13 * ms);
            trace_record(t, TRACE_BACKWARD, 1, 0, 0, 13 * ms, 15 * ms);
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, r);
        trace_write(t, path);
        trace_destroy(t);
    }
    return dir;
}

static void a_step_holds_its_own_events_only(void **state) {
    (void)state;
    const char *dir = write_overlapping_steps();
    char err[1024] = "";
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    viz_timeline *tl = viz_timeline_from_run(run, "w", 1, err, sizeof err);
    assert_non_null(tl);
    assert_true(fabs(tl->duration - 14e-3) < 1e-12); /* 6 .. 20 ms */
    const viz_tl_row *r0 = &tl->rows[0], *r1 = &tl->rows[1];
    assert_int_equal(r0->nboxes, 2); /* F, B of step 1: not step 0's optimizer, not its send */
    for (int i = 0; i < r0->nboxes; i++) assert_int_not_equal(r0->boxes[i].kind, VIZ_TL_OPTIMIZER);
    assert_true(fabs(r0->boxes[0].start - 4e-3) < 1e-12);
    assert_int_equal(r1->nboxes, 3); /* the receive started inside rank 1's step 1 */
    assert_int_equal(r1->boxes[0].kind, VIZ_TL_RECV);
    assert_true(fabs(r1->boxes[0].ready - r1->boxes[0].start - 3.5e-3) < 1e-12);
    /* Rank 1's step-1 time: wait 3.5 ms, transfer 1 ms, compute 4 ms, idle the rest of 14. */
    viz_tl_row_stats s1 = viz_timeline_row_stats(tl, 1);
    assert_true(fabs(s1.classes.seconds[VIZ_TC_WAIT] - 3.5e-3) < 1e-12);
    assert_true(fabs(s1.classes.seconds[VIZ_TC_TRANSFER] - 1e-3) < 1e-12);
    assert_true(fabs(s1.classes.seconds[VIZ_TC_COMPUTE] - 4e-3) < 1e-12);
    assert_true(fabs(s1.classes.seconds[VIZ_TC_IDLE] - 5.5e-3) < 1e-12);
    viz_timeline_free(tl);

    /* Step 0: the send begun at 9 ms is drawn whole, to 11 ms, though the step ends at 10. */
    tl = viz_timeline_from_run(run, "w", 0, err, sizeof err);
    assert_non_null(tl);
    assert_true(fabs(tl->duration - 11e-3) < 1e-12);
    int sends = 0;
    for (int i = 0; i < tl->rows[0].nboxes; i++)
        if (tl->rows[0].boxes[i].kind == VIZ_TL_SEND) {
            sends++;
            assert_true(fabs(tl->rows[0].boxes[i].end - 11e-3) < 1e-12);
        }
    assert_int_equal(sends, 1);
    assert_int_equal(tl->rows[1].nboxes, 2); /* F and optimizer of step 0, no receive */
    viz_timeline_free(tl);
    trace_run_free(run);
}

/* A recorded interleaved run (p = 2, m = 4, v = 2): each rank's phase counts are the
 * schedule's, min(m·v, 2(p−r−1) + (v−1)·p) = 4 and 2, and in time the warm-up forwards all
 * come before the first backward and the cool-down backwards after the last forward. */
static void phases_of_a_recorded_interleaved_run_follow_pp_warmup(void **state) {
    (void)state;
    const char *dir = test_tmpdir("phases");
    fixture_run cfg = fixture_defaults("interleaved", 2, 4, 2);
    fixture_write_run(dir, &cfg);
    char err[1024] = "";
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    viz_timeline *tl = viz_timeline_from_run(run, "phases", -1, err, sizeof err);
    assert_non_null(tl);
    const int want[2] = {4, 2};
    for (int r = 0; r < 2; r++) {
        viz_tl_row_stats s = viz_timeline_row_stats(tl, r);
        assert_true(s.has_phases);
        assert_int_equal(s.forwards, 8);
        assert_int_equal(s.warmup_forwards, want[r]);
        assert_int_equal(s.cooldown_backwards, want[r]);
        assert_true(s.warmup_end <= s.first_bwd + 1e-12);
        assert_true(s.cooldown_start >= s.last_fwd_end - 1e-12);
    }
    viz_timeline_free(tl);
    trace_run_free(run);
}

/* An MoE + context-parallel step of two ranks (world = ep = cp = 2), times in ms:
 *
 *   both ranks  step 0 [0, 10]: F [0, 4], B [5, 9]
 *     inside F: an all_to_all_v on "ep" [1, 2], 12288 bytes sent ("12.0 KiB"), which rank 1
 *               enters at 1.2 (so rank 0 waits 1 .. 1.2, the reader's last arrival),
 *               a cp sendrecv ring step [2.5, 3] to the other rank, 100 bytes;
 *     inside B: an all_to_all_v on "ep" [6, 6.01] of 4096 bytes — too short for its label;
 *     and a plain all-reduce on "dp" [9, 9.5], which stays a collective.
 *
 * The loader must classify the messages into the new kinds with their bytes, and the layout
 * must print the byte counts in the boxes wide enough for them. */
static const char *write_moe_cp_step(void) {
    const char *dir = test_tmpdir("moe_cp");
    for (int r = 0; r < 2; r++) {
        trace_header h = {0};
        h.rank = r, h.world_size = 2, h.tp = 1, h.pp = 1, h.dp = 2, h.vpp = 1, h.dp_rank = r;
        h.num_microbatches = 1;
        strcpy(h.schedule, "1f1b");
        h.config_json = "{}";
        trace_recorder *t = trace_create(&h, 64);
        const double ms = 1e-3;
        trace_record(t, TRACE_STEP, 0, -1, -1, 0, 10 * ms);
        trace_record(t, TRACE_FORWARD, 0, 0, 0, 0, 4 * ms);
        trace_record(t, TRACE_BACKWARD, 0, 0, 0, 5 * ms, 9 * ms);
        trace_comm_info a2a = {.kind = TRACE_COLLECTIVE,
                               .op = "all_to_all_v",
                               .group = "ep",
                               .label = "ep a2a fwd moe",
                               .peer = -1,
                               .layer = 0,
                               .group_first = 0,
                               .bytes = 12288,
                               .t_start = (r == 0 ? 1 : 1.2) * ms,
                               .t_ready = (r == 0 ? 1 : 1.2) * ms,
                               .t_end = 2 * ms,
                               .cpu = -1};
        trace_comm_full(t, &a2a);
        trace_comm_info ring = {.kind = TRACE_SEND,
                                .op = "sendrecv",
                                .group = "cp",
                                .label = "cp ring fwd attn",
                                .peer = 1 - r,
                                .tag = 0,
                                .layer = 0,
                                .group_first = -1,
                                .bytes = 100,
                                .t_start = 2.5 * ms,
                                .t_ready = 2.5 * ms,
                                .t_end = 3 * ms,
                                .cpu = -1};
        trace_comm_full(t, &ring);
        trace_comm_info small = a2a;
        small.label = "ep a2a bwd moe";
        small.bytes = 4096;
        small.t_start = small.t_ready = 6 * ms;
        small.t_end = 6.01 * ms;
        trace_comm_full(t, &small);
        trace_comm(t, TRACE_COLLECTIVE, "all_reduce", "dp", -1, 64, 0, 9 * ms, 9 * ms, 9.5 * ms);
        char path[4200];
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, r);
        trace_write(t, path);
        trace_destroy(t);
    }
    return dir;
}

static void all_to_all_and_ring_steps_are_kinds_of_their_own_with_byte_labels(void **state) {
    (void)state;
    /* The rule, by op and group name. */
    assert_int_equal(viz_tl_message_kind(VIZ_TL_COLLECTIVE, "all_to_all_v", "ep"),
                     VIZ_TL_ALL_TO_ALL);
    assert_int_equal(viz_tl_message_kind(VIZ_TL_COLLECTIVE, "all_to_all", NULL), VIZ_TL_ALL_TO_ALL);
    assert_int_equal(viz_tl_message_kind(VIZ_TL_COLLECTIVE, "all_reduce", "cp"), VIZ_TL_COLLECTIVE);
    assert_int_equal(viz_tl_message_kind(VIZ_TL_SEND, "sendrecv", "cp"), VIZ_TL_RING);
    assert_int_equal(viz_tl_message_kind(VIZ_TL_RECV, "recv", "cp"), VIZ_TL_RING);
    assert_int_equal(viz_tl_message_kind(VIZ_TL_SEND, "sendrecv", "pp"), VIZ_TL_SEND);
    assert_int_equal(viz_tl_message_kind(VIZ_TL_FORWARD, "all_to_all", "cp"), VIZ_TL_FORWARD);
    assert_string_equal(viz_tl_kind_name(VIZ_TL_ALL_TO_ALL), "all-to-all");
    assert_string_equal(viz_tl_kind_name(VIZ_TL_RING), "ring");
    assert_true(viz_tl_is_comm(VIZ_TL_ALL_TO_ALL) && viz_tl_is_comm(VIZ_TL_RING));

    const char *dir = write_moe_cp_step();
    char err[1024] = "";
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    viz_timeline *tl = viz_timeline_from_run(run, "moe", 0, err, sizeof err);
    if (!tl) fail_msg("%s", err);
    /* Row 0 by start: F [0], a2a [1], ring [2.5], B [5], a2a [6], all-reduce [9]. */
    const viz_tl_row *r0 = &tl->rows[0];
    assert_int_equal(r0->nboxes, 6);
    const viz_tl_kind want[6] = {VIZ_TL_FORWARD,  VIZ_TL_ALL_TO_ALL, VIZ_TL_RING,
                                 VIZ_TL_BACKWARD, VIZ_TL_ALL_TO_ALL, VIZ_TL_COLLECTIVE};
    for (int i = 0; i < 6; i++) assert_int_equal(r0->boxes[i].kind, want[i]);
    assert_true(r0->boxes[1].bytes == 12288 && r0->boxes[2].bytes == 100);
    assert_true(r0->boxes[5].bytes == 64 && r0->boxes[0].bytes == 0);
    assert_int_equal(r0->boxes[2].peer, 1);
    assert_string_equal(r0->boxes[1].op, "all_to_all_v");
    /* They are messages: their time is wait and transfer, taken out of the forward. */
    viz_tl_row_stats st = viz_timeline_row_stats(tl, 0);
    assert_true(fabs(st.classes.seconds[VIZ_TC_WAIT] - 0.2e-3) < 1e-12);
    assert_true(fabs(st.classes.seconds[VIZ_TC_TRANSFER] - (0.8 + 0.5 + 0.01 + 0.5) * 1e-3) <
                1e-12);

    /* 1000 points wide: 10 ms over 674 px, 67.4 px per ms. */
    viz_tl_layout L;
    const viz_timeline *one[1] = {tl};
    viz_tl_layout_compute(&L, one, 1, 1000);
    assert_true(L.kinds_present[VIZ_TL_ALL_TO_ALL] && L.kinds_present[VIZ_TL_RING]);
    assert_true(L.kinds_present[VIZ_TL_COLLECTIVE] && !L.kinds_present[VIZ_TL_SEND]);
    const viz_tl_row_layout *R = &L.panels[0].rows[0];
    const viz_tl_box_layout *a = &R->boxes[1], *ring = &R->boxes[2], *tiny = &R->boxes[4];
    assert_string_equal(a->label, "12.0 KiB");
    assert_true(a->label_shown); /* 0.8 ms of transfer = 53.9 px >= 8 chars * 4.2 + 4 */
    assert_true(fabs(a->label_x - viz_tl_x(&L, 1.6e-3)) < 1e-9); /* centre of the transfer */
    assert_string_equal(ring->label, "100 B");
    assert_true(ring->label_shown);
    assert_string_equal(tiny->label, "4.0 KiB");
    assert_false(tiny->label_shown);             /* 0.01 ms: under a pixel */
    assert_string_equal(R->boxes[0].label, "0"); /* compute boxes keep their micro-batch */
    assert_string_equal(R->boxes[5].label, "");  /* other messages print nothing */
    assert_false(R->boxes[5].label_shown);
    viz_tl_layout_free(&L);
    viz_timeline_free(tl);
    trace_run_free(run);
}

/* One rank, a 1000 ms step: a forward [0, 900] ms with a 1 ms all-to-all (12 KiB) inside it at
 * [100, 101] ms, a collective [101.5, 150] ms and a backward [500, 600] ms. In the whole step
 * the all-to-all is 0.674 px wide and its byte count hidden; --window 99:102 maps 3 ms onto the
 * 674 px plot. */
static viz_timeline *step_with_a_short_all_to_all(void) {
    const double ms = 1e-3;
    viz_timeline *tl = viz_timeline_new("zoom", "1f1b", 1, 1, 1, 1, 1);
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 0, 0, 0, 900 * ms));
    viz_tl_box a2a = box(VIZ_TL_ALL_TO_ALL, -1, -1, 100 * ms, 101 * ms);
    a2a.bytes = 12288;
    viz_timeline_add_box(tl, 0, a2a);
    viz_timeline_add_box(tl, 0, box(VIZ_TL_COLLECTIVE, -1, -1, 101.5 * ms, 150 * ms));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_BACKWARD, 0, 0, 500 * ms, 600 * ms));
    tl->duration = 1000 * ms;
    tl->step = 5;
    viz_timeline_finish(tl);
    return tl;
}

static void a_window_widens_short_boxes_until_their_byte_labels_show(void **state) {
    (void)state;
    const double ms = 1e-3;
    viz_timeline *tl = step_with_a_short_all_to_all();
    const viz_timeline *one[1] = {tl};
    /* Row 0 by start: forward, all-to-all, collective, backward. */
    viz_tl_layout L;
    viz_tl_layout_compute(&L, one, 1, 1000);
    const double x0 = L.plot_x, pw = L.plot_w; /* 150, 674 */
    const viz_tl_box_layout *a = &L.panels[0].rows[0].boxes[1];
    assert_string_equal(a->label, "12.0 KiB");
    assert_false(a->label_shown);
    assert_true(fabs(a->w - pw / 1000) < 1e-9);
    assert_false(L.windowed);
    assert_true(L.t0 == 0 && L.t1 == tl->duration);
    assert_null(strstr(L.panels[0].title, "window"));
    viz_tl_layout_free(&L);

    viz_tl_layout_compute_window(&L, one, 1, 1000, &(viz_tl_window){99 * ms, 102 * ms});
    assert_true(L.windowed && near(L.t0, 99 * ms) && near(L.t1, 102 * ms));
    assert_true(fabs(L.px_per_s - pw / (3 * ms)) < 1e-6);
    const viz_tl_row_layout *R = &L.panels[0].rows[0];
    a = &R->boxes[1];
    assert_true(a->label_shown); /* 224.7 px */
    assert_true(fabs(a->x - (x0 + pw / 3)) < 1e-9 && fabs(a->w - pw / 3) < 1e-9);
    assert_true(fabs(a->label_x - (x0 + pw / 2)) < 1e-9);
    /* Clipped to the window: the forward covers the whole plot, the collective crosses the
     * right edge and keeps [101.5, 102]; the backward lies outside and is hidden. */
    const viz_tl_box_layout *fwd = &R->boxes[0], *coll = &R->boxes[2], *bwd = &R->boxes[3];
    assert_false(fwd->hidden || coll->hidden);
    assert_true(fabs(fwd->x - x0) < 1e-9 && fabs(fwd->w - pw) < 1e-9);
    assert_true(fabs(coll->x - (x0 + pw * 2.5 / 3)) < 1e-9 && fabs(coll->w - pw * 0.5 / 3) < 1e-9);
    assert_true(fabs(coll->x + coll->w - (x0 + pw)) < 1e-9);
    assert_true(bwd->hidden && !bwd->label_shown);
    assert_false(L.kinds_present[VIZ_TL_BACKWARD]); /* the legend names what is drawn */
    /* The time classes and the shares count the window: compute 99..100 and 101..101.5,
     * transfer 100..101 and 101.5..102. */
    assert_true(fabs(R->shares.seconds[VIZ_TC_COMPUTE] - 1.5 * ms) < 1e-12);
    assert_true(fabs(R->shares.seconds[VIZ_TC_TRANSFER] - 1.5 * ms) < 1e-12);
    assert_string_equal(R->share_text[0], "compute 50.0% · transfer 50.0%");
    assert_true(fabs(R->seg_x[0] - x0) < 1e-9);
    assert_true(fabs(R->seg_x[R->nseg - 1] + R->seg_w[R->nseg - 1] - (x0 + pw)) < 1e-9);
    /* The axis: ticks every 0.5 ms from 99 to 102, at the plot's two ends. */
    const viz_tl_panel_layout *P = &L.panels[0];
    assert_true(near(L.tick_s, 0.5 * ms));
    assert_int_equal(P->tick_first, 198);
    assert_int_equal(P->tick_last, 204);
    assert_true(fabs(viz_tl_x(&L, P->tick_first * L.tick_s) - x0) < 1e-6);
    assert_true(fabs(viz_tl_x(&L, P->tick_last * L.tick_s) - (x0 + pw)) < 1e-6);
    assert_true(near(P->t_end, 102 * ms));
    if (!strstr(P->title, " · window 99–102 ms of step 5 (1000.00 ms)"))
        fail_msg("title: %s", P->title);
    assert_non_null(strstr(P->info, "Bubble of the whole step measured: "));
    assert_non_null(strstr(P->note, "shares at the right: this window only"));
    viz_tl_layout_free(&L);

    /* A tighter window: the all-to-all spans most of the plot. */
    viz_tl_layout_compute_window(&L, one, 1, 1000, &(viz_tl_window){99.9 * ms, 101.1 * ms});
    a = &L.panels[0].rows[0].boxes[1];
    assert_true(a->label_shown && a->w > 0.8 * pw);
    viz_tl_layout_free(&L);

    /* A window past the step's end is clipped to it: the axis ends at 1000 ms. */
    viz_tl_layout_compute_window(&L, one, 1, 1000, &(viz_tl_window){990 * ms, 1100 * ms});
    assert_true(near(L.t1, 1000 * ms) && near(L.panels[0].t_end, 1000 * ms));
    assert_true(fabs(L.px_per_s - pw / (10 * ms)) < 1e-6);
    assert_int_equal(L.panels[0].tick_first, 990);
    assert_int_equal(L.panels[0].tick_last, 1000);
    assert_true(L.panels[0].rows[0].boxes[1].hidden);
    assert_true(near(L.panels[0].rows[0].shares.share[VIZ_TC_IDLE], 1));
    viz_tl_layout_free(&L);
    viz_timeline_free(tl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classes_split_wait_from_transfer_and_idle),
        cmocka_unit_test(nested_messages_take_their_time_out_of_compute),
        cmocka_unit_test(stream_collectives_are_outside_the_time_classes_on_their_own_lane),
        cmocka_unit_test(bubble_matches_both_definitions_for_even_stages),
        cmocka_unit_test(phases_come_from_the_schedule_counts),
        cmocka_unit_test(boxes_sit_at_their_times_and_labels_show_only_when_they_fit),
        cmocka_unit_test(rows_are_grouped_by_pipeline_stage),
        cmocka_unit_test(several_panels_share_one_time_scale),
        cmocka_unit_test(ticks_are_one_two_five),
        cmocka_unit_test(loader_picks_a_complete_step_on_rank0_clock),
        cmocka_unit_test(default_step_is_the_last_without_evaluation),
        cmocka_unit_test(a_step_holds_its_own_events_only),
        cmocka_unit_test(phases_of_a_recorded_interleaved_run_follow_pp_warmup),
        cmocka_unit_test(all_to_all_and_ring_steps_are_kinds_of_their_own_with_byte_labels),
        cmocka_unit_test(a_window_widens_short_boxes_until_their_byte_labels_show),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
