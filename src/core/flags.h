/* flags.h — one table-driven command-line parser for every subcommand.
 *
 * A subcommand lists its flags in a table of flag_spec; flags_parse() fills the
 * destinations, prints `--help` from the same table, and ends the process with one
 * clear line for an unknown flag, a missing value or a value of the wrong type
 * ("trident train: --hidden-size expects an integer, got 'abc'").
 * Flags take their value as the next word or after '=' (`--seed 3`, `--seed=3`).
 *
 * Not here: rules that relate flags to each other (hidden size divisible by heads…);
 * each module checks its own and names the values.
 */
#ifndef TRIDENT_CORE_FLAGS_H
#define TRIDENT_CORE_FLAGS_H

#include <stdbool.h>

typedef enum {
    FLAG_INT,    /* int *          */
    FLAG_FLOAT,  /* float *        */
    FLAG_STRING, /* const char **  (points into argv) */
    FLAG_BOOL,   /* bool *: the flag alone sets it true */
    FLAG_CHOICE, /* const char **, value must be one of `choices` ("a|b|c") */
} flag_type;

typedef struct {
    const char *name; /* "--hidden-size" */
    flag_type type;
    void *dst;
    const char *help;    /* one line; the default is printed from *dst */
    const char *choices; /* FLAG_CHOICE only: "gpipe|1f1b|interleaved" */
} flag_spec;

/* Parses argv[0..argc) (argv[0] is the first word after the subcommand name).
 * Words that do not start with "--" are positionals: up to `max_positional` of them are
 * stored in `positional` and their count returned. `usage` is printed above the flag
 * list by --help (then the process exits 0). `cmd` names the subcommand in errors. */
int flags_parse(const char *cmd, const char *usage, const flag_spec *specs, int nspecs, int argc,
                char **argv, const char **positional, int max_positional);

/* Prints the help text that --help prints. */
void flags_print_help(const char *cmd, const char *usage, const flag_spec *specs, int nspecs);

/* True when `path` ends with `ext` (".png"), case-insensitively. */
bool path_has_ext(const char *path, const char *ext);

#endif /* TRIDENT_CORE_FLAGS_H */
