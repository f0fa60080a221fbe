/* executor.c — see executor.h.
 *
 * Messages to oneself. In the V of zbv, stage p−1 (chunk 0 of rank p−1) feeds stage p (chunk 1
 * of the same rank), and the gradient comes back the same way. The executor hands those over
 * itself: the sender copies its output into a buffer kept under the message's tag, the
 * receiver copies it out and gives the buffer back. They never reach src/runtime/comm.c,
 * whose loopback queue serves only size-1 groups; an MPI send to oneself inside a larger
 * group would work (Isend + Probe) but is a needless trip through the library, and NCCL has
 * no send to self. The trace shows no p2p for them: none happens. */
#include "src/pp/executor.h"

#include <string.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/model/gpt_hooks.h"
#include "src/runtime/comm.h"
#include "src/runtime/comm_label.h"
#include "src/trace/trace.h"

/* Free blocks of activation memory, by byte size: a part given back (gpt.h, gpt_acts_part)
 * waits here for the next part of the same size, of whichever chunk. Nothing is freed before
 * the executor is, so the memory held is, per size, the most parts of that size held at once
 * (pp_pool_bytes, src/pp/schedule.h: what the memory prediction adds up). */
typedef struct {
    int nsizes;    /* sizes seen, at most GPT_ACTS_PARTS per chunk */
    size_t *size;  /* (GPT_ACTS_PARTS·v) */
    float ***free; /* (GPT_ACTS_PARTS·v) stacks, each of `room` blocks */
    int *n;        /* (GPT_ACTS_PARTS·v) */
    int room;      /* GPT_ACTS_PARTS·m·v: no more parts of one size exist */
} block_pool;

struct pp_executor {
    local_model *model;
    comm_group *tp, *pp;
    pp_config cfg;
    pp_rank_plan plan;
    int pp_rank, B, T;
    size_t act_elems;      /* B*T*C: one activation message (B*T/tp*C: sequence parallelism) */
    gpt_acts **live;       /* (m*v) activations of (mb, chunk) between its F and B (or W) */
    gpt_acts ***pool;      /* (v) stacks of free activation sets, per chunk: their views and
                            * the MoE layers' own state, no part attached */
    int *pool_n;           /* (v) */
    block_pool parts;      /* the free parts' memory, by size, shared by the rank's chunks */
    gpt_wgrad **live_wg;   /* (m*v) split backward: what W of (mb, chunk) needs, B to W */
    gpt_wgrad ***wg_pool;  /* (v) stacks of free ones, per chunk */
    int *wg_pool_n;        /* (v) */
    gpt_scratch **scratch; /* (v) */
    float *xin, *xout;     /* (act_elems) message buffers, device memory; xin is one of xin_buf */
    float *xin_buf[2];     /* --overlap-p2p-comm: the next receive lands in the other one */
    bool overlap_p2p;
    comm_request *ahead; /* the receive posted ahead, for action ahead_at, in xin_buf[ahead_buf] */
    int ahead_at, ahead_buf;
    float **self_msg;  /* (ntags) messages to this rank itself, by tag, or NULL */
    float **self_free; /* (ntags) (act_elems) buffers for them, not in use */
    int self_free_n;
    int *last_weight; /* (v) index of the plan's last action adding to chunk c's weight grads */
    size_t live_bytes, peak_bytes;
    int live_sets, peak_sets;
    trace_recorder *trace;
    /* MoE: what the forwards of the last run routed (pp_executor_moe_load) */
    double aux_sum;       /* switch losses of its forwards */
    int64_t *moe_tokens;  /* (L·E) by global layer: (token, choice) pairs sent to each expert */
    int64_t *moe_dropped; /* (L) */
};

