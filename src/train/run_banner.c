/* run_banner.c — what `trident train` prints before its first step: the layout, the groups of
 * each kind and the memory `trident memory` predicts for it (trainer_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/device/device.h"
#include "src/pp/executor.h"
#include "src/runtime/dist.h"
#include "src/runtime/hosts.h"
#include "src/train/memory_predict.h"
#include "src/train/trainer_internal.h"
#include "src/zero/memory_plan.h"

/* The groups of each kind, as rank lists (at most 16 groups per kind). */
static void print_groups(const train_config *c, const parallel_state *ps) {
    printf("groups (rank order %s):\n", pg_layout_order_name(&ps->layout));
    /* the context- and expert-parallel ones when those dimensions are used */
    const pg_kind kinds[] = {PG_TP, PG_PP, PG_DP, PG_CP, PG_EP, PG_EDP};
    const int nkinds = c->context_parallel_size > 1 || c->expert_model_parallel_size > 1 ? 6 : 3;
    for (int k = 0; k < nkinds; k++) {
        if (kinds[k] == PG_CP && c->context_parallel_size == 1) continue;
        if ((kinds[k] == PG_EP || kinds[k] == PG_EDP) && c->expert_model_parallel_size == 1)
            continue;
        int ng = pg_num_groups(&ps->layout, kinds[k]), gs = pg_group_size(&ps->layout, kinds[k]);
        int members[4096];
        printf("  %-*s", nkinds > 3 ? 4 : 3, pg_kind_name(kinds[k])); /* "edp" needs 4 */
        for (int g = 0; g < ng && g < 16; g++) {
            pg_group_members(&ps->layout, kinds[k], g, members);
            printf(" [");
            for (int i = 0; i < gs; i++) printf("%s%d", i ? "," : "", members[i]);
            printf("]");
        }
        if (ng > 16) printf(" …");
        printf("\n");
    }
}

/* Megatron's advice for a run across hosts: a tensor- or context-parallel group that spans
 * hosts pays the network in every layer (groups.h, pg_groups_spanning_nodes). */
static void warn_spanning_hosts(const parallel_state *ps) {
    const pg_layout *l = &ps->layout;
    int *host = mallocCheck(sizeof(int) * (size_t)l->world);
    for (int r = 0; r < l->world; r++) host[r] = hosts_of(r);
    const pg_kind kinds[2] = {PG_TP, PG_CP};
    for (int k = 0; k < 2; k++) {
        int first;
        const int n = pg_groups_spanning_nodes(l, kinds[k], host, &first);
        if (n > 0)
            printf("warning: %d %s group%s span%s hosts: their collectives cross the network in "
                   "every layer (Megatron keeps %s inside a host: --rank-order, or more ranks per "
                   "host)\n",
                   n, pg_kind_name(kinds[k]), n == 1 ? "" : "s", n == 1 ? "s" : "",
                   pg_kind_name(kinds[k]));
    }
    free(host);
}

