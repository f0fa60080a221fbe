/* memory_plan_test.c — the ZeRO paper's memory figures, and padding seen through the
 * actual shard sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/zero/memory_plan.h"
#include "tests/support/testing.h"

static const double GB = 1e9;

static void zero_paper_table_for_7_5b_on_64_ranks(void **state) {
    (void)state;
    size_t psi = 7500000000ull;
    int dp = 64;
    size_t S = zero_padded_numel(psi, dp, 1) / (size_t)dp;
    zero_memory_plan m0 = zero_memory_plan_make(psi, dp, S, PREC_FP16, 0);
    zero_memory_plan m1 = zero_memory_plan_make(psi, dp, S, PREC_FP16, 1);
    zero_memory_plan m2 = zero_memory_plan_make(psi, dp, S, PREC_BF16, 2);
    zero_memory_plan m3 = zero_memory_plan_make(psi, dp, S, PREC_BF16, 3);
    /* Table 1 of the ZeRO paper: 120 GB, 31.4 GB, 16.6 GB, 1.88 GB. */
    assert_true(m0.formula_total_bytes == 120 * GB);
    assert_int_equal(m0.total_bytes, 120000000000ull);
    assert_true(m1.formula_total_bytes / GB > 31.40 && m1.formula_total_bytes / GB < 31.42);
    assert_true(m2.formula_total_bytes / GB > 16.63 && m2.formula_total_bytes / GB < 16.65);
    assert_true(m3.formula_total_bytes / GB > 1.87 && m3.formula_total_bytes / GB < 1.88);
    /* The parts: 2Ψ + 2Ψ + (4 + 8)Ψ / 64. */
    assert_int_equal(m1.param_bytes, 2 * psi);
    assert_int_equal(m1.grad_bytes, 2 * psi);
    assert_int_equal(m1.master_bytes, 4 * S);
    assert_int_equal(m1.optim_bytes, 8 * S);
    assert_int_equal(m2.grad_bytes, 2 * S);
    assert_int_equal(m3.param_bytes, 2 * S);
    /* 7.5e9 is a multiple of 64: no padding, so actual == formula. */
    assert_int_equal(S * 64, psi);
    assert_true((double)m1.total_bytes == m1.formula_total_bytes);
    /* One more parameter needs 63 padding elements: 12 bytes each on the optimizer side. */
    size_t S1 = zero_padded_numel(psi + 1, dp, 1) / (size_t)dp;
    zero_memory_plan p1 = zero_memory_plan_make(psi + 1, dp, S1, PREC_FP16, 1);
    assert_int_equal(S1 * 64, psi + 64);
    assert_int_equal(p1.master_bytes + p1.optim_bytes, 12 * (psi + 64) / 64);
    expect_close((float[]){(float)p1.total_bytes}, (float[]){(float)p1.formula_total_bytes}, 1, 0,
                 1e-6, "ZeRO-1 total with padding");
}

static void optimizer_bytes_per_rank_are_unsharded_over_dp_up_to_padding(void **state) {
    (void)state;
    zero_param ps[] = {{"wte", 65 * 48, true, true},
                       {"wpe", 64 * 48, true, true},
                       {"ln", 48, false, true},
                       {"fc", 4 * 48 * 48, true, true},
                       {"b", 7, false, true}};
    for (int dp = 1; dp <= 8; dp++) {
        zero_ranges *r = zero_ranges_build(ps, 5, dp, 64, 0);
        zero_memory_plan off = zero_memory_plan_of(r, PREC_BF16, 0);
        zero_memory_plan one = zero_memory_plan_of(r, PREC_BF16, 1);
        size_t unsharded = off.master_bytes + off.optim_bytes; /* 12 Ψ */
        size_t sharded = one.master_bytes + one.optim_bytes;   /* 12 S */
        assert_int_equal(unsharded, 12 * r->numel);
        assert_int_equal(sharded, 12 * r->shard_numel);
        /* sharded * dp = unsharded + 12 * padding, and the padding is < dp * 64 elements */
        size_t pad = r->padded_numel - r->numel;
        assert_int_equal(sharded * (size_t)dp, unsharded + 12 * pad);
        assert_true(pad < (size_t)dp * 64);
        /* Params and grads are not sharded at stage 1. */
        assert_int_equal(one.param_bytes, 2 * r->numel);
        assert_int_equal(one.grad_bytes, off.grad_bytes);
        zero_ranges_free(r);
    }
}

