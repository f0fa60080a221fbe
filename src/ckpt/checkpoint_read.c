/* checkpoint_read.c — a saved rank file, opened and its metadata checked, before any tensor of
 * it is used (checkpoint.h; the keys: src/ckpt/CHECKPOINTS.md):
 *
 *   format, version, save id, precision    what file this is
 *   iteration, rank, world, tp, adam_step  where it belongs, each inside its range
 *   cp, ep, num_experts, moe_router_topk   the 5-D layout and the experts (absent: 3-D, dense)
 *   tp/cp/ep/pp/dp rank                    those of the file's rank in that layout
 *
 * and the model it holds compared with the run's (ckpt_rank_check_model). Every problem ends
 * the program with one line naming the file and the rule.
 * Not here: the container's own checks (tensorfile_validate.c), the tensors' values
 * (checkpoint_load.c).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/ckpt/checkpoint_dir.h"
#include "src/core/checked.h"
#include "src/ckpt/checkpoint_internal.h"
#include "src/moe/moe_config.h"
#include "src/precision/loss_scaler.h"
#include "src/runtime/groups.h"

#define MAX_SAVED_WORLD (1 << 20) /* sanity bound on a file's world_size */

int checkpoint_latest(const char *dir) { return ckpt_dir_latest(dir); }

static long long meta_int(const ckpt_saved_rank *f, const char *key) {
    long long v;
    if (!tf_meta_get_int(tf_reader_meta(f->r), key, &v))
        die("checkpoint '%s': the metadata has no integer '%s' (not a Trident checkpoint file?)",
            f->path, key);
    return v;
}

/* The save id: 1 to 16 hex digits (checkpoint_save writes 16), or absent (checkpoints saved
 * before ids existed). A longer or other value is refused, never read as "absent". */
static void read_save_id(ckpt_saved_rank *f) {
    char id[256];
    f->save_id[0] = '\0';
    if (!tf_meta_has(tf_reader_meta(f->r), "save_id")) return;
    size_t n = 0;
    if (tf_meta_get_string(tf_reader_meta(f->r), "save_id", id, sizeof id)) n = strlen(id);
    if (n < 1 || n > 16 || strspn(id, "0123456789abcdef") != n)
        die("checkpoint '%s': save_id is not 1 to 16 hexadecimal digits", f->path);
    memcpy(f->save_id, id, n + 1);
}

/* A model dimension from the metadata: an integer in [lo, INT_MAX], named by its key. */
static int meta_dim(const ckpt_saved_rank *f, const char *key, int lo) {
    long long v = meta_int(f, key);
    if (v < lo || v > INT_MAX)
        die("checkpoint '%s': %s %lld is not between %d and %d", f->path, key, v, lo, INT_MAX);
    return (int)v;
}

/* An optional integer: `absent` when the key is not there; present, it must be an integer in
 * [lo, hi] (a value of another type, or out of range, is refused, never read as absent). */
static long long meta_opt_int(const ckpt_saved_rank *f, const char *key, long long absent,
                              long long lo, long long hi) {
    if (!tf_meta_has(tf_reader_meta(f->r), key)) return absent;
    long long v;
    if (!tf_meta_get_int(tf_reader_meta(f->r), key, &v) || v < lo || v > hi)
        die("checkpoint '%s': %s is not an integer between %lld and %lld", f->path, key, lo, hi);
    return v;
}

/* An optional non-negative finite number (0 when absent), kept as a float: converted by
 * src/core/checked.h, so a value that is not 0 never becomes 0 (for a capacity factor, 0 is
 * dropless: another meaning). */
