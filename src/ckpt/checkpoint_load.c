/* checkpoint_load.c — loading reshards: any layout loads any saved layout of the same model
 * (checkpoint.h; src/ckpt/CHECKPOINTS.md). It walks the rank files of the iteration in rank
 * order and fills every element the loading rank needs, each exactly once, through the serial
 * index:
 *
 *   my local element i of NAME --gpt_param_serial_index--> serial s --checkpoint_locate-->
 *   (saved tp rank, saved local index)  -->  value in any file of that tp rank holding NAME
 *
 * It stops opening files as soon as everything is filled. Not here: the metadata checks
 * (checkpoint_read.c), the container format (tensorfile.c) and the optimizer's arithmetic
 * (src/zero/).
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/ckpt/checkpoint_internal.h"
#include "src/core/checked.h"
#include "src/precision/convert.h"

/* Every element of a saved tensor finite (and, for Adam's second moment, not negative): a
 * NaN loaded into the model would only show up steps later as a diverged loss. */
static void check_values(const ckpt_saved_rank *f, const char *tensor, const float *x, size_t n,
                         bool nonneg) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || (nonneg && x[i] < 0))
            die("checkpoint '%s': tensor '%s' element %zu is %g (%s)", f->path, tensor, i,
                (double)x[i], nonneg ? "must be finite and not negative" : "must be finite");
}

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
static const float *saved_param(const ckpt_saved_rank *f, const gpt_param *p, size_t *full_rows) {
    *full_rows = p->kind == GPT_WTE ? (size_t)f->padded_vocab : p->full_rows;
    const size_t tp = (size_t)f->tp;
    const bool by_rows = p->split == SPLIT_ROWS || p->split == SPLIT_QKV;
    if ((by_rows && *full_rows % (tp * (p->split == SPLIT_QKV ? 3 : 1)) != 0) ||
        (p->split == SPLIT_COLS && p->full_cols % tp != 0))
        die("checkpoint '%s': tp %lld does not divide the shape of '%s' (%zu, %zu)", f->path, f->tp,
            p->name, *full_rows, p->full_cols);
    /* experts: the saved ep rank's E/ep of them, whole (checkpoint_read.c: ep divides E) */
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
static bool find_in_file(const ckpt_saved_rank *f, const load_target *t, int j, size_t full_rows,
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

/* Every parameter element the loading rank still needs that file f holds. */
static void copy_params(const ckpt_saved_rank *f, load_target *t) {
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
    int64_t x = 0, y = 0; /* checked (src/core/checked.h): "-1" is no element, never 2^64 - 1 */
    const char *end;
    if (!isdigit((unsigned char)at[1]) ||
        checked_parse_i64(at + 1, &end, 0, INT64_MAX, &x) != CHECKED_OK || *end != '-' ||
        !isdigit((unsigned char)end[1]) ||
        checked_parse_i64(end + 1, NULL, 0, INT64_MAX, &y) != CHECKED_OK || x >= y)
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

/* A saved piece of one parameter's optimizer state: its saved local elements [a, b). */
typedef struct {
    const char *pname;
    size_t a, b, full_rows; /* full_rows: the parameter's serial rows in the saved layout */
    const float *src[3];    /* (b - a) adam_m, adam_v, master (NULL in an fp32 save) */
    const float *params;    /* the saved parameter: the master weights of an fp32 save */
} saved_piece;

/* Fills from the saved piece every element of one state part of the loading rank that it
 * holds (both wte copies of a tied model). */
static void copy_piece(const ckpt_saved_rank *f, load_target *t, load_state *ls,
                       const saved_piece *sp) {
    const size_t a = sp->a, b = sp->b;
    for (int q = 0; q < ls->pieces->n_pieces; q++) {
        const zero_piece *pc = &ls->pieces->pieces[q];
        if (strcmp(t->m->plist[pc->param]->name, sp->pname) != 0) continue;
        for (size_t i = pc->param_start; i < pc->param_end; i++) {
            size_t at = pc->local_start + (i - pc->param_start), li;
            if (ls->done[at] || !find_in_file(f, t, pc->param, sp->full_rows, i, &li) || li < a ||
                li >= b)
                continue;
            ls->mom[0][at] = sp->src[0][li - a];
            ls->mom[1][at] = sp->src[1][li - a];
            if (ls->master) ls->master[at] = sp->src[2] ? sp->src[2][li - a] : sp->params[li];
            ls->done[at] = true;
            t->state_left--;
        }
    }
}

/* Every optimizer-state piece of file f ("adam_m/NAME@a-b" and its adam_v, master twins) of a
 * parameter the loading rank holds: checked, then copied into each state part needing it. */
static void copy_state(const ckpt_saved_rank *f, load_target *t) {
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
        const float *src[3] = {NULL, NULL, NULL};
        for (int w = 0; w < (saved_master ? 3 : 2); w++) {
            snprintf(name, sizeof name, "%s/%s@%zu-%zu", ckpt_state_names[w], pname, a, b);
            src[w] = tf_reader_require(f->r, name, TF_F32, 1, &len);
            check_values(f, name, src[w], (size_t)len, w == 1);
        }
        const saved_piece sp = {pname, a, b, full_rows, {src[0], src[1], src[2]}, params};
        for (int part = 0; part < t->nparts; part++) copy_piece(f, t, &t->state[part], &sp);
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

/* The loading rank's host views of its parameters and of its optimizer state's parts,
 * nothing filled yet. */
static void load_target_open(load_target *t, local_model *m, prec_dtype dtype,
                             const distopt_state_part *part, int nparts) {
    *t = (load_target){.m = m, .dtype = dtype, .nparts = nparts};
    t->params = ckpt_host_view(m->params, m->numel);
    for (int k = 0; k < t->nparts; k++) {
        load_state *ls = &t->state[k];
        ls->mom[0] = ckpt_host_view(part[k].m, part[k].n);
        ls->mom[1] = ckpt_host_view(part[k].v, part[k].n);
        ls->master = ckpt_host_view(part[k].master, part[k].n);
        ls->pieces = part[k].pieces;
        ls->done = callocCheck(part[k].n ? part[k].n : 1, sizeof(bool));
        for (int q = 0; q < ls->pieces->n_pieces; q++)
            t->state_left += ls->pieces->pieces[q].param_end - ls->pieces->pieces[q].param_start;
    }
    t->param_done = callocCheck(m->numel ? m->numel : 1, sizeof(bool));
    t->params_left = m->numel;
}

/* The filled views uploaded back to the device; the bookkeeping freed. */
static void load_target_close(load_target *t, const distopt_state_part *part) {
    ckpt_host_view_release(t->m->params, t->params, t->m->numel, true);
    for (int k = 0; k < t->nparts; k++) {
        load_state *ls = &t->state[k];
        ckpt_host_view_release(part[k].m, ls->mom[0], part[k].n, true);
        ckpt_host_view_release(part[k].v, ls->mom[1], part[k].n, true);
        ckpt_host_view_release(part[k].master, ls->master, part[k].n, true);
        free(ls->done);
    }
    free(t->param_done);
}

/* The fp16 loss scaler's state, from rank 0's file of an fp16 save: its counters (tensor
 * "loss_scaler") and its scale (metadata). */
static void load_loss_scaler(const ckpt_saved_rank *f, dist_optimizer *opt) {
    int64_t four = 4;
    const int32_t *sc = tf_reader_require(f->r, "loss_scaler", TF_I32, 1, &four);
    prec_scaler *s = distopt_scaler(opt);
    for (int k = 0; k < 4; k++)
        if (sc[k] < 0)
            die("checkpoint '%s': tensor 'loss_scaler' element %d is %d (its counters are never "
                "negative)",
                f->path, k, (int)sc[k]);
    s->scale = (float)f->loss_scale; /* checked by ckpt_rank_open */
    s->growth_tracker = sc[0];
    s->hysteresis_tracker = sc[1];
    s->steps = sc[2];
    s->skipped = sc[3];
}

/* Every rank file read must be of the save rank 0's file is of: the same world and save id. */
static void check_same_save(const ckpt_saved_rank *f, long long world, const char *save_id) {
    if (f->world != world)
        die("checkpoint '%s': world_size %lld, but rank 0's file says %lld", f->path, f->world,
            world);
    if (strcmp(f->save_id, save_id) != 0)
        die("checkpoint '%s': save id \"%s\", but rank 0's file has \"%s\": rank files of "
            "different saves are mixed in one iteration directory",
            f->path, f->save_id[0] ? f->save_id : "(none)", save_id[0] ? save_id : "(none)");
}

int checkpoint_load(const char *dir, const ckpt_layout *c, local_model *m, dist_optimizer *opt,
                    int rank) {
    const int it = checkpoint_latest(dir);
    distopt_state_part part[DISTOPT_MAX_PARTS];
    const int nparts = ckpt_state_parts(c, opt, rank, part);
    load_target t;
    load_target_open(&t, m, c->dtype, part, nparts);

    /* Rank 0's file names the saved world and carries the step count and loss scaler. */
    char path[4400];
    ckpt_saved_rank f;
    ckpt_rank_open(&f, path, sizeof path, dir, it, 0);
    ckpt_rank_check_model(&f, dir, c);
    const long long world = f.world, adam_step = f.adam_step;
    char save_id[sizeof f.save_id];
    memcpy(save_id, f.save_id, sizeof save_id);
    if (c->dtype == PREC_FP16 && strcmp(f.precision, "fp16") == 0) load_loss_scaler(&f, opt);
    for (int r = 0;; r++) {
        if (r > 0) {
            if (r >= world || (t.params_left == 0 && t.state_left == 0)) break;
            ckpt_rank_open(&f, path, sizeof path, dir, it, r);
            ckpt_rank_check_model(&f, dir, c);
            check_same_save(&f, world, save_id);
        }
        copy_params(&f, &t);
        copy_state(&f, &t);
        tf_reader_close(f.r);
    }
    fill_padding_or_die(&t, dir, it, c);
    load_target_close(&t, part);
    distopt_set_step_count(opt, (int)adam_step);
    return it;
}
