/* timeline.c — the timeline model, its time classes and its statistics (see timeline.h). */
#include "viz/timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/pp/schedule.h"

const char *viz_tl_kind_name(viz_tl_kind k) {
    static const char *const names[VIZ_TL_NUM_KINDS] = {
        "forward", "backward", "optimizer", "send",       "recv", "collective",
        "data",    "eval",     "weight",    "all-to-all", "ring",
    };
    return (int)k >= 0 && k < VIZ_TL_NUM_KINDS ? names[k] : "?";
}

bool viz_tl_is_comm(viz_tl_kind k) {
    return k == VIZ_TL_SEND || k == VIZ_TL_RECV || k == VIZ_TL_COLLECTIVE ||
           k == VIZ_TL_ALL_TO_ALL || k == VIZ_TL_RING;
}

viz_tl_kind viz_tl_message_kind(viz_tl_kind base, const char *op, const char *group) {
    op = op ? op : "";
    group = group ? group : "";
    if (base == VIZ_TL_COLLECTIVE &&
        (strncmp(op, "all_to_all", 10) == 0 || strcmp(op, "all-to-all") == 0))
        return VIZ_TL_ALL_TO_ALL;
    if ((base == VIZ_TL_SEND || base == VIZ_TL_RECV) && strcmp(group, "cp") == 0)
        return VIZ_TL_RING;
    return base;
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
    tl->zero_stage = -1;
    tl->cp = 1;
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

/* ---- time classes ------------------------------------------------------------------------ */

const char *viz_time_class_name(viz_time_class c) {
    static const char *const names[VIZ_TC_NUM] = {"compute", "transfer", "wait", "idle"};
    return (int)c >= 0 && c < VIZ_TC_NUM ? names[c] : "?";
}

/* A sweep over the row: every box adds +1/-1 to the count of its class at its edges;
 * between two consecutive edges the class is the first of transfer > wait > compute with a
 * positive count, else idle. */
typedef struct {
    double t;
    int cls, delta;
} edge;

static int edge_cmp(const void *x, const void *y) {
    const edge *p = x, *q = y;
    return p->t < q->t ? -1 : p->t > q->t;
}

static viz_time_class class_of(const int count[VIZ_TC_NUM]) {
    if (count[VIZ_TC_TRANSFER] > 0) return VIZ_TC_TRANSFER;
    if (count[VIZ_TC_WAIT] > 0) return VIZ_TC_WAIT;
    if (count[VIZ_TC_COMPUTE] > 0) return VIZ_TC_COMPUTE;
    return VIZ_TC_IDLE;
}

static void push_seg(viz_tc_segment *out, int *n, double a, double b, viz_time_class c) {
    if (b <= a) return;
    if (*n > 0 && out[*n - 1].cls == c && out[*n - 1].b == a) out[*n - 1].b = b;
    else out[(*n)++] = (viz_tc_segment){a, b, c};
}

int viz_timeline_class_segments(const viz_timeline *tl, int rank, double a, double b,
                                viz_tc_segment **out) {
    CHECK(rank >= 0 && rank < tl->nrows, "rank out of range for this timeline");
    const viz_tl_row *row = &tl->rows[rank];
    edge *e = mallocCheck((4 * (size_t)row->nboxes + 1) * sizeof *e);
    int ne = 0;
    for (int i = 0; i < row->nboxes; i++) {
        const viz_tl_box *x = &row->boxes[i];
        if (x->stream) continue; /* ran beside the rank's time, not part of it */
        if (viz_tl_is_comm(x->kind)) {
            if (x->ready > x->start)
                e[ne++] = (edge){x->start, VIZ_TC_WAIT, 1},
                e[ne++] = (edge){x->ready, VIZ_TC_WAIT, -1};
            if (x->end > x->ready)
                e[ne++] = (edge){x->ready, VIZ_TC_TRANSFER, 1},
                e[ne++] = (edge){x->end, VIZ_TC_TRANSFER, -1};
        } else if (x->end > x->start) {
            e[ne++] = (edge){x->start, VIZ_TC_COMPUTE, 1},
            e[ne++] = (edge){x->end, VIZ_TC_COMPUTE, -1};
        }
    }
    qsort(e, (size_t)ne, sizeof *e, edge_cmp);
    viz_tc_segment *s = mallocCheck(((size_t)ne + 2) * sizeof *s);
    int n = 0, count[VIZ_TC_NUM] = {0};
    double t = a;
    for (int i = 0; i <= ne && t < b; i++) {
        double next = i < ne ? e[i].t : b;
        if (next > b) next = b;
        if (next > t) {
            push_seg(s, &n, t, next, class_of(count));
            t = next;
        }
        if (i < ne) count[e[i].cls] += e[i].delta;
    }
    free(e);
    *out = s;
    return n;
}

viz_tc_shares viz_timeline_class_shares(const viz_timeline *tl, int rank, double a, double b) {
    viz_tc_shares sh = {{0}, {0}};
    if (!(b > a)) return sh;
    viz_tc_segment *s;
    int n = viz_timeline_class_segments(tl, rank, a, b, &s);
    for (int i = 0; i < n; i++) sh.seconds[s[i].cls] += s[i].b - s[i].a;
    free(s);
    for (int c = 0; c < VIZ_TC_NUM; c++) sh.share[c] = sh.seconds[c] / (b - a);
    return sh;
}

/* ---- phases and the bubble ---------------------------------------------------------------- */

/* The schedule of the timeline as pp_config; false when it is none of the three or invalid. */
static bool schedule_of(const viz_timeline *tl, pp_config *cfg) {
    pp_kind kind;
    if (!pp_kind_parse(tl->schedule, &kind)) return false;
    const bool chunks = kind == PP_INTERLEAVED || kind == PP_ZBV;
    *cfg = (pp_config){kind, tl->pp, tl->num_microbatches, chunks ? tl->vpp : 1};
    char msg[256];
    return pp_config_valid(cfg, msg, sizeof msg);
}

viz_tl_row_stats viz_timeline_row_stats(const viz_timeline *tl, int rank) {
    viz_tl_row_stats st = {.first_fwd = -1,
                           .first_bwd = -1,
                           .last_fwd_end = -1,
                           .last_bwd_end = -1,
                           .warmup_end = -1,
                           .cooldown_start = -1,
                           .warmup_forwards = -1,
                           .cooldown_backwards = -1};
    st.classes = viz_timeline_class_shares(tl, rank, 0, tl->duration);
    st.busy = st.classes.seconds[VIZ_TC_COMPUTE] + st.classes.seconds[VIZ_TC_TRANSFER];
    st.idle_frac = st.classes.share[VIZ_TC_IDLE];

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
    /* Phases: W warmup forwards and W cooldown backwards, counted in time order (the boxes
     * are sorted by start). */
    pp_config cfg;
    int prank = row->pp_rank;
    if (schedule_of(tl, &cfg) && prank >= 0 && prank < cfg.p && st.forwards > 0) {
        int W = pp_warmup(&cfg, prank);
        st.has_phases = true;
        st.warmup_forwards = W < st.forwards ? W : st.forwards;
        st.cooldown_backwards = W < st.backwards ? W : st.backwards;
        int nf = 0, nb = 0;
        for (int i = 0; i < row->nboxes; i++) {
            const viz_tl_box *x = &row->boxes[i];
            if (x->kind == VIZ_TL_FORWARD && nf++ < st.warmup_forwards && x->end > st.warmup_end)
                st.warmup_end = x->end;
            if (x->kind == VIZ_TL_BACKWARD && nb++ == st.backwards - st.cooldown_backwards)
                st.cooldown_start = x->start;
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
            if (x->kind != VIZ_TL_FORWARD && x->kind != VIZ_TL_BACKWARD && x->kind != VIZ_TL_WEIGHT)
                continue;
            if (!any || x->start < lo) lo = x->start;
            if (!any || x->end > hi) hi = x->end;
            any = true;
        }
    if (!any || hi <= lo) return bb;
    bb.span_start = lo;
    bb.span_end = hi;
    double wait = 0, idle = 0, busy = 0;
    for (int r = 0; r < tl->nrows; r++) {
        viz_tc_shares sh = viz_timeline_class_shares(tl, r, lo, hi);
        wait += sh.seconds[VIZ_TC_WAIT];
        idle += sh.seconds[VIZ_TC_IDLE];
        busy += sh.seconds[VIZ_TC_COMPUTE] + sh.seconds[VIZ_TC_TRANSFER];
    }
    double denom = tl->nrows * (hi - lo);
    bb.wait_total = wait / denom;
    bb.idle_total = idle / denom;
    bb.measured_total = (wait + idle) / denom;
    bb.measured_ideal = busy > 0 ? (wait + idle) / busy : 0;
    int v = tl->vpp >= 1 ? tl->vpp : 1;
    pp_config cfg;
    /* The zero-bubble schedules have their own figure; the round-robin ones divide by the
     * trace's v (a 1-chunk schedule recorded with v > 1 included). */
    if (!schedule_of(tl, &cfg) || !pp_splits_backward(cfg.kind))
        cfg = (pp_config){v > 1 ? PP_INTERLEAVED : PP_1F1B, tl->pp, tl->num_microbatches, v};
    if (tl->pp >= 1 && tl->num_microbatches >= 1) {
        bb.theory_ideal = pp_textbook_of_ideal(&cfg);
        bb.theory_total = pp_textbook_of_total(&cfg, NULL, 0);
    }
    pp_textbook_formulas(&cfg, &bb.theory_text);
    return bb;
}

static void pct(char *buf, size_t cap, double f) { snprintf(buf, cap, "%.1f%%", 100 * f); }

void viz_timeline_bubble_text(const viz_timeline *tl, const viz_tl_bubble *bb,
                              viz_tl_bubble_text *out) {
    pct(out->measured_total, sizeof out->measured_total, bb->measured_total);
    pct(out->measured_ideal, sizeof out->measured_ideal, bb->measured_ideal);
    pct(out->wait_total, sizeof out->wait_total, bb->wait_total);
    pct(out->idle_total, sizeof out->idle_total, bb->idle_total);
    pct(out->theory_total, sizeof out->theory_total, bb->theory_total);
    pct(out->theory_ideal, sizeof out->theory_ideal, bb->theory_ideal);
    const pp_textbook_text *tx = &bb->theory_text;
    out->cond[0] = '\0';
    if (tx->shows_v) snprintf(out->cond, sizeof out->cond, ", v=%d", tl->vpp);
    else if (tx->assumes[0]) snprintf(out->cond, sizeof out->cond, ", %s", tx->assumes);
}

void viz_formula_pretty(char *dst, size_t cap, const char *ascii) {
    size_t n = 0;
    for (const char *c = ascii; *c && n + 3 < cap; c++) {
        const char *put = *c == '-' ? "−" : *c == '*' ? "·" : NULL;
        if (!put) dst[n++] = *c;
        else
            for (; *put; put++) dst[n++] = *put;
    }
    if (cap) dst[n < cap ? n : cap - 1] = 0;
}
