/* time_model.h — how long one training step of a layout takes, predicted from the machine's
 * calibration (calibration.h) and the layout's flags, each term named after what it stands for.
 *
 * The step of a checked configuration, per rank of one pipeline (every data-parallel replica
 * runs the same):
 *
 *   one layer, one micro-batch, forward     N = B·T/cp tokens on the rank
 *     layer_gemm      the four products qkv, proj, fc, fcproj (MoE: the router and the
 *                     experts a rank's tokens reach, E/ep experts of N·K·ep/E rows each,
 *                     times the expert load of ep: the busiest rank's share over the balanced
 *                     one, measured by the calibration) at their local shapes ÷ the
 *                     calibrated rate at that shape
 *     attention_gemm  the attention core (Q·Kᵀ, causal softmax, A·V) as the calibration
 *                     measured it at the rank's NH/tp heads (with cp, one rank's ring
 *                     attention as measured at that cp); without that measurement
 *                     Q·Kᵀ and A·V, 4·N·T·C/tp FLOPs at one head's product rate
 *     elementwise     LayerNorms, GELU, residuals (and the softmax when the attention core
 *                     is not measured): (12·C + 16·C/tp [+ 4·NH/tp·T])·N floats ÷ the rate
 *                     the measured block leaves for them; with experts the MLP's 16·C/tp is
 *                     16·C·K × the expert load (every routed row, on the busiest rank)
 *     tp_comm         2 all-reduces of N·C floats over tp (sequence parallel: 2 all-gathers
 *                     + 2 reduce-scatters), bench_comm.c's TP bytes
 *     cp_comm         ring attention: cp − 1 p2p steps of K and V, 2·N·C/tp floats
 *     ep_comm         MoE: dispatch and combine all-to-alls of N·K·C floats over ep, times
 *                     the expert load (the busiest rank receives that much more)
 *     trainer         what a real step adds around those kernels (the executor, pools, loss
 *                     bookkeeping): (the calibration's trainer factor − 1) × the compute
 *   the layer's backward    the attention core's measured backward, and the rest of the
 *                     compute × the measured block's backward ÷ forward without its attention
 *                     core (2 without a block), the same communication again; recomputation
 *                     adds to it the attention core's forward (selective) or the whole
 *                     layer's forward (full)
 *   ends              the embedding (first stage) and the head's product and loss (last stage)
 *   zero_in_pass      ZeRO-2/3: a reduce-scatter of the stage's gradients after every
 *                     micro-batch's backward; ZeRO-3: all-gathers of its parameters for each
 *                     forward and backward (prefetched: overlapped, below)
 *   pipeline          the schedule played by pp_simulate (src/pp/schedule_sim.h) with these
 *                     per-stage costs, split backward W = the weight half of the products,
 *                     p2p = α + β·(N·C floats, ÷ tp with sequence parallelism)
 *   dp_comm           gradients over dp·cp ranks after the pipeline: ZeRO-0 all-reduce,
 *                     ZeRO-1 reduce-scatter + all-gather, ZeRO-2/3 the all-gather of ZeRO-2;
 *                     exposed all of it, or with --overlap-grad-reduce overlapped with the
 *                     last micro-batch's backward (--overlap-param-gather: the first forward)
 *   overlapped        communication beside compute costs the step its copies (β·bytes on the
 *                     wire: on CPU ranks shared memory moves the bytes with the rank's own
 *                     core) and what the compute cannot cover of the rest (α and sync), at
 *                     least one piece of it (a bucket, a unit)
 *   optimizer         AdamW over the rank's parameters (its shard with ZeRO) ÷ the calibrated
 *                     rate, plus the gradient norm's all-reduce of one float
 *
 *   step = pipeline makespan + max over pipeline ranks (exposed dp_comm + optimizer)
 *
 * Communication costs sync + α·steps + β·bytes on the wire, the sync once per call, with the
 * link measured for the group's size (calibration.h: plan_calibration_link, plan_link_time):
 * a ring all-reduce over g ranks 2(g−1) steps and 2(g−1)/g of the bytes, reduce-scatter,
 * all-gather and all-to-all (g−1) steps and (g−1)/g of the bytes, p2p one step and all the
 * bytes.
 *
 * Each rank is taken to run on its own core (the replay view of a run on fewer cores).
 *
 * Hosts (trident plan --ranks-per-node R, cal->ranks_per_node): rank r runs on host r / R, the
 * ranks in Megatron's order (tp fastest), as `trident groups --ranks-per-node` places them; a
 * collective whose groups span hosts (pg_groups_spanning_nodes decides, src/runtime/groups.h)
 * takes the network's α and β (cal->network) instead of the calibrated link's, keeping the
 * kind's sync: a ring steps at the pace of its slowest edge, and one edge crosses the network.
 * tp, cp: every layer; ep: every MoE layer; pp: every pipeline message; dp × cp: the gradients
 * and ZeRO's traffic; the gradient norm's all-reduce over the world.
 *
 * Not here: the calibration (calibration.h), the layouts (enumerate.h), memory
 * (src/train/memory_predict.h).
 */
