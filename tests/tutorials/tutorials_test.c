/* tutorials_test.c — the tutorials (tutorials/NN-*.md) run as written, so they never rot.
 *
 * What it pins down, page by page and in page order:
 *   - every command of every ```console block runs in a scratch copy of tutorials/ (with
 *     `trident` on PATH and Open MPI set up as tools/mpi_env.sh does) and exits with status 0,
 *     or with the status its block announces in a line `[exit status N]`;
 *   - every expected output line under a command appears in that command's output (stdout
 *     and stderr together, any order; runs of spaces count as one; `...` inside a line
 *     matches anything, a line that is only `...` is skipped);
 *   - every picture a page shows (`![...](images/NAME.png)`) is written again by that page's
 *     own commands: after they ran, the scratch images/NAME.png is a non-empty PNG;
 *   - and it matches the committed tutorials/images/NAME.png, so committed pictures cannot
 *     drift from what the binary draws: byte for byte when a command draws it from numbers
 *     alone (`trident schedule`, `groups`, `memory`, `--draw-zero`: deterministic), the same
 *     width, bit depth and colour type when it draws a measured run (its height follows its
 *     title's lines, which its measured times can lengthen). Every
 *     fresh picture is also left in $TEST_UNDECLARED_OUTPUTS_DIR/images/; with
 *     TRIDENT_UPDATE_IMAGES=1 nothing is compared, and tools/update_tutorial_images.sh copies
 *     them over the committed ones;
 *   - the trace of every traced run written so far (runs/NAME/trace) is causal
 *     (assert_run_trace_causal: no receive before its send, no collective before its last member);
 * and, for the series as a whole:
 *   - tutorials/README.md links every page, and the pages are numbered 01, 02, ... without gaps;
 *   - every committed picture is a PNG under 300 KB that some page shows (no strays);
 *   - every relative link of a page (source files, other pages) names an existing file.
 *
 * The format itself is documented for authors in tests/tutorials/PAGE_FORMAT.md.
 *
 * Not here: checking the pictures' pixels (the viz tests do that) or the numbers' meaning
 * (the equivalence tests do that); this test only keeps the pages true to the program.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/testing.h"

/* PATH_MAX without <limits.h>: that header trips Bazel's inclusion check through @cmocka. */
#define PATH_MAX 4096
#define MAX_PAGES 32
#define MAX_COMMAND_SECONDS 420
#define MAX_IMAGE_BYTES (300 * 1024)
#define OUTPUT_CAP (4u << 20)

/* ------------------------------------------------------------------ pages as data */

typedef struct {
    char *cmd;     /* the shell command, continuation lines joined */
    char **expect; /* expected output lines, trimmed, non-empty */
    int nexpect;
    int want_status; /* 0 unless the block says [exit status N] */
    int line;        /* line of the `$ ` in the page, for messages */
} tut_command;

typedef struct {
    char file[256]; /* "01-groups.md" */
    char *text;
    tut_command *cmds;
    int ncmds;
    char **images; /* "images/NAME.png" as written in the page */
    int nimages;
    char **links; /* other relative link targets, anchors removed */
    int nlinks;
} tut_page;

static tut_page g_pages[MAX_PAGES];
static int g_npages;
static char g_src_dir[PATH_MAX];  /* tutorials/ as the test sees it (runfiles) */
static char g_real_dir[PATH_MAX]; /* tutorials/ in the source tree, for relative links */
static char g_work_dir[PATH_MAX]; /* the scratch copy the commands run in */
static char *g_out;               /* output of the command that ran last */

static char *read_whole(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) ? (long)st.st_size : -1;
}

static bool is_png(const char *path) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char head[8];
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    return got == sizeof head && memcmp(head, sig, sizeof sig) == 0;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

static void push(char ***arr, int *n, const char *s) {
    *arr = realloc(*arr, (size_t)(*n + 1) * sizeof **arr);
    (*arr)[(*n)++] = strdup(s);
}

/* Links `[text](target)` and `![alt](target)` outside code blocks: images/ targets go to
 * images, other relative ones (not http:, not #anchor) to links. */
