/* optimizer_steps.c — the steps every gradient path shares (distopt_internal.h): the tied
 * embedding's sum, the labelled in-place collectives, and what happens on this rank's shard
 * once its gradients are reduced — the sequence-parallel sum, the global norm, AdamW.
 *
 * A piece of a shard (shard_ranges.h) has its gradient at grads + local_start, its Adam
 * moments and master weights at m, v, master + local_start, and its weights in the model's
 * buffer at params + world_start (ZeRO-3: in the parameter shard at local_start). Without
 * ZeRO the same loops run over the one shard of the dp = 1 layout, whose pieces are the whole
 * parameters (local_start == world_start).
 *
 * Not here: which path a layout takes (distributed_optimizer.c), the paths themselves.
 */
#include "src/zero/distopt_internal.h"

#include <math.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_label.h"

int distopt_group_size(comm_group *g) { return g ? comm_size(g) : 1; }

zero_ranges *distopt_layout(const local_model *m, int shards, size_t bucket_numel,
                            const bool *only) {
    zero_param *zp = mallocCheck(sizeof *zp * (size_t)(m->nparams ? m->nparams : 1));
    for (int i = 0; i < m->nparams; i++) {
        zp[i].name = m->plist[i]->name;
        zp[i].numel = !only || only[i] ? m->plist[i]->numel : 0;
        zp[i].weight_decay = m->plist[i]->decay;
        zp[i].in_grad_norm = m->in_norm[i];
    }
    zero_ranges *r = zero_ranges_build(zp, m->nparams, shards, 64, bucket_numel);
    free(zp);
    return r;
}

const gpt_param *distopt_tied_wte(const local_model *m, const gpt_param **second) {
    const bool two_here = m->wte_embedding && m->wte_head && m->wte_embedding != m->wte_head;
    *second = two_here ? m->wte_head : NULL;
    return m->wte_embedding ? m->wte_embedding : m->wte_head;
}

void distopt_sum_tied_embedding(dist_optimizer *o) {
    local_model *m = o->model;
    const gpt_param *second, *p = distopt_tied_wte(m, &second);
    if (distopt_group_size(o->g.embedding) <= 1 || !p) return;
    comm_label_set("tied embed", -1);
    comm_all_reduce(o->g.embedding, m->grads + p->offset, p->numel, COMM_FLOAT32, COMM_SUM);
    comm_label_clear();
}

void distopt_reduce_scatter(comm_group *g, float *buf, size_t S, const char *label) {
    if (distopt_group_size(g) <= 1) return;
    comm_label_set(label, -1);
    comm_reduce_scatter(g, buf, buf, S, COMM_FLOAT32, COMM_SUM);
    comm_label_clear();
}

void distopt_all_gather(comm_group *g, const float *mine, float *buf, size_t S, const char *label) {
    if (distopt_group_size(g) <= 1) return;
    comm_label_set(label, -1);
    comm_all_gather(g, mine, buf, S, COMM_FLOAT32);
    comm_label_clear();
}

/* ---------------------------------------------------------------- on the shard */

double distopt_update_shard(dist_optimizer *o, float *grads, float lr) {
    distopt_sum_sequence_parallel(o, &o->shard, grads);
    const double norm = distopt_global_norm(o, distopt_sumsq(&o->shard, grads, 0.0));
    distopt_adamw(o, &o->shard, grads, lr, adamw_clip_factor(&o->cfg, norm));
    return norm;
}

/* Step 2, end, with sequence parallelism: the gradients of the parameters each TP rank summed
 * over its own positions only (gpt_param.sequence_parallel: the LayerNorms, and an MoE block's
 * router and experts) are summed over the TP group — Megatron's all-reduce of
 * "sequence_parallel" gradients (finalize_model_grads). The shard's pieces of them, which
 * every TP peer holds alike (their buffers have the same layout), are packed into one buffer,
 * all-reduced once and put back. */
