/* equivalence.c — see equivalence.h. */
#include "tests/train/equivalence.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/pp/schedule.h"
#include "src/runtime/dist.h"
#include "src/runtime/parallel_state.h"
#include "src/train/trainer.h"
#include "tests/support/testing.h"

void equivalence_base_config(train_config *c) {
    train_config_defaults(c);
    c->num_layers = 4;
    c->hidden_size = 32;
    c->num_attention_heads = 4;
    c->seq_length = 16;
    c->micro_batch_size = 2;
    c->global_batch_size = 16;
    c->lr = 2e-3f;
    c->lr_warmup_iters = 2;
    c->train_iters = 4;
    c->make_vocab_size_divisible_by = 64;
}

void equivalence_apply(const train_config *base, const layout_case *lc, train_config *out) {
    train_config pc = *base;
    /* a V with layers per chunk given: the model has that many per stage, 2·pp stages */
    if (pp_name_v_placement(lc->schedule) && lc->vpp_layers > 0)
        pc.num_layers = lc->vpp_layers * 2 * lc->pp;
    pc.tensor_model_parallel_size = lc->tp;
    pc.pipeline_model_parallel_size = lc->pp;
    pc.num_layers_per_virtual_pipeline_stage = lc->vpp_layers;
    pc.pipeline_schedule = lc->schedule;
    pc.use_distributed_optimizer = lc->zero;
    pc.overlap_grad_reduce = lc->overlap_grad;
    pc.overlap_param_gather = lc->overlap_param;
    pc.overlap_p2p_comm = lc->overlap_p2p;
    pc.recompute_granularity = lc->recompute;
    pc.recompute_method = lc->recompute_method;
    pc.recompute_num_layers = lc->recompute_layers;
    pc.sequence_parallel = lc->sequence_parallel;
    pc.data_parallel_sharding_strategy = lc->sharding;
    pc.context_parallel_size = lc->cp > 0 ? lc->cp : 1;
    pc.expert_model_parallel_size = lc->ep > 0 ? lc->ep : 1;
    /* A few thousand elements: the test model's ~70k parameters make a few dozen buckets that
     * straddle layers and ZeRO shards, and most are reduced during the backward. */
    if (lc->overlap_grad || lc->overlap_param) pc.ddp_bucket_size = 3000;
    *out = pc;
}

void equivalence_model(const layout_case *lc, train_config *c) {
    c->num_experts = lc->experts;
    if (lc->topk > 0) c->moe_router_topk = lc->topk;
    c->moe_aux_loss_coeff = lc->aux_coeff;
    c->moe_expert_capacity_factor = lc->capacity;
}

/* The serial model's tensor with the same kind and layer as p. */
static const gpt_param *serial_twin(const local_model *s, const gpt_param *p) {
    for (int i = 0; i < s->nparams; i++)
        if (s->plist[i]->kind == p->kind && s->plist[i]->layer == p->layer) return s->plist[i];
    return NULL;
}

