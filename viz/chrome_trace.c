/* chrome_trace.c — see chrome_trace.h. The JSON is written by hand: a flat list of events. */
#include "viz/chrome_trace.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

/* A JSON string literal: quotes, backslashes and control characters escaped. */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", f);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* The same escaping into a buffer (without the quotes), for names inside args. */
static void json_esc(char *out, size_t cap, const char *s) {
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && k + 7 < cap; p++) {
        if (*p == '"' || *p == '\\') out[k++] = '\\', out[k++] = (char)*p;
        else if (*p < 0x20) k += (size_t)snprintf(out + k, cap - k, "\\u%04x", *p);
        else out[k++] = (char)*p;
    }
    out[k] = 0;
}

/* A JSON number into buf: "%.3f" of x, or null when x is NaN or infinite (JSON has neither). */
static const char *json_num(char *buf, size_t cap, double x) {
    if (isfinite(x)) snprintf(buf, cap, "%.3f", x);
    else snprintf(buf, cap, "null");
    return buf;
}

typedef struct {
    FILE *f;
    bool first;
} writer;

/* Starts the next element of traceEvents. */
static void next(writer *w) {
    fputs(w->first ? "\n" : ",\n", w->f);
    w->first = false;
}

static void meta(writer *w, int pid, int tid, const char *what, const char *name, int sort) {
    next(w);
    fprintf(w->f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s_name\",\"args\":{\"name\":", pid, tid, what);
    json_str(w->f, name);
    fprintf(w->f, "}},\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s_sort_index\",\"args\":{\"sort_index\":%d}}",
            pid, tid, what, sort);
}

/* A complete slice ("X") from a to b seconds; args is a JSON object body (may be empty).
 * A slice whose times are not finite numbers is left out (it has no place on a time axis). */
static void slice(writer *w, int pid, int tid, const char *name, const char *cat, double a, double b,
                  double t0, const char *args) {
    if (!isfinite(a - t0) || !isfinite(b - a)) return;
    next(w);
    fprintf(w->f, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"name\":", pid, tid);
    json_str(w->f, name);
    fprintf(w->f, ",\"cat\":\"%s\",\"ts\":%.3f,\"dur\":%.3f,\"args\":{%s}}", cat, (a - t0) * 1e6,
            (b - a) * 1e6, args);
}

static double run_start(const trace_run *r) {
    double t0 = 0;
    bool have = false;
    for (int k = 0; k < r->nranks; k++) {
        double off = trace_file_header(r->ranks[k])->clock_offset;
        for (size_t i = 0; i < trace_file_num_events(r->ranks[k]); i++) {
            double t = trace_file_event(r->ranks[k], i)->t_start + off;
            if (!have || t < t0) t0 = t, have = true;
        }
    }
    return t0;
}

