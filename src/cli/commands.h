/* commands.h — the subcommands of the `trident` program.
 *
 * Each subcommand is one function in its own file of src/cli/ (it parses the flags and calls
 * the library that does the work); src/main.c only dispatches. Nothing below src/cli/
 * includes this header. argv[0] is the subcommand's first argument (the subcommand name itself is
 * not passed). Each returns the process exit status.
 */
#ifndef TRIDENT_CLI_COMMANDS_H
#define TRIDENT_CLI_COMMANDS_H

int cmd_train(int argc, char **argv);    /* src/cli/train_cmd.c */
int cmd_eval(int argc, char **argv);     /* src/cli/train_cmd.c */
int cmd_generate(int argc, char **argv); /* src/cli/generate_cmd.c */
int cmd_groups(int argc, char **argv);   /* src/cli/groups_cmd.c */
int cmd_schedule(int argc, char **argv); /* src/cli/schedule_cmd.c */
int cmd_memory(int argc, char **argv);   /* src/cli/memory_cmd.c */
int cmd_plan(int argc, char **argv);     /* src/cli/plan_cmd.c */
int cmd_render(int argc, char **argv);   /* src/cli/render_cmd.c */
int cmd_bench(int argc, char **argv);    /* src/cli/bench_cmd.c */
int cmd_analyze(int argc, char **argv);  /* src/cli/analyze_cmd.c */

#endif /* TRIDENT_CLI_COMMANDS_H */