pp_executor *pp_executor_create(local_model *model, comm_group *tp, comm_group *pp,
                                const pp_config *cfg, int pp_rank, int B, int T) {
    CHECK(cfg->v == model->nchunks, "schedule chunks per rank must equal the model's chunks");
    CHECK(!pp || comm_size(pp) == cfg->p, "pipeline group size must equal the schedule's p");
    for (int c = 0; c < cfg->v; c++)
        CHECK(model->chunk_stage[c] == pp_stage(cfg, pp_rank, c),
              "the model's chunks must be the stages the schedule places on this rank "
              "(local_model_create_staged with pp_stage)");
    pp_executor *ex = callocCheck(1, sizeof *ex);
    ex->model = model;
    ex->tp = tp;
    ex->pp = pp;
    ex->cfg = *cfg;
    ex->pp_rank = pp_rank;
    ex->B = B;
    ex->T = T;
    if (model->cfg.num_experts > 0) {
        const size_t L = (size_t)model->cfg.num_layers;
        ex->moe_tokens = callocCheck(L * (size_t)model->cfg.num_experts, sizeof(int64_t));
        ex->moe_dropped = callocCheck(L, sizeof(int64_t));
    }
    pp_rank_plan_build(cfg, pp_rank, &ex->plan);
    /* A message is the residual stream: with sequence parallelism this rank's positions only,
     * so each of the tp ranks of a stage sends its (B, T/tp, C) shard to its peer. */
    ex->act_elems = gpt_residual_rows(&model->chunks[0], B, T) * (size_t)model->cfg.hidden;
    ex->live = callocCheck((size_t)cfg->m * (size_t)cfg->v, sizeof *ex->live);
    ex->pool = callocCheck((size_t)cfg->v, sizeof *ex->pool);
    ex->pool_n = callocCheck((size_t)cfg->v, sizeof *ex->pool_n);
    ex->scratch = callocCheck((size_t)cfg->v, sizeof *ex->scratch);
    const size_t slots = (size_t)GPT_ACTS_PARTS * (size_t)cfg->v;
    ex->parts.size = callocCheck(slots, sizeof *ex->parts.size);
    ex->parts.free = callocCheck(slots, sizeof *ex->parts.free);
    ex->parts.n = callocCheck(slots, sizeof *ex->parts.n);
    ex->parts.room = GPT_ACTS_PARTS * cfg->m * cfg->v;
    ex->live_wg = callocCheck((size_t)cfg->m * (size_t)cfg->v, sizeof *ex->live_wg);
    ex->wg_pool = callocCheck((size_t)cfg->v, sizeof *ex->wg_pool);
    ex->wg_pool_n = callocCheck((size_t)cfg->v, sizeof *ex->wg_pool_n);
    for (int c = 0; c < cfg->v; c++) {
        ex->pool[c] = callocCheck((size_t)cfg->m, sizeof **ex->pool);
        ex->wg_pool[c] = callocCheck((size_t)cfg->m, sizeof **ex->wg_pool);
        ex->scratch[c] = gpt_scratch_create(&model->chunks[c], B, T);
    }
    ex->xin_buf[0] = device_alloc(ex->act_elems * sizeof(float), "pipeline messages");
    ex->xin_buf[1] = device_alloc(ex->act_elems * sizeof(float), "pipeline messages");
    ex->xin = ex->xin_buf[0];
    ex->xout = device_alloc(ex->act_elems * sizeof(float), "pipeline messages");
    /* The plan's last action that adds to chunk c's weight gradients: after it they are final
     * for the step, so only during it may the model report them ready (src/model/gpt_hooks.h:
     * --overlap-grad-reduce launches each bucket's reduction from there). */
    ex->last_weight = mallocCheck((size_t)cfg->v * sizeof *ex->last_weight);
    for (int c = 0; c < cfg->v; c++) ex->last_weight[c] = -1;
    for (int i = 0; i < ex->plan.n; i++) {
        const pp_action *a = &ex->plan.actions[i];
        if (a->op == PP_BACKWARD || a->op == PP_WEIGHT) ex->last_weight[a->chunk] = i;
    }
    ex->self_msg = callocCheck((size_t)pp_tag_count(cfg), sizeof *ex->self_msg);
    ex->self_free = callocCheck((size_t)pp_tag_count(cfg), sizeof *ex->self_free);
    return ex;
}

