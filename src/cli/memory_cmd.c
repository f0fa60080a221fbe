/* memory_cmd.c — `trident memory`: the bytes every rank of a training run will hold, predicted
 * from train's own flags, no MPI, nothing allocated.
 *
 *   trident memory --world-size 8 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
 *   trident memory ... --use-distributed-optimizer --bf16 --recompute-granularity selective
 *   trident memory ... --data-parallel-sharding-strategy optim_grads_params   (ZeRO-3)
 *   trident memory ... --num-experts 8 --expert-model-parallel-size 2 --context-parallel-size 2
 *   trident memory ... --format json        or   -o bill.png|.svg|.pdf|.json|.txt
 *
 * Every flag of `trident train` is taken and checked by the same rules (train_config_check
 * for --world-size ranks), except that the model need not fit this machine. The text is: the
 * layout; one row per rank (its tp, pp, dp coordinates, and cp, ep when either size is above
 * 1), one column per kind of buffer (src/zero/memory_plan.h); the ZeRO paper's table for rank
 * 0's parameters, stage by stage, Trident's storage beside the paper's bytes; and Korthikanti
 * et al.'s activations per layer, the paper's formulas beside Trident's and the model's own
 * layout. JSON holds the same; a picture is one stacked bar per rank (viz/memory_draw.h).
 * What the numbers are: src/train/memory_predict.h. A run measures them: `trident train`
 * writes memory_peak_bytes beside memory_predicted_bytes per rank into RUN_DIR/metrics.jsonl.
 *
 * Not here: the prediction (src/train/memory_predict.c) or the picture (viz/memory_draw.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/cli/commands.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/flags.h"
#include "src/core/json.h"
#include "src/train/config.h"
#include "src/train/memory_predict.h"
#include "viz/canvas.h"
#include "viz/memory_draw.h"

#define WHO "trident memory"

enum {
    MEMORY_MAX_WORLD = 1 << 20, /* a listing of a few hundred MB at most */
};
#define MEMORY_MAX_BYTES 1e18 /* per rank: sums of size_t stay far from wrapping */

static const char k_usage[] =
    "Usage: trident memory --world-size N [train's flags]\n"
    "         [--format text|json] [-o FILE.png|.svg|.pdf|.json|.txt]\n\n"
    "Predicts the bytes every rank of `trident train` would hold at its peak, from the same\n"
    "flags and without MPI: parameters, gradients, fp32 master weights and Adam state (by ZeRO\n"
    "stage), activations (the schedule's in-flight micro-batches, with recomputation and\n"
    "sequence parallelism), the split backward's B->W hand-overs, work spaces, pipeline\n"
    "message buffers, gradient buckets and the largest temporary. `trident train` measures the\n"
    "same with its own allocator and writes both per rank into RUN_DIR/metrics.jsonl.";

/* A generous upper bound of one rank's bytes, in double (no product of flags can wrap):
 * every layer and every micro-batch's activations on one rank, with the model state. */
static void check_size(const train_config *c) {
    const double L = c->num_layers, C = c->hidden_size, T = c->seq_length, B = c->micro_batch_size;
    const double V = c->padded_vocab, NH = c->num_attention_heads, m = c->num_microbatches;
    /* MoE: E experts' MLPs and the router per block; the layer's worst case, ep·N·K rows */
    const double E = c->num_experts > 0 ? c->num_experts : 1;
    const double K = c->num_experts > 0 ? c->moe_router_topk : 0;
    const double ep = c->expert_model_parallel_size;
    const double params = L * (4 * C * C + 8 * E * C * C + (5 * E + 13) * C) + (V + T) * C;
    const double acts = L * (20 * B * T * C + B * NH * T * T + ep * B * T * K * 16 * C) +
                        2 * B * T * V;
    const double need = 4 * (5 * params + (m + 2) * acts);
    if (need > MEMORY_MAX_BYTES)
        die(WHO ": this model could need up to %.3g bytes per rank; predictions stop at %.0e "
                "bytes (use a smaller model or micro-batch, or more ranks)",
            need, MEMORY_MAX_BYTES);
}

