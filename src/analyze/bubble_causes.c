/* bubble_causes.c — the four causes of each rank's bubble (see bubble_causes.h). */
#include "src/analyze/bubble_causes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"
#include "src/pp/stage_costs.h"

double bubble_of_row(const viz_timeline *tl, const viz_tl_bubble *bb, int rank) {
    const double span = bb->span_end - bb->span_start;
    if (!(span > 0)) return 0;
    viz_tc_shares sh = viz_timeline_class_shares(tl, rank, bb->span_start, bb->span_end);
    return (sh.seconds[VIZ_TC_WAIT] + sh.seconds[VIZ_TC_IDLE]) / span;
}

/* Simulates the run's schedule with costs c; the idle share of every pipeline rank into
 * idle (p) and the makespan. */
static bool simulate(const pp_config *cfg, const pp_costs *c, double *idle, double *makespan,
                     char *err, size_t cap) {
    pp_sim sim;
    char msg[512];
    if (!pp_simulate_config(cfg, c, &sim, msg, sizeof msg)) {
        snprintf(err, cap, "the ideal schedule does not run: %s", msg);
        return false;
    }
    for (int r = 0; r < cfg->p; r++) idle[r] = sim.ranks[r].idle_fraction;
    *makespan = sim.makespan;
    pp_sim_free(&sim);
    return true;
}

/* The schedule's idle shares with the mean costs (mean) and each stage's own (own). */
static bool ideal_idle(const trace_run *cost_run, int step, bubble_causes *out, double *mean,
                       double *own, pp_config *cfg, char *err, size_t cap) {
    stage_costs sc;
    if (!stage_costs_measure_step(cost_run, step, &sc, err, cap)) return false;
    *cfg = sc.cfg;
    pp_costs c = pp_costs_unit();
    c.forward = sc.forward_mean;
    c.backward = sc.whole_mean;
    c.weight_share = sc.nweight && sc.whole_mean > 0 ? sc.weight_mean / sc.whole_mean : 0;
    bool ok = simulate(&sc.cfg, &c, mean, &out->sim_mean_makespan, err, cap);
    pp_costs own_c = stage_costs_as_pp_costs(&sc);
    own_c.p2p_latency = 0; /* messages are the communication cause */
    ok = ok && simulate(&sc.cfg, &own_c, own, &out->sim_stage_makespan, err, cap);
    out->forward_mean = sc.forward_mean;
    out->backward_mean = sc.whole_mean;
    out->weight_mean = sc.weight_mean;
    stage_costs_free(&sc);
    return ok;
}

bool bubble_causes_measure(const viz_timeline *view, const viz_timeline *replay,
                           const trace_run *cost_run, bubble_causes *out, char *err, size_t cap) {
    memset(out, 0, sizeof *out);
    CHECK(replay != NULL && replay->nrows == view->nrows, "the replay has the view's ranks");
    const int p = view->pp > 0 ? view->pp : 1;
    double *mean = callocCheck((size_t)p, sizeof *mean), *own = callocCheck((size_t)p, sizeof *own);
    pp_config cfg;
    bool ok = ideal_idle(cost_run, view->step, out, mean, own, &cfg, err, cap);
    if (ok && cfg.p != p) {
        snprintf(err, cap, "the costs' run has p = %d pipeline ranks, the step p = %d", cfg.p, p);
        ok = false;
    }
    if (ok) {
        const viz_tl_bubble bb = viz_timeline_bubble(view), rb = viz_timeline_bubble(replay);
        out->replay_view = view == replay;
        out->span = bb.span_end - bb.span_start;
        out->nranks = view->nrows;
        out->rank = callocCheck((size_t)view->nrows, sizeof *out->rank);
        for (int r = 0; r < view->nrows; r++) {
            const int pr = view->rows[r].pp_rank;
            bc_shares *s = &out->rank[r];
            const double rep = bubble_of_row(replay, &rb, r);
            s->measured = bubble_of_row(view, &bb, r);
            s->schedule = mean[pr];
            s->imbalance = own[pr] - mean[pr];
            s->communication = rep - own[pr];
            s->sharing = out->replay_view ? 0 : s->measured - rep;
            out->mean.measured += s->measured / view->nrows;
            out->mean.schedule += s->schedule / view->nrows;
            out->mean.imbalance += s->imbalance / view->nrows;
            out->mean.communication += s->communication / view->nrows;
            out->mean.sharing += s->sharing / view->nrows;
        }
    }
    free(mean);
    free(own);
    return ok;
}

void bubble_causes_free(bubble_causes *bc) {
    free(bc->rank);
    memset(bc, 0, sizeof *bc);
}