void pp_executor_destroy(pp_executor *ex) {
    if (!ex) return;
    free(ex->moe_tokens);
    free(ex->moe_dropped);
    for (int c = 0; c < ex->cfg.v; c++) {
        for (int i = 0; i < ex->pool_n[c]; i++) gpt_acts_destroy(ex->pool[c][i]);
        free(ex->pool[c]);
        for (int i = 0; i < ex->wg_pool_n[c]; i++) gpt_wgrad_destroy(ex->wg_pool[c][i]);
        free(ex->wg_pool[c]);
        gpt_scratch_destroy(ex->scratch[c]);
    }
    for (int i = 0; i < ex->cfg.m * ex->cfg.v; i++)
        gpt_acts_destroy(ex->live[i]), gpt_wgrad_destroy(ex->live_wg[i]);
    free(ex->live);
    free(ex->live_wg);
    free(ex->wg_pool);
    free(ex->wg_pool_n);
    free(ex->pool);
    free(ex->pool_n);
    for (int k = 0; k < ex->parts.nsizes; k++) {
        for (int i = 0; i < ex->parts.n[k]; i++) device_free(ex->parts.free[k][i]);
        free(ex->parts.free[k]);
    }
    free(ex->parts.size);
    free(ex->parts.free);
    free(ex->parts.n);
    free(ex->scratch);
    device_free(ex->xin_buf[0]);
    device_free(ex->xin_buf[1]);
    device_free(ex->xout);
    for (int t = 0; t < pp_tag_count(&ex->cfg); t++) device_free(ex->self_msg[t]);
    for (int i = 0; i < ex->self_free_n; i++) device_free(ex->self_free[i]);
    free(ex->self_msg);
    free(ex->self_free);
    free(ex->last_weight);
    pp_rank_plan_free(&ex->plan);
    free(ex);
}

void pp_executor_set_trace(pp_executor *ex, trace_recorder *tr) {
    ex->trace = tr;
    for (int c = 0; c < ex->cfg.v; c++) /* W's share inside each whole backward, for the trace */
        gpt_scratch_time_weight(ex->scratch[c], tr != NULL);
}
void pp_executor_set_overlap_p2p(pp_executor *ex, bool on) { ex->overlap_p2p = on; }

/* The stack of free blocks of `bytes` (made on first use). */
static int pool_slot(block_pool *bp, size_t bytes) {
    for (int k = 0; k < bp->nsizes; k++)
        if (bp->size[k] == bytes) return k;
    const int k = bp->nsizes++;
    bp->size[k] = bytes;
    bp->free[k] = callocCheck((size_t)bp->room, sizeof **bp->free);
    return k;
}

/* The bytes of a set's parts (the rest of gpt_acts_bytes is the MoE layers' own state). */
static size_t parts_bytes(const gpt_acts *a) {
    size_t n = 0;
    for (int k = 0; k < GPT_ACTS_PARTS; k++) n += gpt_acts_part_bytes(a, (gpt_acts_part)k);
    return n;
}

/* Attaches part k of set a (chunk c): a free block of its size, or a new one. */
static void part_take(pp_executor *ex, int c, gpt_acts *a, gpt_acts_part k) {
    const size_t bytes = gpt_acts_part_bytes(a, k);
    if (!bytes) return;
    block_pool *bp = &ex->parts;
    const int s = pool_slot(bp, bytes);
    float *mem = bp->n[s] ? bp->free[s][--bp->n[s]] : device_alloc(bytes, "activations");
    gpt_acts_attach(a, &ex->model->chunks[c], k, mem);
    ex->live_bytes += bytes;
    if (ex->live_bytes > ex->peak_bytes) ex->peak_bytes = ex->live_bytes;
}

/* Detaches part k of set a (chunk c) into the pool. */
static void part_give_back(pp_executor *ex, int c, gpt_acts *a, gpt_acts_part k) {
    const size_t bytes = gpt_acts_part_bytes(a, k);
    float *mem = gpt_acts_detach(a, &ex->model->chunks[c], k);
    if (!mem) return;
    block_pool *bp = &ex->parts;
    const int s = pool_slot(bp, bytes);
    CHECK(bp->n[s] < bp->room, "more parts of one size given back than sets exist");
    bp->free[s][bp->n[s]++] = mem;
    ex->live_bytes -= bytes;
}

/* Takes an activation set for chunk c: views from the chunk's pool (made the first time),
 * each part's memory from the block pool. */
static gpt_acts *acts_take(pp_executor *ex, int c) {
    const gpt_chunk *ch = &ex->model->chunks[c];
    gpt_acts *a = ex->pool_n[c] ? ex->pool[c][--ex->pool_n[c]]
                                : gpt_acts_create_empty(ch, ex->B, ex->T);
    ex->live_bytes += gpt_acts_bytes(a) - parts_bytes(a); /* the MoE layers' own state */
    for (int k = 0; k < GPT_ACTS_PARTS; k++) part_take(ex, c, a, (gpt_acts_part)k);
    ex->live_sets++;
    if (ex->live_bytes > ex->peak_bytes) ex->peak_bytes = ex->live_bytes;
    if (ex->live_sets > ex->peak_sets) ex->peak_sets = ex->live_sets;
    if (ex->trace) trace_memory(ex->trace, ex->live_bytes);
    return a;
}

