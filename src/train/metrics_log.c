/* metrics_log.c — metrics.jsonl's lines and the finite check of their values (metrics_log.h). */
#include "src/train/metrics_log.h"

#include <math.h>

#include "src/core/json.h"
#include "src/runtime/hosts.h"
#include "src/runtime/dist.h"

void metrics_check_step(const train_config *c, int it, const step_result *s) {
    if (!isfinite(s->loss))
        dist_fail_all("trident train: the loss became %g at iteration %d, first on rank %d (last "
                      "pipeline stage); lower --lr or check the data",
                      (double)s->loss, it, s->loss_rank);
    if (s->moe_tokens && !isfinite(s->aux_loss))
        dist_fail_all("trident train: aux loss is %g at iteration %d: --moe-aux-loss-coeff %g "
                      "times the load-balancing loss is beyond single precision (lower "
                      "--moe-aux-loss-coeff)",
                      (double)s->aux_loss, it, (double)c->moe_aux_loss_coeff);
    if (!isfinite(s->grad_norm) && !s->skipped)
        dist_fail_all("trident train: the gradient norm is %g at iteration %d (loss %g): a "
                      "gradient overflowed single precision; lower --lr%s",
                      s->grad_norm, it, (double)s->loss,
                      s->moe_tokens ? " or --moe-aux-loss-coeff" : "");
}

void metrics_check_eval(int it, float loss) {
    if (!isfinite(loss))
        dist_fail_all("trident train: the held-out loss is %g at iteration %d: the model's "
                      "outputs overflow single precision (lower --lr)",
                      (double)loss, it);
}

/* MoE: the step's switch loss and, per layer, the (token, choice) pairs each expert got over
 * the global batch and those dropped (viz/moe_load_draw.h draws them). */
static void log_moe(json_writer *w, const train_config *c, const step_result *s) {
    const int L = c->num_layers, E = c->num_experts;
    json_field_double(w, "moe_aux_loss", "%.7g", (double)s->aux_loss);
    json_key(w, "moe_tokens");
    json_begin_array(w, JSON_COMPACT);
    for (int l = 0; l < L; l++) {
        json_begin_array(w, JSON_COMPACT);
        for (int e = 0; e < E; e++) json_int(w, (long long)s->moe_tokens[(size_t)l * E + e]);
        json_end_array(w);
    }
    json_end_array(w);
    json_key(w, "moe_dropped");
    json_begin_array(w, JSON_COMPACT);
    for (int l = 0; l < L; l++) json_int(w, (long long)s->moe_dropped[l]);
    json_end_array(w);
}

void metrics_log_step(FILE *f, const train_config *c, int it, const step_result *s, double tps,
                      double model_flops_per_s, double peak_flops) {
    json_writer w;
    json_init_file(&w, f, 0);
    json_begin_object(&w, JSON_COMPACT);
    json_field_int(&w, "step", it);
    json_field_double(&w, "loss", "%.7g", (double)s->loss);
    json_field_double(&w, "lr", "%.6g", (double)s->lr);
    /* -1: fp16 skipped the step for a non-finite norm (src/trace/run_metrics.h) */
    json_field_double(&w, "grad_norm", "%.6g", isfinite(s->grad_norm) ? s->grad_norm : -1.0);
    json_field_double_or_null(&w, "tokens_per_sec", "%.1f", tps);
    json_field_uint(&w, "peak_activation_bytes", s->peak_activation_bytes);
    if (hosts_count() > 1) { /* a run across hosts: where the step's bytes went */
        json_field_uint(&w, "bytes_within_host", s->bytes_within_host);
        json_field_uint(&w, "bytes_across_hosts", s->bytes_across_hosts);
    }
    json_field_double_or_null(&w, "model_flops_per_s", "%.4g", model_flops_per_s);
    if (peak_flops > 0)
        json_field_double_or_null(&w, "mfu", "%.4g", model_flops_per_s / peak_flops);
    if (c->fp16) {
        json_field_double(&w, "loss_scale", "%g", (double)s->loss_scale);
        json_field_bool(&w, "skipped", s->skipped);
    }
    if (s->moe_tokens) log_moe(&w, c, s);
    json_end_object(&w);
    fputc('\n', f);
    fflush(f);
}

void metrics_log_eval(FILE *f, int it, float loss) {
    json_writer w;
    json_init_file(&w, f, 0);
    json_begin_object(&w, JSON_COMPACT);
    json_field_int(&w, "step", it);
    json_field_double(&w, "eval_loss", "%.7g", (double)loss);
    json_end_object(&w);
    fputc('\n', f);
    fflush(f);
}

void metrics_log_memory(FILE *f, int step, int rank, const zero_memory_rank *m, size_t peak) {
    json_writer w;
    json_init_file(&w, f, 0);
    json_begin_object(&w, JSON_COMPACT);
    json_field_int(&w, "step", step);
    json_field_int(&w, "rank", rank);
    json_field_int(&w, "tp_rank", m->tp_rank);
    json_field_int(&w, "pp_rank", m->pp_rank);
    json_field_int(&w, "dp_rank", m->dp_rank);
    json_field_uint(&w, "memory_predicted_bytes", m->total);
    json_field_uint(&w, "memory_peak_bytes", peak);
    json_end_object(&w);
    fputc('\n', f);
}
