/* schedule_sim_test.c — the validator accepts the three schedules and rejects broken ones;
 * the simulator reproduces the textbook bubbles and activation peaks. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"
#include "tests/support/testing.h"

static void expect_message(bool ok, const char *msg, const char *needle) {
    assert_false(ok);
    if (!strstr(msg, needle)) fail_msg("message '%s' does not mention '%s'", msg, needle);
}

static void validator_accepts_the_three_schedules_at_many_sizes(void **state) {
    (void)state;
    int checked = 0;
    for (int kind = 0; kind < 3; kind++)
        for (int p = 1; p <= 8; p++)
            for (int m = 1; m <= 17; m++)
                for (int v = 1; v <= 4; v++) {
                    pp_config cfg = {(pp_kind)kind, p, m, v};
                    char msg[512];
                    if (!pp_config_valid(&cfg, msg, sizeof msg)) continue;
                    pp_schedule s;
                    pp_schedule_build(&cfg, &s);
                    if (!pp_validate(&s, msg, sizeof msg))
                        fail_msg("%s p=%d m=%d v=%d rejected: %s", pp_kind_name(cfg.kind), p, m, v,
                                 msg);
                    pp_schedule_free(&s);
                    checked++;
                }
    assert_true(checked > 300);
}

static void swapping_a_backward_before_its_forward_is_rejected(void **state) {
    (void)state;
    pp_config cfg = {PP_1F1B, 4, 8, 1};
    pp_schedule s;
    pp_schedule_build(&cfg, &s);
    pp_action *a = s.ranks[3].actions; /* F0 B0 ... -> B0 F0 ... */
    pp_action t = a[0];
    a[0] = a[1];
    a[1] = t;
    char msg[512];
    expect_message(pp_validate(&s, msg, sizeof msg), msg,
                   "rank 3 runs B0 (action 0) before its forward");
    pp_schedule_free(&s);
}

/* rank 0: F0 B0 F1 B1 waits for rank 1's gradient of 0 before sending activation 1;
 * rank 1: F1 F0 B0 B1 waits for activation 1 before producing that gradient: a cycle. */
static void ranks_waiting_on_each_other_are_a_deadlock(void **state) {
    (void)state;
    pp_config cfg = {PP_1F1B, 2, 2, 1};
    pp_schedule s;
    pp_schedule_build(&cfg, &s);
    pp_action *r0 = s.ranks[0].actions, *r1 = s.ranks[1].actions;
    r0[0] = pp_action_make(&cfg, 0, PP_FORWARD, 0, 0);
    r0[1] = pp_action_make(&cfg, 0, PP_BACKWARD, 0, 0);
    r0[2] = pp_action_make(&cfg, 0, PP_FORWARD, 1, 0);
    r0[3] = pp_action_make(&cfg, 0, PP_BACKWARD, 1, 0);
    r1[0] = pp_action_make(&cfg, 1, PP_FORWARD, 1, 0);
    r1[1] = pp_action_make(&cfg, 1, PP_FORWARD, 0, 0);
    r1[2] = pp_action_make(&cfg, 1, PP_BACKWARD, 0, 0);
    r1[3] = pp_action_make(&cfg, 1, PP_BACKWARD, 1, 0);
    char msg[1024];
    bool ok = pp_validate(&s, msg, sizeof msg);
    expect_message(ok, msg, "deadlock");
    expect_message(ok, msg, "rank 0 is stuck at action 1 (B0)");
    expect_message(ok, msg, "rank 1 is stuck at action 0 (F1)");
    expect_message(ok, msg, "rank 0 sends only at its action 2 (F1)");
    pp_schedule_free(&s);
}

/* Interleaved with a warmup of only p forwards on rank 0 (Megatron's is 2(p-1) + (v-1)p = 10):
 * every backward still follows its forward, but rank 0 waits at B0c1 for a gradient that
 * rank 1 produces only after the activation rank 0 sends after B0c1. Found by the simulator. */
