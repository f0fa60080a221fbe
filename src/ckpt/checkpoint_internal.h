/* checkpoint_internal.h — what the files of the checkpoint module share, and nothing else:
 *
 *   checkpoint_locate.c   who holds what: a rank's coordinates and optimizer-state pieces,
 *                         and where an element of a serial tensor lives (checkpoint_locate)
 *   checkpoint_save.c     a rank writes its file (checkpoint_save)
 *   checkpoint_read.c     a saved rank file, opened and its metadata checked
 *   checkpoint_load.c     the resharding load (checkpoint_load)
 *
 * Not here: anything a caller of checkpoint.h needs; this header is private to
 * src/ckpt:checkpoint.
 */
#ifndef TRIDENT_CKPT_CHECKPOINT_INTERNAL_H
#define TRIDENT_CKPT_CHECKPOINT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "src/ckpt/checkpoint.h"
#include "src/ckpt/tensorfile.h"
#include "src/core/check.h"
#include "src/device/device.h"
#include "src/runtime/groups.h"
#include "src/zero/distributed_optimizer.h"

#define CKPT_FORMAT "trident-checkpoint"
#define CKPT_VERSION 2

/* The optimizer-state tensors of a piece: "adam_m/NAME@a-b", "adam_v/...", "master/...". */
extern const char *const ckpt_state_names[3];

/* Parameters and optimizer state live in device memory (src/device/device.h). Saving and
 * loading work on a host view of them: the buffer itself on the cpu device, a downloaded copy
 * elsewhere (uploaded again after a load). */
static inline float *ckpt_host_view(float *dev, size_t n) {
    if (!dev || device_is_host()) return dev;
    float *h = mallocCheck(n * sizeof(float) + 1);
    device_download(h, dev, n * sizeof(float));
    return h;
}

static inline void ckpt_host_view_release(float *dev, float *h, size_t n, bool write_back) {
    if (h == dev) return;
    if (write_back) device_upload(dev, h, n * sizeof(float));
    free(h);
}

/* ---- who holds what (checkpoint_locate.c) ----------------------------------------------- */

/* The coordinates of `rank` in the run's layout (all 0 for a serial run), and in
 * *shard_index (may be NULL) the ZeRO shard it holds: its rank in the group the optimizer
 * shards over (dp, or dp × cp with context parallelism: src/train/trainer.c). */
pg_coord ckpt_coord_of(const ckpt_layout *c, int rank, int *shard_index);

/* The optimizer's state parts (distopt_state_parts), the first's pieces those of the rank's
 * shard: one part, or with ZeRO-1 and expert parallelism the dense shard and the experts'
 * shard. Returns how many. */
int ckpt_state_parts(const ckpt_layout *c, dist_optimizer *opt, int rank,
                     distopt_state_part part[DISTOPT_MAX_PARTS]);

/* ---- a saved rank file (checkpoint_read.c) ---------------------------------------------- */

/* What a rank file says about itself, checked. */
typedef struct {
    tf_reader *r;
    const char *path;
    long long iteration, world, tp, tp_rank, padded_vocab, adam_step;
    long long cp, cp_rank, ep, ep_rank; /* 1, 0 when absent (files of 3-D layouts) */
    int num_experts, topk;              /* 0, 0 when absent (a dense model) */
    float aux_coeff, capacity;
    double loss_scale; /* prec_scale_valid (1 when absent) */
    char precision[16];
    char save_id[24]; /* "" in checkpoints saved before ids existed */
} ckpt_saved_rank;

/* Opens rank `rank`'s file of iteration `it` in `dir` (its path written into path[cap]) and
 * checks its metadata; dies with one line naming the file and the problem. */
void ckpt_rank_open(ckpt_saved_rank *f, char *path, size_t cap, const char *dir, int it, int rank);

/* The model must be the same (its experts too: a dense checkpoint has none); the layout may
 * differ, and so may the MoE training settings (aux-loss weight, capacity factor). */
void ckpt_rank_check_model(const ckpt_saved_rank *f, const char *dir, const ckpt_layout *c);

#endif /* TRIDENT_CKPT_CHECKPOINT_INTERNAL_H */
