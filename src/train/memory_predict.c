/* memory_predict.c — see memory_predict.h. One rank's bill is built from what trainer_create
 * would build, without allocating it: the chunks' parameter tables (gpt_chunk_init), their
 * ZeRO layout (zero_ranges_build), the schedule's plan (pp_rank_plan_build) and the sizes the
 * model's layout code gives (gpt_*_bytes_of). */
#include "src/train/memory_predict.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/cp/ring_attention.h"
#include "src/device/device.h"
#include "src/model/gpt.h"
#include "src/model/local_model.h"
#include "src/pp/schedule.h"
#include "src/runtime/groups.h"
#include "src/zero/fsdp.h"
#include "src/zero/shard_ranges.h"


static size_t round16(size_t n) {
    return (n + 15) & ~(size_t)15;
} /* gpt_layout.c's 64-byte views */

/* Where a rank sits: the coordinates its chunks depend on. */
typedef struct {
    int tp, pp, cp, ep;
} chunk_coord;

/* The micro-batch's sequence length on a rank: T, or T/cp with context parallelism (what
 * trainer_create gives the executor). */
static int local_seq(const train_config *c) { return c->seq_length / c->context_parallel_size; }

/* The chunks of a rank at `at`, as trainer_create makes them: the schedule's placement, the
 * layer partition, this ep rank's experts, recomputation, sequence and context parallelism
 * (the cp sizes without a group: gpt_chunk_set_context_parallel_layout). (v) chunks, free()
 * them. */
static gpt_chunk *make_chunks(const train_config *c, const pp_config *pc, chunk_coord at,
                              const char *who) {
    const gpt_config g = train_config_model(c);
    const int S = pc->p * pc->v;
    int *stage_layers = train_config_stage_layers(c, S, who);
    int *begin = mallocCheck(sizeof(int) * (size_t)(S + 1));
    char err[256];
    if (!local_model_partition(c->num_layers, S, stage_layers, begin, err, sizeof err))
        die("%s: %s", who, err);
    const gpt_recompute rc = train_config_recompute(c);
    gpt_chunk *ch = callocCheck((size_t)pc->v, sizeof *ch);
    size_t off = 0;
    for (int k = 0; k < pc->v; k++) {
        const int s = pp_stage(pc, at.pp, k);
        const gpt_shard sh = {.tp_size = c->tensor_model_parallel_size,
                              .tp_rank = at.tp,
                              .layer_begin = begin[s],
                              .layer_end = begin[s + 1],
                              .has_embedding = s == 0,
                              .has_head = s == S - 1,
                              .ep_size = c->expert_model_parallel_size,
                              .ep_rank = at.ep};
        gpt_chunk_init(&ch[k], &g, &sh, off);
        off += ch[k].num_elements;
        gpt_chunk_set_recompute(&ch[k], &rc);
        gpt_chunk_set_sequence_parallel(&ch[k], c->sequence_parallel);
        gpt_chunk_set_context_parallel_layout(&ch[k], c->context_parallel_size, at.cp);
    }
    free(begin);
    free(stage_layers);
    return ch;
}

/* The chunks' tensors in buffer order (plist, v·GPT_MAX_PARAMS at most) and their ZeRO
 * layout over `shards` data-parallel ranks, as the distributed optimizer builds it: ZeRO-2/3
 * cut unit by unit by zero_fsdp's own code, the others the whole buffer. */
static zero_ranges *make_ranges(const gpt_chunk *ch, int v, int shards, size_t bucket, int stage,
                                const gpt_param **plist) {
    int n = 0;
    for (int k = 0; k < v; k++)
        for (int i = 0; i < ch[k].nparams; i++) plist[n++] = &ch[k].params[i];
    if (stage >= 2) return zero_fsdp_ranges_of(plist, NULL, n, shards, ZERO_SHARD_ALIGN);
    zero_param *zp = callocCheck((size_t)(n ? n : 1), sizeof *zp);
    for (int i = 0; i < n; i++)
        zp[i] = (zero_param){plist[i]->name, plist[i]->numel, plist[i]->decay, false};
    zero_ranges *r = zero_ranges_build(zp, n, shards, ZERO_SHARD_ALIGN, bucket);
    free(zp);
    return r;
}

