/* metrics_log.h — the lines of RUN_DIR/metrics.jsonl, written by the lead rank of a run
 * (src/trace/run_metrics.h reads them back and documents each kind of line), and the one
 * finite check of the values a step and an evaluation make, before any of them is written.
 *
 *   step_result s = trainer_step(t, it);
 *   metrics_check_step(cfg, it, &s);          // every rank: a non-finite value ends the job
 *   if (lead) metrics_log_step(f, cfg, it, &s, tps, model_flops_per_s, peak_flops);
 *
 * What is checked, where it is made: the loss, the MoE aux loss (--moe-aux-loss-coeff can lift
 * it past single precision), the gradient norm (unless fp16 skipped the step for it: the loss
 * scaler's job) and the held-out loss. A value that is not finite stops the run with one line
 * naming it and the iteration ("aux loss is inf at iteration 3: ..."), on every rank alike
 * (each value is all-reduced), never as a bare `inf` in the file: every line goes through the
 * one JSON writer (src/core/json.h), which refuses a non-finite number. Throughput (tokens/s,
 * model FLOP/s, MFU) is a measurement that may not apply: null when it is not finite.
 *
 * Not here: the progress lines on stdout and the run around the steps (run.c), reading the file
 * back (src/trace/run_metrics.h).
 */
#ifndef TRIDENT_TRAIN_METRICS_LOG_H
#define TRIDENT_TRAIN_METRICS_LOG_H

#include <stddef.h>
#include <stdio.h>

#include "src/train/config.h"
#include "src/train/trainer.h"
#include "src/zero/memory_plan.h"

/* Ends the job (dist_fail_all, one line) when a value of step `it` is not finite. */
void metrics_check_step(const train_config *c, int it, const step_result *s);
/* The same for the held-out loss of an evaluation at step `it`. */
void metrics_check_eval(int it, float loss);

/* {"step":it,"loss":...,"lr":...,"grad_norm":...,...} and the MoE load, one line. */
void metrics_log_step(FILE *f, const train_config *c, int it, const step_result *s, double tps,
                      double model_flops_per_s, double peak_flops);
/* {"step":it,"eval_loss":...}, one line. */
void metrics_log_eval(FILE *f, int it, float loss);
/* {"step":step,"rank":k,...,"memory_predicted_bytes":...,"memory_peak_bytes":...}, one line. */
void metrics_log_memory(FILE *f, int step, int rank, const zero_memory_rank *m, size_t peak);

#endif /* TRIDENT_TRAIN_METRICS_LOG_H */
