/* fsdp_test.c — ZeRO-2/3's storage (src/zero/fsdp.h) on 2 data-parallel ranks, driven through
 * the model's spans (src/model/gpt_hooks.h) as the backward and forward drive it:
 *   - ZeRO-2: the model's gradient buffer is gone; each unit's bucket, written once per
 *     micro-batch, ends up reduce-scattered and summed over micro-batches in the shard;
 *   - ZeRO-3: the parameter buffer is gone too; every unit read in forward order, backward
 *     order and out of order (a prefetch not taken) is the model's initial parameters; the
 *     whole buffer is gathered for a reader and a written one is taken back as the shard;
 *     another model's chunks are not served;
 *   - the tied wte's two copies on one rank (zbv) get the sum of their slices;
 *   - the bytes held: shard-sized gradients (and parameters), one bucket (and two gathers).
 * Runs under mpirun with 2 ranks.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/model/gpt_hooks.h"
#include "src/model/local_model.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"
#include "src/zero/fsdp.h"
#include "tests/support/testing.h"

enum { WORLD = 2, LAYERS = 4 }; /* 4 layers: zbv's 4 stages of a 2-rank V */

static const gpt_config k_cfg = {.vocab_size = 256, .real_vocab = 256, .seq_len = 8, .num_layers = LAYERS, .hidden = 16, .num_heads = 2}; /* V T L C NH */

/* The model's units in forward order, as gpt_hooks.h names them. */
static int units_of(int *u) {
    int n = 0;
    u[n++] = GPT_UNIT_WTE;
    u[n++] = GPT_UNIT_WPE;
    for (int l = 0; l < LAYERS; l++) u[n++] = l;
    u[n++] = GPT_UNIT_LNF;
    return n;
}

/* A gradient value any rank can compute for any (rank, micro-batch, element): small
 * integers, so that sums in any order are exact. */
static float grad_value(int rank, int mb, size_t w) {
    return (float)((int)(w % 13) + 3 * rank + mb);
}

static comm_group *world(void) {
    static comm_group *g;
    if (!g) g = comm_group_world(COMM_MPI);
    return g;
}

static void zero2_sums_every_bucket_into_the_shard(void **state) {
    (void)state;
    local_model *m = local_model_create(&k_cfg, 1, 0, 1, 0, 1, NULL, 7);
    zero_ranges *r = zero_fsdp_ranges(m, WORLD, 64);
    const zero_fsdp_config fc = {2, PREC_FP32, false};
    zero_fsdp *f = zero_fsdp_create(m, r, world(), &fc);
    assert_null(m->grads);
    assert_non_null(m->params); /* ZeRO-2 keeps the parameters */
    const int rank = dist_rank();
    int units[8];
    const int nu = units_of(units);
    for (int mb = 0; mb < 3; mb++) /* three micro-batches: three reduce-scatters per unit */
        for (int k = nu - 1; k >= 0; k--) {
            gpt_span g = gpt_span_grads(&m->chunks[0], NULL, units[k]);
            assert_true(g.hooked);
            for (size_t i = 0; i < g.end - g.begin; i++) {
                assert_true(g.at[i] == 0.0f); /* the bucket starts zeroed */
                g.at[i] = grad_value(rank, mb, g.begin + i);
            }
            gpt_span_grads_done(&m->chunks[0], &g);
        }
    const float *gs = zero_fsdp_grads(f);
    const zero_shard *sh = &r->shards[rank];
    size_t bad = 0;
    for (int k = 0; k < sh->n_pieces; k++)
        for (size_t w = sh->pieces[k].world_start; w < sh->pieces[k].world_end; w++) {
            float want = 0.0f;
            for (int q = 0; q < WORLD; q++)
                for (int mb = 0; mb < 3; mb++) want += grad_value(q, mb, w);
            if (gs[sh->pieces[k].local_start + (w - sh->pieces[k].world_start)] != want) bad++;
        }
    assert_int_equal(bad, 0);
    zero_fsdp_zero_grads(f);
    for (size_t i = 0; i < r->shard_numel; i++) assert_true(gs[i] == 0.0f);
    size_t gb, pb, wb;
    zero_fsdp_bytes(f, &gb, &pb, &wb);
    size_t most = 0;
    for (int u = 0; u < r->n_units; u++)
        if (r->units[u].shard_numel > most) most = r->units[u].shard_numel;
    assert_int_equal(gb, r->shard_numel * sizeof(float));
    assert_int_equal(pb, 0);
    assert_int_equal(wb, WORLD * most * sizeof(float)); /* one bucket */
    zero_fsdp_destroy(f);
    zero_ranges_free(r);
    local_model_destroy(m);
}

/* Reads unit `unit` (hinting `next`) and compares it with the reference model's values. */
static void expect_unit(local_model *m, const local_model *ref, int unit, int next) {
    gpt_span w = gpt_span_params(&m->chunks[0], NULL, unit, next);
    assert_true(w.hooked);
    const float *want = ref->params + w.begin;
    assert_int_equal(memcmp(w.at, want, (w.end - w.begin) * sizeof(float)), 0);
    gpt_span_params_done(&m->chunks[0], &w);
}

