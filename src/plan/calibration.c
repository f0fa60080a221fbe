/* calibration.c — see calibration.h: the shapes to time, the measurements, the file. */
#include "src/plan/calibration.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/core/clock.h"
#include "src/core/file_read.h"
#include "src/cp/ring_attention.h"
#include "src/device/gemm_rate.h"
#include "src/model/gpt.h"
#include "src/optim/adamw.h"

enum { CAL_MAX_BYTES = 1 << 20 };

static const char *const k_link_names[PLAN_NLINKS] = {"p2p", "all-reduce", "reduce-scatter",
                                                      "all-gather", "all-to-all"};

const char *plan_link_name(plan_link_kind k) { return k_link_names[k]; }

void plan_link_shape(plan_link_kind k, int g, double bytes, double *steps, double *wire) {
    *steps = g - 1, *wire = (double)(g - 1) / g * bytes;
    if (k == PLAN_P2P) *steps = 1, *wire = bytes;
    if (k == PLAN_ALL_REDUCE) *steps *= 2, *wire *= 2;
}

double plan_link_time(const plan_link *l, plan_link_kind k, int g, double bytes) {
    if (g <= 1) return 0;
    double steps, wire;
    plan_link_shape(k, g, bytes, &steps, &wire);
    return l->sync + l->alpha * steps + l->beta * wire;
}

void plan_calibration_model_of(const train_config *c, int out[8]) {
    const int v[8] = {c->num_layers,          c->hidden_size,
                      c->num_attention_heads, c->seq_length,
                      c->micro_batch_size,    c->make_vocab_size_divisible_by,
                      c->num_experts,         c->num_experts > 0 ? c->moe_router_topk : 0};
    memcpy(out, v, sizeof v);
}

void plan_calibration_default_links(plan_calibration *cal) {
    for (int k = 0; k < PLAN_NLINKS; k++) {
        cal->link[k].alpha = 20e-6;
        cal->link[k].beta = 1.0 / 2e9;
        cal->link[k].sync = 0;
        snprintf(cal->link[k].source, sizeof cal->link[k].source, "default");
    }
}

static int add_shape(plan_gemm *out, int n, int cap, size_t N, size_t C, size_t OC) {
    if (N == 0 || C == 0 || OC == 0) return n;
    for (int i = 0; i < n; i++)
        if (out[i].N == N && out[i].C == C && out[i].OC == OC) return n;
    if (n < cap) out[n++] = (plan_gemm){N, C, OC, 0};
    return n;
}

int plan_calibration_shapes(const train_config *c, int world, plan_gemm *out, int cap) {
    const size_t B = (size_t)c->micro_batch_size, T = (size_t)c->seq_length;
    const size_t C = (size_t)c->hidden_size;
    const size_t HS = C / (size_t)c->num_attention_heads;
    int n = 0;
    for (int tp = 1; tp <= world; tp++) {
        if (world % tp || C % (size_t)tp) continue;
        for (int cp = 1; cp * tp <= world; cp++) {
            if (world % (tp * cp) || T % (size_t)cp) continue;
            const size_t N = B * T / (size_t)cp, t = (size_t)tp;
            const size_t V = (size_t)gpt_padded_vocab(256, c->make_vocab_size_divisible_by, tp);
            n = add_shape(out, n, cap, N, C, 3 * C / t);       /* qkv */
            n = add_shape(out, n, cap, N, C / t, C);           /* proj */
            n = add_shape(out, n, cap, N, C, 4 * C / t);       /* fc */
            n = add_shape(out, n, cap, N, 4 * C / t, C);       /* fcproj */
            n = add_shape(out, n, cap, N, C, V / t);           /* head */
            n = add_shape(out, n, cap, T / (size_t)cp, HS, T); /* one head's Q·Kᵀ */
            const size_t E = (size_t)(c->num_experts > 0 ? c->num_experts : 0);
            const size_t K = (size_t)c->moe_router_topk;
            if (E > 0) n = add_shape(out, n, cap, N, C, E); /* the router */
            for (size_t ep = 1; E > 0 && ep * (size_t)(tp * cp) <= (size_t)world; ep++) {
                if ((size_t)world % ep || E % ep) continue;
                const size_t rows = (N * K * ep + E - 1) / E; /* an expert's rows, balanced */
                n = add_shape(out, n, cap, rows, C, 4 * C);   /* an expert's fc */
                n = add_shape(out, n, cap, rows, 4 * C, C);   /* its fcproj */
            }
        }
    }
    return n;
}

