/* Placeholder until its issue lands: the subcommand exists and says so. */
#include <stdio.h>

#include "src/cli/commands.h"

int cmd_schedule(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "trident: this subcommand is not built yet\n");
    return 1;
}
