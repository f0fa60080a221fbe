/* kv_cache_tp_test.c — the cached forward and the sampler at tensor-parallel size 2 (mpirun).
 *
 * - each rank's vocabulary shard of the decoded logits, prefill then one position at a time,
 *   equals the same columns of the serial full forward (each rank caches its own heads);
 * - greedy and top-k sampling move only the proposals, never the logits: the TP group's
 *   collective bytes are tp × 2 floats (greedy) and tp × k × 2 floats (top-k), and every
 *   rank picks the serial argmax.
 */
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/core/rng.h"
#include "src/infer/kv_cache.h"
#include "src/infer/sampler.h"
#include "src/model/gpt.h"
#include "src/model/local_model.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"
#include "src/runtime/parallel_state.h"
#include "tests/support/testing.h"

enum { TP = 2, T = 20, L = 2, C = 32, NH = 4, P = 6 };

static parallel_state *g_ps;

static void decoded_shards_match_the_serial_full_forward(void **state) {
    (void)state;
    const int rank = g_ps->tp_rank;
    gpt_config g = {.vocab_size = gpt_padded_vocab(256, 128, TP), .real_vocab = 256, .seq_len = T, .num_layers = L, .hidden = C, .num_heads = NH};
    local_model *serial = local_model_create(&g, 1, 0, 1, 0, 1, NULL, 21);
    local_model *mine = local_model_create(&g, TP, rank, 1, 0, 1, NULL, 21);
    int32_t tok[T];
    for (int i = 0; i < T; i++) tok[i] = (int32_t)rng_below(5, 9, (uint64_t)i, 256);
    const gpt_chunk *cs = &serial->chunks[0], *c = &mine->chunks[0];
    gpt_acts *a = gpt_acts_create(cs, 1, T);
    gpt_forward(cs, serial->params, a, NULL, tok, tok, NULL, NULL, NULL);
    const float *full = gpt_acts_logits(a); /* (T, V) */

    kv_cache *kv = kv_cache_create(c, P);
    float *logits = malloc(c->Vl * sizeof(float));
    for (int p = 0; p < T;) {
        const int n = p == 0 ? P : 1;
        kv_cache_forward(c, mine->params, kv, tok + p, NULL, NULL, logits, NULL, n, g_ps->tp);
        p += n;
        expect_close(logits, full + (size_t)(p - 1) * cs->Vl + c->v_start, c->Vl, 1e-5, 1e-4,
                     "this rank's vocabulary shard");
        /* greedy: every rank gets the serial argmax, and only tp × (value, index) moved */
        int32_t want = 0;
        for (int v = 1; v < 256; v++)
            if (full[(size_t)(p - 1) * cs->Vl + v] > full[(size_t)(p - 1) * cs->Vl + want])
                want = v;
        sampler_config greedy = {0.0f, 0, 1.0f, 1}, topk = {1.0f, 3, 1.0f, 1};
        comm_reset_counters(g_ps->tp);
        assert_int_equal(
            sampler_pick(&greedy, logits, c->Vl, c->v_start, 256, (uint64_t)p, g_ps->tp), want);
        assert_int_equal(comm_bytes_collective(g_ps->tp), TP * 2 * sizeof(float));
        comm_reset_counters(g_ps->tp);
        int32_t t = sampler_pick(&topk, logits, c->Vl, c->v_start, 256, (uint64_t)p, g_ps->tp);
        assert_true(t >= 0 && t < 256);
        assert_int_equal(comm_bytes_collective(g_ps->tp), TP * 3 * 2 * sizeof(float));
    }
    free(logits);
    kv_cache_destroy(kv);
    gpt_acts_destroy(a);
    local_model_destroy(serial);
    local_model_destroy(mine);
}

int main(int argc, char **argv) {
    mpi_test_launch(argc, argv, TP);
    dist_init(&argc, &argv);
    pg_layout l;
    char err[256];
    if (!pg_layout_make(&l, dist_world_size(), TP, 1, 1, 1, 1, "tp-dp-pp", err, sizeof err))
        die("%s", err);
    g_ps = ps_create(&l, dist_rank());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decoded_shards_match_the_serial_full_forward),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    ps_destroy(g_ps);
    dist_finalize();
    return rc;
}
