/* hostile_work.c — round 3 of the hostile-input table (issue 31), families 5 and 6: see
 * hostile.h.
 *
 * Unbounded work: `render --metrics` on a metrics.jsonl whose values no axis can span (losses
 * near ±1e308 made the tick loop spin forever) is refused naming the run, the key, the step and
 * the value (viz/axis.h). Values an axis can span (a single point, all equal, denormals,
 * ±1e300) are drawn: tests/viz/metrics_plot_test.c and axis_test.c pin their layout numbers.
 * The MoE dispatch's cost (linear in the pairs: tests/moe/token_dispatch_test.c) and more than
 * 4,096 gradient buckets with the overlap flags (tests/runtime/comm_stream_test.c) work, so
 * they have no error rows here.
 *
 * Internal checks users could reach, now refused at the flags: --draw-zero beyond the ZeRO
 * picture's 128 data-parallel ranks (zero_draw_layout.c's CHECK), an MoE layer whose
 * (token, expert) rows overflow the dispatch's 32-bit row numbers (token_dispatch.c's CHECK),
 * and --stage-layers giving a stage more blocks than a model chunk holds (gpt_params.c's
 * CHECK on GPT_MAX_PARAMS; local_model_partition refuses it).
 */
#include "tests/robustness_input/hostile.h"

/* A render of the forged run {D}/NAME's curves. */
#define CURVES(name) "render --metrics {D}/" name " --output {D}/" name ".png"
/* A tiny MoE model with 4096 experts, all of them chosen by every token. */
#define MOE_ALL                                                                                    \
    "--num-layers 1 --hidden-size 8 --num-attention-heads 1 --num-experts 4096 "                   \
    "--moe-router-topk 4096 --micro-batch-size 1 "
/* The ZeRO picture of a layout with dp data-parallel ranks (4 micro-batches of 4 each). */
#define ZERO_PICTURE "--use-distributed-optimizer --micro-batch-size 4 --draw-zero {D}/z.png "

const hostile_case hostile_work_cases[] = {
    /* ---- render --metrics: values beyond what an axis spans ---- */
    {1, CURVES("mx_pm"),
     "'{D}/mx_pm/metrics.jsonl': loss 1e+308 at step 1 is beyond what a plot's "
     "axis spans (|value| at most 1e+300)",
     NULL},
    {1, CURVES("mx_neg"), "loss -1e+308 at step 1", NULL},
    {1, CURVES("mx_max"), "loss 1.79769e+308 at step 3", NULL},
    {1, CURVES("mx_just"), "loss 1e+301 at step 2", NULL},
    {1, CURVES("mx_den"), "loss -1e+308 at step 3", NULL},
    {1, CURVES("mx_lr"), "lr 1e+305 at step 2", NULL},
    {1, CURVES("mx_gn"), "grad_norm 1e+302 at step 1", NULL},
    {1, CURVES("mx_tps"), "tokens_per_sec 1e+308 at step 2", NULL},
    {1, CURVES("mx_eval"), "eval_loss -1e+308 at step 2", NULL},
    {1, "render --metrics {D}/mx_ok {D}/mx_pm --output {D}/two.png",
     "'{D}/mx_pm/metrics.jsonl': loss 1e+308 at step 1", NULL},
    {1, "render --metrics {D}/mx_pm --output {D}/mx_pm.svg", "loss 1e+308 at step 1", NULL},
    {1, "render --metrics {D}/mx_neg --output {D}/mx_neg.pdf", "loss -1e+308 at step 1", NULL},
    /* ---- internal checks users could reach, refused where the flags are checked ---- */
    {1, "memory --world-size 256 --global-batch-size 1024 " ZERO_PICTURE,
     "--draw-zero draws at most 128 data-parallel ranks (a line each); this layout has "
     "data-parallel size 256",
     NULL},
    {1, "memory --world-size 129 --global-batch-size 516 " ZERO_PICTURE,
     "this layout has data-parallel size 129", NULL},
    {1,
     "memory --world-size 258 --tensor-model-parallel-size 2 --num-attention-heads 2 "
     "--global-batch-size 516 " ZERO_PICTURE,
     "this layout has data-parallel size 129", NULL},
    {1, "memory --world-size 1 --global-batch-size 1 --seq-length 1048576 " MOE_ALL,
     "an MoE layer would receive 4294967296 (token, expert) rows per rank", NULL},
    {1,
     "train --global-batch-size 1 --seq-length 1048576 --train-iters 1 --no-trace --quiet "
     "--run-dir {D}/moe_rows " MOE_ALL,
     "4294967296 (token, expert) rows per rank (--micro-batch-size 1 × --seq-length 1048576 / "
     "--context-parallel-size 1 × --moe-router-topk 4096 × --expert-model-parallel-size 1); the "
     "dispatch numbers them with 32-bit integers (at most 2147483647)",
     NULL},
    {1,
     "memory --world-size 4 --expert-model-parallel-size 4 --global-batch-size 4 "
     "--seq-length 524288 " MOE_ALL,
     "8589934592 (token, expert) rows per rank", NULL},
    {1,
     "memory --world-size 2 --context-parallel-size 2 --global-batch-size 1 --seq-length "
     "4194304 " MOE_ALL,
     "8589934592 (token, expert) rows per rank (--micro-batch-size 1 × --seq-length 4194304 / "
     "--context-parallel-size 2",
     NULL},
    {1,
     "memory --world-size 2 --pipeline-model-parallel-size 2 --num-layers 101 --stage-layers 100,1 "
     "--hidden-size 8 --num-attention-heads 1",
     "--stage-layers gives stage 0 100 layers; a model chunk holds at most 84", NULL},
    {1,
     "memory --world-size 2 --pipeline-model-parallel-size 2 --num-layers 170 --stage-layers 85,85 "
     "--hidden-size 8 --num-attention-heads 1 --num-experts 2",
     "--stage-layers gives stage 0 85 layers", NULL},
    {2,
     "train --pipeline-model-parallel-size 2 --num-layers 101 --stage-layers 1,100 --hidden-size 8 "
     "--num-attention-heads 1 --seq-length 4 --train-iters 1 --no-trace --quiet "
     "--run-dir {D}/stage100",
     "--stage-layers gives stage 1 100 layers; a model chunk holds at most 84", NULL},
    {0, NULL, NULL, NULL},
};

