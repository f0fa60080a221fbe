/* timeline_overlay.c — positions of the ideal rows and the critical path over a timeline
 * picture (see timeline_overlay.h). */
#include "viz/timeline_overlay.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/core/check.h"
#include "viz/canvas.h"

enum { CAPTION_SIZE_X10 = 95 }; /* the caption's type, 9.5 points */

double viz_tl_ideal_lane_h(double lane_h) {
    return fmax(VIZ_TL_COMM_H, round(VIZ_TL_IDEAL_SHARE * lane_h));
}

void viz_tl_overlay_row(viz_tl_layout *L, const viz_tl_panel_layout *P, viz_tl_row_layout *R) {
    const viz_tl_overlay *o = P->overlay;
    if (!o || !o->ideal || R->rank >= o->ideal->nrows) return;
    const viz_tl_row *row = &o->ideal->rows[R->rank];
    R->ideal_boxes = callocCheck((size_t)row->nboxes + 1, sizeof *R->ideal_boxes);
    for (int i = 0; i < row->nboxes; i++) {
        const viz_tl_box *b = &row->boxes[i];
        viz_tl_box_layout *B = &R->ideal_boxes[i];
        /* hidden outside a window, and past the panel's step (a plan longer than the step) */
        B->hidden = (L->windowed && (b->end <= L->t0 || b->start >= L->t1)) || b->start >= P->t_end;
        const double start = viz_tl_shown(L, b->start);
        const double end = fmin(viz_tl_shown(L, b->end), P->t_end);
        B->x = B->x_ready = viz_tl_x(L, start);
        B->w = (end - start) * L->px_per_s;
        B->label_x = B->x + B->w / 2;
        if (b->microbatch >= 0) snprintf(B->label, sizeof B->label, "%d", b->microbatch);
        B->label_shown = !B->hidden && B->label[0] &&
                         strlen(B->label) * VIZ_TL_IDEAL_CHAR_W * viz_theme_current()->text_scale +
                                 4 <=
                             B->w;
        if (!B->hidden && b->kind < VIZ_TL_NUM_KINDS) L->kinds_present[b->kind] = true;
        if (!B->hidden && b->chunk >= 1) L->any_chunks = true;
    }
}

/* The display row of rank `rank`, or NULL. */
static const viz_tl_row_layout *row_of(const viz_tl_panel_layout *P, int rank) {
    for (int d = 0; d < P->nrows; d++)
        if (P->rows[d].rank == rank) return &P->rows[d];
    return NULL;
}

static bool outside(const viz_tl_layout *L, double t) {
    return L->windowed && (t < L->t0 || t > L->t1);
}

void viz_tl_overlay_path(const viz_tl_layout *L, viz_tl_panel_layout *P) {
    const viz_tl_overlay *o = P->overlay;
    if (!o || !o->path || o->npath <= 0) return;
    P->path = callocCheck((size_t)o->npath, sizeof *P->path);
    P->hops = callocCheck((size_t)o->npath, sizeof *P->hops);
    for (int i = 0; i < o->npath; i++) {
        const viz_tl_path_seg *s = &o->path[i];
        const viz_tl_row_layout *R = row_of(P, s->rank);
        CHECK(R != NULL, "a critical-path segment on a rank the timeline does not have");
        viz_tl_path_rect *r = &P->path[P->npath++];
        const double a = viz_tl_shown(L, s->start), b = viz_tl_shown(L, s->end);
        *r = (viz_tl_path_rect){.x = viz_tl_x(L, a),
                                .y = R->lane_y,
                                .w = (b - a) * L->px_per_s,
                                .h = R->lane_h,
                                .idle = s->idle,
                                .hidden = L->windowed && (s->end <= L->t0 || s->start >= L->t1),
                                .cut_left = L->windowed && s->start < L->t0,
                                .cut_right = L->windowed && s->end > L->t1};
        if (i + 1 == o->npath || o->path[i + 1].rank == s->rank) continue;
        const viz_tl_path_seg *n = &o->path[i + 1];
        const viz_tl_row_layout *D = row_of(P, n->rank);
        CHECK(D != NULL, "a critical-path segment on a rank the timeline does not have");
        if (outside(L, s->end) || outside(L, n->start)) continue;
        P->hops[P->nhops++] = (viz_tl_arrow){viz_tl_x(L, s->end), R->lane_y + R->lane_h / 2,
                                             viz_tl_x(L, n->start), D->lane_y + D->lane_h / 2};
    }
}

double viz_tl_overlay_caption(const viz_tl_layout *L, viz_tl_panel_layout *P, double y) {
    const viz_tl_overlay *o = P->overlay;
    if (!o || !o->caption[0]) return y;
    const double size = CAPTION_SIZE_X10 / 10.0;
    P->caption_lines = viz_wrap(o->caption, size, false, L->width - 28, P->caption_drawn,
                                sizeof P->caption_drawn);
    P->caption_y = y;
    return P->caption_y + (P->caption_lines - 1) * viz_line_pitch(size);
}
