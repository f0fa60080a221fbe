/* schedule_memory.c — the activations held over a schedule's time. See schedule_memory.h. */
#include "viz/schedule_memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "viz/canvas.h"

void viz_sched_mem_compute(const pp_rank_plan *plan, int v, const pp_rank_timeline *tl,
                           double makespan, double until, viz_sched_mem_curve *out) {
    CHECK(tl->n == plan->n, "time the plan you draw");
    memset(out, 0, sizeof *out);
    const double end = until > 0 && until < makespan ? until : makespan;
    pp_plan_holds h = pp_plan_holds_of(plan, v); /* the one count of held sets */
    out->steps = callocCheck((size_t)plan->n + 1, sizeof *out->steps);
    out->steps[out->n++] = (viz_sched_mem_step){0, 0};
    out->t_end = end;
    out->v = v;
    int held = 0;
    for (int i = 0; i < plan->n; i++) {
        const int now = h.sets_after[i];
        if (now == held) continue;
        /* a set counts from its forward's start until its release ends */
        const bool grows = now > held;
        const double t = grows ? tl->spans[i].start : tl->spans[i].end;
        held = now;
        /* after the cut: not shown (a forward starting at it is not drawn either) */
        if (grows ? t >= end : t > end) continue;
        viz_sched_mem_step *last = &out->steps[out->n - 1];
        if (t <= last->t + 1e-9) last->sets = now; /* a release and a forward at one time */
        else out->steps[out->n++] = (viz_sched_mem_step){t, now};
        if (now > out->peak) out->peak = now, out->peak_t = t;
    }
    pp_plan_holds_free(&h);
}

void viz_sched_mem_free(viz_sched_mem_curve *c) {
    free(c->steps);
    memset(c, 0, sizeof *c);
}

void viz_sched_mem_paint(cairo_t *cr, const viz_sched_mem_curve *c, double x0, double ppu,
                         double base, double px_per_set) {
    if (c->n == 0) return;
    cairo_move_to(cr, x0, base);
    double y = base;
    for (int i = 0; i < c->n; i++) {
        const double x = x0 + c->steps[i].t * ppu;
        cairo_line_to(cr, x, y);
        y = base - c->steps[i].sets * px_per_set;
        cairo_line_to(cr, x, y);
    }
    cairo_line_to(cr, x0 + c->t_end * ppu, y);
    cairo_line_to(cr, x0 + c->t_end * ppu, base);
    cairo_close_path(cr);
    viz_set_rgb(cr, viz_shade(VIZ_MEMORY, 0.75));
    cairo_fill_preserve(cr);
    viz_set_rgb(cr, VIZ_MEMORY);
    viz_line_width(cr, 0.9);
    cairo_stroke(cr);
    if (c->peak > 0) { /* the peak's number just above its first plateau */
        char buf[64];
        if (c->v > 1)
            snprintf(buf, sizeof buf, "peak %g (%d chunk sets)", (double)c->peak / c->v, c->peak);
        else snprintf(buf, sizeof buf, "peak %d", c->peak);
        viz_text(cr, x0 + c->peak_t * ppu + 2, base - c->peak * px_per_set - 2, 8, true, VIZ_LEFT,
                 VIZ_MEMORY, buf);
    }
}
