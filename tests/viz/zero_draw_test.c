/* zero_draw_test.c — the ZeRO buffer picture: layout numbers (rows that break at shard
 * boundaries, one rank per row, pieces proportional within a shard, minimum width, boundary
 * marks at the right indices) and the rendered image (size, and pixels where a parameter and
 * a shard must be). */
#include <cairo.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz/canvas.h"
#include "viz/zero_draw.h"
#include "tests/support/testing.h"

/* The label audit of viz/canvas.h found nothing in the picture just drawn. */
static void expect_no_layout_violations(void) {
    char bad[8192];
    if (viz_last_violations(bad, sizeof bad)) fail_msg("%s", bad);
}

static zero_ranges *small_ranges(void) {
    /* a(10) b(7) c(5) = 22, dp 4 -> padded 24, S = 6; buckets of at most 8 */
    static const zero_param ps[] = {
        {"a", 10, true, true}, {"b", 7, false, true}, {"c", 5, true, true}};
    return zero_ranges_build(ps, 3, 4, 1, 8);
}

/* A GPT-like list with large matrices and tiny biases / LayerNorm vectors. */
static zero_ranges *gpt_ranges(int dp, int layers) {
    static char names[200][32];
    zero_param ps[200];
    int n = 0;
    size_t C = 48;
    snprintf(names[n], 32, "wte");
    ps[n] = (zero_param){names[n], 65 * C, true, true}, n++;
    snprintf(names[n], 32, "wpe");
    ps[n] = (zero_param){names[n], 64 * C, true, true}, n++;
    for (int l = 0; l < layers; l++) {
        size_t sz[] = {C, C, 3 * C * C, 3 * C, C * C, C, C, C, 4 * C * C, 4 * C, 4 * C * C, C};
        for (int k = 0; k < 12; k++) {
            snprintf(names[n], 32, "h%d.p%d", l, k);
            ps[n] = (zero_param){names[n], sz[k], sz[k] > 4 * C, true}, n++;
        }
    }
    return zero_ranges_build(ps, n, dp, 64, 20000);
}

static void pieces_are_proportional_within_a_shard_above_the_minimum_width(void **state) {
    (void)state;
    zero_ranges *r = gpt_ranges(4, 3);
    zero_draw_layout L;
    zero_draw_layout_make(r, 700, &L);
    double U = L.n_lines * L.line_w;
    assert_int_equal(L.n_lines, 4 * L.lines_per_shard); /* every shard has its own rows */
    assert_int_equal(L.n_segments, r->n_params + 1);
    assert_true(L.n_widened > 0); /* the 48-element vectors */
    for (int i = 0; i < L.n_segments; i++)
        if (i > 0) assert_true(fabs(L.segments[i].u0 - L.segments[i - 1].u1) < 1e-9);
    int widened = 0;
    for (int i = 0; i < L.n_pieces; i++) {
        const zero_draw_piece *p = &L.pieces[i];
        double w = p->u1 - p->u0, n = (double)(p->world_end - p->world_start);
        double sc = L.shard_px_per_elem[p->shard];
        if (i > 0) assert_true(fabs(p->u0 - L.pieces[i - 1].u1) < 1e-6);
        assert_true(p->world_start >= (size_t)p->shard * r->shard_numel);
        assert_true(p->world_end <= (size_t)(p->shard + 1) * r->shard_numel);
        if (p->widened) {
            widened++;
            assert_true(fabs(w - L.min_w) < 1e-6);
            assert_true(n * sc < L.min_w);
        } else if (i + 1 < L.n_pieces && L.pieces[i + 1].shard == p->shard) {
            assert_true(fabs(w / n - sc) < 1e-9 * sc + 1e-9);
        }
    }
    assert_true(widened >= L.n_widened);
    assert_true(L.segments[0].u0 == 0);
    assert_true(fabs(L.segments[L.n_segments - 1].u1 - U) < 1e-6);
    zero_draw_layout_free(&L);
    zero_ranges_free(r);
}