static float meta_opt_nonneg(const ckpt_saved_rank *f, const char *key) {
    if (!tf_meta_has(tf_reader_meta(f->r), key)) return 0.0f;
    double v = NAN;
    float x = 0.0f;
    const checked_status st = tf_meta_get_double(tf_reader_meta(f->r), key, &v) && v >= 0
                                  ? checked_to_float(v, &x)
                                  : CHECKED_NOT_FINITE;
    if (st == CHECKED_BECOMES_ZERO)
        die("checkpoint '%s': %s %g is not 0 but would become 0 in single precision, the "
            "setting's type",
            f->path, key, v);
    if (st != CHECKED_OK) die("checkpoint '%s': %s is not a finite number >= 0", f->path, key);
    return x;
}

/* The 5-D layout (absent: cp = ep = 1) and the model's experts (absent: dense), checked:
 * tp · cp divides the world, ep divides what is left (the data-parallel size) and the experts,
 * every coordinate is inside its size, 1 <= topk <= experts. */
static void read_moe_cp(ckpt_saved_rank *f) {
    f->cp = meta_opt_int(f, "context_parallel_size", 1, 1, MAX_SAVED_WORLD);
    f->ep = meta_opt_int(f, "expert_model_parallel_size", 1, 1, MAX_SAVED_WORLD);
    f->cp_rank = meta_opt_int(f, "cp_rank", 0, 0, f->cp - 1);
    f->ep_rank = meta_opt_int(f, "ep_rank", 0, 0, f->ep - 1);
    if (f->world % (f->tp * f->cp) != 0 || (f->world / (f->tp * f->cp)) % f->ep != 0)
        die("checkpoint '%s': tp %lld × context_parallel_size %lld × expert_model_parallel_size "
            "%lld does not divide world_size %lld (ep divides the data-parallel ranks)",
            f->path, f->tp, f->cp, f->ep, f->world);
    f->num_experts = (int)meta_opt_int(f, "num_experts", 0, 0, MOE_MAX_EXPERTS);
    if (f->num_experts == 0) {
        if (f->ep != 1)
            die("checkpoint '%s': expert_model_parallel_size %lld but no num_experts (a dense "
                "model has no experts to cut)",
                f->path, f->ep);
        static const char *const moe_keys[] = {"moe_router_topk", "moe_aux_loss_coeff",
                                               "moe_expert_capacity_factor"};
        for (size_t k = 0; k < sizeof moe_keys / sizeof moe_keys[0]; k++)
            if (tf_meta_has(tf_reader_meta(f->r), moe_keys[k]))
                die("checkpoint '%s': %s but no num_experts", f->path, moe_keys[k]);
        return;
    }
    f->topk = (int)meta_opt_int(f, "moe_router_topk", -1, 1, f->num_experts);
    if (f->topk < 0) die("checkpoint '%s': num_experts but no moe_router_topk", f->path);
    f->aux_coeff = meta_opt_nonneg(f, "moe_aux_loss_coeff");
    f->capacity = meta_opt_nonneg(f, "moe_expert_capacity_factor");
    const moe_config m = {f->num_experts, f->topk,    f->aux_coeff,
                          f->capacity,    (int)f->ep, (int)f->ep_rank};
    char err[256];
    if (!moe_config_check(&m, err, sizeof err)) die("checkpoint '%s': %s", f->path, err);
}

/* The file's coordinates (tp, cp, ep, pp, dp rank) must be those of its rank in the layout it
 * says it was saved with, under one of the two rank orders (groups.h; the file does not name
 * its order): a file whose coordinates were swapped with another's (its experts, say) would
 * otherwise load into the wrong place. */
