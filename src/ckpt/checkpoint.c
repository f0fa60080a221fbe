/* checkpoint.c — see checkpoint.h. */
#include "src/ckpt/checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/ckpt/tensorfile.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/runtime/comm.h"
#include "src/zero/distributed_optimizer.h"

static void iter_dir(char *out, size_t cap, const char *dir, int it, bool tmp) {
    snprintf(out, cap, "%s/iter_%07d%s", dir, it, tmp ? ".tmp" : "");
}

static void rank_file(char *out, size_t cap, const char *idir, int rank) {
    snprintf(out, cap, "%s/rank_%05d.tck", idir, rank);
}

static char *meta_json(int it, const train_config *c, const local_model *m, dist_optimizer *opt,
                       int rank) {
    char *s = mallocCheck(2048);
    snprintf(s, 2048,
             "{\"format\":\"trident-checkpoint\",\"iteration\":%d,\"adam_step\":%d,\"loss_scale\":%.9g,"
             "\"rank\":%d,\"world_size\":%d,\"tp\":%d,\"pp\":%d,\"dp\":%d,\"vpp\":%d,"
             "\"tp_rank\":%d,\"pp_rank\":%d,\"zero\":%d,\"precision\":\"%s\","
             "\"num_layers\":%d,\"hidden_size\":%d,\"num_attention_heads\":%d,\"seq_length\":%d,"
             "\"padded_vocab\":%d,\"make_vocab_size_divisible_by\":%d,\"seed\":%d,\"numel\":%zu}",
             it, distopt_step_count(opt), (double)distopt_loss_scale(opt), rank, c->world_size,
             c->tensor_model_parallel_size, c->pipeline_model_parallel_size, c->dp, c->vpp, m->tp_rank,
             m->pp_rank, c->use_distributed_optimizer ? 1 : 0, c->bf16 ? "bf16" : c->fp16 ? "fp16" : "fp32",
             c->num_layers, c->hidden_size, c->num_attention_heads, c->seq_length, c->padded_vocab,
             c->make_vocab_size_divisible_by, c->seed, m->numel);
    return s;
}

void checkpoint_save(const char *dir, int it, const train_config *c, const local_model *m,
                     dist_optimizer *opt, comm_group *world, int rank) {
    char tmpdir[4200], findir[4200], path[4400];
    iter_dir(tmpdir, sizeof tmpdir, dir, it, true);
    iter_dir(findir, sizeof findir, dir, it, false);
    if (rank == 0) make_dirs(tmpdir);
    if (world) comm_barrier(world);
    rank_file(path, sizeof path, tmpdir, rank);
    char *meta = meta_json(it, c, m, opt, rank);
    tf_writer *w = tf_writer_open(path, meta);
    free(meta);
    char name[64];
    for (int i = 0; i < m->nparams; i++) {
        const gpt_param *p = m->plist[i];
        int64_t shape[2] = {(int64_t)p->rows, (int64_t)p->cols};
        snprintf(name, sizeof name, "param/%s", p->name);
        tf_writer_add(w, name, TF_F32, p->cols == 1 ? 1 : 2, shape, m->params + p->offset);
    }
    size_t n;
    float *mm = distopt_moment(opt, 0, &n);
    int64_t len = (int64_t)n;
    tf_writer_add(w, "adam_m", TF_F32, 1, &len, mm);
    tf_writer_add(w, "adam_v", TF_F32, 1, &len, distopt_moment(opt, 1, &n));
    float *master = distopt_master(opt, &n);
    if (master) {
        len = (int64_t)n;
        tf_writer_add(w, "master", TF_F32, 1, &len, master);
    }
    prec_scaler *s = distopt_scaler(opt);
    int64_t four = 4;
    int32_t sc[4] = {s->growth_tracker, s->hysteresis_tracker, (int32_t)s->steps, (int32_t)s->skipped};
    tf_writer_add(w, "loss_scaler", TF_I32, 1, &four, sc);
    tf_writer_commit(w);
    /* Everyone has written: the iteration becomes visible at once. */
    if (world) comm_barrier(world);
    if (rank == 0) {
        char old[4300];
        struct stat st;
        if (stat(findir, &st) == 0) { /* an earlier save of the same iteration: move it aside */
            snprintf(old, sizeof old, "%s.old", findir);
            char cmd[9000];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", old);
            if (system(cmd) != 0) die("cannot remove '%s'", old);
            if (rename(findir, old) != 0) die("cannot move aside '%s': %s", findir, strerror(errno));
        }
        if (rename(tmpdir, findir) != 0) die("cannot rename '%s' to '%s': %s", tmpdir, findir, strerror(errno));
        snprintf(path, sizeof path, "%s/latest", dir);
        atomic_file af;
        FILE *f = atomic_file_open(&af, path);
        fprintf(f, "%d\n", it);
        atomic_file_commit(&af);
    }
    if (world) comm_barrier(world);
}

