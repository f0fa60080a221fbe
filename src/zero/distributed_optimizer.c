/* distributed_optimizer.c — see distributed_optimizer.h.
 *
 * ZeRO-1 works on offsets into the model's own buffers, never on copies: distopt_create pads
 * params and grads to the shard layout (local_model_pad), and then, with S = shard_numel and
 * d this rank's place in the data-parallel group,
 *
 *   grads   [ shard 0 | shard 1 | ... | shard dp-1 ]    reduce-scatter in place (comm.h):
 *           [ sum of shard d |  (stale: zeroed before the next backward)  ]
 *   params  [ shard 0 | ... | shard d | ... ]           AdamW on params + d*S (or on the fp32
 *                              ^ d*S                    master shard, then rounded into it)
 *           [ shard 0 | shard 1 | ... | shard dp-1 ]    all-gather in place from params + d*S
 *
 * so a piece of the shard (shard_ranges.h) is found at grads + local_start, params + world_start
 * and m, v, master + local_start. Without ZeRO the same loop runs over the one shard of the
 * dp = 1 layout, whose pieces are the whole parameters (local_start == world_start).
 *
 * ZeRO-2 and ZeRO-3 (src/zero/fsdp.h) use the UNITS layout instead: the gradients arrive
 * already reduce-scattered, in zero_fsdp's gradient shard (at local_start, like ZeRO-1's after
 * its reduce-scatter); the optimizer updates params + world_start (ZeRO-2, then all-gathered
 * unit by unit) or the parameter shard + local_start (ZeRO-3, nothing gathered: the next
 * passes gather what they read). The same loops serve every stage through grads_base and
 * model_weights.
 *
 * ZeRO-1 with expert parallelism (ep > 1): the ranks of dp hold DIFFERENT experts at the same
 * offsets, so the expert tensors (SPLIT_EXPERTS) cannot share the dense tensors' cut. They are
 * sharded over expert_dp (edp × cp: the ranks holding the same experts), as Megatron does, in
 * a layout of their own — the expert tensors laid end to end, padded (xranges: the other
 * tensors are there with size 0, so pieces keep the model's parameter indices):
 *
 *   model grads  [ wte | wpe | ln | attn | router | EXPERTS | ln | ... | EXPERTS | ... | pad ]
 *                                                    \ copied /              \ copied /
 *   xbuf         [ EXPERTS | EXPERTS | ... | pad ] = [ xshard 0 | ... | xshard edp·cp-1 ]
 *
 *   1. the experts' gradients are copied into xbuf, which is reduce-scattered over expert_dp;
 *      the model's buffer is reduce-scattered over dp as without experts, but the dense
 *      ranges hold no expert piece (zero_ranges_drop), so what lands there is never read;
 *   2. AdamW on both shards' pieces (each with its own m, v and master);
 *   3. the updated expert pieces are written into xbuf at their place, xbuf is all-gathered
 *      over expert_dp, the model's buffer over dp (which leaves other ranks' experts in the
 *      expert tensors), and the experts are copied back from xbuf.
 * The dense shard's state keeps the expert tensors' positions (unused): the price of working
 * in place on a buffer that interleaves the two kinds.
 */
#include "src/zero/distributed_optimizer.h"

#include <math.h>
#include <string.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_label.h"
#include "src/zero/fsdp.h"
#include "src/zero/overlap.h"

