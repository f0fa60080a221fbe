/* Placeholder until the trainer lands. */
#include <stdio.h>

#include "src/cli/commands.h"

int cmd_train(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "trident: train is not built yet\n");
    return 1;
}

int cmd_eval(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "trident: eval is not built yet\n");
    return 1;
}
