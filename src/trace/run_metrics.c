/* run_metrics.c — see run_metrics.h. */
#include "src/trace/run_metrics.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"
#include "src/core/file_read.h"
#include "src/trace/trace.h"

/* ---- one flat JSON object ---------------------------------------------------------------- */

enum { FIELD_MAX = 64, KEY_LEN = 64, STR_LEN = 64 };
#define RUN_METRICS_MAX_BYTES ((size_t)1 << 30) /* metrics.jsonl read whole: 1 GiB at most */

typedef enum { V_NUMBER, V_STRING, V_BOOL, V_NULL, V_ARRAY } value_kind;

typedef struct {
    char key[KEY_LEN]; /* truncated when longer */
    value_kind kind;
    double num;        /* V_NUMBER; V_BOOL: 0 or 1 */
    char str[STR_LEN]; /* V_STRING, truncated */
    const char *at;    /* V_ARRAY: its '[' in the line, read by parse_counts */
} field;

typedef struct {
    int n;
    field f[FIELD_MAX]; /* fields past FIELD_MAX are parsed and dropped */
} object;

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    return p;
}

/* A JSON string at p (on its opening quote) into out[cap]; the end past the closing quote,
 * or NULL. Escapes are kept as their second character (enough for keys and labels). */
static const char *parse_string(const char *p, char *out, size_t cap) {
    if (*p != '"') return NULL;
    p++;
    size_t n = 0;
    while (*p && *p != '"') {
        if (*p == '\\') {
            p++;
            if (!*p) return NULL;
        }
        if ((unsigned char)*p < 0x20) return NULL;
        if (n + 1 < cap) out[n++] = *p;
        p++;
    }
    if (*p != '"') return NULL;
    out[n] = 0;
    return p + 1;
}

/* The keys whose value may be an array (of counts, nested at most two deep): the MoE load. */
static bool array_key(const char *key) {
    return strcmp(key, "moe_tokens") == 0 || strcmp(key, "moe_dropped") == 0;
}

/* Past the array at p (on its '['): numbers, commas and blanks, nested at most two deep;
 * NULL when it is not that. The numbers themselves are read by parse_counts. */
static const char *skip_array(const char *p) {
    int depth = 0;
    do {
        if (*p == '[') {
            if (++depth > 2) return NULL;
        } else if (*p == ']') {
            depth--;
        } else if (*p == 0 || !strchr("0123456789+-.eE, \t\r\n", *p)) {
            return NULL;
        }
        p++;
    } while (depth > 0);
    return p;
}

/* Parses `s` as one flat object; false with why[] (and the column) when it is not one. */
static bool parse_object(const char *s, object *o, char *why, size_t whylen) {
    const char *p = skip_ws(s);
    o->n = 0;
#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(why, whylen, __VA_ARGS__);                                                        \
        return false;                                                                              \
    } while (0)
    if (*p != '{') BAD("expected '{' at column %d", (int)(p - s) + 1);
    p = skip_ws(p + 1);
    if (*p == '}')
        return *skip_ws(p + 1) == 0 ? true : (snprintf(why, whylen, "text after '}'"), false);
    for (;;) {
        field tmp, *f = o->n < FIELD_MAX ? &o->f[o->n] : &tmp;
        memset(f, 0, sizeof *f);
        const char *q = parse_string(p, f->key, sizeof f->key);
        if (!q) BAD("expected a \"key\" at column %d", (int)(p - s) + 1);
        p = skip_ws(q);
        if (*p != ':') BAD("expected ':' after \"%s\" at column %d", f->key, (int)(p - s) + 1);
        p = skip_ws(p + 1);
        if (*p == '"') {
            f->kind = V_STRING;
            q = parse_string(p, f->str, sizeof f->str);
            if (!q) BAD("unterminated string value of \"%s\"", f->key);
        } else if (strncmp(p, "true", 4) == 0 || strncmp(p, "false", 5) == 0) {
            f->kind = V_BOOL;
            f->num = *p == 't';
            q = p + (*p == 't' ? 4 : 5);
        } else if (strncmp(p, "null", 4) == 0) {
            f->kind = V_NULL;
            f->num = NAN;
            q = p + 4;
        } else if (*p == '[' && array_key(f->key)) {
            f->kind = V_ARRAY;
            f->at = p;
            q = skip_array(p);
            if (!q) BAD("\"%s\" is not an array of numbers (at most two deep)", f->key);
        } else if (*p == '{' || *p == '[') {
            BAD("\"%s\" holds a nested %s; metrics lines are flat", f->key,
                *p == '{' ? "object" : "array");
        } else {
            char *end;
            f->kind = V_NUMBER;
            f->num = strtod(p, &end);
            if (end == p || !strchr("-0123456789", *p))
                BAD("\"%s\" has no value at column %d", f->key, (int)(p - s) + 1);
            q = end;
        }
        if (o->n < FIELD_MAX) o->n++;
        p = skip_ws(q);
        if (*p == ',') {
            p = skip_ws(p + 1);
            continue;
        }
        if (*p == '}') break;
        BAD("expected ',' or '}' at column %d", (int)(p - s) + 1);
    }
    if (*skip_ws(p + 1)) BAD("text after '}' at column %d", (int)(skip_ws(p + 1) - s) + 1);