/* ---- text ------------------------------------------------------------------------------ */

/* Whether the layout has context or expert parallelism: then every listing of a rank's
 * coordinates adds cp and ep (without, the output is what it always was). */
static bool has_cp_ep(const train_config *c) {
    return c->context_parallel_size > 1 || c->expert_model_parallel_size > 1;
}

static void print_header(FILE *f, const train_config *c, const train_memory *tm) {
    const char *prec = c->bf16 ? "bf16" : c->fp16 ? "fp16" : "fp32";
    fprintf(f, "%s: %d rank%s = tensor %d × ", WHO, c->world_size, c->world_size == 1 ? "" : "s",
            c->tensor_model_parallel_size);
    if (c->context_parallel_size > 1) fprintf(f, "context %d × ", c->context_parallel_size);
    fprintf(f, "pipeline %d × data %d", c->pipeline_model_parallel_size, c->dp);
    if (c->expert_model_parallel_size > 1)
        fprintf(f, " (expert %d × expert-data %d)", c->expert_model_parallel_size,
                c->dp / c->expert_model_parallel_size);
    fprintf(f, ", schedule %s", c->pipeline_schedule);
    if (c->vpp > 1) fprintf(f, " (%d chunks per rank)", c->vpp);
    fprintf(f, ", %s (%s), %s\n", zero_stage_name(tm->stage), zero_stage_strategy(tm->stage), prec);
    fprintf(f,
            "model: %d layers, hidden %d, %d heads, seq %d, vocab 256 (padded %d); micro-batch %d "
            "× %d micro-batches per step\n",
            c->num_layers, c->hidden_size, c->num_attention_heads, c->seq_length, c->padded_vocab,
            c->micro_batch_size, c->num_microbatches);
    if (c->num_experts > 0) {
        fprintf(f, "mixture of experts: %d experts, top-%d, ", c->num_experts, c->moe_router_topk);
        if (c->moe_expert_capacity_factor > 0)
            fprintf(f, "capacity factor %g", (double)c->moe_expert_capacity_factor);
        else fprintf(f, "dropless");
        fprintf(f, "; %d experts per expert-parallel rank\n",
                c->num_experts / c->expert_model_parallel_size);
    }
    fprintf(f, "recomputation %s", c->recompute_granularity ? c->recompute_granularity : "none");
    if (c->recompute_method) fprintf(f, " %s %d", c->recompute_method, c->recompute_num_layers);
    fprintf(f, ", sequence parallelism %s\n", c->sequence_parallel ? "on" : "off");
    fprintf(f, "%s: %s\n", zero_stage_name(tm->stage), zero_stage_sharded(tm->stage));
}

static int column_width(int k) {
    const int n = (int)strlen(zero_mem_kind_name(k));
    return n > 10 ? n : 10;
}

/* One row per rank, one column per kind that some rank holds, in one unit. */
static void print_ranks(FILE *f, const train_config *c, const train_memory *tm) {
    const bool five = has_cp_ep(c);
    bool present[ZERO_MEM_NKINDS] = {false};
    double top = 1;
    for (int r = 0; r < tm->world; r++) {
        for (int k = 0; k < ZERO_MEM_NKINDS; k++) present[k] |= tm->ranks[r].bytes[k] > 0;
        top = fmax(top, (double)tm->ranks[r].total);
    }
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double unit = 1;
    int u = 0;
    while (top / unit >= 1e4 && u < 5) unit *= 1024, u++;
    fprintf(f, "\npredicted peak per rank, %s (the high-water mark of Trident's allocator):\n",
            units[u]);
    fprintf(f, "rank  tp  pp  dp%s", five ? "  cp  ep" : "");
    for (int k = 0; k < ZERO_MEM_NKINDS; k++)
        if (present[k]) fprintf(f, "  %*s", column_width(k), zero_mem_kind_name(k));
    fprintf(f, "  %10s  %s\n", "total", "sets held");
    for (int r = 0; r < tm->world; r++) {
        const zero_memory_rank *m = &tm->ranks[r];
        fprintf(f, "%4d  %2d  %2d  %2d", r, m->tp_rank, m->pp_rank, m->dp_rank);
        if (five) fprintf(f, "  %2d  %2d", m->cp_rank, m->ep_rank);
        for (int k = 0; k < ZERO_MEM_NKINDS; k++)
            if (present[k]) fprintf(f, "  %*.2f", column_width(k), (double)m->bytes[k] / unit);
        fprintf(f, "  %10.2f  %d\n", (double)m->total / unit, m->sets);
    }
}

