/* groups_cmd.c — `trident groups`: the process groups of a layout as text, JSON or a picture.
 *
 *   trident groups --world-size 16 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4
 *   trident groups ... --format json
 *   trident groups ... -o groups.png        (.png .svg .pdf: picture; .json; .txt)
 *   trident groups ... -o g.pdf --theme slides --width 1600   (for a slide)
 *   trident groups --world-size 16 --tensor-model-parallel-size 2 --context-parallel-size 2 \
 *       --pipeline-model-parallel-size 2 --expert-model-parallel-size 2
 *
 * The groups of context and expert parallelism (cp, tp_cp, ep, edp, dp_cp, edp_cp) are listed
 * and drawn only when their dimension is above 1, so a tp × pp × dp layout prints as it always
 * did.
 *
 * Pure computation (groups.h) plus output; it never starts MPI, so it answers "which ranks
 * will talk to which" before a job is launched. Files are written atomically.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/cli/commands.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/flags.h"
#include "src/core/json.h"
#include "src/pp/schedule.h"
#include "src/runtime/groups.h"
#include "viz/canvas.h"
#include "viz/groups_draw.h"

/* The order of the listing: each dimension next to its relatives. */
static const pg_kind k_kinds[PG_NKINDS] = {PG_TP, PG_CP, PG_TP_CP,     PG_DP,    PG_EP,    PG_EDP,
                                           PG_PP, PG_MP, PG_EMBEDDING, PG_DP_CP, PG_EDP_CP};

static const char *kind_title(pg_kind k) {
    switch (k) {
    case PG_TP: return "tensor parallel";
    case PG_DP: return "data parallel";
    case PG_PP: return "pipeline parallel";
    case PG_MP: return "model parallel = tp × pp";
    case PG_EMBEDDING: return "first and last pipeline stage";
    case PG_CP: return "context parallel: one sequence split, attention trades keys and values";
    case PG_EP: return "expert parallel: tokens routed to experts, all-to-all";
    case PG_EDP: return "expert data parallel: copies of one expert shard";
    case PG_DP_CP: return "data × context parallel: dense gradients are averaged here";
    case PG_EDP_CP: return "expert data × context parallel: expert gradients are averaged here";
    case PG_TP_CP:
        return "tensor × context parallel: the positions of one micro-batch; MoE with sequence "
               "parallelism sums the switch loss's counts here";
    default: return "?";
    }
}

/* Whether a kind is listed: cp's and ep's groups only when that dimension is above 1 (tp_cp is
 * the tp group again at cp 1; edp_cp is listed when both are: otherwise it is the edp or the
 * dp_cp group again). */
static bool kind_shown(const pg_layout *l, pg_kind k) {
    switch (k) {
    case PG_CP:
    case PG_TP_CP:
    case PG_DP_CP: return l->cp > 1;
    case PG_EP:
    case PG_EDP: return l->ep > 1;
    case PG_EDP_CP: return l->cp > 1 && l->ep > 1;
    default: return true;
    }
}

/* Whether the layout has context or expert parallelism (extra columns and fields). */
static bool has_cp_or_ep(const pg_layout *l) { return l->cp > 1 || l->ep > 1; }

/* "[0,1,4,5]" style list (the text output; JSON writes the same with json.h). */
static void print_members(FILE *f, const int *m, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", m[i]);
    fputc(']', f);
}