static void interleaved_with_too_short_a_warmup_deadlocks(void **state) {
    (void)state;
    pp_config cfg = {PP_INTERLEAVED, 4, 8, 2};
    pp_schedule s;
    pp_schedule_build(&cfg, &s);
    /* Rebuild rank 0 with a warmup of 4 forwards, then 1F1B over the same orders. */
    pp_action fw[16], bw[16];
    int nf = 0, nb = 0;
    for (int i = 0; i < s.ranks[0].n; i++) {
        if (s.ranks[0].actions[i].op == PP_FORWARD) fw[nf++] = s.ranks[0].actions[i];
        else bw[nb++] = s.ranks[0].actions[i];
    }
    int n = 0, W = 4;
    for (int i = 0; i < W; i++) s.ranks[0].actions[n++] = fw[i];
    for (int i = 0; i < 16 - W; i++) {
        s.ranks[0].actions[n++] = fw[W + i];
        s.ranks[0].actions[n++] = bw[i];
    }
    for (int i = 16 - W; i < 16; i++) s.ranks[0].actions[n++] = bw[i];
    char msg[1024];
    bool ok = pp_validate(&s, msg, sizeof msg);
    expect_message(ok, msg, "deadlock");
    expect_message(
        ok, msg,
        "rank 0 is stuck at action 5 (B0c1) waiting for the gradient of micro-batch 0 from rank 1");
    pp_schedule_free(&s);
}

static void missing_duplicate_and_miswired_actions_are_rejected(void **state) {
    (void)state;
    pp_config cfg = {PP_GPIPE, 3, 4, 1};
    char msg[512];
    pp_schedule s;

    pp_schedule_build(&cfg, &s);
    s.ranks[2].n--; /* drop B3 of rank 2 */
    expect_message(pp_validate(&s, msg, sizeof msg), msg, "rank 2 never runs B3");
    pp_schedule_free(&s);

    pp_schedule_build(&cfg, &s);
    s.ranks[1].actions[1] = s.ranks[1].actions[0]; /* F0 twice, F1 never */
    expect_message(pp_validate(&s, msg, sizeof msg), msg, "rank 1 runs F0 twice");
    pp_schedule_free(&s);

    pp_schedule_build(&cfg, &s);
    s.ranks[0].actions[0].send_peer = 2; /* activation sent to the wrong rank */
    expect_message(pp_validate(&s, msg, sizeof msg), msg, "rank 0 action 0 (F0): its messages");
    pp_schedule_free(&s);

    pp_schedule_build(&cfg, &s);
    s.ranks[1].actions[0].mb = 9; /* no such micro-batch */
    expect_message(pp_validate(&s, msg, sizeof msg), msg, "micro-batch 9");
    pp_schedule_free(&s);
}

/* Simulating (not validating) a plan whose sender is gone names the missing message. */
static void simulator_names_a_message_nobody_sends(void **state) {
    (void)state;
    pp_config cfg = {PP_1F1B, 2, 1, 1};
    pp_schedule s;
    pp_schedule_build(&cfg, &s);
    s.ranks[0].n = 0; /* rank 0 does nothing: rank 1's F0 waits forever */
    pp_sim sim;
    char msg[512];
    bool ok = pp_simulate(&s, NULL, &sim, msg, sizeof msg);
    expect_message(
        ok, msg,
        "rank 1 is stuck at action 0 (F0) waiting for the activation of micro-batch 0 from rank 0");
    expect_message(ok, msg, "which no action sends");
    pp_schedule_free(&s);
}

static pp_sim simulate(const pp_config *cfg, double f, double b, pp_schedule *s) {
    pp_schedule_build(cfg, s);
    pp_costs c = pp_costs_unit();
    c.forward = f;
    c.backward = b;
    pp_sim sim;
    char msg[512];
    if (!pp_simulate(s, &c, &sim, msg, sizeof msg)) fail_msg("%s", msg);
    return sim;
}

static void gpipe_holds_every_micro_batch_and_1f1b_at_most_p_minus_r(void **state) {
    (void)state;
    for (int p = 1; p <= 6; p++)
        for (int m = 1; m <= 12; m++) {
            pp_schedule s;
            pp_config g = {PP_GPIPE, p, m, 1};
            pp_sim sim = simulate(&g, 1, 2, &s);
            for (int r = 0; r < p; r++) assert_int_equal(sim.ranks[r].peak_inflight, m);
            pp_sim_free(&sim);
            pp_schedule_free(&s);
            pp_config o = {PP_1F1B, p, m, 1};
            sim = simulate(&o, 1, 2, &s);
            for (int r = 0; r < p; r++)
                assert_int_equal(sim.ranks[r].peak_inflight, p - r < m ? p - r : m);
            pp_sim_free(&sim);
            pp_schedule_free(&s);
        }
}