static void print_summary(FILE *f, const train_config *c, const train_memory *tm) {
    const int big = train_memory_largest(tm);
    const zero_memory_rank *m = &tm->ranks[big];
    char a[32], b[32], d[32], five[48] = "";
    if (has_cp_ep(c)) snprintf(five, sizeof five, ", cp %d, ep %d", m->cp_rank, m->ep_rank);
    fprintf(f,
            "the most: rank %d (tp %d, pp %d, dp %d%s), %s; one micro-batch's activations there "
            "%s, at most %d held at once",
            big, m->tp_rank, m->pp_rank, m->dp_rank, five,
            zero_bytes_text((double)m->total, a, sizeof a),
            zero_bytes_text((double)m->set_bytes, b, sizeof b), m->sets);
    if (m->logits_bytes)
        fprintf(f, "; logits and their gradient %s",
                zero_bytes_text((double)m->logits_bytes, d, sizeof d));
    fprintf(f, "\n");
}

/* Bytes per parameter of a stage's model state, as formulas (Ψ parameters, Nd = dp): Trident's
 * fp32 storage, and the paper's (which Trident's equals in fp32). */
static const char *zero_formula(int stage, bool mixed, bool paper) {
    static const char *t[2][2][4] = {
        {{"16Ψ", "8Ψ + 8Ψ/Nd", "4Ψ + 12Ψ/Nd", "16Ψ/Nd"},
         {"16Ψ", "8Ψ + 8Ψ/Nd", "4Ψ + 12Ψ/Nd", "16Ψ/Nd"}},
        {{"20Ψ", "8Ψ + 12Ψ/Nd", "4Ψ + 16Ψ/Nd", "20Ψ/Nd"},
         {"16Ψ", "4Ψ + 12Ψ/Nd", "2Ψ + 14Ψ/Nd", "16Ψ/Nd"}},
    };
    return t[mixed][paper][stage];
}

/* The ZeRO paper's table for rank 0, decimal units as the paper. */
static void print_zero_table(FILE *f, const train_config *c, const train_memory *tm) {
    train_memory_zero_row rows[4];
    train_memory_zero_table(tm, c, 0, rows);
    const bool mixed = c->bf16 || c->fp16;
    fprintf(f,
            "\nZeRO stages for rank 0 (Ψ = %zu parameters, Nd = %s %d), MB = 1e6 bytes per rank; "
            "Trident stores parameters and gradients in fp32%s:\n",
            tm->ranks[0].numel, c->context_parallel_size > 1 ? "dp × cp" : "dp",
            train_config_zero_ranks(c), mixed ? " (16-bit values)" : "");
    fprintf(f,
            "  stage    strategy             params     grads    master  Adam m+v     total  "
            "Trident      | paper (%s)\n",
            mixed ? "2 + 2 + 12 bytes, K = 12" : "fp32: 4 + 4 + 8 bytes");
    for (int s = 0; s < 4; s++) {
        const train_memory_zero_row *r = &rows[s];
        fprintf(f, "%c %-8s %-18s", s == tm->stage ? '*' : ' ', zero_stage_name(s),
                zero_stage_strategy(s));
        for (int k = 0; k <= ZERO_MEM_ADAM; k++) fprintf(f, "  %8.3f", (double)r->trident[k] / 1e6);
        fprintf(f, "  %8.3f  %-12s | %8.3f  %s\n", (double)r->trident_total / 1e6,
                zero_formula(s, mixed, false), r->paper_total / 1e6, zero_formula(s, mixed, true));
    }
    fprintf(f,
            "  (* the stage this layout trains with; every stage cut as ZeRO-1 cuts, in one piece: "
            "the per-rank bill above has ZeRO-2/3's unit-by-unit shards and work buffers)\n");
}

