/* memory_plan.c — the ZeRO memory bill per rank (see memory_plan.h for the formulas). */
#include "src/zero/memory_plan.h"

#include "src/core/check.h"

zero_memory_plan zero_memory_plan_make(size_t psi, int dp, size_t shard_numel, prec_dtype dtype,
                                       int stage) {
    if (dp < 1) die("zero: data-parallel size %d must be at least 1", dp);
    if (stage < 0 || stage > 3) die("zero: ZeRO stage %d is not one of 0, 1, 2, 3", stage);
    if (shard_numel * (size_t)dp < psi)
        die("zero: shards of %zu elements on %d ranks cannot hold %zu parameters", shard_numel, dp,
            psi);
    zero_memory_plan m = {0};
    m.psi = psi;
    m.dp = dp;
    m.shard_numel = shard_numel;
    m.dtype = dtype;
    m.stage = stage;

    bool mixed = dtype != PREC_FP32;
    double P = (double)psi, Nd = (double)dp;
    size_t wb = prec_dtype_bytes(dtype); /* bytes of a param or grad element */
    size_t master_b = mixed ? 4 : 0;     /* fp32 master copy, only in mixed precision */
    size_t adam_b = 8;                   /* m and v, fp32 */

    /* Elements of each kind this rank holds: all Ψ, or one shard when that kind is sharded. */
    size_t n_param = stage >= 3 ? shard_numel : psi;
    size_t n_grad = stage >= 2 ? shard_numel : psi;
    size_t n_optim = stage >= 1 ? shard_numel : psi;
    double f_param = stage >= 3 ? P / Nd : P;
    double f_grad = stage >= 2 ? P / Nd : P;
    double f_optim = stage >= 1 ? P / Nd : P;

    m.param_bytes = wb * n_param;
    m.grad_bytes = wb * n_grad;
    m.master_bytes = master_b * n_optim;
    m.optim_bytes = adam_b * n_optim;
    m.total_bytes = m.param_bytes + m.grad_bytes + m.master_bytes + m.optim_bytes;
    m.formula_param_bytes = (double)wb * f_param;
    m.formula_grad_bytes = (double)wb * f_grad;
    m.formula_master_bytes = (double)master_b * f_optim;
    m.formula_optim_bytes = (double)adam_b * f_optim;
    m.formula_total_bytes = m.formula_param_bytes + m.formula_grad_bytes + m.formula_master_bytes +
                            m.formula_optim_bytes;
    return m;
}

zero_memory_plan zero_memory_plan_of(const zero_ranges *r, prec_dtype dtype, int stage) {
    return zero_memory_plan_make(r->numel, r->dp, r->shard_numel, dtype, stage);
}

/* Bytes in a readable unit (decimal, as the ZeRO paper): "31.41 GB", "12.3 kB", "96 B". */
static const char *human(double bytes, char *buf, size_t cap) {
    static const char *unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000.0 && u < 4) {
        bytes /= 1000.0;
        u++;
    }
    if (u == 0) snprintf(buf, cap, "%.0f B", bytes);
    else snprintf(buf, cap, "%.2f %s", bytes, unit[u]);
    return buf;
}

static const char *stage_name(int stage) { return zero_stage_name(stage); }

