/* traced_run_test.c — the trace of a real multi-rank `trident train` (tp 2 × pp 2, 4 ranks
 * under mpirun) tells the truth:
 *   - ranks of one host share rank 0's clock: offset 0, uncertainty 0, and one run id;
 *   - every TP collective is labelled with its operator and global layer, so they can be
 *     counted (per micro-batch and layer: one "g fwd attn", one "g fwd mlp", one "f bwd
 *     attn", one "f bwd mlp"; the embedding's "g fwd embed", the head's "f bwd head", the
 *     loss's "loss max" and two "loss sum"), pipeline messages are "act fwd" / "grad bwd";
 *   - under TRIDENT_TEST_CLOCK_SKEW the ranks other than 0 go through Cristian's method
 *     (non-zero uncertainty, offset of the real clock within it) and the trace is still
 *     causal (assert_run_trace_causal). That run has --sequence-parallel, and its TP
 *     collectives are the all-gathers and reduce-scatters of g and ḡ, each labelled (per
 *     micro-batch and layer: "sp g fwd attn" an all-gather, "sp gbar fwd attn" a
 *     reduce-scatter, "sp gbar bwd attn" an all-gather, "sp g bwd attn" a reduce-scatter and
 *     the all-gather of the input again for W; the same for mlp; the embedding's and the
 *     head's; one "sp grads" all-reduce per step).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/trace/trace.h"
#include "tests/support/testing.h"

enum { STEPS = 2, M = 4, LAYERS = 4 }; /* M micro-batches per step: global 8 / micro 2 */

static char g_out[1 << 16];

static void train(const char *env, const char *run_dir, const char *flags) {
    char cmd[8192], extra[1024], mpirun[2048];
    snprintf(extra, sizeof extra, TEST_MPI_NO_SINGLE_COPY " %s", env); /* progress-thread path */
    snprintf(
        cmd, sizeof cmd,
        "%s %s train --tensor-model-parallel-size 2 "
        "--pipeline-model-parallel-size 2 --num-layers %d --hidden-size 32 --num-attention-heads 4 "
        "--seq-length 16 --global-batch-size 8 --micro-batch-size 2 --train-iters %d --eval-iters "
        "0 --quiet "
        "--run-dir %s %s",
        test_mpirun_prefix(mpirun, sizeof mpirun, 4, extra), test_trident_path(), LAYERS, STEPS,
        run_dir, flags);
    int rc = run_capture(cmd, g_out, sizeof g_out);
    if (rc != 0) fail_msg("%s\nexited %d:\n%s", cmd, rc, g_out);
}

static void one_host_traces_are_exact_labelled_and_causal(void **state) {
    (void)state;
    char run[4400];
    snprintf(run, sizeof run, "%s/run", test_tmpdir("traced_one_host"));
    train("", run, "");
    assert_run_trace_causal(run);
    char err[1024];
    trace_run *r = trace_run_read(run, err, sizeof err);
    if (!r) fail_msg("%s", err);
    const char *id = trace_file_header(r->ranks[0])->run_id;
    assert_true(strlen(id) > 0);
    for (int k = 0; k < r->nranks; k++) {
        const trace_header *h = trace_file_header(r->ranks[k]);
        assert_true(h->clock_offset == 0.0 && h->clock_uncertainty == 0.0);
        assert_string_equal(h->run_id, id);
    }
    /* Messages carry no step: count over the whole run, STEPS steps of M micro-batches. */
    const int per_run = STEPS * M;
    for (int k = 0; k < r->nranks; k++) {
        const trace_header *h = trace_file_header(r->ranks[k]);
        const trace_file *f = r->ranks[k];
        int first_layer = h->pp_rank * (LAYERS / 2);
        int tally[LAYERS][4] = {{0}}, embed = 0, head = 0, lmax = 0, lsum = 0, act = 0, grad = 0;
        static const char *const ops[4] = {"g fwd attn", "g fwd mlp", "f bwd attn", "f bwd mlp"};
        for (size_t i = 0; i < trace_file_num_events(f); i++) {
            const trace_event *e = trace_file_event(f, i);
            const char *label = trace_file_string(f, e->label);
            if (e->kind == TRACE_COLLECTIVE && strcmp(trace_file_string(f, e->group), "tp") == 0) {
                assert_true(e->label >= 0); /* every TP collective says what it is for */
                for (int o = 0; o < 4; o++)
                    if (strcmp(label, ops[o]) == 0) {
                        assert_true(e->layer >= 0 && e->layer < LAYERS);
                        tally[e->layer][o]++;
                    }
                embed += strcmp(label, "g fwd embed") == 0;
                head += strcmp(label, "f bwd head") == 0;
                lmax += strcmp(label, "loss max") == 0;
                lsum += strcmp(label, "loss sum") == 0;
            }
            if (e->kind == TRACE_SEND || e->kind == TRACE_RECV) {
                act += strcmp(label, "act fwd") == 0;
                grad += strcmp(label, "grad bwd") == 0;
            }
        }
        for (int l = 0; l < LAYERS; l++)
            for (int o = 0; o < 4; o++) {
                int want = l >= first_layer && l < first_layer + LAYERS / 2 ? per_run : 0;
                if (tally[l][o] != want)
                    fail_msg("rank %d: %d '%s' all-reduces at layer %d, expected %d", k,
                             tally[l][o], ops[o], l, want);
            }
        bool first = h->pp_rank == 0, last = h->pp_rank == 1;
        assert_int_equal(embed, first ? per_run : 0);
        assert_int_equal(head, last ? per_run : 0);
        assert_int_equal(lmax, last ? per_run : 0);
        assert_int_equal(lsum, last ? 2 * per_run : 0);
        /* stage 0 sends activations and receives gradients; stage 1 the other way round */
        assert_int_equal(act, per_run);
        assert_int_equal(grad, per_run);
    }
    trace_run_free(r);
}