static void rows_break_at_shard_boundaries(void **state) {
    (void)state;
    zero_ranges *r = small_ranges();
    zero_draw_layout L;
    zero_draw_layout_make(r, 1400, &L);
    assert_int_equal(L.lines_per_shard, 1);
    assert_int_equal(L.n_lines, 4);
    assert_int_equal(L.n_widened, 0);
    assert_int_equal(L.n_marks, 5);
    for (int d = 0; d <= 4; d++) {
        const zero_draw_mark *m = &L.marks[d];
        assert_int_equal(m->world, (size_t)d * 6);
        assert_true(fabs(m->u - d * L.line_w) < 1e-9);
        assert_true(fabs(m->u - zero_draw_u_of(&L, (size_t)d * 6)) < 1e-9);
        /* Shard d starts line d at the left of the bar; the last mark closes the last line. */
        assert_int_equal(m->line, d < 4 ? d : 3);
        assert_true(fabs(m->x - (d < 4 ? L.bar_x : L.bar_x + L.line_w)) < 1e-9);
        /* One mark per line but the last, whose two marks lie a whole line apart: every
         * label fits in the first row under its line. */
        assert_int_equal(m->label_row, 0);
    }
    assert_int_equal(L.label_rows, 1);
    /* Every piece lies on its shard's line; nothing widened, so each shard's scale is S. */
    for (int i = 0; i < L.n_pieces; i++) {
        const zero_draw_piece *p = &L.pieces[i];
        int line;
        double x;
        zero_draw_place(&L, (p->u0 + p->u1) / 2, &line, &x);
        assert_int_equal(line, p->shard);
    }
    for (int d = 0; d < 4; d++) assert_true(fabs(L.shard_px_per_elem[d] - L.line_w / 6) < 1e-6);
    /* a [0,10) is cut into shard 0 [0,6) and shard 1 [6,10): two pieces. */
    assert_int_equal(L.pieces[0].segment, 0);
    assert_int_equal(L.pieces[0].world_end, 6);
    assert_int_equal(L.pieces[1].segment, 0);
    assert_int_equal(L.pieces[1].shard, 1);
    /* Parameter boundaries coincide with segment edges; the padding is the last segment. */
    assert_true(fabs(zero_draw_u_of(&L, 10) - L.segments[1].u0) < 1e-9);
    assert_true(fabs(zero_draw_u_of(&L, 17) - L.segments[2].u0) < 1e-9);
    assert_int_equal(L.segments[3].param, -1);
    assert_int_equal(L.segments[3].world_start, 22);
    /* Every parameter is cut by a boundary here. */
    for (int i = 0; i < 3; i++) assert_true(L.segments[i].cut);
    assert_false(L.segments[3].cut);
    /* Bucket marks: starts of the 4 buckets and the end of the last one. */
    assert_int_equal(L.n_bucket_marks, r->n_buckets + 1);
    assert_int_equal(L.bucket_marks[1].world, 8);
    assert_int_equal(L.bucket_marks[r->n_buckets].world, 22);
    /* The canvas holds everything. */
    assert_true(L.table_y + 4 * 15 <= L.height);
    zero_draw_layout_free(&L);
    zero_ranges_free(r);
}

