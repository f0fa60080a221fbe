/* overlap.c — see overlap.h.
 *
 * Per bucket b (r->buckets[b] = world [start, end)):
 *   left[b]     elements whose gradients are not final yet this step; 0 -> queue it
 *   tied[b]     holds the tied wte: never queued before finish
 *   grad_h[b]   the stream handle of its reduction this step, -1 before it is queued
 *   param_h[b]  the handle of its all-gather, -1 when none is pending
 *   counts      (dp) bucket ∩ shard d for every d: the uneven parts of its collectives
 */
#include "src/zero/overlap.h"

#include <string.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/model/gpt_hooks.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_stream.h"
#include "src/zero/distopt_internal.h"

struct zero_overlap {
    local_model *m;
    const zero_ranges *r;
    zero_overlap_config cfg;
    comm_stream *stream;
    int dp, dp_rank;
    size_t *left;
    bool *tied;
    comm_handle *grad_h, *param_h;
    size_t *counts;     /* (n_buckets, dp) */
    float *shard_grads; /* (S) ZeRO: where the reduce-scatters put this rank's sums */
    int params_pending; /* all-gathers queued and not yet waited for */
};

static size_t overlap_len(size_t a0, size_t a1, size_t b0, size_t b1) {
    size_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

static size_t bucket_numel(const zero_overlap *o, int b) {
    return o->r->buckets[b].world_end - o->r->buckets[b].world_start;
}

/* A new step: every bucket waits for all of its elements again. */
static void reset_grads(zero_overlap *o) {
    for (int b = 0; b < o->r->n_buckets; b++) {
        o->left[b] = bucket_numel(o, b);
        o->grad_h[b] = -1;
    }
}

/* Queues bucket b's reduction (rounding its gradients first unless `rounded`). */
static void queue_grads(zero_overlap *o, int b, bool rounded) {
    const zero_bucket *bk = &o->r->buckets[b];
    float *g = o->m->grads + bk->world_start;
    if (!rounded && o->cfg.dtype != PREC_FP32) dev_round(o->cfg.dtype, g, bucket_numel(o, b));
    if (!o->cfg.zero) {
        o->grad_h[b] = comm_stream_all_reduce(o->stream, g, bucket_numel(o, b), "grads");
        return;
    }
    /* This rank's part of the bucket lands at its local index in shard_grads. */
    const zero_shard *me = &o->r->shards[o->dp_rank];
    size_t at = bk->world_start > me->world_start ? bk->world_start - me->world_start : 0;
    if (at > o->r->shard_numel) at = o->r->shard_numel; /* an empty part: any valid pointer */
    o->grad_h[b] = comm_stream_reduce_scatter(o->stream, g, o->shard_grads + at,
                                              o->counts + (size_t)b * (size_t)o->dp, "grads");
}

/* gpt_hooks: [begin, end) of the gradient buffer is final for this step. */
static void grads_ready(void *ctx, size_t begin, size_t end) {
    zero_overlap *o = ctx;
    for (int b = 0; b < o->r->n_buckets; b++) {
        const zero_bucket *bk = &o->r->buckets[b];
        size_t n = overlap_len(begin, end, bk->world_start, bk->world_end);
        if (n == 0) continue;
        if (n > o->left[b]) die("gradients of bucket %d reported final twice in one step", b);
        o->left[b] -= n;
        if (o->left[b] == 0 && !o->tied[b] && o->grad_h[b] < 0) queue_grads(o, b, false);
    }
}

/* gpt_hooks: [begin, end) of the parameters is about to be read. */
static void params_needed(void *ctx, size_t begin, size_t end) {
    zero_overlap *o = ctx;
    if (o->params_pending == 0) return;
    for (int b = 0; b < o->r->n_buckets; b++) {
        const zero_bucket *bk = &o->r->buckets[b];
        if (o->param_h[b] < 0 || overlap_len(begin, end, bk->world_start, bk->world_end) == 0)
            continue;
        comm_stream_wait(o->stream, o->param_h[b]);
        o->param_h[b] = -1;
        o->params_pending--;
    }
}

zero_overlap *zero_overlap_create(local_model *m, const zero_ranges *r, comm_group *dp,
                                  const zero_overlap_config *cfg) {
    CHECK(!cfg->params || cfg->zero, "parameter all-gathers exist only with ZeRO");
    zero_overlap *o = callocCheck(1, sizeof *o);
    o->m = m;
    o->r = r;
    o->cfg = *cfg;
    o->dp = comm_size(dp);
    o->dp_rank = comm_rank(dp);
    CHECK(!cfg->zero || r->dp == o->dp, "the ZeRO layout must have one shard per DP rank");
    const size_t nb = (size_t)(r->n_buckets ? r->n_buckets : 1);
    o->left = callocCheck(nb, sizeof *o->left);
    o->tied = callocCheck(nb, sizeof *o->tied);
    o->grad_h = callocCheck(nb, sizeof *o->grad_h);
    o->param_h = callocCheck(nb, sizeof *o->param_h);
    o->counts = callocCheck(nb * (size_t)o->dp, sizeof *o->counts);
    for (int b = 0; b < r->n_buckets; b++) {
        const zero_bucket *bk = &r->buckets[b];
        o->param_h[b] = -1;
        for (int k = 0; k < 2; k++) {
            const gpt_param *t = k ? cfg->tie2 : cfg->tie;
            if (t && overlap_len(bk->world_start, bk->world_end, t->offset, t->offset + t->numel))
                o->tied[b] = true;
        }
        for (int d = 0; d < o->dp; d++) {
            const zero_shard *sh = &r->shards[cfg->zero ? d : 0];
            o->counts[(size_t)b * (size_t)o->dp + (size_t)d] = overlap_len(
                bk->world_start, bk->world_end, sh->world_start, sh->world_end);
        }
    }
    if (cfg->zero && cfg->grads) {
        o->shard_grads = device_alloc(r->shard_numel * sizeof(float), "overlapped ZeRO gradients");
        device_zero(o->shard_grads, r->shard_numel * sizeof(float)); /* padding stays 0 */
    }
    reset_grads(o);
    o->stream = comm_stream_create(dp, 2 * nb); /* a step's gradients, then its gathers */
    gpt_hooks h = {.params_needed = cfg->params ? params_needed : NULL,
                   .grads_ready = cfg->grads ? grads_ready : NULL,
                   .ctx = o};
    local_model_set_hooks(m, &h);
    return o;
}

void zero_overlap_destroy(zero_overlap *o) {
    if (!o) return;
    local_model_set_hooks(o->m, NULL);
    comm_stream_destroy(o->stream); /* drains: collective, every DP rank is here */
    device_free(o->shard_grads);
    free(o->left);
    free(o->tied);
    free(o->grad_h);
    free(o->param_h);
    free(o->counts);
    free(o);
}

void zero_overlap_finish_grads(zero_overlap *o, void (*sum_tie)(void *ctx), void *ctx) {
    /* The rest, in the hooks' order (the reverse of the buffer): first rounded, then the tie
     * summed over the embedding group on the rounded values (what the whole-buffer step does),
     * then queued. */
    for (int b = o->r->n_buckets - 1; b >= 0; b--)
        if (o->grad_h[b] < 0 && o->cfg.dtype != PREC_FP32)
            dev_round(o->cfg.dtype, o->m->grads + o->r->buckets[b].world_start, bucket_numel(o, b));
    if (sum_tie) sum_tie(ctx);
    for (int b = o->r->n_buckets - 1; b >= 0; b--)
        if (o->grad_h[b] < 0) queue_grads(o, b, true);
    comm_stream_wait_all(o->stream);
    if (o->cfg.zero) device_copy(o->m->grads, o->shard_grads, o->r->shard_numel * sizeof(float));
    reset_grads(o);
}

void zero_overlap_launch_params(zero_overlap *o) {
    CHECK(o->params_pending == 0, "parameter all-gathers queued while the last ones are pending");
    for (int b = 0; b < o->r->n_buckets; b++) {
        float *p = o->m->params + o->r->buckets[b].world_start;
        o->param_h[b] = comm_stream_all_gather(o->stream, p, o->counts + (size_t)b * (size_t)o->dp,
                                               "params");
        o->params_pending++;
    }
}

void zero_overlap_wait_params(zero_overlap *o) {
    if (!o || o->params_pending == 0) return;
    params_needed(o, 0, o->r->padded_numel);
}

/* ---------------------------------------------------------------- the optimizer's step */

static void sum_tie(void *o) { distopt_sum_tied_embedding(o); }

/* ZeRO-1's step or the plain one with their collectives on the stream. --overlap-grad-reduce:
 * most buckets are on their way already (queued from the backward); the rest go now, the tied
 * wte's after its sum, and all are complete on return. Without it (--overlap-param-gather
 * alone) the gradients are ZeRO-1's, reduce-scattered here. --overlap-param-gather: the
 * all-gathers are queued, to finish during the next forward. */
double distopt_overlap_step(dist_optimizer *o, float lr, float inv) {
    float *grads = o->model->grads, *params = o->model->params;
    const size_t S = o->shard.ranges->shard_numel;
    if (o->g.overlap_grads) {
        zero_overlap_finish_grads(o->overlap, sum_tie, o);
    } else {
        distopt_sum_tied_embedding(o);
        distopt_reduce_scatter(o->g.dp, grads, S, "grads");
    }
    if (o->g.zero) dev_scale(grads, inv, S);
    else if (inv != 1.0f) dev_scale(grads, inv, o->model->numel);
    const double norm = distopt_update_shard(o, grads, lr);
    if (o->g.zero && o->g.overlap_params) zero_overlap_launch_params(o->overlap);
    else if (o->g.zero)
        distopt_all_gather(o->g.dp, params + o->shard.mine->world_start, params, S, "params");
    return norm;
}
