/* json.h — the one JSON writer of Trident: a small streaming writer into a FILE* or a growing
 * buffer, with the one string escaper (RFC 8259).
 *
 *   json_writer w;
 *   json_init_file(&w, f, 0);
 *   json_begin_object(&w, JSON_COMPACT);
 *   json_field_int(&w, "step", 3);           // {"step":3,"loss":2.5,"name":"a\nb"}
 *   json_field_double(&w, "loss", "%.7g", 2.5);
 *   json_field_string(&w, "name", "a\nb");
 *   json_end_object(&w);
 *
 * The writer puts the commas, colons and quotes; callers say what, not how. The layout of each
 * container is chosen when it begins (JSON allows whitespace between any two tokens, so all
 * three are the same document):
 *
 *   JSON_COMPACT  {"a":1,"b":[1,2]}        no spaces (metrics lines, trace events, config)
 *   JSON_SPACED   {"a": 1, "b": [1, 2]}    a space after ':' and ','
 *   JSON_LINES    {                        each member on its own line, indented by the
 *                   "a": 1,                 writer's `indent` spaces per level (0: no indent,
 *                   "b": [1, 2]             e.g. one trace event per line)
 *                 }
 *
 * Strings: '"' and '\\' are escaped, control characters as \b \f \n \r \t or \u00XX; every
 * other byte is copied (UTF-8 passes through). Numbers: json_double takes a printf format for
 * one double ("%.3f", "%g"). JSON cannot express NaN or ±inf, and a bare `inf` makes the whole
 * document unreadable, so json_double refuses them: a value that is not finite is checked where
 * it is made (the trainer stops on a non-finite loss, a checkpoint reader refuses one) and
 * never reaches the writer. A value that may be absent says so: json_double_or_null writes null
 * for one that is not finite (a measurement that does not apply, e.g. an unavailable column).
 * Nesting is limited to JSON_MAX_DEPTH; misuse (a non-finite json_double, a value where a key is
 * due, unbalanced ends) fails loudly through CHECK.
 *
 * Not here: reading JSON (src/ckpt/tensorfile.c and src/trace read what they need), pretty
 * printing beyond the three layouts, and any knowledge of what the documents mean.
 */
#ifndef TRIDENT_CORE_JSON_H
#define TRIDENT_CORE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum { JSON_COMPACT, JSON_SPACED, JSON_LINES } json_style;

enum { JSON_MAX_DEPTH = 16 };

typedef struct {
    FILE *f;   /* where the bytes go, or NULL: into buf */
    char *buf; /* (cap) the document so far, NUL-terminated, when f == NULL */
    size_t len, cap;
    int indent;     /* spaces per level inside JSON_LINES containers */
    int depth;      /* open containers */
    bool after_key; /* a key was written; its value comes next */
    struct {
        json_style style;
        bool object, empty;
    } open[JSON_MAX_DEPTH];
} json_writer;

/* Writes to f (not closed by the writer). */
void json_init_file(json_writer *w, FILE *f, int indent);
/* Writes into a growing buffer; json_take() hands it over. */
void json_init_buffer(json_writer *w, int indent);
/* The buffer's document (malloc'd, NUL-terminated; the caller frees it); the writer is empty
 * again afterwards. Only for json_init_buffer writers, with every container closed. */
char *json_take(json_writer *w);

void json_begin_object(json_writer *w, json_style style);
void json_end_object(json_writer *w);
void json_begin_array(json_writer *w, json_style style);
void json_end_array(json_writer *w);

/* The key of the next value in an object. */
void json_key(json_writer *w, const char *key);

void json_string(json_writer *w, const char *s); /* NULL writes null */
void json_int(json_writer *w, long long v);
void json_uint(json_writer *w, unsigned long long v);
void json_double(json_writer *w, const char *fmt, double x);         /* x finite (CHECK) */
void json_double_or_null(json_writer *w, const char *fmt, double x); /* non-finite: null */
void json_bool(json_writer *w, bool v);
void json_null(json_writer *w);

/* Key and value in one call. */
void json_field_string(json_writer *w, const char *key, const char *s);
void json_field_int(json_writer *w, const char *key, long long v);
void json_field_uint(json_writer *w, const char *key, unsigned long long v);
void json_field_double(json_writer *w, const char *key, const char *fmt, double x);
void json_field_double_or_null(json_writer *w, const char *key, const char *fmt, double x);
void json_field_bool(json_writer *w, const char *key, bool v);

#endif /* TRIDENT_CORE_JSON_H */
