/* schedule_test.c — the schedule generator: reference orders, warmup sizes, messages and tags,
 * parameter checks, names and the textbook bubble formulas. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/pp/schedule.h"
#include "tests/support/testing.h"

/* The rank's actions as "F0 F1 B0 ...", in buf. */
static const char *plan_string(const pp_config *cfg, int rank, char *buf, size_t cap) {
    pp_rank_plan plan;
    pp_rank_plan_build(cfg, rank, &plan);
    size_t len = 0;
    buf[0] = 0;
    char name[32];
    for (int i = 0; i < plan.n; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? " " : "",
                                pp_action_name(&plan.actions[i], cfg->v, name, sizeof name));
    pp_rank_plan_free(&plan);
    return buf;
}

static void one_f_one_b_matches_the_reference_orders(void **state) {
    (void)state;
    pp_config cfg = {PP_1F1B, 4, 8, 1};
    char buf[1024];
    assert_string_equal(plan_string(&cfg, 0, buf, sizeof buf),
                        "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
    assert_string_equal(plan_string(&cfg, 3, buf, sizeof buf),
                        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
}

static void interleaved_matches_megatrons_order(void **state) {
    (void)state;
    pp_config cfg = {PP_INTERLEAVED, 4, 8, 2};
    char buf[2048];
    assert_int_equal(pp_warmup(&cfg, 0), 10);
    assert_string_equal(
        plan_string(&cfg, 0, buf, sizeof buf),
        "F0c0 F1c0 F2c0 F3c0 F0c1 F1c1 F2c1 F3c1 F4c0 F5c0 F6c0 B0c1 "
        "F7c0 B1c1 F4c1 B2c1 F5c1 B3c1 F6c1 B0c0 F7c1 B1c0 B2c0 B3c0 B4c1 B5c1 B6c1 B7c1 "
        "B4c0 B5c0 B6c0 B7c0");
}

/* zb-h1: the header's example, and for many (p, m): every F, B, W once, each B after its F
 * and each W after its B, B carrying the backward's messages and W none, rank r keeping
 * min(r, ...) W's back, and never more than p activation sets alive (1F1B's bound). */
static void zb_h1_splits_the_backward_and_keeps_1f1b_memory(void **state) {
    (void)state;
    pp_config cfg = {PP_ZB_H1, 4, 8, 1};
    char buf[1024];
    assert_string_equal(plan_string(&cfg, 1, buf, sizeof buf),
                        "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7");
    assert_string_equal(plan_string(&cfg, 3, buf, sizeof buf),
                        "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7");
    for (int p = 1; p <= 6; p++)
        for (int m = 1; m <= 12; m++) {
            cfg = (pp_config){PP_ZB_H1, p, m, 1};
            for (int r = 0; r < p; r++) {
                pp_rank_plan plan;
                pp_rank_plan_build(&cfg, r, &plan);
                assert_int_equal(plan.n, 3 * m);
                int f = 0, b = 0, w = 0, alive = 0, peak = 0;
                for (int i = 0; i < plan.n; i++) {
                    const pp_action *a = &plan.actions[i];
                    if (a->op == PP_FORWARD) assert_int_equal(a->mb, f++), alive++;
                    if (a->op == PP_BACKWARD_INPUT) {
                        assert_int_equal(a->mb, b++);
                        assert_true(a->mb < f);
                        assert_int_equal(a->recv_tag >= 0, r < p - 1);
                        assert_int_equal(a->send_tag >= 0, r > 0);
                    }
                    if (a->op == PP_WEIGHT) {
                        assert_int_equal(a->mb, w++);
                        assert_true(a->mb < b);
                        assert_true(a->recv_tag < 0 && a->send_tag < 0);
                        alive--;
                    }
                    assert_true(a->op != PP_BACKWARD);
                    if (alive > peak) peak = alive;
                }
                assert_true(f == m && b == m && w == m);
                assert_true(peak <= p);
                pp_rank_plan_free(&plan);
            }
        }
}

static void gpipe_runs_all_forwards_then_all_backwards(void **state) {
    (void)state;
    pp_config cfg = {PP_GPIPE, 3, 4, 1};
    char buf[512];
    for (int r = 0; r < 3; r++)
        assert_string_equal(plan_string(&cfg, r, buf, sizeof buf), "F0 F1 F2 F3 B0 B1 B2 B3");
}

/* Leading forwards of a plan = warmup, plus the first steady forward when there is one. */
static void warmup_sizes_follow_the_formulas(void **state) {
    (void)state;
    for (int kind = 0; kind < 3; kind++)
        for (int p = 1; p <= 8; p++)
            for (int m = 1; m <= 24; m++)
                for (int v = 1; v <= 4; v++) {
                    pp_config cfg = {(pp_kind)kind, p, m, v};
                    char msg[256];
                    if (!pp_config_valid(&cfg, msg, sizeof msg)) continue;
                    for (int r = 0; r < p; r++) {
                        int want;
                        if (kind == PP_GPIPE) want = m;
                        else if (kind == PP_1F1B) want = p - r - 1 < m ? p - r - 1 : m;
                        else {
                            want = 2 * (p - r - 1) + (v - 1) * p;
                            if (want > m * v) want = m * v;
                        }
                        assert_int_equal(pp_warmup(&cfg, r), want);
                        pp_rank_plan plan;
                        pp_rank_plan_build(&cfg, r, &plan);
                        const int N = m * v;
                        assert_int_equal(plan.n, 2 * N);
                        assert_int_equal(plan.warmup, want);
                        assert_int_equal(plan.cooldown, want);
                        int lead = 0;
                        while (lead < plan.n && plan.actions[lead].op == PP_FORWARD) lead++;
                        assert_int_equal(lead, want < N ? want + 1 : N);
                        /* steady part alternates F, B */
                        for (int i = want; i < plan.n - want; i++)
                            assert_int_equal(plan.actions[i].op,
                                             (i - want) % 2 ? PP_BACKWARD : PP_FORWARD);
                        for (int i = 0; i < plan.n; i++) {
                            pp_phase ph = i < want             ? PP_WARMUP
                                          : i >= plan.n - want ? PP_COOLDOWN
                                                               : PP_STEADY;
                            assert_int_equal(plan.actions[i].phase, ph);
                        }
                        pp_rank_plan_free(&plan);
                    }
                }
}

static void messages_follow_the_virtual_stages(void **state) {
    (void)state;
    pp_config cfg = {PP_INTERLEAVED, 4, 4, 2}; /* S = 8 stages */
    /* rank 0 chunk 1 = stage 4: activation from stage 3 on rank 3, to stage 5 on rank 1 */
    pp_action f = pp_action_make(&cfg, 0, PP_FORWARD, 2, 1);
    assert_int_equal(f.stage, 4);
    assert_int_equal(f.recv_peer, 3);
    assert_int_equal(f.recv_stage, 3);
    assert_int_equal(f.recv_tag, pp_tag(PP_ACTIVATION, 2, 4, 8));
    assert_int_equal(f.send_peer, 1);
    assert_int_equal(f.send_stage, 5);
    assert_int_equal(f.send_tag, pp_tag(PP_ACTIVATION, 2, 5, 8));
    pp_action b = pp_action_make(&cfg, 0, PP_BACKWARD, 2, 1);
    assert_int_equal(b.recv_peer, 1);
    assert_int_equal(b.recv_stage, 5);
    assert_int_equal(b.recv_tag, pp_tag(PP_GRADIENT, 2, 4, 8));
    assert_int_equal(b.send_peer, 3);
    assert_int_equal(b.send_stage, 3);
    assert_int_equal(b.send_tag, pp_tag(PP_GRADIENT, 2, 3, 8));
    /* first stage receives no activation and sends no gradient; last the other way round */
    pp_action f0 = pp_action_make(&cfg, 0, PP_FORWARD, 0, 0);
    assert_int_equal(f0.recv_peer, -1);
    assert_int_equal(f0.recv_tag, -1);
    pp_action b0 = pp_action_make(&cfg, 0, PP_BACKWARD, 0, 0);
    assert_int_equal(b0.send_peer, -1);
    pp_action fl = pp_action_make(&cfg, 3, PP_FORWARD, 0, 1);
    assert_int_equal(fl.stage, 7);
    assert_int_equal(fl.send_peer, -1);
    pp_action bl = pp_action_make(&cfg, 3, PP_BACKWARD, 0, 1);
    assert_int_equal(bl.recv_peer, -1);
    assert_int_equal(bl.send_peer, 2);
}

static void tags_are_unique_and_each_receive_has_its_send(void **state) {
    (void)state;
    pp_config cfgs[] = {
        {PP_GPIPE, 4, 5, 1}, {PP_1F1B, 3, 7, 1}, {PP_INTERLEAVED, 4, 8, 3}, {PP_1F1B, 1, 3, 1}};
    for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
        pp_schedule s;
        pp_schedule_build(&cfgs[k], &s);
        int nt = pp_tag_count(&cfgs[k]);
        int *sends = calloc((size_t)nt, sizeof *sends), *recvs = calloc((size_t)nt, sizeof *recvs);
        int *from = calloc((size_t)nt, sizeof *from), *to = calloc((size_t)nt, sizeof *to);
        for (int r = 0; r < s.cfg.p; r++)
            for (int i = 0; i < s.ranks[r].n; i++) {
                const pp_action *a = &s.ranks[r].actions[i];
                if (a->send_tag >= 0) {
                    assert_true(a->send_tag < nt);
                    sends[a->send_tag]++;
                    from[a->send_tag] = r;
                    assert_int_equal(a->send_peer, a->send_stage % s.cfg.p);
                }
                if (a->recv_tag >= 0) {
                    assert_true(a->recv_tag < nt);
                    recvs[a->recv_tag]++;
                    to[a->recv_tag] = r;
                }
            }
        for (int t = 0; t < nt; t++) {
            assert_true(sends[t] <= 1);
            assert_int_equal(sends[t], recvs[t]);
        }
        for (int r = 0; r < s.cfg.p; r++)
            for (int i = 0; i < s.ranks[r].n; i++) {
                const pp_action *a = &s.ranks[r].actions[i];
                if (a->recv_tag >= 0) assert_int_equal(from[a->recv_tag], a->recv_peer);
                if (a->send_tag >= 0) assert_int_equal(to[a->send_tag], a->send_peer);
            }
        free(sends);
        free(recvs);
        free(from);
        free(to);
        pp_schedule_free(&s);
    }
    /* the tag encodes (direction, micro-batch, destination stage) */
    assert_int_equal(pp_tag(PP_ACTIVATION, 0, 0, 8), 0);
    assert_int_equal(pp_tag(PP_GRADIENT, 0, 0, 8), 1);
    assert_int_equal(pp_tag(PP_ACTIVATION, 1, 0, 8), 16);
    assert_int_equal(pp_tag(PP_GRADIENT, 3, 7, 8), (3 * 8 + 7) * 2 + 1);
}

static void expect_invalid(pp_kind kind, int p, int m, int v, const char *needle) {
    pp_config cfg = {kind, p, m, v};
    char msg[256];
    assert_false(pp_config_valid(&cfg, msg, sizeof msg));
    if (!strstr(msg, needle)) fail_msg("message '%s' does not mention '%s'", msg, needle);
}

static void bad_parameters_are_named_with_their_rule(void **state) {
    (void)state;
    expect_invalid(PP_1F1B, 4, 0, 1, "m = 0");
    expect_invalid(PP_GPIPE, 0, 4, 1, "p = 0");
    expect_invalid(PP_INTERLEAVED, 4, 8, 1, "v = 1");
    expect_invalid(PP_INTERLEAVED, 4, 6, 2,
                   "m = 6 micro-batches is not a multiple of the pipeline size p = 4");
    expect_invalid(PP_1F1B, 4, 8, 2, "v = 2");
    expect_invalid(PP_GPIPE, 4, 8, 0, "v = 0");
    pp_config ok = {PP_INTERLEAVED, 4, 8, 2};
    char msg[256];
    assert_true(pp_config_valid(&ok, msg, sizeof msg));
}

static void names_and_kinds_round_trip(void **state) {
    (void)state;
    pp_kind k;
    assert_true(pp_kind_parse("gpipe", &k) && k == PP_GPIPE);
    assert_true(pp_kind_parse("1f1b", &k) && k == PP_1F1B);
    assert_true(pp_kind_parse("interleaved", &k) && k == PP_INTERLEAVED);
    assert_false(pp_kind_parse("1F1B", &k));
    assert_false(pp_kind_parse("", &k));
    for (int i = 0; i < 3; i++) {
        assert_true(pp_kind_parse(pp_kind_name((pp_kind)i), &k));
        assert_int_equal(k, i);
    }
    pp_config cfg = {PP_INTERLEAVED, 2, 4, 2};
    pp_action a = pp_action_make(&cfg, 1, PP_FORWARD, 3, 1);
    char buf[16];
    assert_string_equal(pp_action_name(&a, 2, buf, sizeof buf), "F3c1");
    assert_string_equal(pp_action_name(&a, 1, buf, sizeof buf), "F3");
    a = pp_action_make(&cfg, 1, PP_BACKWARD, 0, 0);
    assert_string_equal(pp_action_name(&a, 1, buf, sizeof buf), "B0");
}


/* zbv: the V placement and its inverse, next to round robin: (r, 0) is stage r, (r, 1) is
 * stage 2p−1−r, so rank 0 holds the first and the last stage and rank p−1 sends to itself at
 * the bottom of the V; pp_stage_owner undoes pp_stage for every stage. */
static void zbv_places_a_v_and_owner_inverts_it(void **state) {
    (void)state;
    for (int p = 1; p <= 8; p++) {
        pp_config v = {PP_ZBV, p, 4, 2}, rr = {PP_INTERLEAVED, p < 2 ? 2 : p, 4, 3};
        for (int r = 0; r < p; r++) {
            assert_int_equal(pp_stage(&v, r, 0), r);
            assert_int_equal(pp_stage(&v, r, 1), 2 * p - 1 - r);
        }
        const pp_config *cs[2] = {&v, &rr};
        for (int k = 0; k < 2; k++)
            for (int s = 0; s < cs[k]->p * cs[k]->v; s++) {
                int r, c;
                pp_stage_owner(cs[k], s, &r, &c);
                assert_int_equal(pp_stage(cs[k], r, c), s);
            }
        pp_action f = pp_action_make(&v, p - 1, PP_FORWARD, 2, 0); /* stage p-1 -> p */
        assert_int_equal(f.send_peer, p - 1);
        assert_int_equal(f.send_stage, p);
        pp_action b = pp_action_make(&v, 0, PP_BACKWARD_INPUT, 1, 1); /* the loss stage */
        assert_int_equal(b.stage, 2 * p - 1);
        assert_int_equal(b.recv_tag, -1);
        if (p > 1) assert_int_equal(b.send_peer, 1);
    }
}

/* zbv plans at every p <= 8, m <= 24: 6m actions, each F, B and W of every (micro-batch,
 * chunk) once, per chunk F's and B's in micro-batch order, each B after its F and each W after
 * its B, never more than 2p chunk sets alive (1F1B's p stage sets), the phases in order. */
static void zbv_plans_hold_every_action_once_within_1f1b_memory(void **state) {
    (void)state;
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 24; m++) {
            pp_config cfg = {PP_ZBV, p, m, 2};
            for (int r = 0; r < p; r++) {
                pp_rank_plan plan;
                pp_rank_plan_build(&cfg, r, &plan);
                assert_int_equal(plan.n, 6 * m);
                int f[2] = {0, 0}, b[2] = {0, 0}, w = 0, alive = 0, peak = 0;
                char *wdone = calloc((size_t)(2 * m), 1);
                for (int i = 0; i < plan.n; i++) {
                    const pp_action *a = &plan.actions[i];
                    const int c = a->chunk;
                    assert_true(c == 0 || c == 1);
                    assert_int_equal(a->stage, pp_stage(&cfg, r, c));
                    assert_true(a->op != PP_BACKWARD);
                    if (a->op == PP_FORWARD) assert_int_equal(a->mb, f[c]++), alive++;
                    if (a->op == PP_BACKWARD_INPUT) assert_int_equal(a->mb, b[c]++);
                    if (a->op == PP_BACKWARD_INPUT) assert_true(a->mb < f[c]);
                    if (a->op == PP_WEIGHT) {
                        assert_true(a->mb < b[c]);
                        assert_false(wdone[a->mb * 2 + c]);
                        wdone[a->mb * 2 + c] = 1;
                        w++;
                        alive--;
                    }
                    if (alive > peak) peak = alive;
                    if (i > 0) assert_true(a->phase >= plan.actions[i - 1].phase);
                }
                assert_true(f[0] == m && f[1] == m && b[0] == m && b[1] == m && w == 2 * m);
                assert_true(peak <= 2 * p);
                assert_int_equal(plan.warmup, pp_warmup(&cfg, r));
                free(wdone);
                pp_rank_plan_free(&plan);
            }
        }
}