/* The largest temporary buffer of a step (memory_predict.h): the tensor-parallel layers', the
 * optimizer's packed sequence-parallel gradients of this DP rank's shard (with ZeRO-1 and expert
 * parallelism: of its dense shard, then of its expert shard `xshard` of `xshards`, one after
 * the other — an MoE block's experts and router are sequence-parallel tensors), or ring
 * attention's scratch (context parallelism; never at once with a layer's: each is given back
 * before the next layer runs). */
static size_t temporary_bytes(const train_config *c, const zero_ranges *r, const gpt_param **plist,
                              int shard, int xshards, int xshard) {
    const size_t tp = (size_t)c->tensor_model_parallel_size;
    const size_t B = (size_t)c->micro_batch_size, T = (size_t)local_seq(c);
    const size_t NH = (size_t)c->num_attention_heads, HS = (size_t)c->hidden_size / NH;
    const int cp = c->context_parallel_size;
    const size_t ring = cp > 1 ? ring_attention_scratch_bytes(B, T, NH / tp, HS, cp) : 0;
    if (tp == 1) return ring;
    const size_t NC = B * T * (size_t)c->hidden_size;
    if (!c->sequence_parallel) return (NC * sizeof(float) > ring ? NC * sizeof(float) : ring);
    const size_t layer = (B > 1 ? 2 : 1) * NC + NC / tp;
    size_t packed = 0, experts = 0;
    const zero_shard *sh = &r->shards[shard];
    for (int k = 0; k < sh->n_pieces; k++) {
        const gpt_param *p = plist[sh->pieces[k].param];
        if (p->sequence_parallel && !(xshards > 0 && p->split == SPLIT_EXPERTS))
            packed += sh->pieces[k].local_end - sh->pieces[k].local_start;
    }
    if (xshards > 0) { /* the expert shard: the real elements of its slice of the packed experts */
        for (int i = 0; i < r->n_params; i++)
            if (plist[i]->split == SPLIT_EXPERTS) experts += plist[i]->numel;
        const size_t xs = zero_padded_numel(experts, xshards, ZERO_SHARD_ALIGN) / (size_t)xshards;
        const size_t from = (size_t)xshard * xs;
        experts = experts > from ? (experts - from < xs ? experts - from : xs) : 0;
    }
    if (experts > packed) packed = experts;
    const size_t most = (layer > packed ? layer : packed) * sizeof(float);
    return most > ring ? most : ring; /* with context parallelism too */
}

/* ZeRO-1 with expert parallelism (src/zero/expert_shard.h): the expert tensors
 * packed end to end and padded for `xshards` expert-data-parallel shards — a buffer of that
 * length (gradients, then parameters) and, per shard, Adam m and v and the fp32 master. */
static void expert_state_bill(zero_memory_rank *m, const gpt_param *const *plist, int n,
                              int xshards, prec_dtype dt) {
    size_t experts = 0;
    for (int i = 0; i < n; i++)
        if (plist[i]->split == SPLIT_EXPERTS) experts += plist[i]->numel;
    const size_t padded = zero_padded_numel(experts, xshards, ZERO_SHARD_ALIGN);
    const size_t shard = padded / (size_t)xshards, f = sizeof(float);
    m->bytes[ZERO_MEM_GRADS] += f * padded;
    m->bytes[ZERO_MEM_MASTER] += dt == PREC_FP32 ? 0 : f * shard;
    m->bytes[ZERO_MEM_ADAM] += 2 * f * shard;
}

/* Everything of (tp_rank, pp_rank) that does not depend on the DP rank: activations by
 * schedule, hand-overs, work spaces, messages, and the model state of the ZeRO layout
 * (xshards > 0: ZeRO-1 with expert parallelism, the experts sharded over that many ranks). */