static void collect_links(tut_page *p, const char *line) {
    for (const char *s = strstr(line, "]("); s; s = strstr(s + 2, "](")) {
        const char *t = s + 2, *e = t;
        while (*e && *e != ')' && *e != ' ') e++;
        char target[1024];
        size_t n = (size_t)(e - t) < sizeof target - 1 ? (size_t)(e - t) : sizeof target - 1;
        memcpy(target, t, n);
        target[n] = 0;
        char *hash = strchr(target, '#');
        if (hash) *hash = 0;
        if (!target[0] || strstr(target, "://") || strncmp(target, "mailto:", 7) == 0) continue;
        if (strncmp(target, "images/", 7) == 0) push(&p->images, &p->nimages, target);
        else push(&p->links, &p->nlinks, target);
    }
}

static void parse_page(tut_page *p) {
    char *text = strdup(p->text);
    bool in_console = false, in_fence = false;
    tut_command *cur = NULL;
    bool continuing = false;
    int lineno = 0;
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        lineno++;
        char *t = trim(line);
        if (strncmp(t, "```", 3) == 0) {
            if (in_fence || in_console) {
                in_fence = in_console = false;
                cur = NULL;
                continuing = false;
            } else if (strcmp(t + 3, "console") == 0) {
                in_console = true;
            } else {
                in_fence = true;
            }
            continue;
        }
        if (in_fence) continue;
        if (!in_console) {
            collect_links(p, line);
            continue;
        }
        if (continuing) {                    /* the previous command line ended with a backslash */
            size_t n = strlen(cur->cmd) - 1; /* drop the backslash and the blanks before it */
            while (n && (cur->cmd[n - 1] == ' ' || cur->cmd[n - 1] == '\t')) n--;
            cur->cmd[n] = 0;
            cur->cmd = realloc(cur->cmd, n + strlen(t) + 2);
            strcat(strcat(cur->cmd, " "), t);
        } else if (strncmp(t, "$ ", 2) == 0) {
            p->cmds = realloc(p->cmds, (size_t)(p->ncmds + 1) * sizeof *p->cmds);
            cur = &p->cmds[p->ncmds++];
            memset(cur, 0, sizeof *cur);
            cur->cmd = strdup(trim(t + 2));
            cur->line = lineno;
        } else {
            if (!*t) continue;
            if (!cur) {
                fprintf(stderr, "%s:%d: output line '%s' comes before any `$ ` command\n", p->file,
                        lineno, t);
                exit(1);
            }
            int status;
            if (sscanf(t, "[exit status %d]", &status) == 1) cur->want_status = status;
            else push(&cur->expect, &cur->nexpect, t);
            continue;
        }
        size_t n = strlen(cur->cmd);
        continuing = n && cur->cmd[n - 1] == '\\';
    }
    free(text);
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const tut_page *)a)->file, ((const tut_page *)b)->file);
}

static bool is_page_name(const char *name) {
    size_t n = strlen(name);
    return n > 6 && name[0] >= '0' && name[0] <= '9' && name[1] >= '0' && name[1] <= '9' &&
           name[2] == '-' && strcmp(name + n - 3, ".md") == 0;
}

/* Finds tutorials/ (runfiles under Bazel, else ./tutorials), reads and parses every page. */
static void load_pages(void) {
    const char *srcdir = getenv("TEST_SRCDIR"), *ws = getenv("TEST_WORKSPACE");
    if (srcdir && ws) snprintf(g_src_dir, sizeof g_src_dir, "%s/%s/tutorials", srcdir, ws);
    else snprintf(g_src_dir, sizeof g_src_dir, "tutorials");
    DIR *d = opendir(g_src_dir);
    if (!d) {
        fprintf(stderr, "cannot open %s (is //tutorials:pages a data dependency?)\n", g_src_dir);
        exit(1);
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!is_page_name(de->d_name)) continue;
        if (g_npages == MAX_PAGES) {
            fprintf(stderr, "more than %d pages: raise MAX_PAGES\n", MAX_PAGES);
            exit(1);
        }
        snprintf(g_pages[g_npages++].file, sizeof g_pages[0].file, "%s", de->d_name);
    }
    closedir(d);
    qsort(g_pages, (size_t)g_npages, sizeof g_pages[0], by_name);
    for (int i = 0; i < g_npages; i++) {
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", g_src_dir, g_pages[i].file);
        g_pages[i].text = read_whole(path, NULL);
        if (!g_pages[i].text) {
            fprintf(stderr, "cannot read %s\n", path);
            exit(1);
        }
    }
    /* The runfiles are symlinks into the source tree: resolve one to find the real folder,
     * where the source files that pages link to live. */
    char readme[PATH_MAX + 16], real[PATH_MAX];
    snprintf(readme, sizeof readme, "%s/README.md", g_src_dir);
    if (realpath(readme, real)) {
        char *slash = strrchr(real, '/');
        if (slash) *slash = 0;
        snprintf(g_real_dir, sizeof g_real_dir, "%s", real);
    }
}

