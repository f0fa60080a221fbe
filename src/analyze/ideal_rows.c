/* ideal_rows.c — the run's schedule played with its own costs, as rows (see ideal_rows.h). */
#include "src/analyze/ideal_rows.h"

#include <stdio.h>
#include <string.h>

bool ideal_plan_simulate(const trace_run *run, int step, ideal_plan *out, char *err, size_t cap) {
    memset(out, 0, sizeof *out);
    if (!stage_costs_measure_step(run, step, &out->sc, err, cap)) return false;
    out->costs = stage_costs_as_pp_costs(&out->sc);
    char msg[512];
    bool ok = pp_config_valid(&out->sc.cfg, msg, sizeof msg);
    if (ok) {
        pp_schedule_build(&out->sc.cfg, &out->sched);
        ok = pp_validate(&out->sched, msg, sizeof msg) &&
             pp_simulate(&out->sched, &out->costs, &out->sim, msg, sizeof msg);
    }
    if (!ok) {
        snprintf(err, cap, "the run's schedule (%s, p = %d, m = %d, v = %d) does not run: %s",
                 pp_kind_name(out->sc.cfg.kind), out->sc.cfg.p, out->sc.cfg.m, out->sc.cfg.v, msg);
        ideal_plan_free(out);
    }
    return ok;
}

void ideal_plan_free(ideal_plan *plan) {
    if (plan->sim.ranks) pp_sim_free(&plan->sim);
    if (plan->sched.ranks) pp_schedule_free(&plan->sched);
    stage_costs_free(&plan->sc);
    memset(plan, 0, sizeof *plan);
}

/* The timeline kind an action is drawn as: B of a split backward is drawn as the backward. */
static viz_tl_kind kind_of(pp_op op) {
    switch (op) {
    case PP_FORWARD: return VIZ_TL_FORWARD;
    case PP_WEIGHT: return VIZ_TL_WEIGHT;
    default: return VIZ_TL_BACKWARD;
    }
}

viz_timeline *ideal_rows_build(const ideal_plan *plan, const viz_timeline *measured, char *err,
                               size_t cap) {
    const pp_config *cfg = &plan->sc.cfg;
    if (cfg->p != measured->pp) {
        snprintf(err, cap, "the plan has p = %d pipeline ranks, the step p = %d", cfg->p,
                 measured->pp);
        return NULL;
    }
    if (measured->tp * measured->pp * measured->dp != measured->nrows) {
        snprintf(err, cap, "the step's %d rows are not tp %d x pp %d x dp %d", measured->nrows,
                 measured->tp, measured->pp, measured->dp);
        return NULL;
    }
    viz_timeline *tl = viz_timeline_new("ideal", pp_kind_name(cfg->kind), measured->tp,
                                        measured->pp, measured->dp, cfg->v, cfg->m);
    tl->step = measured->step;
    tl->cp = measured->cp;
    for (int k = 0; k < measured->nrows && k < tl->nrows; k++) {
        const viz_tl_row *mr = &measured->rows[k];
        viz_timeline_set_coords(tl, k, mr->tp_rank, mr->pp_rank, mr->dp_rank);
        if (mr->pp_rank < 0 || mr->pp_rank >= cfg->p) continue;
        const pp_rank_plan *rp = &plan->sched.ranks[mr->pp_rank];
        const pp_rank_timeline *rt = &plan->sim.ranks[mr->pp_rank];
        for (int i = 0; i < rp->n; i++) {
            const pp_action *a = &rp->actions[i];
            viz_timeline_add_box(tl, k,
                                 (viz_tl_box){.kind = kind_of(a->op),
                                              .microbatch = a->mb,
                                              .chunk = a->chunk,
                                              .start = rt->spans[i].start,
                                              .ready = rt->spans[i].start,
                                              .end = rt->spans[i].end,
                                              .peer = -1,
                                              .flow = -1,
                                              .event = -1});
        }
    }
    viz_timeline_finish(tl);
    return tl;
}