static void write_run(writer *w, const trace_run *r, const char *prefix, int run_index) {
    double t0 = run_start(r);
    char name[512], args[768], num[40], num2[40], label[80];
    for (int k = 0; k < r->nranks; k++) {
        const trace_file *tf = r->ranks[k];
        const trace_header *h = trace_file_header(tf);
        int pid = run_index * 100000 + k;
        snprintf(name, sizeof name, "%s%srank %d (tp %d, pp %d, dp %d)", prefix, prefix[0] ? ": " : "",
                 k, h->tp_rank, h->pp_rank, h->dp_rank);
        meta(w, pid, 0, "process", name, pid);
        static const char *const threads[] = {"", "steps", "compute", "p2p send", "p2p recv", "collectives"};
        for (int t = VIZ_CT_TID_STEPS; t <= VIZ_CT_TID_COLL; t++) meta(w, pid, t, "thread", threads[t], t);

        double off = h->clock_offset;
        for (size_t i = 0; i < trace_file_num_events(tf); i++) {
            const trace_event *e = trace_file_event(tf, i);
            if (e->flags & TRACE_OPEN) continue;
            double a = e->t_start + off, m = e->t_ready + off, b = e->t_end + off;
            const char *kn = trace_kind_name(e->kind);
            switch (e->kind) {
            case TRACE_STEP:
                snprintf(name, sizeof name, "step %d", e->step);
                snprintf(args, sizeof args, "\"step\":%d", e->step);
                slice(w, pid, VIZ_CT_TID_STEPS, name, "step", a, b, t0, args);
                break;
            case TRACE_FORWARD:
            case TRACE_BACKWARD:
            case TRACE_OPTIMIZER:
            case TRACE_DATA:
            case TRACE_EVAL:
                if (e->microbatch >= 0 && e->chunk >= 0)
                    snprintf(name, sizeof name, "%s mb %d chunk %d", kn, e->microbatch, e->chunk);
                else if (e->microbatch >= 0)
                    snprintf(name, sizeof name, "%s mb %d", kn, e->microbatch);
                else
                    snprintf(name, sizeof name, "%s", kn);
                snprintf(args, sizeof args,
                         "\"class\":\"compute\",\"kind\":\"%s\",\"step\":%d,\"microbatch\":%d,"
                         "\"chunk\":%d,\"cpu_s\":%s",
                         kn, e->step, e->microbatch, e->chunk,
                         e->cpu >= 0 ? json_num(num, sizeof num, e->cpu) : "null");
                slice(w, pid, VIZ_CT_TID_COMPUTE, name, "compute", a, b, t0, args);
                break;
            case TRACE_SEND:
            case TRACE_RECV: {
                bool send = e->kind == TRACE_SEND;
                int tid = send ? VIZ_CT_TID_SEND : VIZ_CT_TID_RECV;
                char op[80], group[80];
                json_esc(op, sizeof op, trace_file_string(tf, e->op));
                json_esc(group, sizeof group, trace_file_string(tf, e->group));
                snprintf(args, sizeof args,
                         "\"class\":\"wait\",\"kind\":\"%s\",\"peer\":%d,\"tag\":%d,\"bytes\":%llu", kn,
                         e->peer, e->tag, (unsigned long long)e->bytes);
                if (m > a) slice(w, pid, tid, "wait", "wait", a, m, t0, args);
                snprintf(name, sizeof name, send ? "send → rank %d" : "recv ← rank %d", e->peer);
                json_esc(label, sizeof label, trace_file_string(tf, e->label));
                snprintf(args, sizeof args,
                         "\"class\":\"transfer\",\"kind\":\"%s\",\"peer\":%d,\"tag\":%d,\"bytes\":%llu,"
                         "\"op\":\"%s\",\"group\":\"%s\",\"wait_us\":%s,\"bandwidth_gbps\":%s,"
                         "\"label\":\"%s\",\"layer\":%d",
                         kn, e->peer, e->tag, (unsigned long long)e->bytes, op, group,
                         json_num(num, sizeof num, (m - a) * 1e6),
                         json_num(num2, sizeof num2, (double)e->bytes / (b - m) / 1e9), label, e->layer);
                slice(w, pid, tid, name, "transfer", m, b, t0, args);
                int flow = r->flow[k][i];
                if (flow >= 0) { /* the arrow starts in the send's transfer, ends in the receive's */
                    next(w);
                    fprintf(w->f, "{\"ph\":\"%s\",%s\"id\":%lld,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                                  "\"name\":\"p2p\",\"cat\":\"p2p\"}",
                            send ? "s" : "f", send ? "" : "\"bp\":\"e\",",
                            (long long)run_index * 100000000LL + flow, pid, tid, (m - t0) * 1e6);
                }
                break;
            }
            case TRACE_COLLECTIVE:
                snprintf(name, sizeof name, "%s", e->op >= 0 ? trace_file_string(tf, e->op) : "collective");
                char group[80];
                json_esc(group, sizeof group, trace_file_string(tf, e->group));
                snprintf(args, sizeof args, "\"class\":\"wait\",\"kind\":\"collective\",\"group\":\"%s\"",
                         group);
                if (m > a) slice(w, pid, VIZ_CT_TID_COLL, "wait", "wait", a, m, t0, args);
                json_esc(label, sizeof label, trace_file_string(tf, e->label));
                snprintf(args, sizeof args,
                         "\"class\":\"transfer\",\"kind\":\"collective\",\"group\":\"%s\",\"bytes\":%llu,"
                         "\"wait_us\":%s,\"bandwidth_gbps\":%s,\"label\":\"%s\",\"layer\":%d",
                         group, (unsigned long long)e->bytes, json_num(num, sizeof num, (m - a) * 1e6),
                         json_num(num2, sizeof num2, (double)e->bytes / (b - m) / 1e9), label, e->layer);
                slice(w, pid, VIZ_CT_TID_COLL, name, "transfer", m, b, t0, args);
                break;
            case TRACE_MEMORY:
                next(w);
                fprintf(w->f, "{\"ph\":\"C\",\"pid\":%d,\"name\":\"memory\",\"ts\":%.3f,\"args\":{\"bytes\":%llu}}",
                        pid, (a - t0) * 1e6, (unsigned long long)e->bytes);
                break;
            default: break;
            }
        }
    }
}

void viz_chrome_trace_write(FILE *f, const trace_run *const *runs, const char *const *names,
                            int nruns) {
    writer w = {f, true};
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", f);
    for (int r = 0; r < nruns; r++) write_run(&w, runs[r], nruns > 1 ? names[r] : "", r);
    fputs("\n],\"otherData\":{", f);
    for (int r = 0; r < nruns; r++) {
        const trace_header *h = trace_file_header(runs[r]->ranks[0]);
        fprintf(f, "%s\"run%d\":", r ? "," : "", r);
        json_str(f, runs[r]->dir);
        fprintf(f, ",\"schedule%d\":", r);
        json_str(f, h->schedule);
        fprintf(f, ",\"config%d\":", r);
        json_str(f, h->config_json);
    }
    fputs("}}\n", f);
}