static void write_text(FILE *f, const pg_layout *l, int ranks_per_node) {
    char cp[32] = "", ep[48] = "";
    if (l->cp > 1) snprintf(cp, sizeof cp, " × cp %d", l->cp);
    if (l->ep > 1) snprintf(ep, sizeof ep, " (ep %d × edp %d)", l->ep, l->edp);
    fprintf(f,
            "layout: world %d = tp %d%s × pp %d × dp %d%s, vpp %d, rank order %s, %d ranks per "
            "node\n",
            l->world, l->tp, cp, l->pp, l->dp, ep, l->vpp, pg_layout_order_name(l), ranks_per_node);
    int *m = mallocCheck(sizeof(int) * (size_t)l->world);
    for (int k = 0; k < PG_NKINDS; k++) {
        pg_kind kind = k_kinds[k];
        if (!kind_shown(l, kind)) continue;
        int n = pg_num_groups(l, kind), size = pg_group_size(l, kind);
        fprintf(f, "\n%s (%s): %d group%s of %d\n", pg_kind_name(kind), kind_title(kind), n,
                n == 1 ? "" : "s", size);
        /* Groups side by side, wrapped at about 100 columns. */
        int col = 0;
        for (int g = 0; g < n; g++) {
            pg_group_members(l, kind, g, m);
            int width = 2 + size * 3;
            if (col > 0 && col + width > 100) {
                fputc('\n', f);
                col = 0;
            }
            fputs(col ? " " : "  ", f);
            print_members(f, m, size);
            col += width;
        }
        fputc('\n', f);
    }
    const bool wide = has_cp_or_ep(l);
    fprintf(f, wide ? "\nrank  node  tp  cp  pp  dp  ep  edp  prev  next\n"
                    : "\nrank  node  tp  pp  dp  prev  next\n");
    for (int r = 0; r < l->world; r++) {
        pg_coord c = pg_coord_of(l, r);
        if (wide)
            fprintf(f, "%4d  %4d  %2d  %2d  %2d  %2d  %2d  %3d  %4d  %4d\n", r, r / ranks_per_node,
                    c.tp, c.cp, c.pp, c.dp, c.ep, c.edp, pg_prev_pp_rank(l, r),
                    pg_next_pp_rank(l, r));
        else
            fprintf(f, "%4d  %4d  %2d  %2d  %2d  %4d  %4d\n", r, r / ranks_per_node, c.tp, c.pp,
                    c.dp, pg_prev_pp_rank(l, r), pg_next_pp_rank(l, r));
    }
    free(m);
}

static void write_json(FILE *f, const pg_layout *l, int ranks_per_node) {
    json_writer w;
    json_init_file(&w, f, 2);
    json_begin_object(&w, JSON_LINES);
    json_key(&w, "layout");
    json_begin_object(&w, JSON_SPACED);
    json_field_int(&w, "world_size", l->world);
    json_field_int(&w, "tensor_model_parallel_size", l->tp);
    json_field_int(&w, "pipeline_model_parallel_size", l->pp);
    json_field_int(&w, "data_parallel_size", l->dp);
    json_field_int(&w, "virtual_pipeline_model_parallel_size", l->vpp);
    if (has_cp_or_ep(l)) {
        json_field_int(&w, "context_parallel_size", l->cp);
        json_field_int(&w, "expert_model_parallel_size", l->ep);
        json_field_int(&w, "expert_data_parallel_size", l->edp);
    }
    json_field_string(&w, "rank_order", pg_layout_order_name(l));
    json_field_int(&w, "ranks_per_node", ranks_per_node);
    json_end_object(&w);
    int *m = mallocCheck(sizeof(int) * (size_t)l->world);
    for (int k = 0; k < PG_NKINDS; k++) {
        pg_kind kind = k_kinds[k];
        if (!kind_shown(l, kind)) continue;
        int n = pg_num_groups(l, kind), size = pg_group_size(l, kind);
        json_key(&w, pg_kind_name(kind));
        json_begin_array(&w, JSON_SPACED);
        for (int g = 0; g < n; g++) {
            pg_group_members(l, kind, g, m);
            json_begin_array(&w, JSON_COMPACT);
            for (int i = 0; i < size; i++) json_int(&w, m[i]);
            json_end_array(&w);
        }
        json_end_array(&w);
    }
    json_key(&w, "ranks");
    json_begin_array(&w, JSON_LINES);
    for (int r = 0; r < l->world; r++) {
        pg_coord c = pg_coord_of(l, r);
        json_begin_object(&w, JSON_SPACED);
        json_field_int(&w, "rank", r);
        json_field_int(&w, "node", r / ranks_per_node);
        json_field_int(&w, "tp", c.tp);
        json_field_int(&w, "pp", c.pp);
        json_field_int(&w, "dp", c.dp);
        if (has_cp_or_ep(l)) {
            json_field_int(&w, "cp", c.cp);
            json_field_int(&w, "ep", c.ep);
            json_field_int(&w, "edp", c.edp);
        }
        json_end_object(&w);
    }
    json_end_array(&w);
    json_end_object(&w);
    fputc('\n', f);
    free(m);
}