static void zero3_gathers_what_every_pass_reads(void **state) {
    (void)state;
    local_model *ref = local_model_create(&k_cfg, 1, 0, 1, 0, 1, NULL, 7);
    local_model *m = local_model_create(&k_cfg, 1, 0, 1, 0, 1, NULL, 7);
    zero_ranges *r = zero_fsdp_ranges(m, WORLD, 64);
    const zero_fsdp_config fc = {3, PREC_FP32, true}; /* prefetch on the stream */
    zero_fsdp *f = zero_fsdp_create(m, r, world(), &fc);
    assert_null(m->params);
    assert_null(m->grads);
    int u[8];
    const int n = units_of(u);
    for (int k = 0; k < n; k++) expect_unit(m, ref, u[k], k + 1 < n ? u[k + 1] : GPT_UNIT_NONE);
    for (int k = n - 1; k >= 0; k--) expect_unit(m, ref, u[k], k > 0 ? u[k - 1] : GPT_UNIT_NONE);
    expect_unit(m, ref, 0, 1);             /* block 0, prefetching block 1 ... */
    expect_unit(m, ref, GPT_UNIT_LNF, 0);  /* ... which the pass does not take */
    expect_unit(m, ref, 0, GPT_UNIT_NONE); /* block 0 again: prefetched by the LNF read */
    /* another model's chunk is not served: its own buffer */
    gpt_span other = gpt_span_params(&ref->chunks[0], ref->params, 1, GPT_UNIT_NONE);
    assert_false(other.hooked);
    assert_true(other.at == ref->params + other.begin);
    /* a reader of the whole buffer; a written one taken back as the shard */
    zero_fsdp_gather_whole(f);
    assert_non_null(m->params);
    assert_int_equal(memcmp(m->params, ref->params, m->numel * sizeof(float)), 0);
    for (size_t i = 0; i < m->numel; i++) ref->params[i] = m->params[i] = 0.5f * (float)(i % 7);
    zero_fsdp_take_whole(f);
    assert_null(m->params);
    for (int k = 0; k < n; k++) expect_unit(m, ref, u[k], GPT_UNIT_NONE);
    size_t gb, pb, wb;
    zero_fsdp_bytes(f, &gb, &pb, &wb);
    assert_int_equal(pb, r->shard_numel * sizeof(float));
    assert_true(2 * pb < m->numel * sizeof(float) + 2 * WORLD * 64 * (size_t)n * sizeof(float));
    zero_fsdp_destroy(f);
    zero_ranges_free(r);
    local_model_destroy(m);
    local_model_destroy(ref);
}

/* zbv: stage 0 and stage 3 of a 2-rank V on pipeline rank 0, so both wte copies are here. */
static void the_tied_wte_copies_get_the_sum_of_their_slices(void **state) {
    (void)state;
    const int stages[2] = {0, 3};
    local_model *m = local_model_create_staged(&k_cfg, 1, 0, 2, 0, 2, stages, NULL, 7);
    const gpt_param *e = m->wte_embedding, *h = m->wte_head;
    assert_true(e && h && e != h);
    zero_ranges *r = zero_fsdp_ranges(m, WORLD, 64);
    const zero_fsdp_config fc = {2, PREC_FP32, false};
    zero_fsdp *f = zero_fsdp_create(m, r, world(), &fc);
    const int rank = dist_rank();
    for (int c = 0; c < 2; c++) { /* copy c's gradient: a value of (rank, element of wte) */
        gpt_span g = gpt_span_grads(&m->chunks[c], NULL, GPT_UNIT_WTE);
        for (size_t i = 0; i < e->numel; i++) g.at[i] = grad_value(rank, c, i);
        gpt_span_grads_done(&m->chunks[c], &g);
    }
    zero_fsdp_sum_tied(f, NULL, e, h);
    const zero_shard *sh = &r->shards[rank];
    const float *gs = zero_fsdp_grads(f);
    size_t seen = 0;
    for (int k = 0; k < sh->n_pieces; k++) {
        const zero_piece *pc = &sh->pieces[k];
        if (m->plist[pc->param] != e && m->plist[pc->param] != h) continue;
        for (size_t i = pc->param_start; i < pc->param_end; i++, seen++) {
            float want = 0.0f;
            for (int q = 0; q < WORLD; q++) want += grad_value(q, 0, i) + grad_value(q, 1, i);
            assert_true(gs[pc->local_start + (i - pc->param_start)] == want);
        }
    }
    assert_true(seen > 0);
    zero_fsdp_destroy(f);
    zero_ranges_free(r);
    local_model_destroy(m);
}

int main(int argc, char **argv) {
    mpi_test_launch(argc, argv, WORLD);
    dist_init(&argc, &argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zero2_sums_every_bucket_into_the_shard),
        cmocka_unit_test(zero3_gathers_what_every_pass_reads),
        cmocka_unit_test(the_tied_wte_copies_get_the_sum_of_their_slices),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dist_finalize();
    return rc;
}