/* Gives back the parts of a set that only B reads (after B of a split backward: W does not
 * read them); nothing if they are given back already. */
static void acts_give_back_b(pp_executor *ex, int c, gpt_acts *a) {
    for (int k = 0; k < GPT_ACTS_PARTS; k++)
        if (!gpt_acts_part_read_by_w((gpt_acts_part)k)) part_give_back(ex, c, a, (gpt_acts_part)k);
    if (ex->trace) trace_memory(ex->trace, ex->live_bytes);
}

static void acts_give_back(pp_executor *ex, int c, gpt_acts *a) {
    for (int k = 0; k < GPT_ACTS_PARTS; k++) part_give_back(ex, c, a, (gpt_acts_part)k);
    ex->live_bytes -= gpt_acts_bytes(a) - parts_bytes(a);
    ex->live_sets--;
    ex->pool[c][ex->pool_n[c]++] = a;
    if (ex->trace) trace_memory(ex->trace, ex->live_bytes);
}

/* The same for the split backward's hand-over from B to W (counted as activation memory:
 * it is held per micro-batch, like the activations it accompanies). */
static gpt_wgrad *wgrad_take(pp_executor *ex, int c) {
    gpt_wgrad *w = ex->wg_pool_n[c] ? ex->wg_pool[c][--ex->wg_pool_n[c]]
                                    : gpt_wgrad_create(&ex->model->chunks[c], ex->B, ex->T);
    ex->live_bytes += gpt_wgrad_bytes(w);
    if (ex->live_bytes > ex->peak_bytes) ex->peak_bytes = ex->live_bytes;
    if (ex->trace) trace_memory(ex->trace, ex->live_bytes);
    return w;
}

static void wgrad_give_back(pp_executor *ex, int c, gpt_wgrad *w) {
    ex->live_bytes -= gpt_wgrad_bytes(w);
    ex->wg_pool[c][ex->wg_pool_n[c]++] = w;
    if (ex->trace) trace_memory(ex->trace, ex->live_bytes);
}

/* The p2p of action a, labelled for the trace: activations travel forward ("act fwd"),
 * their gradients backward ("grad bwd"). */
static const char *p2p_label(const pp_action *a) {
    return a->op == PP_FORWARD ? "act fwd" : "grad bwd";
}

static void recv_input(pp_executor *ex, const pp_action *a) {
    const size_t bytes = ex->act_elems * sizeof(float);
    if (a->recv_peer == ex->pp_rank) { /* from this rank itself: see the top of the file */
        float *b = ex->self_msg[a->recv_tag];
        CHECK(b != NULL, "a message to oneself is sent before it is received (the plan's order)");
        device_copy(ex->xin, b, bytes);
        ex->self_msg[a->recv_tag] = NULL;
        ex->self_free[ex->self_free_n++] = b;
        return;
    }
    comm_label_set(p2p_label(a), -1);
    comm_recv(ex->pp, ex->xin, ex->act_elems, COMM_FLOAT32, a->recv_peer, a->recv_tag);
    comm_label_clear();
}

/* --overlap-p2p-comm: posts the receive of the first action after `i` that has one, into the
 * input buffer action i does not use, unless it is posted already. */
static void post_next_recv(pp_executor *ex, int i) {
    if (ex->ahead) return;
    for (int j = i + 1; j < ex->plan.n; j++) {
        const pp_action *b = &ex->plan.actions[j];
        if (b->recv_peer < 0 || b->recv_peer == ex->pp_rank) continue; /* none, or from itself */
        ex->ahead_buf = ex->xin == ex->xin_buf[0] ? 1 : 0;
        ex->ahead_at = j;
        comm_label_set(p2p_label(b), -1);
        ex->ahead = comm_irecv(ex->pp, ex->xin_buf[ex->ahead_buf], ex->act_elems, COMM_FLOAT32,
                               b->recv_peer, b->recv_tag);
        comm_label_clear();
        return;
    }
}

/* The input of action i: waits for the receive posted ahead (its exposed part is what the
 * trace shows), or, on the first one of the step, receives now. */
static void take_input(pp_executor *ex, const pp_action *a, int i) {
    if (!ex->overlap_p2p || a->recv_peer == ex->pp_rank) {
        recv_input(ex, a);
        return;
    }
    if (!ex->ahead) post_next_recv(ex, i - 1);
    CHECK(ex->ahead && ex->ahead_at == i, "the receive posted ahead is not this action's");
    comm_label_set(p2p_label(a), -1);
    comm_request_wait(ex->ahead);
    comm_label_clear();
    ex->ahead = NULL;
    ex->xin = ex->xin_buf[ex->ahead_buf];
}

