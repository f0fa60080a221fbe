/* traced_run_test.c — the trace of a real multi-rank `trident train` (tp 2 × pp 2, 4 ranks
 * under mpirun) tells the truth:
 *   - ranks of one host share rank 0's clock: offset 0, uncertainty 0, and one run id;
 *   - every TP collective is labelled with its operator and global layer, so they can be
 *     counted (per micro-batch and layer: one "g fwd attn", one "g fwd mlp", one "f bwd
 *     attn", one "f bwd mlp"; the embedding's "g fwd embed", the head's "f bwd head", the
 *     loss's "loss max" and two "loss sum"), pipeline messages are "act fwd" / "grad bwd";
 *   - under TRIDENT_TEST_CLOCK_SKEW the ranks other than 0 go through Cristian's method
 *     (non-zero uncertainty, offset of the real clock within it) and the trace is still
 *     causal (assert_run_trace_causal).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/trace/trace.h"
#include "tests/support/testing.h"

enum { STEPS = 2, M = 4, LAYERS = 4 }; /* M micro-batches per step: global 8 / micro 2 */

static char g_out[1 << 16];

static void train(const char *env, const char *run_dir) {
    char cmd[8192], extra[1024], mpirun[2048];
    snprintf(extra, sizeof extra, TEST_MPI_NO_SINGLE_COPY " %s", env); /* progress-thread path */
    snprintf(
        cmd, sizeof cmd,
        "%s %s train --tensor-model-parallel-size 2 "
        "--pipeline-model-parallel-size 2 --num-layers %d --hidden-size 32 --num-attention-heads 4 "
        "--seq-length 16 --global-batch-size 8 --micro-batch-size 2 --train-iters %d --eval-iters "
        "0 --quiet "
        "--run-dir %s",
        test_mpirun_prefix(mpirun, sizeof mpirun, 4, extra), test_trident_path(), LAYERS, STEPS,
        run_dir);
    int rc = run_capture(cmd, g_out, sizeof g_out);
    if (rc != 0) fail_msg("%s\nexited %d:\n%s", cmd, rc, g_out);
}

static void one_host_traces_are_exact_labelled_and_causal(void **state) {
    (void)state;
    char run[4400];
    snprintf(run, sizeof run, "%s/run", test_tmpdir("traced_one_host"));
    train("", run);
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

static void a_pretend_remote_clock_goes_through_cristian_and_stays_causal(void **state) {
    (void)state;
    char run[4400];
    snprintf(run, sizeof run, "%s/run", test_tmpdir("traced_skew"));
    train("TRIDENT_TEST_CLOCK_SKEW=50", run);
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
    trace_run_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_host_traces_are_exact_labelled_and_causal),
        cmocka_unit_test(a_pretend_remote_clock_goes_through_cristian_and_stays_causal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
