/* device_equivalence_test.c — the GPU path's data movement, checked without a GPU.
 *
 * `--device cpu-guarded` runs the path `--device cuda` runs — every tensor in device memory,
 * tokens uploaded, losses and norms downloaded, every MPI message staged through host memory,
 * checkpoints downloaded and uploaded — but with the CPU kernels, and with device memory
 * unreadable by host code outside a kernel (a stray host access ends the run). Because the
 * kernels are the same, the result must be the cpu run's, bit for bit: every parameter, Adam
 * moment and fp32 master weight of the final checkpoint, on every rank, for
 *   - one process, fp32;
 *   - 8 ranks, tensor 2 × pipeline 2 × data 2, interleaved 1F1B, ZeRO, bf16, with a
 *     checkpoint saved halfway and resumed (the second half loads it).
 * The one-process cpu-guarded run is traced through the device clock (the timing markers'
 * CPU twin, as a cuda run through CUDA events): its spans follow each other, inside their steps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/ckpt/tensorfile.h"
#include "tests/support/testing.h"

static char g_out[1 << 16];

static void train(int np, const char *device, const char *dir, const char *args) {
    char cmd[8192], mpirun[2048];
    if (np > 1)
        snprintf(cmd, sizeof cmd, "%s --timeout 300 %s train --device %s %s",
                 test_mpirun_prefix(mpirun, sizeof mpirun, np, ""), test_trident_path(), device,
                 args);
    else snprintf(cmd, sizeof cmd, "%s train --device %s %s", test_trident_path(), device, args);
    int rc = run_capture(cmd, g_out, sizeof g_out);
    if (rc != 0) fail_msg("%s (in %s) exited with %d:\n%s", cmd, dir, rc, g_out);
}

/* Every tensor of every rank file of checkpoint iteration `it` in a and b: same bytes. */
static void same_checkpoints(const char *a, const char *b, int it, int world) {
    for (int r = 0; r < world; r++) {
        char pa[4400], pb[4400], err[512];
        snprintf(pa, sizeof pa, "%s/iter_%07d/rank_%05d.tck", a, it, r);
        snprintf(pb, sizeof pb, "%s/iter_%07d/rank_%05d.tck", b, it, r);
        tf_reader *ra = tf_reader_open(pa, err, sizeof err);
        if (!ra) fail_msg("%s", err);
        tf_reader *rb = tf_reader_open(pb, err, sizeof err);
        if (!rb) fail_msg("%s", err);
        assert_int_equal(tf_reader_count(ra), tf_reader_count(rb));
        for (size_t i = 0; i < tf_reader_count(ra); i++) {
            const tf_tensor *x = tf_reader_tensor(ra, i), *y = tf_reader_find(rb, x->name);
            if (!y) fail_msg("rank %d: tensor %s missing on the guarded device", r, x->name);
            assert_int_equal(x->nbytes, y->nbytes);
            if (memcmp(x->data, y->data, x->nbytes) != 0)
                fail_msg("rank %d: tensor %s differs between --device cpu and cpu-guarded", r,
                         x->name);
        }
        tf_reader_close(ra);
        tf_reader_close(rb);
    }
}

static void one_process_is_bit_identical(void **state) {
    (void)state;
    const char *base = test_tmpdir("device_serial");
    const char *devs[2] = {"cpu", "cpu-guarded"};
    char ck[2][4400];
    for (int d = 0; d < 2; d++) {
        char args[8192];
        snprintf(ck[d], sizeof ck[d], "%s/%s_ck", base, devs[d]);
        snprintf(
            args, sizeof args,
            "--train-iters 6 --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length "
            "32 "
            "--global-batch-size 4 --micro-batch-size 2 --eval-interval 3 --eval-iters 1 --quiet "
            "--run-dir %s/%s --save %s",
            base, devs[d], ck[d]);
        train(1, devs[d], base, args);
    }
    same_checkpoints(ck[0], ck[1], 6, 1);
    /* The cpu-guarded run's spans went through the device clock (the markers' CPU twin). */
    char run[4400];
    snprintf(run, sizeof run, "%s/cpu-guarded", base);
    assert_true(assert_run_trace_spans_in_order(run) >= 6 * 4);
}

static void eight_ranks_3d_zero_bf16_with_resume_are_bit_identical(void **state) {
    (void)state;
    const char *base = test_tmpdir("device_3d");
    const char *devs[2] = {"cpu", "cpu-guarded"};
    char ck[2][4400];
    for (int d = 0; d < 2; d++) {
        snprintf(ck[d], sizeof ck[d], "%s/%s_ck", base, devs[d]);
        for (int half = 0; half < 2; half++) {
            char args[8192];
            snprintf(args, sizeof args,
                     "--train-iters %d --num-layers 4 --hidden-size 64 --num-attention-heads 4 "
                     "--seq-length 32 --global-batch-size 8 --micro-batch-size 1 "
                     "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
                     "--num-layers-per-virtual-pipeline-stage 1 --use-distributed-optimizer --bf16 "
                     "--quiet --no-trace --run-dir %s/%s_%d --save %s %s %s",
                     half ? 6 : 3, base, devs[d], half, ck[d], half ? "--load" : "",
                     half ? ck[d] : "");
            train(8, devs[d], base, args);
        }
    }
    same_checkpoints(ck[0], ck[1], 3, 8);
    same_checkpoints(ck[0], ck[1], 6, 8);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_process_is_bit_identical),
        cmocka_unit_test(eight_ranks_3d_zero_bf16_with_resume_are_bit_identical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
