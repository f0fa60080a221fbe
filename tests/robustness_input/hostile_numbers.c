/* hostile_numbers.c — round 3 of the hostile-input table (issue 31), families 2 and 3: products
 * of sizes that wrap, and conversions that change meaning (see hostile.h). Each row is closed by
 * src/core/checked.h: a product that wraps divides nothing, a parsed integer keeps its range, a
 * float that is not 0 never becomes 0, and a float made an integer is never wrapped. */
#include "tests/robustness_input/hostile.h"

/* A tiny model that runs in a moment, for the rows whose refusal comes after the layout. */
#define SMALL                                                                                      \
    "--num-layers 2 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --train-iters 1 "     \
    "--no-trace --quiet --run-dir {D}/nr"

const hostile_case hostile_numbers_cases[] = {
    /* ---- family 2: products of sizes that wrap ---- */
    {1, "train --tensor-model-parallel-size 65536 --pipeline-model-parallel-size 65536", /* 0 */
     "world size 1 is not divisible by --tensor-model-parallel-size 65536 × "
     "--pipeline-model-parallel-size 65536",
     NULL},
    {1,
     "memory --world-size 8 --tensor-model-parallel-size 65536 --pipeline-model-parallel-size "
     "65536",
     "world size 8 is not divisible by --tensor-model-parallel-size 65536 × "
     "--pipeline-model-parallel-size 65536",
     NULL},
    {1, "train --tensor-model-parallel-size 641 --pipeline-model-parallel-size 6700417", /* 1 */
     "world size 1 is not divisible by --tensor-model-parallel-size 641 × "
     "--pipeline-model-parallel-size 6700417",
     NULL},
    {1, "train --tensor-model-parallel-size 65535 --pipeline-model-parallel-size 65537", /* -1 */
     "world size 1 is not divisible by --tensor-model-parallel-size 65535 × "
     "--pipeline-model-parallel-size 65537",
     NULL},
    {1, "memory --world-size 4 --tensor-model-parallel-size 4 --context-parallel-size 1073741824",
     "world size 4 is not divisible by --tensor-model-parallel-size 4 × --context-parallel-size "
     "1073741824 × --pipeline-model-parallel-size 1",
     NULL},
    {1,
     "generate --load {D}/ck --prompt ab --tensor-model-parallel-size 641 "
     "--pipeline-model-parallel-size 6700417",
     "1 ranks, but --tensor-model-parallel-size 641 × --pipeline-model-parallel-size 6700417 = "
     "4294967297",
     NULL},
    {1, "memory --world-size 1048576 --micro-batch-size 4096 --global-batch-size 4096",
     "--global-batch-size 4096 is not divisible by --micro-batch-size 4096 × data-parallel size "
     "1048576",
     NULL},
    {1,
     "memory --world-size 65536 --pipeline-model-parallel-size 65536 --num-layers 65536 "
     "--num-layers-per-virtual-pipeline-stage 65536",
     "--num-layers 65536 is not divisible by --num-layers-per-virtual-pipeline-stage 65536 × "
     "--pipeline-model-parallel-size 65536",
     NULL},
    {2, "train " SMALL " --pipeline-model-parallel-size 2 --stage-layers 4294967297,1",
     "--stage-layers '4294967297,1': 4294967297 is not a layer count (every stage holds 1 to "
     "2147483647 layers)",
     NULL},
    {1,
     "memory --world-size 2 --pipeline-model-parallel-size 2 --num-layers 2 --stage-layers "
     "4294967298,4294967296",
     "--stage-layers '4294967298,4294967296': 4294967298 is not a layer count", NULL},
    {1,
     "memory --world-size 2 --pipeline-model-parallel-size 2 --num-layers 2 --stage-layers "
     "2147483647,2147483647",
     "--stage-layers '2147483647,2147483647' adds up to 4294967294 layers but --num-layers is 2",
     NULL},
    {1,
     "train --seq-length 2147483647 --micro-batch-size 2147483647 --global-batch-size 2147483647",
     "logits of one micro-batch", NULL},
    {1,
     "memory --world-size 1 --seq-length 1048576 --micro-batch-size 1048576 --global-batch-size "
     "1048576 --hidden-size 1048576 --num-attention-heads 1",
     "this model could need up to 1.16e+21 bytes per rank; predictions stop at 1e+18", NULL},
    {1,
     "memory --world-size 65536 --tensor-model-parallel-size 65536 --num-attention-heads 65536 "
     "--hidden-size 65536 --make-vocab-size-divisible-by 65536",
     "--make-vocab-size-divisible-by 65536 × --tensor-model-parallel-size 65536 pads the "
     "256-token vocabulary to a multiple of 4294967296, more than the 2147483647 entries",
     NULL},
    {1,
     "memory --world-size 2 --tensor-model-parallel-size 2 --make-vocab-size-divisible-by "
     "1073741824", /* was "padded vocabulary 0" */
     "--make-vocab-size-divisible-by 1073741824 × --tensor-model-parallel-size 2 pads the "
     "256-token vocabulary to a multiple of 2147483648",
     NULL},
    {1, "train --num-layers 2 --hidden-size 32 --num-attention-heads 2 --train-iters 2147483647",
     "the trace of --train-iters 2147483647 (", NULL}, /* + 1 wrapped: 2^64 - 33 GB */
    /* integers that do not fit where they are kept: never wrapped into another value */
    {1, "train --num-experts 2147483648",
     "--num-experts expects an integer, got '2147483648': it is outside -2147483648 to 2147483647",
     NULL},
    {1, "train --seq-length 4294967312",
     "--seq-length expects an integer, got '4294967312': it is outside", NULL}, /* 16 */
    {1, "train --split 4294967297,1", "--split '4294967297,1': 4294967297 is out of range", NULL},
    {1, "train --ddp-bucket-size 4294967297",
     "--ddp-bucket-size expects an integer, got '4294967297': it is outside", NULL},
    {1, "generate --load {D}/ck --prompt ab --top-k 4294967296",
     "--top-k expects an integer, got '4294967296': it is outside", NULL},
    /* ---- family 3: conversions that change meaning ---- */
    {1, "train " SMALL " --num-experts 4 --moe-expert-capacity-factor 1e19",
     "--moe-expert-capacity-factor 1e+19 must be at most 4096", NULL},
    {1, "train " SMALL " --num-experts 4 --moe-expert-capacity-factor 1e-50", /* 0 = dropless */
     "--moe-expert-capacity-factor 1e-50 is not 0 but would become 0 in single precision", NULL},
    {1, "memory --world-size 1 --num-experts 4 --moe-expert-capacity-factor 3e38",
     "--moe-expert-capacity-factor 3e+38 must be at most 4096", NULL},
    {1, "eval --load {D}/ck_cap19",
     "rank_00000.tck': --moe-expert-capacity-factor 1e+19 must be at most 4096", NULL},
    {1, "eval --load {D}/ck_cap50",
     "rank_00000.tck': moe_expert_capacity_factor 1e-50 is not 0 but would become 0", NULL},
    {1, "generate --load {D}/ck_cap19 --prompt ab",
     "rank_00000.tck': --moe-expert-capacity-factor 1e+19 must be at most 4096", NULL},
    {1, "train " SMALL " --distributed-timeout-minutes 1e-50", /* 0 = wait forever */
     "--distributed-timeout-minutes 1e-50 is not 0 but would become 0", NULL},
    {1, "train " SMALL " --distributed-timeout-minutes 1e-400",
     "--distributed-timeout-minutes 1e-400 is not 0 but would become 0", NULL},
    {1, "train " SMALL " --distributed-timeout-minutes 1e300",
     "--distributed-timeout-minutes 1e300 is beyond single precision", NULL},
    {1, "generate --load {D}/ck --prompt ab --top-p 1e-50",
     "--top-p 1e-50 is not 0 but would become 0", NULL},
    {1, "generate --load {D}/ck --prompt ab --temperature 1e-50", /* 0 = greedy */
     "--temperature 1e-50 is not 0 but would become 0", NULL},
    {1, "schedule --pipeline-model-parallel-size 4 --num-microbatches 8 --forward-cost 1e-50",
     "--forward-cost 1e-50 is not 0 but would become 0", NULL},
    {1,
     "schedule --pipeline-model-parallel-size 4 --num-microbatches 8 --forward-cost 1e-30 "
     "--backward-cost 1e9",
     "the text grid would be 1.1e+40 cells per rank (the makespan 1.1e+10 over the shorter cost "
     "1e-30), more than 1048576",
     NULL},
    {0, NULL, NULL, NULL},
};

/* Checkpoints whose MoE capacity factor would wrap the capacity (1e19) or become 0 (1e-50). */
void hostile_numbers_setup(void) {
    forged_copy("ck_cap19", "\"numel\":",
                "\"num_experts\":4,\"moe_router_topk\":2,\"moe_expert_capacity_factor\":1e19,"
                "\"numel\":",
                NULL, 0);
    forged_copy("ck_cap50", "\"numel\":",
                "\"num_experts\":4,\"moe_router_topk\":2,\"moe_expert_capacity_factor\":1e-50,"
                "\"numel\":",
                NULL, 0);
}
