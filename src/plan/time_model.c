/* time_model.c — see time_model.h: one layer, the ends, the stages, the schedule, then what
 * comes after the pipeline. Every term is a named quantity of seconds. */
#include "src/plan/time_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/cp/ring_attention.h"
#include "src/model/gpt.h"
#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"
#include "src/runtime/groups.h"

double plan_collective_time(const plan_calibration *cal, plan_link_kind k, int g, double bytes) {
    const plan_link l = plan_calibration_link(cal, k, g);
    return plan_link_time(&l, k, g, bytes);
}

/* The kinds of group whose collectives the model places, and their short names. */
static const struct {
    pg_kind kind;
    const char *name;
} k_groups[] = {{PG_TP, "tp"}, {PG_CP, "cp"}, {PG_EP, "ep"}, {PG_PP, "pp"}, {PG_DP_CP, "dp"}};
enum { NGROUPS = sizeof k_groups / sizeof k_groups[0] };

unsigned plan_groups_across_hosts(const train_config *c, int ranks_per_node) {
    const int world = c->world_size;
    if (ranks_per_node <= 0 || ranks_per_node >= world) return 0;
    pg_layout l;
    char err[512];
    if (!pg_layout_make(&l, world, c->tensor_model_parallel_size, c->context_parallel_size,
                        c->expert_model_parallel_size, c->pipeline_model_parallel_size, c->vpp,
                        c->rank_order, err, sizeof err))
        die("trident plan: the groups of a checked layout: %s", err);
    int *node_of = mallocCheck(sizeof(int) * (size_t)world), first;
    for (int r = 0; r < world; r++) node_of[r] = r / ranks_per_node;
    unsigned across = 1u << PLAN_WORLD; /* more than one host: the world spans them */
    for (int i = 0; i < NGROUPS; i++)
        if (pg_groups_spanning_nodes(&l, k_groups[i].kind, node_of, &first) > 0)
            across |= 1u << k_groups[i].kind;
    free(node_of);
    return across;
}

plan_link plan_group_link(const plan_calibration *cal, const train_config *c, int group,
                          plan_link_kind k, int g) {
    plan_link l = plan_calibration_link(cal, k, g);
    if (plan_groups_across_hosts(c, cal->ranks_per_node) & (1u << group)) {
        l.alpha = cal->network.alpha, l.beta = cal->network.beta;
        snprintf(l.source, sizeof l.source, "%s", cal->network.source);
    }
    return l;
}

const char *plan_groups_across_name(unsigned across, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < NGROUPS; i++)
        if ((across & (1u << k_groups[i].kind)) && used < cap)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? "+" : "",
                                     k_groups[i].name);
    if (!buf[0]) snprintf(buf, cap, "-");
    return buf;
}

/* Seconds of one collective of kind k over c's groups of `group` (a pg_kind, or PLAN_WORLD). */
static double group_time(const plan_calibration *cal, const train_config *c, int group,
                         plan_link_kind k, int g, double bytes) {
    const plan_link l = plan_group_link(cal, c, group, k, g);
    return plan_link_time(&l, k, g, bytes);
}

/* Of that, the bandwidth part β·wire: the time a rank spends copying the bytes. */
static double group_copy(const plan_calibration *cal, const train_config *c, int group,
                         plan_link_kind k, int g, double bytes) {
    if (g <= 1) return 0;
    const plan_link l = plan_group_link(cal, c, group, k, g);
    double steps, wire;
    plan_link_shape(k, g, bytes, &steps, &wire);
    return l.beta * wire;
}

/* What communication overlapped with compute costs the step: `total` seconds, of which `copy`
 * copying bytes, beside `covering` seconds of compute, in `pieces` calls of which one always
 * shows. On CPU ranks the copies take the rank's core from the compute they overlap (shared
 * memory moves bytes with the CPU); only the waiting — latency and sync — hides. */
static double overlapped(double total, double copy, double covering, double pieces) {
    const double wait = total - copy;
    return copy + fmax(wait - covering, wait / pieces);
}

