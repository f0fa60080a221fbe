/* distributed_optimizer.c — see distributed_optimizer.h. */
#include "src/zero/distributed_optimizer.h"

#include <math.h>
#include <string.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_label.h"

struct dist_optimizer {
    local_model *model;
    adamw_config cfg;
    distopt_groups g;
    int dp_size, dp_rank;
    zero_ranges *ranges;
    float *m, *v;        /* Adam moments: (numel) without ZeRO, (shard) with ZeRO */
    size_t nstate;
    float *gbuf;         /* ZeRO: padded gradient buffer (padded_numel) for reduce-scatter */
    float *gshard;       /* ZeRO: this rank's reduced gradient shard (shard_numel) */
    float *pbuf;         /* ZeRO: padded parameter buffer for the all-gather */
    float *sendbuf;      /* ZeRO: this rank's updated shard, what the all-gather sends */
    int t;               /* steps taken (Adam bias correction) */
    float *master;       /* mixed precision: fp32 master weights (numel, or the shard) */
    prec_scaler scaler;  /* fp16 loss scaling */
    bool inject_overflow;
};

static int gsize(comm_group *g) { return g ? comm_size(g) : 1; }

/* Where this rank's master weights start in the parameter buffer: all of it without ZeRO,
 * its shard with ZeRO (the shard may run past the real parameters into padding). */
static const float *m_params_for_master(dist_optimizer *o) {
    if (!o->g.zero) return o->model->params;
    const zero_ranges *r = o->ranges;
    device_copy(o->pbuf, o->model->params, o->model->numel * sizeof(float));
    return o->pbuf + r->shards[o->dp_rank].world_start;
}

dist_optimizer *distopt_create(local_model *model, const adamw_config *cfg, const distopt_groups *g) {
    dist_optimizer *o = callocCheck(1, sizeof *o);
    o->model = model;
    o->cfg = *cfg;
    o->g = *g;
    o->dp_size = gsize(g->dp);
    o->dp_rank = g->dp ? comm_rank(g->dp) : 0;
    zero_param *zp = mallocCheck(sizeof *zp * (size_t)(model->nparams ? model->nparams : 1));
    for (int i = 0; i < model->nparams; i++) {
        zp[i].name = model->plist[i]->name;
        zp[i].numel = model->plist[i]->numel;
        zp[i].weight_decay = model->plist[i]->decay;
        zp[i].in_grad_norm = model->in_norm[i];
    }
    int shards = g->zero ? o->dp_size : 1;
    o->ranges = zero_ranges_build(zp, model->nparams, shards, 64, g->bucket_numel);
    free(zp);
    if (g->zero) {
        o->nstate = o->ranges->shard_numel;
        o->gbuf = device_alloc(o->ranges->padded_numel * sizeof(float), "ZeRO gradient buffer");
        o->pbuf = device_alloc(o->ranges->padded_numel * sizeof(float), "ZeRO parameter buffer");
        o->gshard = device_alloc(o->nstate * sizeof(float), "ZeRO gradient shard");
        o->sendbuf = device_alloc(o->nstate * sizeof(float), "ZeRO parameter shard");
    } else {
        o->nstate = model->numel;
    }
    o->m = device_alloc(o->nstate * sizeof(float), "Adam first moments");
    o->v = device_alloc(o->nstate * sizeof(float), "Adam second moments");
    prec_scaler_init(&o->scaler, 0);
    if (g->dtype != PREC_FP32) {
        /* fp32 master weights start as the fp32 initialisation; the model sees them rounded. */
        o->master = device_alloc(o->nstate * sizeof(float), "fp32 master weights");
        const float *src = m_params_for_master(o);
        device_copy(o->master, src, o->nstate * sizeof(float));
        dev_round(g->dtype, model->params, model->numel);
    }
    return o;
}

void distopt_destroy(dist_optimizer *o) {
    if (!o) return;
    device_free(o->master);
    zero_ranges_free(o->ranges);
    device_free(o->m);
    device_free(o->v);
    device_free(o->gbuf);
    device_free(o->gshard);
    device_free(o->pbuf);
    device_free(o->sendbuf);
    free(o);
}

const zero_ranges *distopt_ranges(const dist_optimizer *o) { return o->ranges; }
size_t distopt_state_bytes(const dist_optimizer *o) { return 2 * o->nstate * sizeof(float); }
int distopt_step_count(const dist_optimizer *o) { return o->t; }
void distopt_set_step_count(dist_optimizer *o, int t) { o->t = t; }

float distopt_loss_scale(const dist_optimizer *o) {
    return o->g.dtype == PREC_FP16 ? o->scaler.scale : 1.0f;
}
void distopt_inject_overflow(dist_optimizer *o) { o->inject_overflow = true; }
float *distopt_master(dist_optimizer *o, size_t *n) {
    *n = o->master ? o->nstate : 0;
    return o->master;
}
prec_scaler *distopt_scaler(dist_optimizer *o) { return &o->scaler; }

float *distopt_moment(dist_optimizer *o, int which, size_t *n) {
    *n = o->nstate;
    return which ? o->v : o->m;
}

/* Sum of one double per rank, added in rank order (the same on every rank). */
static double sum_over_group(comm_group *g, double x) {
    int n = gsize(g);
    if (n <= 1) return x;
    double *all = mallocCheck(sizeof(double) * (size_t)n);
    comm_all_gather(g, &x, all, sizeof(double), COMM_BYTE);
    double s = 0.0;
    for (int i = 0; i < n; i++) s += all[i];
    free(all);
    return s;
}

