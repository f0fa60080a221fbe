/* checkpoint.c — see checkpoint.h; src/ckpt/CHECKPOINTS.md explains the files and resharding.
 *
 * Saving writes what the rank holds, named so that any other layout can find it again:
 * parameters whole (local shape), optimizer state as param-space pieces "adam_m/NAME@a-b".
 * Loading walks the rank files of the iteration in rank order and fills every element the
 * loading rank needs, each exactly once, through the serial index:
 *
 *   my local element i of NAME --gpt_param_serial_index--> serial s --checkpoint_locate-->
 *   (saved tp rank, saved local index)  -->  value in any file of that tp rank holding NAME
 *
 * It stops opening files as soon as everything is filled. Not here: the container format
 * (tensorfile.c) and the optimizer's arithmetic (src/zero/).
 */
#include "src/ckpt/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/ckpt/checkpoint_dir.h"
#include "src/ckpt/tensorfile.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/json.h"
#include "src/device/device.h"
#include "src/moe/moe_config.h"
#include "src/precision/convert.h"
#include "src/runtime/comm.h"
#include "src/runtime/groups.h"
#include "src/zero/distributed_optimizer.h"

#define CKPT_FORMAT "trident-checkpoint"
#define CKPT_VERSION 2
#define MAX_SAVED_WORLD (1 << 20) /* sanity bound on a file's world_size */


/* Parameters and optimizer state live in device memory (src/device/device.h). Saving and
 * loading work on a host view of them: the buffer itself on the cpu device, a downloaded copy
 * elsewhere (uploaded again after a load). */
static float *host_view(float *dev, size_t n) {
    if (!dev || device_is_host()) return dev;
    float *h = mallocCheck(n * sizeof(float) + 1);
    device_download(h, dev, n * sizeof(float));
    return h;
}

static void host_view_release(float *dev, float *h, size_t n, bool write_back) {
    if (h == dev) return;
    if (write_back) device_upload(dev, h, n * sizeof(float));
    free(h);
}

/* ---- who holds what --------------------------------------------------------------------- */

/* The coordinates of `rank` in the run's layout (all 0 for a serial run), and in
 * *shard_index the ZeRO shard it holds: its rank in the group the optimizer shards over (dp,
 * or dp × cp with context parallelism: src/train/trainer.c). */
static pg_coord coord_of(const ckpt_layout *c, int rank, int *shard_index) {
    pg_coord none = {0};
    if (shard_index) *shard_index = 0;
    if (c->world_size <= 1) return none;
    const int cp = c->cp > 1 ? c->cp : 1, ep = c->ep > 1 ? c->ep : 1;
    pg_layout l;
    char err[256];
    CHECK(pg_layout_make(&l, c->world_size, c->tp, cp, ep, c->pp, c->vpp, c->rank_order, err,
                         sizeof err),
          "the trainer checked the layout before saving or loading");
    pg_coord xy = pg_coord_of(&l, rank);
    if (shard_index) *shard_index = xy.dp;
    if (shard_index && cp > 1) pg_group_of(&l, PG_DP_CP, rank, NULL, shard_index);
    return xy;
}

/* This rank's optimizer state as pieces of parameters (src/zero/shard_ranges.h): with ZeRO
 * the pieces of its shard (local_start indexes the shard-sized arrays); without it the one
 * shard of the dp = 1 ranges, whose pieces are whole parameters at their buffer offsets. */
static const zero_shard *state_pieces(const ckpt_layout *c, dist_optimizer *opt, int rank) {
    const zero_ranges *r = distopt_ranges(opt);
    int d = 0;
    if (c->zero) coord_of(c, rank, &d);
    CHECK(d >= 0 && d < r->dp, "the data-parallel rank is inside the optimizer's shards");
    return &r->shards[d];
}

/* The optimizer's state parts (distopt_state_parts), the first's pieces by state_pieces: one
 * part, or with ZeRO-1 and expert parallelism the dense shard and the experts' shard. */
static int state_parts(const ckpt_layout *c, dist_optimizer *opt, int rank,
                       distopt_state_part part[DISTOPT_MAX_PARTS]) {
    const int n = distopt_state_parts(opt, part);
    part[0].pieces = state_pieces(c, opt, rank);
    return n;
}