/* Seconds of (N,C) @ (OC,C)^T at the calibrated rate of that shape. */
static double gemm_s(const plan_calibration *cal, double N, double C, double OC) {
    if (N < 1 || C < 1 || OC < 1) return 0;
    const double rate = plan_calibration_gemm_rate(cal, (size_t)N, (size_t)C, (size_t)OC);
    return 2.0 * N * C * OC / rate;
}

/* The products of one layer's forward on one rank at tp, N tokens (not attention's core). */
static double layer_products(const train_config *c, const plan_calibration *cal, double tp,
                             double N) {
    const double C = c->hidden_size;
    const double attn = gemm_s(cal, N, C, 3 * C / tp) + gemm_s(cal, N, C / tp, C);
    if (c->num_experts <= 0)
        return attn + gemm_s(cal, N, C, 4 * C / tp) + gemm_s(cal, N, 4 * C / tp, C);
    /* MoE: the router, then E/ep experts (whole on every TP rank) of N·K·ep/E rows each, times
     * the busiest expert-parallel rank's load: the others wait for it at the combine */
    const double E = c->num_experts, K = c->moe_router_topk, ep = c->expert_model_parallel_size;
    const double rows = ceil(N * K * ep / E * plan_calibration_moe_load(cal, (int)ep));
    return attn + gemm_s(cal, N, C, E) +
           E / ep * (gemm_s(cal, rows, C, 4 * C) + gemm_s(cal, rows, 4 * C, C));
}

/* The measured attention core at tp (NULL: not in the calibration). */
static const plan_attention *measured_attention(const train_config *c, const plan_calibration *cal,
                                                double tp) {
    return plan_calibration_attention(cal, (int)(c->num_attention_heads / tp), c->seq_length);
}

/* The measured ring attention of one rank of cp at tp (NULL: cp 1, or not in the calibration). */
static const plan_ring *measured_ring(const train_config *c, const plan_calibration *cal, double tp,
                                      double cp) {
    if (cp <= 1) return NULL;
    return plan_calibration_ring(cal, (int)(c->num_attention_heads / tp), c->seq_length, (int)cp);
}

/* The share of the sequence's score entries one rank of cp computes in ring attention
 * (ring_attention_score_entries: the blocks its zig-zag chunks meet), 1 at cp = 1. */
static double ring_share(const train_config *c, int cp) {
    const size_t T = (size_t)c->seq_length;
    return (double)ring_attention_score_entries(T / (size_t)cp, 0, cp) /
           (double)ring_attention_score_entries(T, 0, 1);
}

/* The attention core of one layer, one micro-batch, at tp and cp, forward: measured at the
 * rank's heads — the kernels' at cp = 1, a rank's ring attention at cp beyond (else ring
 * attention's kernel on the whole sequence × the rank's share of the score entries); without
 * a measurement Q·Kᵀ and A·V, 4·N·T·C/tp FLOPs, at the rate of one head's product. */
static double attention_forward_s(const train_config *c, const plan_calibration *cal, double tp,
                                  double cp) {
    const plan_ring *r = measured_ring(c, cal, tp, cp);
    if (r) return r->fwd;
    const plan_attention *a = measured_attention(c, cal, tp);
    if (a) return cp > 1 ? a->ring_fwd * ring_share(c, (int)cp) : a->fwd;
    const double T = c->seq_length, C = c->hidden_size, N = c->micro_batch_size * T / cp;
    const double rate = plan_calibration_gemm_rate(cal, (size_t)(T / cp),
                                                   (size_t)(C / c->num_attention_heads), (size_t)T);
    return 4 * N * T * C / tp / rate;
}

/* Floats the passes that are not products touch in one layer's forward on one rank:
 * LayerNorms, residuals, biases (12·C), the MLP's GELU (16·C/tp; with experts 16·C for each
 * of the N·K rows the rank's experts take, times the expert load of ep — experts are whole on
 * every tensor-parallel rank), and the softmax (4·NH/tp·T) where the attention core is not
 * measured with it. */