/* Step 1: the tied embedding's two copies get the sum of both gradients. */
static void sync_tied_embedding(dist_optimizer *o) {
    local_model *m = o->model;
    if (gsize(o->g.embedding) <= 1) return;
    const gpt_param *p = m->wte_embedding ? m->wte_embedding : m->wte_head;
    if (!p) return;
    comm_label_set("tied embed", -1);
    comm_all_reduce(o->g.embedding, m->grads + p->offset, p->numel, COMM_FLOAT32, COMM_SUM);
    comm_label_clear();
}

distopt_stats distopt_step(dist_optimizer *o, int it) {
    local_model *m = o->model;
    const zero_ranges *r = o->ranges;
    distopt_stats st = {0};
    const prec_dtype dt = o->g.dtype;
    const float scale_used = distopt_loss_scale(o);
    if (dt != PREC_FP32) dev_round(dt, m->grads, m->numel); /* 16-bit gradients */
    if (dt == PREC_FP16) {
        /* Any inf/NaN on any rank skips the step everywhere. */
        float bad = (o->inject_overflow || dev_has_inf_or_nan(m->grads, m->numel)) ? 1.0f : 0.0f;
        o->inject_overflow = false;
        if (gsize(o->g.world) > 1) {
            comm_label_set("overflow", -1);
            comm_all_reduce(o->g.world, &bad, 1, COMM_FLOAT32, COMM_MAX);
            comm_label_clear();
        }
        bool apply = prec_scaler_update(&o->scaler, bad > 0.0f);
        if (!apply) {
            st.skipped = true;
            st.grad_norm = NAN;
            st.lr = adamw_lr_at(&o->cfg, it);
            st.loss_scale = o->scaler.scale;
            return st;
        }
    }
    o->t++;
    sync_tied_embedding(o);
    const float inv_dp = 1.0f / ((float)o->dp_size * scale_used); /* average, and unscale */
    double ss = 0.0;

    if (!o->g.zero) {
        /* Step 2: all-reduce the whole gradient buffer, bucket by bucket. */
        if (o->dp_size > 1) {
            comm_label_set("grads", -1);
            for (int b = 0; b < r->n_buckets; b++) {
                const zero_bucket *bk = &r->buckets[b];
                comm_all_reduce(o->g.dp, m->grads + bk->world_start, bk->world_end - bk->world_start,
                                COMM_FLOAT32, COMM_SUM);
            }
            comm_label_clear();
        }
        if (inv_dp != 1.0f) dev_scale(m->grads, inv_dp, m->numel);
        /* Step 3: norm over the tensors this rank counts. */
        for (int i = 0; i < m->nparams; i++)
            if (m->in_norm[i]) ss += dev_sumsq(m->grads + m->plist[i]->offset, m->plist[i]->numel);
    } else {
        /* Step 2: reduce-scatter the padded buffer: rank d receives shard d, summed. */
        device_copy(o->gbuf, m->grads, m->numel * sizeof(float));
        comm_label_set("grads", -1);
        comm_reduce_scatter(o->g.dp, o->gbuf, o->gshard, r->shard_numel, COMM_FLOAT32, COMM_SUM);
        comm_label_clear();
        dev_scale(o->gshard, inv_dp, r->shard_numel);
        const zero_shard *sh = &r->shards[o->dp_rank];
        for (int k = 0; k < sh->n_pieces; k++) {
            const zero_piece *pc = &sh->pieces[k];
            if (r->params[pc->param].in_grad_norm)
                ss += dev_sumsq(o->gshard + pc->local_start, pc->local_end - pc->local_start);
        }
    }
    comm_label_set("grad norm", -1);
    ss = sum_over_group(o->g.norm, ss);
    comm_label_clear();
    st.grad_norm = sqrt(ss);
    float clip = adamw_clip_factor(&o->cfg, st.grad_norm);
    st.lr = adamw_lr_at(&o->cfg, it);

    /* Step 4: AdamW. */
    if (!o->g.zero) {
        float *w = o->master ? o->master : m->params; /* fp32 weights the update applies to */
        for (int i = 0; i < m->nparams; i++) {
            const gpt_param *p = m->plist[i];
            dev_adamw_update(w + p->offset, m->grads + p->offset, o->m + p->offset,
                         o->v + p->offset, p->numel, &o->cfg, st.lr,
                         p->decay ? o->cfg.weight_decay : 0.0f, o->t, clip);
        }
        if (o->master) {
            device_copy(m->params, o->master, m->numel * sizeof(float));
            dev_round(dt, m->params, m->numel);
        }
    } else {
        const zero_shard *sh = &r->shards[o->dp_rank];
        float *mine = o->pbuf + sh->world_start; /* this rank's shard of the parameters */
        device_copy(o->pbuf, m->params, m->numel * sizeof(float));
        float *w = o->master ? o->master : mine; /* fp32 weights of the shard */
        for (int k = 0; k < sh->n_pieces; k++) {
            const zero_piece *pc = &sh->pieces[k];
            size_t n = pc->local_end - pc->local_start;
            dev_adamw_update(w + pc->local_start, o->gshard + pc->local_start, o->m + pc->local_start,
                         o->v + pc->local_start, n, &o->cfg, st.lr,
                         r->params[pc->param].weight_decay ? o->cfg.weight_decay : 0.0f, o->t, clip);
        }
        if (o->master) {
            device_copy(mine, o->master, r->shard_numel * sizeof(float));
            dev_round(dt, mine, r->shard_numel);
        }
        /* Every rank gets every shard's updated parameters. */
        device_copy(o->sendbuf, mine, r->shard_numel * sizeof(float));
        comm_label_set("params", -1);
        comm_all_gather(o->g.dp, o->sendbuf, o->pbuf, r->shard_numel, COMM_FLOAT32);
        comm_label_clear();
        device_copy(m->params, o->pbuf, m->numel * sizeof(float));
    }
    st.loss_scale = distopt_loss_scale(o);
    return st;
}
