/* timeline_load.c — trace files -> timeline model (see timeline_load.h). */
#include "viz/timeline_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"

int viz_run_has_steps(const trace_run *r) {
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++)
            if (trace_file_event(r->ranks[k], i)->kind == TRACE_STEP) return 1;
    return 0;
}

/* Rank k's closed TRACE_STEP event for `step`, or NULL. */
static const trace_event *find_step(const trace_file *f, int step) {
    for (size_t i = 0; i < trace_file_num_events(f); i++) {
        const trace_event *e = trace_file_event(f, i);
        if (e->kind == TRACE_STEP && e->step == step && !(e->flags & TRACE_OPEN)) return e;
    }
    return NULL;
}

static int int_cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int viz_run_complete_steps(const trace_run *r, int *out, int cap) {
    /* Candidates: rank 0's closed steps; complete if every other rank closed it too. */
    const trace_file *f0 = r->ranks[0];
    size_t n0 = trace_file_num_events(f0);
    int *cand = mallocCheck((n0 + 1) * sizeof *cand);
    int nc = 0;
    for (size_t i = 0; i < n0; i++) {
        const trace_event *e = trace_file_event(f0, i);
        if (e->kind == TRACE_STEP && !(e->flags & TRACE_OPEN)) cand[nc++] = e->step;
    }
    qsort(cand, (size_t)nc, sizeof *cand, int_cmp);
    int count = 0;
    for (int c = 0; c < nc; c++) {
        if (c > 0 && cand[c] == cand[c - 1]) continue;
        bool all = true;
        for (int k = 1; k < r->nranks && all; k++) all = find_step(r->ranks[k], cand[c]) != NULL;
        if (!all) continue;
        if (out && count < cap) out[count] = cand[c];
        count++;
    }
    free(cand);
    return count;
}

static viz_tl_kind tl_kind(trace_kind k) {
    switch (k) {
    case TRACE_FORWARD: return VIZ_TL_FORWARD;
    case TRACE_BACKWARD: return VIZ_TL_BACKWARD;
    case TRACE_SEND: return VIZ_TL_SEND;
    case TRACE_RECV: return VIZ_TL_RECV;
    case TRACE_COLLECTIVE: return VIZ_TL_COLLECTIVE;
    case TRACE_OPTIMIZER: return VIZ_TL_OPTIMIZER;
    case TRACE_DATA: return VIZ_TL_DATA;
    case TRACE_EVAL: return VIZ_TL_EVAL;
    case TRACE_WEIGHT: return VIZ_TL_WEIGHT;
    default: return VIZ_TL_NUM_KINDS; /* steps and memory are not boxes */
    }
}

/* Does event e of a rank belong to the step shown? Events that carry a step belong to it;
 * events without one (messages, memory samples: step -1) belong to the step whose
 * TRACE_STEP span on the same rank they started in: [s0, s1). */
static bool in_step(const trace_event *e, int step, double s0, double s1) {
    if (e->step >= 0) return e->step == step;
    return e->t_start >= s0 && e->t_start < s1;
}
/* The ZeRO stage of a run from its configuration (train_config_json, compact JSON):
 * --data-parallel-sharding-strategy when the run names one, else --use-distributed-optimizer
 * (stage 1 or 0); -1 when neither is there (traces of older runs, hand-made traces). */
static int zero_stage_of(const char *config_json) {
    static const char *strategies[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};
    const char *s = config_json ? strstr(config_json, "\"data_parallel_sharding_strategy\":\"")
                                : NULL;
    if (s) {
        s += strlen("\"data_parallel_sharding_strategy\":\"");
        for (int k = 3; k >= 0; k--) /* longest first: optim_grads before optim */
            if (strncmp(s, strategies[k], strlen(strategies[k])) == 0 &&
                s[strlen(strategies[k])] == '"')
                return k;
    }
    if (config_json && strstr(config_json, "\"use_distributed_optimizer\":true")) return 1;
    if (config_json && strstr(config_json, "\"use_distributed_optimizer\":false")) return 0;
    return -1;
}

/* Did any rank evaluate during `step` (TRACE_EVAL events carry the step they follow)? */
static bool step_has_eval(const trace_run *r, int step) {
    for (int k = 0; k < r->nranks; k++)
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            const trace_event *e = trace_file_event(r->ranks[k], i);
            if (e->kind == TRACE_EVAL && e->step == step) return true;
        }
    return false;
}

int viz_run_default_step(const trace_run *r) {
    int nsteps = viz_run_complete_steps(r, NULL, 0);
    if (nsteps == 0) return -1;
    int *steps = mallocCheck((size_t)nsteps * sizeof *steps);
    viz_run_complete_steps(r, steps, nsteps);
    int pick = steps[nsteps - 1]; /* every step evaluated: the last one, evaluation and all */
    for (int i = nsteps - 1; i >= 0; i--)
        if (!step_has_eval(r, steps[i])) {
            pick = steps[i];
            break;
        }
    free(steps);
    return pick;
}

/* The step to show: `step` if every rank completed it, viz_run_default_step() for -1, and -1
 * when the traces carry no steps (`whole`: the whole run is shown). Returns false with a
 * message in err when there is no such step. */
static bool choose_step(const trace_run *r, bool whole, int *step, char *err, size_t errlen) {
    if (whole) {
        *step = -1;
        return true;
    }
    int nsteps = viz_run_complete_steps(r, NULL, 0);
    int *steps = mallocCheck(((size_t)nsteps + 1) * sizeof *steps);
    viz_run_complete_steps(r, steps, nsteps);
    bool found = false;
    if (nsteps == 0) {
        snprintf(err, errlen,
                 "'%s' has no step that every rank completed (did the run stop early?)", r->dir);
    } else {
        if (*step < 0) *step = viz_run_default_step(r);
        for (int i = 0; i < nsteps; i++) found |= steps[i] == *step;
        if (!found)
            snprintf(err, errlen,
                     "step %d is not a complete step of '%s' (complete steps: %d..%d, %d in all)",
                     *step, r->dir, steps[0], steps[nsteps - 1], nsteps);
    }
    free(steps);
    return found;
}

