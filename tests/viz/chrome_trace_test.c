/* chrome_trace_test.c — the Perfetto export: valid JSON (checked by a small recursive-descent
 * parser), one named process per rank, a flow arrow from every matched send to its receive,
 * memory counters, and several runs in one file. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/trace/trace.h"
#include "tests/support/testing.h"
#include "tests/viz/pipeline_fixture.h"
#include "viz/chrome_trace.h"

/* ---- a JSON validity checker (RFC 8259 grammar, no semantics) ---------------------------- */

typedef struct {
    const char *p;
    int depth;
} js;

static void ws(js *j) {
    while (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t') j->p++;
}
static bool value(js *j);

static bool string(js *j) {
    if (*j->p != '"') return false;
    for (j->p++; *j->p != '"'; j->p++) {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20) return false;
        if (c == '\\') {
            j->p++;
            if (*j->p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)j->p[i])) return false;
                j->p += 4;
            } else if (!strchr("\"\\/bfnrt", *j->p) || !*j->p) {
                return false;
            }
        }
    }
    j->p++;
    return true;
}

static bool number(js *j) {
    const char *s = j->p;
    if (*j->p == '-') j->p++;
    if (*j->p == '0') j->p++;
    else if (isdigit((unsigned char)*j->p))
        while (isdigit((unsigned char)*j->p)) j->p++;
    else return false;
    if (*j->p == '.') {
        j->p++;
        if (!isdigit((unsigned char)*j->p)) return false;
        while (isdigit((unsigned char)*j->p)) j->p++;
    }
    if (*j->p == 'e' || *j->p == 'E') {
        j->p++;
        if (*j->p == '+' || *j->p == '-') j->p++;
        if (!isdigit((unsigned char)*j->p)) return false;
        while (isdigit((unsigned char)*j->p)) j->p++;
    }
    return j->p > s;
}

static bool seq(js *j, char close, bool object) {
    j->p++;
    if (++j->depth > 64) return false;
    ws(j);
    if (*j->p == close) {
        j->p++, j->depth--;
        return true;
    }
    for (;;) {
        ws(j);
        if (object) {
            if (!string(j)) return false;
            ws(j);
            if (*j->p++ != ':') return false;
        }
        if (!value(j)) return false;
        ws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p == close) {
            j->p++, j->depth--;
            return true;
        }
        return false;
    }
}

static bool value(js *j) {
    ws(j);
    switch (*j->p) {
    case '{': return seq(j, '}', true);
    case '[': return seq(j, ']', false);
    case '"': return string(j);
    case 't': return strncmp(j->p, "true", 4) == 0 ? (j->p += 4, true) : false;
    case 'f': return strncmp(j->p, "false", 5) == 0 ? (j->p += 5, true) : false;
    case 'n': return strncmp(j->p, "null", 4) == 0 ? (j->p += 4, true) : false;
    default: return number(j);
    }
}

static bool json_valid(const char *text) {
    js j = {text, 0};
    if (!value(&j)) return false;
    ws(&j);
    return *j.p == 0;
}

static void checker_rejects_broken_json(void **state) {
    (void)state;
    assert_true(json_valid("{\"a\":[1,-2.5e3,true,null,\"x\\n\\u00e9\"],\"b\":{}}"));
    assert_false(json_valid("{\"a\":1,}"));
    assert_false(json_valid("{\"a\" 1}"));
    assert_false(json_valid("[1 2]"));
    assert_false(json_valid("\"tab\there\""));
    assert_false(json_valid("{\"a\":01}"));
    assert_false(json_valid("[1]]"));
}

/* ---- the export ------------------------------------------------------------------------------ */

static char *export_runs(trace_run **runs, const char **names, int n, const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/out.json", dir);
    FILE *f = fopen(path, "w+b");
    assert_non_null(f);
    viz_chrome_trace_write(f, (const trace_run *const *)runs, names, n);
    long len = ftell(f);
    rewind(f);
    char *text = malloc((size_t)len + 1);
    assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
    text[len] = 0;
    fclose(f);
    return text;
}

