/* moe_checkpoint_test.c — checkpoints of MoE models and 5-D layouts (context and expert
 * parallelism) load at any other layout, in one MPI job of 4 ranks.
 *
 * A run trains 3 steps at the saving layout, saves, and goes on to step 6; every loading layout
 * loads that checkpoint and runs steps 4..6. Its losses and final parameters must equal the
 * saving layout's own continuation: bit for bit at the same layout, and elsewhere within the
 * equivalence tolerance of tests/train/equivalence_test.c (losses 1e-5 relative,
 * parameters 2e-5 + 1e-4·|x|: other layouts sum the same gradients in another order).
 * Parameters are compared as serial tensors: every rank writes the elements it holds at their
 * serial index (gpt_param_serial_index), and the ranks' pictures are merged (replicas are equal).
 *   - MoE (E = 4, K = 2) saved at ep 2 × edp 2: loaded at the same layout, serially, at ep 4,
 *     at tp 2 × cp 2, at tp 2 × ep 2 and at ep 2 × edp 2 with ZeRO;
 *   - the same saved at ep 2 × edp 2 with ZeRO (the experts' optimizer state sharded over edp,
 *     the dense tensors' over dp): loaded at the same layout, serially, at tp 2 × ep 2 with
 *     ZeRO (edp 1), at ep 4 with ZeRO and at ep 2 × edp 2 without;
 *   - saved at cp 2 × dp 2 with ZeRO (a dense model: the shards are cut over dp × cp), and an
 *     MoE model at cp 2 × ep 2: both loaded serially;
 *   - a dense checkpoint of a 3-D layout records no MoE or 5-D keys (it reads as before).
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/ckpt/checkpoint.h"
#include "src/ckpt/tensorfile.h"
#include "src/runtime/dist.h"
#include "src/train/trainer.h"
#include "src/zero/distributed_optimizer.h"
#include "tests/support/testing.h"

enum { N_SAVED = 3, N_TOTAL = 6, N_MORE = N_TOTAL - N_SAVED };

/* The layouts of a case: sizes (0 = 1) and ZeRO. tp = cp = ep = 0 with serial: no MPI. */
typedef struct {
    const char *name;
    int tp, cp, ep, pp;
    bool zero, serial;
} layout;

/* The small model of the equivalence tests; experts = 0: dense. */
static void model_config(train_config *c, int experts) {
    train_config_defaults(c);
    c->num_layers = 4;
    c->hidden_size = 32;
    c->num_attention_heads = 4;
    c->seq_length = 16;
    c->micro_batch_size = 2;
    c->global_batch_size = 16;
    c->lr = 2e-3f;
    c->lr_warmup_iters = 2;
    c->train_iters = N_TOTAL;
    c->make_vocab_size_divisible_by = 64;
    c->num_experts = experts;
    c->moe_router_topk = 2;
    c->moe_aux_loss_coeff = experts ? 0.01f : 0.0f;
}

/* A trainer of the model at layout lo (every rank its own serial one with lo.serial). */
static trainer *make(const train_config *model, const layout *lo, train_config *c,
                     parallel_state **ps) {
    *c = *model;
    c->tensor_model_parallel_size = lo->tp ? lo->tp : 1;
    c->context_parallel_size = lo->cp ? lo->cp : 1;
    c->expert_model_parallel_size = lo->ep ? lo->ep : 1;
    c->pipeline_model_parallel_size = lo->pp ? lo->pp : 1;
    c->use_distributed_optimizer = lo->zero;
    const int world = lo->serial ? 1 : dist_world_size();
    char err[512];
    if (!train_config_check(c, world, err, sizeof err)) fail_msg("%s: %s", lo->name, err);
    *ps = NULL;
    if (lo->serial) return trainer_create(c, NULL);
    pg_layout l;
    assert_true(pg_layout_make(&l, world, c->tensor_model_parallel_size, c->context_parallel_size,
                               c->expert_model_parallel_size, c->pipeline_model_parallel_size,
                               c->vpp, c->rank_order, err, sizeof err));
    *ps = ps_create(&l, dist_rank());
    return trainer_create(c, *ps);
}

static void unmake(trainer *t, parallel_state *ps) {
    trainer_destroy(t);
    ps_destroy(ps);
}

/* The serial model's table, for serial offsets. */
static gpt_chunk g_serial;

/* The trainer's parameters as the serial model's buffer (g_serial's offsets): each rank
 * writes what it holds, the world keeps the largest value of each element (replicas are
 * equal; -inf where no rank wrote, which then fails the comparison). */