enum {
    GROUPS_MAX_WORLD = 1 << 20, /* a listing of a few tens of MB at most */
    GROUPS_MAX_DRAWN = 4096,    /* a rank box a few pixels wide */
};

/* zbv and dualpipev run 2 chunks per rank in a V (the schedule's own rule, as `trident train`
 * states it): what it needs is named as the schedule's, not as a flag the user did not give. */
static void check_v_shape(const char *schedule, int pp, int vpp) {
    if (pp < 2)
        die("trident groups: --pipeline-schedule %s needs --pipeline-model-parallel-size >= 2 "
            "(got %d): its V runs down the pipeline ranks and back up",
            schedule, pp);
    if (vpp != 1 && vpp != 2)
        die("trident groups: --virtual-pipeline-model-parallel-size %d disagrees with "
            "--pipeline-schedule %s, which always runs 2 chunks per rank (leave the flag out)",
            vpp, schedule);
}

/* Megatron's advice, checked: a tensor- or context-parallel group across nodes pays the
 * network in every layer. One line on stderr per kind that does. */
static void warn_spanning(const pg_layout *l, int per_node) {
    int *node_of = mallocCheck(sizeof(int) * (size_t)l->world), *m = NULL;
    for (int r = 0; r < l->world; r++) node_of[r] = r / per_node;
    const pg_kind kinds[2] = {PG_TP, PG_CP};
    for (int k = 0; k < 2; k++) {
        int first, n = pg_groups_spanning_nodes(l, kinds[k], node_of, &first);
        if (n == 0) continue;
        const int size = pg_group_size(l, kinds[k]);
        m = mallocCheck(sizeof(int) * (size_t)size);
        pg_group_members(l, kinds[k], first, m);
        fprintf(stderr,
                "trident groups: warning: %d %s group%s span%s nodes at --ranks-per-node %d "
                "(the first: ranks %d..%d on nodes %d..%d): their collectives cross the network in "
                "every layer; keep %s inside a node\n",
                n, pg_kind_name(kinds[k]), n == 1 ? "" : "s", n == 1 ? "s" : "", per_node, m[0],
                m[size - 1], node_of[m[0]], node_of[m[size - 1]], pg_kind_name(kinds[k]));
        free(m);
    }
    free(node_of);
}