static void chunk_bill(zero_memory_rank *m, const train_config *c, const pp_config *pc,
                       const gpt_chunk *ch, const zero_ranges *r, int pp_rank, int stage,
                       const gpt_param *const *plist, int xshards) {
    const int B = c->micro_batch_size, T = local_seq(c);
    pp_rank_plan plan;
    pp_rank_plan_build(pc, pp_rank, &plan);
    pp_plan_holds h = pp_plan_holds_of(&plan, pc->v);
    const size_t msg = gpt_residual_rows(&ch[0], B, T) * (size_t)c->hidden_size * sizeof(float);
    m->bytes[ZERO_MEM_P2P] = (3 + (size_t)h.self_msgs) * msg; /* 2 receive + 1 send buffers */
    m->sets = h.sets;
    /* a set's four parts (gpt.h), each held until the last pass that reads it, in one pool of
     * blocks by size across the rank's chunks (pp_pool_bytes) */
    pp_part *parts = callocCheck((size_t)pc->v * GPT_ACTS_PARTS, sizeof *parts);
    size_t *set_of = callocCheck((size_t)pc->v, sizeof *set_of); /* a whole set, per chunk */
    for (int k = 0; k < pc->v; k++) {
        size_t bytes[GPT_ACTS_PARTS];
        set_of[k] = gpt_acts_parts_bytes_of(&ch[k], B, T, bytes);
        for (int j = 0; j < GPT_ACTS_PARTS; j++)
            parts[k * GPT_ACTS_PARTS + j] = (pp_part){bytes[j],
                                                      gpt_acts_part_read_by_w((gpt_acts_part)j)};
    }
    m->bytes[ZERO_MEM_ACTIVATIONS] += pp_pool_bytes(&plan, pc->v, GPT_ACTS_PARTS, parts);
    for (int k = 0; k < pc->v; k++) {
        const size_t set = set_of[k];
        size_t own = set; /* the MoE layers' own state: with each set, per chunk */
        for (int j = 0; j < GPT_ACTS_PARTS; j++) own -= parts[k * GPT_ACTS_PARTS + j].bytes;
        m->set_bytes += set;
        m->sets_kept += h.acts[k];
        m->bytes[ZERO_MEM_ACTIVATIONS] += (size_t)h.acts[k] * own;
        if (h.handover[k])
            m->bytes[ZERO_MEM_HANDOVER] += (size_t)h.handover[k] * gpt_wgrad_bytes_of(&ch[k], B, T);
        m->bytes[ZERO_MEM_WORK_SPACE] += gpt_scratch_bytes_of(&ch[k], B, T);
        if (ch[k].shard.has_head) {
            m->head_w_bytes = parts[k * GPT_ACTS_PARTS + GPT_ACTS_ENDS_W].bytes;
            m->head_bytes = m->head_w_bytes + parts[k * GPT_ACTS_PARTS + GPT_ACTS_ENDS_B].bytes;
        }
        if (ch[k].shard.has_embedding && !ch[k].shard.has_head)
            m->tokens_bytes = parts[k * GPT_ACTS_PARTS + GPT_ACTS_ENDS_W].bytes;
        if (ch[k].shard.has_head) /* logits in each B part held, dlogits in each hand-over */
            m->logits_bytes = round16((size_t)B * (size_t)T * ch[k].Vl) * sizeof(float) *
                              (size_t)(h.acts_b[k] + h.handover[k] + 1);
    }
    pp_plan_holds_free(&h);
    pp_rank_plan_free(&plan);
    free(parts);
    free(set_of);
    /* bf16: the device's operand scratch for the largest linear product (trainer_create) */
    m->bytes[ZERO_MEM_WORK_SPACE] += device_matmul_scratch_bytes(
        train_config_matmul_dtype(c), gpt_matmul_operand_elems(ch, pc->v, B, T));
    const prec_dtype dt = c->bf16 ? PREC_BF16 : c->fp16 ? PREC_FP16 : PREC_FP32;
    zero_memory_rank_model_state(m, r->numel, r->padded_numel, r->shard_numel, dt, stage);
    if (xshards > 0) expert_state_bill(m, plist, r->n_params, xshards, dt);
    const bool overlapped = stage == 1 && c->overlap_grad_reduce && c->dp > 1;
    m->bytes[ZERO_MEM_BUCKETS] = overlapped ? r->shard_numel * sizeof(float) : 0;
    if (stage >= 2) m->bytes[ZERO_MEM_BUCKETS] = zero_fsdp_work_bytes(r, stage);
}

