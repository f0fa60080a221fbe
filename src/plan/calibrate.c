/* calibrate.c — see calibrate.h: the pieces measured in order, then the trainer's own step. */
#include "src/plan/calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/plan/links.h"
#include "src/plan/time_model.h"
#include "src/trace/trace.h"
#include "src/train/memory_predict.h"

/* One short serial `trident train` of the model (4 micro-batches a step, 24 steps, traced): its
 * least step CPU time after warm-up (the replay view's step: time descheduled by other
 * processes does not count) over the time model's prediction of that step with the kernels
 * alone, into cal->trainer_factor. */
static void calibrate_trainer(const train_config *model, plan_calibration *cal, const char *who) {
    char self[4096], dir[64], cmd[12288];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) die("%s: cannot find this program (/proc/self/exe) to run the serial step", who);
    self[n] = 0;
    snprintf(dir, sizeof dir, "/tmp/trident-plan-run.%d", (int)getpid());
    train_config c = *model;
    c.tensor_model_parallel_size = c.context_parallel_size = 1;
    c.pipeline_model_parallel_size = c.expert_model_parallel_size = 1;
    c.num_layers_per_virtual_pipeline_stage = 0;
    c.pipeline_schedule = "1f1b";
    c.stage_layers = NULL;
    c.global_batch_size = 4 * c.micro_batch_size;
    snprintf(cmd, sizeof cmd,
             "'%s' train --num-layers %d --hidden-size %d --num-attention-heads %d --seq-length %d "
             "--micro-batch-size %d --global-batch-size %d --make-vocab-size-divisible-by %d "
             "--num-experts %d --moe-router-topk %d --threads %d%s --train-iters 24 "
             "--log-interval 2 --eval-iters 0 --run-dir '%s' > '%s.log' 2>&1",
             self, c.num_layers, c.hidden_size, c.num_attention_heads, c.seq_length,
             c.micro_batch_size, c.global_batch_size, c.make_vocab_size_divisible_by, c.num_experts,
             c.moe_router_topk, c.threads, c.bf16 ? " --bf16" : "", dir, dir);
    const int rc = system(cmd);
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/trace/rank0.trace", dir);
    trace_file *tf = rc == 0 ? trace_file_read(path, err, sizeof err) : NULL;
    if (!tf) die("%s: the serial step of --calibrate failed (exit %d): see %s.log", who, rc, dir);
    double measured = INFINITY; /* the step's CPU time: what the replay view counts */
    for (size_t i = 0; i < trace_file_num_events(tf); i++) {
        const trace_event *e = trace_file_event(tf, i);
        if (e->kind == TRACE_STEP && e->step > 2 && e->cpu > 0) measured = fmin(measured, e->cpu);
    }
    trace_file_free(tf);
    if (!isfinite(measured))
        die("%s: the serial run of --calibrate recorded no step (%s)", who, path);
    c.predict_only = true;
    if (!train_config_check(&c, 1, err, sizeof err)) die("%s: %s", who, err);
    train_memory *tm = train_memory_predict(&c, 0, who);
    cal->trainer_factor = 0;
    cal->trainer_factor = measured / plan_time_predict(&c, tm, cal).step;
    train_memory_free(tm);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s.log'", dir, dir);
    if (system(cmd) != 0) fprintf(stderr, "%s: could not remove %s\n", who, dir);
}

void plan_calibrate(const train_config *c, int world, plan_calibration *cal, const char *who) {
    plan_calibration_measure(c, world, PLAN_CALIBRATE_SECONDS, cal);
    plan_links_measure(cal, who);
    calibrate_trainer(c, cal, who);
}