static double layer_floats(const train_config *c, const plan_calibration *cal, double tp,
                           double cp) {
    const double T = c->seq_length, C = c->hidden_size, N = c->micro_batch_size * T / cp;
    const double softmax = measured_attention(c, cal, tp) ? 0
                                                          : 4.0 * c->num_attention_heads / tp * T;
    const double mlp = c->num_experts > 0
                           ? 16 * C * c->moe_router_topk *
                                 plan_calibration_moe_load(cal, c->expert_model_parallel_size)
                           : 16 * C / tp;
    return N * (12 * C + mlp + softmax);
}

/* Seconds per float of that work: what the measured block (tp = cp = ep = 1) took beyond its
 * products and its attention core (at least a tenth of it), over its floats; without a block
 * measurement the elementwise rate. */
static double seconds_per_float(const train_config *c, const plan_calibration *cal) {
    if (!(cal->block_forward > 0)) return 1 / cal->elementwise_per_s;
    const double N = (double)c->micro_batch_size * c->seq_length;
    train_config block = *c;
    block.expert_model_parallel_size = 1;
    const double products = layer_products(&block, cal, 1, N) + attention_forward_s(c, cal, 1, 1);
    return fmax(cal->block_forward - products, 0.1 * cal->block_forward) /
           layer_floats(&block, cal, 1, 1);
}

/* The backward's compute over the forward's for all but the attention core, as the block
 * measured it (2 without), and the attention core's backward at tp, cp: measured, else that
 * ratio times its forward. */
static double rest_ratio(const train_config *c, const plan_calibration *cal) {
    if (!(cal->block_forward > 0)) return 2;
    const plan_attention *a = measured_attention(c, cal, 1);
    if (!a || !(cal->block_forward > a->fwd)) return cal->block_backward / cal->block_forward;
    return fmax(cal->block_backward - a->bwd, 0) / (cal->block_forward - a->fwd);
}
static double attention_backward_s(const train_config *c, const plan_calibration *cal, double tp,
                                   double cp) {
    const plan_ring *r = measured_ring(c, cal, tp, cp);
    if (r) return r->bwd;
    const plan_attention *a = measured_attention(c, cal, tp);
    if (a) return cp > 1 ? a->ring_bwd * ring_share(c, (int)cp) : a->bwd;
    return rest_ratio(c, cal) * attention_forward_s(c, cal, tp, cp);
}

/* The measured serial step over the kernels' sum (1 when not measured). */
static double trainer_factor(const plan_calibration *cal) {
    return cal->trainer_factor > 0 ? cal->trainer_factor : 1;
}

