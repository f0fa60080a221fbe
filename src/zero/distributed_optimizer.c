/* distributed_optimizer.c — see distributed_optimizer.h: the optimizer object, and
 * distopt_step, which sends a step down the gradient path of its layout (distopt_internal.h
 * lists the five and their files).
 *
 * Not here: the paths themselves, the steps they share (optimizer_steps.c).
 */
#include "src/zero/distributed_optimizer.h"

#include <math.h>
#include <string.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_label.h"
#include "src/zero/distopt_internal.h"
#include "src/zero/expert_shard.h"

/* Mixed precision: gradients are 16-bit values. fp16: any inf/NaN on any rank skips the step
 * everywhere (and lowers the scale); returns false then. */
static bool grads_usable(dist_optimizer *o) {
    local_model *m = o->model;
    if (o->g.dtype != PREC_FP32 && !o->fsdp && !(o->overlap && o->g.overlap_grads))
        dev_round(o->g.dtype, m->grads, m->numel); /* else rounded bucket by bucket */
    if (o->g.dtype != PREC_FP16) return true;
    float bad = (o->inject_overflow || dev_has_inf_or_nan(m->grads, m->numel)) ? 1.0f : 0.0f;
    o->inject_overflow = false;
    if (distopt_group_size(o->g.world) > 1) {
        comm_label_set("overflow", -1);
        comm_all_reduce(o->g.world, &bad, 1, COMM_FLOAT32, COMM_MAX);
        comm_label_clear();
    }
    return prec_scaler_update(&o->scaler, bad > 0.0f);
}

/* The step of each layout is one function in the file of its idea (distopt_internal.h): it
 * reduces the gradients to this rank's shard, updates the shard, and brings the parameters
 * back to every rank. */
distopt_stats distopt_step(dist_optimizer *o, int it) {
    const float inv = 1.0f / ((float)o->dp_size * distopt_loss_scale(o)); /* mean, unscaled */
    distopt_stats st = {.grad_norm = NAN, .lr = adamw_lr_at(&o->cfg, it)};
    st.skipped = !grads_usable(o);
    if (!st.skipped) {
        o->t++;
        if (o->fsdp) st.grad_norm = distopt_fsdp_step(o, st.lr, inv);
        else if (o->overlap) st.grad_norm = distopt_overlap_step(o, st.lr, inv);
        else if (o->g.expert_dp) st.grad_norm = distopt_expert_step(o, st.lr, inv);
        else if (o->g.zero) st.grad_norm = distopt_zero1_step(o, st.lr, inv);
        else st.grad_norm = distopt_data_parallel_step(o, st.lr, inv);
    }
    st.loss_scale = distopt_loss_scale(o);
    return st;
}

/* ---------------------------------------------------------------- the object */

/* What the flags refuse (src/train/config.c says why), checked again where it would go wrong. */
static void check_groups(const dist_optimizer *o) {
    const distopt_groups *g = &o->g;
    CHECK(!(g->overlap_grads && g->dtype == PREC_FP16),
          "--overlap-grad-reduce does not support --fp16 (checked by the flags)");
    CHECK(!g->overlap_params || g->zero,
          "--overlap-param-gather needs ZeRO (refused by the flags)");
    CHECK(o->stage < 2 || (!g->overlap_grads && !g->overlap_params && g->dtype != PREC_FP16),
          "ZeRO-2/3 take neither the overlap flags nor --fp16 (refused by the flags)");
    CHECK(!g->expert_dp || (!g->overlap_grads && !g->overlap_params && o->stage < 2),
          "expert parallelism takes no overlap flags and no ZeRO-2/3 (refused by the flags)");
}

/* ZeRO-2/3: zero_fsdp takes the gradients (and parameters) of the model. Its gathers
 * prefetch on a communication stream only where that reads host memory (the cpu device). */
static void create_fsdp(dist_optimizer *o) {
    zero_fsdp_config fc = {o->stage, o->g.dtype, device_current() == DEVICE_CPU};
    o->fsdp = zero_fsdp_create(o->model, o->shard.ranges, o->g.dp, &fc);
}

/* --overlap-grad-reduce / --overlap-param-gather: the tied wte's buckets wait for its sum
 * (zbv: both copies on this rank, summed locally after the backward, local_model.h). */
static void create_overlap(dist_optimizer *o) {
    const distopt_groups *g = &o->g;
    const gpt_param *second, *tie = distopt_tied_wte(o->model, &second);
    zero_overlap_config oc = {
        g->overlap_grads, g->overlap_params && g->zero,
        g->zero,          distopt_group_size(g->embedding) > 1 || second ? tie : NULL,
        second,           g->dtype};
    o->overlap = zero_overlap_create(o->model, o->shard.ranges, g->dp, &oc);
}

/* Mixed precision: the fp32 master weights start as the fp32 initialisation; the model's
 * copy is then rounded (ZeRO-3: the parameter shard, piece by piece). */
static void init_master(dist_optimizer *o) {
    distopt_init_master(o, &o->shard, true);
    if (o->experts) distopt_init_master(o, &o->experts->shard, false);
    if (o->stage <= 2) dev_round(o->g.dtype, o->model->params, o->model->numel); /* replicas */
}