/* ------------------------------------------------------------------ running commands */

static void copy_file(const char *from, const char *to) {
    size_t n;
    char *buf = read_whole(from, &n);
    if (!buf) fail_msg("cannot read %s", from);
    FILE *f = fopen(to, "wb");
    if (!f || fwrite(buf, 1, n, f) != n) fail_msg("cannot write %s", to);
    fclose(f);
    free(buf);
}

/* Scratch copy of tutorials/: the pages and an empty images/ (so every picture a page
 * shows must be drawn again); a bin/ next to it puts the built `trident` on PATH, and a
 * tools/ holds the scripts the pages run as ../tools/NAME. */
static int setup_scratch(void **state) {
    (void)state;
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s", test_tmpdir("tutorials"));
    snprintf(g_work_dir, sizeof g_work_dir, "%s/tutorials", root);
    char path[PATH_MAX + 300], from[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/images", g_work_dir);
    char mk[2 * PATH_MAX];
    snprintf(mk, sizeof mk, "mkdir -p '%s' '%s/bin'", path, root);
    if (system(mk) != 0) return -1;
    for (int i = 0; i < g_npages; i++) {
        snprintf(from, sizeof from, "%s/%s", g_src_dir, g_pages[i].file);
        snprintf(path, sizeof path, "%s/%s", g_work_dir, g_pages[i].file);
        copy_file(from, path);
    }
    snprintf(from, sizeof from, "%s/README.md", g_src_dir);
    snprintf(path, sizeof path, "%s/README.md", g_work_dir);
    copy_file(from, path);
    /* The scripts pages call as ../tools/NAME (page 7: the real text; page 12: the simulated
     * cluster), beside the copy. */
    snprintf(mk, sizeof mk, "mkdir -p '%s/tools'", root);
    if (system(mk) != 0) return -1;
    static const char *const scripts[] = {"fortunes_text.sh", "cluster.sh"};
    for (int i = 0; i < 2; i++) {
        snprintf(from, sizeof from, "%s/../tools/%s", g_src_dir, scripts[i]);
        snprintf(path, sizeof path, "%s/tools/%s", root, scripts[i]);
        copy_file(from, path);
    }
    /* Every picture a page draws passes the label audit (viz/canvas.h): a clipped or unreadable
     * label makes its command exit 3 and the page fail. */
    setenv("TRIDENT_LAYOUT_CHECK", "1", 1);

    char bin[PATH_MAX];
    if (!realpath(test_trident_path(), bin)) return -1;
    snprintf(path, sizeof path, "%s/bin/trident", root);
    if (symlink(bin, path) != 0) return -1;
    const char *old = getenv("PATH");
    char *newpath = malloc(strlen(root) + (old ? strlen(old) : 0) + 16);
    sprintf(newpath, "%s/bin:%s", root, old ? old : "/usr/bin:/bin");
    setenv("PATH", newpath, 1);
    free(newpath);
    test_mpi_setenv(); /* what `source tools/mpi_env.sh` sets for a reader */
    g_out = malloc(OUTPUT_CAP);
    return g_out ? 0 : -1;
}

/* cmd inside single quotes for sh -c */
static char *shell_quote(const char *cmd) {
    char *q = malloc(strlen(cmd) * 4 + 3), *w = q;
    *w++ = '\'';
    for (const char *c = cmd; *c; c++) {
        if (*c == '\'') {
            memcpy(w, "'\\''", 4);
            w += 4;
        } else {
            *w++ = *c;
        }
    }
    *w++ = '\'';
    *w = 0;
    return q;
}

static int run_in_workdir(const char *cmd, double *seconds) {
    char *q = shell_quote(cmd);
    size_t len = strlen(q) + strlen(g_work_dir) + 128;
    char *full = malloc(len);
    snprintf(full, len, "cd '%s' && timeout -k 10 %d sh -c %s < /dev/null", g_work_dir,
             MAX_COMMAND_SECONDS, q);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = run_capture(full, g_out, OUTPUT_CAP);
    clock_gettime(CLOCK_MONOTONIC, &b);
    *seconds = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    free(full);
    free(q);
    return rc;
}

/* ------------------------------------------------------------------ matching */

/* Copy of s with runs of blanks turned into one space and the ends trimmed. */
static void squeeze(char *dst, size_t cap, const char *s, size_t n) {
    size_t k = 0;
    bool blank = true; /* drops leading blanks */
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        char c = s[i] == '\t' || s[i] == '\r' ? ' ' : s[i];
        if (c == ' ') {
            if (!blank) dst[k++] = ' ';
            blank = true;
        } else {
            dst[k++] = c;
            blank = false;
        }
    }
    while (k && dst[k - 1] == ' ') k--;
    dst[k] = 0;
}

