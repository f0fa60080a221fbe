/* text_timeline.c — see text_timeline.h. */
#include "viz/text_timeline.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"

char viz_text_timeline_char(viz_tl_kind kind, int chunk) {
    bool odd = chunk >= 0 && chunk % 2 == 1;
    switch (kind) {
    case VIZ_TL_FORWARD: return odd ? 'f' : 'F';
    case VIZ_TL_BACKWARD: return odd ? 'b' : 'B';
    case VIZ_TL_WEIGHT: return odd ? 'w' : 'W';
    case VIZ_TL_OPTIMIZER: return 'O';
    case VIZ_TL_SEND: return '>';
    case VIZ_TL_RECV: return '<';
    case VIZ_TL_COLLECTIVE: return 'C';
    case VIZ_TL_ALL_TO_ALL: return 'A';
    case VIZ_TL_RING: return 'R';
    case VIZ_TL_DATA: return 'D';
    case VIZ_TL_EVAL: return 'E';
    default: return '?';
    }
}

/* Seconds of [a, b) inside [x, y). */
static double overlap(double a, double b, double x, double y) {
    double lo = a > x ? a : x, hi = b < y ? b : y;
    return hi > lo ? hi - lo : 0;
}

/* One bucket's character: first its time class (the one covering most of [a, b)); then, for
 * compute, the compute kind covering most of it, for a transfer the message kind moving bytes
 * for longest. */
static char bucket_char(const viz_tl_row *row, const viz_tc_segment *seg, int nseg, double a,
                        double b) {
    double cls[VIZ_TC_NUM] = {0};
    for (int i = 0; i < nseg; i++) cls[seg[i].cls] += overlap(seg[i].a, seg[i].b, a, b);
    int best = VIZ_TC_COMPUTE; /* ties: compute, transfer, wait, idle */
    for (int c = 1; c < VIZ_TC_NUM; c++)
        if (cls[c] > cls[best]) best = c;
    if (best == VIZ_TC_WAIT) return '~';
    if (best == VIZ_TC_IDLE || cls[best] <= 0) return '.';
    char ch = '?';
    double most = -1;
    for (int i = 0; i < row->nboxes; i++) {
        const viz_tl_box *x = &row->boxes[i];
        if (x->start >= b) break; /* boxes are sorted by start */
        bool comm = viz_tl_is_comm(x->kind);
        if (comm != (best == VIZ_TC_TRANSFER)) continue;
        double t = overlap(comm ? x->ready : x->start, x->end, a, b);
        if (t > most) most = t, ch = viz_text_timeline_char(x->kind, x->chunk);
    }
    return ch;
}

/* Row `rank` over [t0, t_end): `columns` buckets of dt seconds from t0. */
static void write_row(FILE *f, const viz_timeline *tl, int rank, int columns, double t0,
                      double t_end, double dt) {
    const viz_tl_row *row = &tl->rows[rank];
    viz_tc_segment *seg;
    int nseg = viz_timeline_class_segments(tl, rank, t0, t_end, &seg);
    for (int c = 0; c < columns; c++) {
        double a = t0 + c * dt, b = a + dt;
        if (a >= t_end) { /* past this panel's end: blank */
            fputc(' ', f);
            continue;
        }
        if (b > t_end) b = t_end;
        fputc(bucket_char(row, seg, nseg, a, b), f);
    }
    free(seg);
}

void viz_text_timeline_write(FILE *f, const viz_timeline *const *tls, int n, int columns) {
    viz_text_timeline_write_window(f, tls, n, columns, NULL);
}

/* The panel's first line: its layout, step or window, length and column width (and the
 * dropped-events warning). */
static void write_panel_title(FILE *f, const viz_timeline *tl, const viz_tl_window *w, double t0,
                              double t1, double dt) {
    if (tl->cp > 1) /* the timeline's dp counts dp · cp ranks (viz/timeline.h) */
        fprintf(f, "%s: %s, TP %d x CP %d x PP %d x DP %d (%d ranks), %d micro-batches", tl->name,
                tl->schedule, tl->tp, tl->cp, tl->pp, tl->dp / tl->cp, tl->world_size,
                tl->num_microbatches);
    else
        fprintf(f, "%s: %s, TP %d x PP %d x DP %d (%d ranks), %d micro-batches", tl->name,
                tl->schedule, tl->tp, tl->pp, tl->dp, tl->world_size, tl->num_microbatches);
    if (tl->vpp > 1) fprintf(f, ", %d chunks per rank", tl->vpp);
    char step[32] = "the timeline";
    if (tl->step >= 0) snprintf(step, sizeof step, "step %d", tl->step);
    if (w) fprintf(f, ", window %g-%g ms of %s", t0 * 1e3, t1 * 1e3, step);
    else if (tl->step >= 0) fprintf(f, ", %s", step);
    fprintf(f, ", %.3f ms (one column = %.3f ms)\n", tl->duration * 1e3, dt * 1e3);
    if (tl->dropped)
        fprintf(f, "WARNING: %llu events were dropped (trace buffer full)\n",
                (unsigned long long)tl->dropped);
}

