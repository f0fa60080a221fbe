/* checkpoint_locate_test.c — checkpoint_locate is the inverse of gpt_param_serial_index.
 *
 * Resharding finds every element of a saved slice through its serial index, so for every
 * kind of split, every tensor-parallel size and every TP rank: locating the serial index of
 * local element i gives back (that rank, i); and elements outside the serial tensor (vocab
 * padding a smaller layout lacks) are reported as absent.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "src/ckpt/checkpoint.h"
#include "src/model/gpt.h"
#include "tests/support/testing.h"

/* A parameter as gpt_chunk_init would cut it for (tp_size, tp_rank). */
static gpt_param param_for(gpt_split split, size_t full_rows, size_t full_cols, int tp_size) {
    gpt_param p;
    memset(&p, 0, sizeof p);
    p.split = split;
    p.full_rows = full_rows;
    p.full_cols = full_cols;
    size_t tp = (size_t)tp_size;
    p.rows = (split == SPLIT_ROWS || split == SPLIT_QKV) ? full_rows / tp : full_rows;
    p.cols = split == SPLIT_COLS ? full_cols / tp : full_cols;
    p.numel = p.rows * p.cols;
    return p;
}

static void round_trip(gpt_split split, size_t full_rows, size_t full_cols) {
    for (int tp = 1; tp <= 4; tp *= 2) {
        gpt_param p = param_for(split, full_rows, full_cols, tp);
        bool *seen = test_calloc(full_rows * full_cols, sizeof(bool));
        for (int r = 0; r < tp; r++) {
            gpt_shard sh = {.tp_size = tp, .tp_rank = r};
            for (size_t i = 0; i < p.numel; i++) {
                size_t s = gpt_param_serial_index(&p, &sh, i), local = 0;
                int holder = -2;
                assert_true(checkpoint_locate(split, full_rows, full_cols, tp, s, &holder, &local));
                if (split == SPLIT_NONE) assert_int_equal(holder, -1);
                else assert_int_equal(holder, r);
                assert_int_equal(local, i);
                if (split != SPLIT_NONE) {
                    assert_false(seen[s]); /* each serial element lives on one rank */
                    seen[s] = true;
                }
            }
        }
        test_free(seen);
    }
}

static void locate_inverts_the_serial_index_for_every_split(void **state) {
    (void)state;
    round_trip(SPLIT_NONE, 16, 8); /* wpe, LayerNorms */
    round_trip(SPLIT_ROWS, 32, 8); /* wte, fc_w */
    round_trip(SPLIT_ROWS, 32, 1); /* fc_b */
    round_trip(SPLIT_COLS, 8, 32); /* proj_w, fcproj_w */
    round_trip(SPLIT_QKV, 24, 8);  /* qkv_w: [Q; K; V] */
    round_trip(SPLIT_QKV, 24, 1);  /* qkv_b */
}

static void elements_past_the_saved_vocabulary_are_absent(void **state) {
    (void)state;
    int holder;
    size_t local;
    /* saved with 256 rows of 8: row 300 of a 512-row layout is padding it never had */
    assert_false(checkpoint_locate(SPLIT_ROWS, 256, 8, 2, 300 * 8 + 3, &holder, &local));
    assert_true(checkpoint_locate(SPLIT_ROWS, 256, 8, 2, 255 * 8 + 7, &holder, &local));
    assert_int_equal(holder, 1);
    assert_int_equal(local, 127 * 8 + 7);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(locate_inverts_the_serial_index_for_every_split),
        cmocka_unit_test(elements_past_the_saved_vocabulary_are_absent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