#ifndef TRIDENT_PLAN_TIME_MODEL_H
#define TRIDENT_PLAN_TIME_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "src/plan/calibration.h"
#include "src/runtime/groups.h"
#include "src/train/config.h"
#include "src/train/memory_predict.h"

/* One layer, one micro-batch, one rank, seconds. */
typedef struct {
    double layer_gemm, attention_gemm, elementwise; /* forward compute */
    double trainer; /* what the trainer adds around them (calibration's trainer factor − 1) */
    double tp_comm, cp_comm, ep_comm; /* forward communication on the path */
    double moe_load;                  /* the expert load applied (1: balanced, or dense) */
    double forward;                   /* their sum */
    double backward;                  /* 2 × compute + the same communication */
    double backward_weight;           /* of which W: the weight-gradient products */
    double recompute;                 /* what recomputation adds to the backward */
} plan_layer_time;

typedef struct {
    plan_layer_time layer;
    double embedding, head_forward, head_backward; /* the ends, one micro-batch */
    double p2p;                                    /* one pipeline message */
    double zero_in_pass; /* ZeRO-2/3 traffic inside one micro-batch's passes, one stage */
    double stage_forward_max, stage_backward_max; /* the slowest virtual stage, one micro-batch */
    double pipeline;                              /* the simulated makespan of the schedule */
    double busy;         /* the busiest pipeline rank's compute and in-pass communication */
    double bubble;       /* pipeline − busy */
    double dp_comm;      /* the gradient (and parameter) collectives after the pipeline */
    double dp_exposed;   /* what of them the step waits for */
    double optimizer;    /* AdamW + the gradient norm */
    double step;         /* seconds */
    double comm_on_path; /* the communication inside busy, for the pictures */
    double tokens_per_s; /* global batch × T ÷ step */
    unsigned across;     /* plan_groups_across_hosts: the groups on the network */
} plan_time;

/* The time of c (checked by train_config_check) on the calibrated machine; tm is c's memory
 * prediction (train_memory_predict), whose per-rank parameter counts the data-parallel and
 * optimizer terms take. Dies only if the schedule deadlocks, which a checked layout never does. */
plan_time plan_time_predict(const train_config *c, const train_memory *tm,
                            const plan_calibration *cal);

/* Seconds of one collective of `bytes` over g ranks on link k (0 when g = 1), with the link
 * measured for g ranks (plan_calibration_link). */
double plan_collective_time(const plan_calibration *cal, plan_link_kind k, int g, double bytes);

/* The world as a group, beside groups.h's kinds: the gradient norm's all-reduce. */
enum { PLAN_WORLD = PG_NKINDS };

/* The groups of c (checked) that span hosts of ranks_per_node ranks: bit 1 << PG_TP, PG_CP,
 * PG_EP, PG_PP, PG_DP_CP for each kind of which some group has members on two hosts, and
 * 1 << PLAN_WORLD whenever there is more than one host. 0 when ranks_per_node <= 0 or
 * >= the world size (one host). */
unsigned plan_groups_across_hosts(const train_config *c, int ranks_per_node);

/* "tp+dp": the kinds of an `across` mask (the world left out), "-" for none. Returns buf. */
const char *plan_groups_across_name(unsigned across, char *buf, size_t cap);

/* The link a collective of kind k over c's groups of `group` (a pg_kind or PLAN_WORLD), g
 * ranks each, takes on cal's hosts: plan_calibration_link(cal, k, g), or with cal->network's
 * α, β and source when they span hosts. */
plan_link plan_group_link(const plan_calibration *cal, const train_config *c, int group,
                          plan_link_kind k, int g);

/* The terms of p, one per line, for `trident plan --explain`. */
void plan_time_explain(const plan_time *p, const train_config *c, FILE *f);

#endif /* TRIDENT_PLAN_TIME_MODEL_H */
