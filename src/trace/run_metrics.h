/* run_metrics.h — RUN_DIR/metrics.jsonl read back: the curves of one training run, and the
 * layout it ran at (from RUN_DIR/config.json, else rank 0's trace header), for `trident
 * render --metrics` and the trainer's loss.png.
 *
 * metrics.jsonl holds one flat JSON object per line, written by src/train/metrics_log.c
 * through the one JSON writer (no value is ever a bare inf or nan: the trainer stops first):
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
 * A step line of a mixture-of-experts run also carries the router's load (L layers, E experts):
 *
 *   {"step":10,"loss":4.7,...,"moe_aux_loss":0.0123,"moe_tokens":[[n_00,...,n_0(E-1)],...,
 *    [n_(L-1)0,...]],"moe_dropped":[d_0,...,d_(L-1)]}
 *
 * moe_tokens[l][e] is the number of tokens layer l's router sent to expert e in that step,
 * moe_dropped[l] the tokens layer l dropped (over an expert's capacity); both optional, the
 * aux loss (the load-balancing loss, mean over layers) too. They are the only arrays a line may
 * hold, and are checked: moe_tokens has 1..RUN_METRICS_MAX_MOE_LAYERS layers of the same
 * 1..RUN_METRICS_MAX_MOE_EXPERTS experts, the same L and E on every line; moe_dropped has L
 * counts and comes with moe_tokens; every count is a non-negative integer below 2^32. The
 * counts are kept as uint32 (each takes at least two bytes of text, so memory stays within
 * twice the file's size).
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
#include <stdint.h>

enum { RUN_METRICS_MAX_MOE_LAYERS = 4096, RUN_METRICS_MAX_MOE_EXPERTS = 4096 };

typedef struct {
    int step;
    double loss, lr, grad_norm, tokens_per_sec; /* NAN when absent */
    double model_flops_per_s, mfu;              /* NAN when absent (runs before MFU) */
    double moe_aux_loss;                        /* NAN when absent (not an MoE run) */
} run_metrics_step;

/* The expert load of one step line that had moe_tokens: views into run_metrics.moe_counts. */
typedef struct {
    int step;                /* the training step */
    int line;                /* its entry in run_metrics.steps (for the aux loss, the loss) */
    const uint32_t *tokens;  /* (L, E): tokens[l * E + e] went to expert e of layer l */
    const uint32_t *dropped; /* (L): tokens layer l dropped; NULL when the line had none */
} run_metrics_moe;

typedef struct {
    int step;
    double loss; /* held-out */
} run_metrics_eval;

typedef struct {
    char dir[4096];   /* as given, without trailing '/' */
    char layout[160]; /* "tp2×pp2×dp2, interleaved v2, ZeRO", "serial"; "" when unknown */
    int nsteps, nevals;
    run_metrics_step *steps;     /* (nsteps) in file order */
    run_metrics_eval *evals;     /* (nevals) in file order */
    int moe_layers, moe_experts; /* L, E; both 0 when no line has moe_tokens */
    int nmoe;
    run_metrics_moe *moe; /* (nmoe) in file order */
    uint32_t *moe_counts; /* (nmoe, L*E + L): per line its tokens, then its dropped counts */
} run_metrics;

/* NULL and one line in err when RUN_DIR/metrics.jsonl is missing, unreadable, malformed (the
 * line is named) or holds no training step. */
run_metrics *run_metrics_read(const char *run_dir, char *err, size_t errlen);
void run_metrics_free(run_metrics *m);

/* The layout label of a configuration JSON object (RUN_DIR/config.json, a trace header's
 * config_json) into buf; false when it names no layout. */
bool run_metrics_layout_label(const char *config_json, char *buf, size_t cap);

#endif /* TRIDENT_TRACE_RUN_METRICS_H */