struct dist_optimizer {
    local_model *model;
    adamw_config cfg;
    distopt_groups g;
    int dp_size, dp_rank;
    zero_ranges *ranges;    /* ZeRO: dp shards; without: the dp = 1 layout (one shard) */
    const zero_shard *mine; /* the shard this rank updates */
    float *m, *v;           /* Adam moments: (numel) without ZeRO, (shard) with ZeRO */
    size_t nstate;
    int t;              /* steps taken (Adam bias correction) */
    float *master;      /* mixed precision: fp32 master weights (numel, or the shard) */
    prec_scaler scaler; /* fp16 loss scaling */
    bool inject_overflow;
    zero_overlap *overlap; /* --overlap-grad-reduce / --overlap-param-gather at dp > 1 */
    int stage;             /* 0 (no ZeRO) .. 3 */
    zero_fsdp *fsdp;       /* ZeRO-2/3: the gradient (and parameter) shards */
    /* ZeRO-1 with expert parallelism: the experts' layout over expert_dp (top of the file) */
    zero_ranges *xranges;     /* NULL without */
    const zero_shard *xmine;  /* the expert shard this rank updates */
    float *xbuf;              /* (xranges->padded_numel) packed experts: gradients, then params */
    float *xm, *xv, *xmaster; /* (xranges->shard_numel) Adam moments, fp32 master weights */
    int xdp_size, xdp_rank;
};

static int gsize(comm_group *g) { return g ? comm_size(g) : 1; }

static bool is_expert(const local_model *model, int k) {
    return model->plist[k]->split == SPLIT_EXPERTS;
}

/* The shard layout of the model's tensors, or with experts_only of the expert tensors alone
 * (the others of size 0: they occupy nothing, so the experts lie end to end). */
static zero_ranges *build_ranges(const local_model *model, int shards, size_t bucket_numel,
                                 bool experts_only) {
    zero_param *zp = mallocCheck(sizeof *zp * (size_t)(model->nparams ? model->nparams : 1));
    for (int i = 0; i < model->nparams; i++) {
        zp[i].name = model->plist[i]->name;
        zp[i].numel = !experts_only || is_expert(model, i) ? model->plist[i]->numel : 0;
        zp[i].weight_decay = model->plist[i]->decay;
        zp[i].in_grad_norm = model->in_norm[i];
    }
    zero_ranges *r = zero_ranges_build(zp, model->nparams, shards, 64, bucket_numel);
    free(zp);
    return r;
}

/* Where the gradients of this rank's pieces are (at local_start): the model's buffer, or
 * zero_fsdp's gradient shard. */
static float *grads_base(const dist_optimizer *o) {
    return o->fsdp ? zero_fsdp_grads(o->fsdp) : o->model->grads;
}

/* The model's copy of piece pc: in its buffer, or in ZeRO-3's parameter shard. */
static float *model_weights(dist_optimizer *o, const zero_piece *pc) {
    if (o->stage == 3) return zero_fsdp_params(o->fsdp) + pc->local_start;
    return o->model->params + pc->world_start;
}

/* The model's copy of piece pc of the expert layout: in the expert tensor, which the model's
 * buffer holds whole. */
static float *expert_weights(dist_optimizer *o, const zero_piece *pc) {
    return o->model->params + o->model->plist[pc->param]->offset + pc->param_start;
}

/* Mixed precision: the fp32 master weights start as the fp32 initialisation, piece by piece;
 * the model's copy is then rounded. */
static void init_master(dist_optimizer *o) {
    o->master = device_alloc(o->nstate * sizeof(float), "fp32 master weights");
    for (int k = 0; k < o->mine->n_pieces; k++) {
        const zero_piece *pc = &o->mine->pieces[k];
        const size_t len = pc->local_end - pc->local_start;
        device_copy(o->master + pc->local_start, model_weights(o, pc), len * sizeof(float));
        dev_round(o->g.dtype, model_weights(o, pc), len);
    }
    if (o->xranges) {
        o->xmaster = device_alloc(o->xranges->shard_numel * sizeof(float), "fp32 master weights");
        for (int k = 0; k < o->xmine->n_pieces; k++) {
            const zero_piece *pc = &o->xmine->pieces[k];
            device_copy(o->xmaster + pc->local_start, expert_weights(o, pc),
                        (pc->local_end - pc->local_start) * sizeof(float));
        }
    }
    if (o->stage <= 2) dev_round(o->g.dtype, o->model->params, o->model->numel); /* replicas */
}