int checkpoint_latest(const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/latest", dir);
    FILE *f = fopen(path, "r");
    if (!f) die("--load %s: no checkpoint there ('%s' is missing: %s)", dir, path, strerror(errno));
    int it = -1;
    int ok = fscanf(f, "%d", &it);
    fclose(f);
    if (ok != 1 || it < 0) die("--load %s: '%s' does not hold an iteration number", dir, path);
    return it;
}

static tf_reader *open_rank(const char *dir, int it, int rank) {
    char idir[4200], path[4400], err[1024];
    iter_dir(idir, sizeof idir, dir, it, false);
    rank_file(path, sizeof path, idir, rank);
    tf_reader *r = tf_reader_open(path, err, sizeof err);
    if (!r) die("%s", err);
    return r;
}

static long long meta_int(const tf_reader *r, const char *key) {
    long long v;
    if (!tf_meta_get_int(tf_reader_meta(r), key, &v)) die("checkpoint: metadata lacks '%s'", key);
    return v;
}

void checkpoint_read_config(const char *dir, train_config *c) {
    int it = checkpoint_latest(dir);
    tf_reader *r = open_rank(dir, it, 0);
    c->num_layers = (int)meta_int(r, "num_layers");
    c->hidden_size = (int)meta_int(r, "hidden_size");
    c->num_attention_heads = (int)meta_int(r, "num_attention_heads");
    c->seq_length = (int)meta_int(r, "seq_length");
    c->make_vocab_size_divisible_by = (int)meta_int(r, "make_vocab_size_divisible_by");
    c->seed = (int)meta_int(r, "seed");
    tf_reader_close(r);
}

int checkpoint_load(const char *dir, const train_config *c, local_model *m, dist_optimizer *opt,
                    int rank) {
    int it = checkpoint_latest(dir);
    tf_reader *r = open_rank(dir, it, rank);
    struct { const char *key; long long want; } checks[] = {
        {"world_size", c->world_size}, {"tp", c->tensor_model_parallel_size},
        {"pp", c->pipeline_model_parallel_size}, {"vpp", c->vpp},
        {"zero", c->use_distributed_optimizer ? 1 : 0}, {"num_layers", c->num_layers},
        {"hidden_size", c->hidden_size}, {"num_attention_heads", c->num_attention_heads},
        {"seq_length", c->seq_length}, {"padded_vocab", c->padded_vocab},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        long long got = meta_int(r, checks[i].key);
        if (got != checks[i].want)
            die("--load %s: the checkpoint has %s = %lld but this run has %lld (load with the layout and "
                "model it was saved with)", dir, checks[i].key, got, checks[i].want);
    }
    char name[64];
    for (int i = 0; i < m->nparams; i++) {
        const gpt_param *p = m->plist[i];
        int64_t shape[2] = {(int64_t)p->rows, (int64_t)p->cols};
        snprintf(name, sizeof name, "param/%s", p->name);
        const float *src = tf_reader_require(r, name, TF_F32, p->cols == 1 ? 1 : 2, shape);
        memcpy(m->params + p->offset, src, p->numel * sizeof(float));
    }
    size_t n;
    for (int which = 0; which < 2; which++) {
        float *dst = distopt_moment(opt, which, &n);
        int64_t len = (int64_t)n;
        memcpy(dst, tf_reader_require(r, which ? "adam_v" : "adam_m", TF_F32, 1, &len), n * sizeof(float));
    }
    float *master = distopt_master(opt, &n);
    if (master) {
        int64_t len = (int64_t)n;
        memcpy(master, tf_reader_require(r, "master", TF_F32, 1, &len), n * sizeof(float));
    }
    int64_t four = 4;
    const int32_t *sc = tf_reader_require(r, "loss_scaler", TF_I32, 1, &four);
    prec_scaler *s = distopt_scaler(opt);
    s->growth_tracker = sc[0];
    s->hysteresis_tracker = sc[1];
    s->steps = sc[2];
    s->skipped = sc[3];
    double scale;
    if (tf_meta_get_double(tf_reader_meta(r), "loss_scale", &scale)) s->scale = (float)scale;
    distopt_set_step_count(opt, (int)meta_int(r, "adam_step"));
    tf_reader_close(r);
    return it;
}