/* Does `line` contain the pieces of `pattern` (cut at every "...") in order? */
static bool line_matches(const char *line, const char *pattern) {
    const char *pos = line;
    const char *p = pattern;
    while (*p) {
        const char *dots = strstr(p, "...");
        size_t n = dots ? (size_t)(dots - p) : strlen(p);
        char piece[4096];
        squeeze(piece, sizeof piece, p, n);
        if (piece[0]) {
            const char *hit = strstr(pos, piece);
            if (!hit) return false;
            pos = hit + strlen(piece);
        }
        if (!dots) break;
        p = dots + 3;
    }
    return true;
}

static bool output_has(const char *out, const char *pattern) {
    char line[8192];
    for (const char *s = out; *s;) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        squeeze(line, sizeof line, s, n);
        if (line_matches(line, pattern)) return true;
        if (!e) break;
        s = e + 1;
    }
    return false;
}

/* ------------------------------------------------------------------ committed pictures */

/* The commands that draw a picture from numbers alone (no run, no clock): the same binary
 * draws the same bytes. */
static bool run_independent_command(const char *cmd) {
    static const char *const drawers[] = {"trident schedule ", "trident groups ", "trident memory ",
                                          "--draw-zero "};
    for (size_t i = 0; i < sizeof drawers / sizeof drawers[0]; i++)
        if (strstr(cmd, drawers[i])) return true;
    return false;
}

/* The last command of page p that names the picture `rel` (images/NAME.png), or NULL. */
static const tut_command *command_drawing(const tut_page *p, const char *rel) {
    const tut_command *found = NULL;
    for (int c = 0; c < p->ncmds; c++)
        if (strstr(p->cmds[c].cmd, rel)) found = &p->cmds[c];
    return found;
}

/* A copy of the fresh picture in $TEST_UNDECLARED_OUTPUTS_DIR/images/ (what
 * tools/update_tutorial_images.sh installs); nothing outside Bazel. */
static void keep_fresh_picture(const char *fresh, const char *rel) {
    const char *outs = getenv("TEST_UNDECLARED_OUTPUTS_DIR");
    if (!outs || !*outs) return;
    char dir[PATH_MAX + 16], to[2 * PATH_MAX];
    snprintf(dir, sizeof dir, "%s/images", outs);
    mkdir(dir, 0755);
    snprintf(to, sizeof to, "%s/%s", outs, rel);
    copy_file(fresh, to);
}