static plan_layer_time layer_time(const train_config *c, const plan_calibration *cal) {
    const double B = c->micro_batch_size, T = c->seq_length, C = c->hidden_size;
    const double tp = c->tensor_model_parallel_size;
    const int cp = c->context_parallel_size, ep = c->expert_model_parallel_size;
    const double N = B * T / cp, bytes = 4 * N * C;
    plan_layer_time l = {0};
    l.layer_gemm = layer_products(c, cal, tp, N);
    l.attention_gemm = attention_forward_s(c, cal, tp, cp);
    l.elementwise = layer_floats(c, cal, tp, cp) * seconds_per_float(c, cal);
    const int t = c->tensor_model_parallel_size;
    l.tp_comm = c->sequence_parallel
                    ? 2 * group_time(cal, c, PG_TP, PLAN_ALL_GATHER, t, bytes) +
                          2 * group_time(cal, c, PG_TP, PLAN_REDUCE_SCATTER, t, bytes)
                    : 2 * group_time(cal, c, PG_TP, PLAN_ALL_REDUCE, t, bytes);
    l.cp_comm = (cp - 1) * group_time(cal, c, PG_CP, PLAN_P2P, 2, 2 * bytes / tp);
    if (c->num_experts > 0) { /* the busiest rank receives its load's share of the tokens */
        l.moe_load = plan_calibration_moe_load(cal, ep);
        l.ep_comm = 2 * group_time(cal, c, PG_EP, PLAN_ALL_TO_ALL, ep,
                                   bytes * c->moe_router_topk * l.moe_load);
    }
    /* what the trainer adds around the kernels, as one serial run measured it */
    const double f = trainer_factor(cal);
    const double kernels = l.layer_gemm + l.attention_gemm + l.elementwise;
    l.trainer = (f - 1) * kernels;
    l.forward = f * kernels + l.tp_comm + l.cp_comm + l.ep_comm;
    const double attn_bwd = attention_backward_s(c, cal, tp, cp);
    l.backward = f * (rest_ratio(c, cal) * (l.layer_gemm + l.elementwise) + attn_bwd) + l.tp_comm +
                 2 * l.cp_comm + l.ep_comm;
    l.backward_weight = l.layer_gemm;
    gpt_recompute rc = train_config_recompute(c);
    const bool softmax_apart = !measured_attention(c, cal, tp);
    if (rc.granularity == GPT_RECOMPUTE_SELECTIVE) /* the attention core's forward again */
        l.recompute = f * (l.attention_gemm + (softmax_apart ? N * 4 * c->num_attention_heads / tp *
                                                                   T * seconds_per_float(c, cal)
                                                             : 0));
    else if (rc.granularity == GPT_RECOMPUTE_FULL) l.recompute = l.forward;
    return l;
}

/* The embedding (first stage) and the head with its loss (last stage), one micro-batch: the
 * measured head scaled by its product's share at this layout (V/tp columns, N/cp rows). */
static void ends_time(const train_config *c, const plan_calibration *cal, plan_time *p) {
    const double T = c->seq_length, N = (double)c->micro_batch_size * T / c->context_parallel_size;
    const double C = c->hidden_size, V = c->padded_vocab, tp = c->tensor_model_parallel_size;
    const double ar = group_time(cal, c, PG_TP, PLAN_ALL_REDUCE, (int)tp, 4 * N * C);
    const double Vall = gpt_padded_vocab(256, c->make_vocab_size_divisible_by, 1);
    const double scale = gemm_s(cal, N, C, V / tp) /
                         gemm_s(cal, N * c->context_parallel_size, C, Vall);
    p->embedding = 2 * N * C * seconds_per_float(c, cal) + ar;
    p->head_forward = trainer_factor(cal) * scale * cal->head_forward;
    p->head_backward = trainer_factor(cal) * scale * cal->head_backward + ar;
    const double msg = c->sequence_parallel ? 4 * N * C / tp : 4 * N * C;
    p->p2p = group_time(cal, c, PG_PP, PLAN_P2P, 2, msg);
}

/* Parameters Ψ of pipeline rank r (its tp 0, dp 0 copy) and its ZeRO shard. */
static void rank_params(const train_memory *tm, int r, double *numel, double *shard) {
    for (int k = 0; k < tm->world; k++) {
        const zero_memory_rank *m = &tm->ranks[k];
        if (m->pp_rank == r && m->tp_rank == 0 && m->dp_rank == 0 && m->cp_rank == 0) {
            *numel = (double)m->numel;
            *shard = tm->stage >= 1 ? (double)m->shard_numel : (double)m->numel;
            return;
        }
    }
    CHECK(false, "plan: every pipeline rank is in the memory prediction");
}

/* What one pipeline needs to be simulated: per virtual stage forward, whole backward and W of
 * one micro-batch; per pipeline rank its layers, the sums of its chunks' costs and its
 * communication on the path over the step. */
typedef struct {
    pp_config cfg;
    int *layers;                 /* (S) layers of each virtual stage */
    int *rank_layers;            /* (p) */
    double *f, *b, *w;           /* (S) */
    double *rank_fwd, *rank_bwd; /* (p) one micro-batch through all the rank's chunks */
    double *rank_comm;           /* (p) communication inside the passes, whole step */
} stage_table;

