/* timeline.c — the timeline model and its statistics (see timeline.h). */
#include "viz/timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"

const char *viz_tl_kind_name(viz_tl_kind k) {
    static const char *const names[VIZ_TL_NUM_KINDS] = {
        "forward", "backward", "optimizer", "send", "recv", "collective", "data", "eval",
    };
    return (int)k >= 0 && k < VIZ_TL_NUM_KINDS ? names[k] : "?";
}

bool viz_tl_is_comm(viz_tl_kind k) {
    return k == VIZ_TL_SEND || k == VIZ_TL_RECV || k == VIZ_TL_COLLECTIVE;
}

viz_timeline *viz_timeline_new(const char *name, const char *schedule, int tp, int pp, int dp,
                               int vpp, int num_microbatches) {
    CHECK(tp >= 1 && pp >= 1 && dp >= 1 && vpp >= 1, "a timeline needs tp, pp, dp, vpp >= 1");
    viz_timeline *tl = callocCheck(1, sizeof *tl);
    snprintf(tl->name, sizeof tl->name, "%s", name ? name : "");
    snprintf(tl->schedule, sizeof tl->schedule, "%s", schedule ? schedule : "");
    tl->tp = tp, tl->pp = pp, tl->dp = dp, tl->vpp = vpp;
    tl->num_microbatches = num_microbatches;
    tl->world_size = tl->nrows = tp * pp * dp;
    tl->step = -1;
    tl->rows = callocCheck((size_t)tl->nrows, sizeof *tl->rows);
    for (int r = 0; r < tl->nrows; r++) {
        viz_tl_row *row = &tl->rows[r];
        row->rank = r;
        row->tp_rank = r % tp;
        row->dp_rank = (r / tp) % dp;
        row->pp_rank = r / (tp * dp);
    }
    return tl;
}

void viz_timeline_set_coords(viz_timeline *tl, int rank, int tp_rank, int pp_rank, int dp_rank) {
    CHECK(rank >= 0 && rank < tl->nrows, "rank out of range for this timeline");
    tl->rows[rank].tp_rank = tp_rank;
    tl->rows[rank].pp_rank = pp_rank;
    tl->rows[rank].dp_rank = dp_rank;
}

void viz_timeline_add_box(viz_timeline *tl, int rank, viz_tl_box box) {
    CHECK(rank >= 0 && rank < tl->nrows, "rank out of range for this timeline");
    CHECK(box.start <= box.ready && box.ready <= box.end, "a box needs start <= ready <= end");
    viz_tl_row *row = &tl->rows[rank];
    if (row->nboxes == row->cap_boxes) {
        row->cap_boxes = row->cap_boxes ? 2 * row->cap_boxes : 64;
        row->boxes = realloc(row->boxes, (size_t)row->cap_boxes * sizeof *row->boxes);
        CHECK(row->boxes != NULL, "out of memory growing a timeline row");
    }
    box.op[sizeof box.op - 1] = 0;
    row->boxes[row->nboxes++] = box;
}

void viz_timeline_add_sample(viz_timeline *tl, int rank, double t, double bytes) {
    CHECK(rank >= 0 && rank < tl->nrows, "rank out of range for this timeline");
    viz_tl_row *row = &tl->rows[rank];
    if (row->nmem == row->cap_mem) {
        row->cap_mem = row->cap_mem ? 2 * row->cap_mem : 64;
        row->mem = realloc(row->mem, (size_t)row->cap_mem * sizeof *row->mem);
        CHECK(row->mem != NULL, "out of memory growing a timeline row");
    }
    row->mem[row->nmem++] = (viz_tl_sample){t, bytes};
}

