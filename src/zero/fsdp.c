/* fsdp.c — see fsdp.h.
 *
 * Unit u (r->units[u]) has n = world_end − world_start elements and slices of s = shard_numel;
 * rank d's slice is the unit's elements [d·s, (d+1)·s), the part beyond n being padding:
 *
 *   bucket / gather buffer   [ slice 0 | slice 1 | ... | slice dp−1 ]     dp·s, unit at [0, n)
 *   reduce-scatter in place  rank d's summed slice lands at [0, s) (comm.h)
 *   all-gather in place      rank d puts its slice at [d·s, (d+1)·s) first
 *   shards                   slice d of unit u at local_start_u + [0, s)
 *
 * ZeRO-3's two gather buffers ("slots") are each FREE, PENDING (a prefetch queued on the
 * stream, handle h) or IN_USE (the span the model holds). The model holds at most one
 * parameter span, so a get always finds a slot that is not in use; at most one slot is
 * pending at a time.
 */
#include "src/zero/fsdp.h"

#include <string.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/model/gpt_hooks.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_label.h"
#include "src/runtime/comm_stream.h"
#include "src/zero/distopt_internal.h"

enum { SLOT_FREE, SLOT_PENDING, SLOT_IN_USE };

typedef struct {
    float *buf; /* (bucket_numel) */
    int unit, state;
    comm_handle h;
} gather_slot;

struct zero_fsdp {
    local_model *m;
    const zero_ranges *r;
    zero_fsdp_config cfg;
    comm_group *dp;
    int dp_size, dp_rank;
    size_t bucket_numel; /* dp · the largest slice: any unit, padded */
    float *grad_shard;   /* (S) */
    float *bucket;       /* (bucket_numel) the gradients of the unit W is writing */
    int bucket_unit;     /* that unit, -1 when none */
    float *param_shard;  /* (S) ZeRO-3 */
    gather_slot slot[2]; /* ZeRO-3 */
    comm_stream *stream; /* ZeRO-3 prefetch, or NULL */
    size_t *counts;      /* (dp) the stream's all-gather counts */
    float *whole;        /* ZeRO-3: the transient whole parameter buffer, or NULL */
};

zero_ranges *zero_fsdp_ranges(const local_model *m, int dp, size_t align) {
    return zero_fsdp_ranges_of(m->plist, m->in_norm, m->nparams, dp, align);
}

zero_ranges *zero_fsdp_ranges_of(const gpt_param *const *plist, const bool *in_norm, int n, int dp,
                                 size_t align) {
    zero_param *zp = mallocCheck(sizeof *zp * (size_t)(n ? n : 1));
    int *first = mallocCheck(sizeof *first * (size_t)(n ? n : 1)), nu = 0;
    for (int i = 0; i < n; i++) {
        const gpt_param *p = plist[i];
        zp[i] = (zero_param){p->name, p->numel, p->decay, in_norm && in_norm[i]};
        if (i == 0 || gpt_param_starts_unit(p)) first[nu++] = i;
    }
    zero_ranges *r = zero_ranges_build_units(zp, n, dp, align, first, nu);
    free(zp);
    free(first);
    return r;
}

size_t zero_fsdp_bucket_numel(const zero_ranges *r) {
    size_t most = 0;
    for (int u = 0; u < r->n_units; u++)
        if (r->units[u].shard_numel > most) most = r->units[u].shard_numel;
    return most * (size_t)r->dp;
}

size_t zero_fsdp_work_bytes(const zero_ranges *r, int stage) {
    CHECK(stage == 2 || stage == 3, "zero_fsdp is ZeRO stage 2 or 3");
    return (stage == 3 ? 3 : 1) * zero_fsdp_bucket_numel(r) * sizeof(float);
}

static const zero_unit *unit(const zero_fsdp *f, int u) { return &f->r->units[u]; }
static size_t unit_numel(const zero_fsdp *f, int u) {
    return unit(f, u)->world_end - unit(f, u)->world_start;
}

/* The unit a span of the model names: the spans are the layout's units (gpt.h, UNITS). */
static int unit_of_span(const zero_fsdp *f, size_t begin, size_t end) {
    const int u = zero_ranges_unit_of(f->r, begin);
    CHECK(u >= 0 && unit(f, u)->world_start == begin && unit(f, u)->world_end == end,
          "a model span is exactly one unit of the ZeRO-2/3 layout");
    return u;
}

/* Whether c is a chunk of this optimizer's model (a check: the hooks are the model's own). */
static bool owns(const zero_fsdp *f, const gpt_chunk *c) {
    return c >= f->m->chunks && c < f->m->chunks + f->m->nchunks;
}