/* Floats per second of a GELU-like pass (tanh, multiply-adds) over a buffer the size of one
 * micro-batch's MLP activation. */
static double measure_elementwise(size_t n, double seconds) {
    float *x = mallocCheck(n * sizeof *x), *y = mallocCheck(n * sizeof *y);
    for (size_t i = 0; i < n; i++) x[i] = (float)(i % 97) * 0.01f - 0.5f;
    double best = 0, t_end = time_now() + seconds;
    do {
        const double t0 = time_now();
        for (size_t i = 0; i < n; i++) {
            const float u = x[i];
            y[i] = 0.5f * u * (1.0f + tanhf(0.7978846f * (u + 0.044715f * u * u * u)));
        }
        const double dt = time_now() - t0;
        if (dt > 0 && (double)n / dt > best) best = (double)n / dt;
    } while (time_now() < t_end);
    volatile float sink = y[n / 2];
    (void)sink;
    free(x);
    free(y);
    return best;
}

/* The attention core of one micro-batch at a->heads heads: forward and backward seconds
 * (fastest of the windows), through the kernels and through ring attention's (no group). */
static void measure_attention(const train_config *c, double seconds, plan_attention *a) {
    const int NHl = a->heads;
    const size_t B = (size_t)c->micro_batch_size, T = (size_t)c->seq_length;
    const size_t HS = (size_t)(c->hidden_size / c->num_attention_heads), H = (size_t)NHl;
    const size_t nqkv = B * T * 3 * H * HS, nout = B * T * H * HS, natt = B * H * T * T;
    float *qkv = callocCheck(2 * nqkv + 2 * nout + natt + T * T, sizeof *qkv);
    float *dqkv = qkv + nqkv, *out = dqkv + nqkv, *dout = out + nout, *att = dout + nout;
    float *scratch = att + natt;
    float *lse = callocCheck(B * H * T, sizeof *lse);
    for (size_t i = 0; i < nqkv; i++) qkv[i] = (float)(i % 83) * 0.01f - 0.4f;
    for (size_t i = 0; i < nout; i++) dout[i] = (float)(i % 79) * 0.01f - 0.4f;
    a->fwd = a->bwd = a->ring_fwd = a->ring_bwd = INFINITY;
    double t_end = time_now() + seconds / 2;
    do {
        const double t0 = time_now();
        attention_forward(out, att, qkv, B, T, H, HS);
        const double t1 = time_now();
        attention_backward(dqkv, dout, qkv, att, scratch, B, T, H, HS);
        a->fwd = fmin(a->fwd, t1 - t0), a->bwd = fmin(a->bwd, time_now() - t1);
    } while (time_now() < t_end);
    t_end = time_now() + seconds / 2;
    do {
        const double t0 = time_now();
        ring_attention_forward(NULL, out, lse, qkv, B, T, H, HS);
        const double t1 = time_now();
        ring_attention_backward(NULL, dqkv, dout, qkv, out, lse, B, T, H, HS);
        a->ring_fwd = fmin(a->ring_fwd, t1 - t0), a->ring_bwd = fmin(a->ring_bwd, time_now() - t1);
    } while (time_now() < t_end);
    free(lse);
    free(qkv);
}

/* Ring attention as rank 0 of r->cp computes it (the zig-zag gives every rank as many score
 * entries), at r->heads heads, without messages: forward and backward seconds, fastest. */