static const char *const k_state[3] = {"adam_m", "adam_v", "master"};

/* One part's pieces as "adam_m/NAME@a-b", "adam_v/..." (and "master/..." in mixed
 * precision). */
static void save_state_part(tf_writer *w, const local_model *m, const distopt_state_part *pt) {
    char name[TF_MAX_NAME + 1];
    float *mom[2] = {host_view(pt->m, pt->n), host_view(pt->v, pt->n)};
    float *master = host_view(pt->master, pt->n);
    const zero_shard *sh = pt->pieces;
    for (int k = 0; k < sh->n_pieces; k++) {
        const zero_piece *pc = &sh->pieces[k];
        if (local_model_is_second_wte(m, m->plist[pc->param])) continue;
        int64_t len = (int64_t)(pc->param_end - pc->param_start);
        for (int which = 0; which < (master ? 3 : 2); which++) {
            const float *src = which < 2 ? mom[which] : master;
            snprintf(name, sizeof name, "%s/%s@%zu-%zu", k_state[which], m->plist[pc->param]->name,
                     pc->param_start, pc->param_end);
            tf_writer_add(w, name, TF_F32, 1, &len, src + pc->local_start);
        }
    }
    for (int k = 0; k < 2; k++) host_view_release(k ? pt->v : pt->m, mom[k], pt->n, false);
    if (master) host_view_release(pt->master, master, pt->n, false);
}

bool checkpoint_locate(int split, size_t full_rows, size_t full_cols, int tp_size, size_t serial,
                       int *tp_rank, size_t *local) {
    if (full_cols == 0 || serial / full_cols >= full_rows) return false;
    const size_t tp = (size_t)tp_size, row = serial / full_cols, col = serial % full_cols;
    switch ((gpt_split)split) {
    case SPLIT_EXPERTS: /* whole on every TP rank (the ep cut: checkpoint_locate_expert) */
    case SPLIT_NONE:
        *tp_rank = -1;
        *local = serial;
        return true;
    case SPLIT_ROWS: { /* W = [W_0; W_1; ...]: rank r holds rows [r*rows, (r+1)*rows) */
        size_t rows = full_rows / tp;
        *tp_rank = (int)(row / rows);
        *local = (row % rows) * full_cols + col;
        return true;
    }
    case SPLIT_COLS: { /* W = [W_0 | W_1 | ...]: rank r holds columns [r*cols, (r+1)*cols) */
        size_t cols = full_cols / tp;
        *tp_rank = (int)(col / cols);
        *local = row * cols + col % cols;
        return true;
    }
    case SPLIT_QKV: { /* [Q; K; V], each cut by rows: rank r holds [Q_r; K_r; V_r] */
        size_t part_full = full_rows / 3, part = part_full / tp;
        size_t which = row / part_full, within = row % part_full;
        *tp_rank = (int)(within / part);
        *local = (which * part + within % part) * full_cols + col;
        return true;
    }
    }
    return false;
}

bool checkpoint_locate_expert(size_t full_rows, size_t full_cols, int ep_size, size_t serial,
                              int *ep_rank, size_t *local) {
    /* W = [experts 0..El-1; El..2El-1; ...]: ep rank r holds rows [r·rows, (r+1)·rows) */
    if (ep_size < 1 || full_cols == 0 || full_rows % (size_t)ep_size != 0 ||
        serial / full_cols >= full_rows)
        return false;
    const size_t per = full_rows / (size_t)ep_size * full_cols; /* elements per ep rank */
    *ep_rank = (int)(serial / per);
    *local = serial % per;
    return true;
}

/* ---- saving ----------------------------------------------------------------------------- */

/* The metadata of a rank's file (FORMAT.md): one compact JSON object; old files written by
 * hand in the same key order read the same (tf_meta_get_* look keys up by name). */