/* This rank's slice of unit u, into buf at d·s (ZeRO-3: from the parameter shard). */
static void put_my_slice(zero_fsdp *f, int u, float *buf) {
    const size_t s = unit(f, u)->shard_numel;
    device_copy(buf + (size_t)f->dp_rank * s, f->param_shard + unit(f, u)->local_start,
                s * sizeof(float));
}

/* This rank's slice of unit u taken from a whole buffer (ZeRO-3: into the parameter shard;
 * the padding stays 0). */
static void take_my_slice(zero_fsdp *f, int u, const float *whole) {
    const size_t n = unit_numel(f, u), s = unit(f, u)->shard_numel;
    const size_t lo = (size_t)f->dp_rank * s, hi = lo + s < n ? lo + s : n;
    float *dst = f->param_shard + unit(f, u)->local_start;
    device_zero(dst, s * sizeof(float));
    if (hi > lo) device_copy(dst, whole + unit(f, u)->world_start + lo, (hi - lo) * sizeof(float));
}

/* All-gathers unit u's slices in place in buf (dp·s), this rank's already at d·s. */
static void all_gather_unit(zero_fsdp *f, int u, float *buf) {
    const size_t s = unit(f, u)->shard_numel;
    if (f->dp_size <= 1) return;
    comm_label_set("params", -1);
    comm_all_gather(f->dp, buf + (size_t)f->dp_rank * s, buf, s, COMM_FLOAT32);
    comm_label_clear();
}

/* ---------------------------------------------------------------- ZeRO-3's gather buffers */

static void slot_drop(zero_fsdp *f, gather_slot *sl) {
    CHECK(sl->state != SLOT_IN_USE, "parameters dropped while the model reads them");
    if (sl->state == SLOT_PENDING) comm_stream_wait(f->stream, sl->h);
    sl->state = SLOT_FREE;
    sl->unit = -1;
}

/* The prefetch: unit v queued on the stream into the other slot, unless it is there. */
static void prefetch(zero_fsdp *f, gather_slot *in_use, int v) {
    gather_slot *o = in_use == &f->slot[0] ? &f->slot[1] : &f->slot[0];
    if (!f->stream || v == in_use->unit || (o->state == SLOT_PENDING && o->unit == v)) return;
    slot_drop(f, o); /* a prefetch the pass did not take */
    put_my_slice(f, v, o->buf);
    for (int d = 0; d < f->dp_size; d++) f->counts[d] = unit(f, v)->shard_numel;
    o->h = comm_stream_all_gather(f->stream, o->buf, f->counts, "params");
    o->unit = v;
    o->state = SLOT_PENDING;
}

static float *params_get(void *ctx, const gpt_chunk *c, size_t begin, size_t end, size_t nb,
                         size_t ne) {
    zero_fsdp *f = ctx;
    if (!owns(f, c)) return NULL;
    const int u = unit_of_span(f, begin, end);
    gather_slot *sl = NULL;
    for (int k = 0; k < 2; k++) {
        CHECK(f->slot[k].state != SLOT_IN_USE, "the model holds one parameter unit at a time");
        if (f->slot[k].state == SLOT_PENDING && f->slot[k].unit == u) sl = &f->slot[k];
    }
    if (sl) {
        comm_stream_wait(f->stream, sl->h); /* prefetched: exposed only if not there yet */
    } else {
        sl = f->slot[0].state == SLOT_FREE ? &f->slot[0] : &f->slot[1];
        put_my_slice(f, u, sl->buf);
        all_gather_unit(f, u, sl->buf);
    }
    sl->unit = u;
    sl->state = SLOT_IN_USE;
    if (ne > nb) prefetch(f, sl, unit_of_span(f, nb, ne));
    return sl->buf;
}

static void params_done(void *ctx, const gpt_chunk *c, size_t begin, size_t end) {
    zero_fsdp *f = ctx;
    const int u = unit_of_span(f, begin, end);
    for (int k = 0; k < 2; k++)
        if (f->slot[k].state == SLOT_IN_USE && f->slot[k].unit == u) {
            f->slot[k].state = SLOT_FREE; /* given back: the next gather may land here */
            f->slot[k].unit = -1;
            return;
        }
    die("parameters of a unit given back that were not taken");
}

/* ---------------------------------------------------------------- gradient buckets */