static void measure_ring(const train_config *c, double seconds, plan_ring *r) {
    const size_t B = (size_t)c->micro_batch_size, Tl = (size_t)(r->T / r->cp);
    const size_t HS = (size_t)(c->hidden_size / c->num_attention_heads), H = (size_t)r->heads;
    const size_t nqkv = B * Tl * 3 * H * HS, nout = B * Tl * H * HS;
    float *qkv = callocCheck(2 * nqkv + 2 * nout + B * H * Tl, sizeof *qkv);
    float *dqkv = qkv + nqkv, *out = dqkv + nqkv, *dout = out + nout, *lse = dout + nout;
    for (size_t i = 0; i < nqkv; i++) qkv[i] = (float)(i % 83) * 0.01f - 0.4f;
    for (size_t i = 0; i < nout; i++) dout[i] = (float)(i % 79) * 0.01f - 0.4f;
    r->fwd = r->bwd = INFINITY;
    const double t_end = time_now() + seconds;
    do {
        const double t0 = time_now();
        ring_attention_forward_alone(0, r->cp, out, lse, qkv, B, Tl, H, HS);
        const double t1 = time_now();
        ring_attention_backward_alone(0, r->cp, dqkv, dout, qkv, out, lse, B, Tl, H, HS);
        r->fwd = fmin(r->fwd, t1 - t0), r->bwd = fmin(r->bwd, time_now() - t1);
    } while (time_now() < t_end);
    free(qkv);
}

const plan_ring *plan_calibration_ring(const plan_calibration *cal, int heads, int T, int cp) {
    for (int i = 0; i < cal->nring; i++)
        if (cal->ring[i].heads == heads && cal->ring[i].T == T && cal->ring[i].cp == cp)
            return &cal->ring[i];
    return NULL;
}

bool plan_link_timed_at(plan_link_kind k, int g) { return k != PLAN_P2P || g == 2; }

void plan_link_group_untimed_from_pair(const plan_calibration *cal, plan_link_group *lg) {
    for (int k = 0; k < PLAN_NLINKS; k++)
        if (!plan_link_timed_at((plan_link_kind)k, lg->g)) lg->link[k] = cal->link[k];
}

plan_link plan_calibration_link(const plan_calibration *cal, plan_link_kind k, int g) {
    const plan_link *best = &cal->link[k];
    int best_g = 2;
    for (int i = 0; i < cal->nlink_groups; i++)
        if (plan_link_timed_at(k, cal->link_group[i].g) && cal->link_group[i].g <= g &&
            cal->link_group[i].g > best_g)
            best_g = cal->link_group[i].g, best = &cal->link_group[i].link[k];
    return *best;
}

double plan_calibration_moe_load(const plan_calibration *cal, int ep) {
    for (int i = 0; i < cal->nmoe_load; i++)
        if (cal->moe_load[i].ep == ep) return cal->moe_load[i].factor;
    return 1;
}

double plan_moe_load_factor(const uint32_t *tokens, int L, int E, int ep) {
    CHECK(L > 0 && ep > 0 && E % ep == 0, "plan_moe_load_factor: ep divides E");
    const int per = E / ep;
    double sum = 0;
    for (int l = 0; l < L; l++) {
        double total = 0, busiest = 0;
        for (int r = 0; r < ep; r++) {
            double rank = 0;
            for (int e = r * per; e < (r + 1) * per; e++) rank += tokens[(size_t)l * E + e];
            total += rank, busiest = fmax(busiest, rank);
        }
        sum += total > 0 ? busiest / (total / ep) : 1;
    }
    return sum / L;
}

const plan_attention *plan_calibration_attention(const plan_calibration *cal, int heads, int T) {
    for (int i = 0; i < cal->nattention; i++)
        if (cal->attention[i].heads == heads && cal->attention[i].T == T) return &cal->attention[i];
    return NULL;
}

