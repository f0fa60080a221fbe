/* gpt_params.c — the parameter table of a GPT chunk: the configuration's rules, which tensors a
 * chunk holds and how each is cut (tensor parallelism, the experts of an MoE block), where each
 * sits in the process buffer, the serial index of every local element, and the initial values
 * (a pure function of the seed and the serial index, so every layout starts as the serial
 * model). The chunk's parallel settings (sequence, context, expert parallelism) are set here too.
 * See gpt.h; the activations' layout is in gpt_layout.c, the forward in gpt.c and gpt_block.c,
 * the backward in gpt_backward.c and gpt_block.c.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "src/core/check.h"
#include "src/core/checked.h"
#include "src/core/rng.h"
#include "src/cp/zigzag.h"
#include "src/model/gpt.h"
#include "src/model/gpt_internal.h"
#include "src/moe/moe_config.h"
#include "src/runtime/comm.h"

int gpt_padded_vocab(int real_vocab, int divisible_by, int tp_size) {
    int m; /* checked: 65536 × 65536 as int is 0, and / 0 is SIGFPE */
    if (!checked_mul_int(divisible_by, tp_size, &m) || m < 1) return -1;
    const int64_t padded = ((int64_t)real_vocab + m - 1) / m * m; /* below 2^62 */
    return padded <= INT_MAX ? (int)padded : -1;
}

bool gpt_config_check(const gpt_config *cfg, int tp, char *err, size_t errlen) {
    if (cfg->num_layers < 1) {
        snprintf(err, errlen, "--num-layers %d must be at least 1", cfg->num_layers);
        return false;
    }
    if (cfg->hidden < 1 || cfg->num_heads < 1 || cfg->seq_len < 1) {
        snprintf(
            err, errlen,
            "--hidden-size %d, --num-attention-heads %d and --seq-length %d must all be at least 1",
            cfg->hidden, cfg->num_heads, cfg->seq_len);
        return false;
    }
    if (cfg->hidden % cfg->num_heads != 0) {
        snprintf(err, errlen, "--hidden-size %d is not divisible by --num-attention-heads %d",
                 cfg->hidden, cfg->num_heads);
        return false;
    }
    if (cfg->num_heads % tp != 0) {
        snprintf(err, errlen,
                 "--num-attention-heads %d is not divisible by --tensor-model-parallel-size %d "
                 "(each rank holds whole heads)",
                 cfg->num_heads, tp);
        return false;
    }
    const moe_config moe = {
        cfg->num_experts, cfg->moe_topk, cfg->moe_aux_loss_coeff, cfg->moe_capacity_factor, 1, 0};
    if (cfg->num_experts != 0 && !moe_config_check(&moe, err, errlen)) return false; /* 0: dense */
    if (cfg->vocab_size % tp != 0 || cfg->vocab_size < cfg->real_vocab) {
        snprintf(err, errlen,
                 "padded vocabulary %d is not a multiple of --tensor-model-parallel-size %d "
                 "covering %d tokens",
                 cfg->vocab_size, tp, cfg->real_vocab);
        return false;
    }
    return true;
}

