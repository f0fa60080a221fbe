/* pipeline_fixture.c — see pipeline_fixture.h. */
#include "tests/viz/pipeline_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/trace/trace.h"

fixture_run fixture_defaults(const char *schedule, int pp, int m, int vpp) {
    fixture_run f = {.schedule = schedule,
                     .tp = 1,
                     .pp = pp,
                     .dp = 1,
                     .vpp = vpp,
                     .m = m,
                     .steps = 2,
                     .t_fwd = 1e-3,
                     .t_bwd = 2e-3,
                     .t_xfer = 1e-4,
                     .t_opt = 5e-4,
                     .with_memory = 1};
    return f;
}

typedef struct {
    int fwd, mb, chunk;
} op;

/* The order in which stage s runs its forwards and backwards. */
static int stage_ops(const fixture_run *c, int s, op *out) {
    int p = c->pp, m = c->m, v = c->vpp, n = 0;
    if (strcmp(c->schedule, "gpipe") == 0) {
        for (int i = 0; i < m; i++) out[n++] = (op){1, i, 0};
        for (int i = 0; i < m; i++) out[n++] = (op){0, i, 0};
    } else if (strcmp(c->schedule, "1f1b") == 0) {
        int w = p - s - 1 < m ? p - s - 1 : m, f = 0, b = 0;
        for (; f < w; f++) out[n++] = (op){1, f, 0};
        while (f < m) out[n++] = (op){1, f++, 0}, out[n++] = (op){0, b++, 0};
        while (b < m) out[n++] = (op){0, b++, 0};
    } else { /* interleaved (Megatron's order): k-th forward -> (mb, chunk) */
        int total = m * v;
        int w = (p - s - 1) * 2 + (v - 1) * p;
        if (w > total) w = total;
        int f = 0, b = 0;
#define FOP(k) ((op){1, ((k) / (p * v)) * p + (k) % p, ((k) / p) % v})
#define BOP(k) ((op){0, ((k) / (p * v)) * p + (k) % p, v - 1 - ((k) / p) % v})
        for (; f < w; f++) out[n++] = FOP(f);
        while (f < total) out[n++] = FOP(f), f++, out[n++] = BOP(b), b++;
        while (b < total) out[n++] = BOP(b), b++;
#undef FOP
#undef BOP
    }
    return n;
}