/* Parameters per second of adamw_update over n parameters. */
static double measure_optimizer(size_t n, double seconds) {
    float *buf = callocCheck(4 * n, sizeof *buf);
    adamw_config cfg = {1e-3f, 1e-4f, 1, 10, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    double best = 0, t_end = time_now() + seconds;
    int t = 1;
    do {
        const double t0 = time_now();
        adamw_update(buf, buf + n, buf + 2 * n, buf + 3 * n, n, &cfg, 1e-3f, 0.1f, t++, 1.0f);
        const double dt = time_now() - t0;
        if (dt > 0 && (double)n / dt > best) best = (double)n / dt;
    } while (time_now() < t_end);
    free(buf);
    return best;
}

/* The model's own chunk at tp = cp = 1: one block (head false) or the head alone with its loss
 * (head true), forward and whole backward of one micro-batch, seconds (fastest of the
 * windows). */
static void measure_chunk(const train_config *c, bool head, double seconds, double *fwd,
                          double *bwd) {
    const int B = c->micro_batch_size, T = c->seq_length, C = c->hidden_size;
    gpt_config g = {gpt_padded_vocab(256, c->make_vocab_size_divisible_by, 1),
                    256,
                    T,
                    1,
                    C,
                    c->num_attention_heads,
                    c->num_experts,
                    c->moe_router_topk,
                    c->moe_aux_loss_coeff,
                    c->moe_expert_capacity_factor};
    gpt_shard sh = {1, 0, 0, head ? 0 : 1, false, head, 1, 0};
    gpt_chunk ch;
    gpt_chunk_init(&ch, &g, &sh, 0);
    float *params = callocCheck(ch.num_elements, sizeof *params);
    float *grads = callocCheck(ch.num_elements, sizeof *grads);
    gpt_chunk_init_params(&ch, params, 1234);
    const size_t n = (size_t)B * T * C;
    float *x = callocCheck(4 * n, sizeof *x), *y = x + n, *dy = x + 2 * n, *dx = x + 3 * n;
    for (size_t i = 0; i < n; i++) x[i] = dy[i] = (float)(i % 89) * 0.01f - 0.4f;
    int32_t *targets = callocCheck((size_t)B * T, sizeof *targets);
    for (int i = 0; i < B * T; i++) targets[i] = i % 256;
    gpt_acts *a = gpt_acts_create(&ch, B, T);
    gpt_scratch *s = gpt_scratch_create(&ch, B, T);
    *fwd = *bwd = INFINITY;
    const double t_end = time_now() + seconds;
    do {
        const double t0 = time_now();
        gpt_forward(&ch, params, a, s, NULL, targets, x, head ? NULL : y, NULL);
        const double t1 = time_now();
        gpt_backward(&ch, params, grads, a, s, dy, dx, 1.0f / (B * T), NULL);
        *fwd = fmin(*fwd, t1 - t0), *bwd = fmin(*bwd, time_now() - t1);
    } while (time_now() < t_end);
    gpt_scratch_destroy(s);
    gpt_acts_destroy(a);
    free(x);
    free(targets);
    free(grads);
    free(params);
}

void plan_calibration_measure(const train_config *c, int world, double seconds,
                              plan_calibration *cal) {
    memset(cal, 0, sizeof *cal);
    cal->version = PLAN_CALIBRATION_VERSION;
    gemm_rate_cpu_model(cal->machine, sizeof cal->machine);
    plan_calibration_model_of(c, cal->model);
    cal->threads = c->threads;
    ops_set_threads(c->threads);
    cal->ngemm = plan_calibration_shapes(c, world, cal->gemm, PLAN_MAX_GEMMS);
    const double each = 0.8 * seconds / (cal->ngemm + 2);
    for (int tp = 1; tp <= world && cal->nattention < PLAN_MAX_ATTENTION; tp++) {
        if (world % tp || c->num_attention_heads % tp) continue;
        plan_attention *a = &cal->attention[cal->nattention++];
        a->heads = c->num_attention_heads / tp, a->T = c->seq_length;
        measure_attention(c, each, a);
    }
    for (int tp = 1; tp <= world; tp++) /* every tp × cp the world holds, T/cp even */
        for (int cp = 2; tp * cp <= world && cal->nring < PLAN_MAX_RINGS; cp++) {
            if (world % (tp * cp) || c->num_attention_heads % tp || c->seq_length % (2 * cp))
                continue;
            plan_ring *r = &cal->ring[cal->nring++];
            *r = (plan_ring){c->num_attention_heads / tp, c->seq_length, cp, 0, 0};
            measure_ring(c, each, r);
        }
    for (int i = 0; i < cal->ngemm; i++) {
        plan_gemm *g = &cal->gemm[i];
        g->flops_per_s = gemm_rate_measure(g->N, g->C, g->OC, each);
    }
    const size_t n = (size_t)c->micro_batch_size * c->seq_length * 4 * c->hidden_size;
    cal->elementwise_per_s = measure_elementwise(n, each);
    cal->optimizer_per_s = measure_optimizer(n, each);
    measure_chunk(c, false, 2 * each, &cal->block_forward, &cal->block_backward);
    measure_chunk(c, true, 2 * each, &cal->head_forward, &cal->head_backward);
    plan_calibration_default_links(cal);
}

double plan_calibration_gemm_rate(const plan_calibration *cal, size_t N, size_t C, size_t OC) {
    CHECK(cal->ngemm > 0, "plan_calibration_gemm_rate: a calibration with GEMM rates");
    const double want = log((double)N * (double)C * (double)OC);
    double best = INFINITY, rate = cal->gemm[0].flops_per_s;
    for (int i = 0; i < cal->ngemm; i++) {
        const plan_gemm *g = &cal->gemm[i];
        if (g->N == N && g->C == C && g->OC == OC) return g->flops_per_s;
        const double d = fabs(log((double)g->N * (double)g->C * (double)g->OC) - want);
        if (d < best) best = d, rate = g->flops_per_s;
    }
    return rate;
}

bool plan_calibration_cache_path(const train_config *c, char *buf, size_t cap) {
    char rate[4096];
    if (!gemm_rate_cache_path(rate, sizeof rate)) return false;
    char *slash = strrchr(rate, '/');
    if (slash) *slash = 0;
    int m[8];
    plan_calibration_model_of(c, m);
    snprintf(buf, cap, "%s/plan-calibration-%d-%d-%d-%d-%d-%d-%d-%d", rate, m[0], m[1], m[2], m[3],
             m[4], m[5], m[6], m[7]);
    return true;
}

void plan_calibration_write(const plan_calibration *cal, const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) *slash = 0, make_dirs(dir);
    atomic_file af;
    FILE *f = atomic_file_open(&af, path);
    const int *m = cal->model;
    fprintf(f, "trident-plan-calibration %d\nmachine %s\n", cal->version, cal->machine);
    fprintf(f, "model %d %d %d %d %d %d %d %d\nthreads %d\n", m[0], m[1], m[2], m[3], m[4], m[5],
            m[6], m[7], cal->threads);
    for (int i = 0; i < cal->ngemm; i++)
        fprintf(f, "gemm %zu %zu %zu %.6g\n", cal->gemm[i].N, cal->gemm[i].C, cal->gemm[i].OC,
                cal->gemm[i].flops_per_s);
    for (int i = 0; i < cal->nattention; i++)
        fprintf(f, "attention %d %d %.6g %.6g %.6g %.6g\n", cal->attention[i].heads,
                cal->attention[i].T, cal->attention[i].fwd, cal->attention[i].bwd,
                cal->attention[i].ring_fwd, cal->attention[i].ring_bwd);
    for (int i = 0; i < cal->nring; i++)
        fprintf(f, "ring %d %d %d %.6g %.6g\n", cal->ring[i].heads, cal->ring[i].T, cal->ring[i].cp,
                cal->ring[i].fwd, cal->ring[i].bwd);
    fprintf(f, "elementwise %.6g\noptimizer %.6g\n", cal->elementwise_per_s, cal->optimizer_per_s);
    fprintf(f, "block %.6g %.6g\n", cal->block_forward, cal->block_backward);
    fprintf(f, "head %.6g %.6g\n", cal->head_forward, cal->head_backward);
    if (cal->trainer_factor > 0) fprintf(f, "trainer %.6g\n", cal->trainer_factor);
    for (int i = 0; i < cal->nmoe_load; i++)
        fprintf(f, "moe-load %d %.6g\n", cal->moe_load[i].ep, cal->moe_load[i].factor);
    for (int k = 0; k < PLAN_NLINKS; k++)
        fprintf(f, "link %s %.6g %.6g %.6g %s\n", k_link_names[k], cal->link[k].alpha,
                cal->link[k].beta, cal->link[k].sync, cal->link[k].source);
    for (int i = 0; i < cal->nlink_groups; i++)
        for (int k = 0; k < PLAN_NLINKS; k++) {
            const plan_link *l = &cal->link_group[i].link[k];
            if (!plan_link_timed_at((plan_link_kind)k, cal->link_group[i].g)) continue;
            fprintf(f, "link-at %d %s %.6g %.6g %.6g %s\n", cal->link_group[i].g, k_link_names[k],
                    l->alpha, l->beta, l->sync, l->source);
        }
    fprintf(f, "end\n");
    atomic_file_commit(&af);
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, cap, __VA_ARGS__);                                                           \
        free(text);                                                                                \
        return false;                                                                              \
    } while (0)