static char *meta_json(uint64_t save_id, int it, const ckpt_layout *c, const local_model *m,
                       dist_optimizer *opt, int rank) {
    json_writer w;
    json_init_buffer(&w, 0);
    json_begin_object(&w, JSON_COMPACT);
    json_field_string(&w, "format", CKPT_FORMAT);
    json_field_int(&w, "version", CKPT_VERSION);
    json_field_int(&w, "iteration", it);
    char id[24];
    snprintf(id, sizeof id, "%016llx", (unsigned long long)save_id);
    json_field_string(&w, "save_id", id);
    json_field_int(&w, "adam_step", distopt_step_count(opt));
    json_field_double(&w, "loss_scale", "%.9g", (double)distopt_loss_scale(opt));
    json_field_string(&w, "precision", prec_dtype_name(c->dtype));
    json_field_int(&w, "rank", rank);
    json_field_int(&w, "world_size", c->world_size);
    json_field_int(&w, "tp", c->tp);
    json_field_int(&w, "pp", c->pp);
    json_field_int(&w, "dp", c->dp);
    json_field_int(&w, "vpp", c->vpp);
    json_field_int(&w, "zero", c->zero ? 1 : 0);
    json_field_int(&w, "tp_rank", m->tp_rank);
    json_field_int(&w, "pp_rank", m->pp_rank);
    const pg_coord xy = coord_of(c, rank, NULL);
    json_field_int(&w, "dp_rank", xy.dp);
    /* 5-D layouts only (absent: 1, and coordinate 0), so a 3-D run's files read as before */
    if (c->cp > 1) {
        json_field_int(&w, "context_parallel_size", c->cp);
        json_field_int(&w, "cp_rank", xy.cp);
    }
    if (c->ep > 1) {
        json_field_int(&w, "expert_model_parallel_size", c->ep);
        json_field_int(&w, "ep_rank", xy.ep);
    }
    json_field_int(&w, "num_layers", c->num_layers);
    json_field_int(&w, "hidden_size", c->hidden_size);
    json_field_int(&w, "num_attention_heads", c->num_attention_heads);
    json_field_int(&w, "seq_length", c->seq_length);
    json_field_int(&w, "padded_vocab", c->padded_vocab);
    json_field_int(&w, "make_vocab_size_divisible_by", c->make_vocab_size_divisible_by);
    json_field_int(&w, "seed", c->seed);
    if (c->num_experts > 0) { /* absent: a dense model */
        json_field_int(&w, "num_experts", c->num_experts);
        json_field_int(&w, "moe_router_topk", c->moe_router_topk);
        json_field_double(&w, "moe_aux_loss_coeff", "%.9g", (double)c->moe_aux_loss_coeff);
        json_field_double(&w, "moe_expert_capacity_factor", "%.9g",
                          (double)c->moe_expert_capacity_factor);
    }
    json_field_uint(&w, "numel", (unsigned long long)m->numel);
    json_end_object(&w);
    return json_take(&w);
}

void checkpoint_save(const char *dir, int it, const ckpt_layout *c, const local_model *m,
                     dist_optimizer *opt, comm_group *world, int rank) {
    char tmpdir[4200], path[4400];
    ckpt_dir_iter_path(tmpdir, sizeof tmpdir, dir, it, ".tmp");
    ckpt_save_begin(dir, it, rank); /* rank 0: a fresh iter_N.tmp/ */
    /* One id for all the rank files of this save (checkpoint_dir.h, "identity"). */
    uint64_t save_id = rank == 0 ? ckpt_save_new_id() : 0;
    if (world) comm_broadcast(world, &save_id, 1, COMM_INT64, 0); /* also: the directory is there */
    ckpt_dir_rank_path(path, sizeof path, tmpdir, rank);
    char *meta = meta_json(save_id, it, c, m, opt, rank);
    tf_writer *w = tf_writer_open(path, meta);
    free(meta);
    char name[TF_MAX_NAME + 1];
    float *params = host_view(m->params, m->numel);
    for (int i = 0; i < m->nparams; i++) {
        const gpt_param *p = m->plist[i];
        if (local_model_is_second_wte(m, p)) continue; /* zbv: filled from the first */
        int64_t shape[2] = {(int64_t)p->rows, (int64_t)p->cols};
        snprintf(name, sizeof name, "param/%s", p->name);
        tf_writer_add(w, name, TF_F32, p->cols == 1 ? 1 : 2, shape, params + p->offset);
    }
    ckpt_save_crash_point(CKPT_STEP_RANK_FILE, rank); /* halfway through the file */
    /* Optimizer state, piece by piece, each named by its range of the local parameter (with
     * ZeRO-1 and expert parallelism the dense shard's pieces, then the expert shard's). */
    distopt_state_part part[DISTOPT_MAX_PARTS];
    const int nparts = state_parts(c, opt, rank, part);
    for (int q = 0; q < nparts; q++) save_state_part(w, m, &part[q]);
    prec_scaler *s = distopt_scaler(opt);
    int64_t four = 4;
    int32_t sc[4] = {s->growth_tracker, s->hysteresis_tracker, (int32_t)s->steps,
                     (int32_t)s->skipped};
    tf_writer_add(w, "loss_scaler", TF_I32, 1, &four, sc);
    tf_writer_commit(w);
    host_view_release(m->params, params, m->numel, false);
    /* Everyone has written: the iteration becomes visible at once. */
    if (world) comm_barrier(world);
    ckpt_save_publish(dir, it, rank); /* rank 0: the renames and `latest` */
    if (world) comm_barrier(world);
}

