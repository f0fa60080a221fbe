/* calibrate.c — see calibrate.h: the pieces measured in order, then the trainer's own step. */
#include "src/plan/calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "src/core/check.h"
#include "src/device/gemm_rate.h"
#include "src/plan/links.h"
#include "src/plan/time_model.h"
#include "src/trace/run_metrics.h"
#include "src/trace/trace.h"
#include "src/train/memory_predict.h"

/* The lower quartile of the step CPU times after warm-up (steps 3 on) of RUN_DIR's rank 0, or
 * NAN: the copies' own contention is in every step, another job's load only in some (a step
 * it lands on counts up to twice the CPU time), and the kernels are timed at their fastest. */
static double quartile_step_cpu(const char *dir) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/trace/rank0.trace", dir);
    trace_file *tf = trace_file_read(path, err, sizeof err);
    if (!tf) return NAN;
    double cpu[64];
    int n = 0;
    for (size_t i = 0; i < trace_file_num_events(tf) && n < 64; i++) {
        const trace_event *e = trace_file_event(tf, i);
        if (e->kind == TRACE_STEP && e->step > 2 && e->cpu > 0) cpu[n++] = e->cpu;
    }
    trace_file_free(tf);
    for (int i = 1; i < n; i++) /* insertion sort: a few dozen steps */
        for (int j = i; j > 0 && cpu[j] < cpu[j - 1]; j--) {
            const double t = cpu[j];
            cpu[j] = cpu[j - 1], cpu[j - 1] = t;
        }
    return n ? cpu[(n - 1) / 4] : NAN;
}

/* The expert load of every ep (2 <= ep <= world, dividing E) from RUN_DIR's metrics: each
 * step line from step 3 on (after warm-up, as the step time), its layers' factor
 * (plan_moe_load_factor), averaged into acc[ep] over the lines; *lines counts them. */
static void add_moe_load(const char *dir, int E, int world, double *acc, int *lines) {
    char err[512];
    run_metrics *m = run_metrics_read(dir, err, sizeof err);
    if (!m) return;
    for (int i = 0; i < m->nmoe; i++) {
        if (m->moe[i].step < 3 || m->moe_experts != E) continue;
        for (int ep = 2; ep <= world && ep <= E; ep++)
            if (E % ep == 0)
                acc[ep] += plan_moe_load_factor(m->moe[i].tokens, m->moe_layers, E, ep);
        (*lines)++;
    }
    run_metrics_free(m);
}

/* The serial configuration of the model the trainer factor is measured on: tp = cp = pp =
 * ep = 1, 4 micro-batches a step. */
static train_config serial_config(const train_config *model) {
    train_config c = *model;
    c.tensor_model_parallel_size = c.context_parallel_size = 1;
    c.pipeline_model_parallel_size = c.expert_model_parallel_size = 1;
    c.num_layers_per_virtual_pipeline_stage = 0;
    c.pipeline_schedule = "1f1b";
    c.stage_layers = NULL;
    c.global_batch_size = 4 * c.micro_batch_size;
    return c;
}

/* `copies` serial `trident train` runs of c at once (24 steps, traced), so the cores are as
 * busy as a job keeps them: the mean over copies of their step CPU time after warm-up (the
 * replay view's step; the lower quartile). With experts, adds each run's expert load of every
 * ep up to world into load[ep] (*lines counts the step lines). */
static double serial_step(const train_config *c, int world, int copies, double *load, int *lines,
                          const char *who) {
    char self[4096], dir[64], cmd[16384];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) die("%s: cannot find this program (/proc/self/exe) to run the serial step", who);
    self[n] = 0;
    snprintf(dir, sizeof dir, "/tmp/trident-plan-run.%d", (int)getpid());
    size_t used = (size_t)snprintf(cmd, sizeof cmd, "(");
    for (int k = 0; k < copies && used < sizeof cmd; k++)
        used += (size_t)snprintf(
            cmd + used, sizeof cmd - used,
            "'%s' train --num-layers %d --hidden-size %d --num-attention-heads %d --seq-length %d "
            "--micro-batch-size %d --global-batch-size %d --make-vocab-size-divisible-by %d "
            "--num-experts %d --moe-router-topk %d --threads %d%s --train-iters 24 "
            "--log-interval 2 --eval-iters 0 --run-dir '%s.%d' > '%s.%d.log' 2>&1 & ",
            self, c->num_layers, c->hidden_size, c->num_attention_heads, c->seq_length,
            c->micro_batch_size, c->global_batch_size, c->make_vocab_size_divisible_by,
            c->num_experts, c->moe_router_topk, c->threads, c->bf16 ? " --bf16" : "", dir, k, dir,
            k);
    if (used < sizeof cmd) snprintf(cmd + used, sizeof cmd - used, "wait)");
    const int rc = system(cmd);
    double measured = 0;
    for (int k = 0; k < copies; k++) {
        char run[96];
        snprintf(run, sizeof run, "%s.%d", dir, k);
        const double t = rc == 0 ? quartile_step_cpu(run) : NAN;
        if (!isfinite(t))
            die("%s: the serial step of --calibrate failed (exit %d): see %s.log", who, rc, run);
        measured += t / copies;
        if (c->num_experts > 1) add_moe_load(run, c->num_experts, world, load, lines);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'.*", dir);
    if (system(cmd) != 0) fprintf(stderr, "%s: could not remove %s.*\n", who, dir);
    return measured;
}

/* The expert load of every ep, the mean over the serial runs' step lines (load[ep] summed,
 * lines counted), into cal. */
static void keep_moe_load(plan_calibration *cal, const double *load, int lines, int world) {
    cal->nmoe_load = 0;
    for (int ep = 2; lines > 0 && ep <= world && cal->nmoe_load < PLAN_MAX_MOE_LOADS; ep++)
        if (load[ep] > 0)
            cal->moe_load[cal->nmoe_load++] = (plan_moe_load){ep, fmax(1, load[ep] / lines)};
}

/* The trainer factor: the measured serial step of c over the time model's prediction of it
 * from the kernels alone. */
static void keep_trainer_factor(const train_config *serial, double measured, plan_calibration *cal,
                                const char *who) {
    train_config c = *serial;
    char err[512];
    c.predict_only = true;
    if (!train_config_check(&c, 1, err, sizeof err)) die("%s: %s", who, err);
    train_memory *tm = train_memory_predict(&c, 0, who);
    cal->trainer_factor = 0;
    cal->trainer_factor = measured / plan_time_predict(&c, tm, cal).step;
    train_memory_free(tm);
}

void plan_calibrate(const train_config *c, int world, plan_calibration *cal, const char *who) {
    plan_calibration_measure(c, world, PLAN_CALIBRATE_SECONDS, cal);
    /* as many copies as the job's ranks keep cores busy (at least one) */
    const int cores = gemm_rate_cores(), copies = world < cores ? world : cores > 1 ? cores : 1;
    const train_config serial = serial_config(c);
    double *load = callocCheck((size_t)world + 1, sizeof *load);
    int lines = 0;
    /* the serial step and the links each twice, in turn: another job's load comes in
     * stretches of seconds, and the faster of each is kept */
    double step = serial_step(&serial, world, copies, load, &lines, who);
    plan_links_measure(cal, world, who);
    step = fmin(step, serial_step(&serial, world, copies, load, &lines, who));
    plan_calibration *again = mallocCheck(sizeof *again);
    *again = *cal;
    plan_links_measure(again, world, who);
    plan_links_keep_faster(cal, again);
    free(again);
    keep_moe_load(cal, load, lines, world);
    free(load);
    keep_trainer_factor(&serial, step, cal, who);
}