/* The entry of links measured on g ranks, made when new (NULL when there is no room). */
static plan_link_group *link_group_of(plan_calibration *cal, int g) {
    for (int i = 0; i < cal->nlink_groups; i++)
        if (cal->link_group[i].g == g) return &cal->link_group[i];
    if (cal->nlink_groups >= PLAN_MAX_LINK_GROUPS) return NULL;
    plan_link_group *lg = &cal->link_group[cal->nlink_groups++];
    memset(lg, 0, sizeof *lg);
    lg->g = g;
    for (int k = 0; k < PLAN_NLINKS; k++) lg->link[k].alpha = -1; /* each must be given */
    return lg;
}

/* A "link" line (or "link-at", with its group size first) after its first word, into cal. */
static bool read_link(const char *rest, bool at_g, plan_calibration *cal) {
    char name[32], src[16];
    plan_link l;
    int g = 2, at = 0;
    if (at_g && (sscanf(rest, "%d%n", &g, &at) != 1 || g < 3 || g > PLAN_LINK_MAX_GROUP))
        return false;
    if (sscanf(rest + at, "%31s %lf %lf %lf %15s", name, &l.alpha, &l.beta, &l.sync, src) != 5)
        return false;
    if (!(l.alpha >= 0 && l.beta >= 0 && l.sync >= 0 && isfinite(l.alpha) && isfinite(l.beta) &&
          isfinite(l.sync)))
        return false;
    snprintf(l.source, sizeof l.source, "%s", src);
    for (int i = 0; i < PLAN_NLINKS; i++)
        if (strcmp(name, k_link_names[i]) == 0) {
            if (g == 2) return cal->link[i] = l, true;
            plan_link_group *lg = link_group_of(cal, g);
            return lg && plan_link_timed_at((plan_link_kind)i, g) ? (lg->link[i] = l, true) : false;
        }
    return false;
}

