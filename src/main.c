/* main.c — the `trident` program: dispatches to a subcommand.
 *
 *   trident train    … train a GPT (serial, or under mpirun with TP × PP × DP)
 *   trident eval     … mean loss of a checkpoint over a text file
 *   trident generate … text from a checkpoint (KV cache; serial, TP and PP)
 *   trident groups   … the process groups of a layout (text, JSON or a picture), no MPI
 *   trident schedule … a pipeline schedule as data and as a picture, no MPI
 *   trident memory   … the bytes every rank of a run will hold, predicted, no MPI
 *   trident plan     … every layout's predicted step time and memory, ranked, no MPI
 *   trident render   … turn run directories into timelines (PNG/SVG/PDF/JSON/TXT)
 *   trident bench    … measured performance ratios, side by side in one run
 *   trident analyze  … one traced step explained: critical path, bubble by cause, what-if
 */
#include <stdio.h>
#include <string.h>

#include "src/cli/commands.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} k_commands[] = {
    {"train", cmd_train,
     "train a GPT: serial, or under mpirun with tensor/pipeline/data parallelism"},
    {"eval", cmd_eval, "print the mean loss of a checkpoint over a text file"},
    {"generate", cmd_generate, "continue a prompt with text sampled from a checkpoint (stdout)"},
    {"groups", cmd_groups, "list or draw the process groups of a layout (no MPI needed)"},
    {"schedule", cmd_schedule, "list, check or draw a pipeline schedule (no MPI needed)"},
    {"memory", cmd_memory, "predict the bytes every rank of a run holds (no MPI needed)"},
    {"plan", cmd_plan, "predict every layout's step time and memory, fastest first (no MPI)"},
    {"render", cmd_render, "render run directories into timelines: .png .svg .pdf .json .txt"},
    {"bench", cmd_bench, "measure performance as ratios, side by side in one run"},
    {"analyze", cmd_analyze,
     "explain a traced step: critical path, bubble by cause, what-if re-timing"},
};

static void usage(FILE *out) {
    fprintf(
        out,
        "trident — Megatron-style distributed GPT training in C, with timelines you can see.\n\n"
        "Usage: trident SUBCOMMAND [FLAGS]   (trident SUBCOMMAND --help for its flags)\n\n"
        "Subcommands:\n");
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        fprintf(out, "  %-10s %s\n", k_commands[i].name, k_commands[i].summary);
    fprintf(
        out,
        "\nMore than one rank: mpirun -np N trident train --tensor-model-parallel-size T ...\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        if (strcmp(argv[1], k_commands[i].name) == 0) return k_commands[i].fn(argc - 2, argv + 2);
    fprintf(stderr,
            "trident: unknown subcommand '%s' (one of: train eval generate groups schedule memory "
            "plan render "
            "bench analyze)\n",
            argv[1]);
    return 1;
}