/* ZeRO-2/3 inside the passes of stage s (n layers, share of its rank's parameters): adds the
 * exposed gathers to f[s], and returns what it adds to b[s]. */
static double zero_in_pass(const train_config *c, const train_memory *tm,
                           const plan_calibration *cal, stage_table *t, int s, int r) {
    const int n = t->layers[s], g = c->dp * c->context_parallel_size;
    double numel, shard;
    rank_params(tm, r, &numel, &shard);
    const double share = t->rank_layers[r] ? (double)n / t->rank_layers[r] : 1;
    const double bytes = 4 * numel * share;
    double in_pass = 0;
    if (tm->stage >= 2) in_pass += group_time(cal, c, PG_DP_CP, PLAN_REDUCE_SCATTER, g, bytes);
    if (tm->stage == 3) { /* prefetched one unit ahead: overlapped with the pass's compute */
        const double ag = group_time(cal, c, PG_DP_CP, PLAN_ALL_GATHER, g, bytes);
        const double copy = group_copy(cal, c, PG_DP_CP, PLAN_ALL_GATHER, g, bytes);
        const double passes = train_config_recompute(c).granularity == GPT_RECOMPUTE_FULL ? 2 : 1;
        t->f[s] += overlapped(ag, copy, t->f[s], n + 1);
        in_pass += passes * overlapped(ag, copy, t->b[s], n + 1);
    }
    return in_pass;
}

static void fill_stages(const train_config *c, const train_memory *tm, const plan_calibration *cal,
                        plan_time *p, stage_table *t) {
    const int S = t->cfg.p * t->cfg.v;
    const gpt_recompute rc = train_config_recompute(c);
    const plan_layer_time *l = &p->layer;
    const double comm_layer = l->tp_comm + l->cp_comm + l->ep_comm;
    for (int s = 0; s < S; s++) {
        int r, ch;
        pp_stage_owner(&t->cfg, s, &r, &ch);
        const int n = t->layers[s];
        const bool some = rc.granularity == GPT_RECOMPUTE_FULL && rc.method == GPT_RECOMPUTE_BLOCK;
        const int again = some && rc.num_layers < n ? rc.num_layers : n;
        t->f[s] = n * l->forward + (s == 0 ? p->embedding : 0) + (s == S - 1 ? p->head_forward : 0);
        t->b[s] = n * l->backward + again * l->recompute + (s == S - 1 ? p->head_backward : 0);
        t->w[s] = n * l->backward_weight + (s == S - 1 ? p->head_backward / 2 : 0);
        const double in_pass = zero_in_pass(c, tm, cal, t, s, r);
        t->b[s] += in_pass;
        p->zero_in_pass = fmax(p->zero_in_pass, in_pass);
        p->stage_forward_max = fmax(p->stage_forward_max, t->f[s]);
        p->stage_backward_max = fmax(p->stage_backward_max, t->b[s]);
        t->rank_fwd[r] += t->f[s];
        t->rank_bwd[r] += t->b[s];
        t->rank_comm[r] += c->num_microbatches * (n * 2 * comm_layer + in_pass);
    }
}

/* The schedule played with the table's costs: pipeline, busy, bubble, comm_on_path. */
static void simulate(const train_config *c, plan_time *p, const stage_table *t) {
    pp_costs costs = pp_costs_unit();
    costs.forward_per_stage = t->f;
    costs.backward_per_stage = t->b;
    costs.weight_per_stage = pp_splits_backward(t->cfg.kind) ? t->w : NULL;
    costs.p2p_latency = t->cfg.p > 1 ? p->p2p : 0;
    pp_sim sim;
    char msg[512];
    if (!pp_simulate_config(&t->cfg, &costs, &sim, msg, sizeof msg))
        die("trident plan: schedule %s deadlocks: %s", c->pipeline_schedule, msg);
    p->pipeline = sim.makespan;
    for (int r = 0; r < t->cfg.p; r++)
        if (sim.ranks[r].busy > p->busy)
            p->busy = sim.ranks[r].busy, p->comm_on_path = t->rank_comm[r];
    p->bubble = p->pipeline - p->busy;
    pp_sim_free(&sim);
}