train_memory *train_memory_predict(const train_config *c, int stage, const char *who) {
    char err[512];
    if (stage < 0 || stage > 3) die("%s: ZeRO stage %d is not one of 0, 1, 2, 3", who, stage);
    pg_layout l;
    if (!pg_layout_make(&l, c->world_size, c->tensor_model_parallel_size, c->context_parallel_size,
                        c->expert_model_parallel_size, c->pipeline_model_parallel_size, c->vpp,
                        c->rank_order, err, sizeof err))
        die("%s: %s", who, err);
    pp_config pc = {PP_1F1B, c->pipeline_model_parallel_size, c->num_microbatches, c->vpp};
    CHECK(pp_kind_parse(c->pipeline_schedule, &pc.kind), "schedule checked by the flag parser");
    pp_config_check(&pc, who);
    l.v_placement = pp_v_placement(pc.kind);
    train_memory *tm = callocCheck(1, sizeof *tm);
    tm->world = c->world_size;
    tm->stage = stage;
    tm->ranks = callocCheck((size_t)tm->world, sizeof *tm->ranks);
    const gpt_param **plist = mallocCheck(sizeof *plist * (size_t)pc.v * GPT_MAX_PARAMS);
    /* ZeRO shards over the ranks that average the dense gradients: dp, or dp × cp (trainer) */
    const pg_kind shard_kind = l.cp > 1 ? PG_DP_CP : PG_DP;
    const int shards = stage >= 1 ? pg_group_size(&l, shard_kind) : 1;
    /* with expert parallelism, ZeRO-1 shards the experts over edp (× cp): the same experts */
    const int xshards = stage == 1 && l.ep > 1 ? pg_group_size(&l, l.cp > 1 ? PG_EDP_CP : PG_EDP)
                                               : 0;
    /* What a rank holds depends on its tp, pp and ep coordinates only (cp and the rest of dp
     * change which positions and sequences, not how many): one bill per (tp, pp, ep) */
    for (int pr = 0; pr < l.pp; pr++)
        for (int tr = 0; tr < l.tp; tr++)
            for (int e = 0; e < l.ep; e++) {
                gpt_chunk *ch = make_chunks(c, &pc, (chunk_coord){tr, pr, 0, e}, who);
                zero_ranges *r = make_ranges(ch, pc.v, shards, (size_t)c->ddp_bucket_size, stage,
                                             plist);
                zero_memory_rank base = {0};
                chunk_bill(&base, c, &pc, ch, r, pr, stage, plist, xshards);
                for (int cr = 0; cr < l.cp; cr++)
                    for (int d = e; d < l.dp; d += l.ep) { /* the dp ranks of ep rank e */
                        const pg_coord at = {.tp = tr, .pp = pr, .dp = d, .cp = cr};
                        const int rank = pg_rank_of(&l, at);
                        zero_memory_rank *m = &tm->ranks[rank];
                        *m = base;
                        m->rank = rank, m->tp_rank = tr, m->pp_rank = pr, m->dp_rank = d;
                        m->cp_rank = cr, m->ep_rank = e;
                        /* its place in the dp (or dp_cp: cp fastest) group: its ZeRO shard */
                        const int shard = stage >= 1 ? cr + l.cp * d : 0;
                        /* its expert shard: its place in edp × cp (cp fastest) */
                        const int xshard = cr + l.cp * (d / l.ep);
                        m->bytes[ZERO_MEM_TEMPORARY] = temporary_bytes(c, r, plist, shard, xshards,
                                                                       xshard);
                        zero_memory_rank_sum(m);
                    }
                zero_ranges_free(r);
                free(ch);
            }
    free(plist);
    return tm;
}

void train_memory_free(train_memory *m) {
    if (!m) return;
    free(m->ranks);
    free(m);
}

int train_memory_largest(const train_memory *m) {
    int best = 0;
    for (int k = 1; k < m->world; k++)
        if (m->ranks[k].total > m->ranks[best].total) best = k;
    return best;
}

void train_memory_zero_table(const train_memory *m, const train_config *c, int rank,
                             train_memory_zero_row rows[4]) {
    CHECK(rank >= 0 && rank < m->world, "train_memory_zero_table: a global rank");
    const size_t numel = m->ranks[rank].numel;
    const int zdp = train_config_zero_ranks(c);
    const size_t padded = zero_padded_numel(numel, zdp, ZERO_SHARD_ALIGN);
    const size_t shard = padded / (size_t)zdp;
    const prec_dtype dt = c->bf16 ? PREC_BF16 : c->fp16 ? PREC_FP16 : PREC_FP32;
    for (int s = 0; s < 4; s++) {
        zero_memory_rank t = {0};
        zero_memory_rank_model_state(&t, numel, padded, shard, dt, s);
        const zero_memory_plan p = zero_memory_plan_make(numel, zdp, shard, dt, s);
        const double paper[] = {p.formula_param_bytes, p.formula_grad_bytes, p.formula_master_bytes,
                                p.formula_optim_bytes};
        train_memory_zero_row *r = &rows[s];
        memset(r, 0, sizeof *r);
        r->stage = s;
        for (int k = 0; k <= ZERO_MEM_ADAM; k++) {
            r->trident[k] = t.bytes[k];
            r->trident_total += t.bytes[k];
            r->paper[k] = paper[k];
        }
        r->paper_total = p.formula_total_bytes;
    }
}

