/* bench_pipeline.c — the pipeline suite: the bubble of real pipelined training, measured from
 * the traces, against the schedule simulator fed with the measured costs.
 *
 * For gpipe, 1f1b and interleaved (v = 2) at p = 2, 4 and m = 4, 8 this runs
 *     mpirun -np p trident train --pipeline-model-parallel-size p --pipeline-schedule S ...
 * for a few steps with traces on, and reads RUN/trace/rank<k>.trace. For every step after the
 * first (warm-up), on rank 0's clock:
 *
 *     span   = last backward end − first forward start, over all ranks
 *     busy_r = sum of rank r's forward and backward times
 *     bubble = 1 − Σ busy_r / (p · span)          (the idle share of the pipeline's span)
 *
 * The prediction simulates the same schedule (src/pp/schedule_sim.h) with measured costs:
 * an action occupies its rank for its stage's mean forward (backward) time, plus the rank's
 * mean transfer of a received message when it receives one (the part of a receive after the
 * data is there; the wait before is what the simulator itself works out) and its mean send
 * time when it sends one. The predicted bubble counts, like the measured one, only forward
 * and backward compute as busy: 1 − Σ compute / (p · simulated span).
 * A second comparison puts the interleaved bubble beside 1f1b's as a share of the busy time
 * ("of ideal"), which theory says shrinks by 1/v.
 *
 * The stages are the even split (L / (p·v) blocks each): with a 256-token vocabulary the LM
 * head + loss on the last stage costs a fraction of one block here (see the note the suite
 * prints with the measured per-stage times), so no stage needs fewer layers.
 *
 * bench_memory.c reads the same runs (peak activation memory per stage).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/bench/bench.h"
#include "src/core/atomic_file.h"
#include "src/core/check.h"
#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"
#include "src/trace/trace.h"

/* The model every pipeline run trains (small: the point is the schedule, not the model). */
static bench_pp_model model_of(const bench_ctx *ctx) {
    if (ctx->quick) return (bench_pp_model){8, 64, 4, 32, 1, 2};
    return (bench_pp_model){8, 256, 4, 128, 2, 4};
}

bench_pp_model bench_pp_model_of(const bench_ctx *ctx) { return model_of(ctx); }

/* Runs already made by this process (so memory reuses the pipeline suite's runs). */
static char g_done[64][4200];
static int g_ndone;

const char *bench_pp_run(bench_ctx *ctx, const char *schedule, int p, int m, char *dir, size_t cap) {
    const bench_pp_model md = model_of(ctx);
    snprintf(dir, cap, "%s/pipeline/%s_p%d_m%d", ctx->run_dir, schedule, p, m);
    for (int i = 0; i < g_ndone; i++)
        if (strcmp(g_done[i], dir) == 0) return dir;
    char interleave[96] = "";
    if (strcmp(schedule, "interleaved") == 0)
        snprintf(interleave, sizeof interleave, " --num-layers-per-virtual-pipeline-stage %d",
                 md.L / (2 * p));
    char log[4300];
    snprintf(log, sizeof log, "%s.log", dir);
    char parent[4200];
    snprintf(parent, sizeof parent, "%s/pipeline", ctx->run_dir);
    make_dirs(parent);
    bench_launch(ctx, p, log,
                 "train --pipeline-model-parallel-size %d --pipeline-schedule %s%s --num-layers %d "
                 "--hidden-size %d --num-attention-heads %d --seq-length %d --micro-batch-size %d "
                 "--global-batch-size %d --train-iters %d --log-interval 1 --quiet --run-dir %s",
                 p, schedule, interleave, md.L, md.C, md.NH, md.T, md.B, md.B * m, md.steps, dir);
    if (g_ndone < 64) snprintf(g_done[g_ndone++], sizeof g_done[0], "%s", dir);
    return dir;
}

/* ---- what the traces say ----------------------------------------------------------------- */

typedef struct {
    int p, v, S;
    double bubble, bubble_of_ideal; /* measured, mean over steps */
    double *fwd, *bwd;              /* (S) mean per virtual stage, seconds */
    double p2p;                     /* mean send + receive transfer per message, seconds */
    double *send, *recv;            /* (p) per rank: mean send time, mean receive transfer */
    int steps;
} pp_measure;