/* Rank f's span of the step: [s0, s1) of its TRACE_STEP event (s0, s1 left as they are for
 * the whole run). */
static void step_span(const trace_file *f, int step, bool whole, double *s0, double *s1) {
    if (whole) return;
    const trace_event *se = find_step(f, step);
    *s0 = se->t_start, *s1 = se->t_end;
}

/* The window = the earliest start and latest end of what belongs to the step (the ranks' step
 * spans and every event kept), on rank 0's clock. Nothing that began inside the step is
 * clipped; nothing that began outside is kept. */
static void step_window(const trace_run *r, int step, bool whole, double *t0, double *t1) {
    bool have = false;
    *t0 = *t1 = 0;
    for (int k = 0; k < r->nranks; k++) {
        const trace_file *f = r->ranks[k];
        double off = trace_file_header(f)->clock_offset, s0 = 0, s1 = 0;
        step_span(f, step, whole, &s0, &s1);
        for (size_t i = 0; i < trace_file_num_events(f); i++) {
            const trace_event *e = trace_file_event(f, i);
            if (e->flags & TRACE_OPEN) continue;
            if (e->kind == TRACE_MEMORY) continue;
            if (!whole && !in_step(e, step, s0, s1)) continue;
            if (!whole && e->kind == TRACE_STEP && e->step != step) continue;
            if (!have || e->t_start + off < *t0) *t0 = e->t_start + off;
            if (!have || e->t_end + off > *t1) *t1 = e->t_end + off;
            have = true;
        }
    }
}

/* Event i of rank k as a box, its times from the window's start t0 (off: the rank's clock
 * offset). */
static viz_tl_box box_of(const trace_run *r, int k, size_t i, viz_tl_kind kind, double off,
                         double t0) {
    const trace_file *f = r->ranks[k];
    const trace_event *e = trace_file_event(f, i);
    const char *op = trace_file_string(f, e->op);
    kind = viz_tl_message_kind(kind, op, trace_file_string(f, e->group));
    viz_tl_box box = {
        .kind = kind,
        .microbatch = e->microbatch,
        .chunk = e->chunk,
        .start = e->t_start + off - t0,
        .ready = e->t_ready + off - t0,
        .end = e->t_end + off - t0,
        .peer = e->peer,
        .flow = r->flow[k][i],
        .stream = (e->flags & TRACE_STREAM) != 0,
        .bytes = viz_tl_is_comm(kind) ? (double)e->bytes : 0,
        .event = (int)i,
    };
    snprintf(box.op, sizeof box.op, "%s", op);
    return box;
}

/* Rank k's row: its coordinates, its boxes of the step and its memory samples (with the
 * sample in force when its step begins). */
static void add_rank(viz_timeline *tl, const trace_run *r, int k, int step, bool whole, double t0) {
    const trace_file *f = r->ranks[k];
    const trace_header *h = trace_file_header(f);
    viz_timeline_set_coords(tl, k, h->tp_rank, h->pp_rank, trace_header_dp_cp_rank(h));
    snprintf(tl->rows[k].host, sizeof tl->rows[k].host, "%s", h->host);
    tl->rows[k].clock_unc = h->clock_uncertainty;
    tl->dropped += trace_file_dropped(f);
    double off = h->clock_offset, s0 = -1e300, s1 = 1e300;
    step_span(f, step, whole, &s0, &s1);
    double last_mem = -1; /* the sample in force when the rank's step begins */
    for (size_t i = 0; i < trace_file_num_events(f); i++) {
        const trace_event *e = trace_file_event(f, i);
        if (e->flags & TRACE_OPEN) continue;
        if (e->kind == TRACE_MEMORY) { /* samples are in time order per rank */
            if (e->t_start < s0) last_mem = (double)e->bytes;
            else if (e->t_start < s1)
                viz_timeline_add_sample(tl, k, e->t_start + off - t0, (double)e->bytes);
            continue;
        }
        viz_tl_kind kind = tl_kind(e->kind);
        if (kind == VIZ_TL_NUM_KINDS) continue;
        if (!whole && !in_step(e, step, s0, s1)) continue;
        viz_timeline_add_box(tl, k, box_of(r, k, i, kind, off, t0));
    }
    if (last_mem >= 0) viz_timeline_add_sample(tl, k, (whole ? t0 : s0 + off) - t0, last_mem);
}

viz_timeline *viz_timeline_from_run(const trace_run *r, const char *name, int step, char *err,
                                    size_t errlen) {
    const trace_header *h0 = trace_file_header(r->ranks[0]);
    const bool whole = !viz_run_has_steps(r);
    if (!choose_step(r, whole, &step, err, errlen)) return NULL;
    double t0, t1;
    step_window(r, step, whole, &t0, &t1);
    viz_timeline *tl = viz_timeline_new(name, h0->schedule, h0->tp, h0->pp,
                                        trace_header_dp_cp_size(h0), h0->vpp, h0->num_microbatches);
    tl->step = step;
    tl->duration = t1 - t0;
    tl->zero_stage = zero_stage_of(h0->config_json);
    tl->cp = h0->cp;
    for (int k = 0; k < r->nranks; k++) add_rank(tl, r, k, step, whole, t0);
    viz_timeline_finish(tl);
    return tl;
}