/* Does the fresh picture match the committed one (see the file's header)? Prints why not. */
static bool matches_committed(const tut_page *p, const char *rel, const char *fresh) {
    char committed[PATH_MAX + 300];
    snprintf(committed, sizeof committed, "%s/%s", g_src_dir, rel);
    size_t na = 0, nb = 0;
    char *a = read_whole(committed, &na), *b = read_whole(fresh, &nb);
    const tut_command *cmd = command_drawing(p, rel);
    const bool exact = cmd && run_independent_command(cmd->cmd);
    bool same;
    if (!a || !b) same = false;
    else if (exact) same = na == nb && memcmp(a, b, na) == 0;
    else /* signature, IHDR up to the width, depth and colour type: a measured run's title may
          * wrap onto one more line when its times print longer, so the height may differ */
        same = na >= 26 && nb >= 26 && memcmp(a, b, 20) == 0 && memcmp(a + 24, b + 24, 2) == 0;
    if (!same) {
        unsigned wa = 0, ha = 0, wb = 0, hb = 0; /* IHDR: width and height, big-endian */
        for (int i = 0; a && b && na >= 24 && nb >= 24 && i < 4; i++) {
            wa = wa << 8 | (unsigned char)a[16 + i], ha = ha << 8 | (unsigned char)a[20 + i];
            wb = wb << 8 | (unsigned char)b[16 + i], hb = hb << 8 | (unsigned char)b[20 + i];
        }
        fprintf(stderr,
                "%s: the committed tutorials/%s (%u×%u) is not what `%s` draws now (%u×%u): %s; "
                "redraw the committed pictures with `bash tools/update_tutorial_images.sh` "
                "(tests/tutorials/PAGE_FORMAT.md)\n",
                p->file, rel, wa, ha, cmd ? cmd->cmd : "its page", wb, hb,
                exact ? "a picture drawn from numbers alone must be the same bytes"
                      : "a picture of a measured run must have the same width and PNG type");
    }
    free(a);
    free(b);
    return same;
}

/* ------------------------------------------------------------------ the tests */

/* One page: run its commands in order, check what they print and the pictures they draw. */
static void page_runs_as_written(void **state) {
    tut_page *p = (tut_page *)*state;
    char path[PATH_MAX + 300];
    for (int i = 0; i < p->nimages; i++) { /* earlier pages must not stand in for this one */
        snprintf(path, sizeof path, "%s/%s", g_work_dir, p->images[i]);
        unlink(path);
    }
    int failures = 0;
    for (int c = 0; c < p->ncmds; c++) {
        const tut_command *cmd = &p->cmds[c];
        double secs = 0;
        int rc = run_in_workdir(cmd->cmd, &secs);
        printf("  %s: $ %s   (%.1f s)\n", p->file, cmd->cmd, secs);
        fflush(stdout);
        bool shown = false;
        if (rc != cmd->want_status) {
            fprintf(stderr, "%s:%d: `%s` exited with status %d, the page expects %d\n", p->file,
                    cmd->line, cmd->cmd, rc, cmd->want_status);
            failures++;
            shown = true;
        }
        for (int k = 0; k < cmd->nexpect; k++) {
            if (output_has(g_out, cmd->expect[k])) continue;
            fprintf(stderr, "%s:%d: `%s` did not print a line matching\n    %s\n", p->file,
                    cmd->line, cmd->cmd, cmd->expect[k]);
            failures++;
            shown = true;
        }
        if (shown) fprintf(stderr, "---- its output ----\n%s\n--------------------\n", g_out);
    }
    const bool updating = getenv("TRIDENT_UPDATE_IMAGES") && *getenv("TRIDENT_UPDATE_IMAGES");
    for (int i = 0; i < p->nimages; i++) {
        snprintf(path, sizeof path, "%s/%s", g_work_dir, p->images[i]);
        if (file_size(path) > 0 && is_png(path)) {
            keep_fresh_picture(path, p->images[i]);
            if (!updating && !matches_committed(p, p->images[i], path)) failures++;
            continue;
        }
        fprintf(stderr, "%s: shows %s but its commands did not write it as a PNG\n", p->file,
                p->images[i]);
        failures++;
    }
    if (failures) fail_msg("%s: %d problem(s), listed above", p->file, failures);
    snprintf(path, sizeof path, "%s/runs", g_work_dir); /* every traced run so far is causal */
    assert_run_traces_causal_under(path);
}