/* The value of "key":N inside one line (events are one per line), or -1. */
static long long field(const char *line, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    return p ? atoll(p + strlen(pat)) : -1;
}

static void every_send_flows_to_its_receive_and_every_rank_is_named(void **state) {
    (void)state;
    const char *dir = test_tmpdir("chrome");
    fixture_run cfg = fixture_defaults("1f1b", 2, 4, 1);
    cfg.tp = 2; /* 4 ranks */
    fixture_write_run(dir, &cfg);
    char err[1024];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    assert_int_equal(run->unmatched, 0);
    const char *names[1] = {"x"};
    char *text = export_runs(&run, names, 1, dir);
    if (!json_valid(text)) fail_msg("the export is not valid JSON");

    /* One process per rank, named with its coordinates. */
    for (int k = 0; k < run->nranks; k++) {
        const trace_header *h = trace_file_header(run->ranks[k]);
        char want[160];
        snprintf(want, sizeof want,
                 "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":"
                 "\"rank %d (tp %d, pp %d, dp %d)\"}}",
                 k, k, h->tp_rank, h->pp_rank, h->dp_rank);
        if (!strstr(text, want)) fail_msg("no process named for rank %d", k);
    }
    assert_non_null(strstr(text, "\"name\":\"thread_name\",\"args\":{\"name\":\"p2p send\"}"));
    assert_non_null(strstr(text, "\"name\":\"thread_name\",\"args\":{\"name\":\"collectives\"}"));

    /* Flows: each "s" id appears in exactly one "f", on the receiving rank's recv thread. */
    int nflows = run->nflows;
    int *starts = calloc((size_t)nflows, sizeof *starts),
        *finishes = calloc((size_t)nflows, sizeof *finishes);
    int counters = 0, waits = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "\"ph\":\"C\"")) counters++;
        if (strstr(line, "\"name\":\"wait\"")) waits++;
        bool s = strstr(line, "{\"ph\":\"s\"") != NULL, f = strstr(line, "{\"ph\":\"f\"") != NULL;
        if (!s && !f) continue;
        long long id = field(line, "id");
        assert_true(id >= 0 && id < nflows);
        if (s) {
            starts[id]++;
            assert_int_equal(field(line, "tid"), VIZ_CT_TID_SEND);
        } else {
            finishes[id]++;
            assert_int_equal(field(line, "tid"), VIZ_CT_TID_RECV);
            assert_non_null(strstr(line, "\"bp\":\"e\""));
        }
    }
    for (int i = 0; i < nflows; i++)
        if (starts[i] != 1 || finishes[i] != 1)
            fail_msg("flow %d: %d starts, %d finishes", i, starts[i], finishes[i]);
    /* 2 steps x 4 micro-batches x (activation + gradient) x 2 tp ranks. */
    assert_int_equal(nflows, 2 * 4 * 2 * 2);
    assert_true(counters > 0);
    assert_true(waits > 0);
    free(starts);
    free(finishes);
    free(text);
    trace_run_free(run);
}

static void several_runs_share_one_file(void **state) {
    (void)state;
    const char *base = test_tmpdir("chrome2");
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/gpipe", base);
    snprintf(b, sizeof b, "%s/inter", base);
    fixture_run ca = fixture_defaults("gpipe", 2, 2, 1),
                cb = fixture_defaults("interleaved", 2, 2, 2);
    fixture_write_run(a, &ca);
    fixture_write_run(b, &cb);
    char err[1024];
    trace_run *runs[2] = {trace_run_read(a, err, sizeof err), trace_run_read(b, err, sizeof err)};
    assert_non_null(runs[0]);
    assert_non_null(runs[1]);
    const char *names[2] = {"gpipe \"quoted\"", "inter"};
    char *text = export_runs(runs, names, 2, base);
    if (!json_valid(text)) fail_msg("the export of two runs is not valid JSON");
    assert_non_null(strstr(text, "\"gpipe \\\"quoted\\\": rank 1 (tp 0, pp 1, dp 0)\""));
    assert_non_null(strstr(text, "\"inter: rank 0 (tp 0, pp 0, dp 0)\""));
    assert_non_null(strstr(text, "\"forward mb 1 chunk 1\""));
    free(text);
    trace_run_free(runs[0]);
    trace_run_free(runs[1]);
}