static void add_param(gpt_chunk *c, size_t *off, const char *name, int kind, int layer,
                      size_t full_rows, size_t full_cols, gpt_split split, bool decay) {
    CHECK(c->nparams < GPT_MAX_PARAMS, "too many parameter tensors: raise GPT_MAX_PARAMS");
    gpt_param *p = &c->params[c->nparams++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->kind = kind;
    p->layer = layer;
    p->full_rows = full_rows;
    p->full_cols = full_cols;
    p->split = split;
    size_t tp = (size_t)c->shard.tp_size, ep = c->shard.ep_size > 0 ? (size_t)c->shard.ep_size : 1;
    p->rows = (split == SPLIT_ROWS || split == SPLIT_QKV) ? full_rows / tp
              : split == SPLIT_EXPERTS                    ? full_rows / ep
                                                          : full_rows;
    p->cols = split == SPLIT_COLS ? full_cols / tp : full_cols;
    p->numel = p->rows * p->cols;
    p->offset = *off;
    p->decay = decay;
    *off += p->numel;
}

void gpt_chunk_init(gpt_chunk *c, const gpt_config *cfg, const gpt_shard *shard,
                    size_t param_offset) {
    memset(c, 0, sizeof *c);
    c->cfg = *cfg;
    c->shard = *shard;
    c->param_offset = param_offset;
    const size_t C = (size_t)cfg->hidden, V = (size_t)cfg->vocab_size, T = (size_t)cfg->seq_len;
    const size_t tp = (size_t)shard->tp_size;
    c->Cl = C / tp;
    c->NHl = (size_t)cfg->num_heads / tp;
    c->Vl = V / tp;
    c->v_start = (int64_t)(c->Vl * (size_t)shard->tp_rank);
    size_t off = param_offset;
    char name[40];
    /* MoE: the experts' MLP tensors stacked (E of them in the serial model), then the router */
    const bool moe = cfg->num_experts > 0;
    const size_t E = moe ? (size_t)cfg->num_experts : 1;
    const gpt_split mlp_rows = moe ? SPLIT_EXPERTS : SPLIT_ROWS;
    const gpt_split mlp_cols = moe ? SPLIT_EXPERTS : SPLIT_COLS;
    const gpt_split mlp_bias = moe ? SPLIT_EXPERTS : SPLIT_NONE;
    c->block_tensors = moe ? BLOCK_KINDS + 1 : BLOCK_KINDS;
    char err[256];
    const moe_config experts = chunk_moe_config(c); /* this shard's experts, by the one rule set */
    CHECK(!moe || moe_config_check(&experts, err, sizeof err), err);
    if (shard->has_embedding || shard->has_head)
        add_param(c, &off, "wte", GPT_WTE, -1, V, C, SPLIT_ROWS, true);
    if (shard->has_embedding) add_param(c, &off, "wpe", GPT_WPE, -1, T, C, SPLIT_NONE, true);
    static const char *k_block_names[BLOCK_KINDS] = {"ln1_w",  "ln1_b",  "qkv_w",    "qkv_b",
                                                     "proj_w", "proj_b", "ln2_w",    "ln2_b",
                                                     "fc_w",   "fc_b",   "fcproj_w", "fcproj_b"};
    for (int l = shard->layer_begin; l < shard->layer_end; l++) {
        for (int k = 0; k < BLOCK_KINDS; k++) {
            int kind = GPT_LN1_W + k;
            snprintf(name, sizeof name, "blocks.%d.%s", l, k_block_names[k]);
            switch (kind) {
            case GPT_QKV_W: add_param(c, &off, name, kind, l, 3 * C, C, SPLIT_QKV, true); break;
            case GPT_QKV_B: add_param(c, &off, name, kind, l, 3 * C, 1, SPLIT_QKV, false); break;
            case GPT_PROJ_W: add_param(c, &off, name, kind, l, C, C, SPLIT_COLS, true); break;
            case GPT_FC_W: add_param(c, &off, name, kind, l, E * 4 * C, C, mlp_rows, true); break;
            case GPT_FC_B: add_param(c, &off, name, kind, l, E * 4 * C, 1, mlp_rows, false); break;
            case GPT_FCPROJ_W:
                add_param(c, &off, name, kind, l, E * C, 4 * C, mlp_cols, true);
                break;
            case GPT_FCPROJ_B: add_param(c, &off, name, kind, l, E * C, 1, mlp_bias, false); break;
            default: add_param(c, &off, name, kind, l, C, 1, SPLIT_NONE, false); break;
            }
        }
        if (moe) {
            snprintf(name, sizeof name, "blocks.%d.router_w", l);
            add_param(c, &off, name, GPT_ROUTER_W, l, E, C, SPLIT_NONE, true);
        }
    }
    if (shard->has_head) {
        add_param(c, &off, "lnf_w", GPT_LNF_W, -1, C, 1, SPLIT_NONE, false);
        add_param(c, &off, "lnf_b", GPT_LNF_B, -1, C, 1, SPLIT_NONE, false);
    }
    c->num_elements = off - param_offset;
}

void gpt_chunk_set_sequence_parallel(gpt_chunk *c, bool on) {
    const int tp = c->shard.tp_size;
    c->features.sequence_parallel = on && tp > 1;
    CHECK(!c->features.sequence_parallel || c->cfg.seq_len % tp == 0,
          "sequence parallelism needs the sequence length divisible by the tensor-parallel size "
          "(train's configuration check refuses it, naming the flags)");
    /* The replicated tensors whose gradient each rank now sums over its own positions only:
     * the LayerNorms' (see SEQUENCE PARALLELISM in gpt.h for why no other). */
    for (int i = 0; i < c->nparams; i++) {
        const int k = c->params[i].kind;
        const bool norm = k == GPT_LN1_W || k == GPT_LN1_B || k == GPT_LN2_W || k == GPT_LN2_B ||
                          k == GPT_LNF_W || k == GPT_LNF_B;
        /* MoE: each TP rank routes only its own positions through the experts */
        const bool moe = c->params[i].split == SPLIT_EXPERTS || k == GPT_ROUTER_W;
        c->params[i].sequence_parallel = c->features.sequence_parallel && (norm || moe);
    }
}

void gpt_chunk_set_context_parallel_layout(gpt_chunk *c, int size, int rank) {
    CHECK(size >= 1 && rank >= 0 && rank < size, "context parallelism: a rank of the cp group");
    c->features.cp_size = size;
    c->features.cp_rank = size > 1 ? rank : 0;
    char err[256];
    if (size > 1 && !cp_check((size_t)c->cfg.seq_len, size, err, sizeof err))
        die("context parallelism: %s", err); /* train's configuration check refuses it first */
}

void gpt_chunk_set_context_parallel(gpt_chunk *c, comm_group *cp) {
    c->features.cp = cp && comm_size(cp) > 1 ? cp : NULL;
    gpt_chunk_set_context_parallel_layout(c, c->features.cp ? comm_size(cp) : 1,
                                          c->features.cp ? comm_rank(cp) : 0);
}

void gpt_chunk_set_expert_parallel(gpt_chunk *c, comm_group *ep) {
    const int size = c->shard.ep_size > 0 ? c->shard.ep_size : 1;
    char err[256];
    const moe_config experts = chunk_moe_config(c); /* dense with ep > 1: "needs experts" */
    CHECK(!(chunk_is_moe(c) || size > 1) || moe_config_check(&experts, err, sizeof err), err);
    CHECK((ep ? comm_size(ep) : 1) == size && (ep ? comm_rank(ep) : 0) == c->shard.ep_rank,
          "the expert-parallel group is the one the chunk's experts were cut for");
    c->features.ep = ep;
}

size_t gpt_residual_rows(const gpt_chunk *c, int B, int T) {
    return (size_t)B * seq_local(c, (size_t)T);
}

bool gpt_param_starts_unit(const gpt_param *p) {
    return p->kind == GPT_WTE || p->kind == GPT_WPE || p->kind == GPT_LN1_W || p->kind == GPT_LNF_W;
}

const gpt_param *gpt_chunk_find(const gpt_chunk *c, int kind, int layer) {
    for (int i = 0; i < c->nparams; i++)
        if (c->params[i].kind == kind && c->params[i].layer == layer) return &c->params[i];
    return NULL;
}

size_t gpt_param_serial_index(const gpt_param *p, const gpt_shard *shard, size_t i) {
    size_t r = i / p->cols, col = i % p->cols;
    size_t tr = (size_t)shard->tp_rank;
    switch (p->split) {
    case SPLIT_NONE: return i;
    case SPLIT_EXPERTS: return (size_t)shard->ep_rank * p->numel + i; /* whole experts */
    case SPLIT_ROWS: return (tr * p->rows + r) * p->full_cols + col;
    case SPLIT_COLS: return r * p->full_cols + tr * p->cols + col;
    case SPLIT_QKV: {
        /* local rows are [Q_local; K_local; V_local], each rows/3 long */
        size_t part = p->rows / 3, which = r / part, within = r % part;
        size_t full_part = p->full_rows / 3;
        return (which * full_part + tr * part + within) * p->full_cols + col;
    }
    }
    return i;
}

float gpt_init_value(const gpt_config *cfg, uint64_t seed, int kind, int layer,
                     size_t serial_index) {
    uint64_t stream = (uint64_t)kind * 100003u + (uint64_t)(layer + 1);
    switch (kind) {
    case GPT_LN1_W:
    case GPT_LN2_W:
    case GPT_LNF_W: return 1.0f;
    case GPT_LN1_B:
    case GPT_LN2_B:
    case GPT_LNF_B:
    case GPT_QKV_B:
    case GPT_PROJ_B:
    case GPT_FC_B:
    case GPT_FCPROJ_B: return 0.0f;
    case GPT_PROJ_W:
    case GPT_FCPROJ_W: /* residual projections scaled as in GPT-2 */
        return 0.02f / sqrtf(2.0f * (float)cfg->num_layers) *
               rng_normal(seed, stream, serial_index);
    default: return 0.02f * rng_normal(seed, stream, serial_index);
    }
}

void gpt_chunk_init_params(const gpt_chunk *c, float *params, uint64_t seed) {
    for (int i = 0; i < c->nparams; i++) {
        const gpt_param *p = &c->params[i];
        float *w = params + p->offset;
        for (size_t k = 0; k < p->numel; k++)
            w[k] = gpt_init_value(&c->cfg, seed, p->kind, p->layer,
                                  gpt_param_serial_index(p, &c->shard, k));
    }
}