/* What a rank's plan keeps alive, walked in order (pp_plan_holds_of, the memory prediction's
 * count): the same peak of activation sets as the simulation, split by chunk; 1F1B min(p−r, m)
 * and GPipe m; B -> W hand-overs only in the split backward; zbv's rank p−1 hands messages to
 * itself (an activation and a gradient at most: ZB-V's rank p−1 may send F3c0's activation
 * before B0c0 takes B0c1's gradient), nobody else does. */
static void plan_holds_agree_with_the_simulation(void **state) {
    (void)state;
    const pp_kind kinds[] = {PP_GPIPE, PP_1F1B, PP_INTERLEAVED, PP_ZB_H1, PP_ZBV};
    for (int ki = 0; ki < 5; ki++)
        for (int p = 2; p <= 4; p++)
            for (int m = p; m <= 8; m += p) {
                const pp_kind k = kinds[ki];
                pp_config cfg = {k, p, m, k == PP_INTERLEAVED || k == PP_ZBV ? 2 : 1};
                pp_schedule s;
                pp_sim sim = simulate(&cfg, 1, 2, &s);
                for (int r = 0; r < p; r++) {
                    pp_plan_holds h = pp_plan_holds_of(&s.ranks[r], cfg.v);
                    assert_int_equal(h.sets, sim.ranks[r].peak_inflight);
                    int sum = 0, hand = 0;
                    for (int c = 0; c < cfg.v; c++) sum += h.acts[c], hand += h.handover[c];
                    assert_true(sum >= h.sets);
                    if (k == PP_1F1B) assert_int_equal(h.acts[0], p - r < m ? p - r : m);
                    if (k == PP_GPIPE) assert_int_equal(h.acts[0], m);
                    assert_true(pp_splits_backward(k) ? hand >= 1 : hand == 0);
                    if (k == PP_ZBV && r == p - 1)
                        assert_true(h.self_msgs == 1 || h.self_msgs == 2);
                    else assert_int_equal(h.self_msgs, 0);
                    pp_plan_holds_free(&h);
                }
                pp_sim_free(&sim);
                pp_schedule_free(&s);
            }
}

static void bubble_matches_the_textbook_for_gpipe_and_1f1b(void **state) {
    (void)state;
    for (int kind = 0; kind < 2; kind++)
        for (int p = 1; p <= 8; p++)
            for (int m = 1; m <= 16; m++) {
                pp_config cfg = {(pp_kind)kind, p, m, 1};
                pp_schedule s;
                pp_sim sim = simulate(&cfg, 1, 2, &s);
                double want = (double)(p - 1) / (m + p - 1);
                if (fabs(sim.bubble_fraction - want) > 1e-12)
                    fail_msg("%s p=%d m=%d: bubble %g, textbook %g", pp_kind_name(cfg.kind), p, m,
                             sim.bubble_fraction, want);
                assert_true(fabs(sim.bubble_fraction - pp_bubble_of_total(p, m, 1)) < 1e-12);
                assert_true(fabs(sim.makespan - 3.0 * (m + p - 1)) < 1e-9);
                /* with uniform costs every rank idles equally */
                for (int r = 0; r < p; r++)
                    assert_true(fabs(sim.ranks[r].idle_fraction - want) < 1e-12);
                pp_sim_free(&sim);
                pp_schedule_free(&s);
            }
}