/* Every slice says its time class; a message whose transfer took no time has no finite
 * bandwidth, and JSON gets null, never nan or inf. */
static void slices_carry_their_class_and_no_nan_reaches_json(void **state) {
    (void)state;
    const char *dir = test_tmpdir("chrome_null");
    for (int r = 0; r < 2; r++) {
        trace_header h = {0};
        h.rank = r, h.world_size = 2, h.tp = 2, h.pp = 1, h.dp = 1, h.vpp = 1, h.tp_rank = r;
        h.num_microbatches = 1;
        strcpy(h.schedule, "1f1b");
        h.config_json = "{}";
        trace_recorder *t = trace_create(&h, 32);
        trace_record(t, TRACE_STEP, 0, -1, -1, 0, 10e-3);
        trace_record(t, TRACE_FORWARD, 0, 0, 0, 0, 5e-3);
        /* a receive that waits 3 ms and transfers 1 ms; a send of 0 bytes in 0 s */
        if (r == 1) trace_comm(t, TRACE_RECV, "recv", "pp", 0, 64, 0, 5e-3, 8e-3, 9e-3);
        else trace_comm(t, TRACE_SEND, "send", "pp", 1, 0, 0, 8e-3, 8e-3, 8e-3);
        trace_comm_info ci = {.kind = TRACE_COLLECTIVE,
                              .op = "all-reduce",
                              .group = "tp",
                              .label = "g fwd attn",
                              .peer = -1,
                              .tag = -1,
                              .layer = 3,
                              .group_first = 0, /* rank 1 enters last: rank 0 waits */
                              .t_start = (1 + 0.5 * r) * 1e-3,
                              .t_ready = (1 + 0.5 * r) * 1e-3,
                              .t_end = 2e-3,
                              .cpu = -1};
        trace_comm_full(t, &ci);
        char path[4200];
        snprintf(path, sizeof path, "%s/trace/rank%d.trace", dir, r);
        trace_write(t, path);
        trace_destroy(t);
    }
    char err[1024];
    trace_run *run = trace_run_read(dir, err, sizeof err);
    if (!run) fail_msg("%s", err);
    const char *names[1] = {"n"};
    char *text = export_runs(&run, names, 1, dir);
    if (!json_valid(text)) fail_msg("the export is not valid JSON");
    assert_null(strstr(text, "nan"));
    assert_null(strstr(text, "inf"));
    assert_non_null(strstr(text, "\"bandwidth_gbps\":null"));
    /* a student can count the tensor-parallel collectives by operator and layer */
    assert_non_null(strstr(text, "\"label\":\"g fwd attn\",\"layer\":3"));
    int waits = 0, transfers = 0, computes = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, "\"ph\":\"X\"")) continue;
        if (strstr(line, "\"cat\":\"wait\"")) {
            waits++;
            assert_non_null(strstr(line, "\"class\":\"wait\""));
        }
        if (strstr(line, "\"cat\":\"transfer\"")) {
            transfers++;
            assert_non_null(strstr(line, "\"class\":\"transfer\""));
        }
        if (strstr(line, "\"cat\":\"compute\"")) {
            computes++;
            assert_non_null(strstr(line, "\"kind\":\"forward\""));
        }
        if (strstr(line, "\"name\":\"recv ← rank 0\"")) /* 1 ms transfer, 3 ms wait before it */
            assert_non_null(strstr(line, "\"dur\":1000.000"));
    }
    assert_int_equal(waits, 2);     /* the receive and rank 0's all-reduce waited */
    assert_int_equal(transfers, 4); /* the receive, the send, both all-reduces */
    assert_int_equal(computes, 2);
    free(text);
    trace_run_free(run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(checker_rejects_broken_json),
        cmocka_unit_test(every_send_flows_to_its_receive_and_every_rank_is_named),
        cmocka_unit_test(several_runs_share_one_file),
        cmocka_unit_test(slices_carry_their_class_and_no_nan_reaches_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
