/* pictures_test.c — every kind of picture the command line draws passes the label audit of
 * viz/canvas.h (TRIDENT_LAYOUT_CHECK=1: no label outside the canvas, none below 4.5:1
 * contrast, none on hatching without a plate): timelines (a 3-run stack at --width 1200, the
 * slides theme with hatched chunks, --ideal --critical-path in both themes), schedules and --compare at 1920 x 1080 in the slides
 * theme, the memory bill, the process groups, loss curves and the MoE load map; then the
 * rendered pixels: a 1920 x 1080 schedule fills its frame; SVG carries real <text>, by which
 * a wrapped title keeps its unit and the MoE map names every expert and writes its shares.
 * (The ZeRO buffer and the bench chart are drawn by their own tests, which check the same
 * audit through viz_last_violations.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cairo.h>

#include "tests/support/testing.h"
#include "tests/viz/pipeline_fixture.h"

static char g_out[65536];
static const char *g_dir;
static char g_trident[4096]; /* absolute: the commands run in g_dir */

/* Runs `trident ARGS` under TRIDENT_LAYOUT_CHECK=1; fails naming the violations. */
static void draw_checked(const char *args) {
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "cd '%s' && TRIDENT_LAYOUT_CHECK=1 %s %s", g_dir, g_trident, args);
    int rc = run_capture(cmd, g_out, sizeof g_out);
    if (rc != 0 || strstr(g_out, "layout:")) {
        fprintf(stderr, "trident %s\n  exit %d\n%s\n", args, rc, g_out);
        fail();
    }
}

static void write_runs(void) {
    static const char *kinds[3] = {"gpipe", "1f1b", "interleaved"};
    char dir[4300];
    for (int i = 0; i < 3; i++) {
        fixture_run r = fixture_defaults(kinds[i], 4, 8, i == 2 ? 2 : 1);
        r.with_memory = 1;
        snprintf(dir, sizeof dir, "%s/run-%s", g_dir, kinds[i]);
        fixture_write_run(dir, &r);
        /* a run named like page 08's, whose title does not fit 1200 points on one line */
        snprintf(dir, sizeof dir, "%s/08-%s-zero1-overlap-grad-reduce-bf16-seq-parallel", g_dir,
                 kinds[i]);
        fixture_write_run(dir, &r);
    }
}

static void write_moe_run(void) {
    char path[4300];
    snprintf(path, sizeof path, "mkdir -p '%s/moe'", g_dir);
    assert_int_equal(system(path), 0);
    snprintf(path, sizeof path, "%s/moe/metrics.jsonl", g_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int step = 1; step <= 12; step++)
        fprintf(f,
                "{\"step\":%d,\"loss\":%.3f,\"moe_aux_loss\":0.012,\"moe_tokens\":[[%d,10,12,8],"
                "[10,14,6,10]],\"moe_dropped\":[%d,0]}\n",
                step, 5.0 - 0.1 * step, 10 + step, step % 3);
    fclose(f);
}

static void timelines_pass_the_audit(void **state) {
    (void)state;
    draw_checked("render run-gpipe run-1f1b run-interleaved --width 1200 -o stack-1200.png");
    draw_checked("render run-gpipe run-1f1b run-interleaved -o stack.png");
    draw_checked("render 08-gpipe-zero1-overlap-grad-reduce-bf16-seq-parallel "
                 "08-1f1b-zero1-overlap-grad-reduce-bf16-seq-parallel "
                 "08-interleaved-zero1-overlap-grad-reduce-bf16-seq-parallel --width 1200 "
                 "-o stack-08-1200.png");
    draw_checked("render run-interleaved --width 700 -o narrow.png");
    draw_checked("render 08-gpipe-zero1-overlap-grad-reduce-bf16-seq-parallel "
                 "08-1f1b-zero1-overlap-grad-reduce-bf16-seq-parallel "
                 "08-interleaved-zero1-overlap-grad-reduce-bf16-seq-parallel --width 1200 "
                 "-o stack-08-1200.svg");
    draw_checked("render run-interleaved --theme slides -o slides.png");
    draw_checked("render run-interleaved --theme slides --width 1920 --height 1080 -o "
                 "slides-1920.png");
    draw_checked("render --replay-and-wall run-1f1b -o both.png");
    draw_checked("render run-interleaved --theme slides -o slides.svg");
    draw_checked("render run-1f1b --ideal --critical-path -o ideal.png");
    draw_checked("render run-interleaved --replay --ideal --critical-path --width 1200 -o "
                 "ideal-1200.png");
    draw_checked("render --replay-and-wall run-1f1b --ideal --critical-path --theme slides "
                 "--width 1920 --height 1080 -o ideal-slides-1920.png");
    draw_checked("render run-interleaved --ideal --critical-path --theme slides -o "
                 "ideal-slides.svg");
}