static int box_cmp(const void *a, const void *b) {
    const viz_tl_box *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

static int sample_cmp(const void *a, const void *b) {
    const viz_tl_sample *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

void viz_timeline_finish(viz_timeline *tl) {
    double last = 0;
    for (int r = 0; r < tl->nrows; r++) {
        viz_tl_row *row = &tl->rows[r];
        if (row->nboxes) qsort(row->boxes, (size_t)row->nboxes, sizeof *row->boxes, box_cmp);
        if (row->nmem) qsort(row->mem, (size_t)row->nmem, sizeof *row->mem, sample_cmp);
        for (int i = 0; i < row->nboxes; i++)
            if (row->boxes[i].end > last) last = row->boxes[i].end;
    }
    if (tl->duration <= 0) tl->duration = last;
}

void viz_timeline_free(viz_timeline *tl) {
    if (!tl) return;
    for (int r = 0; r < tl->nrows; r++) {
        free(tl->rows[r].boxes);
        free(tl->rows[r].mem);
    }
    free(tl->rows);
    free(tl);
}

/* ---- statistics --------------------------------------------------------------------------- */

typedef struct { double a, b; } span;

static int span_cmp(const void *x, const void *y) {
    const span *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* Sorts and merges spans in place; returns how many remain. */
static int merge_spans(span *s, int n) {
    if (n == 0) return 0;
    qsort(s, (size_t)n, sizeof *s, span_cmp);
    int k = 0;
    for (int i = 1; i < n; i++) {
        if (s[i].a <= s[k].b) {
            if (s[i].b > s[k].b) s[k].b = s[i].b;
        } else {
            s[++k] = s[i];
        }
    }
    return k + 1;
}

double viz_union_length(const double *starts, const double *ends, int n, double a, double b) {
    if (b <= a || n <= 0) return 0;
    span *s = mallocCheck((size_t)n * sizeof *s);
    int k = 0;
    for (int i = 0; i < n; i++) {
        double x = starts[i] < a ? a : starts[i], y = ends[i] > b ? b : ends[i];
        if (y > x) s[k++] = (span){x, y};
    }
    k = merge_spans(s, k);
    double total = 0;
    for (int i = 0; i < k; i++) total += s[i].b - s[i].a;
    free(s);
    return total;
}

int viz_timeline_busy_intervals(const viz_timeline *tl, int rank, double **starts, double **ends) {
    CHECK(rank >= 0 && rank < tl->nrows, "rank out of range for this timeline");
    const viz_tl_row *row = &tl->rows[rank];
    span *s = mallocCheck(((size_t)row->nboxes + 1) * sizeof *s);
    int k = 0;
    for (int i = 0; i < row->nboxes; i++) {
        const viz_tl_box *b = &row->boxes[i];
        /* A p2p only keeps the rank busy once the data is there; before that it waits. */
        double a = (b->kind == VIZ_TL_SEND || b->kind == VIZ_TL_RECV) ? b->ready : b->start;
        if (b->end > a) s[k++] = (span){a, b->end};
    }
    k = merge_spans(s, k);
    *starts = mallocCheck(((size_t)k + 1) * sizeof **starts);
    *ends = mallocCheck(((size_t)k + 1) * sizeof **ends);
    for (int i = 0; i < k; i++) (*starts)[i] = s[i].a, (*ends)[i] = s[i].b;
    free(s);
    return k;
}

viz_tl_row_stats viz_timeline_row_stats(const viz_timeline *tl, int rank) {
    viz_tl_row_stats st = {.first_fwd = -1, .first_bwd = -1, .last_fwd_end = -1, .last_bwd_end = -1,
                           .warmup_end = -1, .cooldown_start = -1};
    double *a, *b;
    int n = viz_timeline_busy_intervals(tl, rank, &a, &b);
    st.busy = viz_union_length(a, b, n, 0, tl->duration);
    st.idle_frac = tl->duration > 0 ? 1 - st.busy / tl->duration : 0;
    free(a);
    free(b);

    const viz_tl_row *row = &tl->rows[rank];
    for (int i = 0; i < row->nboxes; i++) {
        const viz_tl_box *x = &row->boxes[i];
        if (x->kind == VIZ_TL_FORWARD) {
            st.forwards++;
            if (st.first_fwd < 0 || x->start < st.first_fwd) st.first_fwd = x->start;
            if (x->end > st.last_fwd_end) st.last_fwd_end = x->end;
        } else if (x->kind == VIZ_TL_BACKWARD) {
            st.backwards++;
            if (st.first_bwd < 0 || x->start < st.first_bwd) st.first_bwd = x->start;
            if (x->end > st.last_bwd_end) st.last_bwd_end = x->end;
        }
    }
    for (int i = 0; i < row->nboxes; i++) {
        const viz_tl_box *x = &row->boxes[i];
        if (x->kind == VIZ_TL_FORWARD && (st.first_bwd < 0 || x->start < st.first_bwd)) {
            st.warmup_forwards++;
            if (x->end > st.warmup_end) st.warmup_end = x->end;
        }
        if (x->kind == VIZ_TL_BACKWARD && st.last_fwd_end >= 0 && x->start >= st.last_fwd_end) {
            st.cooldown_backwards++;
            if (st.cooldown_start < 0 || x->start < st.cooldown_start) st.cooldown_start = x->start;
        }
    }
    for (int i = 0; i < row->nmem; i++)
        if (row->mem[i].bytes > st.mem_peak) st.mem_peak = row->mem[i].bytes;
    return st;
}

viz_tl_bubble viz_timeline_bubble(const viz_timeline *tl) {
    viz_tl_bubble bb = {0};
    double lo = 0, hi = 0;
    bool any = false;
    for (int r = 0; r < tl->nrows; r++)
        for (int i = 0; i < tl->rows[r].nboxes; i++) {
            const viz_tl_box *x = &tl->rows[r].boxes[i];
            if (x->kind != VIZ_TL_FORWARD && x->kind != VIZ_TL_BACKWARD) continue;
            if (!any || x->start < lo) lo = x->start;
            if (!any || x->end > hi) hi = x->end;
            any = true;
        }
    if (!any || hi <= lo) return bb;
    bb.span_start = lo;
    bb.span_end = hi;
    double idle = 0, busy = 0;
    for (int r = 0; r < tl->nrows; r++) {
        const viz_tl_row *row = &tl->rows[r];
        double *a = mallocCheck(((size_t)row->nboxes + 1) * sizeof *a);
        double *b = mallocCheck(((size_t)row->nboxes + 1) * sizeof *b);
        int n = 0;
        for (int i = 0; i < row->nboxes; i++)
            if (row->boxes[i].kind == VIZ_TL_FORWARD || row->boxes[i].kind == VIZ_TL_BACKWARD)
                a[n] = row->boxes[i].start, b[n++] = row->boxes[i].end;
        double u = viz_union_length(a, b, n, lo, hi);
        busy += u;
        idle += (hi - lo) - u;
        free(a);
        free(b);
    }
    bb.measured_total = idle / (tl->nrows * (hi - lo));
    bb.measured_ideal = busy > 0 ? idle / busy : 0;
    double p = tl->pp, vm = (double)tl->vpp * tl->num_microbatches;
    if (vm > 0) {
        bb.theory_ideal = (p - 1) / vm;
        bb.theory_total = (p - 1) / (vm + p - 1);
    }
    return bb;
}
