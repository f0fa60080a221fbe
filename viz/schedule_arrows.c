/* schedule_arrows.c — the dependency arrows of a schedule picture (see schedule_arrows.h). */
#include "viz/schedule_arrows.h"

#include <math.h>
#include <stdlib.h>

#include "src/core/check.h"

/* The dependency arrows: one per receiving action that starts before `until`, from the box
 * of the action that sent its message (found by tag) to its own box. */
void viz_sched_arrows_layout(viz_schedule_layout *out, const pp_schedule *s, const pp_sim *sim) {
    const int ntags = pp_tag_count(&s->cfg), p = s->cfg.p;
    int *from_rank = mallocCheck((size_t)ntags * sizeof(int)), nrecv = 0;
    int *from_action = mallocCheck((size_t)ntags * sizeof(int));
    for (int r = 0; r < p; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const pp_action *a = &s->ranks[r].actions[i];
            if (a->send_tag >= 0) from_rank[a->send_tag] = r, from_action[a->send_tag] = i;
            nrecv += a->recv_tag >= 0;
        }
    out->arrows = callocCheck((size_t)nrecv + 1, sizeof *out->arrows);
    const double ppu = out->px_per_unit;
    for (int r = 0; r < p; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const pp_action *a = &s->ranks[r].actions[i];
            if (a->recv_tag < 0 || sim->ranks[r].spans[i].start >= out->until) continue;
            const int fr = from_rank[a->recv_tag], fi = from_action[a->recv_tag];
            viz_sched_arrow *w = &out->arrows[out->narrow++];
            *w = (viz_sched_arrow){
                .from_rank = fr, .from_action = fi, .to_rank = r, .to_action = i};
            const double y_from = out->row_y0 + fr * out->row_pitch,
                         y_to = out->row_y0 + r * out->row_pitch;
            w->x1 = out->plot_x + sim->ranks[fr].spans[fi].end * ppu - 2;
            w->x2 = out->plot_x + sim->ranks[r].spans[i].start * ppu + 2;
            w->same_row = fr == r;
            w->y1 = fr < r ? y_from + out->box_h : y_from; /* leave on the side facing */
            w->y2 = fr < r ? y_to : fr > r ? y_to + out->box_h : y_to;
        }
    free(from_rank);
    free(from_action);
}

/* A dependency, thin and light: a straight arrow between rows, an arc above a row for a V's
 * turn-around on one rank. */
void viz_sched_arrow_draw(cairo_t *cr, const viz_sched_arrow *a) {
    cairo_save(cr);
    cairo_set_source_rgba(cr, 0.15, 0.15, 0.25, 0.45);
    cairo_set_line_width(cr, 0.7);
    double ux, uy; /* the head's direction */
    cairo_move_to(cr, a->x1, a->y1);
    if (a->same_row) {
        const double lift = 12;
        cairo_curve_to(cr, a->x1, a->y1 - lift, a->x2, a->y2 - lift, a->x2, a->y2);
        ux = 0, uy = 1;
    } else {
        cairo_line_to(cr, a->x2, a->y2);
        const double dx = a->x2 - a->x1, dy = a->y2 - a->y1, len = fmax(1e-9, hypot(dx, dy));
        ux = dx / len, uy = dy / len;
    }
    cairo_stroke(cr);
    const double h = 4; /* a small filled head */
    cairo_move_to(cr, a->x2, a->y2);
    cairo_line_to(cr, a->x2 - h * ux - 0.5 * h * uy, a->y2 - h * uy + 0.5 * h * ux);
    cairo_line_to(cr, a->x2 - h * ux + 0.5 * h * uy, a->y2 - h * uy - 0.5 * h * ux);
    cairo_close_path(cr);
    cairo_fill(cr);
    cairo_restore(cr);
}