static stage_table stage_table_make(const train_config *c) {
    stage_table t;
    memset(&t, 0, sizeof t);
    t.cfg = (pp_config){PP_1F1B, c->pipeline_model_parallel_size, c->num_microbatches, c->vpp};
    CHECK(pp_kind_parse(c->pipeline_schedule, &t.cfg.kind), "plan: a checked schedule");
    const int S = t.cfg.p * t.cfg.v, P = t.cfg.p;
    t.layers = train_config_stage_layers(c, S, "trident plan");
    if (!t.layers) {
        t.layers = callocCheck((size_t)S, sizeof *t.layers);
        for (int s = 0; s < S; s++) t.layers[s] = c->num_layers / S;
    }
    t.rank_layers = callocCheck((size_t)P, sizeof *t.rank_layers);
    t.f = callocCheck((size_t)(3 * S + 3 * P), sizeof *t.f);
    t.b = t.f + S, t.w = t.f + 2 * S;
    t.rank_fwd = t.f + 3 * S, t.rank_bwd = t.rank_fwd + P, t.rank_comm = t.rank_bwd + P;
    for (int s = 0; s < S; s++) {
        int r, ch;
        pp_stage_owner(&t.cfg, s, &r, &ch);
        t.rank_layers[r] += t.layers[s];
    }
    return t;
}

static void stage_table_free(stage_table *t) {
    free(t->layers);
    free(t->rank_layers);
    free(t->f);
}

/* The collectives after the pipeline and the optimizer, the worst pipeline rank's. */
static void after_pipeline(const train_config *c, const train_memory *tm,
                           const plan_calibration *cal, plan_time *p, const double *rank_fwd,
                           const double *rank_bwd) {
    const int g = c->dp * c->context_parallel_size;
    double worst = 0;
    for (int r = 0; r < c->pipeline_model_parallel_size; r++) {
        double numel, shard;
        rank_params(tm, r, &numel, &shard);
        const double bytes = 4 * numel;
        const plan_link_kind gk = tm->stage == 0 ? PLAN_ALL_REDUCE : PLAN_REDUCE_SCATTER;
        const bool gather = tm->stage == 1 || tm->stage == 2;
        const double grads = tm->stage <= 1 ? group_time(cal, c, PG_DP_CP, gk, g, bytes) : 0;
        const double params = gather ? group_time(cal, c, PG_DP_CP, PLAN_ALL_GATHER, g, bytes) : 0;
        /* overlap: beside the last backward (first forward), one bucket always shows */
        const double buckets = fmax(1, ceil(numel / c->ddp_bucket_size));
        double exposed = grads + params;
        if (c->overlap_grad_reduce && grads > 0)
            exposed += overlapped(grads, group_copy(cal, c, PG_DP_CP, gk, g, bytes), rank_bwd[r],
                                  buckets) -
                       grads;
        if (c->overlap_param_gather && params > 0)
            exposed += overlapped(params, group_copy(cal, c, PG_DP_CP, PLAN_ALL_GATHER, g, bytes),
                                  rank_fwd[r], buckets) -
                       params;
        const double opt = shard / cal->optimizer_per_s;
        if (exposed + opt >= worst) {
            worst = exposed + opt;
            p->dp_comm = grads + params, p->dp_exposed = exposed, p->optimizer = opt;
        }
    }
    const double norm = group_time(cal, c, PLAN_WORLD, PLAN_ALL_REDUCE, c->world_size, 4);
    p->optimizer += norm;
}

plan_time plan_time_predict(const train_config *c, const train_memory *tm,
                            const plan_calibration *cal) {
    plan_time p;
    memset(&p, 0, sizeof p);
    p.layer = layer_time(c, cal);
    ends_time(c, cal, &p);
    stage_table t = stage_table_make(c);
    fill_stages(c, tm, cal, &p, &t);
    simulate(c, &p, &t);
    after_pipeline(c, tm, cal, &p, t.rank_fwd, t.rank_bwd);
    stage_table_free(&t);
    p.step = p.pipeline + p.dp_exposed + p.optimizer;
    p.across = plan_groups_across_hosts(c, cal->ranks_per_node);
    p.tokens_per_s = (double)c->global_batch_size * c->seq_length / p.step;
    return p;
}