/* Rank indices by pipeline stage, then dp, then tp (as in the pictures). */
static void sort_rows(const viz_timeline *tl, int *order) {
    for (int r = 0; r < tl->nrows; r++) order[r] = r;
    for (int i = 1; i < tl->nrows; i++) {
        int v = order[i], j = i;
        const viz_tl_row *x = &tl->rows[v];
        for (; j > 0; j--) {
            const viz_tl_row *y = &tl->rows[order[j - 1]];
            long kx = ((long)x->pp_rank * 4096 + x->dp_rank) * 4096 + x->tp_rank;
            long ky = ((long)y->pp_rank * 4096 + y->dp_rank) * 4096 + y->tp_rank;
            if (kx >= ky) break;
            order[j] = order[j - 1];
        }
        order[j] = v;
    }
}

/* One line per rank over [t0, t_end): its characters, then its time-class shares (of the
 * window when there is one). */
static void write_panel_rows(FILE *f, const viz_timeline *tl, const viz_tl_window *w, int columns,
                             double t0, double t_end, double dt) {
    int *order = mallocCheck((size_t)tl->nrows * sizeof *order);
    sort_rows(tl, order);
    for (int d = 0; d < tl->nrows; d++) {
        int r = order[d];
        viz_tc_shares shares = w ? viz_timeline_class_shares(tl, r, t0, t_end)
                                 : viz_timeline_row_stats(tl, r).classes;
        const double *sh = shares.share;
        fprintf(f, "stage %-2d rank %-3d |", tl->rows[r].pp_rank, r);
        write_row(f, tl, r, columns, t0, t_end, dt);
        fprintf(f, "| compute %5.1f%% transfer %5.1f%% wait %5.1f%% idle %5.1f%%\n",
                100 * sh[VIZ_TC_COMPUTE], 100 * sh[VIZ_TC_TRANSFER], 100 * sh[VIZ_TC_WAIT],
                100 * sh[VIZ_TC_IDLE]);
    }
    free(order);
}

/* The panel's bubble, measured (of the whole step) and in theory. */
static void write_bubble_line(FILE *f, const viz_timeline *tl, const viz_tl_window *w) {
    viz_tl_bubble bb = viz_timeline_bubble(tl);
    viz_tl_bubble_text s;
    viz_timeline_bubble_text(tl, &bb, &s);
    fprintf(f,
            "bubble%s measured: %s of total time (wait %s + idle %s), %s of ideal time | "
            "theory (p=%d, m=%d%s): %s = %s of total, %s = %s of ideal\n",
            w ? " of the whole step" : "", s.measured_total, s.wait_total, s.idle_total,
            s.measured_ideal, tl->pp, tl->num_microbatches, s.cond, bb.theory_text.total,
            s.theory_total, bb.theory_text.ideal, s.theory_ideal);
}

/* What the characters mean; all-to-all and ring steps named only when some panel has them. */
static void write_legend(FILE *f, const viz_timeline *const *tls, int n, const viz_tl_window *w) {
    bool a2a = false, ring = false;
    for (int p = 0; p < n; p++)
        for (int r = 0; r < tls[p]->nrows; r++)
            for (int i = 0; i < tls[p]->rows[r].nboxes; i++) {
                a2a |= tls[p]->rows[r].boxes[i].kind == VIZ_TL_ALL_TO_ALL;
                ring |= tls[p]->rows[r].boxes[i].kind == VIZ_TL_RING;
            }
    fprintf(f,
            "legend: F forward  B backward  W weight gradient (f, b, w: odd model chunk)  O "
            "optimizer  D data  E eval "
            "(compute) | > send  < recv  C collective%s%s (transfer: bytes moving) | ~ wait "
            "(blocked on a peer) | . idle (nothing scheduled)\n"
            "bubble = wait + idle inside the pipeline's first-forward..last-backward span, mean "
            "over ranks; the four shares of a row add up to the %s\n",
            a2a ? "  A all-to-all (MoE)" : "", ring ? "  R ring step (CP)" : "",
            w ? "window (the bubble: the whole step)" : "step");
}

void viz_text_timeline_write_window(FILE *f, const viz_timeline *const *tls, int n, int columns,
                                    const viz_tl_window *w) {
    CHECK(columns >= 1, "a text timeline needs at least one column");
    double longest = 0;
    for (int p = 0; p < n; p++)
        if (tls[p]->duration > longest) longest = tls[p]->duration;
    /* The time shown: [0, longest), or the window with its end clipped to the longest. */
    double t0 = 0, t1 = longest;
    if (w) {
        CHECK(w->t0 >= 0 && w->t0 < w->t1 && w->t0 < longest,
              "a timeline window must start at or after 0, before its end and before the "
              "step's end");
        t0 = w->t0;
        if (w->t1 < longest) t1 = w->t1;
    }
    double dt = t1 > t0 ? (t1 - t0) / columns : 1;
    for (int p = 0; p < n; p++) {
        const viz_timeline *tl = tls[p];
        const double t_end = tl->duration < t1 ? tl->duration : t1; /* this panel's part */
        if (p > 0) fputc('\n', f);
        write_panel_title(f, tl, w, t0, t1, dt);
        write_panel_rows(f, tl, w, columns, t0, t_end, dt);
        write_bubble_line(f, tl, w);
    }
    write_legend(f, tls, n, w);
}