/* The TP collectives of a --sequence-parallel run, counted by label and operation on rank k
 * (pipeline stage `stage` of 2, LAYERS / 2 blocks each). */
static void expect_sequence_parallel_labels(const trace_file *f, int k, int stage) {
    const int per_run = STEPS * M, L = LAYERS / 2, first = stage == 0, last = stage == 1;
    static const struct {
        const char *label, *op;
        int per_layer, first_stage, last_stage; /* per micro-batch */
    } want[] = {
        {"sp g fwd attn", "all_gather", 1, 0, 0},   {"sp gbar fwd attn", "reduce_scatter", 1, 0, 0},
        {"sp g fwd mlp", "all_gather", 1, 0, 0},    {"sp gbar fwd mlp", "reduce_scatter", 1, 0, 0},
        {"sp gbar bwd attn", "all_gather", 1, 0, 0}, {"sp g bwd attn", "reduce_scatter", 1, 0, 0},
        {"sp g bwd attn", "all_gather", 1, 0, 0},   {"sp gbar bwd mlp", "all_gather", 1, 0, 0},
        {"sp g bwd mlp", "reduce_scatter", 1, 0, 0}, {"sp g bwd mlp", "all_gather", 1, 0, 0},
        {"sp gbar fwd embed", "reduce_scatter", 0, 1, 0},
        {"sp gbar bwd embed", "all_gather", 0, 1, 0},
        {"sp g fwd head", "all_gather", 0, 0, 1},   {"sp g bwd head", "reduce_scatter", 0, 0, 1},
        {"sp g bwd head", "all_gather", 0, 0, 1},   {"loss max", "all_reduce", 0, 0, 1},
        {"loss sum", "all_reduce", 0, 0, 2},
    };
    const int n = (int)(sizeof want / sizeof want[0]);
    int got[32] = {0}, grads = 0, other = 0;
    for (size_t i = 0; i < trace_file_num_events(f); i++) {
        const trace_event *e = trace_file_event(f, i);
        if (e->kind != TRACE_COLLECTIVE || strcmp(trace_file_string(f, e->group), "tp") != 0)
            continue;
        const char *label = trace_file_string(f, e->label), *op = trace_file_string(f, e->op);
        assert_true(e->label >= 0); /* every TP collective says what it is for */
        int w = -1;
        for (int j = 0; j < n; j++)
            if (strcmp(label, want[j].label) == 0 && strcmp(op, want[j].op) == 0) w = j;
        if (w >= 0) got[w]++;
        else if (strcmp(label, "sp grads") == 0 && strcmp(op, "all_reduce") == 0) grads++;
        else other++, printf("  rank %d: unexpected TP collective '%s' (%s)\n", k, label, op);
    }
    for (int j = 0; j < n; j++) {
        int expect = per_run * (want[j].per_layer * L + want[j].first_stage * first +
                                want[j].last_stage * last);
        if (got[j] != expect)
            fail_msg("rank %d: %d '%s' %s, expected %d", k, got[j], want[j].label, want[j].op,
                     expect);
    }
    assert_int_equal(grads, STEPS); /* the LayerNorms' gradients, once per step */
    assert_int_equal(other, 0);
}

static void a_pretend_remote_clock_stays_causal_and_sp_collectives_are_labelled(void **state) {
    (void)state;
    char run[4400];
    snprintf(run, sizeof run, "%s/run", test_tmpdir("traced_skew"));
    train("TRIDENT_TEST_CLOCK_SKEW=50", run, "--sequence-parallel");
    assert_run_trace_causal(run);
    char err[1024];
    trace_run *r = trace_run_read(run, err, sizeof err);
    if (!r) fail_msg("%s", err);
    for (int k = 0; k < r->nranks; k++) {
        const trace_header *h = trace_file_header(r->ranks[k]);
        if (k == 0) {
            assert_true(h->clock_offset == 0.0 && h->clock_uncertainty == 0.0);
            continue;
        }
        assert_true(h->clock_uncertainty > 0.0); /* measured, not assumed */
        assert_true(fabs(h->clock_offset) <= h->clock_uncertainty + 1e-9);
    }
    for (int k = 0; k < r->nranks; k++)
        expect_sequence_parallel_labels(r->ranks[k], k, trace_file_header(r->ranks[k])->pp_rank);
    trace_run_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_host_traces_are_exact_labelled_and_causal),
        cmocka_unit_test(a_pretend_remote_clock_stays_causal_and_sp_collectives_are_labelled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