static void print_activation_table(FILE *f, const train_config *c) {
    train_memory_layer_row rows[TRAIN_ACT_NROWS];
    train_memory_activation_table(c, rows);
    fprintf(f,
            "\nactivations per layer, one micro-batch (Korthikanti et al. 2022, table 2), s = %d, "
            "b = %d, h = %d, a = %d, t = %d, bytes:\n",
            c->seq_length, c->micro_batch_size, c->hidden_size, c->num_attention_heads,
            c->tensor_model_parallel_size);
    if (c->num_experts > 0)
        fprintf(f, "  (the paper's dense layer: an MLP where the experts are)\n");
    fprintf(f, "  %-26s %-27s %12s  %-34s %12s %12s\n", "setting", "paper (16-bit, dropout)",
            "bytes", "Trident (fp32, no dropout)", "formula", "layout");
    for (int i = 0; i < TRAIN_ACT_NROWS; i++) {
        const train_memory_layer_row *r = &rows[i];
        if (!r->available) {
            fprintf(f, "  %-26s (sequence parallelism needs s %% t == 0)\n", r->setting);
            continue;
        }
        fprintf(f, "  %-26s %-27s %12.0f  %-34s %12.0f %12zu\n", r->setting, r->paper_formula,
                r->paper_bytes, r->trident_formula, r->trident_bytes, r->layout_bytes);
    }
}

static void write_text(FILE *f, const train_config *c, const train_memory *tm) {
    print_header(f, c, tm);
    print_ranks(f, c, tm);
    print_summary(f, c, tm);
    print_zero_table(f, c, tm);
    print_activation_table(f, c);
}

/* ---- json ------------------------------------------------------------------------------ */

static void json_layout(json_writer *w, const train_config *c, const train_memory *tm) {
    json_key(w, "layout");
    json_begin_object(w, JSON_SPACED);
    json_field_int(w, "world_size", c->world_size);
    json_field_int(w, "tensor_model_parallel_size", c->tensor_model_parallel_size);
    json_field_int(w, "pipeline_model_parallel_size", c->pipeline_model_parallel_size);
    json_field_int(w, "data_parallel_size", c->dp);
    if (c->context_parallel_size > 1)
        json_field_int(w, "context_parallel_size", c->context_parallel_size);
    if (c->expert_model_parallel_size > 1)
        json_field_int(w, "expert_model_parallel_size", c->expert_model_parallel_size);
    if (c->num_experts > 0) {
        json_field_int(w, "num_experts", c->num_experts);
        json_field_int(w, "moe_router_topk", c->moe_router_topk);
    }
    json_field_int(w, "virtual_pipeline_size", c->vpp);
    json_field_string(w, "pipeline_schedule", c->pipeline_schedule);
    json_field_int(w, "num_microbatches", c->num_microbatches);
    json_field_int(w, "zero_stage", tm->stage);
    json_field_string(w, "data_parallel_sharding_strategy", zero_stage_strategy(tm->stage));
    json_field_string(w, "precision", c->bf16 ? "bf16" : c->fp16 ? "fp16" : "fp32");
    json_field_string(w, "recompute_granularity",
                      c->recompute_granularity ? c->recompute_granularity : "none");
    json_field_bool(w, "sequence_parallel", c->sequence_parallel);
    json_end_object(w);
}

