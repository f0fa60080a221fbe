/* commands.h — the subcommands of the `trident` program.
 *
 * Each subcommand is one function living in the module it belongs to; src/main.c only
 * dispatches. argv[0] is the subcommand's first argument (the subcommand name itself is
 * not passed). Each returns the process exit status.
 */
#ifndef TRIDENT_CLI_COMMANDS_H
#define TRIDENT_CLI_COMMANDS_H

int cmd_train(int argc, char **argv);    /* src/train/train_cmd.c */
int cmd_eval(int argc, char **argv);     /* src/train/train_cmd.c */
int cmd_groups(int argc, char **argv);   /* src/runtime/groups_cmd.c */
int cmd_schedule(int argc, char **argv); /* src/pp/schedule_cmd.c */
int cmd_render(int argc, char **argv);   /* viz/render_cmd.c */
int cmd_bench(int argc, char **argv);    /* src/bench/bench.c */

#endif /* TRIDENT_CLI_COMMANDS_H */