/* One line of the file into cal; false when it is not one of the lines calibration.h lists. */
static bool read_line(const char *line, plan_calibration *cal, bool *end) {
    char word[32];
    int k = 0;
    if (sscanf(line, "%31s%n", word, &k) != 1) return false;
    const char *rest = line + k;
    int *m = cal->model;
    if (strcmp(word, "machine") == 0) {
        while (*rest == ' ') rest++;
        snprintf(cal->machine, sizeof cal->machine, "%s", rest);
        return true;
    }
    if (strcmp(word, "model") == 0)
        return sscanf(rest, "%d %d %d %d %d %d %d %d", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5],
                      &m[6], &m[7]) == 8;
    if (strcmp(word, "threads") == 0) return sscanf(rest, "%d", &cal->threads) == 1;
    if (strcmp(word, "gemm") == 0) {
        if (cal->ngemm >= PLAN_MAX_GEMMS) return false;
        plan_gemm *g = &cal->gemm[cal->ngemm++];
        return sscanf(rest, "%zu %zu %zu %lf", &g->N, &g->C, &g->OC, &g->flops_per_s) == 4 &&
               g->N > 0 && g->C > 0 && g->OC > 0 && isfinite(g->flops_per_s) && g->flops_per_s > 0;
    }
    if (strcmp(word, "attention") == 0) {
        if (cal->nattention >= PLAN_MAX_ATTENTION) return false;
        plan_attention *a = &cal->attention[cal->nattention++];
        return sscanf(rest, "%d %d %lf %lf %lf %lf", &a->heads, &a->T, &a->fwd, &a->bwd,
                      &a->ring_fwd, &a->ring_bwd) == 6 &&
               a->heads > 0 && a->T > 0 && a->fwd > 0 && a->bwd > 0 && a->ring_fwd > 0 &&
               a->ring_bwd > 0 && isfinite(a->fwd) && isfinite(a->bwd) && isfinite(a->ring_fwd) &&
               isfinite(a->ring_bwd);
    }
    if (strcmp(word, "ring") == 0) {
        if (cal->nring >= PLAN_MAX_RINGS) return false;
        plan_ring *r = &cal->ring[cal->nring++];
        return sscanf(rest, "%d %d %d %lf %lf", &r->heads, &r->T, &r->cp, &r->fwd, &r->bwd) == 5 &&
               r->heads > 0 && r->T > 0 && r->cp > 1 && r->fwd > 0 && r->bwd > 0 &&
               isfinite(r->fwd) && isfinite(r->bwd);
    }
    if (strcmp(word, "elementwise") == 0)
        return sscanf(rest, "%lf", &cal->elementwise_per_s) == 1 && cal->elementwise_per_s > 0;
    if (strcmp(word, "optimizer") == 0)
        return sscanf(rest, "%lf", &cal->optimizer_per_s) == 1 && cal->optimizer_per_s > 0;
    if (strcmp(word, "link") == 0 || strcmp(word, "link-at") == 0)
        return read_link(rest, word[4] == '-', cal);
    if (strcmp(word, "block") == 0 || strcmp(word, "head") == 0) {
        const bool block = word[0] == 'b';
        double *f = block ? &cal->block_forward : &cal->head_forward;
        double *b = block ? &cal->block_backward : &cal->head_backward;
        return sscanf(rest, "%lf %lf", f, b) == 2 && *f > 0 && *b > 0 && isfinite(*f) &&
               isfinite(*b);
    }
    if (strcmp(word, "trainer") == 0)
        return sscanf(rest, "%lf", &cal->trainer_factor) == 1 && cal->trainer_factor > 0 &&
               isfinite(cal->trainer_factor);
    if (strcmp(word, "moe-load") == 0) {
        if (cal->nmoe_load >= PLAN_MAX_MOE_LOADS) return false;
        plan_moe_load *ml = &cal->moe_load[cal->nmoe_load++];
        return sscanf(rest, "%d %lf", &ml->ep, &ml->factor) == 2 && ml->ep >= 2 &&
               ml->factor >= 1 && isfinite(ml->factor);
    }
    if (strcmp(word, "end") == 0) return *end = true;
    return false;
}

