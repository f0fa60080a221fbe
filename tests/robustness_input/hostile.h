/* hostile.h — what the tables of hostile_input_test share: a case, the fixture directory and
 * the helpers that forge fixtures in it, and the round-3 families (issue 31), one file each:
 *
 *   hostile_links.c    checkpoint directories and lock files reached through symbolic links
 *   hostile_numbers.c  products of sizes that wrap, conversions that change meaning
 *   hostile_values.c   non-finite values made during a run, silently accepted input, messages
 *                      that blame a flag the user did not give, internal checks users reach
 *   hostile_work.c     unbounded work (MoE dispatch, gradient buckets, render spins)
 *
 * Each family file defines its table (ended by a row whose args are NULL) and a setup that
 * makes its own fixtures in g_dir, run once before any case. The runner (hostile_input_test.c)
 * checks every row the same way: non-zero exit below 128, no hang, the expected words, one line
 * for single-process commands, and no fixture file changed or lost.
 */
#ifndef TRIDENT_TESTS_ROBUSTNESS_INPUT_HOSTILE_H
#define TRIDENT_TESTS_ROBUSTNESS_INPUT_HOSTILE_H

#include <stddef.h>

typedef struct {
    int np;              /* 1: run directly; > 1: under mpirun */
    const char *args;    /* after `trident`; {D} is the fixture directory */
    const char *words;   /* the error must contain these */
    const char *pending; /* non-NULL: a known gap, reported; what is wrong today */
} hostile_case;

/* The fixture directory ({D} in the tables). */
extern char g_dir[4096];

/* Runs fmt through the shell with every %s replaced by `a` (up to six); fails the test if it
 * fails. */
void sh(const char *fmt, const char *a);
/* {D}/NAME: a checkpoint directory holding iteration 1 as one tensor file with metadata meta. */
void forged_checkpoint(const char *name, const char *meta);
/* {D}/NAME: a copy of the fixture checkpoint {D}/ck with `from` replaced by `to` in its
 * metadata (from not NULL) and element 0 of `tensor` set to value (tensor not NULL). */
void forged_copy(const char *name, const char *from, const char *to, const char *tensor,
                 float value);
/* {D}/NAME: a copy of the traced 2-rank run {D}/rp with bytes forged into rank0.trace. */
void forged_trace(const char *name, int kind, size_t field, const void *bytes, size_t len);

typedef struct {
    const char *name;
    const hostile_case *cases; /* ended by a row whose args are NULL */
    void (*setup)(void);
} hostile_family;

enum { HOSTILE_FAMILIES = 4 };
extern const hostile_family k_round3[HOSTILE_FAMILIES];

#endif /* TRIDENT_TESTS_ROBUSTNESS_INPUT_HOSTILE_H */