void run_print_layout(const train_config *c, const parallel_state *ps, const local_model *m,
                      const dist_optimizer *opt, const pp_executor *ex) {
    printf("trident train: %d rank%s = tensor %d × ", c->world_size, c->world_size == 1 ? "" : "s",
           c->tensor_model_parallel_size);
    if (c->context_parallel_size > 1) printf("context %d × ", c->context_parallel_size);
    printf("pipeline %d × data %d", c->pipeline_model_parallel_size, c->dp);
    if (c->expert_model_parallel_size > 1)
        printf(" (expert %d × expert-data %d)", c->expert_model_parallel_size,
               c->dp / c->expert_model_parallel_size);
    printf(", schedule %s", c->pipeline_schedule);
    if (c->vpp > 1) printf(" (%d chunks per rank)", c->vpp);
    if (c->sequence_parallel) printf(", sequence parallel");
    const int stage = train_config_zero_stage(c);
    printf(", ZeRO %s", stage > 0 ? "on" : "off");
    if (stage >= 2) printf(" (ZeRO-%d: %s)", stage, c->data_parallel_sharding_strategy);
    printf(", %s\n", c->bf16 ? "bf16" : c->fp16 ? "fp16" : "fp32");
    if (c->world_size > 1 && hosts_count() > 1) {
        char hosts[1024];
        printf("%s\n", hosts_describe(hosts, sizeof hosts));
        if (ps) warn_spanning_hosts(ps);
        printf("within a host, %s\n", dist_transport_description());
        const char *btl = getenv("OMPI_MCA_btl");
        printf("between hosts: the network, no shared memory and no single copy (Open MPI's "
               "transports %s); clocks aligned to rank 0's by Cristian's method\n",
               btl && *btl ? btl : "of its own choice");
    } else if (c->world_size > 1) {
        printf("%s\n", dist_transport_description());
    }
    if (device_current() != DEVICE_CPU) {
        printf("device: %s", device_kind_name(device_current()));
        if (device_gpu() >= 0)
            printf(" (GPU %d of %d on this node)", device_gpu(), device_cuda_count());
        printf(", communication: %s\n", ps && comm_backend_of(ps->world) == COMM_NCCL
                                            ? "NCCL on device memory"
                                            : "MPI, device buffers staged through host memory");
    }
    printf("model: %d layers, hidden %d, %d heads, seq %d, vocab 256 (padded %d)", c->num_layers,
           c->hidden_size, c->num_attention_heads, c->seq_length, c->padded_vocab);
    if (c->num_experts > 0) {
        printf(", MoE: %d expert%s, top-%d, aux loss coeff %g, ", c->num_experts,
               c->num_experts == 1 ? "" : "s", c->moe_router_topk, (double)c->moe_aux_loss_coeff);
        if (c->moe_expert_capacity_factor > 0)
            printf("capacity factor %g", (double)c->moe_expert_capacity_factor);
        else printf("dropless");
    }
    printf("\n");
    if (c->context_parallel_size > 1)
        printf("context parallel: each sequence in %d zig-zag chunks of %d positions, rank r "
               "holding chunks r and %d−r; ring attention over %d ranks\n",
               2 * c->context_parallel_size, c->seq_length / (2 * c->context_parallel_size),
               2 * c->context_parallel_size - 1, c->context_parallel_size);
    printf("batch: global %d = micro-batch %d × %d micro-batches × data-parallel %d\n",
           c->global_batch_size, c->micro_batch_size, c->num_microbatches, c->dp);
    if (ps) print_groups(c, ps);
    /* The ZeRO paper's accounting for this rank's Ψ parameters (src/zero/memory_plan.h). */
    const zero_ranges *r = distopt_ranges(opt);
    const int zdp = train_config_zero_ranks(c);
    size_t shard = c->use_distributed_optimizer ? r->shard_numel
                                                : (m->numel + (size_t)zdp - 1) / (size_t)zdp;
    zero_memory_plan plan = zero_memory_plan_make(m->numel, zdp, shard, trainer_run_dtype(c),
                                                  stage);
    char buf[256];
    printf("memory plan (rank 0, %zu parameters): %s\n", m->numel,
           zero_memory_plan_summary(&plan, buf, sizeof buf));
    const distopt_memory held = distopt_memory_held(opt); /* what is allocated (fp32 storage) */
    printf("memory held (rank 0): params %zu + grads %zu + master %zu + Adam m,v %zu + work %zu "
           "bytes\n",
           held.params, held.grads, held.master, held.adam, held.work);
    printf("activations (rank 0): %.1f KiB per micro-batch, recomputation %s",
           (double)pp_executor_activation_bytes_per_microbatch(ex) / 1024.0,
           c->recompute_granularity ? c->recompute_granularity : "none");
    if (c->recompute_method) printf(" %s %d", c->recompute_method, c->recompute_num_layers);
    if (c->sequence_parallel)
        printf(", sequence parallel (LayerNorms and residual stream on %d of %d positions)",
               c->seq_length / c->tensor_model_parallel_size, c->seq_length);
    printf("; work space %.1f KiB (once per chunk)\n",
           (double)pp_executor_work_space_bytes(ex) / 1024.0);
}

/* "memory predicted (trident memory): rank 0 12.3 MiB = ... ; the most: rank 3, 14.1 MiB" */
void run_print_memory_prediction(const train_memory *tm) {
    const zero_memory_rank *m = &tm->ranks[0];
    char a[32], b[32];
    printf("memory predicted (trident memory, %s): rank 0 %s =", zero_stage_name(tm->stage),
           zero_bytes_text((double)m->total, a, sizeof a));
    for (int k = 0, first = 1; k < ZERO_MEM_NKINDS; k++) {
        if (!m->bytes[k]) continue;
        printf("%s %s %s", first ? "" : " +", zero_mem_kind_name((zero_mem_kind)k),
               zero_bytes_text((double)m->bytes[k], b, sizeof b));
        first = 0;
    }
    const int big = train_memory_largest(tm);
    printf("; the most: rank %d, %s\n", big,
           zero_bytes_text((double)tm->ranks[big].total, a, sizeof a));
}
