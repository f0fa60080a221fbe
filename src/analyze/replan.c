/* replan.c — measured costs re-cut to another schedule's stages, both plans simulated (see
 * replan.h). */
#include "src/analyze/replan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/analyze/ideal_rows.h"
#include "src/core/check.h"
#include "src/pp/schedule_sim.h"
#include "src/pp/stage_costs.h"

/* out (T stages) from in (S stages) by the share of layers each target stage holds of each
 * measured one: stage s holds [s/S, (s+1)/S) of the model. */
static void recut(const double *in, int S, double *out, int T) {
    for (int t = 0; t < T; t++) {
        const double a = (double)t / T, b = (double)(t + 1) / T;
        out[t] = 0;
        for (int s = 0; s < S; s++) {
            const double lo = fmax(a, (double)s / S), hi = fmin(b, (double)(s + 1) / S);
            if (hi > lo) out[t] += in[s] * (hi - lo) * S;
        }
    }
}

static bool simulate(const pp_config *cfg, const pp_costs *c, double *makespan, double *bubble,
                     char *err, size_t cap) {
    pp_sim sim;
    char msg[512];
    if (!pp_simulate_config(cfg, c, &sim, msg, sizeof msg)) {
        snprintf(err, cap, "%s does not run: %s", pp_kind_name(cfg->kind), msg);
        return false;
    }
    *makespan = sim.makespan;
    if (bubble) *bubble = sim.bubble_fraction;
    pp_sim_free(&sim);
    return true;
}

/* The target's plan with the run's costs re-cut to its p·v stages. */
static bool simulate_target(const stage_costs *sc, replan_result *out, char *err, size_t cap) {
    const int T = out->target.p * out->target.v;
    double *fw = mallocCheck((size_t)T * sizeof *fw), *bw = mallocCheck((size_t)T * sizeof *bw);
    double *w = mallocCheck((size_t)T * sizeof *w);
    recut(sc->forward, sc->S, fw, T);
    recut(sc->whole, sc->S, bw, T);
    /* W: where the run split it, else what the trace measured inside its whole backwards */
    const bool split = sc->nweight > 0, inside = !split && sc->ninside > 0;
    recut(split ? sc->weight : sc->weight_inside, sc->S, w, T);
    pp_costs c = stage_costs_as_pp_costs(sc);
    c.forward_per_stage = fw;
    c.backward_per_stage = bw;
    c.weight_per_stage = split || inside ? w : NULL;
    out->weight_assumed = pp_splits_backward(out->target.kind) && !split && !inside;
    out->weight_inside = pp_splits_backward(out->target.kind) && inside;
    double wsum = 0, bsum = 0;
    for (int t = 0; t < T; t++) wsum += w[t], bsum += bw[t];
    out->weight_share = bsum > 0 && (split || inside) ? wsum / bsum : 0;
    bool ok = simulate(&out->target, &c, &out->target_makespan, &out->target_bubble, err, cap);
    free(fw);
    free(bw);
    free(w);
    return ok;
}

const char *replan_weight_note(const replan_result *r, char *buf, size_t cap) {
    if (r->weight_inside)
        snprintf(buf, cap, "; W measured inside the run's whole backwards (%.0f%% of them)",
                 100 * r->weight_share);
    else if (r->weight_assumed)
        snprintf(buf, cap, "; W taken as half of each backward (the run did not split it)");
    else snprintf(buf, cap, "%s", "");
    return buf;
}

bool replan_step(const trace_run *run, double measured_step, const char *name, int v,
                 replan_result *out, char *err, size_t cap) {
    memset(out, 0, sizeof *out);
    out->measured_step = measured_step;
    pp_kind kind;
    if (!pp_kind_parse(name, &kind)) {
        snprintf(err, cap,
                 "--what-if-schedule '%s': not a schedule (gpipe, 1f1b, interleaved, zb-h1, zbv, "
                 "dualpipev)",
                 name);
        return false;
    }
    ideal_plan own; /* the run's own schedule with its own costs (ideal_rows.h) */
    if (!ideal_plan_simulate(run, -1, &own, err, cap)) return false;
    out->own = own.sc.cfg;
    out->own_makespan = own.sim.makespan;
    out->target = (pp_config){kind, own.sc.cfg.p, own.sc.cfg.m,
                              v > 0 ? v : pp_default_chunks(kind)};
    char msg[512];
    bool ok = pp_config_valid(&out->target, msg, sizeof msg);
    if (!ok) snprintf(err, cap, "--what-if-schedule %s: %s", name, msg);
    ok = ok && simulate_target(&own.sc, out, err, cap);
    out->predicted_step = measured_step + out->target_makespan - out->own_makespan;
    ideal_plan_free(&own);
    return ok;
}