void equivalence_check(const train_config *base, const layout_case *lc, int steps, double loss_rtol,
                       double param_atol, double param_rtol) {
    const int world = dist_world_size(), rank = dist_rank();
    char err[512];

    train_config sc = *base;
    /* a V with layers per chunk given: the model has that many per stage, 2·pp stages */
    if (pp_name_v_placement(lc->schedule) && lc->vpp_layers > 0)
        sc.num_layers = lc->vpp_layers * 2 * lc->pp;
    sc.train_iters = steps;
    equivalence_model(lc, &sc); /* the model: the same at both ends */
    train_config pc;
    equivalence_apply(&sc, lc, &pc);
    assert_true(train_config_check(&sc, 1, err, sizeof err));
    trainer *serial = trainer_create(&sc, NULL);
    float *serial_loss = calloc((size_t)steps, sizeof(float));
    for (int it = 1; it <= steps; it++) serial_loss[it - 1] = trainer_step(serial, it).loss;

    char rec[160] = ""; /* the recomputation, SP and sharding, for the messages */
    if (lc->recompute)
        snprintf(rec, sizeof rec, " rc-%s%s%s", lc->recompute, lc->recompute_method ? "-" : "",
                 lc->recompute_method ? lc->recompute_method : "");
    if (lc->sequence_parallel) strcat(rec, " sp");
    if (lc->sharding) snprintf(rec + strlen(rec), sizeof rec - strlen(rec), " %s", lc->sharding);
    if (lc->cp > 1) snprintf(rec + strlen(rec), sizeof rec - strlen(rec), " cp%d", lc->cp);
    if (lc->experts > 0)
        snprintf(rec + strlen(rec), sizeof rec - strlen(rec), " moe-E%d-k%d ep%d%s", lc->experts,
                 sc.moe_router_topk, lc->ep > 0 ? lc->ep : 1, lc->capacity > 0 ? " cap" : "");
    if (!train_config_check(&pc, world, err, sizeof err)) fail_msg("layout rejected: %s", err);
    pg_layout l;
    assert_true(pg_layout_make(&l, world, pc.tensor_model_parallel_size, pc.context_parallel_size,
                               pc.expert_model_parallel_size, pc.pipeline_model_parallel_size,
                               pc.vpp, pc.rank_order, err, sizeof err));
    parallel_state *ps = ps_create(&l, rank);
    trainer *par = trainer_create(&pc, ps);
    double worst_loss = 0.0;
    for (int it = 1; it <= steps; it++) {
        float lp = trainer_step(par, it).loss, ls = serial_loss[it - 1];
        double rel = fabs((double)lp - ls) / fabs((double)ls);
        if (rel > worst_loss) worst_loss = rel;
        if (!(rel <= loss_rtol))
            fail_msg("tp%d pp%d dp%d %s%s%s%s%s: loss at step %d is %.9g, serial %.9g (rel %.3g "
                     "> %.3g)",
                     lc->tp, lc->pp, pc.dp, lc->schedule, lc->zero ? " zero" : "",
                     lc->overlap_grad ? " overlap-grad" : "",
                     lc->overlap_param ? " overlap-param" : "", rec, it, (double)lp, (double)ls,
                     rel, loss_rtol);
    }
    /* Every local parameter element against its serial counterpart. */
    const local_model *pm = trainer_model(par), *sm = trainer_model(serial);
    double worst_param = 0.0;
    size_t bad = 0, compared = 0;
    for (int i = 0; i < pm->nparams; i++) {
        const gpt_param *p = pm->plist[i];
        const gpt_param *q = serial_twin(sm, p);
        assert_non_null(q);
        for (size_t k = 0; k < p->numel; k++) {
            size_t si = gpt_param_serial_index(p, pm->pshard[i], k);
            if (p->kind == GPT_WTE && si / p->full_cols >= 256) continue; /* padding rows */
            if (si >= q->numel) fail_msg("%s: serial index %zu out of range", p->name, si);
            double a = pm->params[p->offset + k], b = sm->params[q->offset + si];
            double d = fabs(a - b);
            if (d / (fabs(b) + 1e-3) > worst_param) worst_param = d / (fabs(b) + 1e-3);
            compared++;
            if (!(d <= param_atol + param_rtol * fabs(b))) {
                if (bad < 5)
                    fprintf(stderr, "  rank %d %s[%zu] (serial %zu): %.9g vs serial %.9g\n", rank,
                            p->name, k, si, a, b);
                bad++;
            }
        }
    }
    if (rank == 0)
        printf("  tp%d pp%d dp%d %-11s%s%s%s%s%s: %d steps, worst loss rel diff %.2e, worst "
               "param diff %.2e (%zu compared)\n",
               lc->tp, lc->pp, pc.dp, lc->schedule, lc->zero ? " zero" : "     ",
               lc->overlap_grad ? " +ogr" : "", lc->overlap_param ? " +opg" : "",
               lc->overlap_p2p ? " +op2p" : "", rec, steps, worst_loss, worst_param, compared);
    trainer_destroy(par);
    ps_destroy(ps);
    trainer_destroy(serial);
    free(serial_loss);
    int local_bad = bad > 0, any_bad = 0;
    MPI_Allreduce(&local_bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_bad)
        fail_msg("parameters differ from the serial run (%zu elements on rank %d)", bad, rank);
}