#undef BAD
    return true;
}

static const field *find(const object *o, const char *key) {
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->f[i].key, key) == 0) return &o->f[i];
    return NULL;
}

/* A number field, NAN when absent or null. */
static double number_or_nan(const object *o, const char *key) {
    const field *f = find(o, key);
    return f && f->kind == V_NUMBER ? f->num : NAN;
}

/* ---- the MoE load -------------------------------------------------------------------------- */

/* One array of counts at p (on its '['): non-negative integers below 2^32. Stores the first
 * `cap` into out and counts them all in *n. The end past ']', or NULL with why[]. */
static const char *parse_counts(const char *p, uint32_t *out, int cap, int *n, const char *what,
                                char *why, size_t whylen) {
    *n = 0;
    if (*p != '[') return snprintf(why, whylen, "%s must be an array of counts", what), NULL;
    p = skip_ws(p + 1);
    if (*p == ']') return p + 1;
    for (;;) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || !strchr("-0123456789", *p))
            return snprintf(why, whylen, "%s holds something other than a count", what), NULL;
        if (!(v >= 0 && v < 4294967296.0 && v == floor(v)))
            return snprintf(why, whylen, "%s holds %g: counts are non-negative integers", what, v),
                   NULL;
        if (*n < cap) out[*n] = (uint32_t)v;
        if (*n < INT_MAX) (*n)++;
        p = skip_ws(end);
        if (*p == ']') return p + 1;
        if (*p != ',') return snprintf(why, whylen, "%s: expected ',' or ']'", what), NULL;
        p = skip_ws(p + 1);
    }
}

static void *grow(void *p, size_t bytes);

/* Room for `need` counts in m->moe_counts. */
static void reserve_counts(run_metrics *m, size_t *cap, size_t need) {
    if (need <= *cap) return;
    while (*cap < need) *cap = *cap ? 2 * *cap : 4096;
    m->moe_counts = grow(m->moe_counts, *cap * sizeof *m->moe_counts);
}

/* A step line's moe_tokens and moe_dropped appended to m->moe_counts (run_metrics.h: L*E
 * tokens, then L dropped, zeros when the line has none) and m->moe; false with why[] when they
 * break a rule of run_metrics.h. *has_dropped: the line gave moe_dropped. */
