/* train_cmd.c — `trident train` and `trident eval`. */
#include <stdio.h>

#include "src/cli/commands.h"
#include "src/core/check.h"
#include "src/core/flags.h"
#include "src/runtime/dist.h"
#include "src/train/config.h"
#include "src/train/trainer.h"

int cmd_train(int argc, char **argv) {
    train_config c;
    train_config_defaults(&c);
    train_config_parse(&c, "train", argc, argv);
    dist_init(&argc, &argv);
    int rc = trainer_run(&c);
    dist_finalize();
    return rc;
}

int cmd_eval(int argc, char **argv) {
    (void)argc;
    (void)argv;
    die("trident eval: not built yet");
}