static float *grads_get(void *ctx, const gpt_chunk *c, size_t begin, size_t end) {
    zero_fsdp *f = ctx;
    if (!owns(f, c)) return NULL;
    const int u = unit_of_span(f, begin, end);
    CHECK(f->bucket_unit < 0, "the model writes one gradient unit at a time");
    f->bucket_unit = u;
    device_zero(f->bucket, (size_t)f->dp_size * unit(f, u)->shard_numel * sizeof(float));
    return f->bucket;
}

/* The unit's gradients of one micro-batch: rounded, reduce-scattered, added to the shard. */
static void grads_done(void *ctx, const gpt_chunk *c, size_t begin, size_t end) {
    zero_fsdp *f = ctx;
    const int u = unit_of_span(f, begin, end);
    CHECK(f->bucket_unit == u, "gradients handed back for a unit that was not taken");
    const size_t s = unit(f, u)->shard_numel;
    if (f->cfg.dtype != PREC_FP32) dev_round(f->cfg.dtype, f->bucket, unit_numel(f, u));
    if (f->dp_size > 1) {
        comm_label_set("grads", -1);
        comm_reduce_scatter(f->dp, f->bucket, f->bucket, s, COMM_FLOAT32, COMM_SUM);
        comm_label_clear();
    }
    dev_add_inplace(f->grad_shard + unit(f, u)->local_start, f->bucket, s);
    f->bucket_unit = -1;
}

/* ---------------------------------------------------------------- the object */

zero_fsdp *zero_fsdp_create(local_model *m, const zero_ranges *r, comm_group *dp,
                            const zero_fsdp_config *cfg) {
    CHECK(cfg->stage == 2 || cfg->stage == 3, "zero_fsdp is ZeRO stage 2 or 3");
    CHECK(cfg->dtype != PREC_FP16, "ZeRO-2/3 do not support fp16 (checked by the flags)");
    zero_fsdp *f = callocCheck(1, sizeof *f);
    f->m = m;
    f->r = r;
    f->cfg = *cfg;
    f->dp = dp;
    f->dp_size = dp ? comm_size(dp) : 1;
    f->dp_rank = dp ? comm_rank(dp) : 0;
    CHECK(r->dp == f->dp_size && r->n_units >= 1, "the units layout has one slice per DP rank");
    f->bucket_numel = zero_fsdp_bucket_numel(r);
    f->bucket_unit = -1;
    /* The model's buffers go first: the peak of start-up stays within a step's. */
    local_model_release(m, false);
    if (cfg->stage == 3) {
        f->param_shard = device_alloc(r->shard_numel * sizeof(float), "parameter shard");
        for (int u = 0; u < r->n_units; u++) take_my_slice(f, u, m->params);
        local_model_release(m, true);
    }
    f->grad_shard = device_alloc(r->shard_numel * sizeof(float), "gradient shard");
    f->bucket = device_alloc(f->bucket_numel * sizeof(float), "gradient bucket");
    if (cfg->stage == 3) {
        for (int k = 0; k < 2; k++) {
            f->slot[k].buf = device_alloc(f->bucket_numel * sizeof(float), "parameter gathers");
            f->slot[k].unit = -1;
        }
        if (cfg->prefetch && f->dp_size > 1) {
            f->stream = comm_stream_create(dp, 4); /* two slots, each waited before reuse: 2 */
            f->counts = mallocCheck(sizeof *f->counts * (size_t)f->dp_size);
        }
    }
    gpt_hooks h = {.ctx = f, .grads_get = grads_get, .grads_done = grads_done};
    if (cfg->stage == 3) h.params_get = params_get, h.params_done = params_done;
    local_model_set_hooks(m, &h);
    return f;
}

void zero_fsdp_destroy(zero_fsdp *f) {
    if (!f) return;
    local_model_set_hooks(f->m, NULL);
    comm_stream_destroy(f->stream); /* drains a pending prefetch: collective, like create */
    device_free(f->grad_shard);
    device_free(f->bucket);
    device_free(f->param_shard);
    for (int k = 0; k < 2; k++) device_free(f->slot[k].buf);
    if (f->whole) f->m->params = NULL;
    device_free(f->whole);
    free(f->counts);
    free(f);
}

float *zero_fsdp_grads(zero_fsdp *f) { return f->grad_shard; }
float *zero_fsdp_params(zero_fsdp *f) { return f->param_shard; }

void zero_fsdp_bytes(const zero_fsdp *f, size_t *grads, size_t *params, size_t *work) {
    const size_t S = f->r->shard_numel * sizeof(float);
    *grads = S;
    *params = f->param_shard ? S : 0;
    *work = zero_fsdp_work_bytes(f->r, f->cfg.stage);
}

