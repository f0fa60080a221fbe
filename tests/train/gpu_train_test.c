/* gpu_train_test.c — `trident train --device cuda` against `--device cpu` (tagged gpu: it runs
 * only where a GPU is, e.g. through tools/gpu/run_gpu_train.sh or
 * `bazel test --test_tag_filters=gpu //tests/train:gpu_train_test`).
 *
 * The GPU runs cuBLAS and the CUDA twins, which add in other orders than OpenBLAS and the CPU
 * kernels, so the comparison is within a tolerance, not bit for bit (cpu-guarded vs cpu is
 * bit for bit: tests/train/device_equivalence_test):
 *   - one process, fp32: every logged loss within 1e-5 relative over 20 steps (measured on an
 *     H100: equal to metrics.jsonl's 7 digits);
 *   - one process, bf16 (16-bit parameters and gradients, fp32 masters, the linear products
 *     on bf16 operands: the GPU's tensor-core GEMMs, the CPU's sgemm on the same rounded
 *     values, so the sums' order is the difference): within 2e-2;
 *   - 8 ranks sharing the one GPU (tensor 2 × pipeline 2 × data 2, interleaved, ZeRO; MPI
 *     with host staging) against the serial cpu run: within 1e-5 (measured: 2.2e-7);
 *   - with 2 GPUs or more, 2 data-parallel ranks on NCCL against the serial cpu run: 1e-5.
 * The runs are traced, and their pictures drawn: the serial fp32 run's compute spans are timed
 * by CUDA events (src/trace/trace.h, "Device time"), so on its one stream they follow each
 * other without overlap, inside their steps; the 8-rank trace is causal.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testing.h"

static char g_out[1 << 16];

static const char *k_model =
    "--train-iters 20 --log-interval 1 --num-layers 4 --hidden-size 128 --num-attention-heads 4 "
    "--seq-length 64 --global-batch-size 8 --micro-batch-size 2 --quiet";

static int train(int np, const char *device, const char *run, const char *extra) {
    char cmd[8192], mpirun[2048];
    if (np > 1)
        snprintf(cmd, sizeof cmd, "%s --timeout 600 %s train --device %s %s --run-dir %s %s",
                 test_mpirun_prefix(mpirun, sizeof mpirun, np, ""), test_trident_path(), device,
                 k_model, run, extra);
    else
        snprintf(cmd, sizeof cmd, "%s train --device %s %s --run-dir %s %s", test_trident_path(),
                 device, k_model, run, extra);
    return run_capture(cmd, g_out, sizeof g_out);
}

static int gpus(void) {
    char out[4096];
    if (run_capture("nvidia-smi -L 2>/dev/null | grep -c '^GPU'", out, sizeof out) != 0) return 0;
    return atoi(out);
}

static void compare(const char *cpu_run, const char *gpu_run, double rtol, const char *what) {
    double a[64], b[64];
    int na = read_metric_losses(cpu_run, a, 64), nb = read_metric_losses(gpu_run, b, 64);
    assert_int_equal(na, 20);
    assert_int_equal(nb, 20);
    double worst = 0;
    for (int i = 0; i < na; i++) worst = fmax(worst, fabs(a[i] - b[i]) / fabs(a[i]));
    printf(
        "  %s: max relative loss difference %.3g over %d steps (tolerance %g); loss %.4f -> %.4f\n",
        what, worst, na, rtol, b[0], b[na - 1]);
    if (!(worst <= rtol))
        fail_msg("%s: losses differ by %.3g relative (tolerance %g)", what, worst, rtol);
}

static void cuda_matches_cpu(void **state) {
    (void)state;
    if (gpus() < 1) skip();
    const char *d = test_tmpdir("gpu_train");
    const char *precisions[2] = {"", "--bf16"};
    const double tol[2] = {1e-5, 2e-2};
    for (int p = 0; p < 2; p++) {
        char cpu[4400], gpu[4400], ranks[4400];
        snprintf(cpu, sizeof cpu, "%s/cpu%d", d, p);
        snprintf(gpu, sizeof gpu, "%s/cuda%d", d, p);
        snprintf(ranks, sizeof ranks, "%s/cuda8_%d", d, p);
        if (train(1, "cpu", cpu, precisions[p]) != 0) fail_msg("cpu run failed:\n%s", g_out);
        if (train(1, "cuda", gpu, precisions[p]) != 0) fail_msg("cuda run failed:\n%s", g_out);
        compare(cpu, gpu, tol[p], p ? "serial bf16" : "serial fp32");
        if (p == 0) {
            int spans = assert_run_trace_spans_in_order(gpu); /* timed by CUDA events */
            printf("  trace: %d compute spans in stream order\n", spans);
            assert_true(spans > 20 * 8);
            if (train(8, "cuda", ranks,
                      "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
                      "--num-layers-per-virtual-pipeline-stage 1 --use-distributed-optimizer") != 0)
                fail_msg("8 ranks on one GPU failed:\n%s", g_out);
            compare(cpu, ranks, 1e-5, "8 ranks sharing one GPU (MPI staging)");
            assert_run_trace_causal(ranks);
            assert_run_trace_spans_in_order(ranks);
            if (gpus() >= 2) {
                snprintf(ranks, sizeof ranks, "%s/nccl2", d);
                if (train(2, "cuda", ranks, "") != 0)
                    fail_msg("2 ranks on NCCL failed:\n%s", g_out);
                compare(cpu, ranks, 1e-5, "2 data-parallel ranks on NCCL");
            }
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(cuda_matches_cpu)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