const char *zero_stage_name(int stage) {
    static const char *n[] = {"no ZeRO", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
    CHECK(stage >= 0 && stage <= 3, "a ZeRO stage is 0, 1, 2 or 3");
    return n[stage];
}

const char *zero_stage_strategy(int stage) {
    static const char *n[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};
    CHECK(stage >= 0 && stage <= 3, "a ZeRO stage is 0, 1, 2 or 3");
    return n[stage];
}

const char *zero_stage_sharded(int stage) {
    static const char *n[] = {
        "nothing sharded: every DP rank holds all parameters, gradients and optimizer state; "
        "gradients all-reduced once per step",
        "Adam m, v and the fp32 master sharded over DP; gradients reduce-scattered and "
        "parameters all-gathered once per step; parameters and gradients whole",
        "Adam m, v, master and gradients sharded over DP; gradients reduce-scattered after each "
        "micro-batch's backward; parameters whole, all-gathered once per step",
        "parameters, gradients, Adam m, v and master sharded over DP; each layer's parameters "
        "all-gathered before its forward and again before its backward, gradients "
        "reduce-scattered after it",
    };
    CHECK(stage >= 0 && stage <= 3, "a ZeRO stage is 0, 1, 2 or 3");
    return n[stage];
}

const char *zero_stage_sharded_short(int stage) {
    static const char *n[] = {"nothing sharded", "optimizer state sharded",
                              "optimizer state and gradients sharded",
                              "optimizer state, gradients and parameters sharded"};
    CHECK(stage >= 0 && stage <= 3, "a ZeRO stage is 0, 1, 2 or 3");
    return n[stage];
}

const char *zero_mem_kind_name(zero_mem_kind k) {
    static const char *n[ZERO_MEM_NKINDS] = {
        "parameters",     "gradients",  "master weights", "Adam m+v",     "activations",
        "B->W hand-over", "work space", "p2p buffers",    "grad buckets", "temporary"};
    CHECK(k >= 0 && k < ZERO_MEM_NKINDS, "a zero_mem_kind");
    return n[k];
}

const char *zero_mem_kind_key(zero_mem_kind k) {
    static const char *n[ZERO_MEM_NKINDS] = {"params",      "grads",    "master",     "adam",
                                             "activations", "handover", "work_space", "p2p",
                                             "buckets",     "temporary"};
    CHECK(k >= 0 && k < ZERO_MEM_NKINDS, "a zero_mem_kind");
    return n[k];
}

void zero_memory_rank_model_state(zero_memory_rank *m, size_t numel, size_t padded_numel,
                                  size_t shard_numel, prec_dtype dtype, int stage) {
    if (stage < 0 || stage > 3) die("zero: ZeRO stage %d is not one of 0, 1, 2, 3", stage);
    CHECK(padded_numel >= numel && shard_numel <= padded_numel,
          "a padded buffer holds every element and a shard is part of it");
    /* An unsharded buffer's length: ZeRO-1 pads the model's buffers to its cut; ZeRO-2/3 pad
     * only their shard-sized storage (src/zero/shard_ranges.h, UNITS). */
    const size_t whole = stage == 1 ? padded_numel : numel;
    const size_t f = sizeof(float); /* Trident stores fp32 */
    m->numel = numel;
    m->padded_numel = padded_numel;
    m->shard_numel = shard_numel;
    m->bytes[ZERO_MEM_PARAMS] = f * (stage >= 3 ? shard_numel : whole);
    m->bytes[ZERO_MEM_GRADS] = f * (stage >= 2 ? shard_numel : whole);
    const size_t state = stage >= 1 ? shard_numel : numel;
    m->bytes[ZERO_MEM_MASTER] = dtype == PREC_FP32 ? 0 : f * state;
    m->bytes[ZERO_MEM_ADAM] = 2 * f * state;
}

size_t zero_memory_rank_sum(zero_memory_rank *m) {
    m->total = 0;
    for (int k = 0; k < ZERO_MEM_NKINDS; k++) m->total += m->bytes[k];
    return m->total;
}

const char *zero_memory_plan_summary(const zero_memory_plan *m, char *buf, size_t cap) {
    char t[32], p[32], g[32], w[32], o[32];
    if (m->dtype == PREC_FP32)
        snprintf(buf, cap, "%s, fp32, dp %d: %s per rank (params %s + grads %s + Adam m,v %s)",
                 stage_name(m->stage), m->dp, human((double)m->total_bytes, t, sizeof t),
                 human((double)m->param_bytes, p, sizeof p),
                 human((double)m->grad_bytes, g, sizeof g),
                 human((double)m->optim_bytes, o, sizeof o));
    else
        snprintf(
            buf, cap, "%s, %s, dp %d: %s per rank (params %s + grads %s + master %s + Adam m,v %s)",
            stage_name(m->stage), prec_dtype_name(m->dtype), m->dp,
            human((double)m->total_bytes, t, sizeof t), human((double)m->param_bytes, p, sizeof p),
            human((double)m->grad_bytes, g, sizeof g), human((double)m->master_bytes, w, sizeof w),
            human((double)m->optim_bytes, o, sizeof o));
    return buf;
}

void zero_memory_plan_print(FILE *f, const zero_memory_plan *m) {
    char a[32], b[32];
    bool mixed = m->dtype != PREC_FP32;
    fprintf(f, "memory per rank: psi = %zu parameters, dp = %d, %s%s, %s (shard %zu elements)\n",
            m->psi, m->dp, prec_dtype_name(m->dtype), mixed ? " mixed precision" : "",
            stage_name(m->stage), m->shard_numel);
    fprintf(f, "  %-16s %14s %14s\n", "", "actual", "formula");
    struct {
        const char *name;
        size_t actual;
        double formula;
    } rows[] = {
        {"parameters", m->param_bytes, m->formula_param_bytes},
        {"gradients", m->grad_bytes, m->formula_grad_bytes},
        {"fp32 master", m->master_bytes, m->formula_master_bytes},
        {"Adam m + v", m->optim_bytes, m->formula_optim_bytes},
        {"total", m->total_bytes, m->formula_total_bytes},
    };
    for (int i = 0; i < 5; i++) {
        if (i == 2 && !mixed) continue;
        fprintf(f, "  %-16s %14s %14s\n", rows[i].name, human((double)rows[i].actual, a, sizeof a),
                human(rows[i].formula, b, sizeof b));
    }
}

const char *zero_bytes_text(double bytes, char *buf, size_t cap) {
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 5) {
        bytes /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, cap, "%.0f B", bytes);
    else
        snprintf(buf, cap,
                 bytes < 10    ? "%.2f %s"
                 : bytes < 100 ? "%.1f %s"
                               : "%.0f %s",
                 bytes, unit[u]);
    return buf;
}