/* ---- reading the files ------------------------------------------------------------------ */

int checkpoint_latest(const char *dir) { return ckpt_dir_latest(dir); }

/* What a rank file says about itself, checked. */
typedef struct {
    tf_reader *r;
    const char *path;
    long long iteration, world, tp, tp_rank, padded_vocab, adam_step;
    long long cp, cp_rank, ep, ep_rank; /* 1, 0 when absent (files of 3-D layouts) */
    int num_experts, topk;              /* 0, 0 when absent (a dense model) */
    float aux_coeff, capacity;
    char precision[16];
    char save_id[24]; /* "" in checkpoints saved before ids existed */
} saved_rank;

static long long meta_int(const saved_rank *f, const char *key) {
    long long v;
    if (!tf_meta_get_int(tf_reader_meta(f->r), key, &v))
        die("checkpoint '%s': the metadata has no integer '%s' (not a Trident checkpoint file?)",
            f->path, key);
    return v;
}

/* The save id: 1 to 16 hex digits (checkpoint_save writes 16), or absent (checkpoints saved
 * before ids existed). A longer or other value is refused, never read as "absent". */
static void read_save_id(saved_rank *f) {
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
static int meta_dim(const saved_rank *f, const char *key, int lo) {
    long long v = meta_int(f, key);
    if (v < lo || v > INT_MAX)
        die("checkpoint '%s': %s %lld is not between %d and %d", f->path, key, v, lo, INT_MAX);
    return (int)v;
}

/* An optional integer: `absent` when the key is not there; present, it must be an integer in
 * [lo, hi] (a value of another type, or out of range, is refused, never read as absent). */
static long long meta_opt_int(const saved_rank *f, const char *key, long long absent, long long lo,
                              long long hi) {
    if (!tf_meta_has(tf_reader_meta(f->r), key)) return absent;
    long long v;
    if (!tf_meta_get_int(tf_reader_meta(f->r), key, &v) || v < lo || v > hi)
        die("checkpoint '%s': %s is not an integer between %lld and %lld", f->path, key, lo, hi);
    return v;
}

/* An optional non-negative finite number (0 when absent). */
static float meta_opt_nonneg(const saved_rank *f, const char *key) {
    if (!tf_meta_has(tf_reader_meta(f->r), key)) return 0.0f;
    double v;
    if (!tf_meta_get_double(tf_reader_meta(f->r), key, &v) || !isfinite(v) || v < 0 || v > 3.0e38)
        die("checkpoint '%s': %s is not a finite number >= 0", f->path, key);
    return (float)v;
}

/* The 5-D layout (absent: cp = ep = 1) and the model's experts (absent: dense), checked:
 * tp · cp divides the world, ep divides what is left (the data-parallel size) and the experts,
 * every coordinate is inside its size, 1 <= topk <= experts. */
static void read_moe_cp(saved_rank *f) {
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
        if (tf_meta_has(tf_reader_meta(f->r), "moe_router_topk"))
            die("checkpoint '%s': moe_router_topk but no num_experts", f->path);
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

/* Every element of a saved tensor finite (and, for Adam's second moment, not negative): a
 * NaN loaded into the model would only show up steps later as a diverged loss. */
static void check_values(const saved_rank *f, const char *tensor, const float *x, size_t n,
                         bool nonneg) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || (nonneg && x[i] < 0))
            die("checkpoint '%s': tensor '%s' element %zu is %g (%s)", f->path, tensor, i,
                (double)x[i], nonneg ? "must be finite and not negative" : "must be finite");
}