static float *serial_picture(trainer *t) {
    const local_model *m = trainer_model(t);
    gpt_chunk_init(
        &g_serial, &m->cfg,
        &(gpt_shard){
            .tp_size = 1, .layer_end = m->cfg.num_layers, .has_embedding = true, .has_head = true},
        0);
    const size_t n = g_serial.num_elements;
    float *pic = malloc(n * sizeof(float)), *all = malloc(n * sizeof(float));
    for (size_t k = 0; k < n; k++) pic[k] = -INFINITY;
    for (int i = 0; i < m->nparams; i++) {
        const gpt_param *p = m->plist[i];
        const gpt_param *q = gpt_chunk_find(&g_serial, p->kind, p->layer);
        assert_non_null(q);
        for (size_t k = 0; k < p->numel; k++) {
            size_t s = gpt_param_serial_index(p, m->pshard[i], k);
            if (p->kind == GPT_WTE && s / p->full_cols >= (size_t)q->full_rows) continue;
            assert_true(s < q->numel);
            pic[q->offset + s] = m->params[p->offset + k];
        }
    }
    MPI_Allreduce(pic, all, (int)n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    free(pic);
    return all;
}

/* Steps N_SAVED+1 .. N_TOTAL of t into loss[]; returns the serial picture afterwards. */
static float *continue_run(trainer *t, float *loss) {
    for (int it = N_SAVED + 1; it <= N_TOTAL; it++)
        loss[it - N_SAVED - 1] = trainer_step(t, it).loss;
    return serial_picture(t);
}

/* Trains the saving layout 3 steps, saves into ck, continues to step 6: its losses and
 * final picture are the reference of every load. */
static float *save_and_continue(const train_config *model, const layout *lo, const char *ck,
                                float *loss) {
    train_config c;
    parallel_state *ps;
    trainer *t = make(model, lo, &c, &ps);
    for (int it = 1; it <= N_SAVED; it++) trainer_step(t, it);
    const ckpt_layout l = trainer_ckpt_layout(&c);
    checkpoint_save(ck, N_SAVED, &l, trainer_model(t), trainer_optimizer(t), ps->world,
                    dist_rank());
    float *pic = continue_run(t, loss);
    unmake(t, ps);
    return pic;
}

/* Loads ck at layout lo, runs steps 4..6 and compares with the saving layout's continuation
 * (want_loss, want): exactly when atol < 0, else within the tolerance. */
static void expect_load_continues(const train_config *model, const layout *lo, const char *ck,
                                  const float *want_loss, const float *want, double atol) {
    train_config c;
    parallel_state *ps;
    trainer *t = make(model, lo, &c, &ps);
    const ckpt_layout l = trainer_ckpt_layout(&c);
    const int rank = lo->serial ? 0 : dist_rank();
    assert_int_equal(checkpoint_load(ck, &l, trainer_model(t), trainer_optimizer(t), rank),
                     N_SAVED);
    distopt_params_loaded(trainer_optimizer(t));
    float loss[N_MORE];
    float *got = continue_run(t, loss);
    const size_t n = g_serial.num_elements;
    if (atol < 0) {
        for (int i = 0; i < N_MORE; i++)
            if (loss[i] != want_loss[i])
                fail_msg("%s: step %d loss %.9g, the saving layout's %.9g (must be equal)",
                         lo->name, N_SAVED + 1 + i, (double)loss[i], (double)want_loss[i]);
        if (memcmp(got, want, n * sizeof(float)) != 0)
            fail_msg("%s: the parameters differ from the saving layout's continuation", lo->name);
    } else {
        expect_close(loss, want_loss, N_MORE, 0.0, 1e-5, "losses after the load");
        expect_close(got, want, n, atol, 1e-4, "parameters after the load (serial order)");
    }
    if (dist_rank() == 0)
        printf("  %-22s losses %.7f %.7f %.7f, worst param rel diff %.2e%s\n", lo->name,
               (double)loss[0], (double)loss[1], (double)loss[2], max_rel_diff(got, want, n),
               atol < 0 ? " (bit-identical)" : "");
    free(got);
    unmake(t, ps);
}

static const char *shared_tmpdir(const char *name) {
    static char dir[4096];
    if (dist_rank() == 0) snprintf(dir, sizeof dir, "%s", test_tmpdir(name));
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    return dir;
}

static void an_moe_checkpoint_continues_at_other_layouts(void **state) {
    (void)state;
    char ck[4400];
    snprintf(ck, sizeof ck, "%s/ck", shared_tmpdir("moe_reshard"));
    train_config model;
    model_config(&model, 4);
    const layout saving = {.name = "ep2 x edp2", .ep = 2};
    float want_loss[N_MORE];
    float *want = save_and_continue(&model, &saving, ck, want_loss);
    expect_load_continues(&model, &saving, ck, want_loss, want, -1.0);
    const layout others[] = {
        {.name = "serial", .serial = true},
        {.name = "ep4", .ep = 4},
        {.name = "tp2 x cp2", .tp = 2, .cp = 2},
        {.name = "tp2 x ep2", .tp = 2, .ep = 2},
        {.name = "pp2 x dp2 zero (ep1)", .pp = 2, .zero = true},
        {.name = "ep2 x edp2 zero", .ep = 2, .zero = true},
    };
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++)
        expect_load_continues(&model, &others[k], ck, want_loss, want, 2e-5);
    free(want);
}