dist_optimizer *distopt_create(local_model *model, const adamw_config *cfg,
                               const distopt_groups *g) {
    dist_optimizer *o = callocCheck(1, sizeof *o);
    o->model = model;
    o->cfg = *cfg;
    o->g = *g;
    o->dp_size = distopt_group_size(g->dp);
    o->dp_rank = g->dp ? comm_rank(g->dp) : 0;
    o->stage = g->zero_stage ? g->zero_stage : g->zero ? 1 : 0;
    o->g.zero = o->stage >= 1;
    check_groups(o);
    distopt_shard *s = &o->shard;
    if (o->stage >= 2) s->ranges = zero_fsdp_ranges(model, o->dp_size, 64);
    else s->ranges = distopt_layout(model, o->g.zero ? o->dp_size : 1, g->bucket_numel, NULL);
    s->mine = &s->ranges->shards[o->g.zero ? o->dp_rank : 0];
    if (o->stage == 1) local_model_pad(model, s->ranges->padded_numel); /* shards: offsets */
    s->n = o->g.zero ? s->ranges->shard_numel : model->numel;
    if (o->stage == 1 && g->expert_dp)
        o->experts = zero_experts_create(model, s->ranges, g->expert_dp);
    if (o->stage >= 2) create_fsdp(o); /* first: it gives the model's buffers back */
    s->m = device_alloc(s->n * sizeof(float), "Adam first moments");
    s->v = device_alloc(s->n * sizeof(float), "Adam second moments");
    prec_scaler_init(&o->scaler, 0);
    if ((g->overlap_grads || g->overlap_params) && o->dp_size > 1) create_overlap(o);
    if (g->dtype != PREC_FP32) init_master(o);
    return o;
}

void distopt_destroy(dist_optimizer *o) {
    if (!o) return;
    zero_overlap_destroy(o->overlap);
    zero_fsdp_destroy(o->fsdp);
    device_free(o->shard.master);
    zero_ranges_free(o->shard.ranges);
    device_free(o->shard.m);
    device_free(o->shard.v);
    zero_experts_destroy(o->experts);
    free(o);
}

void distopt_wait_params(dist_optimizer *o) {
    if (o && o->overlap) zero_overlap_wait_params(o->overlap);
}

void distopt_zero_grads(dist_optimizer *o) {
    if (o->fsdp) zero_fsdp_zero_grads(o->fsdp);
    else local_model_zero_grads(o->model);
}

float *distopt_whole_params(dist_optimizer *o) {
    distopt_wait_params(o);
    if (o->fsdp) zero_fsdp_gather_whole(o->fsdp);
    return o->model->params;
}

void distopt_params_loaded(dist_optimizer *o) {
    if (o->fsdp) zero_fsdp_take_whole(o->fsdp);
}

/* ---------------------------------------------------------------- what it holds */

int distopt_stage(const dist_optimizer *o) { return o->stage; }
const zero_ranges *distopt_ranges(const dist_optimizer *o) { return o->shard.ranges; }
int distopt_step_count(const dist_optimizer *o) { return o->t; }
void distopt_set_step_count(dist_optimizer *o, int t) { o->t = t; }

float distopt_loss_scale(const dist_optimizer *o) {
    return o->g.dtype == PREC_FP16 ? o->scaler.scale : 1.0f;
}
void distopt_inject_overflow(dist_optimizer *o) { o->inject_overflow = true; }
prec_scaler *distopt_scaler(dist_optimizer *o) { return &o->scaler; }

float *distopt_master(dist_optimizer *o, size_t *n) {
    *n = o->shard.master ? o->shard.n : 0;
    return o->shard.master;
}

float *distopt_moment(dist_optimizer *o, int which, size_t *n) {
    *n = o->shard.n;
    return which ? o->shard.v : o->shard.m;
}

static distopt_state_part state_part(const distopt_shard *s) {
    return (distopt_state_part){s->mine, s->m, s->v, s->master, s->n};
}

int distopt_state_parts(dist_optimizer *o, distopt_state_part parts[DISTOPT_MAX_PARTS]) {
    parts[0] = state_part(&o->shard);
    if (!o->experts) return 1;
    parts[1] = state_part(&o->experts->shard);
    return 2;
}

size_t distopt_state_bytes(const dist_optimizer *o) {
    const size_t experts = o->experts ? o->experts->shard.n : 0;
    return 2 * (o->shard.n + experts) * sizeof(float);
}

distopt_memory distopt_memory_held(const dist_optimizer *o) {
    distopt_memory mem = {0};
    const size_t whole = o->model->numel_padded * sizeof(float);
    mem.params = whole;
    mem.grads = whole;
    if (o->fsdp) zero_fsdp_bytes(o->fsdp, &mem.grads, &mem.params, &mem.work);
    if (o->stage <= 2) mem.params = whole; /* ZeRO-3: the shard only */
    mem.master = o->shard.master ? o->shard.n * sizeof(float) : 0;
    mem.adam = 2 * o->shard.n * sizeof(float);
    if (o->experts) zero_experts_add_bytes(o->experts, &mem);
    return mem;
}