/* ZeRO-1 with expert parallelism: the experts' own layout over expert_dp, its packed buffer
 * and its Adam moments; the dense ranges lose their expert pieces. */
static void create_experts(dist_optimizer *o) {
    local_model *m = o->model;
    o->xdp_size = gsize(o->g.expert_dp);
    o->xdp_rank = o->g.expert_dp ? comm_rank(o->g.expert_dp) : 0;
    o->xranges = build_ranges(m, o->xdp_size, 0, true);
    o->xmine = &o->xranges->shards[o->xdp_rank];
    bool *drop = mallocCheck(sizeof(bool) * (size_t)(m->nparams ? m->nparams : 1));
    for (int k = 0; k < m->nparams; k++) drop[k] = is_expert(m, k);
    zero_ranges_drop(o->ranges, drop);
    free(drop);
    const size_t S = o->xranges->shard_numel;
    /* labelled as what it first holds: the experts' gradients (then their parameters) */
    o->xbuf = device_alloc(o->xranges->padded_numel * sizeof(float), "gradients");
    o->xm = device_alloc(S * sizeof(float), "Adam first moments");
    o->xv = device_alloc(S * sizeof(float), "Adam second moments");
}

/* ZeRO-2/3: zero_fsdp takes the gradients (and parameters) of the model. Its gathers
 * prefetch on a communication stream only where that reads host memory (the cpu device). */
static void create_fsdp(dist_optimizer *o) {
    const distopt_groups *g = &o->g;
    CHECK(!g->overlap_grads && !g->overlap_params && g->dtype != PREC_FP16,
          "ZeRO-2/3 take neither the overlap flags nor --fp16 (refused by the flags)");
    zero_fsdp_config fc = {o->stage, g->dtype, device_current() == DEVICE_CPU};
    o->fsdp = zero_fsdp_create(o->model, o->ranges, g->dp, &fc);
}

dist_optimizer *distopt_create(local_model *model, const adamw_config *cfg,
                               const distopt_groups *g) {
    dist_optimizer *o = callocCheck(1, sizeof *o);
    o->model = model;
    o->cfg = *cfg;
    o->g = *g;
    o->dp_size = gsize(g->dp);
    o->dp_rank = g->dp ? comm_rank(g->dp) : 0;
    o->stage = g->zero_stage ? g->zero_stage : g->zero ? 1 : 0;
    o->g.zero = o->stage >= 1;
    if (o->stage >= 2) o->ranges = zero_fsdp_ranges(model, o->dp_size, 64);
    else o->ranges = build_ranges(model, o->g.zero ? o->dp_size : 1, g->bucket_numel, false);
    o->mine = &o->ranges->shards[o->g.zero ? o->dp_rank : 0];
    if (o->stage == 1) local_model_pad(model, o->ranges->padded_numel); /* shards: offsets */
    o->nstate = o->g.zero ? o->ranges->shard_numel : model->numel;
    if (o->stage == 1 && g->expert_dp) {
        CHECK(!g->overlap_grads && !g->overlap_params,
              "expert parallelism takes no overlap flags (refused by the flags)");
        create_experts(o);
    }
    if (o->stage >= 2) create_fsdp(o); /* first: it gives the model's buffers back */
    o->m = device_alloc(o->nstate * sizeof(float), "Adam first moments");
    o->v = device_alloc(o->nstate * sizeof(float), "Adam second moments");
    prec_scaler_init(&o->scaler, 0);
    CHECK(!(g->overlap_grads && g->dtype == PREC_FP16),
          "--overlap-grad-reduce does not support --fp16 (checked by the flags)");
    if ((g->overlap_grads || g->overlap_params) && o->dp_size > 1) {
        const gpt_param *tie = model->wte_embedding ? model->wte_embedding : model->wte_head;
        /* zbv: both copies on this rank, summed locally after the backward (local_model.h) */
        const bool two_here = model->wte_embedding && model->wte_head &&
                              model->wte_embedding != model->wte_head;
        zero_overlap_config oc = {g->overlap_grads,
                                  g->overlap_params && g->zero,
                                  g->zero,
                                  gsize(g->embedding) > 1 || two_here ? tie : NULL,
                                  two_here ? model->wte_head : NULL,
                                  g->dtype};
        o->overlap = zero_overlap_create(model, o->ranges, g->dp, &oc);
    }
    if (g->dtype != PREC_FP32) init_master(o);
    return o;
}