/* ZeRO-1 with expert parallelism keeps the experts' optimizer state in a shard of its own
 * (over edp): saved at ep 2 × edp 2 with ZeRO, it loads at the same layout, serially, at
 * ep 2 with ZeRO at another dp (tp 2: dp 2, edp 1), at ep 4 with ZeRO and without ZeRO. */
static void a_zero_expert_parallel_checkpoint_continues_at_other_layouts(void **state) {
    (void)state;
    char ck[4400];
    snprintf(ck, sizeof ck, "%s/ck", shared_tmpdir("moe_zero_reshard"));
    train_config model;
    model_config(&model, 4);
    const layout saving = {.name = "ep2 x edp2 zero", .ep = 2, .zero = true};
    float want_loss[N_MORE];
    float *want = save_and_continue(&model, &saving, ck, want_loss);
    if (dist_rank() == 0) printf("  saved at %s:\n", saving.name);
    expect_load_continues(&model, &saving, ck, want_loss, want, -1.0);
    const layout others[] = {
        {.name = "serial", .serial = true},
        {.name = "tp2 x ep2 zero", .tp = 2, .ep = 2, .zero = true},
        {.name = "ep4 zero", .ep = 4, .zero = true},
        {.name = "ep2 x edp2", .ep = 2},
    };
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++)
        expect_load_continues(&model, &others[k], ck, want_loss, want, 2e-5);
    free(want);
}

static void context_parallel_checkpoints_load_serially(void **state) {
    (void)state;
    const char *dir = shared_tmpdir("cp_reshard");
    const layout serial = {.name = "serial", .serial = true};
    struct {
        int experts;
        layout saving;
    } cases[] = {
        {0, {.name = "cp2 x dp2 zero", .cp = 2, .zero = true}},
        {4, {.name = "cp2 x ep2 (MoE)", .cp = 2, .ep = 2}},
    };
    for (int k = 0; k < 2; k++) {
        char ck[4400];
        snprintf(ck, sizeof ck, "%s/ck%d", dir, k);
        train_config model;
        model_config(&model, cases[k].experts);
        float want_loss[N_MORE];
        float *want = save_and_continue(&model, &cases[k].saving, ck, want_loss);
        if (dist_rank() == 0) printf("  saved at %s:\n", cases[k].saving.name);
        expect_load_continues(&model, &cases[k].saving, ck, want_loss, want, -1.0);
        expect_load_continues(&model, &serial, ck, want_loss, want, 2e-5);
        free(want);
    }
}

/* What a rank file of iteration 3 under ck says about key. */
static bool rank_file_has(const char *ck, int rank, const char *key) {
    char path[4600], err[512];
    snprintf(path, sizeof path, "%s/iter_%07d/rank_%05d.tck", ck, N_SAVED, rank);
    tf_reader *r = tf_reader_open(path, err, sizeof err);
    if (!r) fail_msg("%s", err);
    bool has = tf_meta_has(tf_reader_meta(r), key);
    tf_reader_close(r);
    return has;
}

static void dense_checkpoints_record_no_moe_or_5d_keys(void **state) {
    (void)state;
    const char *dir = shared_tmpdir("dense_keys");
    char ck[4400], ck_moe[4400];
    snprintf(ck, sizeof ck, "%s/dense", dir);
    snprintf(ck_moe, sizeof ck_moe, "%s/moe", dir);
    train_config dense, moe;
    model_config(&dense, 0);
    model_config(&moe, 4);
    const layout tp2 = {.name = "tp2 x dp2", .tp = 2},
                 cp_ep = {.name = "cp2 x ep2", .cp = 2, .ep = 2};
    float loss[N_MORE];
    free(save_and_continue(&dense, &tp2, ck, loss));
    free(save_and_continue(&moe, &cp_ep, ck_moe, loss));
    if (dist_rank() != 0) return;
    static const char *keys[] = {"num_experts",
                                 "moe_router_topk",
                                 "moe_aux_loss_coeff",
                                 "moe_expert_capacity_factor",
                                 "context_parallel_size",
                                 "expert_model_parallel_size",
                                 "cp_rank",
                                 "ep_rank"};
    for (int r = 0; r < 4; r++)
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            if (rank_file_has(ck, r, keys[k]))
                fail_msg("a dense tp2 checkpoint's rank %d file has '%s'", r, keys[k]);
            if (!rank_file_has(ck_moe, r, keys[k]))
                fail_msg("an MoE cp2 x ep2 checkpoint's rank %d file lacks '%s'", r, keys[k]);
        }
    printf("  dense tp2 x dp2: no MoE or 5-D keys; MoE cp2 x ep2: all %zu\n",
           sizeof keys / sizeof keys[0]);
}

int main(int argc, char **argv) {
    mpi_test_launch(argc, argv, 4);
    dist_init(&argc, &argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_moe_checkpoint_continues_at_other_layouts),
        cmocka_unit_test(a_zero_expert_parallel_checkpoint_continues_at_other_layouts),
        cmocka_unit_test(context_parallel_checkpoints_load_serially),
        cmocka_unit_test(dense_checkpoints_record_no_moe_or_5d_keys),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dist_finalize();
    return rc;
}