static void interleaving_shrinks_the_bubble(void **state) {
    (void)state;
    for (int p = 2; p <= 8; p++)
        for (int g = 1; g <= 3; g++)
            for (int v = 2; v <= 4; v++) {
                const int m = g * p;
                pp_schedule s1, si;
                pp_config one = {PP_1F1B, p, m, 1}, inter = {PP_INTERLEAVED, p, m, v};
                pp_sim a = simulate(&one, 1, 2, &s1);
                pp_sim b = simulate(&inter, 1, 2,
                                    &si); /* a chunk costs 1/v of a whole stage: same ratio */
                if (!(b.bubble_fraction < a.bubble_fraction))
                    fail_msg("p=%d m=%d v=%d: interleaved bubble %g not below 1f1b's %g", p, m, v,
                             b.bubble_fraction, a.bubble_fraction);
                /* and it is the textbook (p-1)/(v·m+p-1) */
                if (fabs(b.bubble_fraction - pp_bubble_of_total(p, m, v)) > 1e-12)
                    fail_msg("p=%d m=%d v=%d: interleaved bubble %g, textbook %g", p, m, v,
                             b.bubble_fraction, pp_bubble_of_total(p, m, v));
                pp_sim_free(&a);
                pp_sim_free(&b);
                pp_schedule_free(&s1);
                pp_schedule_free(&si);
            }
}

/* The lesson of the picture: at the command's default costs (backward = 2 x forward, a chunk =
 * 1/v of a stage) the interleaved schedule finishes the same work sooner than 1F1B. */
static void interleaved_is_faster_than_1f1b_at_default_costs(void **state) {
    (void)state;
    pp_config one = {PP_1F1B, 4, 8, 1}, inter = {PP_INTERLEAVED, 4, 8, 2};
    pp_costs c1 = pp_costs_default(&one), ci = pp_costs_default(&inter);
    assert_true(c1.backward == PP_BACKWARD_OVER_FORWARD * c1.forward);
    assert_true(ci.forward == c1.forward / 2 && ci.backward == c1.backward / 2);
    pp_schedule s1, si;
    pp_schedule_build(&one, &s1);
    pp_schedule_build(&inter, &si);
    pp_sim a, b;
    char msg[512];
    assert_true(pp_simulate(&s1, &c1, &a, msg, sizeof msg));
    assert_true(pp_simulate(&si, &ci, &b, msg, sizeof msg));
    if (!(b.makespan < a.makespan))
        fail_msg("interleaved makespan %g is not below 1f1b's %g at default costs", b.makespan,
                 a.makespan);
    assert_true(fabs(a.makespan - 33.0) < 1e-9); /* (m+p-1)(F+B) */
    assert_true(fabs(b.makespan - 28.5) < 1e-9); /* m(F+B) + (p-1)(F+B)/v */
    pp_sim_free(&a);
    pp_sim_free(&b);
    pp_schedule_free(&s1);
    pp_schedule_free(&si);
}

static void interleaved_peak_is_its_warmup_plus_one(void **state) {
    (void)state;
    pp_config cfg = {PP_INTERLEAVED, 4, 8, 2};
    pp_schedule s;
    pp_sim sim = simulate(&cfg, 1, 2, &s);
    for (int r = 0; r < 4; r++)
        assert_int_equal(sim.ranks[r].peak_inflight, pp_warmup(&cfg, r) + 1);
    pp_sim_free(&sim);
    pp_schedule_free(&s);
}

static void per_stage_costs_and_latency_shape_the_timeline(void **state) {
    (void)state;
    pp_config cfg = {PP_1F1B, 2, 1, 1};
    pp_schedule s;
    pp_schedule_build(&cfg, &s);
    const double fw[2] = {1, 3}, bw[2] = {2, 4};
    pp_costs c = {99, 99, 0.5, fw, bw, 0, NULL}; /* the arrays win over the scalars */
    pp_sim sim;
    char msg[256];
    assert_true(pp_simulate(&s, &c, &sim, msg, sizeof msg));
    /* rank0 F0 [0,1] -> +0.5 -> rank1 F0 [1.5,4.5] B0 [4.5,8.5] -> +0.5 -> rank0 B0 [9,11] */
    assert_true(sim.ranks[0].spans[0].start == 0 && sim.ranks[0].spans[0].end == 1);
    assert_true(sim.ranks[1].spans[0].start == 1.5 && sim.ranks[1].spans[0].end == 4.5);
    assert_true(sim.ranks[1].spans[1].start == 4.5 && sim.ranks[1].spans[1].end == 8.5);
    assert_true(sim.ranks[0].spans[1].start == 9 && sim.ranks[0].spans[1].end == 11);
    assert_true(sim.makespan == 11);
    assert_true(fabs(sim.ranks[0].idle_fraction - 8.0 / 11) < 1e-12);
    assert_true(fabs(sim.ranks[1].idle_fraction - 4.0 / 11) < 1e-12);
    assert_true(fabs(sim.bubble_fraction - 12.0 / 22) < 1e-12);
    pp_sim_free(&sim);
    pp_schedule_free(&s);
}