static void drop_whole(zero_fsdp *f) {
    if (!f->whole) return;
    device_free(f->whole);
    f->whole = NULL;
    f->m->params = NULL;
}

void zero_fsdp_zero_grads(zero_fsdp *f) {
    device_zero(f->grad_shard, f->r->shard_numel * sizeof(float));
    drop_whole(f);
}

void zero_fsdp_sum_tied(zero_fsdp *f, comm_group *embedding, const gpt_param *tie,
                        const gpt_param *tie2) {
    if (!tie) return;
    const zero_unit *a = unit(f, unit_of_span(f, tie->offset, tie->offset + tie->numel));
    float *ga = f->grad_shard + a->local_start;
    if (tie2) { /* zbv: both copies here; the same slices of the same rows */
        const zero_unit *b = unit(f, unit_of_span(f, tie2->offset, tie2->offset + tie2->numel));
        CHECK(a->shard_numel == b->shard_numel, "the two copies of wte have the same shape");
        float *gb = f->grad_shard + b->local_start;
        dev_add_inplace(ga, gb, a->shard_numel);
        device_copy(gb, ga, a->shard_numel * sizeof(float));
    } else if (embedding && comm_size(embedding) > 1) { /* same dp rank: the same slice */
        comm_label_set("tied embed", -1);
        comm_all_reduce(embedding, ga, a->shard_numel, COMM_FLOAT32, COMM_SUM);
        comm_label_clear();
    }
}

/* ZeRO-2: unit u's updated slices from every rank into model->params, through the bucket. */
static void gather_into_params(zero_fsdp *f, int u) {
    const size_t n = unit_numel(f, u), s = unit(f, u)->shard_numel, d = (size_t)f->dp_rank;
    const size_t lo = d * s < n ? d * s : n, hi = lo + s < n ? lo + s : n;
    float *p = f->m->params + unit(f, u)->world_start;
    device_zero(f->bucket + d * s, s * sizeof(float));
    device_copy(f->bucket + d * s, p + lo, (hi - lo) * sizeof(float));
    all_gather_unit(f, u, f->bucket);
    device_copy(p, f->bucket, n * sizeof(float));
}

void zero_fsdp_params_updated(zero_fsdp *f) {
    if (f->cfg.stage == 2) {
        for (int u = 0; u < f->r->n_units; u++) gather_into_params(f, u);
        return;
    }
    for (int k = 0; k < 2; k++) slot_drop(f, &f->slot[k]); /* stale now */
    drop_whole(f);
}

void zero_fsdp_gather_whole(zero_fsdp *f) {
    if (f->cfg.stage != 3 || f->whole) return;
    for (int k = 0; k < 2; k++) slot_drop(f, &f->slot[k]);
    f->whole = device_alloc(f->m->numel * sizeof(float), "parameters (whole, for a reader)");
    for (int u = 0; u < f->r->n_units; u++) {
        put_my_slice(f, u, f->bucket);
        all_gather_unit(f, u, f->bucket);
        device_copy(f->whole + unit(f, u)->world_start, f->bucket,
                    unit_numel(f, u) * sizeof(float));
    }
    f->m->params = f->whole;
}

void zero_fsdp_take_whole(zero_fsdp *f) {
    if (f->cfg.stage != 3) return;
    CHECK(f->whole != NULL, "zero_fsdp_take_whole after zero_fsdp_gather_whole");
    for (int u = 0; u < f->r->n_units; u++) take_my_slice(f, u, f->whole);
    drop_whole(f);
}

/* ---------------------------------------------------------------- the optimizer's step */

/* The gradients arrive reduce-scattered already, in the gradient shard (at local_start, like
 * ZeRO-1's after its reduce-scatter); the tied wte's two copies are summed slice by slice,
 * then averaged. AdamW updates params + world_start (ZeRO-2, then all-gathered unit by unit)
 * or the parameter shard + local_start (ZeRO-3, nothing gathered: the next passes gather what
 * they read). */
double distopt_fsdp_step(dist_optimizer *o, float lr, float inv) {
    float *grads = zero_fsdp_grads(o->fsdp);
    const gpt_param *second, *tie = distopt_tied_wte(o->model, &second);
    zero_fsdp_sum_tied(o->fsdp, o->g.embedding, tie, second);
    dev_scale(grads, inv, o->shard.ranges->shard_numel);
    const double norm = distopt_update_shard(o, grads, lr);
    zero_fsdp_params_updated(o->fsdp);
    return norm;
}