void distopt_destroy(dist_optimizer *o) {
    if (!o) return;
    zero_overlap_destroy(o->overlap);
    zero_fsdp_destroy(o->fsdp);
    device_free(o->master);
    zero_ranges_free(o->ranges);
    device_free(o->m);
    device_free(o->v);
    zero_ranges_free(o->xranges);
    device_free(o->xbuf);
    device_free(o->xm);
    device_free(o->xv);
    device_free(o->xmaster);
    free(o);
}

const zero_ranges *distopt_ranges(const dist_optimizer *o) { return o->ranges; }
size_t distopt_state_bytes(const dist_optimizer *o) {
    return 2 * (o->nstate + (o->xranges ? o->xranges->shard_numel : 0)) * sizeof(float);
}
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

int distopt_state_parts(dist_optimizer *o, distopt_state_part parts[DISTOPT_MAX_PARTS]) {
    parts[0] = (distopt_state_part){o->mine, o->m, o->v, o->master, o->nstate};
    if (!o->xranges) return 1;
    parts[1] = (distopt_state_part){o->xmine, o->xm, o->xv, o->xmaster, o->xranges->shard_numel};
    return 2;
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

/* Mixed precision: gradients are 16-bit values. fp16: any inf/NaN on any rank skips the step
 * everywhere (and lowers the scale); returns false then. */
static bool grads_usable(dist_optimizer *o) {
    local_model *m = o->model;
    if (o->g.dtype != PREC_FP32 && !o->fsdp && !(o->overlap && o->g.overlap_grads))
        dev_round(o->g.dtype, m->grads, m->numel); /* else rounded bucket by bucket */
    if (o->g.dtype != PREC_FP16) return true;
    float bad = (o->inject_overflow || dev_has_inf_or_nan(m->grads, m->numel)) ? 1.0f : 0.0f;
    o->inject_overflow = false;
    if (gsize(o->g.world) > 1) {
        comm_label_set("overflow", -1);
        comm_all_reduce(o->g.world, &bad, 1, COMM_FLOAT32, COMM_MAX);
        comm_label_clear();
    }
    return prec_scaler_update(&o->scaler, bad > 0.0f);
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

static void sum_tie(void *ctx) { sync_tied_embedding(ctx); }

/* Steps 1 and 2 with --overlap-grad-reduce: most buckets are on their way already (queued
 * from the backward, src/zero/overlap.h); the rest go now, the tied wte's after its sum, and
 * all are complete on return. */
static void overlapped_reduce_grads(dist_optimizer *o, float inv) {
    zero_overlap_finish_grads(o->overlap, sum_tie, o);
    if (o->g.zero) dev_scale(o->model->grads, inv, o->ranges->shard_numel);
    else if (inv != 1.0f) dev_scale(o->model->grads, inv, o->model->numel);
}

/* Steps 1 and 2 with ZeRO-2/3: the buckets were reduce-scattered during the backward
 * (src/zero/fsdp.h); the tied wte's two copies are summed slice by slice, then averaged. */
static void fsdp_finish_grads(dist_optimizer *o, float inv) {
    const local_model *m = o->model;
    const gpt_param *tie = m->wte_embedding ? m->wte_embedding : m->wte_head;
    const bool two_here = m->wte_embedding && m->wte_head && m->wte_embedding != m->wte_head;
    zero_fsdp_sum_tied(o->fsdp, o->g.embedding, tie, two_here ? m->wte_head : NULL);
    dev_scale(zero_fsdp_grads(o->fsdp), inv, o->ranges->shard_numel);
}

/* Step 2 with expert parallelism (no ZeRO): tensor by tensor, the experts' over expert_dp and
 * every other over dp. */
static void expert_reduce_grads(dist_optimizer *o, float inv) {
    local_model *m = o->model;
    for (int k = 0; k < m->nparams; k++) {
        const gpt_param *p = m->plist[k];
        const bool expert = p->split == SPLIT_EXPERTS;
        comm_label_set(expert ? "expert grads" : "grads", -1);
        comm_all_reduce(expert ? o->g.expert_dp : o->g.dp, m->grads + p->offset, p->numel,
                        COMM_FLOAT32, COMM_SUM);
        comm_label_clear();
    }
    if (inv != 1.0f) dev_scale(m->grads, inv, m->numel);
}

/* Step 2 without ZeRO: every rank gets the whole summed gradient, bucket by bucket. */
static void plain_reduce_grads(dist_optimizer *o, float inv) {
    local_model *m = o->model;
    const zero_ranges *r = o->ranges;
    if (o->g.expert_dp) {
        expert_reduce_grads(o, inv);
        return;
    }
    if (o->dp_size > 1) {
        comm_label_set("grads", -1);
        for (int b = 0; b < r->n_buckets; b++) {
            const zero_bucket *bk = &r->buckets[b];
            comm_all_reduce(o->g.dp, m->grads + bk->world_start, bk->world_end - bk->world_start,
                            COMM_FLOAT32, COMM_SUM);
        }
        comm_label_clear();
    }
    if (inv != 1.0f) dev_scale(m->grads, inv, m->numel);
}

/* Step 2 with ZeRO and expert parallelism, the experts' part: their gradients are packed into
 * xbuf (its padding zero) and reduce-scattered over expert_dp; this rank's summed expert shard
 * lands at xbuf's start. */
static void expert_zero_reduce_grads(dist_optimizer *o, float inv) {
    const zero_ranges *x = o->xranges;
    const local_model *m = o->model;
    for (int k = 0; k < x->n_params; k++)
        if (x->params[k].numel)
            device_copy(o->xbuf + x->offsets[k], m->grads + m->plist[k]->offset,
                        x->params[k].numel * sizeof(float));
    dev_fill(o->xbuf + x->numel, 0.0f, x->padded_numel - x->numel);
    if (o->xdp_size > 1) {
        comm_label_set("expert grads", -1);
        comm_reduce_scatter(o->g.expert_dp, o->xbuf, o->xbuf, x->shard_numel, COMM_FLOAT32,
                            COMM_SUM);
        comm_label_clear();
    }
    dev_scale(o->xbuf, inv, x->shard_numel);
}

/* Step 2 with ZeRO: reduce-scatter the padded gradient buffer in place; the summed shard of
 * this rank lands at its start (comm.h), where the pieces' local indices find it. */
static void zero_reduce_grads(dist_optimizer *o, float inv) {
    float *grads = o->model->grads;
    const size_t S = o->ranges->shard_numel;
    if (o->xranges) expert_zero_reduce_grads(o, inv); /* first: the dense one scrambles grads */
    if (o->dp_size > 1) {
        comm_label_set("grads", -1);
        comm_reduce_scatter(o->g.dp, grads, grads, S, COMM_FLOAT32, COMM_SUM);
        comm_label_clear();
    }
    dev_scale(grads, inv, S);
}

/* Step 2, end, with sequence parallelism: the gradients of the parameters each TP rank summed
 * over its own positions only (gpt_param.sequence_parallel) are summed over the TP group —
 * Megatron's all-reduce of "sequence_parallel" gradients (finalize_model_grads). The pieces
 * of this rank's shard that belong to them are packed into one buffer, all-reduced once and
 * put back. */
static void sum_sequence_parallel_pieces(dist_optimizer *o, const zero_shard *sh, float *g) {
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
            if (pass == 0) device_copy(buf + at, g + pc->local_start, len * sizeof(float));
            else device_copy(g + pc->local_start, buf + at, len * sizeof(float));
            at += len;
        }
        if (pass > 0) break;
        comm_label_set("sp grads", -1);
        comm_all_reduce(o->g.tp, buf, n, COMM_FLOAT32, COMM_SUM);
        comm_label_clear();
    }
    device_free(buf);
}