static void measure_free(pp_measure *m) {
    free(m->fwd);
    free(m->bwd);
    free(m->send);
    free(m->recv);
}

static pp_measure measure(const char *dir) {
    char err[512];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) die("bench pipeline: %s", err);
    const trace_header *h0 = trace_file_header(run->ranks[0]);
    pp_measure m = {.p = h0->pp, .v = h0->vpp, .S = h0->pp * h0->vpp};
    m.fwd = callocCheck((size_t)m.S, sizeof(double));
    m.bwd = callocCheck((size_t)m.S, sizeof(double));
    int *nf = callocCheck((size_t)m.S, sizeof(int)), *nb = callocCheck((size_t)m.S, sizeof(int));
    int last = 0;
    for (int k = 0; k < run->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(run->ranks[k]); i++) {
            const trace_event *e = trace_file_event(run->ranks[k], i);
            if (e->kind == TRACE_STEP && e->step > last) last = e->step;
        }
    double p2p_sum = 0;
    int p2p_n = 0;
    m.send = callocCheck((size_t)m.p, sizeof(double));
    m.recv = callocCheck((size_t)m.p, sizeof(double));
    for (int step = 2; step <= last; step++) {
        double t0 = INFINITY, t1 = -INFINITY, busy = 0;
        for (int k = 0; k < run->nranks; k++) {
            const trace_header *h = trace_file_header(run->ranks[k]);
            for (size_t i = 0; i < trace_file_num_events(run->ranks[k]); i++) {
                const trace_event *e = trace_file_event(run->ranks[k], i);
                if (e->step != step) continue;
                double a = e->t_start + h->clock_offset, b = e->t_end + h->clock_offset;
                if (e->kind == TRACE_FORWARD || e->kind == TRACE_BACKWARD) {
                    t0 = a < t0 ? a : t0;
                    t1 = b > t1 ? b : t1;
                    busy += b - a;
                    int s = e->chunk * m.p + h->pp_rank;
                    CHECK(s >= 0 && s < m.S, "a traced action names a virtual stage of the layout");
                    if (e->kind == TRACE_FORWARD) m.fwd[s] += b - a, nf[s]++;
                    else m.bwd[s] += b - a, nb[s]++;
                }
            }
        }
        if (!(t1 > t0)) continue;
        m.bubble += 1.0 - busy / (m.p * (t1 - t0));
        m.bubble_of_ideal += (m.p * (t1 - t0) - busy) / busy;
        m.steps++;
    }
    /* p2p: sends and receive transfers carry no step number; they are the same in every step. */
    for (int k = 0; k < run->nranks; k++) {
        const int r = trace_file_header(run->ranks[k])->pp_rank;
        int ns = 0, nr = 0;
        for (size_t i = 0; i < trace_file_num_events(run->ranks[k]); i++) {
            const trace_event *e = trace_file_event(run->ranks[k], i);
            if (e->kind == TRACE_SEND) p2p_sum += e->t_end - e->t_start, m.send[r] += e->t_end - e->t_start, ns++;
            if (e->kind == TRACE_RECV) p2p_sum += e->t_end - e->t_ready, m.recv[r] += e->t_end - e->t_ready, nr++, p2p_n++;
        }
        m.send[r] /= ns ? ns : 1;
        m.recv[r] /= nr ? nr : 1;
    }
    if (m.steps == 0) die("bench pipeline: the run in %s has no complete step after the first", dir);
    m.bubble /= m.steps;
    m.bubble_of_ideal /= m.steps;
    for (int s = 0; s < m.S; s++) {
        m.fwd[s] /= nf[s] ? nf[s] : 1;
        m.bwd[s] /= nb[s] ? nb[s] : 1;
    }
    m.p2p = p2p_n ? p2p_sum / p2p_n : 0.0;
    free(nf);
    free(nb);
    trace_run_free(run);
    return m;
}

typedef struct {
    double bubble, bubble_of_ideal;
} pp_prediction;

