/* checkpoint_locate_test.c — checkpoint_locate is the inverse of gpt_param_serial_index.
 *
 * Resharding finds every element of a saved slice through its serial index, so for every
 * kind of split, every tensor-parallel size and every TP rank: locating the serial index of
 * local element i gives back (that rank, i); and elements outside the serial tensor (vocab
 * padding a smaller layout lacks) are reported as absent. The expert-parallel twin,
 * checkpoint_locate_expert, inverts it for SPLIT_EXPERTS at every ep size and ep rank.
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

/* An MoE block's fc_w (E·4C, C) with E = 4, 4C = 8, C = 2; fcproj_b (E·C) with C = 2. */
static void locate_expert_inverts_the_serial_index_for_every_ep_rank(void **state) {
    (void)state;
    const size_t shapes[2][2] = {{32, 2}, {8, 1}};
    for (int k = 0; k < 2; k++) {
        const size_t full_rows = shapes[k][0], full_cols = shapes[k][1];
        for (int ep = 1; ep <= 4; ep *= 2) {
            gpt_param p = param_for(SPLIT_EXPERTS, full_rows, full_cols, 1);
            p.rows = full_rows / (size_t)ep;
            p.numel = p.rows * p.cols;
            bool *seen = test_calloc(full_rows * full_cols, sizeof(bool));
            for (int r = 0; r < ep; r++) {
                /* any tp rank: experts are whole on every one */
                gpt_shard sh = {.tp_size = 2, .tp_rank = 1, .ep_size = ep, .ep_rank = r};
                for (size_t i = 0; i < p.numel; i++) {
                    size_t s = gpt_param_serial_index(&p, &sh, i), local = 0;
                    int holder = -2;
                    assert_true(
                        checkpoint_locate_expert(full_rows, full_cols, ep, s, &holder, &local));
                    assert_int_equal(holder, r);
                    assert_int_equal(local, i);
                    assert_false(seen[s]); /* each serial element lives on one ep rank */
                    seen[s] = true;
                }
            }
            for (size_t s = 0; s < full_rows * full_cols; s++) assert_true(seen[s]);
            test_free(seen);
        }
    }
    int holder;
    size_t local;
    assert_false(checkpoint_locate_expert(32, 2, 2, 64, &holder, &local)); /* past the end */
    assert_false(checkpoint_locate_expert(32, 2, 3, 0, &holder, &local));  /* 3 does not divide */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(locate_inverts_the_serial_index_for_every_split),
        cmocka_unit_test(elements_past_the_saved_vocabulary_are_absent),
        cmocka_unit_test(locate_expert_inverts_the_serial_index_for_every_ep_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