static void send_output(pp_executor *ex, const pp_action *a) {
    const size_t bytes = ex->act_elems * sizeof(float);
    if (a->send_peer == ex->pp_rank) {
        CHECK(ex->self_msg[a->send_tag] == NULL, "one message per tag and step");
        float *b = ex->self_free_n ? ex->self_free[--ex->self_free_n]
                                   : device_alloc(bytes, "pipeline messages");
        device_copy(b, ex->xout, bytes);
        ex->self_msg[a->send_tag] = b;
        return;
    }
    comm_label_set(p2p_label(a), -1);
    comm_send(ex->pp, ex->xout, ex->act_elems, COMM_FLOAT32, a->send_peer, a->send_tag);
    comm_label_clear();
}

static void moe_load_reset(pp_executor *ex) {
    ex->aux_sum = 0.0;
    if (!ex->moe_tokens) return;
    const size_t L = (size_t)ex->model->cfg.num_layers;
    memset(ex->moe_tokens, 0, L * (size_t)ex->model->cfg.num_experts * sizeof(int64_t));
    memset(ex->moe_dropped, 0, L * sizeof(int64_t));
}

double pp_executor_moe_load(const pp_executor *ex, const int64_t **tokens,
                            const int64_t **dropped) {
    if (tokens) *tokens = ex->moe_tokens;
    if (dropped) *dropped = ex->moe_dropped;
    return ex->aux_sum;
}

/* The forward of action a into acts (its input already in xin, its output left in xout),
 * recorded as `kind`; returns the micro-batch's mean loss on the last stage, 0 elsewhere. */
static float forward(pp_executor *ex, const pp_action *a, gpt_acts *acts, const int32_t *inputs,
                     const int32_t *targets, trace_kind kind, int step) {
    const size_t BT = (size_t)ex->B * (size_t)ex->T;
    const gpt_chunk *ch = &ex->model->chunks[a->chunk];
    int h = ex->trace ? trace_begin(ex->trace, kind, step, a->mb, a->chunk) : -1;
    float loss = gpt_forward(ch, ex->model->params, acts, ex->scratch[a->chunk],
                             inputs + (size_t)a->mb * BT, targets + (size_t)a->mb * BT, ex->xin,
                             a->send_peer >= 0 ? ex->xout : NULL, ex->tp);
    if (ex->trace) trace_end(ex->trace, h);
    if (ex->moe_tokens) { /* MoE: the routing of this forward, by global layer */
        const int E = ex->model->cfg.num_experts;
        ex->aux_sum += gpt_acts_aux_loss(acts);
        for (int i = 0; i < ch->shard.layer_end - ch->shard.layer_begin; i++) {
            const int64_t *n = gpt_acts_expert_counts(acts, i);
            const int layer = ch->shard.layer_begin + i;
            for (int e = 0; e < E; e++)
                ex->moe_tokens[(size_t)layer * (size_t)E + (size_t)e] += n[e];
            ex->moe_dropped[layer] += gpt_acts_dropped(acts, i);
        }
    }
    return ch->shard.has_head ? loss : 0.0f;
}

/* The backward actions of a on the micro-batch whose activations are in *slot:
 *   PP_BACKWARD        the whole backward; the activations are given back at once;
 *   PP_BACKWARD_INPUT  B: input gradient, its dY's kept in a gpt_wgrad until W;
 *   PP_WEIGHT          W: weight gradients; then the activations and the gpt_wgrad go back. */
