/* json.c — the JSON writer (see json.h): separators by container layout, the one escaper.
 *
 * Every value goes through begin_value(), which writes what separates it from the previous
 * member of its container:
 *
 *   first member:  LINES "\n" + indent          others: nothing
 *   later members: LINES ",\n" + indent         SPACED ", "      COMPACT ","
 *   after a key:   nothing (the key wrote ":" or ": ")
 *
 * and every container's end writes "\n" + the parent's indent first when it is JSON_LINES.
 */
#include "src/core/json.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/check.h"

static void put(json_writer *w, const char *s, size_t n) {
    if (w->f) {
        fwrite(s, 1, n, w->f);
        return;
    }
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (w->len + n + 1 > cap) cap *= 2;
        char *grown = realloc(w->buf, cap);
        CHECK(grown != NULL, "out of memory growing a JSON document");
        w->buf = grown;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = 0;
}

static void puts_(json_writer *w, const char *s) { put(w, s, strlen(s)); }

static void putf(json_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(json_writer *w, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    CHECK(n >= 0 && (size_t)n < sizeof tmp,
          "a JSON number longer than 63 characters (check the format)");
    put(w, tmp, (size_t)n);
}

static void newline(json_writer *w, int level) {
    put(w, "\n", 1);
    for (int i = 0; i < level * w->indent; i++) put(w, " ", 1);
}

void json_init_file(json_writer *w, FILE *f, int indent) {
    memset(w, 0, sizeof *w);
    w->f = f;
    w->indent = indent;
}

void json_init_buffer(json_writer *w, int indent) {
    memset(w, 0, sizeof *w);
    w->indent = indent;
    put(w, "", 0); /* an empty document is "" */
}

char *json_take(json_writer *w) {
    CHECK(!w->f && w->depth == 0, "json_take: a buffer writer with every container closed");
    if (!w->buf) put(w, "", 0); /* taken twice: an empty document */
    char *s = w->buf;
    int indent = w->indent;
    memset(w, 0, sizeof *w); /* empty again, holding no memory (the next put allocates) */
    w->indent = indent;
    return s;
}

/* The separator before a value or a key (see the top of the file). */
static void begin_value(json_writer *w) {
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth == 0) return;
    json_style st = w->open[w->depth - 1].style;
    bool first = w->open[w->depth - 1].empty;
    w->open[w->depth - 1].empty = false;
    if (!first) puts_(w, st == JSON_SPACED ? ", " : ",");
    if (st == JSON_LINES) newline(w, w->depth);
}

/* A value (scalar or container): in an object only after its key. */
static void value(json_writer *w) {
    CHECK(w->after_key || w->depth == 0 || !w->open[w->depth - 1].object,
          "a JSON object member needs json_key() before its value");
    begin_value(w);
}

static void begin(json_writer *w, json_style style, bool object) {
    value(w);
    CHECK(w->depth < JSON_MAX_DEPTH, "JSON nested deeper than JSON_MAX_DEPTH");
    w->open[w->depth].style = style;
    w->open[w->depth].object = object;
    w->open[w->depth].empty = true;
    w->depth++;
    put(w, object ? "{" : "[", 1);
}

static void end(json_writer *w, bool object) {
    CHECK(w->depth > 0 && w->open[w->depth - 1].object == object && !w->after_key,
          "unbalanced JSON: an end without its begin (or a key without a value)");
    w->depth--;
    if (w->open[w->depth].style == JSON_LINES) newline(w, w->depth);
    put(w, object ? "}" : "]", 1);
}

void json_begin_object(json_writer *w, json_style style) { begin(w, style, true); }
void json_end_object(json_writer *w) { end(w, true); }
void json_begin_array(json_writer *w, json_style style) { begin(w, style, false); }
void json_end_array(json_writer *w) { end(w, false); }

/* s as a JSON string literal (RFC 8259 section 7). */
/* Length of the well-formed UTF-8 sequence at p (1..4), or 0 when p starts none (a stray
 * continuation byte, an overlong form, a surrogate, above U+10FFFF, or cut short). */
static int utf8_length(const unsigned char *p) {
    const unsigned char c = p[0];
    if (c < 0x80) return 1;
    int n;
    unsigned char lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0; /* overlong */
        if (c == 0xED) hi = 0x9F; /* UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90; /* overlong */
        if (c == 0xF4) hi = 0x8F; /* above U+10FFFF */
    } else return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0; /* also stops at the NUL */
    return n;
}

/* A JSON string: quotes, backslashes and control characters escaped, and every byte that is
 * not part of well-formed UTF-8 written as U+FFFD, so the output is always valid JSON
 * whatever bytes a path or a name holds. */
static void escaped(json_writer *w, const char *s) {
    put(w, "\"", 1);
    const char *run = s; /* bytes copied as they are, in one put */
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *esc = NULL;
        char u[8];
        switch (*p) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (*p < 0x20) {
                snprintf(u, sizeof u, "\\u%04x", *p);
                esc = u;
            } else if (*p >= 0x80) {
                const int n = utf8_length(p);
                if (n > 1) {
                    p += n - 1; /* well formed: copied as it is */
                    continue;
                }
                esc = "\\ufffd";
            }
        }
        if (!esc) continue;
        put(w, run, (size_t)((const char *)p - run));
        puts_(w, esc);
        run = (const char *)p + 1;
    }
    puts_(w, run);
    put(w, "\"", 1);
}

void json_key(json_writer *w, const char *key) {
    CHECK(w->depth > 0 && w->open[w->depth - 1].object && !w->after_key,
          "json_key outside an object (or two keys in a row)");
    begin_value(w);
    escaped(w, key);
    puts_(w, w->open[w->depth - 1].style == JSON_COMPACT ? ":" : ": ");
    w->after_key = true;
}

void json_string(json_writer *w, const char *s) {
    value(w);
    if (s) escaped(w, s);
    else puts_(w, "null");
}

void json_int(json_writer *w, long long v) {
    value(w);
    putf(w, "%lld", v);
}

void json_uint(json_writer *w, unsigned long long v) {
    value(w);
    putf(w, "%llu", v);
}

void json_double(json_writer *w, const char *fmt, double x) {
    CHECK(isfinite(x), "a number that is not finite reached the JSON writer (JSON has no inf or "
                       "NaN): check the value where it is made, or write json_double_or_null");
    value(w);
    putf(w, fmt, x);
}

void json_double_or_null(json_writer *w, const char *fmt, double x) {
    if (isfinite(x)) json_double(w, fmt, x);
    else json_null(w);
}

void json_bool(json_writer *w, bool v) {
    value(w);
    puts_(w, v ? "true" : "false");
}

void json_null(json_writer *w) {
    value(w);
    puts_(w, "null");
}

void json_field_string(json_writer *w, const char *key, const char *s) {
    json_key(w, key);
    json_string(w, s);
}

void json_field_int(json_writer *w, const char *key, long long v) {
    json_key(w, key);
    json_int(w, v);
}

void json_field_uint(json_writer *w, const char *key, unsigned long long v) {
    json_key(w, key);
    json_uint(w, v);
}

void json_field_double(json_writer *w, const char *key, const char *fmt, double x) {
    json_key(w, key);
    json_double(w, fmt, x);
}

void json_field_double_or_null(json_writer *w, const char *key, const char *fmt, double x) {
    json_key(w, key);
    json_double_or_null(w, fmt, x);
}

void json_field_bool(json_writer *w, const char *key, bool v) {
    json_key(w, key);
    json_bool(w, v);
}
