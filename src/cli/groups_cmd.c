/* groups_cmd.c — `trident groups`: the process groups of a layout as text, JSON or a picture.
 *
 *   trident groups --world-size 16 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4
 *   trident groups ... --format json
 *   trident groups ... -o groups.png        (.png .svg .pdf: picture; .json; .txt)
 *   trident groups ... -o g.pdf --theme slides --width 1600   (for a slide)
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
#include "src/runtime/groups.h"
#include "viz/canvas.h"
#include "viz/groups_draw.h"

static const pg_kind k_kinds[PG_NKINDS] = {PG_TP, PG_DP, PG_PP, PG_MP, PG_EMBEDDING};

static const char *kind_title(pg_kind k) {
    switch (k) {
    case PG_TP: return "tensor parallel";
    case PG_DP: return "data parallel";
    case PG_PP: return "pipeline parallel";
    case PG_MP: return "model parallel = tp × pp";
    case PG_EMBEDDING: return "first and last pipeline stage";
    default: return "?";
    }
}

/* "[0,1,4,5]" style list (the text output; JSON writes the same with json.h). */
static void print_members(FILE *f, const int *m, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", m[i]);
    fputc(']', f);
}

static void write_text(FILE *f, const pg_layout *l, int ranks_per_node) {
    fprintf(f,
            "layout: world %d = tp %d × pp %d × dp %d, vpp %d, rank order %s, %d ranks per node\n",
            l->world, l->tp, l->pp, l->dp, l->vpp, pg_order_name(l->order), ranks_per_node);
    int *m = mallocCheck(sizeof(int) * (size_t)l->world);
    for (int k = 0; k < PG_NKINDS; k++) {
        pg_kind kind = k_kinds[k];
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
    fprintf(f, "\nrank  node  tp  pp  dp  prev  next\n");
    for (int r = 0; r < l->world; r++) {
        pg_coord c = pg_coord_of(l, r);
        fprintf(f, "%4d  %4d  %2d  %2d  %2d  %4d  %4d\n", r, r / ranks_per_node, c.tp, c.pp, c.dp,
                pg_prev_pp_rank(l, r), pg_next_pp_rank(l, r));
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
    json_field_string(&w, "rank_order", pg_order_name(l->order));
    json_field_int(&w, "ranks_per_node", ranks_per_node);
    json_end_object(&w);
    int *m = mallocCheck(sizeof(int) * (size_t)l->world);
    for (int k = 0; k < PG_NKINDS; k++) {
        pg_kind kind = k_kinds[k];
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

int cmd_groups(int argc, char **argv) {
    int world = 0, tp = 1, pp = 1, vpp = 1, per_node = 8;
    const char *order = "tp-dp-pp", *format = "text", *output = NULL, *theme = NULL;
    const char *schedule = "1f1b";
    int width = 0, height = 0;
    flag_spec specs[] = {
        {"--world-size", FLAG_INT, &world, "number of ranks (required)", NULL},
        {"--tensor-model-parallel-size", FLAG_INT, &tp, "ranks per tensor-parallel group", NULL},
        {"--pipeline-model-parallel-size", FLAG_INT, &pp, "pipeline stages", NULL},
        {"--virtual-pipeline-model-parallel-size", FLAG_INT, &vpp,
         "model chunks per stage (interleaved)", NULL},
        {"--pipeline-schedule", FLAG_CHOICE, &schedule,
         "zbv: 2 chunks per rank in a V, the embedding group is pipeline rank 0 alone",
         "gpipe|1f1b|interleaved|zb-h1|zbv"},
        {"--rank-order", FLAG_CHOICE, &order, "how coordinates map to ranks", "tp-dp-pp|tp-pp-dp"},
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
                        "--pipeline-model-parallel-size P [-o FILE]\n"
                        "Lists (or draws) the tensor, data, pipeline, model-parallel and embedding "
                        "groups of a layout.";
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
    const bool zbv = strcmp(schedule, "zbv") == 0;
    if (!pg_layout_make(&l, world, tp, pp, zbv ? 2 : vpp, order, err, sizeof err))
        die("trident groups: %s", err);
    l.v_placement = zbv;

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
