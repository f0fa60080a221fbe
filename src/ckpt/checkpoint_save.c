/* checkpoint_save.c — a rank writes what it holds, named so that any other layout can find it
 * again (checkpoint.h; src/ckpt/CHECKPOINTS.md):
 *
 *   metadata    one compact JSON object: iteration, save id, layout, coordinates, model
 *   param/NAME  the rank's slice of every parameter, whole (local shape)
 *   adam_m/NAME@a-b, adam_v/..., master/...   optimizer state as param-space pieces
 *   loss_scaler
 *
 * then every rank meets and rank 0 publishes the iteration (checkpoint_dir.h).
 * Not here: the container format (tensorfile.c), reading back (checkpoint_load.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "src/ckpt/checkpoint_dir.h"
#include "src/ckpt/checkpoint_internal.h"
#include "src/core/json.h"
#include "src/precision/convert.h"
#include "src/runtime/comm.h"

const char *const ckpt_state_names[3] = {"adam_m", "adam_v", "master"};

/* One part's pieces as "adam_m/NAME@a-b", "adam_v/..." (and "master/..." in mixed
 * precision). */
static void save_state_part(tf_writer *w, const local_model *m, const distopt_state_part *pt) {
    char name[TF_MAX_NAME + 1];
    float *mom[2] = {ckpt_host_view(pt->m, pt->n), ckpt_host_view(pt->v, pt->n)};
    float *master = ckpt_host_view(pt->master, pt->n);
    const zero_shard *sh = pt->pieces;
    for (int k = 0; k < sh->n_pieces; k++) {
        const zero_piece *pc = &sh->pieces[k];
        if (local_model_is_second_wte(m, m->plist[pc->param])) continue;
        int64_t len = (int64_t)(pc->param_end - pc->param_start);
        for (int which = 0; which < (master ? 3 : 2); which++) {
            const float *src = which < 2 ? mom[which] : master;
            snprintf(name, sizeof name, "%s/%s@%zu-%zu", ckpt_state_names[which],
                     m->plist[pc->param]->name, pc->param_start, pc->param_end);
            tf_writer_add(w, name, TF_F32, 1, &len, src + pc->local_start);
        }
    }
    for (int k = 0; k < 2; k++) ckpt_host_view_release(k ? pt->v : pt->m, mom[k], pt->n, false);
    if (master) ckpt_host_view_release(pt->master, master, pt->n, false);
}

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
    const pg_coord xy = ckpt_coord_of(c, rank, NULL);
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
    float *params = ckpt_host_view(m->params, m->numel);
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
    const int nparts = ckpt_state_parts(c, opt, rank, part);
    for (int q = 0; q < nparts; q++) save_state_part(w, m, &part[q]);
    prec_scaler *s = distopt_scaler(opt);
    int64_t four = 4;
    int32_t sc[4] = {s->growth_tracker, s->hysteresis_tracker, (int32_t)s->steps,
                     (int32_t)s->skipped};
    tf_writer_add(w, "loss_scaler", TF_I32, 1, &four, sc);
    tf_writer_commit(w);
    ckpt_host_view_release(m->params, params, m->numel, false);
    /* Everyone has written: the iteration becomes visible at once. */
    if (world) comm_barrier(world);
    ckpt_save_publish(dir, it, rank); /* rank 0: the renames and `latest` */
    if (world) comm_barrier(world);
}