/* ...over this rank's shard, and with ZeRO and expert parallelism over its expert shard too
 * (an MoE block's experts and router under sequence parallelism: each TP rank routes only its
 * own positions). */
static void sum_sequence_parallel_grads(dist_optimizer *o) {
    if (gsize(o->g.tp) <= 1) return;
    sum_sequence_parallel_pieces(o, o->mine, grads_base(o));
    if (o->xranges) sum_sequence_parallel_pieces(o, o->xmine, o->xbuf);
}

/* Step 3: the global norm: this rank's pieces that count, summed over the norm group. */
static double grad_norm(dist_optimizer *o) {
    const zero_shard *sh = o->mine;
    double ss = 0.0, experts = 0.0;
    for (int k = 0; k < sh->n_pieces; k++) {
        const zero_piece *pc = &sh->pieces[k];
        if (!o->ranges->params[pc->param].in_grad_norm) continue;
        const double x = dev_sumsq(grads_base(o) + pc->local_start,
                                   pc->local_end - pc->local_start);
        if (o->g.ep && o->model->plist[pc->param]->split == SPLIT_EXPERTS) experts += x;
        else ss += x;
    }
    /* ZeRO: this rank's expert shard; the norm group (the world) counts each expert shard
     * once — edp × cp ranks hold different parts of the same experts, ep ranks other experts */
    for (int k = 0; o->xranges && k < o->xmine->n_pieces; k++) {
        const zero_piece *pc = &o->xmine->pieces[k];
        if (o->xranges->params[pc->param].in_grad_norm)
            ss += dev_sumsq(o->xbuf + pc->local_start, pc->local_end - pc->local_start);
    }
    comm_label_set("grad norm", -1);
    if (o->g.ep && !o->xranges) ss += sum_over_group(o->g.ep, experts); /* other ep ranks' */
    ss = sum_over_group(o->g.norm, ss);
    comm_label_clear();
    return sqrt(ss);
}