static void readme_indexes_every_page_in_order(void **state) {
    (void)state;
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/README.md", g_src_dir);
    char *readme = read_whole(path, NULL);
    assert_non_null(readme);
    assert_true(g_npages >= 1);
    const char *last = readme;
    for (int i = 0; i < g_npages; i++) {
        int number = atoi(g_pages[i].file);
        if (number != i + 1)
            fail_msg("pages must be numbered 01, 02, ... without gaps; %s is page %d",
                     g_pages[i].file, i + 1);
        char link[300];
        snprintf(link, sizeof link, "](%s)", g_pages[i].file);
        const char *hit = strstr(last, link);
        if (!hit)
            fail_msg("tutorials/README.md does not link %s (after the page before it)",
                     g_pages[i].file);
        last = hit;
        if (g_pages[i].ncmds == 0) fail_msg("%s has no ```console commands", g_pages[i].file);
    }
    free(readme);
}

static void committed_pictures_are_small_pngs_that_pages_show(void **state) {
    (void)state;
    char path[PATH_MAX + 300];
    int problems = 0;
    for (int i = 0; i < g_npages; i++) {
        for (int k = 0; k < g_pages[i].nimages; k++) {
            snprintf(path, sizeof path, "%s/%s", g_src_dir, g_pages[i].images[k]);
            long size = file_size(path);
            if (size <= 0 || !is_png(path)) {
                fprintf(stderr,
                        "%s shows %s, which is not a committed PNG (run the page's "
                        "commands in tutorials/ and add the file)\n",
                        g_pages[i].file, g_pages[i].images[k]);
                problems++;
            } else if (size > MAX_IMAGE_BYTES) {
                fprintf(stderr, "%s is %ld bytes; keep pictures under %d (a smaller --width?)\n",
                        g_pages[i].images[k], size, MAX_IMAGE_BYTES);
                problems++;
            }
        }
    }
    snprintf(path, sizeof path, "%s/images", g_src_dir);
    DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char rel[300];
        snprintf(rel, sizeof rel, "images/%s", de->d_name);
        bool used = false;
        for (int i = 0; i < g_npages && !used; i++)
            for (int k = 0; k < g_pages[i].nimages && !used; k++)
                used = strcmp(g_pages[i].images[k], rel) == 0;
        if (!used) {
            fprintf(stderr, "tutorials/%s is committed but no page shows it\n", rel);
            problems++;
        }
    }
    if (d) closedir(d);
    if (problems) fail_msg("%d problem(s) with the pictures, listed above", problems);
}

static void every_relative_link_names_an_existing_file(void **state) {
    (void)state;
    if (!g_real_dir[0]) fail_msg("cannot resolve %s/README.md to the source tree", g_src_dir);
    int links = 0, problems = 0;
    for (int i = 0; i < g_npages; i++) {
        for (int k = 0; k < g_pages[i].nlinks; k++) {
            char path[2 * PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", g_real_dir, g_pages[i].links[k]);
            struct stat st;
            if (stat(path, &st) != 0) {
                fprintf(stderr, "%s links %s, which does not exist\n", g_pages[i].file,
                        g_pages[i].links[k]);
                problems++;
            }
            links++;
        }
    }
    printf("  %d relative links checked\n", links);
    if (problems) fail_msg("%d broken link(s), listed above", problems);
}

int main(void) {
    load_pages();
    for (int i = 0; i < g_npages; i++) parse_page(&g_pages[i]);
    struct CMUnitTest tests[MAX_PAGES + 3];
    static char names[MAX_PAGES][300];
    int n = 0;
    tests[n++] = (struct CMUnitTest){"readme_indexes_every_page_in_order",
                                     readme_indexes_every_page_in_order, NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"committed_pictures_are_small_pngs_that_pages_show",
                                     committed_pictures_are_small_pngs_that_pages_show, NULL, NULL,
                                     NULL};
    tests[n++] = (struct CMUnitTest){"every_relative_link_names_an_existing_file",
                                     every_relative_link_names_an_existing_file, NULL, NULL, NULL};
    for (int i = 0; i < g_npages; i++) {
        snprintf(names[i], sizeof names[i], "page_runs_as_written: %s", g_pages[i].file);
        tests[n++] = (struct CMUnitTest){names[i], page_runs_as_written, NULL, NULL, &g_pages[i]};
    }
    return _cmocka_run_group_tests("tutorials", tests, (size_t)n, setup_scratch, NULL);
}
