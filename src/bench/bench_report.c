/* bench_report.c — the rows, notes and commands of one `trident bench` run, and their
 * markdown. See bench.h. Nothing here measures anything. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/bench/bench.h"
#include "src/core/check.h"
#include "viz/bench_chart.h"

typedef struct {
    char suite[16];
    char text[512];
} bench_line;

struct bench_report {
    bench_row *rows;
    int nrows, cap_rows;
    bench_line *notes;
    int nnotes, cap_notes;
    bench_line *commands;
    int ncommands, cap_commands;
};

bench_report *bench_report_new(void) { return callocCheck(1, sizeof(bench_report)); }

void bench_report_free(bench_report *r) {
    if (!r) return;
    free(r->rows);
    free(r->notes);
    free(r->commands);
    free(r);
}

/* Grows an array of `size`-byte items to hold one more; returns the new item (zeroed). */
static void *push(void **items, int *n, int *cap, size_t size) {
    if (*n == *cap) {
        int ncap = *cap ? 2 * *cap : 16;
        void *p = realloc(*items, (size_t)ncap * size);
        CHECK(p != NULL, "out of memory growing the benchmark report");
        *items = p;
        *cap = ncap;
    }
    char *item = (char *)*items + (size_t)(*n)++ * size;
    memset(item, 0, size);
    return item;
}

static bench_row *new_row(bench_report *r, const char *suite, const char *metric, double value,
                          const char *fmt) {
    bench_row *row = push((void **)&r->rows, &r->nrows, &r->cap_rows, sizeof *row);
    snprintf(row->suite, sizeof row->suite, "%s", suite);
    snprintf(row->metric, sizeof row->metric, "%s", metric);
    row->value = value;
    if (isnan(value)) snprintf(row->shown, sizeof row->shown, "n/a");
    else snprintf(row->shown, sizeof row->shown, fmt, value);
    return row;
}

static void set_target(bench_row *row, const char *target, double score) {
    snprintf(row->target, sizeof row->target, "%s", target);
    row->score = isnan(row->value) ? 0.0 : score;
    row->verdict = row->score >= 1.0 ? BENCH_PASS : BENCH_MISS;
}

void bench_row_min(bench_report *r, const char *suite, const char *metric, double value,
                   const char *fmt, double min) {
    bench_row *row = new_row(r, suite, metric, value, fmt);
    char t[48], b[32];
    snprintf(b, sizeof b, fmt, min);
    snprintf(t, sizeof t, "≥ %s", b);
    set_target(row, t, value / min);
}

void bench_row_max(bench_report *r, const char *suite, const char *metric, double value,
                   const char *fmt, double max) {
    bench_row *row = new_row(r, suite, metric, value, fmt);
    char t[48], b[32];
    snprintf(b, sizeof b, fmt, max);
    snprintf(t, sizeof t, "≤ %s", b);
    set_target(row, t, value > 0 ? max / value : INFINITY);
}

void bench_row_within(bench_report *r, const char *suite, const char *metric, double value,
                      const char *fmt, double want, double tol, const char *target_text) {
    bench_row *row = new_row(r, suite, metric, value, fmt);
    set_target(row, target_text, 2.0 - fabs(value - want) / tol);
}

void bench_row_info(bench_report *r, const char *suite, const char *metric, double value,
                    const char *shown_fmt) {
    bench_row *row = new_row(r, suite, metric, value, shown_fmt);
    snprintf(row->target, sizeof row->target, "—");
    row->score = NAN;
    row->verdict = BENCH_INFO;
}

void bench_note(bench_report *r, const char *suite, const char *fmt, ...) {
    bench_line *l = push((void **)&r->notes, &r->nnotes, &r->cap_notes, sizeof *l);
    snprintf(l->suite, sizeof l->suite, "%s", suite);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->text, sizeof l->text, fmt, ap);
    va_end(ap);
}

void bench_command(bench_report *r, const char *fmt, ...) {
    bench_line *l = push((void **)&r->commands, &r->ncommands, &r->cap_commands, sizeof *l);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->text, sizeof l->text, fmt, ap);
    va_end(ap);
}

int bench_report_num_rows(const bench_report *r) { return r->nrows; }
const bench_row *bench_report_row(const bench_report *r, int i) { return &r->rows[i]; }

int bench_report_misses(const bench_report *r) {
    int n = 0;
    for (int i = 0; i < r->nrows; i++) n += r->rows[i].verdict == BENCH_MISS;
    return n;
}

static const char *verdict_name(bench_verdict v) {
    return v == BENCH_PASS ? "PASS" : v == BENCH_MISS ? "MISS" : "info";
}

void bench_report_write_markdown(const bench_report *r, const char *title, FILE *f) {
    fprintf(f, "## %s\n\n", title);
    fprintf(f, "| suite | ratio measured side by side | value | target | verdict |\n");
    fprintf(f, "|---|---|---:|---|---|\n");
    for (int i = 0; i < r->nrows; i++) {
        const bench_row *row = &r->rows[i];
        fprintf(f, "| %s | %s | %s | %s | %s |\n", row->suite, row->metric, row->shown, row->target,
                verdict_name(row->verdict));
    }
    int pass = 0, miss = 0;
    for (int i = 0; i < r->nrows; i++) {
        pass += r->rows[i].verdict == BENCH_PASS;
        miss += r->rows[i].verdict == BENCH_MISS;
    }
    fprintf(f, "\n%d PASS, %d MISS, %d info\n", pass, miss, r->nrows - pass - miss);
    /* Notes, grouped by suite in the order the suites first appear. */
    for (int i = 0; i < r->nnotes; i++) {
        bool first = true;
        for (int j = 0; j < i; j++) first &= strcmp(r->notes[j].suite, r->notes[i].suite) != 0;
        if (!first) continue;
        fprintf(f, "\n### %s\n\n", r->notes[i].suite);
        for (int j = i; j < r->nnotes; j++)
            if (strcmp(r->notes[j].suite, r->notes[i].suite) == 0)
                fprintf(f, "- %s\n", r->notes[j].text);
    }
    if (r->ncommands) {
        fprintf(f, "\n### commands that measured it\n\n```\n");
        for (int i = 0; i < r->ncommands; i++) fprintf(f, "%s\n", r->commands[i].text);
        fprintf(f, "```\n");
    }
}

void bench_report_draw(const bench_report *r, const char *title, const char *path) {
    viz_bench_bar *bars = callocCheck((size_t)r->nrows + 1, sizeof *bars);
    char(*labels)[200] = callocCheck((size_t)r->nrows + 1, sizeof *labels);
    for (int i = 0; i < r->nrows; i++) {
        const bench_row *row = &r->rows[i];
        snprintf(labels[i], sizeof labels[i], "%s: %s", row->suite, row->metric);
        bars[i] = (viz_bench_bar){labels[i], row->shown, row->target, row->score};
    }
    viz_bench_chart_draw(bars, r->nrows, title, path);
    free(labels);
    free(bars);
}
