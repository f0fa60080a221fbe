/* text_timeline_test.c — the .txt rendering: one character per bucket (wait '~' apart from
 * transfer '<' and idle '.'), the four class shares per rank, both bubble definitions; a
 * window (--window) of the step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testing.h"
#include "viz/text_timeline.h"

static viz_tl_box box(viz_tl_kind k, int mb, int chunk, double a, double b) {
    return (viz_tl_box){.kind = k,
                        .microbatch = mb,
                        .chunk = chunk,
                        .start = a,
                        .ready = a,
                        .end = b,
                        .peer = -1,
                        .flow = -1};
}

static void buckets_tell_wait_from_transfer_and_idle(void **state) {
    (void)state;
    viz_timeline *tl = viz_timeline_new("t", "gpipe", 1, 2, 1, 1, 1);
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 0, 0, 0, 1));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_BACKWARD, 0, 0, 2, 4));
    viz_tl_box recv = box(VIZ_TL_RECV, -1, -1, 0, 2); /* waits 0..1.5, transfers 1.5..2 */
    recv.ready = 1.5;
    viz_timeline_add_box(tl, 1, recv);
    viz_timeline_add_box(tl, 1, box(VIZ_TL_FORWARD, 0, 1, 2, 3));
    viz_timeline_add_box(tl, 1, box(VIZ_TL_OPTIMIZER, -1, -1, 3, 3.5));
    viz_timeline_finish(tl);
    char buf[4096];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    const viz_timeline *one[1] = {tl};
    viz_text_timeline_write(f, one, 1, 8);
    fclose(f);
    assert_non_null(strstr(
        buf,
        "stage 0  rank 0   |FF..BBBB| compute  75.0% transfer   0.0% wait   0.0% idle  25.0%"));
    /* rank 1 waits 0 .. 1.5 ('~'), receives 1.5 .. 2 ('<'), computes 2 .. 3.5, idles 3.5 .. 4. */
    assert_non_null(strstr(
        buf,
        "stage 1  rank 1   |~~~<ffO.| compute  37.5% transfer  12.5% wait  37.5% idle  12.5%"));
    assert_non_null(strstr(buf, "(p-1)/(m+p-1) = 50.0% of total, (p-1)/m = 100.0% of ideal"));
    assert_non_null(strstr(buf, "legend: F forward"));
    assert_non_null(strstr(buf, "~ wait (blocked on a peer)"));
    viz_timeline_free(tl);
}

/* --window 1000:3000 of the same timeline (seconds 1 .. 3): four buckets of 0.5 s over the
 * window only, shares of the window, the title naming it. */
static void a_window_buckets_and_counts_only_its_own_time(void **state) {
    (void)state;
    viz_timeline *tl = viz_timeline_new("t", "gpipe", 1, 2, 1, 1, 1);
    viz_timeline_add_box(tl, 0, box(VIZ_TL_FORWARD, 0, 0, 0, 1));
    viz_timeline_add_box(tl, 0, box(VIZ_TL_BACKWARD, 0, 0, 2, 4));
    viz_tl_box recv = box(VIZ_TL_RECV, -1, -1, 0, 2);
    recv.ready = 1.5;
    viz_timeline_add_box(tl, 1, recv);
    viz_timeline_add_box(tl, 1, box(VIZ_TL_FORWARD, 0, 1, 2, 3));
    viz_timeline_finish(tl);
    char buf[4096];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    const viz_timeline *one[1] = {tl};
    viz_text_timeline_write_window(f, one, 1, 4, &(viz_tl_window){1, 3});
    fclose(f);
    if (!strstr(buf, "window 1000-3000 ms of the timeline, 4000.000 ms (one column = 500.000 ms)"))
        fail_msg("title: %s", buf);
    assert_non_null(strstr(
        buf, "stage 0  rank 0   |..BB| compute  50.0% transfer   0.0% wait   0.0% idle  50.0%"));
    assert_non_null(strstr(
        buf, "stage 1  rank 1   |~<ff| compute  50.0% transfer  25.0% wait  25.0% idle   0.0%"));
    assert_non_null(strstr(buf, "bubble of the whole step measured: "));
    assert_non_null(strstr(buf, "add up to the window (the bubble: the whole step)"));
    viz_timeline_free(tl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buckets_tell_wait_from_transfer_and_idle),
        cmocka_unit_test(a_window_buckets_and_counts_only_its_own_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