/* One block's activations as the model lays them out: a chunk of 2 blocks less one of 1
 * (neither with the embedding nor the head), at tensor-parallel rank 0 of t. */
static size_t layer_layout_bytes(const train_config *c, int t, bool sp, gpt_recompute rc) {
    gpt_config g = train_config_model(c);
    g.num_layers = 2;
    g.num_experts = 0; /* the paper's layer: dense (an MoE run's table is its dense twin's) */
    size_t bytes[2];
    gpt_chunk *ch = callocCheck(1, sizeof *ch);
    for (int n = 1; n <= 2; n++) {
        const gpt_shard sh = {.tp_size = t, .layer_begin = 0, .layer_end = n};
        gpt_chunk_init(ch, &g, &sh, 0);
        gpt_chunk_set_recompute(ch, &rc);
        gpt_chunk_set_sequence_parallel(ch, sp);
        bytes[n - 1] = gpt_acts_bytes_of(ch, c->micro_batch_size, c->seq_length);
    }
    free(ch);
    return bytes[1] - bytes[0];
}

void train_memory_activation_table(const train_config *c,
                                   train_memory_layer_row rows[TRAIN_ACT_NROWS]) {
    const double s = c->seq_length, b = c->micro_batch_size, h = c->hidden_size;
    const double a = c->num_attention_heads, t = c->tensor_model_parallel_size;
    const double sbh = s * b * h, sb = s * b;
    const bool sp_ok = c->seq_length % c->tensor_model_parallel_size == 0;
    const int tp = c->tensor_model_parallel_size;
    const gpt_recompute none = {GPT_RECOMPUTE_NONE, GPT_RECOMPUTE_UNIFORM, 0};
    const gpt_recompute sel = {GPT_RECOMPUTE_SELECTIVE, GPT_RECOMPUTE_UNIFORM, 0};
    const gpt_recompute full = {GPT_RECOMPUTE_FULL, GPT_RECOMPUTE_UNIFORM, 1};
    const train_memory_layer_row r[TRAIN_ACT_NROWS] = {
        {"no parallelism", "sbh(34 + 5as/h)", "sbh(64 + 4as/h) + 16sb", sbh * (34 + 5 * a * s / h),
         sbh * (64 + 4 * a * s / h) + 16 * sb, layer_layout_bytes(c, 1, false, none), true},
        {"tensor parallel (TP)", "sbh(10 + 24/t + 5as/(ht))", "sbh(16 + 48/t + 4as/(ht)) + 16sb",
         sbh * (10 + 24 / t + 5 * a * s / (h * t)),
         sbh * (16 + 48 / t + 4 * a * s / (h * t)) + 16 * sb,
         layer_layout_bytes(c, tp, false, none), true},
        {"TP + sequence parallel", "(sbh/t)(34 + 5as/h)", "(sbh/t)(64 + 4as/h) + 16sb/t",
         sbh / t * (34 + 5 * a * s / h), sbh / t * (64 + 4 * a * s / h) + 16 * sb / t,
         sp_ok ? layer_layout_bytes(c, tp, true, none) : 0, sp_ok},
        {"TP + selective recompute", "sbh(10 + 24/t)", "sbh(16 + 48/t) + 16sb", sbh * (10 + 24 / t),
         sbh * (16 + 48 / t) + 16 * sb, layer_layout_bytes(c, tp, false, sel), true},
        {"TP + SP + selective", "34sbh/t", "(64sbh + 16sb)/t", 34 * sbh / t,
         (64 * sbh + 16 * sb) / t, sp_ok ? layer_layout_bytes(c, tp, true, sel) : 0, sp_ok},
        {"full recompute", "2sbh (the layer's input)", "4sbh (the layer's input)", 2 * sbh, 4 * sbh,
         layer_layout_bytes(c, 1, false, full), true},
    };
    memcpy(rows, r, sizeof r);
}