bool plan_calibration_read(const char *path, const train_config *c, plan_calibration *cal,
                           char *err, size_t cap) {
    size_t n;
    unsigned long long size;
    char *text = (char *)file_read_bounded(path, CAL_MAX_BYTES, &n, &size, err, cap);
    if (!text) return false;
    memset(cal, 0, sizeof *cal);
    cal->link[0].alpha = -1; /* each link must be given */
    for (int k = 0; k < PLAN_NLINKS; k++) cal->link[k].alpha = -1;
    int version = -1, line_no = 1;
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    if (!line || sscanf(line, "trident-plan-calibration %d", &version) != 1)
        FAIL("is not a plan calibration (its first line is not 'trident-plan-calibration "
             "VERSION')");
    if (version != PLAN_CALIBRATION_VERSION)
        FAIL("is calibration format version %d; this trident reads version %d (calibrate again: "
             "trident plan --calibrate)",
             version, PLAN_CALIBRATION_VERSION);
    cal->version = version;
    bool end = false;
    while (!end && (line = strtok_r(NULL, "\n", &save))) {
        line_no++;
        if (!read_line(line, cal, &end))
            FAIL("is corrupt at line %d ('%.60s'): not a line of a plan calibration", line_no,
                 line);
    }
    bool links = true;
    for (int k = 0; k < PLAN_NLINKS; k++) links &= cal->link[k].alpha >= 0;
    for (int i = 0; i < cal->nlink_groups; i++) {
        plan_link_group_untimed_from_pair(cal, &cal->link_group[i]);
        for (int k = 0; k < PLAN_NLINKS; k++) links &= cal->link_group[i].link[k].alpha >= 0;
    }
    if (!end || cal->ngemm == 0 || !links || !(cal->elementwise_per_s > 0) ||
        !(cal->optimizer_per_s > 0) || !(cal->block_forward > 0) || !(cal->head_forward > 0))
        FAIL("is corrupt: it ends before its 'end' line or lacks GEMM rates, the elementwise, "
             "optimizer, block or head time, or a link");
    int want[8];
    plan_calibration_model_of(c, want);
    if (memcmp(want, cal->model, sizeof want) != 0) {
        const int *m = cal->model;
        FAIL(
            "was made for another model (layers %d, hidden %d, heads %d, seq %d, micro-batch %d, "
            "vocab divisible by %d, experts %d, top-%d) than this one (layers %d, hidden %d, heads "
            "%d, seq %d, micro-batch %d, vocab divisible by %d, experts %d, top-%d)",
            m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], want[0], want[1], want[2], want[3],
            want[4], want[5], want[6], want[7]);
    }
    free(text);
    return true;
}
