/* timeline_test.c — the timeline model, its statistics and the layout numbers, on hand-made
 * timelines with times chosen so every number can be checked by hand. No drawing here. */
#include <math.h>
#include <string.h>

#include "tests/support/testing.h"
#include "tests/viz/pipeline_fixture.h"
#include "viz/timeline.h"
#include "viz/timeline_layout.h"
#include "viz/timeline_load.h"

static viz_tl_box box(viz_tl_kind k, int mb, int chunk, double a, double b) {
    return (viz_tl_box){.kind = k, .microbatch = mb, .chunk = chunk, .start = a, .ready = a,
                        .end = b, .peer = -1, .flow = -1};
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

static void idle_counts_waiting_but_not_transfers(void **state) {
    (void)state;
    viz_timeline *tl = gpipe_2x2();
    viz_tl_row_stats s0 = viz_timeline_row_stats(tl, 0), s1 = viz_timeline_row_stats(tl, 1);
    /* stage 0 busy: 2 s forward + 4 s backward + 0.5 s transfer (its 1 s wait is idle). */
    assert_true(fabs(s0.busy - 6.5) < 1e-12);
    assert_true(fabs(s0.idle_frac - 0.35) < 1e-12);
    assert_true(fabs(s1.idle_frac - 0.40) < 1e-12);
    assert_true(s1.mem_peak == 300);
    viz_timeline_free(tl);
}

static void bubble_matches_both_definitions_for_even_stages(void **state) {
    (void)state;
    viz_timeline *tl = gpipe_2x2();
    viz_tl_bubble b = viz_timeline_bubble(tl);
    /* span 0..9; each stage computes 6 s of it and idles 3 s. */
    assert_true(b.span_start == 0 && b.span_end == 9);
    assert_true(fabs(b.measured_total - 1.0 / 3) < 1e-12); /* idle / span */
    assert_true(fabs(b.measured_ideal - 0.5) < 1e-12);     /* idle / busy */
    assert_true(fabs(b.theory_total - 1.0 / 3) < 1e-12);   /* (p-1)/(m+p-1) */
    assert_true(fabs(b.theory_ideal - 0.5) < 1e-12);       /* (p-1)/m */
    viz_tl_layout L; /* the figures printed above the picture */
    const viz_timeline *one[1] = {tl};
    viz_tl_layout_compute(&L, one, 1, 1000);
    assert_non_null(strstr(L.panels[0].info, "measured: 33.3% of total time, 50.0% of ideal time"));
    viz_tl_layout_free(&L);
    tl->vpp = 2; /* interleaved: divide by v */
    b = viz_timeline_bubble(tl);
    assert_true(fabs(b.theory_ideal - 0.25) < 1e-12);
    assert_true(fabs(b.theory_total - 1.0 / 5) < 1e-12);
    viz_timeline_free(tl);
}

static void phases_follow_first_backward_and_last_forward(void **state) {
    (void)state;
    viz_timeline *tl = gpipe_2x2();
    viz_tl_row_stats s = viz_timeline_row_stats(tl, 0);
    assert_int_equal(s.warmup_forwards, 2); /* GPipe: every forward is warmup */
    assert_int_equal(s.cooldown_backwards, 2);
    assert_true(s.warmup_end == 2 && s.cooldown_start == 5 && s.last_bwd_end == 9);
    viz_timeline_free(tl);

    /* 1F1B on the last stage: F0 B0 F1 B1 -> one warmup forward, one cooldown backward. */
    tl = viz_timeline_new("1f1b", "1f1b", 1, 1, 1, 1, 2);
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 0, 0, 0, 1));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_BACKWARD, 0, 0, 1, 3));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 1, 0, 3, 4));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_BACKWARD, 1, 0, 4, 6));
    viz_timeline_finish(tl);
    assert_true(tl->duration == 6);
    s = viz_timeline_row_stats(tl, 0);
    assert_int_equal(s.warmup_forwards, 1);
    assert_int_equal(s.cooldown_backwards, 1);
    assert_true(s.warmup_end == 1 && s.cooldown_start == 4);
    viz_tl_layout L;
    const viz_timeline *one[1] = {tl};
    viz_tl_layout_compute(&L, one, 1, 1000);
    const viz_tl_row_layout *R = &L.panels[0].rows[0];
    assert_true(R->has_phases);
    assert_true(R->steady_x1 > R->steady_x0); /* F1 after B0: there is a steady phase */
    viz_tl_layout_free(&L);
    viz_timeline_free(tl);
}

static void boxes_sit_at_their_times_and_labels_show_only_when_they_fit(void **state) {
    (void)state;
    viz_timeline *tl = gpipe_2x2();
    viz_timeline_add_box(tl, 1, box(VIZ_TL_FORWARD, 12, 0, 9.0, 9.2));  /* 14.4 px: "12" does not fit */
    viz_timeline_add_box(tl, 1, box(VIZ_TL_FORWARD, 3, 0, 9.5, 9.65)); /* 10.8 px: "3" fits */
    viz_timeline_finish(tl);
    viz_tl_layout L;
    const viz_timeline *one[1] = {tl};
    viz_tl_layout_compute(&L, one, 1, 1000);
    /* plot from x = 150 to 1000 - 128 = 872: 722 px for 10 s. */
    assert_true(L.plot_x == 150 && L.plot_w == 722);
    assert_true(fabs(L.px_per_s - 72.2) < 1e-9);
    assert_true(fabs(viz_tl_x(&L, 5) - 511) < 1e-9);
    assert_true(L.tick_s == 1);

    const viz_tl_panel_layout *P = &L.panels[0];
    const viz_tl_row_layout *R0 = &P->rows[0], *R1 = &P->rows[1];
    assert_int_equal(R0->rank, 0);
    const viz_tl_box_layout *f1 = &R0->boxes[1]; /* F1 at 1..2 s */
    assert_true(fabs(f1->x - 222.2) < 1e-9 && fabs(f1->w - 72.2) < 1e-9);
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

    /* Idle gaps of stage 0: 2..3 (waiting), 3.5..5, 9..10. */
    assert_int_equal(R0->nidle, 3);
    assert_true(fabs(R0->idle_x[0] - viz_tl_x(&L, 2)) < 1e-9 && fabs(R0->idle_w[0] - 72.2) < 1e-9);
    assert_true(fabs(R0->idle_x[1] - viz_tl_x(&L, 3.5)) < 1e-9);
    assert_true(fabs(R0->idle_w[2] - 72.2) < 1e-9);
    assert_string_equal(R0->idle_text, "idle 35.0%");

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
    assert_true(fabs(L.panels[0].rows[0].boxes[0].w - 361) < 1e-9); /* 5 s of 10 */
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idle_counts_waiting_but_not_transfers),
        cmocka_unit_test(bubble_matches_both_definitions_for_even_stages),
        cmocka_unit_test(phases_follow_first_backward_and_last_forward),
        cmocka_unit_test(boxes_sit_at_their_times_and_labels_show_only_when_they_fit),
        cmocka_unit_test(rows_are_grouped_by_pipeline_stage),
        cmocka_unit_test(several_panels_share_one_time_scale),
        cmocka_unit_test(ticks_are_one_two_five),
        cmocka_unit_test(loader_picks_a_complete_step_on_rank0_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