void fixture_write_run(const char *dir, const fixture_run *c) {
    int p = c->pp, v = c->vpp, m = c->m, world = c->tp * p * c->dp;
    int nops = 2 * m * v;
    op **ops = mallocCheck((size_t)p * sizeof *ops);
    int *nop = mallocCheck((size_t)p * sizeof *nop);
    for (int s = 0; s < p; s++) {
        ops[s] = mallocCheck((size_t)nops * sizeof **ops);
        nop[s] = stage_ops(c, s, ops[s]);
        CHECK(nop[s] == nops, "fixture schedule lost an op");
    }
    /* end time of F/B of (mb, virtual stage); -1 = not yet */
    int nvs = p * v;
    double *fend = mallocCheck((size_t)m * nvs * sizeof *fend);
    double *bend = mallocCheck((size_t)m * nvs * sizeof *bend);

    trace_recorder **rec = mallocCheck((size_t)world * sizeof *rec);
    for (int r = 0; r < world; r++) {
        trace_header h = {0};
        h.rank = r, h.world_size = world, h.tp = c->tp, h.pp = p, h.dp = c->dp, h.vpp = v;
        h.tp_rank = r % c->tp, h.dp_rank = (r / c->tp) % c->dp, h.pp_rank = r / (c->tp * c->dp);
        h.num_microbatches = m;
        snprintf(h.schedule, sizeof h.schedule, "%s", c->schedule);
        h.clock_offset = 0.25 + 0.001 * r; /* local = global - offset */
        char cfg[256];
        snprintf(cfg, sizeof cfg, "{\"schedule\":\"%s\",\"pp\":%d,\"m\":%d,\"vpp\":%d}",
                 c->schedule, p, m, v);
        h.config_json = cfg;
        rec[r] = trace_create(&h, 1 << 14);
    }

    double t = 0.010; /* global time of the first step */
    int nsteps = c->steps + (c->open_last_step ? 1 : 0);
    for (int step = 0; step < nsteps; step++) {
        bool open = step == c->steps;
        double step_start = t;
        for (int i = 0; i < m * nvs; i++) fend[i] = bend[i] = -1;
        double *free_at = mallocCheck((size_t)p * sizeof *free_at);
        int *next = callocCheck((size_t)p, sizeof *next);
        int *inflight = callocCheck((size_t)p, sizeof *inflight);
        for (int s = 0; s < p; s++) free_at[s] = step_start + 2e-4; /* after loading data */
        int done = 0, guard = 0;
        while (done < p * nops) {
            CHECK(++guard < 1000000, "fixture schedule deadlocked");
            for (int s = 0; s < p; s++) {
                if (next[s] == nops) continue;
                op o = ops[s][next[s]];
                int vs = o.chunk * p + s;
                double dep;
                int src = -1;
                if (o.fwd) {
                    if (vs == 0) dep = free_at[s];
                    else {
                        dep = fend[o.mb * nvs + vs - 1];
                        src = (vs - 1) % p;
                    }
                } else if (vs == nvs - 1) {
                    dep = fend[o.mb * nvs + vs];
                } else {
                    dep = bend[o.mb * nvs + vs + 1];
                    src = (vs + 1) % p;
                }
                if (dep < 0) continue;
                double start = free_at[s];
                if (src >= 0 && src != s) { /* a receive, and its send on the other stage */
                    double ready = dep > start ? dep : start, end = ready + c->t_xfer;
                    for (int tp = 0; tp < c->tp; tp++)
                        for (int dp = 0; dp < c->dp; dp++) {
                            int me = tp + c->tp * (dp + c->dp * s),
                                peer = tp + c->tp * (dp + c->dp * src);
                            double offm = 0.25 + 0.001 * me, offp = 0.25 + 0.001 * peer;
                            trace_comm(rec[peer], TRACE_SEND, "send", "pp", me, 4096, o.fwd ? 0 : 1,
                                       dep - offp, ready - offp, end - offp);
                            trace_comm(rec[me], TRACE_RECV, "recv", "pp", peer, 4096, o.fwd ? 0 : 1,
                                       start - offm, ready - offm, end - offm);
                        }
                    start = end;
                } else if (dep > start) {
                    start = dep;
                }
                double dur = (o.fwd ? c->t_fwd : c->t_bwd) / v;
                double end = start + dur;
                (o.fwd ? fend : bend)[o.mb * nvs + vs] = end;
                inflight[s] += o.fwd ? 1 : -1;
                for (int tp = 0; tp < c->tp; tp++)
                    for (int dp = 0; dp < c->dp; dp++) {
                        int me = tp + c->tp * (dp + c->dp * s);
                        double off = 0.25 + 0.001 * me;
                        trace_record(rec[me], o.fwd ? TRACE_FORWARD : TRACE_BACKWARD, step, o.mb,
                                     o.chunk, start - off, end - off);
                        if (c->with_memory)
                            trace_memory_at(rec[me],
                                            (size_t)(1 << 20) + (size_t)inflight[s] * (256u << 10),
                                            end - off);
                    }
                free_at[s] = end;
                next[s]++;
                done++;
            }
        }
        double last = 0;
        for (int s = 0; s < p; s++)
            if (free_at[s] > last) last = free_at[s];
        for (int r = 0; r < world; r++) {
            double off = 0.25 + 0.001 * r;
            int s = r / (c->tp * c->dp);
            trace_record(rec[r], TRACE_DATA, step, -1, -1, step_start - off,
                         step_start + 2e-4 - off);
            double ar0 = free_at[s],
                   ar1 = last + 3e-4; /* DP gradient all-reduce waits for the slowest */
            trace_comm(rec[r], TRACE_COLLECTIVE, "all-reduce", "dp", -1, 1 << 20, -1, ar0 - off,
                       last - off, ar1 - off);
            if (!open) {
                trace_record(rec[r], TRACE_OPTIMIZER, step, -1, -1, ar1 - off,
                             ar1 + c->t_opt - off);
                trace_record(rec[r], TRACE_STEP, step, -1, -1, step_start - off,
                             ar1 + c->t_opt - off);
            } else {
                trace_begin(rec[r], TRACE_STEP, step, -1, -1); /* never ended */
            }
        }
        t = last + 3e-4 + c->t_opt + 5e-4;
        if (c->eval_last_step && step == c->steps - 1) { /* after the step, as the trainer does */
            for (int r = 0; r < world; r++)
                for (int k = 0; k < 4; k++)
                    trace_record(rec[r], TRACE_EVAL, step, k, 0, t + 1e-3 * k - 0.25 - 0.001 * r,
                                 t + 1e-3 * (k + 1) - 0.25 - 0.001 * r);
            t += 4e-3 + 5e-4;
        }
        free(free_at);
        free(next);
        free(inflight);
    }

    char path[4096];
    for (int r = 0; r < world; r++) {
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, r);
        trace_write(rec[r], path);
        trace_destroy(rec[r]);
    }
    for (int s = 0; s < p; s++) free(ops[s]);
    free(ops);
    free(nop);
    free(fend);
    free(bend);
    free(rec);
}