/* Step 4: AdamW on this rank's pieces (fp32 master weights when there are), then the model's
 * copy of them (rounded to 16 bits in mixed precision); with ZeRO and expert parallelism the
 * expert shard's pieces too, with their own gradients (in xbuf), moments and master. */
static void update_mine(dist_optimizer *o, float lr, float clip) {
    for (int part = 0; part < (o->xranges ? 2 : 1); part++) {
        const bool ex = part == 1;
        const zero_ranges *r = ex ? o->xranges : o->ranges;
        const zero_shard *sh = ex ? o->xmine : o->mine;
        float *g = ex ? o->xbuf : grads_base(o), *master = ex ? o->xmaster : o->master;
        float *mo = ex ? o->xm : o->m, *vo = ex ? o->xv : o->v;
        for (int k = 0; k < sh->n_pieces; k++) {
            const zero_piece *pc = &sh->pieces[k];
            const size_t at = pc->local_start, len = pc->local_end - at;
            const float wd = r->params[pc->param].weight_decay ? o->cfg.weight_decay : 0.0f;
            float *model_w = ex ? expert_weights(o, pc) : model_weights(o, pc);
            float *w = master ? master + at : model_w;
            dev_adamw_update(w, g + at, mo + at, vo + at, len, &o->cfg, lr, wd, o->t, clip);
            if (!master) continue;
            device_copy(model_w, w, len * sizeof(float));
            dev_round(o->g.dtype, model_w, len);
        }
    }
}

/* With ZeRO and expert parallelism: this rank's updated expert pieces go to their place in
 * xbuf, which is all-gathered over expert_dp (before the model's buffer is gathered over dp:
 * that overwrites the expert tensors with other ranks' experts). */