void distopt_sum_sequence_parallel(dist_optimizer *o, const distopt_shard *s, float *grads) {
    if (distopt_group_size(o->g.tp) <= 1) return;
    const zero_shard *sh = s->mine;
    size_t n = 0;
    for (int k = 0; k < sh->n_pieces; k++)
        if (o->model->plist[sh->pieces[k].param]->sequence_parallel)
            n += sh->pieces[k].local_end - sh->pieces[k].local_start;
    if (n == 0) return; /* the same on every TP peer: the same pieces */
    float *buf = device_alloc(n * sizeof(float), "sequence-parallel gradients");
    for (int pass = 0; pass < 2; pass++) { /* 0: pack, 1: unpack after the sum */
        size_t at = 0;
        for (int k = 0; k < sh->n_pieces; k++) {
            const zero_piece *pc = &sh->pieces[k];
            if (!o->model->plist[pc->param]->sequence_parallel) continue;
            const size_t len = pc->local_end - pc->local_start;
            if (pass == 0) device_copy(buf + at, grads + pc->local_start, len * sizeof(float));
            else device_copy(grads + pc->local_start, buf + at, len * sizeof(float));
            at += len;
        }
        if (pass > 0) break;
        comm_label_set("sp grads", -1);
        comm_all_reduce(o->g.tp, buf, n, COMM_FLOAT32, COMM_SUM);
        comm_label_clear();
    }
    device_free(buf);
}

/* Step 3, the global norm over every parameter counted once (TP replicas and the head's wte
 * copy excluded: in_grad_norm): this rank's pieces that count, summed over the norm group. */
double distopt_sumsq(const distopt_shard *s, const float *grads, double ss) {
    for (int k = 0; k < s->mine->n_pieces; k++) {
        const zero_piece *pc = &s->mine->pieces[k];
        if (s->ranges->params[pc->param].in_grad_norm)
            ss += dev_sumsq(grads + pc->local_start, pc->local_end - pc->local_start);
    }
    return ss;
}

double distopt_global_norm(dist_optimizer *o, double ss) {
    comm_label_set("grad norm", -1);
    ss = distopt_sum_over_group(o->g.norm, ss);
    comm_label_clear();
    return sqrt(ss);
}

double distopt_sum_over_group(comm_group *g, double x) {
    int n = distopt_group_size(g);
    if (n <= 1) return x;
    double *all = mallocCheck(sizeof(double) * (size_t)n);
    comm_all_gather(g, &x, all, sizeof(double), COMM_BYTE);
    double s = 0.0;
    for (int i = 0; i < n; i++) s += all[i];
    free(all);
    return s;
}

/* Step 4: AdamW on the shard's pieces — on the fp32 master weights when there are, then
 * written into the model's copy rounded to 16 bits. */
void distopt_adamw(dist_optimizer *o, const distopt_shard *s, const float *grads, float lr,
                   float clip) {
    for (int k = 0; k < s->mine->n_pieces; k++) {
        const zero_piece *pc = &s->mine->pieces[k];
        const size_t at = pc->local_start, len = pc->local_end - at;
        const float wd = s->ranges->params[pc->param].weight_decay ? o->cfg.weight_decay : 0.0f;
        float *model_w = distopt_model_weights(o, s, pc);
        float *w = s->master ? s->master + at : model_w;
        dev_adamw_update(w, grads + at, s->m + at, s->v + at, len, &o->cfg, lr, wd, o->t, clip);
        if (!s->master) continue;
        device_copy(model_w, w, len * sizeof(float));
        dev_round(o->g.dtype, model_w, len);
    }
}

float *distopt_model_weights(dist_optimizer *o, const distopt_shard *s, const zero_piece *pc) {
    if (s->packed) return o->model->params + o->model->plist[pc->param]->offset + pc->param_start;
    if (o->stage == 3) return zero_fsdp_params(o->fsdp) + pc->local_start;
    return o->model->params + pc->world_start;
}

void distopt_init_master(dist_optimizer *o, distopt_shard *s, bool round) {
    s->master = device_alloc(s->n * sizeof(float), "fp32 master weights");
    for (int k = 0; k < s->mine->n_pieces; k++) {
        const zero_piece *pc = &s->mine->pieces[k];
        const size_t len = pc->local_end - pc->local_start;
        device_copy(s->master + pc->local_start, distopt_model_weights(o, s, pc),
                    len * sizeof(float));
        if (round) dev_round(o->g.dtype, distopt_model_weights(o, s, pc), len);
    }
}