static void textbook_bubbles(void **state) {
    (void)state;
    assert_true(pp_bubble_of_ideal(4, 8, 1) == 3.0 / 8);
    assert_true(pp_bubble_of_total(4, 8, 1) == 3.0 / 11);
    assert_true(pp_bubble_of_ideal(4, 8, 2) == 3.0 / 16);
    assert_true(pp_bubble_of_total(4, 8, 2) == 3.0 / 19);
    assert_true(pp_bubble_of_total(1, 8, 1) == 0);
    char f[64];
    pp_config zbv = {PP_ZBV, 4, 8, 2}, zb = {PP_ZB_H1, 4, 8, 1}, one = {PP_1F1B, 4, 8, 1};
    assert_true(pp_textbook_of_total(&zbv, f, sizeof f) == 3.0 / 51);
    assert_string_equal(f, "(p-1)/(6m+p-1), F = B = W");
    assert_true(pp_textbook_of_ideal(&zbv) == 3.0 / 48);
    assert_true(pp_textbook_of_total(&zb, f, sizeof f) == 3.0 / 27);
    assert_string_equal(f, "(p-1)/(3m+p-1), F = B = W");
    assert_true(pp_textbook_of_total(&one, f, sizeof f) == 3.0 / 11);
    assert_string_equal(f, "(p-1)/(m+p-1)");
    pp_textbook_text t;
    pp_textbook_formulas(&zbv, &t);
    assert_string_equal(t.ideal, "(p-1)/(6m)");
    assert_string_equal(t.assumes, "F = B = W");
    assert_false(t.shows_v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_f_one_b_matches_the_reference_orders),
        cmocka_unit_test(interleaved_matches_megatrons_order),
        cmocka_unit_test(zb_h1_splits_the_backward_and_keeps_1f1b_memory),
        cmocka_unit_test(gpipe_runs_all_forwards_then_all_backwards),
        cmocka_unit_test(warmup_sizes_follow_the_formulas),
        cmocka_unit_test(messages_follow_the_virtual_stages),
        cmocka_unit_test(tags_are_unique_and_each_receive_has_its_send),
        cmocka_unit_test(bad_parameters_are_named_with_their_rule),
        cmocka_unit_test(names_and_kinds_round_trip),
        cmocka_unit_test(textbook_bubbles),
        cmocka_unit_test(zbv_places_a_v_and_owner_inverts_it),
        cmocka_unit_test(zbv_plans_hold_every_action_once_within_1f1b_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