static void open_rank(saved_rank *f, char *path, size_t cap, const char *dir, int it, int rank) {
    char idir[4200], err[1024];
    ckpt_dir_iteration(idir, sizeof idir, dir, it); /* iter_N/, or iter_N.old/ (see there) */
    ckpt_dir_rank_path(path, cap, idir, rank);
    memset(f, 0, sizeof *f);
    f->path = path;
    f->r = tf_reader_open(path, err, sizeof err);
    if (!f->r) die("%s", err);
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
    double scale = 1;
    if (tf_meta_has(tf_reader_meta(f->r), "loss_scale") &&
        !(tf_meta_get_double(tf_reader_meta(f->r), "loss_scale", &scale) && isfinite(scale) &&
          scale > 0))
        die("checkpoint '%s': loss_scale is not a finite number above 0", path);
    if (f->padded_vocab < 1 || f->padded_vocab % f->tp != 0)
        die("checkpoint '%s': padded_vocab %lld is not a positive multiple of tp %lld", path,
            f->padded_vocab, f->tp);
    read_moe_cp(f);
}

/* The model must be the same (its experts too: a dense checkpoint has none); the layout may
 * differ, and so may the MoE training settings (aux-loss weight, capacity factor). */
static void check_same_model(const saved_rank *f, const char *dir, const ckpt_layout *c) {
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

/* ---- loading ---------------------------------------------------------------------------- */

/* One part of the loading rank's optimizer state (distopt_state_parts). */
typedef struct {
    float *mom[2],
        *master; /* host views of the optimizer state, indexed by the pieces' local_start */
    const zero_shard *pieces; /* what of the state this rank holds */
    bool *done;
} load_state;

/* The loading rank's buffers, and which of their elements are filled. */
typedef struct {
    local_model *m;
    prec_dtype dtype;
    float *params; /* host view of m->params */
    int nparts;
    load_state state[DISTOPT_MAX_PARTS];
    bool *param_done;
    size_t params_left, state_left;
} load_target;

/* The geometry parameter p had in the saved layout: its rows/cols there, and its serial rows
 * (the vocabulary padding, and so wte's serial rows, depends on the saved tp). Checks that
 * the file's "param/NAME" has that shape; returns its data. */
static const float *saved_param(const saved_rank *f, const gpt_param *p, size_t *full_rows) {
    *full_rows = p->kind == GPT_WTE ? (size_t)f->padded_vocab : p->full_rows;
    const size_t tp = (size_t)f->tp;
    const bool by_rows = p->split == SPLIT_ROWS || p->split == SPLIT_QKV;
    if ((by_rows && *full_rows % (tp * (p->split == SPLIT_QKV ? 3 : 1)) != 0) ||
        (p->split == SPLIT_COLS && p->full_cols % tp != 0))
        die("checkpoint '%s': tp %lld does not divide the shape of '%s' (%zu, %zu)", f->path, f->tp,
            p->name, *full_rows, p->full_cols);
    /* experts: the saved ep rank's E/ep of them, whole (read_moe_cp: ep divides E) */
    const size_t rows = by_rows                     ? *full_rows / tp
                        : p->split == SPLIT_EXPERTS ? *full_rows / (size_t)f->ep
                                                    : *full_rows;
    int64_t shape[2] = {(int64_t)rows,
                        (int64_t)(p->split == SPLIT_COLS ? p->full_cols / tp : p->full_cols)};
    char name[TF_MAX_NAME + 1];
    snprintf(name, sizeof name, "param/%s", p->name);
    return tf_reader_require(f->r, name, TF_F32, p->cols == 1 ? 1 : 2, shape);
}

/* Where my local element i of parameter j sits in the saved file f: false if f's tp rank does
 * not hold it or, for an expert tensor, f's ep rank does not (never another ep rank's expert). */
static bool find_in_file(const saved_rank *f, const load_target *t, int j, size_t full_rows,
                         size_t i, size_t *saved_local) {
    const gpt_param *p = t->m->plist[j];
    size_t s = gpt_param_serial_index(p, t->m->pshard[j], i);
    int holder;
    if (p->split == SPLIT_EXPERTS)
        return checkpoint_locate_expert(full_rows, p->full_cols, (int)f->ep, s, &holder,
                                        saved_local) &&
               holder == f->ep_rank;
    if (!checkpoint_locate(p->split, full_rows, p->full_cols, (int)f->tp, s, &holder, saved_local))
        return false;
    return holder < 0 || holder == f->tp_rank;
}

static void copy_params(const saved_rank *f, load_target *t) {
    local_model *m = t->m;
    char name[TF_MAX_NAME + 1];
    for (int j = 0; j < m->nparams && t->params_left; j++) {
        const gpt_param *p = m->plist[j];
        snprintf(name, sizeof name, "param/%s", p->name);
        if (!tf_reader_find(f->r, name)) continue;
        size_t full_rows, li;
        const float *src = saved_param(f, p, &full_rows);
        check_values(f, name, src, tf_reader_find(f->r, name)->numel, false);
        for (size_t i = 0; i < p->numel; i++) {
            if (t->param_done[p->offset + i] || !find_in_file(f, t, j, full_rows, i, &li)) continue;
            t->params[p->offset + i] = prec_round(t->dtype, src[li]);
            t->param_done[p->offset + i] = true;
            t->params_left--;
        }
    }
}

/* Parses "adam_m/NAME@a-b" into NAME and [a, b); false for any other tensor. */
static bool parse_piece(const char *tensor, char *pname, size_t cap, size_t *a, size_t *b) {
    if (strncmp(tensor, "adam_m/", 7) != 0) return false;
    const char *at = strrchr(tensor, '@');
    if (!at || (size_t)(at - tensor - 7) >= cap || at == tensor + 7) return false;
    unsigned long long x, y;
    int used = 0;
    if (sscanf(at + 1, "%llu-%llu%n", &x, &y, &used) != 2 || at[1 + used] != 0 || x >= y)
        return false;
    memcpy(pname, tensor + 7, (size_t)(at - tensor - 7));
    pname[at - tensor - 7] = 0;
    *a = (size_t)x;
    *b = (size_t)y;
    return true;
}

static int param_index(const local_model *m, const char *name) {
    for (int j = 0; j < m->nparams; j++)
        if (strcmp(m->plist[j]->name, name) == 0) return j;
    return -1;
}

static void copy_state(const saved_rank *f, load_target *t) {
    local_model *m = t->m;
    const bool saved_master = strcmp(f->precision, "fp32") != 0;
    char pname[TF_MAX_NAME + 1], name[TF_MAX_NAME + 1];
    for (size_t k = 0; k < tf_reader_count(f->r) && t->state_left; k++) {
        const tf_tensor *tm = tf_reader_tensor(f->r, k);
        size_t a, b;
        if (!parse_piece(tm->name, pname, sizeof pname, &a, &b)) {
            if (strncmp(tm->name, "adam_m/", 7) == 0)
                die("checkpoint '%s': tensor '%s' is not named adam_m/PARAM@START-END", f->path,
                    tm->name);
            continue;
        }
        int j = param_index(m, pname);
        if (j < 0) continue; /* a parameter this rank does not hold */
        const gpt_param *p = m->plist[j];
        size_t full_rows;
        const float *params = saved_param(f, p, &full_rows);
        const tf_tensor *pt = tf_reader_find(f->r, strcat(strcpy(name, "param/"), p->name));
        if (b > pt->numel)
            die("checkpoint '%s': piece '%s' runs past the %zu elements of '%s'", f->path, tm->name,
                pt->numel, p->name);
        int64_t len = (int64_t)(b - a);
        const float *src[3];
        for (int w = 0; w < (saved_master ? 3 : 2); w++) {
            snprintf(name, sizeof name, "%s/%s@%zu-%zu", k_state[w], pname, a, b);
            src[w] = tf_reader_require(f->r, name, TF_F32, 1, &len);
            check_values(f, name, src[w], (size_t)len, w == 1);
        }
        for (int part = 0; part < t->nparts; part++) {
            load_state *ls = &t->state[part];
            for (int q = 0; q < ls->pieces->n_pieces; q++) {
                const zero_piece *pc = &ls->pieces->pieces[q];
                if (strcmp(m->plist[pc->param]->name, pname) != 0) continue; /* both wte copies */
                for (size_t i = pc->param_start; i < pc->param_end; i++) {
                    size_t at = pc->local_start + (i - pc->param_start), li;
                    if (ls->done[at] || !find_in_file(f, t, pc->param, full_rows, i, &li) ||
                        li < a || li >= b)
                        continue;
                    ls->mom[0][at] = src[0][li - a];
                    ls->mom[1][at] = src[1][li - a];
                    if (ls->master) ls->master[at] = saved_master ? src[2][li - a] : params[li];
                    ls->done[at] = true;
                    t->state_left--;
                }
            }
        }
    }
}

/* Elements no file held: padded vocabulary rows of a layout with more padding than the saved
 * one get their initial value (they never receive a gradient); anything else is an error. */
static void fill_padding_or_die(load_target *t, const char *dir, int it, const ckpt_layout *c) {
    local_model *m = t->m;
    for (int j = 0; j < m->nparams; j++) {
        const gpt_param *p = m->plist[j];
        for (size_t i = 0; i < p->numel; i++) {
            if (t->param_done[p->offset + i]) continue;
            size_t s = gpt_param_serial_index(p, m->pshard[j], i);
            if (p->kind != GPT_WTE || s / p->full_cols < (size_t)m->cfg.real_vocab)
                die("--load %s: iteration %d has no value for element %zu of '%s' (is a rank file "
                    "missing?)",
                    dir, it, s, p->name);
            t->params[p->offset + i] = prec_round(
                t->dtype, gpt_init_value(&m->cfg, (uint64_t)c->seed, p->kind, p->layer, s));
            t->param_done[p->offset + i] = true;
        }
    }
    for (int part = 0; part < t->nparts; part++) {
        load_state *ls = &t->state[part];
        for (int q = 0; q < ls->pieces->n_pieces; q++) {
            const zero_piece *pc = &ls->pieces->pieces[q];
            const gpt_param *p = m->plist[pc->param];
            for (size_t i = pc->param_start; i < pc->param_end; i++) {
                size_t at = pc->local_start + (i - pc->param_start);
                if (ls->done[at]) continue;
                size_t s = gpt_param_serial_index(p, m->pshard[pc->param], i);
                if (p->kind != GPT_WTE || s / p->full_cols < (size_t)m->cfg.real_vocab)
                    die("--load %s: iteration %d has no optimizer state for element %zu of '%s' "
                        "(is a rank file missing?)",
                        dir, it, s, p->name);
                ls->mom[0][at] = ls->mom[1][at] = 0.0f;
                if (ls->master)
                    ls->master[at] = gpt_init_value(&m->cfg, (uint64_t)c->seed, p->kind, p->layer,
                                                    s);
            }
        }
    }
}

int checkpoint_load(const char *dir, const ckpt_layout *c, local_model *m, dist_optimizer *opt,
                    int rank) {
    const int it = checkpoint_latest(dir);
    load_target t = {.m = m, .dtype = c->dtype};
    distopt_state_part part[DISTOPT_MAX_PARTS];
    t.nparts = state_parts(c, opt, rank, part);
    t.params = host_view(m->params, m->numel);
    for (int k = 0; k < t.nparts; k++) {
        load_state *ls = &t.state[k];
        ls->mom[0] = host_view(part[k].m, part[k].n);
        ls->mom[1] = host_view(part[k].v, part[k].n);
        ls->master = host_view(part[k].master, part[k].n);
        ls->pieces = part[k].pieces;
        ls->done = callocCheck(part[k].n ? part[k].n : 1, sizeof(bool));
        for (int q = 0; q < ls->pieces->n_pieces; q++)
            t.state_left += ls->pieces->pieces[q].param_end - ls->pieces->pieces[q].param_start;
    }
    t.param_done = callocCheck(m->numel ? m->numel : 1, sizeof(bool));
    t.params_left = m->numel;

    /* Rank 0's file names the saved world and carries the step count and loss scaler. */
    char path[4400];
    saved_rank f;
    open_rank(&f, path, sizeof path, dir, it, 0);
    check_same_model(&f, dir, c);
    const long long world = f.world, adam_step = f.adam_step;
    char save_id[sizeof f.save_id];
    memcpy(save_id, f.save_id, sizeof save_id);
    const bool scaler_too = c->dtype == PREC_FP16 && strcmp(f.precision, "fp16") == 0;
    if (scaler_too) {
        int64_t four = 4;
        const int32_t *sc = tf_reader_require(f.r, "loss_scaler", TF_I32, 1, &four);
        prec_scaler *s = distopt_scaler(opt);
        double scale;
        if (!tf_meta_get_double(tf_reader_meta(f.r), "loss_scale", &scale) || !(scale > 0))
            die("checkpoint '%s': the metadata has no positive \"loss_scale\"", path);
        for (int k = 0; k < 4; k++)
            if (sc[k] < 0)
                die("checkpoint '%s': tensor 'loss_scaler' element %d is %d (its counters are "
                    "never negative)",
                    path, k, (int)sc[k]);
        s->scale = (float)scale;
        s->growth_tracker = sc[0];
        s->hysteresis_tracker = sc[1];
        s->steps = sc[2];
        s->skipped = sc[3];
    }
    for (int r = 0;; r++) {
        if (r > 0) {
            if (r >= world || (t.params_left == 0 && t.state_left == 0)) break;
            open_rank(&f, path, sizeof path, dir, it, r);
            check_same_model(&f, dir, c);
            if (f.world != world)
                die("checkpoint '%s': world_size %lld, but rank 0's file says %lld", path, f.world,
                    world);
            if (strcmp(f.save_id, save_id) != 0)
                die("checkpoint '%s': save id \"%s\", but rank 0's file has \"%s\": rank files "
                    "of different saves are mixed in one iteration directory",
                    path, f.save_id[0] ? f.save_id : "(none)", save_id[0] ? save_id : "(none)");
        }
        copy_params(&f, &t);
        copy_state(&f, &t);
        tf_reader_close(f.r);
    }
    fill_padding_or_die(&t, dir, it, c);
    host_view_release(m->params, t.params, m->numel, true);
    for (int k = 0; k < t.nparts; k++) {
        load_state *ls = &t.state[k];
        host_view_release(part[k].m, ls->mom[0], part[k].n, true);
        host_view_release(part[k].v, ls->mom[1], part[k].n, true);
        host_view_release(part[k].master, ls->master, part[k].n, true);
        free(ls->done);
    }
    distopt_set_step_count(opt, (int)adam_step);
    free(t.param_done);
    return it;
}

void checkpoint_read_model(const char *dir, ckpt_layout *c) {
    const int it = checkpoint_latest(dir);
    char path[4400];
    saved_rank f;
    open_rank(&f, path, sizeof path, dir, it, 0);
    c->num_layers = meta_dim(&f, "num_layers", 1);
    c->hidden_size = meta_dim(&f, "hidden_size", 1);
    c->num_attention_heads = meta_dim(&f, "num_attention_heads", 1);
    c->seq_length = meta_dim(&f, "seq_length", 1);
    c->make_vocab_size_divisible_by = meta_dim(&f, "make_vocab_size_divisible_by", 1);
    c->seed = meta_dim(&f, "seed", INT_MIN);
    c->num_experts = f.num_experts; /* 0: dense (open_rank checked the MoE fields) */
    c->moe_router_topk = f.num_experts > 0 ? f.topk : 0;
    c->moe_aux_loss_coeff = f.aux_coeff;
    c->moe_expert_capacity_factor = f.capacity;
    if (c->hidden_size % c->num_attention_heads != 0)
        die("checkpoint '%s': hidden_size %d is not divisible by num_attention_heads %d", path,
            c->hidden_size, c->num_attention_heads);
    tf_reader_close(f.r);
}
