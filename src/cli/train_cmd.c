/* train_cmd.c — `trident train` and `trident eval`. */
#include <stdio.h>

#include "src/cli/commands.h"
#include "src/ckpt/checkpoint.h"
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

static const char k_eval_usage[] =
    "Usage: trident eval --load CHECKPOINT_DIR [--data-path FILE] [--eval-iters N]\n\n"
    "Prints the mean loss of the model saved in CHECKPOINT_DIR (a serial checkpoint) over the\n"
    "evaluation windows of FILE: consecutive windows of seq-length + 1 bytes, stride seq-length,\n"
    "from the start of the file (see src/data/dataset.h). Without --data-path, the held-out\n"
    "synthetic samples.";

int cmd_eval(int argc, char **argv) {
    const char *load = NULL, *data = NULL;
    int windows = 0;
    flag_spec specs[] = {
        {"--load", FLAG_STRING, &load, "checkpoint directory (from trident train --save)", NULL},
        {"--data-path", FLAG_STRING, &data, "text file to score (default: held-out synthetic data)",
         NULL},
        {"--eval-iters", FLAG_INT, &windows, "score at most this many windows (0 = all)", NULL},
    };
    const char *pos[1];
    flags_parse("eval", k_eval_usage, specs, 3, argc, argv, pos, 0);
    if (!load) die("trident eval: --load CHECKPOINT_DIR is required");
    if (windows < 0) die("trident eval: --eval-iters %d must not be negative", windows);
    train_config c;
    train_config_defaults(&c);
    ckpt_layout saved = {0};
    checkpoint_read_model(load, &saved);
    /* The saved model; the precision stays fp32: evaluation computes with the saved (rounded)
     * parameters. */
    trainer_config_take_model(&c, &saved);
    c.model_from = load;
    c.data_path = data;
    c.split = "100,0"; /* score the whole file */
    c.train_iters = 1;
    char err[512];
    if (!train_config_check(&c, 1, err, sizeof err)) die("trident eval: %s", err);
    trainer *t = trainer_create(&c, NULL);
    ckpt_layout here = trainer_ckpt_layout(&c);
    checkpoint_load(load, &here, trainer_model(t), trainer_optimizer(t), 0);
    double loss = trainer_eval(t, data, windows);
    printf("eval: mean loss %.6f over %s\n", loss, data ? data : "the held-out synthetic samples");
    trainer_destroy(t);
    return 0;
}