static bool append_moe(run_metrics *m, size_t *cap, int *cap_moe, const object *o, int line,
                       bool *has_dropped, char *why, size_t whylen) {
    const field *tok = find(o, "moe_tokens"), *drop = find(o, "moe_dropped");
    *has_dropped = false;
    if (!tok) {
        if (drop) snprintf(why, whylen, "\"moe_dropped\" without \"moe_tokens\"");
        return !drop;
    }
    if (tok->kind != V_ARRAY || (drop && drop->kind != V_ARRAY)) {
        snprintf(why, whylen, "\"%s\" must be an array",
                 tok->kind != V_ARRAY ? "moe_tokens" : "moe_dropped");
        return false;
    }
    const bool first = m->nmoe == 0;
    const int L0 = m->moe_layers, E0 = m->moe_experts;
    const size_t base = first ? 0 : (size_t)m->nmoe * ((size_t)L0 * (size_t)E0 + (size_t)L0);
    int L = 0, E = E0;
    const char *p = skip_ws(tok->at + 1); /* past the outer '[' */
    while (*p != ']') {
        if (L == RUN_METRICS_MAX_MOE_LAYERS)
            return snprintf(why, whylen, "\"moe_tokens\" has more than %d layers",
                            RUN_METRICS_MAX_MOE_LAYERS),
                   false;
        const int cap_e = L == 0 && first ? RUN_METRICS_MAX_MOE_EXPERTS : E;
        reserve_counts(m, cap, base + (size_t)L * (size_t)cap_e + (size_t)cap_e);
        char what[64];
        snprintf(what, sizeof what, "layer %d of \"moe_tokens\"", L);
        int n;
        p = parse_counts(p, m->moe_counts + base + (size_t)L * (size_t)cap_e, cap_e, &n, what, why,
                         whylen);
        if (!p) return false;
        if (L == 0 && first) {
            if (n < 1 || n > RUN_METRICS_MAX_MOE_EXPERTS)
                return snprintf(why, whylen, "layer 0 of \"moe_tokens\" has %d experts (1 to %d)",
                                n, RUN_METRICS_MAX_MOE_EXPERTS),
                       false;
            E = n;
        } else if (n != E) {
            return snprintf(why, whylen,
                            "layer %d of \"moe_tokens\" has %d experts, %s has %d (ragged)", L, n,
                            first ? "layer 0" : "the first MoE line", E),
                   false;
        }
        L++;
        p = skip_ws(p);
        if (*p == ',') p = skip_ws(p + 1);
        else if (*p != ']') return snprintf(why, whylen, "\"moe_tokens\" must be arrays"), false;
    }
    if (L == 0) return snprintf(why, whylen, "\"moe_tokens\" has no layers"), false;
    if (!first && L != L0)
        return snprintf(why, whylen, "\"moe_tokens\" has %d layers, the first MoE line had %d", L,
                        L0),
               false;
    const size_t LE = (size_t)L * (size_t)E;
    reserve_counts(m, cap, base + LE + (size_t)L);
    uint32_t *dropped = m->moe_counts + base + LE;
    memset(dropped, 0, (size_t)L * sizeof *dropped);
    if (drop) {
        int n;
        if (!parse_counts(drop->at, dropped, L, &n, "\"moe_dropped\"", why, whylen)) return false;
        if (n != L)
            return snprintf(why, whylen, "\"moe_dropped\" has %d counts for %d layers", n, L),
                   false;
        *has_dropped = true;
    }
    m->moe_layers = L, m->moe_experts = E;
    if (m->nmoe == *cap_moe) {
        *cap_moe = *cap_moe ? 2 * *cap_moe : 64;
        m->moe = grow(m->moe, (size_t)*cap_moe * sizeof *m->moe);
    }
    /* The views are set when the file is read: the buffer still moves. */
    m->moe[m->nmoe++] = (run_metrics_moe){m->steps[line].step, line, NULL, NULL};
    return true;
}

/* ---- the layout label --------------------------------------------------------------------- */

/* A layout size from config.json: an integer in [1, 2^20] (trident groups' bound), else false
 * (a forged file's 1e94 must not reach an int). */
static bool layout_size(const field *f, int *out) {
    if (!f || f->kind != V_NUMBER || !(f->num >= 1 && f->num <= (1 << 20)) ||
        f->num != floor(f->num))
        return false;
    *out = (int)f->num;
    return true;
}