static pp_prediction predict(pp_kind kind, int m, const pp_measure *ms) {
    pp_config cfg = {kind, ms->p, m, ms->v};
    pp_schedule s;
    pp_schedule_build(&cfg, &s);
    /* Costs with the rank's share of each message (see the top of the file). */
    const int S = ms->S;
    double *cf = callocCheck((size_t)S, sizeof(double)), *cb = callocCheck((size_t)S, sizeof(double));
    double compute = 0;
    for (int st = 0; st < S; st++) {
        const int r = st % ms->p;
        cf[st] = ms->fwd[st] + (st > 0 ? ms->recv[r] : 0) + (st < S - 1 ? ms->send[r] : 0);
        cb[st] = ms->bwd[st] + (st < S - 1 ? ms->recv[r] : 0) + (st > 0 ? ms->send[r] : 0);
        compute += m * (ms->fwd[st] + ms->bwd[st]);
    }
    pp_costs c = {1, 1, 0.0, cf, cb};
    pp_sim sim;
    char msg[256];
    if (!pp_simulate(&s, &c, &sim, msg, sizeof msg)) die("bench pipeline: the simulator says %s", msg);
    const double span = sim.p * sim.makespan;
    pp_prediction pr = {1.0 - compute / span, (span - compute) / compute};
    pp_sim_free(&sim);
    pp_schedule_free(&s);
    free(cf);
    free(cb);
    return pr;
}

void bench_pipeline(bench_ctx *ctx) {
    static const char *const kinds[] = {"gpipe", "1f1b", "interleaved"};
    const int ps[] = {2, 4}, ms[] = {4, 8};
    const bench_pp_model md = model_of(ctx);
    bench_note(ctx->report, "pipeline",
               "model: %d layers, hidden %d, %d heads, seq %d, micro-batch %d; %d steps per run, the first "
               "not counted; even split of layers; interleaved has v = 2 chunks per rank",
               md.L, md.C, md.NH, md.T, md.B, md.steps);
    for (int pi = 0; pi < 2; pi++)
        for (int mi = 0; mi < 2; mi++) {
            const int p = ps[pi], m = ms[mi];
            double of_ideal[3], pred_of_ideal[3];
            for (int k = 0; k < 3; k++) {
                char dir[4200];
                bench_pp_run(ctx, kinds[k], p, m, dir, sizeof dir);
                pp_measure me = measure(dir);
                pp_kind kind;
                CHECK(pp_kind_parse(kinds[k], &kind), "schedule names are the parser's");
                pp_prediction pr = predict(kind, m, &me);
                char metric[160];
                snprintf(metric, sizeof metric, "%s p=%d m=%d: bubble measured %.1f%% − predicted %.1f%%",
                         kinds[k], p, m, 100 * me.bubble, 100 * pr.bubble);
                bench_row_within(ctx->report, "pipeline", metric, 100 * (me.bubble - pr.bubble), "%+.1f pp",
                                 0.0, 3.0, "±3 pp");
                char stages[512] = "";
                for (int s = 0; s < me.S; s++) {
                    size_t n = strlen(stages);
                    snprintf(stages + n, sizeof stages - n, "%s%.1f/%.1f", s ? ", " : "", 1e3 * me.fwd[s],
                             1e3 * me.bwd[s]);
                }
                bench_note(ctx->report, "pipeline",
                           "%s p=%d m=%d: bubble %.1f%% measured, %.1f%% predicted, textbook %.1f%%; "
                           "forward/backward ms per virtual stage: %s; p2p %.2f ms per message",
                           kinds[k], p, m, 100 * me.bubble, 100 * pr.bubble,
                           100 * pp_bubble_of_total(p, m, me.v), stages, 1e3 * me.p2p);
                of_ideal[k] = me.bubble_of_ideal;
                pred_of_ideal[k] = pr.bubble_of_ideal;
                measure_free(&me);
            }
            char metric[160];
            snprintf(metric, sizeof metric,
                     "p=%d m=%d: interleaved ÷ 1f1b bubble (of busy time), vs 1/v (simulator: %.2f)", p, m,
                     pred_of_ideal[2] / pred_of_ideal[1]);
            bench_row_within(ctx->report, "pipeline", metric, of_ideal[2] / of_ideal[1], "%.2f", 0.5, 0.1,
                             "0.50 ± 0.10");
        }
}