static void schedules_pass_the_audit(void **state) {
    (void)state;
    const char *pm = "--pipeline-model-parallel-size 4 --num-microbatches 8";
    char args[1024];
    static const char *kinds[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zbv", "dualpipev"};
    for (int i = 0; i < 6; i++) {
        snprintf(args, sizeof args, "schedule %s --pipeline-schedule %s -o sched-%s.png", pm,
                 kinds[i], kinds[i]);
        draw_checked(args);
        snprintf(args, sizeof args,
                 "schedule %s --pipeline-schedule %s --theme slides --width 1920 --height 1080 "
                 "-o slide-%s.png",
                 pm, kinds[i], kinds[i]);
        draw_checked(args);
    }
    snprintf(args, sizeof args,
             "schedule %s --compare 1f1b,interleaved,zb-h1,zbv --theme slides --width 1920 "
             "--height 1080 -o compare-1920.png",
             pm);
    draw_checked(args);
    snprintf(args, sizeof args, "schedule %s --theme slides -o slide.svg", pm);
    draw_checked(args);
}

static void other_pictures_pass_the_audit(void **state) {
    (void)state;
    draw_checked("memory --world-size 4 --pipeline-model-parallel-size 2 -o memory.png");
    draw_checked("memory --world-size 4 --pipeline-model-parallel-size 2 --theme slides -o "
                 "memory-slides.png");
    draw_checked("groups --world-size 8 --tensor-model-parallel-size 2 "
                 "--pipeline-model-parallel-size 2 -o groups.png");
    draw_checked("groups --world-size 16 --tensor-model-parallel-size 2 "
                 "--pipeline-model-parallel-size 4 --theme slides -o groups-slides.png");
    draw_checked("render --moe-load moe -o moe.png");
    draw_checked("render --moe-load moe -o moe.svg");
    draw_checked("render --metrics moe -o metrics.png");
}

/* The first and the last row of a PNG holding a non-white pixel. */
static void ink_rows(const char *path, int *w, int *h, int *first, int *last) {
    char full[4300];
    snprintf(full, sizeof full, "%s/%s", g_dir, path);
    cairo_surface_t *s = cairo_image_surface_create_from_png(full);
    assert_int_equal(cairo_surface_status(s), CAIRO_STATUS_SUCCESS);
    *w = cairo_image_surface_get_width(s), *h = cairo_image_surface_get_height(s);
    const unsigned char *d = cairo_image_surface_get_data(s);
    const int stride = cairo_image_surface_get_stride(s);
    *first = *last = -1;
    for (int y = 0; y < *h; y++)
        for (int x = 0; x < *w; x++) {
            unsigned v = *(const unsigned *)(d + (size_t)y * (size_t)stride + (size_t)x * 4);
            if ((v & 0xffffffu) != 0xffffffu) {
                if (*first < 0) *first = y;
                *last = y;
                break;
            }
        }
    cairo_surface_destroy(s);
}

/* At 1920 x 1080 a schedule of 4 ranks (boxes at their cap, then centred) and a timeline of 4
 * ranks (lanes at their cap) span at least 70% of the height; the stack of four schedules
 * (16 rows) reaches the bottom tenth. Before, a schedule filled 40% of the slide. */
static void a_slide_fills_its_frame(void **state) {
    (void)state;
    static const struct {
        const char *file;
        double span;
    } slides[] = {{"slide-1f1b.png", 0.7},
                  {"slide-zbv.png", 0.7},
                  {"slides-1920.png", 0.7},
                  {"compare-1920.png", 0.9}};
    for (int i = 0; i < 4; i++) {
        int w, h, first, last;
        ink_rows(slides[i].file, &w, &h, &first, &last);
        assert_int_equal(w, 1920);
        assert_int_equal(h, 1080);
        if (last - first < slides[i].span * h) {
            fprintf(stderr, "%s: drawn from y = %d to %d of %d, less than %.0f%%\n", slides[i].file,
                    first, last, h, 100 * slides[i].span);
            fail();
        }
    }
}

static char *read_file(const char *name) {
    char full[4300];
    snprintf(full, sizeof full, "%s/%s", g_dir, name);
    FILE *f = fopen(full, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = calloc((size_t)n + 1, 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return buf;
}

static void svg_carries_real_text(void **state) {
    (void)state;
    char *svg = read_file("slide.svg");
    assert_non_null(strstr(svg, "<text"));
    assert_non_null(strstr(svg, "font-family=\"DejaVu Sans\""));
    assert_non_null(strstr(svg, "1f1b"));     /* the title */
    assert_non_null(strstr(svg, ">rank 0<")); /* a row label, whole */
    free(svg);
    /* titles too long for 1200 points wrap and keep their unit */
    svg = read_file("stack-08-1200.svg");
    assert_non_null(strstr(svg, "32.40 ms</text>"));
    free(svg);
    /* the MoE map names every expert and writes the shares in the cells */
    svg = read_file("moe.svg");
    for (int e = 0; e < 4; e++) {
        char name[32];
        snprintf(name, sizeof name, ">expert %d</text>", e);
        assert_non_null(strstr(svg, name));
    }
    assert_non_null(strstr(svg, ">25.0%</text>"));
    free(svg);
    svg = read_file("slides.svg");
    assert_non_null(strstr(svg, "<text"));
    assert_non_null(strstr(svg, "interleaved"));
    free(svg);
}

int main(void) {
    g_dir = getenv("TRIDENT_PICTURES_DIR"); /* to keep the pictures and look at them */
    if (!g_dir) g_dir = test_tmpdir("pictures");
    char mk[4300];
    snprintf(mk, sizeof mk, "mkdir -p '%s'", g_dir);
    if (system(mk) != 0) return 1;
    if (!realpath(test_trident_path(), g_trident)) return 1;
    write_runs();
    write_moe_run();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(timelines_pass_the_audit),      cmocka_unit_test(schedules_pass_the_audit),
        cmocka_unit_test(other_pictures_pass_the_audit), cmocka_unit_test(a_slide_fills_its_frame),
        cmocka_unit_test(svg_carries_real_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