bool run_metrics_layout_label(const char *config_json, char *buf, size_t cap) {
    object o;
    char why[128];
    buf[0] = 0;
    if (!config_json || !parse_object(config_json, &o, why, sizeof why)) return false;
    const field *tp = find(&o, "tensor_model_parallel_size"),
                *pp = find(&o, "pipeline_model_parallel_size"),
                *dp = find(&o, "data_parallel_size");
    int t, p, d;
    if (!layout_size(tp, &t) || !layout_size(pp, &p) || !layout_size(dp, &d)) return false;
    int c = 1, e = 1; /* context and expert parallel sizes: absent before they existed */
    if (!layout_size(find(&o, "context_parallel_size"), &c)) c = 1;
    if (!layout_size(find(&o, "expert_model_parallel_size"), &e)) e = 1;
    int n;
    if (t == 1 && p == 1 && d == 1 && c == 1) n = snprintf(buf, cap, "serial");
    else if (c > 1) n = snprintf(buf, cap, "tp%d×cp%d×pp%d×dp%d", t, c, p, d);
    else n = snprintf(buf, cap, "tp%d×pp%d×dp%d", t, p, d);
    if (e > 1 && n >= 0 && (size_t)n < cap) n += snprintf(buf + n, cap - (size_t)n, " ep%d", e);
    const field *sched = find(&o, "pipeline_schedule"), *vpp = find(&o, "virtual_pipeline_size");
    if (p > 1 && sched && sched->kind == V_STRING && n >= 0 && (size_t)n < cap) {
        n += snprintf(buf + n, cap - (size_t)n, ", %s", sched->str);
        int v;
        if (layout_size(vpp, &v) && v > 1 && (size_t)n < cap)
            n += snprintf(buf + n, cap - (size_t)n, " v%d", v);
    }
    const field *zero = find(&o, "use_distributed_optimizer"), *prec = find(&o, "precision");
    const field *sp = find(&o, "sequence_parallel");
    if (sp && sp->kind == V_BOOL && sp->num == 1 && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, ", SP");
    if (zero && zero->kind == V_BOOL && zero->num == 1 && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, ", ZeRO");
    if (prec && prec->kind == V_STRING && strcmp(prec->str, "fp32") != 0 && n >= 0 &&
        (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, ", %s", prec->str);
    return true;
}

/* RUN_DIR/config.json, else the header of RUN_DIR/trace/rank0.trace; "" when neither. */
static void read_layout(run_metrics *m) {
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", m->dir);
    char why[256];
    size_t n;
    char *text = (char *)file_read_bounded(path, 1 << 20, &n, NULL, why, sizeof why);
    bool labelled = text && run_metrics_layout_label(text, m->layout, sizeof m->layout);
    free(text);
    if (labelled) return;
    snprintf(path, sizeof path, "%s/trace/rank0.trace", m->dir);
    char err[512];
    trace_file *tf = trace_file_read(path, err, sizeof err);
    if (!tf) return;
    run_metrics_layout_label(trace_file_header(tf)->config_json, m->layout, sizeof m->layout);
    trace_file_free(tf);
}

/* ---- the file ------------------------------------------------------------------------------ */

void run_metrics_free(run_metrics *m) {
    if (!m) return;
    free(m->steps);
    free(m->evals);
    free(m->moe);
    free(m->moe_counts);
    free(m);
}

static void *grow(void *p, size_t bytes) {
    void *q = realloc(p, bytes);
    CHECK(q, "out of memory reading metrics.jsonl");
    return q;
}

/* "step" of a step or eval line: a non-negative integer, else false with why[]. */
static bool step_of(const object *o, int *step, char *why, size_t whylen) {
    const field *s = find(o, "step");
    if (!s) return snprintf(why, whylen, "a loss without a \"step\""), false;
    if (s->kind != V_NUMBER || s->num < 0 || s->num > 2e9 || s->num != floor(s->num))
        return snprintf(why, whylen, "\"step\" must be a non-negative integer"), false;
    *step = (int)s->num;
    return true;
}

/* Appends one line's record: a training step (it has "loss") or an evaluation ("eval_loss"). */
static void append_record(run_metrics *m, int *cap_s, int *cap_e, const object *o,
                          const field *loss, const field *eval, int step) {
    if (loss) {
        if (m->nsteps == *cap_s) {
            *cap_s = *cap_s ? 2 * *cap_s : 64;
            m->steps = grow(m->steps, (size_t)*cap_s * sizeof *m->steps);
        }
        double g = number_or_nan(o, "grad_norm");
        m->steps[m->nsteps++] = (run_metrics_step){
            .step = step,
            .loss = loss->num,
            .lr = number_or_nan(o, "lr"),
            .grad_norm = g < 0 ? NAN : g,
            .tokens_per_sec = number_or_nan(o, "tokens_per_sec"),
            .model_flops_per_s = number_or_nan(o, "model_flops_per_s"),
            .mfu = number_or_nan(o, "mfu"),
            .moe_aux_loss = number_or_nan(o, "moe_aux_loss"),
        };
    } else {
        if (m->nevals == *cap_e) {
            *cap_e = *cap_e ? 2 * *cap_e : 16;
            m->evals = grow(m->evals, (size_t)*cap_e * sizeof *m->evals);
        }
        m->evals[m->nevals++] = (run_metrics_eval){step, eval->num};
    }
}

/* The growing arrays of a file being read, and where the reading is. */
typedef struct {
    int cap_s, cap_e, cap_moe, lineno;
    size_t cap_counts;
    bool *dropped_given; /* (cap_moe) whether MoE line i gave moe_dropped */
} metrics_reader;

/* One line: a training step (with its MoE load) or an evaluation appended; a blank line or a
 * line of another kind skipped. False with the reason in why[] for a line that breaks a rule. */
static bool read_line(run_metrics *m, metrics_reader *rd, const char *line, char *why,
                      size_t whylen) {
    if (*skip_ws(line) == 0) return true; /* blank */
    object o;
    char reason[256];
    if (!parse_object(line, &o, reason, sizeof reason))
        return snprintf(why, whylen, "not a flat JSON object: %s", reason), false;
    const field *loss = find(&o, "loss"), *eval = find(&o, "eval_loss");
    if (!loss && !eval) return true; /* a line of another kind */
    int step;
    if (!step_of(&o, &step, reason, sizeof reason))
        return snprintf(why, whylen, "%s", reason), false;
    const field *v = loss ? loss : eval;
    if (v->kind != V_NUMBER) return snprintf(why, whylen, "\"%s\" must be a number", v->key), false;
    append_record(m, &rd->cap_s, &rd->cap_e, &o, loss, eval, step);
    if (!loss) return true;
    const int had = m->nmoe;
    bool has_dropped;
    if (!append_moe(m, &rd->cap_counts, &rd->cap_moe, &o, m->nsteps - 1, &has_dropped, reason,
                    sizeof reason))
        return snprintf(why, whylen, "%s", reason), false;
    if (m->nmoe > had) {
        rd->dropped_given = grow(rd->dropped_given,
                                 (size_t)rd->cap_moe * sizeof *rd->dropped_given);
        rd->dropped_given[had] = has_dropped;
    }
    return true;
}

/* Every line of text[0..size), parsed in place, each cut at its newline: the file's bound is
 * theirs (an MoE line of L x E counts is long). False with "PATH:LINE: reason" in err. */
static bool read_lines(run_metrics *m, metrics_reader *rd, char *text, size_t size,
                       const char *path, char *err, size_t errlen) {
    char *at = text, *end = text + size;
    char why[512];
    while (at < end) {
        char *nl = memchr(at, '\n', (size_t)(end - at));
        const char *line = at;
        if (nl) *nl = 0;
        at = nl ? nl + 1 : end;
        rd->lineno++;
        if (!read_line(m, rd, line, why, sizeof why)) {
            snprintf(err, errlen, "%s:%d: %s", path, rd->lineno, why);
            return false;
        }
    }
    return true;
}

/* One buffer, many views: each MoE line's L x E tokens and L dropped counts. */
static void point_moe_views(run_metrics *m, const bool *dropped_given) {
    const size_t per = (size_t)m->moe_layers * (size_t)m->moe_experts + (size_t)m->moe_layers;
    for (int i = 0; i < m->nmoe; i++) {
        m->moe[i].tokens = m->moe_counts + (size_t)i * per;
        m->moe[i].dropped = dropped_given[i] ? m->moe[i].tokens + per - m->moe_layers : NULL;
    }
}

run_metrics *run_metrics_read(const char *run_dir, char *err, size_t errlen) {
    run_metrics *m = callocCheck(1, sizeof *m);
    snprintf(m->dir, sizeof m->dir, "%s", run_dir);
    size_t len = strlen(m->dir);
    while (len > 1 && m->dir[len - 1] == '/') m->dir[--len] = 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", m->dir);
    /* Read whole and bounded (a FIFO or a device planted as metrics.jsonl cannot block or
     * run on: src/core/file_read.h), then parsed line by line from memory. */
    char reason[256];
    size_t size;
    char *text = (char *)file_read_bounded(path, RUN_METRICS_MAX_BYTES, &size, NULL, reason,
                                           sizeof reason);
    if (!text) {
        snprintf(err, errlen, "%s %s: RUN_DIR must be the --run-dir of a finished `trident train`",
                 path, reason);
        run_metrics_free(m);
        return NULL;
    }
    metrics_reader rd = {0};
    bool ok = read_lines(m, &rd, text, size, path, err, errlen);
    free(text);
    if (ok) point_moe_views(m, rd.dropped_given);
    free(rd.dropped_given);
    if (ok && m->nsteps == 0) {
        snprintf(err, errlen, "%s has no training steps (%s): nothing to draw", path,
                 rd.lineno == 0 ? "the file is empty" : "no line with a \"loss\"");
        ok = false;
    }
    if (!ok) {
        run_metrics_free(m);
        return NULL;
    }
    read_layout(m);
    return m;
}