static void backward(pp_executor *ex, const pp_action *a, gpt_acts **slot, float dloss, int step) {
    const gpt_chunk *ch = &ex->model->chunks[a->chunk];
    gpt_wgrad **wslot = &ex->live_wg[a->mb * ex->cfg.v + a->chunk];
    float *dx_in = a->send_peer >= 0 ? ex->xout : NULL;
    CHECK(*slot != NULL, "backward of a micro-batch that had no forward");
    const trace_kind kind = a->op == PP_WEIGHT ? TRACE_WEIGHT : TRACE_BACKWARD;
    int h = ex->trace ? trace_begin(ex->trace, kind, step, a->mb, a->chunk) : -1;
    if (a->op == PP_BACKWARD) {
        gpt_backward(ch, ex->model->params, ex->model->grads, *slot, ex->scratch[a->chunk], ex->xin,
                     dx_in, dloss, ex->tp);
        if (ex->trace) { /* B and W apart inside the whole backward, for planning (trace.h) */
            trace_end(ex->trace, h);
            trace_set_weight_share(ex->trace, h, gpt_scratch_weight_share(ex->scratch[a->chunk]));
            h = -1;
        }
    } else if (a->op == PP_BACKWARD_INPUT) {
        CHECK(*wslot == NULL,
              "input-gradient backward of a micro-batch whose weight gradient is pending");
        *wslot = wgrad_take(ex, a->chunk);
        gpt_backward_input(ch, ex->model->params, *slot, ex->scratch[a->chunk], *wslot, ex->xin,
                           dx_in, dloss, ex->tp);
    } else {
        CHECK(*wslot != NULL, "weight-gradient backward before the input-gradient backward");
        gpt_backward_weight(ch, ex->model->grads, *slot, *wslot);
    }
    if (ex->trace && h >= 0) trace_end(ex->trace, h);
    if (a->op == PP_BACKWARD_INPUT) { /* W reads only the W part and the hand-over */
        acts_give_back_b(ex, a->chunk, *slot);
        return;
    }
    if (*wslot) wgrad_give_back(ex, a->chunk, *wslot);
    *wslot = NULL;
    acts_give_back(ex, a->chunk, *slot);
    *slot = NULL;
}

double pp_executor_run(pp_executor *ex, const int32_t *inputs, const int32_t *targets, float dloss,
                       int step) {
    const int v = ex->cfg.v;
    double loss_sum = 0.0;
    ex->peak_bytes = ex->live_bytes;
    moe_load_reset(ex);
    ex->peak_sets = ex->live_sets;
    for (int i = 0; i < ex->plan.n; i++) {
        const pp_action *a = &ex->plan.actions[i];
        gpt_acts **slot = &ex->live[a->mb * v + a->chunk];
        if (a->recv_peer >= 0) take_input(ex, a, i);
        if (ex->overlap_p2p) post_next_recv(ex, i); /* lands while this action computes */
        if (a->op == PP_FORWARD) {
            CHECK(*slot == NULL, "forward of a micro-batch whose activations are still held");
            *slot = acts_take(ex, a->chunk);
            loss_sum += forward(ex, a, *slot, inputs, targets, TRACE_FORWARD, step);
        } else {
            gpt_hooks_arm_grads(&ex->model->chunks[a->chunk], ex->last_weight[a->chunk] == i);
            backward(ex, a, slot, dloss, step);
            gpt_hooks_arm_grads(&ex->model->chunks[a->chunk], false);
        }
        if (a->send_peer >= 0) send_output(ex, a);
    }
    if (ex->pp) comm_wait_sends(ex->pp);
    local_model_sum_tied_grads(ex->model); /* zbv: both wte copies here (local_model.h) */
    return loss_sum;
}

double pp_executor_forward_only(pp_executor *ex, const int32_t *inputs, const int32_t *targets,
                                int step) {
    double loss_sum = 0.0;
    moe_load_reset(ex);
    for (int i = 0; i < ex->plan.n; i++) {
        const pp_action *a = &ex->plan.actions[i];
        if (a->op != PP_FORWARD) continue;
        if (a->recv_peer >= 0) recv_input(ex, a);
        gpt_acts *acts = acts_take(ex, a->chunk);
        loss_sum += forward(ex, a, acts, inputs, targets, TRACE_EVAL, step);
        acts_give_back(ex, a->chunk, acts);
        if (a->send_peer >= 0) send_output(ex, a);
    }
    if (ex->pp) comm_wait_sends(ex->pp);
    return loss_sum;
}

size_t pp_executor_peak_activation_bytes(const pp_executor *ex) { return ex->peak_bytes; }
int pp_executor_peak_microbatches(const pp_executor *ex) { return ex->peak_sets; }

size_t pp_executor_activation_bytes_per_microbatch(const pp_executor *ex) {
    size_t total = 0;
    for (int c = 0; c < ex->cfg.v; c++)
        total += gpt_acts_bytes_of(&ex->model->chunks[c], ex->B, ex->T);
    return total;
}

size_t pp_executor_work_space_bytes(const pp_executor *ex) {
    size_t total = 0;
    for (int c = 0; c < ex->cfg.v; c++) total += gpt_scratch_bytes(ex->scratch[c]);
    return total;
}
