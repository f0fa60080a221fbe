/* memory_draw_test.c — the memory bill picture: the layout's numbers (bars side by side, boxes
 * stacked in kind order with heights proportional to bytes, the axis covering the largest
 * total, labels only where there is room) and the rendered image (its size, the colour of a
 * kind's box where the layout puts it, the measured tick). */
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/zero/memory_plan.h"
#include "tests/support/testing.h"
#include "viz/canvas.h"
#include "viz/memory_draw.h"

/* The label audit of viz/canvas.h found nothing in the picture just drawn. */
static void expect_no_layout_violations(void) {
    char bad[8192];
    if (viz_last_violations(bad, sizeof bad)) fail_msg("%s", bad);
}

/* Three ranks: rank 1 holds twice rank 0's activations, rank 2 no activations at all. */
static void three_ranks(zero_memory_rank r[3]) {
    memset(r, 0, 3 * sizeof *r);
    for (int k = 0; k < 3; k++) {
        r[k].rank = k;
        r[k].tp_rank = k;
        r[k].bytes[ZERO_MEM_PARAMS] = 4 << 20;
        r[k].bytes[ZERO_MEM_GRADS] = 4 << 20;
        r[k].bytes[ZERO_MEM_ADAM] = 8 << 20;
        r[k].bytes[ZERO_MEM_ACTIVATIONS] = (size_t)(k == 2 ? 0 : 6 * (k + 1)) << 20;
        r[k].bytes[ZERO_MEM_P2P] = 1 << 20;
        zero_memory_rank_sum(&r[k]);
    }
}

static void bars_stack_kinds_in_order_with_heights_in_proportion(void **state) {
    (void)state;
    zero_memory_rank r[3];
    three_ranks(r);
    viz_memory_chart ch = {r, 3, NULL, "title", NULL, NULL};
    viz_memory_layout L;
    viz_memory_layout_make(&L, &ch, 0);
    const int K = ZERO_MEM_NKINDS;
    assert_true(L.top_bytes >= (double)r[1].total); /* the axis covers the largest bar */
    assert_true(L.bar_x[0] < L.bar_x[1] && L.bar_x[1] < L.bar_x[2]);
    assert_true(L.bar_x[1] - L.bar_x[0] == L.slot);
    const double px_per_byte = L.plot_h / L.top_bytes;
    for (int k = 0; k < 3; k++) {
        double y = L.plot_y + L.plot_h; /* the bars stand on the base line */
        for (int kind = 0; kind < K; kind++) {
            const double y0 = L.seg_y0[k * K + kind], y1 = L.seg_y1[k * K + kind];
            assert_true(fabs(y1 - y) < 1e-9); /* each box sits on the one below */
            assert_true(fabs((y1 - y0) - (double)r[k].bytes[kind] * px_per_byte) < 1e-6);
            y = y0;
        }
    }
    assert_true(L.kinds_present[ZERO_MEM_ACTIVATIONS] && !L.kinds_present[ZERO_MEM_MASTER]);
    assert_true(L.rank_labels && L.totals); /* three bars: room for both */
    viz_memory_layout_free(&L);
}

static void many_ranks_get_thin_bars_and_no_labels(void **state) {
    (void)state;
    static zero_memory_rank r[VIZ_MEMORY_MAX_RANKS];
    for (int k = 0; k < VIZ_MEMORY_MAX_RANKS; k++) {
        memset(&r[k], 0, sizeof r[k]);
        r[k].rank = k;
        r[k].bytes[ZERO_MEM_PARAMS] = 1000 + (size_t)k;
        zero_memory_rank_sum(&r[k]);
    }
    viz_memory_chart ch = {r, VIZ_MEMORY_MAX_RANKS, NULL, "t", NULL, NULL};
    viz_memory_layout L;
    viz_memory_layout_make(&L, &ch, 0);
    assert_true(L.slot >= 4);                            /* never thinner than 4 points */
    assert_true(L.width >= L.plot_x + L.plot_w);         /* the canvas grows to hold them */
    assert_false(L.rank_labels);
    viz_memory_layout_free(&L);
}

static int near(unsigned char v, double want) { return fabs(v - want * 255.0) <= 3.0; }

static void expect_pixel(cairo_surface_t *img, double x, double y, viz_rgb c, const char *what) {
    int stride = cairo_image_surface_get_stride(img);
    unsigned char *px = cairo_image_surface_get_data(img) + (int)y * stride + 4 * (int)x;
    if (!(near(px[2], c.r) && near(px[1], c.g) && near(px[0], c.b)))
        fail_msg("%s: pixel (%d, %d) is (%d, %d, %d), expected (%.0f, %.0f, %.0f)", what, (int)x,
                 (int)y, px[2], px[1], px[0], c.r * 255, c.g * 255, c.b * 255);
}

static void png_has_the_layout_size_and_boxes_where_they_belong(void **state) {
    (void)state;
    zero_memory_rank r[3];
    three_ranks(r);
    const size_t measured[3] = {r[0].total, r[1].total / 2, r[2].total};
    viz_memory_chart ch = {r, 3, measured, "Predicted memory", "ZeRO-1: ...", "a note"};
    char path[4200];
    snprintf(path, sizeof path, "%s/bill.png", test_tmpdir("memory_draw"));
    viz_memory_draw(path, &ch);
    expect_no_layout_violations();
    viz_memory_layout L;
    viz_memory_layout_make(&L, &ch, 0);
    cairo_surface_t *img = cairo_image_surface_create_from_png(path);
    assert_int_equal(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
    assert_int_equal(cairo_image_surface_get_width(img), (int)(L.width + 0.5));
    assert_int_equal(cairo_image_surface_get_height(img), (int)(L.height + 0.5));
    const int K = ZERO_MEM_NKINDS;
    for (int k = 0; k < 2; k++) { /* the middle of each kind's box has the kind's colour */
        const int kinds[] = {ZERO_MEM_PARAMS, ZERO_MEM_ADAM, ZERO_MEM_ACTIVATIONS};
        for (int i = 0; i < 3; i++) {
            const double y = (L.seg_y0[k * K + kinds[i]] + L.seg_y1[k * K + kinds[i]]) / 2;
            expect_pixel(img, L.bar_x[k] + L.bar_w / 2, y + 3, viz_memory_kind_color(kinds[i]),
                         zero_mem_kind_name(kinds[i]));
        }
    }
    /* rank 1's measured tick, at half its bar: drawn in the text colour */
    expect_pixel(img, L.bar_x[1] + L.bar_w / 2, L.measured_y[1], VIZ_TEXT, "measured tick");
    /* above rank 2's short bar: white */
    expect_pixel(img, L.bar_x[2] + L.bar_w / 2, L.plot_y + 5, (viz_rgb){1, 1, 1}, "background");
    cairo_surface_destroy(img);
    viz_memory_layout_free(&L);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bars_stack_kinds_in_order_with_heights_in_proportion),
        cmocka_unit_test(many_ranks_get_thin_bars_and_no_labels),
        cmocka_unit_test(png_has_the_layout_size_and_boxes_where_they_belong),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
