/* run_metrics.h — RUN_DIR/metrics.jsonl read back: the curves of one training run, and the
 * layout it ran at (from RUN_DIR/config.json, else rank 0's trace header), for `trident
 * render --metrics` and the trainer's loss.png.
 *
 * metrics.jsonl holds one flat JSON object per line, written by src/train/trainer.c:
 *
 *   {"step":10,"loss":4.70,"lr":0.0015,"grad_norm":1.66,"tokens_per_sec":23189.2, ...}
 *   {"step":10,"eval_loss":4.55}
 *   {"step":1000,"rank":3,"tp_rank":1,"pp_rank":0,"dp_rank":1,"memory_predicted_bytes":8954368,
 *    "memory_peak_bytes":8954368}
 *
 * The last kind, one line per rank at the end of the run (rank 0 gathers them): the bytes
 * `trident memory` predicts for that rank (src/train/memory_predict.h) and the high-water mark
 * its allocator measured over the whole run (src/device/device_memory.h). Nothing here reads
 * them (they have no "loss"); `trident bench --suite memory` and the tests do.
 *
 * A line with "loss" is a training step, a line with "eval_loss" a held-out evaluation; other
 * objects are skipped (room for lines a later trainer adds), unknown keys are ignored. A line
 * that is not a flat object of numbers, strings, true/false/null, or a step/loss line whose
 * "step" is not a non-negative integer or whose loss is not a number, is an error naming the
 * file and line. grad_norm -1 (the trainer's mark for a non-finite norm) and absent values
 * read as NAN.
 *
 *   char err[512];
 *   run_metrics *m = run_metrics_read("runs/demo", err, sizeof err);
 *   if (!m) die("%s", err);
 *   for (int i = 0; i < m->nsteps; i++) plot(m->steps[i].step, m->steps[i].loss);
 *   run_metrics_free(m);
 *
 * Not here: drawing the curves (viz/metrics_plot.h), writing the file (the trainer).
 */
#ifndef TRIDENT_TRACE_RUN_METRICS_H
#define TRIDENT_TRACE_RUN_METRICS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    int step;
    double loss, lr, grad_norm, tokens_per_sec; /* NAN when absent */
    double model_flops_per_s, mfu;              /* NAN when absent (runs before MFU) */
} run_metrics_step;

typedef struct {
    int step;
    double loss; /* held-out */
} run_metrics_eval;

typedef struct {
    char dir[4096];   /* as given, without trailing '/' */
    char layout[160]; /* "tp2×pp2×dp2, interleaved v2, ZeRO", "serial"; "" when unknown */
    int nsteps, nevals;
    run_metrics_step *steps; /* (nsteps) in file order */
    run_metrics_eval *evals; /* (nevals) in file order */
} run_metrics;

/* NULL and one line in err when RUN_DIR/metrics.jsonl is missing, unreadable, malformed (the
 * line is named) or holds no training step. */
run_metrics *run_metrics_read(const char *run_dir, char *err, size_t errlen);
void run_metrics_free(run_metrics *m);

/* The layout label of a configuration JSON object (RUN_DIR/config.json, a trace header's
 * config_json) into buf; false when it names no layout. */
bool run_metrics_layout_label(const char *config_json, char *buf, size_t cap);

#endif /* TRIDENT_TRACE_RUN_METRICS_H */