static void json_ranks(json_writer *w, const train_config *c, const train_memory *tm) {
    json_key(w, "ranks");
    json_begin_array(w, JSON_LINES);
    for (int r = 0; r < tm->world; r++) {
        const zero_memory_rank *m = &tm->ranks[r];
        json_begin_object(w, JSON_COMPACT);
        json_field_int(w, "rank", r);
        json_field_int(w, "tp", m->tp_rank);
        json_field_int(w, "pp", m->pp_rank);
        json_field_int(w, "dp", m->dp_rank);
        if (has_cp_ep(c)) {
            json_field_int(w, "cp", m->cp_rank);
            json_field_int(w, "ep", m->ep_rank);
        }
        for (int k = 0; k < ZERO_MEM_NKINDS; k++)
            json_field_uint(w, zero_mem_kind_key(k), m->bytes[k]);
        json_field_uint(w, "total", m->total);
        json_field_int(w, "activation_sets_held", m->sets);
        json_field_uint(w, "activation_set_bytes", m->set_bytes);
        json_field_uint(w, "logits_bytes", m->logits_bytes);
        json_end_object(w);
    }
    json_end_array(w);
}

static void json_tables(json_writer *w, const train_config *c, const train_memory *tm) {
    train_memory_zero_row z[4];
    train_memory_zero_table(tm, c, 0, z);
    json_key(w, "zero_stages_rank0");
    json_begin_array(w, JSON_LINES);
    for (int s = 0; s < 4; s++) {
        json_begin_object(w, JSON_COMPACT);
        json_field_int(w, "stage", s);
        json_field_string(w, "strategy", zero_stage_strategy(s));
        for (int k = 0; k <= ZERO_MEM_ADAM; k++)
            json_field_uint(w, zero_mem_kind_key(k), z[s].trident[k]);
        json_field_uint(w, "total", z[s].trident_total);
        json_field_double(w, "paper_total", "%.0f", z[s].paper_total);
        json_end_object(w);
    }
    json_end_array(w);
    train_memory_layer_row a[TRAIN_ACT_NROWS];
    train_memory_activation_table(c, a);
    json_key(w, "activations_per_layer");
    json_begin_array(w, JSON_LINES);
    for (int i = 0; i < TRAIN_ACT_NROWS; i++) {
        json_begin_object(w, JSON_COMPACT);
        json_field_string(w, "setting", a[i].setting);
        json_field_string(w, "paper_formula", a[i].paper_formula);
        json_field_double_or_null(w, "paper_bytes", "%.0f",
                                  a[i].available ? a[i].paper_bytes : NAN);
        json_field_string(w, "trident_formula", a[i].trident_formula);
        json_field_double_or_null(w, "trident_bytes", "%.0f",
                                  a[i].available ? a[i].trident_bytes : NAN);
        if (a[i].available) json_field_uint(w, "layout_bytes", a[i].layout_bytes);
        else json_key(w, "layout_bytes"), json_null(w);
        json_end_object(w);
    }
    json_end_array(w);
}

static void write_json(FILE *f, const train_config *c, const train_memory *tm) {
    json_writer w;
    json_init_file(&w, f, 2);
    json_begin_object(&w, JSON_LINES);
    json_layout(&w, c, tm);
    json_ranks(&w, c, tm);
    json_tables(&w, c, tm);
    json_end_object(&w);
    fputc('\n', f);
}

/* ---- the command ----------------------------------------------------------------------- */

static void draw(const char *path, const train_config *c, const train_memory *tm) {
    char title[256], sub[512], cp[32] = "", ep[32] = "";
    if (c->context_parallel_size > 1) snprintf(cp, sizeof cp, " × cp %d", c->context_parallel_size);
    if (c->expert_model_parallel_size > 1)
        snprintf(ep, sizeof ep, " (ep %d)", c->expert_model_parallel_size);
    snprintf(title, sizeof title,
             "Predicted peak memory per rank: tp %d%s × pp %d × dp %d%s, %s, %s, %s, micro-batch "
             "%d × %d",
             c->tensor_model_parallel_size, cp, c->pipeline_model_parallel_size, c->dp, ep,
             c->pipeline_schedule, zero_stage_name(tm->stage),
             c->bf16   ? "bf16"
             : c->fp16 ? "fp16"
                       : "fp32",
             c->micro_batch_size, c->num_microbatches);
    snprintf(sub, sizeof sub, "%s: %s", zero_stage_name(tm->stage), zero_stage_sharded(tm->stage));
    viz_memory_chart ch = {
        tm->ranks,
        tm->world,
        NULL,
        title,
        sub,
        "The high-water mark of Trident's allocator (src/train/memory_predict.h); "
        "trident train measures it into RUN_DIR/metrics.jsonl."};
    viz_memory_draw(path, &ch);
}