int cmd_groups(int argc, char **argv) {
    int world = 0, tp = 1, cp = 1, ep = 1, pp = 1, vpp = 1, per_node = 8;
    const char *order = "tp-cp-ep-dp-pp", *format = "text", *output = NULL, *theme = NULL;
    const char *schedule = "1f1b";
    int width = 0, height = 0;
    flag_spec specs[] = {
        {"--world-size", FLAG_INT, &world, "number of ranks (required)", NULL},
        {"--tensor-model-parallel-size", FLAG_INT, &tp, "ranks per tensor-parallel group", NULL},
        {"--context-parallel-size", FLAG_INT, &cp,
         "ranks that split one sequence (context parallel)", NULL},
        {"--expert-model-parallel-size", FLAG_INT, &ep,
         "ranks that share the experts (expert parallel); divides the data-parallel size", NULL},
        {"--pipeline-model-parallel-size", FLAG_INT, &pp, "pipeline stages", NULL},
        {"--virtual-pipeline-model-parallel-size", FLAG_INT, &vpp,
         "model chunks per stage (interleaved)", NULL},
        {"--pipeline-schedule", FLAG_CHOICE, &schedule,
         "zbv, dualpipev: 2 chunks per rank in a V, the embedding group is pipeline rank 0 alone",
         "gpipe|1f1b|interleaved|zb-h1|zbv|dualpipev"},
        {"--rank-order", FLAG_CHOICE, &order,
         "how coordinates map to ranks (tp-dp-pp, tp-pp-dp: the same two orders)",
         "tp-dp-pp|tp-pp-dp|tp-cp-ep-dp-pp|tp-cp-ep-pp-dp"},
        {"--ranks-per-node", FLAG_INT, &per_node,
         "ranks per node, for the picture and the node column", NULL},
        {"--format", FLAG_CHOICE, &format, "what to print when there is no --output", "text|json"},
        {"--output", FLAG_STRING, &output,
         "file: .png .svg .pdf (picture), .json or .txt; -o for short", NULL},
        {"--theme", FLAG_CHOICE, &theme,
         "look of the picture: default, or slides (large type, thick lines, grey-scale safe)",
         "default|slides"},
        {"--width", FLAG_INT, &width, "picture width in points (pixels for PNG); 0: its own", NULL},
        {"--height", FLAG_INT, &height,
         "picture height in points; 0: its own (both: the picture fits inside, centred)", NULL},
    };
    const char *usage = "Usage: trident groups --world-size N --tensor-model-parallel-size T "
                        "--pipeline-model-parallel-size P [--context-parallel-size C] "
                        "[--expert-model-parallel-size E] [-o FILE]\n"
                        "Lists (or draws) the tensor, data, pipeline, model-parallel and embedding "
                        "groups of a layout, and its context- and expert-parallel groups when C or "
                        "E is above 1.";
    flags_parse("groups", usage, specs, (int)(sizeof specs / sizeof specs[0]), argc, argv, NULL, 0);

    viz_picture_options("trident groups", theme, width, height);
    if (world == 0) die("trident groups: --world-size is required (the number of ranks, e.g. 8)");
    if (per_node < 1) die("trident groups: --ranks-per-node %d must be at least 1", per_node);
    /* Bounded work: the listing grows with the world, a picture with its square. */
    if (world > GROUPS_MAX_WORLD)
        die("trident groups: --world-size %d is above %d ranks, the most this command lists", world,
            GROUPS_MAX_WORLD);
    if (output && viz_format_of(output) && world > GROUPS_MAX_DRAWN)
        die("trident groups: a picture of --world-size %d ranks would be unreadable; pictures "
            "take at most %d (use a .txt or .json output)",
            world, GROUPS_MAX_DRAWN);
    pg_layout l;
    char err[512];
    const bool v_shape = pp_name_v_placement(schedule);
    if (v_shape) check_v_shape(schedule, pp, vpp);
    if (!pg_layout_make(&l, world, tp, cp, ep, pp, v_shape ? 2 : vpp, order, err, sizeof err))
        die("trident groups: %s", err);
    l.v_placement = v_shape;
    warn_spanning(&l, per_node);

    if (!output) {
        if (strcmp(format, "json") == 0) write_json(stdout, &l, per_node);
        else write_text(stdout, &l, per_node);
        return 0;
    }
    if (viz_format_of(output)) {
        viz_groups_draw(output, &l, per_node);
    } else if (path_has_ext(output, ".json") || path_has_ext(output, ".txt")) {
        atomic_file af;
        FILE *f = atomic_file_open(&af, output);
        if (path_has_ext(output, ".json")) write_json(f, &l, per_node);
        else write_text(f, &l, per_node);
        atomic_file_commit(&af);
    } else {
        die("trident groups: --output '%s' must end in .png, .svg, .pdf, .json or .txt", output);
    }
    printf("wrote %s\n", output);
    return 0;
}
