/* expert_shard.c — see expert_shard.h. */
#include "src/zero/expert_shard.h"

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_label.h"

static bool is_expert(const local_model *m, int k) { return m->plist[k]->split == SPLIT_EXPERTS; }

/* ---------------------------------------------------------------- without ZeRO */

/* Step 3: the experts' part of the norm is summed over ep (the other experts' ranks) first. */
static double norm_with_experts(dist_optimizer *o, const float *grads) {
    const distopt_shard *s = &o->shard;
    double ss = 0.0, experts = 0.0;
    for (int k = 0; k < s->mine->n_pieces; k++) {
        const zero_piece *pc = &s->mine->pieces[k];
        if (!s->ranges->params[pc->param].in_grad_norm) continue;
        const double x = dev_sumsq(grads + pc->local_start, pc->local_end - pc->local_start);
        if (is_expert(o->model, pc->param)) experts += x;
        else ss += x;
    }
    comm_label_set("grad norm", -1);
    ss += distopt_sum_over_group(o->g.ep, experts);
    comm_label_clear();
    return distopt_global_norm(o, ss);
}

/* Every tensor's gradient summed over the ranks that hold it, tensor by tensor: the experts'
 * over expert_dp, every other over dp. */
static double all_reduce_step(dist_optimizer *o, float lr, float inv) {
    local_model *m = o->model;
    distopt_sum_tied_embedding(o);
    for (int k = 0; k < m->nparams; k++) {
        const gpt_param *p = m->plist[k];
        const bool expert = is_expert(m, k);
        comm_label_set(expert ? "expert grads" : "grads", -1);
        comm_all_reduce(expert ? o->g.expert_dp : o->g.dp, m->grads + p->offset, p->numel,
                        COMM_FLOAT32, COMM_SUM);
        comm_label_clear();
    }
    if (inv != 1.0f) dev_scale(m->grads, inv, m->numel);
    distopt_sum_sequence_parallel(o, &o->shard, m->grads);
    const double norm = norm_with_experts(o, m->grads);
    distopt_adamw(o, &o->shard, m->grads, lr, adamw_clip_factor(&o->cfg, norm));
    return norm;
}

/* ---------------------------------------------------------------- with ZeRO-1 */

/* The expert tensors' gradients (to_buffer) or parameters (back) between the model's buffer
 * and the packed buffer. */
static void copy_experts(zero_experts *x, local_model *m, bool to_buffer) {
    const zero_ranges *r = x->shard.ranges;
    for (int k = 0; k < r->n_params; k++) {
        if (!r->params[k].numel) continue;
        const size_t bytes = r->params[k].numel * sizeof(float);
        if (to_buffer)
            device_copy(x->buffer + r->offsets[k], m->grads + m->plist[k]->offset, bytes);
        else device_copy(m->params + m->plist[k]->offset, x->buffer + r->offsets[k], bytes);
    }
}

/* This rank's updated expert pieces, into the buffer at their place. */
static void put_updated_pieces(dist_optimizer *o, zero_experts *x) {
    const zero_shard *sh = x->shard.mine;
    for (int k = 0; k < sh->n_pieces; k++) {
        const zero_piece *pc = &sh->pieces[k];
        device_copy(x->buffer + pc->world_start, distopt_model_weights(o, &x->shard, pc),
                    (pc->world_end - pc->world_start) * sizeof(float));
    }
}

/* The experts' gradients packed into the buffer (its padding zero) and reduce-scattered over
 * expert_dp: this rank's summed expert shard lands at the buffer's start. */
static void reduce_scatter_experts(zero_experts *x, local_model *m, float inv) {
    const zero_ranges *r = x->shard.ranges;
    copy_experts(x, m, true);
    dev_fill(x->buffer + r->numel, 0.0f, r->padded_numel - r->numel);
    distopt_reduce_scatter(x->group, x->buffer, r->shard_numel, "expert grads");
    dev_scale(x->buffer, inv, r->shard_numel);
}

/* ZeRO-1 on two shards (expert_shard.h): the experts' over expert_dp in their buffer, the
 * dense one over dp in the model's buffer; one norm over both. */
static double shard_step(dist_optimizer *o, float lr, float inv) {
    zero_experts *x = o->experts;
    distopt_shard *dense = &o->shard, *experts = &x->shard;
    float *grads = o->model->grads, *params = o->model->params;
    const size_t S = dense->ranges->shard_numel;
    distopt_sum_tied_embedding(o);
    reduce_scatter_experts(x, o->model, inv); /* first: the dense one scrambles grads */
    distopt_reduce_scatter(o->g.dp, grads, S, "grads");
    dev_scale(grads, inv, S);
    distopt_sum_sequence_parallel(o, dense, grads);
    distopt_sum_sequence_parallel(o, experts, x->buffer);
    const double ss = distopt_sumsq(dense, grads, 0.0);
    const double norm = distopt_global_norm(o, distopt_sumsq(experts, x->buffer, ss));
    const float clip = adamw_clip_factor(&o->cfg, norm);
    distopt_adamw(o, dense, grads, lr, clip);
    distopt_adamw(o, experts, x->buffer, lr, clip);
    put_updated_pieces(o, x); /* gathered first: the dense gather overwrites the experts */
    distopt_all_gather(x->group, x->buffer + experts->mine->world_start, x->buffer, experts->n,
                       "expert params");
    distopt_all_gather(o->g.dp, params + dense->mine->world_start, params, S, "params");
    copy_experts(x, o->model, false);
    return norm;
}

double distopt_expert_step(dist_optimizer *o, float lr, float inv) {
    return o->experts ? shard_step(o, lr, inv) : all_reduce_step(o, lr, inv);
}

/* ---------------------------------------------------------------- the shard */

zero_experts *zero_experts_create(local_model *m, zero_ranges *dense, comm_group *expert_dp) {
    zero_experts *x = callocCheck(1, sizeof *x);
    x->group = expert_dp;
    bool *expert = mallocCheck(sizeof(bool) * (size_t)(m->nparams ? m->nparams : 1));
    for (int k = 0; k < m->nparams; k++) expert[k] = is_expert(m, k);
    distopt_shard *s = &x->shard;
    s->ranges = distopt_layout(m, distopt_group_size(expert_dp), 0, expert);
    s->mine = &s->ranges->shards[expert_dp ? comm_rank(expert_dp) : 0];
    s->n = s->ranges->shard_numel;
    s->packed = true;
    zero_ranges_drop(dense, expert);
    free(expert);
    /* labelled as what it first holds: the experts' gradients (then their parameters) */
    x->buffer = device_alloc(s->ranges->padded_numel * sizeof(float), "gradients");
    s->m = device_alloc(s->n * sizeof(float), "Adam first moments");
    s->v = device_alloc(s->n * sizeof(float), "Adam second moments");
    return x;
}

void zero_experts_destroy(zero_experts *x) {
    if (!x) return;
    zero_ranges_free(x->shard.ranges);
    device_free(x->buffer);
    device_free(x->shard.m);
    device_free(x->shard.v);
    device_free(x->shard.master);
    free(x);
}

void zero_experts_add_bytes(const zero_experts *x, distopt_memory *mem) {
    const size_t S = x->shard.n * sizeof(float);
    mem->grads += x->shard.ranges->padded_numel * sizeof(float);
    mem->master += x->shard.master ? S : 0;
    mem->adam += 2 * S;
}