static void write_output(const char *output, const char *format, const train_config *c,
                         const train_memory *tm) {
    const bool json = format && strcmp(format, "json") == 0;
    if (!output) {
        if (json) write_json(stdout, c, tm);
        else write_text(stdout, c, tm);
        return;
    }
    if (viz_format_of(output)) {
        draw(output, c, tm);
    } else {
        atomic_file af;
        FILE *f = atomic_file_open(&af, output);
        if (path_has_ext(output, ".json")) write_json(f, c, tm);
        else write_text(f, c, tm);
        atomic_file_commit(&af);
    }
    printf("wrote %s\n", output);
}

/* -o's extension and --format agree, the world is bounded, a picture has few enough bars. */
static void check_output(const char *output, const char *format, int world) {
    if (world < 1)
        die(WHO ": --world-size %d must be at least 1 (it is required: the number of "
                "ranks, e.g. 8)",
            world);
    if (world > MEMORY_MAX_WORLD)
        die(WHO ": --world-size %d is above %d ranks, the most this command lists", world,
            MEMORY_MAX_WORLD);
    if (!output) return;
    const bool pic = viz_format_of(output) != 0, js = path_has_ext(output, ".json");
    if (!pic && !js && !path_has_ext(output, ".txt"))
        die(WHO ": --output '%s' must end in .png, .svg, .pdf, .json or .txt", output);
    if (format && (pic || js != (strcmp(format, "json") == 0)))
        die(WHO ": --format %s does not match the output '%s' (its extension decides)", format,
            output);
    if (pic && world > VIZ_MEMORY_MAX_RANKS)
        die(WHO ": a picture of --world-size %d ranks would be unreadable; pictures take at most "
                "%d (use a .txt or .json output)",
            world, VIZ_MEMORY_MAX_RANKS);
}

int cmd_memory(int argc, char **argv) {
    train_config c;
    train_config_defaults(&c);
    int world = 0, width = 0, height = 0;
    const char *format = NULL, *output = NULL, *theme = NULL;
    const flag_spec extra[] = {
        {"--world-size", FLAG_INT, &world, "number of ranks (required; no MPI is started)", NULL},
        {"--format", FLAG_CHOICE, &format, "what to print without -o (-o's extension decides)",
         "text|json"},
        {"--output", FLAG_STRING, &output,
         "FILE.png|.svg|.pdf (stacked bar per rank), .json or .txt; -o for short", NULL},
        {"--theme", FLAG_CHOICE, &theme, "look of the picture: default, or slides",
         "default|slides"},
        {"--width", FLAG_INT, &width, "picture width in points (pixels for PNG); 0: its own", NULL},
        {"--height", FLAG_INT, &height, "picture height in points; 0: its own", NULL},
    };
    train_config_parse_extra(&c, "memory", k_usage, extra, (int)(sizeof extra / sizeof extra[0]),
                             argc, argv);
    viz_picture_options(WHO, theme, width, height);
    check_output(output, format, world);
    c.predict_only = true;
    char err[512];
    if (!train_config_check(&c, world, err, sizeof err)) die(WHO ": %s", err);
    const int stage = train_config_zero_stage(&c); /* train's --data-parallel-sharding-... */
    check_size(&c);
    train_memory *tm = train_memory_predict(&c, stage, WHO);
    write_output(output, format, &c, tm);
    train_memory_free(tm);
    return 0;
}