static void wrapping_folds_the_bar_into_lines(void **state) {
    (void)state;
    zero_ranges *r = gpt_ranges(8, 3);
    zero_draw_layout L;
    zero_draw_layout_make(r, 1000, &L);
    assert_int_equal(L.n_lines, 8 * L.lines_per_shard);
    int line;
    double x;
    zero_draw_place(&L, 0, &line, &x);
    assert_int_equal(line, 0);
    assert_true(x == L.bar_x);
    zero_draw_place(&L, L.line_w, &line, &x);
    assert_int_equal(line, 1);
    assert_true(fabs(x - L.bar_x) < 1e-9);
    zero_draw_place(&L, 1.5 * L.line_w, &line, &x);
    assert_int_equal(line, 1);
    assert_true(fabs(x - (L.bar_x + 0.5 * L.line_w)) < 1e-9);
    zero_draw_place(&L, L.n_lines * L.line_w, &line, &x); /* the very end */
    assert_int_equal(line, L.n_lines - 1);
    assert_true(fabs(x - (L.bar_x + L.line_w)) < 1e-9);
    /* Marks are placed consistently with their u, at the start of their shard's rows. */
    for (int d = 0; d < L.n_marks; d++) {
        zero_draw_place(&L, L.marks[d].u, &line, &x);
        assert_int_equal(line, L.marks[d].line);
        assert_true(fabs(x - L.marks[d].x) < 1e-9);
        assert_true(fabs(L.marks[d].u - zero_draw_u_of(&L, (size_t)d * r->shard_numel)) < 1e-6);
        if (d < r->dp) assert_int_equal(L.marks[d].line, d * L.lines_per_shard);
    }
    /* Inside a piece that is not widened, u grows linearly with the world index. */
    const zero_draw_piece *s = &L.pieces[0];
    assert_false(s->widened);
    double mid = zero_draw_u_of(&L, (s->world_start + s->world_end) / 2);
    assert_true(fabs(mid - (s->u0 + s->u1) / 2) < 1e-6);
    zero_draw_layout_free(&L);
    zero_ranges_free(r);
}

static void tiny_parameters_get_the_minimum_width(void **state) {
    (void)state;
    zero_param ps[] = {
        {"big", 1000000, true, true}, {"bias", 1, false, true}, {"big2", 500000, true, true}};
    zero_ranges *r = zero_ranges_build(ps, 3, 2, 1, 0);
    zero_draw_layout L;
    zero_draw_layout_make(r, 1400, &L);
    assert_true(L.segments[1].widened);
    assert_true(fabs(L.segments[1].u1 - L.segments[1].u0 - L.min_w) < 1e-9);
    assert_true(L.min_w >= 5);
    /* In shard 1, big's tail (249,999) and big2 (500,000) keep their ratio. */
    size_t S = r->shard_numel;
    double wb = zero_draw_u_of(&L, 1000000) - zero_draw_u_of(&L, S);
    double w2 = zero_draw_u_of(&L, 1500001) - zero_draw_u_of(&L, 1000001);
    assert_true(fabs(wb / w2 - (1000000.0 - (double)S) / 500000.0) < 1e-9);
    zero_draw_layout_free(&L);
    zero_ranges_free(r);
}

static int near(unsigned char v, double want) { return fabs(v - want * 255.0) <= 3.0; }

/* The pixel at (x, y) of an ARGB32 surface equals colour c (opaque). */
static void expect_pixel(cairo_surface_t *img, double x, double y, viz_rgb c, const char *what) {
    int stride = cairo_image_surface_get_stride(img);
    unsigned char *data = cairo_image_surface_get_data(img);
    unsigned char *px = data + (int)y * stride + 4 * (int)x; /* B G R A, little endian */
    if (!(near(px[2], c.r) && near(px[1], c.g) && near(px[0], c.b))) {
        print_error("%s: pixel (%d, %d) is (%d, %d, %d), expected (%.0f, %.0f, %.0f)\n", what,
                    (int)x, (int)y, px[2], px[1], px[0], c.r * 255, c.g * 255, c.b * 255);
        fail();
    }
}

