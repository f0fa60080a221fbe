/* flags.c — see flags.h. */
#include "src/core/flags.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "src/core/check.h"
#include "src/core/checked.h"

static const char *type_word(flag_type t) {
    switch (t) {
    case FLAG_INT: return "N";
    case FLAG_FLOAT: return "X";
    case FLAG_STRING: return "S";
    case FLAG_BOOL: return "";
    case FLAG_CHOICE: return "C";
    }
    return "";
}

void flags_print_help(const char *cmd, const char *usage, const flag_spec *specs, int nspecs) {
    printf("%s\n\nFlags of 'trident %s':\n", usage, cmd);
    for (int i = 0; i < nspecs; i++) {
        const flag_spec *s = &specs[i];
        char left[96];
        if (s->type == FLAG_CHOICE) snprintf(left, sizeof left, "%s %s", s->name, s->choices);
        else
            snprintf(left, sizeof left, "%s%s%s", s->name, s->type == FLAG_BOOL ? "" : " ",
                     type_word(s->type));
        printf("  %-44s %s", left, s->help);
        switch (s->type) {
        case FLAG_INT: printf(" (default %d)", *(int *)s->dst); break;
        case FLAG_FLOAT: printf(" (default %g)", (double)*(float *)s->dst); break;
        case FLAG_STRING:
        case FLAG_CHOICE:
            if (*(const char **)s->dst) printf(" (default %s)", *(const char **)s->dst);
            break;
        case FLAG_BOOL: break;
        }
        printf("\n");
    }
    printf("  %-44s %s\n", "--help", "print this help and exit");
}

static bool choice_ok(const char *choices, const char *v) {
    size_t n = strlen(v);
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return true;
        if (!bar) break;
        p = bar + 1;
    }
    return false;
}

static void set_value(const char *cmd, const flag_spec *s, const char *v) {
    switch (s->type) {
    case FLAG_INT: {
        int64_t x = 0;
        const checked_status st = checked_parse_i64(v, NULL, INT_MIN, INT_MAX, &x);
        if (st == CHECKED_NOT_INTEGER)
            die("trident %s: %s expects an integer, got '%s'", cmd, s->name, v);
        if (st != CHECKED_OK)
            die("trident %s: %s expects an integer, got '%s': it is outside %d to %d, the "
                "range the setting is kept in",
                cmd, s->name, v, INT_MIN, INT_MAX);
        *(int *)s->dst = (int)x;
        break;
    }
    case FLAG_FLOAT: {
        char *end = NULL;
        errno = 0;
        const double x = strtod(v, &end);
        float f = 0;
        checked_status st = end == v || *end ? CHECKED_NOT_INTEGER : checked_to_float(x, &f);
        if (st == CHECKED_OK && errno == ERANGE && x == 0) st = CHECKED_BECOMES_ZERO; /* 1e-400 */
        if (st == CHECKED_NOT_INTEGER || st == CHECKED_NOT_FINITE)
            die("trident %s: %s expects a finite number, got '%s'", cmd, s->name, v);
        if (st == CHECKED_OUT_OF_RANGE) /* would be inf in the float it is kept in */
            die("trident %s: %s %s is beyond single precision (at most %g)", cmd, s->name, v,
                (double)FLT_MAX);
        if (st == CHECKED_BECOMES_ZERO) /* 0 often means off, or forever */
            die("trident %s: %s %s is not 0 but would become 0 in single precision, the "
                "setting's type (give 0, or a magnitude of at least %g)",
                cmd, s->name, v, (double)FLT_TRUE_MIN);
        *(float *)s->dst = f;
        break;
    }
    case FLAG_STRING:
        if (!v[0]) die("trident %s: %s expects a non-empty value", cmd, s->name);
        *(const char **)s->dst = v;
        break;
    case FLAG_CHOICE:
        if (!choice_ok(s->choices, v))
            die("trident %s: %s must be one of %s, got '%s'", cmd, s->name, s->choices, v);
        *(const char **)s->dst = v;
        break;
    case FLAG_BOOL:
        if (strcmp(v, "1") == 0 || strcmp(v, "true") == 0) *(bool *)s->dst = true;
        else if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0) *(bool *)s->dst = false;
        else die("trident %s: %s takes no value (or true/false), got '%s'", cmd, s->name, v);
        break;
    }
}

int flags_parse(const char *cmd, const char *usage, const flag_spec *specs, int nspecs, int argc,
                char **argv, const char **positional, int max_positional) {
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            flags_print_help(cmd, usage, specs, nspecs);
            fatal_exit(0);
        }
        if (strncmp(a, "--", 2) != 0 && strcmp(a, "-o") != 0) {
            if (npos >= max_positional)
                die("trident %s: unexpected argument '%s' (see trident %s --help)", cmd, a, cmd);
            positional[npos++] = a;
            continue;
        }
        /* "-o" is the one short flag: an alias of "--output". */
        char name[128];
        const char *eq = strchr(a, '=');
        size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        if (nlen >= sizeof name) nlen = sizeof name - 1;
        memcpy(name, a, nlen);
        name[nlen] = 0;
        if (strcmp(name, "-o") == 0) strcpy(name, "--output");
        const flag_spec *s = NULL;
        for (int k = 0; k < nspecs; k++)
            if (strcmp(specs[k].name, name) == 0) s = &specs[k];
        if (!s) die("trident %s: unknown flag '%s' (see trident %s --help)", cmd, name, cmd);
        if (s->type == FLAG_BOOL && !eq) {
            *(bool *)s->dst = true;
            continue;
        }
        const char *v = eq ? eq + 1 : NULL;
        if (!v) {
            if (i + 1 >= argc) die("trident %s: %s needs a value", cmd, name);
            v = argv[++i];
        }
        set_value(cmd, s, v);
    }
    return npos;
}

bool path_has_ext(const char *path, const char *ext) {
    size_t n = strlen(path), e = strlen(ext);
    return n >= e && strcasecmp(path + n - e, ext) == 0;
}