/* zb-h1 (Qi et al.): valid at many sizes; at F = B = W its simulated bubble is the textbook
 * (p−1)/(3m+p−1) of the total time once m >= p, a third of 1F1B's bubble as a share of the
 * ideal time, with 1F1B's memory (at most p activation sets on any rank). A W moved before
 * its B is named by the validator. */
static void zb_h1_has_a_third_of_1f1b_bubble_at_1f1b_memory(void **state) {
    (void)state;
    char msg[512];
    for (int p = 1; p <= 6; p++)
        for (int m = 1; m <= 12; m++) {
            pp_config zb = {PP_ZB_H1, p, m, 1}, one = {PP_1F1B, p, m, 1};
            pp_schedule s, s1;
            pp_schedule_build(&zb, &s);
            if (!pp_validate(&s, msg, sizeof msg)) fail_msg("zb-h1 p=%d m=%d: %s", p, m, msg);
            pp_schedule_free(&s);
            pp_sim sim = simulate(&zb, 1, 2, &s), sim1 = simulate(&one, 1, 2, &s1); /* B = W = F */
            for (int r = 0; r < p; r++) assert_true(sim.ranks[r].peak_inflight <= p);
            if (m >= p) {
                assert_true(fabs(sim.bubble_fraction - pp_textbook_of_total(&zb, NULL, 0)) < 1e-12);
                const double ideal = 3.0 * m, ideal1 = 3.0 * m; /* F + B + W = F + whole B */
                const double of_ideal = (sim.makespan - ideal) / ideal,
                             of_ideal1 = (sim1.makespan - ideal1) / ideal1;
                assert_true(fabs(of_ideal - of_ideal1 / 3.0) < 1e-12);
            }
            pp_sim_free(&sim);
            pp_sim_free(&sim1);
            pp_schedule_free(&s);
            pp_schedule_free(&s1);
        }
    pp_config cfg = {PP_ZB_H1, 3, 4, 1};
    pp_schedule s;
    pp_schedule_build(&cfg, &s);
    pp_rank_plan *pl = &s.ranks[2]; /* F0 B0 F1 B1 F2 B2 W0 ...: move W0 to the front */
    int w = 0;
    while (pl->actions[w].op != PP_WEIGHT) w++;
    pp_action wa = pl->actions[w];
    memmove(&pl->actions[1], &pl->actions[0], (size_t)w * sizeof wa);
    pl->actions[0] = wa;
    expect_message(pp_validate(&s, msg, sizeof msg), msg,
                   "rank 2 runs W0 (action 0) before the input-gradient backward");
    pp_schedule_free(&s);
}

static void one_stage_has_no_bubble(void **state) {
    (void)state;
    pp_config cfg = {PP_1F1B, 1, 5, 1};
    pp_schedule s;
    pp_sim sim = simulate(&cfg, 1, 2, &s);
    assert_true(sim.makespan == 15);
    assert_true(sim.bubble_fraction == 0);
    assert_int_equal(sim.ranks[0].peak_inflight, 1);
    pp_sim_free(&sim);
    pp_schedule_free(&s);
}


/* zbv at F = B = W, free communication, p = 4, m = 8: the bubble is only the fill of the V,
 * and no schedule can do better. Rank p−1 cannot start before p−1 chunk-forwards have run
 * upstream and then has 6m units of work, so the makespan is at least 6m + p − 1 and every rank
 * (all end together: the optimizer steps after the whole pipeline) idles at least p − 1 units:
 * (p−1)/(6m+p−1) = 3/51 = 5.9% of the makespan, against 1F1B's 3/11 = 27.3% and zb-h1's
 * 3/27 = 11.1%. So "≈ 0" here means: at that lower bound (to 1e-12), i.e. the residue is the
 * p − 1 units of fill, nothing else (what Qi et al.'s "zero" does not count). Peak memory 2p
 * chunk sets = 1F1B's. Also: every (p, m) with m >= p, p <= 8, m <= 24 meets the bound, and
 * every p <= 8, m <= 24 validates (deadlock-free, every W after its B). */