static void pure_fp32_has_no_separate_master(void **state) {
    (void)state;
    zero_memory_plan m = zero_memory_plan_make(1000, 4, 250, PREC_FP32, 0);
    assert_int_equal(m.param_bytes, 4000);
    assert_int_equal(m.grad_bytes, 4000);
    assert_int_equal(m.master_bytes, 0);
    assert_int_equal(m.optim_bytes, 8000);
    assert_int_equal(m.total_bytes, 16000);
    m = zero_memory_plan_make(1000, 4, 250, PREC_FP32, 1);
    assert_int_equal(m.optim_bytes, 2000);
    assert_int_equal(m.total_bytes, 10000);
    assert_true(m.formula_total_bytes == 10000.0);
}

static void summary_and_table_read_well(void **state) {
    (void)state;
    size_t psi = 7500000000ull;
    zero_memory_plan m = zero_memory_plan_make(psi, 64, psi / 64 + 1, PREC_BF16, 1);
    char line[256];
    zero_memory_plan_summary(&m, line, sizeof line);
    assert_non_null(strstr(line, "ZeRO-1, bf16, dp 64: 31.41 GB per rank"));
    assert_non_null(strstr(line, "params 15.00 GB"));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    zero_memory_plan_print(f, &m);
    fclose(f);
    assert_non_null(strstr(buf, "fp32 master"));
    assert_non_null(strstr(buf, "Adam m + v"));
    assert_non_null(strstr(buf, "31.41 GB"));
    free(buf);
    m = zero_memory_plan_make(10, 1, 10, PREC_FP32, 0);
    zero_memory_plan_summary(&m, line, sizeof line);
    assert_non_null(strstr(line, "no ZeRO, fp32, dp 1: 160 B per rank"));
}

/* One rank's model state in Trident's storage: fp32 parameters and gradients whatever the
 * precision, the padded buffer from stage 1 on, each stage sharding one more kind. */
static void trident_storage_shards_one_more_kind_per_stage(void **state) {
    (void)state;
    const size_t psi = 1000, dp = 4, S = 256, padded = dp * S; /* 24 elements of padding */
    zero_memory_rank m[4];
    for (int s = 0; s < 4; s++) {
        memset(&m[s], 0, sizeof m[s]);
        zero_memory_rank_model_state(&m[s], psi, padded, S, PREC_BF16, s);
    }
    assert_int_equal(m[0].bytes[ZERO_MEM_PARAMS], 4 * psi); /* no padding without ZeRO */
    assert_int_equal(m[0].bytes[ZERO_MEM_MASTER], 4 * psi);
    assert_int_equal(m[0].bytes[ZERO_MEM_ADAM], 8 * psi);
    assert_int_equal(m[1].bytes[ZERO_MEM_PARAMS], 4 * padded);
    assert_int_equal(m[1].bytes[ZERO_MEM_GRADS], 4 * padded);
    assert_int_equal(m[1].bytes[ZERO_MEM_MASTER], 4 * S);
    assert_int_equal(m[1].bytes[ZERO_MEM_ADAM], 8 * S);
    assert_int_equal(m[2].bytes[ZERO_MEM_GRADS], 4 * S);
    assert_int_equal(m[2].bytes[ZERO_MEM_PARAMS], 4 * psi); /* ZeRO-2 pads its shards only */
    assert_int_equal(m[3].bytes[ZERO_MEM_PARAMS], 4 * S);
    assert_int_equal(zero_memory_rank_sum(&m[3]), 20 * S); /* (4 + 16)Ψ/Nd, padded */
    assert_int_equal(m[3].total, 20 * S);
    zero_memory_rank f = {0};
    zero_memory_rank_model_state(&f, psi, padded, S, PREC_FP32, 1);
    assert_int_equal(f.bytes[ZERO_MEM_MASTER], 0); /* fp32: the parameters are the master */
    assert_int_equal(zero_memory_rank_sum(&f), 8 * padded + 8 * S);
    assert_string_equal(zero_stage_name(2), "ZeRO-2");
    assert_string_equal(zero_stage_strategy(3), "optim_grads_params");
    assert_non_null(strstr(zero_stage_sharded(1), "Adam m, v and the fp32 master sharded"));
    assert_string_equal(zero_mem_kind_key(ZERO_MEM_HANDOVER), "handover");
    char b[32];
    assert_string_equal(zero_bytes_text(512, b, sizeof b), "512 B");
    assert_string_equal(zero_bytes_text(1536, b, sizeof b), "1.50 KiB");
    assert_string_equal(zero_bytes_text(12.5 * 1048576, b, sizeof b), "12.5 MiB");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zero_paper_table_for_7_5b_on_64_ranks),
        cmocka_unit_test(optimizer_bytes_per_rank_are_unsharded_over_dp_up_to_padding),
        cmocka_unit_test(pure_fp32_has_no_separate_master),
        cmocka_unit_test(summary_and_table_read_well),
        cmocka_unit_test(trident_storage_shards_one_more_kind_per_stage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
