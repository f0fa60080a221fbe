/* checkpoint.h — saving and resuming a training run, one file per rank.
 *
 *   SAVE/latest                        the last complete iteration, as text ("100\n")
 *   SAVE/iter_0000100/rank_00000.tck   rank 0's shard (src/ckpt/FORMAT.md: a tensor file)
 *   SAVE/iter_0000100/rank_00001.tck   ...
 *
 * Each rank file holds the rank's parameters ("param/<name>", local shapes), its optimizer
 * state ("adam_m", "adam_v": the whole buffer, or the ZeRO shard), the fp32 master weights
 * of mixed precision ("master"), and metadata: iteration, Adam step count, loss scale, the
 * layout and this rank's coordinates, and the model configuration.
 *
 * Atomic as a whole: every rank writes into SAVE/iter_N.tmp/, all ranks meet, then rank 0
 * renames the directory and rewrites `latest` (temp + rename). A crash mid-save leaves the
 * previous iteration's directory and `latest` as they were. Data needs no state: sample i
 * is a pure function of (seed, i), so the iteration number is the data position.
 *
 * Resuming continues bit-identically: the same parameters, moments, step count and batches.
 * Loading needs the layout it was saved with (resharding to another layout is not here).
 */
#ifndef TRIDENT_CKPT_CHECKPOINT_H
#define TRIDENT_CKPT_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>

#include "src/train/config.h"
#include "src/train/local_model.h"

typedef struct comm_group comm_group;
typedef struct dist_optimizer dist_optimizer;

/* Writes this rank's file of iteration `it` and, once every rank of `world` has, makes the
 * iteration the latest. Collective over `world` (NULL for a single process). */
void checkpoint_save(const char *dir, int it, const train_config *cfg, const local_model *m,
                     dist_optimizer *opt, comm_group *world, int rank);

/* The iteration named by DIR/latest; dies with a clear message if there is none. */
int checkpoint_latest(const char *dir);

/* Loads this rank's file of the latest iteration into the model and optimizer; checks that
 * the file was saved with the same model and layout. Returns the iteration. */
int checkpoint_load(const char *dir, const train_config *cfg, local_model *m, dist_optimizer *opt,
                    int rank);

/* Reads the model configuration stored in a checkpoint (for `trident eval`): fills the
 * model fields of cfg (layers, hidden, heads, seq length, vocab padding, seed). */
void checkpoint_read_config(const char *dir, train_config *cfg);

#endif /* TRIDENT_CKPT_CHECKPOINT_H */