void plan_time_explain(const plan_time *p, const train_config *c, FILE *f) {
    const plan_layer_time *l = &p->layer;
    const double ms = 1e3;
    fprintf(f, "one layer, one micro-batch (%d × %d tokens / cp %d), ms:\n", c->micro_batch_size,
            c->seq_length, c->context_parallel_size);
    fprintf(f, "  layer_gemm      %10.4f   qkv, proj, fc, fcproj (MoE: router + experts)\n",
            l->layer_gemm * ms);
    fprintf(f, "  attention_gemm  %10.4f   the attention core: Q·Kᵀ, softmax, A·V\n",
            l->attention_gemm * ms);
    fprintf(f, "  elementwise     %10.4f   LayerNorms, softmax, GELU, residuals\n",
            l->elementwise * ms);
    fprintf(f, "  tp_comm         %10.4f   tensor-parallel collectives (tp %d%s)\n",
            l->tp_comm * ms, c->tensor_model_parallel_size, c->sequence_parallel ? ", SP" : "");
    fprintf(f, "  cp_comm         %10.4f   ring attention's K, V steps (cp %d)\n", l->cp_comm * ms,
            c->context_parallel_size);
    fprintf(f, "  ep_comm         %10.4f   MoE dispatch + combine (ep %d)\n", l->ep_comm * ms,
            c->expert_model_parallel_size);
    if (c->num_experts > 0)
        fprintf(f,
                "  (expert load   %10.2f   the busiest ep rank's tokens ÷ the balanced share: "
                "its experts and all-to-alls)\n",
                l->moe_load);
    fprintf(f, "  trainer         %10.4f   around the kernels (the serial run's factor)\n",
            l->trainer * ms);
    fprintf(f, "  forward         %10.4f\n  backward        %10.4f   (W part %.4f)\n",
            l->forward * ms, l->backward * ms, l->backward_weight * ms);
    fprintf(f, "  recompute       %10.4f   added to a recomputed layer's backward\n",
            l->recompute * ms);
    fprintf(f, "ends: embedding %.4f, head forward %.4f, head backward %.4f, p2p message %.4f ms\n",
            p->embedding * ms, p->head_forward * ms, p->head_backward * ms, p->p2p * ms);
    fprintf(f,
            "slowest virtual stage: forward %.4f, backward %.4f ms (ZeRO-2/3 in the passes "
            "%.4f)\n",
            p->stage_forward_max * ms, p->stage_backward_max * ms, p->zero_in_pass * ms);
    fprintf(f, "pipeline        %10.4f ms   %s, p %d, v %d, m %d (simulated)\n", p->pipeline * ms,
            c->pipeline_schedule, c->pipeline_model_parallel_size, c->vpp, c->num_microbatches);
    fprintf(f, "  busy          %10.4f ms   (communication on the path %.4f)\n", p->busy * ms,
            p->comm_on_path * ms);
    fprintf(f, "  bubble        %10.4f ms\n", p->bubble * ms);
    fprintf(f, "dp_comm         %10.4f ms   over dp %d × cp %d, exposed %.4f\n", p->dp_comm * ms,
            c->dp, c->context_parallel_size, p->dp_exposed * ms);
    fprintf(f, "optimizer       %10.4f ms   AdamW + gradient norm\n", p->optimizer * ms);
    fprintf(f, "step            %10.4f ms   %.0f tokens/s\n", p->step * ms, p->tokens_per_s);
    char across[64];
    if (p->across)
        fprintf(f, "across hosts    %s and the gradient norm: the network's α and β\n",
                plan_groups_across_name(p->across, across, sizeof across));
}