static void png_has_the_layout_size_and_boxes_where_they_belong(void **state) {
    (void)state;
    zero_ranges *r = small_ranges();
    zero_memory_plan m = zero_memory_plan_of(r, PREC_BF16, 1);
    const char *dir = test_tmpdir("zero_draw");
    char path[4200];
    snprintf(path, sizeof path, "%s/zero.png", dir);
    zero_draw(path, r, &m);
    expect_no_layout_violations();
    zero_draw_layout L;
    zero_draw_layout_make(r, 0, &L);
    cairo_surface_t *img = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(img), (int)(L.width + 0.5));
    assert_int_equal(cairo_image_surface_get_height(img), (int)(L.height + 0.5));
    /* Parameter a's box (colour of parameter 0) near the top of shard 0's row (away from the
     * red outline and the dashed boundary). */
    int line;
    double x, y = L.first_line_y + 6;
    zero_draw_place(&L, zero_draw_u_of(&L, 3), &line, &x);
    assert_int_equal(line, 0);
    expect_pixel(img, x, y, viz_shade(viz_categorical(0), 0.45), "parameter a");
    /* Parameter b, inside shard 2: on the third row. */
    zero_draw_place(&L, zero_draw_u_of(&L, 14), &line, &x);
    assert_int_equal(line, 2);
    expect_pixel(img, x, L.first_line_y + 2 * L.line_pitch + 6, viz_shade(viz_categorical(1), 0.45),
                 "parameter b");
    /* DP rank 0's band, near its left end. */
    expect_pixel(img, L.bar_x + 10, L.first_line_y + L.band_y + 3, viz_shade(VIZ_OPTIMIZER, 0.25),
                 "shard of rank 0");
    /* The background right of the last segment is white. */
    expect_pixel(img, L.width - 5, L.first_line_y + 5, (viz_rgb){1, 1, 1}, "margin");
    cairo_surface_destroy(img);
    /* Written atomically: nothing but the picture is left in the directory. */
    DIR *dh = opendir(dir);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(dh))) files += e->d_name[0] != '.';
    closedir(dh);
    assert_int_equal(files, 1);
    zero_draw_layout_free(&L);
    zero_ranges_free(r);
}

static void draws_every_format_and_padding_only_shards(void **state) {
    (void)state;
    zero_param ps[] = {{"x", 100, true, true}};
    zero_ranges *r = zero_ranges_build(ps, 1, 4, 64, 0); /* ranks 2, 3: only padding */
    const char *dir = test_tmpdir("zero_draw_formats");
    const char *ext[] = {"png", "svg", "pdf"};
    for (int i = 0; i < 3; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/pad.%s", dir, ext[i]);
        zero_draw(path, r, NULL);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        assert_true(ftell(f) > 1000);
        fclose(f);
    }
    zero_ranges_free(r);
    /* An empty buffer still draws. */
    r = zero_ranges_build(NULL, 0, 2, 1, 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/empty.png", dir);
    zero_draw(path, r, NULL);
    zero_ranges_free(r);
}

/* Every shard boundary gets a label row (at most two marks share a line), whatever the
 * dp and the width; bucket marks carry none. */
static void every_shard_boundary_gets_a_label_row(void **state) {
    (void)state;
    const int dps[] = {1, 2, 3, 8, 64, 128};
    const double widths[] = {240, 900, 1600};
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 3; b++) {
            zero_ranges *r = gpt_ranges(dps[a], 2);
            zero_draw_layout L;
            zero_draw_layout_make(r, widths[b], &L);
            for (int d = 0; d < L.n_marks; d++)
                if (L.marks[d].label_row != 0 && L.marks[d].label_row != 1)
                    fail_msg("dp %d width %g: shard mark %d has label row %d", dps[a], widths[b], d,
                             L.marks[d].label_row);
            for (int k = 0; k < L.n_bucket_marks; k++)
                assert_int_equal(L.bucket_marks[k].label_row, -1);
            assert_true(L.label_rows >= 1 && L.label_rows <= 2);
            zero_draw_layout_free(&L);
            zero_ranges_free(r);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pieces_are_proportional_within_a_shard_above_the_minimum_width),
        cmocka_unit_test(rows_break_at_shard_boundaries),
        cmocka_unit_test(wrapping_folds_the_bar_into_lines),
        cmocka_unit_test(tiny_parameters_get_the_minimum_width),
        cmocka_unit_test(png_has_the_layout_size_and_boxes_where_they_belong),
        cmocka_unit_test(draws_every_format_and_padding_only_shards),
        cmocka_unit_test(every_shard_boundary_gets_a_label_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
