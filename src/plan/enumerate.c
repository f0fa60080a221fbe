/* enumerate.c — see enumerate.h: the axes, nested, each candidate put to train_config_check. */
#include "src/plan/enumerate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/zero/memory_plan.h"

static const char *const k_schedules[] = {"gpipe", "1f1b", "interleaved",
                                          "zb-h1", "zbv",  "dualpipev"};
static const char *const k_recompute[] = {NULL, "selective", "full"};

/* Keeps c when train accepts it for `world` ranks. */
static void try_add(plan_layouts *out, train_config c, int world) {
    char err[512];
    if (!train_config_check(&c, world, err, sizeof err)) return;
    if (out->n == out->cap) {
        out->cap = out->cap ? 2 * out->cap : 256;
        out->items = realloc(out->items, (size_t)out->cap * sizeof *out->items);
        CHECK(out->items, "plan_enumerate: out of memory");
    }
    out->items[out->n++] = c;
}

/* ZeRO stage, recomputation, sequence parallelism and the overlap flags of one layout. */
static void add_options(plan_layouts *out, const train_config *layout, int world) {
    const bool tp = layout->tensor_model_parallel_size > 1;
    for (int stage = 0; stage < 4; stage++)
        for (int r = 0; r < 3; r++)
            for (int sp = 0; sp <= (tp ? 1 : 0); sp++)
                for (int og = 0; og < 2; og++)
                    for (int opg = 0; opg < 2; opg++) {
                        train_config c = *layout;
                        c.use_distributed_optimizer = stage == 1;
                        c.data_parallel_sharding_strategy = stage >= 2 ? zero_stage_strategy(stage)
                                                                       : NULL;
                        c.recompute_granularity = k_recompute[r];
                        c.recompute_method = r == 2 ? "uniform" : NULL;
                        c.recompute_num_layers = r == 2 ? 1 : 0;
                        c.sequence_parallel = sp;
                        c.overlap_grad_reduce = og;
                        c.overlap_param_gather = opg;
                        try_add(out, c, world);
                    }
}

/* Every schedule (and chunk count) of one tp × cp × ep × pp. */
static void add_schedules(plan_layouts *out, const train_config *layout, int world) {
    const int pp = layout->pipeline_model_parallel_size, L = layout->num_layers;
    for (size_t s = 0; s < sizeof k_schedules / sizeof k_schedules[0]; s++) {
        train_config c = *layout;
        c.pipeline_schedule = k_schedules[s];
        c.num_layers_per_virtual_pipeline_stage = 0;
        if (strcmp(k_schedules[s], "interleaved") != 0) {
            add_options(out, &c, world);
            continue;
        }
        for (int k = 1; pp > 1 && k * pp * 2 <= L; k++) /* k layers per chunk, >= 2 chunks */
            if (L % (k * pp) == 0) {
                c.num_layers_per_virtual_pipeline_stage = k;
                add_options(out, &c, world);
            }
    }
}

void plan_enumerate(const train_config *base, int world, plan_layouts *out) {
    memset(out, 0, sizeof *out);
    train_config b = *base;
    b.predict_only = true;
    b.stage_layers = NULL;
    b.draw_zero = NULL;
    for (int tp = 1; tp <= world; tp++)
        for (int cp = 1; tp * cp <= world; cp++)
            for (int pp = 1; tp * cp * pp <= world; pp++) {
                if (world % (tp * cp * pp)) continue;
                const int dp = world / (tp * cp * pp);
                for (int ep = 1; ep <= dp; ep++) {
                    if (dp % ep || (ep > 1 && b.num_experts <= 0)) continue;
                    train_config c = b;
                    c.tensor_model_parallel_size = tp;
                    c.context_parallel_size = cp;
                    c.pipeline_model_parallel_size = pp;
                    c.expert_model_parallel_size = ep;
                    add_schedules(out, &c, world);
                }
            }
}

void plan_layouts_free(plan_layouts *l) {
    free(l->items);
    memset(l, 0, sizeof *l);
}

/* Appends one flag to buf. */
static void put(char *buf, size_t cap, const char *fmt, const char *word, int value) {
    const size_t n = strlen(buf);
    if (n >= cap) return;
    if (word) snprintf(buf + n, cap - n, fmt, word);
    else snprintf(buf + n, cap - n, fmt, value);
}

