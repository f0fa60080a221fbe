/* stage_costs.c — see stage_costs.h. */
#include "src/pp/stage_costs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"

/* The steps the measurement counts: from the second one on when there are several. */
static int first_counted_step(const trace_run *run) {
    int first = -1, last = -1;
    for (int k = 0; k < run->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(run->ranks[k]); i++) {
            const trace_event *e = trace_file_event(run->ranks[k], i);
            if (e->kind != TRACE_FORWARD && e->kind != TRACE_BACKWARD) continue;
            if (first < 0 || e->step < first) first = e->step;
            if (e->step > last) last = e->step;
        }
    return last < 0 ? -1 : last > first ? first + 1 : first;
}

bool stage_costs_cpu_timed(const trace_run *recorded) {
    for (int k = 0; k < recorded->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(recorded->ranks[k]); i++) {
            const trace_event *e = trace_file_event(recorded->ranks[k], i);
            if ((e->kind == TRACE_FORWARD || e->kind == TRACE_BACKWARD) && e->cpu < 0) return false;
        }
    return true;
}

/* Adds one rank's events to the sums (per stage in out's arrays, counts in n*). */
static void add_rank(const trace_run *run, int k, stage_costs *out, int *nf, int *nb, int *nw,
                     int *ni) {
    const trace_header *h = trace_file_header(run->ranks[k]);
    for (size_t i = 0; i < trace_file_num_events(run->ranks[k]); i++) {
        const trace_event *e = trace_file_event(run->ranks[k], i);
        const double d = e->t_end - e->t_start;
        if (e->kind == TRACE_RECV && run->flow[k][i] >= 0) {
            out->latency += e->t_end - e->t_ready;
            out->ntransfer++;
        }
        if (e->step < out->from_step || (out->to_step >= 0 && e->step > out->to_step) ||
            e->chunk < 0 || e->chunk >= out->cfg.v)
            continue;
        const int s = pp_stage(&out->cfg, h->pp_rank, e->chunk);
        if (e->kind == TRACE_FORWARD) out->forward[s] += d, nf[s]++;
        else if (e->kind == TRACE_BACKWARD) out->whole[s] += d, nb[s]++;
        else if (e->kind == TRACE_WEIGHT) out->weight[s] += d, nw[s]++;
        const double share = trace_event_weight_share(e); /* W's inside a whole backward */
        if (share > 0) out->weight_inside[s] += d * share, ni[s]++;
    }
}

bool stage_costs_measure(const trace_run *run, stage_costs *out, char *err, size_t cap) {
    return stage_costs_measure_step(run, -1, out, err, cap);
}

bool stage_costs_measure_step(const trace_run *run, int step, stage_costs *out, char *err,
                              size_t cap) {
    memset(out, 0, sizeof *out);
    const trace_header *h0 = trace_file_header(run->ranks[0]);
    out->cfg = (pp_config){PP_1F1B, h0->pp, h0->num_microbatches, h0->vpp > 0 ? h0->vpp : 1};
    if (!pp_kind_parse(h0->schedule, &out->cfg.kind)) {
        snprintf(err, cap, "the run's schedule '%.15s' is not one Trident knows", h0->schedule);
        return false;
    }
    const int first = first_counted_step(run);
    out->from_step = step >= 0 ? step : first;
    out->to_step = step >= 0 ? step : -1;
    if (first < 0) {
        snprintf(err, cap, "the run's traces hold no forward or backward");
        return false;
    }
    const int S = out->S = out->cfg.p * out->cfg.v;
    out->forward = callocCheck((size_t)S, sizeof(double));
    out->whole = callocCheck((size_t)S, sizeof(double));
    out->weight = callocCheck((size_t)S, sizeof(double));
    out->weight_inside = callocCheck((size_t)S, sizeof(double));
    int *nf = callocCheck((size_t)(4 * S), sizeof(int)), *nb = nf + S, *nw = nf + 2 * S,
        *ni = nf + 3 * S;
    for (int k = 0; k < run->nranks; k++) add_rank(run, k, out, nf, nb, nw, ni);
    double fsum = 0, bsum = 0, wsum = 0;
    for (int s = 0; s < S; s++) {
        fsum += out->forward[s], bsum += out->whole[s], wsum += out->weight[s];
        out->nforward += nf[s], out->nbackward += nb[s], out->nweight += nw[s];
        out->forward[s] = nf[s] ? out->forward[s] / nf[s] : 0;
        out->weight[s] = nw[s] ? out->weight[s] / nw[s] : 0;
        out->weight_inside[s] = ni[s] ? out->weight_inside[s] / ni[s] : 0;
        out->ninside += ni[s];
        out->whole[s] = (nb[s] ? out->whole[s] / nb[s] : 0) + out->weight[s]; /* B + W */
    }
    free(nf);
    if (out->nforward == 0 || out->nbackward == 0) {
        snprintf(err, cap,
                 "the run has %d forwards and %d backwards from step %d on; both are "
                 "needed",
                 out->nforward, out->nbackward, out->from_step);
        stage_costs_free(out);
        return false;
    }
    out->forward_mean = fsum / out->nforward;
    out->weight_mean = out->nweight ? wsum / out->nweight : 0;
    out->whole_mean = bsum / out->nbackward + out->weight_mean;
    if (out->ntransfer) out->latency /= out->ntransfer;
    return true;
}

pp_costs stage_costs_as_pp_costs(const stage_costs *sc) {
    pp_costs c = pp_costs_unit();
    c.forward = sc->forward_mean;
    c.backward = sc->whole_mean;
    c.p2p_latency = sc->latency;
    c.forward_per_stage = sc->forward;
    c.backward_per_stage = sc->whole;
    if (sc->nweight) c.weight_per_stage = sc->weight;
    return c;
}

void stage_costs_free(stage_costs *sc) {
    free(sc->forward);
    free(sc->whole);
    free(sc->weight);
    free(sc->weight_inside);
    sc->forward = sc->whole = sc->weight = sc->weight_inside = NULL;
}