static void zbv_bubble_is_only_the_fill_of_the_v(void **state) {
    (void)state;
    char msg[512];
    pp_config cfg = {PP_ZBV, 4, 8, 2}, one = {PP_1F1B, 4, 8, 1};
    pp_schedule s, s1;
    pp_sim sim = simulate(&cfg, 1, 2, &s), sim1 = simulate(&one, 1, 2, &s1); /* F = B = W = 1 */
    assert_true(fabs(sim.makespan - (6 * 8 + 3)) < 1e-12);
    assert_true(fabs(sim.bubble_fraction - 3.0 / 51) < 1e-12);
    assert_true(fabs(sim1.bubble_fraction - 3.0 / 11) < 1e-12);
    for (int r = 0; r < 4; r++) {
        assert_true(fabs(sim.makespan - sim.ranks[r].busy - 3) < 1e-12); /* p - 1 idle units */
        assert_true(sim.ranks[r].peak_inflight <= 8);
    }
    pp_config zb = {PP_ZB_H1, 4, 8, 1};
    pp_schedule s2;
    pp_sim sim2 = simulate(&zb, 1, 2, &s2);
    assert_true(sim.bubble_fraction < sim2.bubble_fraction / 1.8); /* 5.9% vs 11.1% */
    pp_sim_free(&sim2);
    pp_schedule_free(&s2);
    pp_sim_free(&sim);
    pp_sim_free(&sim1);
    pp_schedule_free(&s);
    pp_schedule_free(&s1);
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 24; m++) {
            cfg = (pp_config){PP_ZBV, p, m, 2};
            pp_schedule_build(&cfg, &s);
            if (!pp_validate(&s, msg, sizeof msg)) fail_msg("zbv p=%d m=%d: %s", p, m, msg);
            pp_schedule_free(&s);
            if (m < p) continue; /* fewer micro-batches than ranks: the V never fills */
            sim = simulate(&cfg, 1, 2, &s);
            if (fabs(sim.bubble_fraction - pp_textbook_of_total(&cfg, NULL, 0)) > 1e-12)
                fail_msg("zbv p=%d m=%d: simulated bubble %.6f, textbook %.6f", p, m,
                         sim.bubble_fraction, pp_textbook_of_total(&cfg, NULL, 0));
            pp_sim_free(&sim);
            pp_schedule_free(&s);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(validator_accepts_the_three_schedules_at_many_sizes),
        cmocka_unit_test(swapping_a_backward_before_its_forward_is_rejected),
        cmocka_unit_test(ranks_waiting_on_each_other_are_a_deadlock),
        cmocka_unit_test(interleaved_with_too_short_a_warmup_deadlocks),
        cmocka_unit_test(missing_duplicate_and_miswired_actions_are_rejected),
        cmocka_unit_test(simulator_names_a_message_nobody_sends),
        cmocka_unit_test(gpipe_holds_every_micro_batch_and_1f1b_at_most_p_minus_r),
        cmocka_unit_test(plan_holds_agree_with_the_simulation),
        cmocka_unit_test(bubble_matches_the_textbook_for_gpipe_and_1f1b),
        cmocka_unit_test(interleaving_shrinks_the_bubble),
        cmocka_unit_test(interleaved_peak_is_its_warmup_plus_one),
        cmocka_unit_test(per_stage_costs_and_latency_shape_the_timeline),
        cmocka_unit_test(interleaved_is_faster_than_1f1b_at_default_costs),
        cmocka_unit_test(zb_h1_has_a_third_of_1f1b_bubble_at_1f1b_memory),
        cmocka_unit_test(one_stage_has_no_bubble),
        cmocka_unit_test(zbv_bubble_is_only_the_fill_of_the_v),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