static void read_coordinates(ckpt_saved_rank *f, int rank) {
    const long long pp = meta_int(f, "pp"), pp_rank = meta_int(f, "pp_rank");
    const long long dp_rank = meta_int(f, "dp_rank");
    if (pp < 1 || f->world % (f->tp * f->cp * pp) != 0)
        die("checkpoint '%s': pp %lld does not divide world_size %lld / (tp %lld × "
            "context_parallel_size %lld)",
            f->path, pp, f->world, f->tp, f->cp);
    const pg_order orders[2] = {PG_ORDER_TP_DP_PP, PG_ORDER_TP_PP_DP};
    pg_coord want = {0};
    for (int o = 0; o < 2; o++) {
        pg_layout l;
        char err[256];
        if (!pg_layout_make(&l, (int)f->world, (int)f->tp, (int)f->cp, (int)f->ep, (int)pp, 1,
                            pg_order_name(orders[o]), err, sizeof err))
            die("checkpoint '%s': its layout is not one: %s", f->path, err);
        want = pg_coord_of(&l, rank);
        if (want.tp == f->tp_rank && want.cp == f->cp_rank && want.ep == f->ep_rank &&
            want.pp == pp_rank && want.dp == dp_rank)
            return;
    }
    die("checkpoint '%s': the file says tp_rank %lld, cp_rank %lld, ep_rank %lld, pp_rank %lld, "
        "dp_rank %lld, but rank %d of its layout is at tp_rank %d, cp_rank %d, ep_rank %d, "
        "pp_rank %d, dp_rank %d (rank files swapped or edited?)",
        f->path, f->tp_rank, f->cp_rank, f->ep_rank, pp_rank, dp_rank, rank, want.tp, want.cp,
        want.ep, want.pp, want.dp);
}

/* What file this is: a Trident checkpoint of the version read here, its save id and
 * precision. */
static void read_identity(ckpt_saved_rank *f) {
    const char *path = f->path;
    char format[64];
    if (!tf_meta_get_string(tf_reader_meta(f->r), "format", format, sizeof format) ||
        strcmp(format, CKPT_FORMAT) != 0)
        die("checkpoint '%s': a tensor file, but its metadata does not say "
            "\"format\":\"" CKPT_FORMAT "\"",
            path);
    long long version = meta_int(f, "version");
    if (version != CKPT_VERSION)
        die("checkpoint '%s': checkpoint version %lld, this program reads version %d", path,
            version, CKPT_VERSION);
    read_save_id(f);
    if (!tf_meta_get_string(tf_reader_meta(f->r), "precision", f->precision, sizeof f->precision))
        die("checkpoint '%s': the metadata has no \"precision\"", path);
    if (strcmp(f->precision, "fp32") != 0 && strcmp(f->precision, "bf16") != 0 &&
        strcmp(f->precision, "fp16") != 0)
        die("checkpoint '%s': precision '%s' is not one of fp32|bf16|fp16", path, f->precision);
}

/* Where the file belongs: iteration `it` and rank `rank` as its name says, and the world, tp
 * coordinate, Adam step count, loss scale and vocabulary padding, each inside its range. */
static void read_position(ckpt_saved_rank *f, int it, int rank) {
    const char *path = f->path;
    f->iteration = meta_int(f, "iteration");
    f->world = meta_int(f, "world_size");
    f->tp = meta_int(f, "tp");
    f->tp_rank = meta_int(f, "tp_rank");
    f->padded_vocab = meta_int(f, "padded_vocab");
    f->adam_step = meta_int(f, "adam_step");
    if (f->iteration != it)
        die("checkpoint '%s': the file says iteration %lld, its directory %d", path, f->iteration,
            it);
    if (meta_int(f, "rank") != rank)
        die("checkpoint '%s': the file says rank %lld, its name %d", path, meta_int(f, "rank"),
            rank);
    if (f->world < 1 || f->world > MAX_SAVED_WORLD)
        die("checkpoint '%s': world_size %lld is not between 1 and %d", path, f->world,
            MAX_SAVED_WORLD);
    if (f->tp < 1 || f->tp > f->world || f->tp_rank < 0 || f->tp_rank >= f->tp)
        die("checkpoint '%s': tp_rank %lld of tp %lld is not a tensor-parallel coordinate in a "
            "world of %lld",
            path, f->tp_rank, f->tp, f->world);
    if (f->adam_step < 0 || f->adam_step > f->iteration)
        die("checkpoint '%s': adam_step %lld is not between 0 and the iteration %lld (Adam steps "
            "once per iteration at most)",
            path, f->adam_step, f->iteration);
    f->loss_scale = 1;
    if (tf_meta_has(tf_reader_meta(f->r), "loss_scale") &&
        !tf_meta_get_double(tf_reader_meta(f->r), "loss_scale", &f->loss_scale))
        die("checkpoint '%s': loss_scale is not a number", path);
    if (!prec_scale_valid(f->loss_scale))
        die("checkpoint '%s': loss_scale %g is outside [%.0f, %.0f], the range of the fp16 loss "
            "scaler (src/precision/loss_scaler.h)",
            path, f->loss_scale, PREC_SCALE_MIN, PREC_SCALE_MAX);
    if (f->padded_vocab < 1 || f->padded_vocab % f->tp != 0)
        die("checkpoint '%s': padded_vocab %lld is not a positive multiple of tp %lld", path,
            f->padded_vocab, f->tp);
}