void plan_layout_flags(const train_config *c, char *buf, size_t cap) {
    buf[0] = 0;
    if (c->tensor_model_parallel_size > 1)
        put(buf, cap, " --tensor-model-parallel-size %d", NULL, c->tensor_model_parallel_size);
    if (c->context_parallel_size > 1)
        put(buf, cap, " --context-parallel-size %d", NULL, c->context_parallel_size);
    if (c->expert_model_parallel_size > 1)
        put(buf, cap, " --expert-model-parallel-size %d", NULL, c->expert_model_parallel_size);
    if (c->pipeline_model_parallel_size > 1)
        put(buf, cap, " --pipeline-model-parallel-size %d", NULL, c->pipeline_model_parallel_size);
    if (strcmp(c->pipeline_schedule, "1f1b") != 0)
        put(buf, cap, " --pipeline-schedule %s", c->pipeline_schedule, 0);
    if (c->num_layers_per_virtual_pipeline_stage > 0 &&
        strcmp(c->pipeline_schedule, "interleaved") == 0)
        put(buf, cap, " --num-layers-per-virtual-pipeline-stage %d", NULL,
            c->num_layers_per_virtual_pipeline_stage);
    const int stage = train_config_zero_stage(c);
    if (stage == 1) put(buf, cap, " --use-distributed-optimizer", NULL, 0);
    if (stage >= 2)
        put(buf, cap, " --data-parallel-sharding-strategy %s", zero_stage_strategy(stage), 0);
    if (c->recompute_granularity)
        put(buf, cap, " --recompute-granularity %s", c->recompute_granularity, 0);
    if (c->recompute_method) {
        put(buf, cap, " --recompute-method %s", c->recompute_method, 0);
        put(buf, cap, " --recompute-num-layers %d", NULL, c->recompute_num_layers);
    }
    if (c->sequence_parallel) put(buf, cap, " --sequence-parallel", NULL, 0);
    if (c->overlap_grad_reduce) put(buf, cap, " --overlap-grad-reduce", NULL, 0);
    if (c->overlap_param_gather) put(buf, cap, " --overlap-param-gather", NULL, 0);
    if (buf[0] == ' ') memmove(buf, buf + 1, strlen(buf));
}

void plan_layout_name(const train_config *c, char *buf, size_t cap) {
    buf[0] = 0;
    if (c->tensor_model_parallel_size > 1)
        put(buf, cap, "TP%d ", NULL, c->tensor_model_parallel_size);
    if (c->context_parallel_size > 1) put(buf, cap, "CP%d ", NULL, c->context_parallel_size);
    if (c->expert_model_parallel_size > 1)
        put(buf, cap, "EP%d ", NULL, c->expert_model_parallel_size);
    if (c->pipeline_model_parallel_size > 1)
        put(buf, cap, "PP%d ", NULL, c->pipeline_model_parallel_size);
    if (c->dp > 1) put(buf, cap, "DP%d ", NULL, c->dp);
    if (c->pipeline_model_parallel_size > 1 || strcmp(c->pipeline_schedule, "1f1b") != 0)
        put(buf, cap, "%s ", c->pipeline_schedule, 0);
    if (c->vpp > 1 && strcmp(c->pipeline_schedule, "interleaved") == 0)
        put(buf, cap, "v%d ", NULL, c->vpp);
    const int stage = train_config_zero_stage(c);
    if (stage > 0) put(buf, cap, "· ZeRO-%d ", NULL, stage);
    if (c->sequence_parallel) put(buf, cap, "· SP ", NULL, 0);
    if (c->recompute_granularity) put(buf, cap, "· recompute %s ", c->recompute_granularity, 0);
    if (c->overlap_grad_reduce || c->overlap_param_gather)
        put(buf, cap, "· overlap %s ",
            c->overlap_grad_reduce && c->overlap_param_gather ? "grad+param"
            : c->overlap_grad_reduce                          ? "grad"
                                                              : "param",
            0);
    const size_t n = strlen(buf);
    if (n && buf[n - 1] == ' ') buf[n - 1] = 0;
    if (!buf[0]) snprintf(buf, cap, "one rank");
}