static void expert_gather_params(dist_optimizer *o) {
    const zero_shard *sh = o->xmine;
    for (int k = 0; k < sh->n_pieces; k++) {
        const zero_piece *pc = &sh->pieces[k];
        device_copy(o->xbuf + pc->world_start, expert_weights(o, pc),
                    (pc->world_end - pc->world_start) * sizeof(float));
    }
    if (o->xdp_size <= 1) return;
    comm_label_set("expert params", -1);
    comm_all_gather(o->g.expert_dp, o->xbuf + sh->world_start, o->xbuf, o->xranges->shard_numel,
                    COMM_FLOAT32);
    comm_label_clear();
}

/* ...and after the model's gather, every expert tensor comes back from xbuf. */
static void expert_unpack_params(dist_optimizer *o) {
    const zero_ranges *x = o->xranges;
    const local_model *m = o->model;
    for (int k = 0; k < x->n_params; k++)
        if (x->params[k].numel)
            device_copy(m->params + m->plist[k]->offset, o->xbuf + x->offsets[k],
                        x->params[k].numel * sizeof(float));
}

/* With ZeRO: every rank gets every shard's updated parameters, in place. */
static void zero_gather_params(dist_optimizer *o) {
    if (o->xranges) expert_gather_params(o);
    if (o->dp_size > 1) {
        comm_label_set("params", -1);
        comm_all_gather(o->g.dp, o->model->params + o->mine->world_start, o->model->params,
                        o->ranges->shard_numel, COMM_FLOAT32);
        comm_label_clear();
    }
    if (o->xranges) expert_unpack_params(o);
}

distopt_stats distopt_step(dist_optimizer *o, int it) {
    distopt_stats st = {0};
    const float scale_used = distopt_loss_scale(o);
    st.lr = adamw_lr_at(&o->cfg, it);
    if (!grads_usable(o)) {
        st.skipped = true;
        st.grad_norm = NAN;
        st.loss_scale = o->scaler.scale;
        return st;
    }
    o->t++;
    const float inv = 1.0f / ((float)o->dp_size * scale_used); /* average, and unscale */
    if (o->fsdp) {
        fsdp_finish_grads(o, inv);
    } else if (o->overlap && o->g.overlap_grads) {
        overlapped_reduce_grads(o, inv);
    } else {
        sync_tied_embedding(o);
        if (o->g.zero) zero_reduce_grads(o, inv);
        else plain_reduce_grads(o, inv);
    }
    sum_sequence_parallel_grads(o);
    st.grad_norm = grad_norm(o);
    update_mine(o, st.lr, adamw_clip_factor(&o->cfg, st.grad_norm));
    if (o->fsdp) zero_fsdp_params_updated(o->fsdp);
    else if (o->g.zero && o->overlap && o->g.overlap_params) zero_overlap_launch_params(o->overlap);
    else if (o->g.zero) zero_gather_params(o);
    st.loss_scale = distopt_loss_scale(o);
    return st;
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

int distopt_stage(const dist_optimizer *o) { return o->stage; }

distopt_memory distopt_memory_held(const dist_optimizer *o) {
    distopt_memory mem = {0};
    const size_t whole = o->model->numel_padded * sizeof(float);
    mem.params = whole;
    mem.grads = whole;
    if (o->fsdp) zero_fsdp_bytes(o->fsdp, &mem.grads, &mem.params, &mem.work);
    if (o->stage <= 2) mem.params = whole; /* ZeRO-3: the shard only */
    mem.master = o->master ? o->nstate * sizeof(float) : 0;
    mem.adam = 2 * o->nstate * sizeof(float);
    if (o->xranges) { /* ZeRO-1 with expert parallelism: the experts' buffer and shard */
        const size_t S = o->xranges->shard_numel * sizeof(float);
        mem.grads += o->xranges->padded_numel * sizeof(float);
        mem.master += o->xmaster ? S : 0;
        mem.adam += 2 * S;
    }
    return mem;
}