void hostile_work_setup(void) {
    /* metrics.jsonl of runs whose values no axis spans (and one that is fine) */
    sh("mkdir -p %s/mx_pm %s/mx_neg %s/mx_max %s/mx_just %s/mx_den %s/mx_ok", g_dir);
    sh("mkdir -p %s/mx_lr %s/mx_gn %s/mx_tps %s/mx_eval", g_dir);
    sh("printf '{\"step\":1,\"loss\":1e308}\\n{\"step\":2,\"loss\":-1e308}\\n' > "
       "%s/mx_pm/metrics.jsonl",
       g_dir);
    sh("printf '{\"step\":1,\"loss\":-1e308}\\n' > %s/mx_neg/metrics.jsonl", g_dir);
    sh("printf '{\"step\":1,\"loss\":3}\\n{\"step\":2,\"loss\":2}\\n"
       "{\"step\":3,\"loss\":1.7976931348623157e308}\\n' > %s/mx_max/metrics.jsonl",
       g_dir);
    sh("printf '{\"step\":1,\"loss\":1e300}\\n{\"step\":2,\"loss\":1e301}\\n' > "
       "%s/mx_just/metrics.jsonl",
       g_dir);
    sh("printf '{\"step\":1,\"loss\":5e-324}\\n{\"step\":2,\"loss\":2.2e-308}\\n"
       "{\"step\":3,\"loss\":-1e308}\\n' > %s/mx_den/metrics.jsonl",
       g_dir);
    sh("printf '{\"step\":1,\"loss\":2,\"lr\":0.001}\\n{\"step\":2,\"loss\":2,\"lr\":1e305}\\n' > "
       "%s/mx_lr/metrics.jsonl",
       g_dir);
    sh("printf '{\"step\":1,\"loss\":2,\"grad_norm\":1e302}\\n' > %s/mx_gn/metrics.jsonl", g_dir);
    sh("printf '{\"step\":1,\"loss\":2,\"tokens_per_sec\":5}\\n"
       "{\"step\":2,\"loss\":2,\"tokens_per_sec\":1e308}\\n' > %s/mx_tps/metrics.jsonl",
       g_dir);
    sh("printf '{\"step\":1,\"loss\":2}\\n{\"step\":2,\"eval_loss\":-1e308}\\n' > "
       "%s/mx_eval/metrics.jsonl",
       g_dir);
    sh("printf '{\"step\":1,\"loss\":5}\\n{\"step\":2,\"loss\":4}\\n' > %s/mx_ok/metrics.jsonl",
       g_dir);
}