void ckpt_rank_open(ckpt_saved_rank *f, char *path, size_t cap, const char *dir, int it, int rank) {
    char idir[4200], err[1024];
    ckpt_dir_iteration(idir, sizeof idir, dir, it); /* iter_N/, or iter_N.old/ (see there) */
    ckpt_dir_rank_path(path, cap, idir, rank);
    memset(f, 0, sizeof *f);
    f->path = path;
    f->r = tf_reader_open(path, err, sizeof err);
    if (!f->r) die("%s", err);
    char why[256];
    if (!tf_meta_check(tf_reader_meta(f->r), why, sizeof why))
        die("checkpoint '%s': its metadata %s", path, why);
    read_identity(f);
    read_position(f, it, rank);
    read_moe_cp(f);
    read_coordinates(f, rank);
}

void ckpt_rank_check_model(const ckpt_saved_rank *f, const char *dir, const ckpt_layout *c) {
    struct {
        const char *key;
        long long got, want;
    } checks[] = {
        {"num_layers", meta_int(f, "num_layers"), c->num_layers},
        {"hidden_size", meta_int(f, "hidden_size"), c->hidden_size},
        {"num_attention_heads", meta_int(f, "num_attention_heads"), c->num_attention_heads},
        {"seq_length", meta_int(f, "seq_length"), c->seq_length},
        {"num_experts", f->num_experts, c->num_experts},
        {"moe_router_topk", f->topk, c->num_experts > 0 ? c->moe_router_topk : 0},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        if (checks[i].got != checks[i].want)
            die("--load %s: the checkpoint has %s = %lld but this run has %lld (the model must "
                "match; the parallel layout may differ)",
                dir, checks[i].key, checks[i].got, checks[i].want);
    }
}

void checkpoint_read_model(const char *dir, ckpt_layout *c) {
    const int it = checkpoint_latest(dir);
    char path[4400];
    ckpt_saved_rank f;
    ckpt_rank_open(&f, path, sizeof path, dir, it, 0);
    c->num_layers = meta_dim(&f, "num_layers", 1);
    c->hidden_size = meta_dim(&f, "hidden_size", 1);
    c->num_attention_heads = meta_dim(&f, "num_attention_heads", 1);
    c->seq_length = meta_dim(&f, "seq_length", 1);
    c->make_vocab_size_divisible_by = meta_dim(&f, "make_vocab_size_divisible_by", 1);
    c->seed = meta_dim(&f, "seed", INT_MIN);
    c->num_experts = f.num_experts; /* 0: dense (ckpt_rank_open checked the MoE fields) */
    c->moe_router_topk = f.num_experts > 0 ? f.topk : 0;
    c->moe_aux_loss_coeff = f.aux_coeff;
    c->moe_expert_capacity_factor = f.capacity;
    if (c->hidden_size % c->num_attention_heads != 0)
        die("checkpoint '%s': hidden_size %d is not divisible by num_attention_heads %d", path,
            c->hidden_size, c->num_attention_heads);
    tf_reader_close(f.r);
}
