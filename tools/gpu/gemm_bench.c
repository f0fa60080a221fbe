/* gemm_bench.c — cuBLAS speed on the GEMM shapes of one GPT layer and of the LM head.
 *
 * For a model size (C, V), a micro-batch (B, T) and a tensor-parallel size tp, it times the
 * four matrix products of a transformer layer and the LM head on one GPU, as one rank of a
 * tp-way split holds them (Megatron's column/row-parallel slices):
 *
 *   qkv      (N, C)    @ (3C/tp, C)^T      column-parallel
 *   attproj  (N, C/tp) @ (C, C/tp)^T       row-parallel
 *   fc       (N, C)    @ (4C/tp, C)^T      column-parallel
 *   fcproj   (N, 4C/tp)@ (C, 4C/tp)^T      row-parallel
 *   lm_head  (N, C)    @ (V/tp, C)^T       vocab-parallel
 *
 * with N = B*T, through the kernels of kernels/ops_cuda.h — forward (2*N*C*OC flops) and
 * backward (dinp + dweight, 4*N*C*OC flops), in fp32 (no TF32) and with bf16 inputs (tensor
 * cores, fp32 accumulation) — and prints milliseconds and TFLOP/s per shape. Timing is CUDA
 * events around `--iters` repetitions after `--warmup` untimed ones.
 *
 * Not here: attention's batched products, communication, anything written to a file.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "kernels/ops_cuda.h"
#include "src/core/check.h"
#include "src/core/flags.h"
#include "src/core/rng.h"

typedef struct {
    const char *name;
    size_t C, OC; /* inp (N,C) @ weight (OC,C)^T */
} gemm_shape;

typedef struct {
    cuda_context *ctx;
    size_t N, C, OC;
    int bf16, backward;
    /* device buffers, big enough for the largest shape */
    float *inp, *weight, *out, *dout, *dinp, *dweight;
    uint16_t *inp16, *weight16, *dout16;
} bench_run;

static void run_once(const bench_run *r) {
    if (!r->bf16 && !r->backward)
        cuda_matmul_forward(r->ctx, r->out, r->inp, r->weight, NULL, r->N, r->C, r->OC);
    else if (!r->bf16)
        cuda_matmul_backward(r->ctx, r->dinp, r->dweight, NULL, r->dout, r->inp, r->weight, r->N,
                             r->C, r->OC);
    else if (!r->backward)
        cuda_matmul_forward_bf16(r->ctx, r->out, r->inp16, r->weight16, NULL, r->N, r->C, r->OC);
    else
        cuda_matmul_backward_bf16(r->ctx, r->dinp, r->dweight, NULL, r->dout16, r->inp16,
                                  r->weight16, r->N, r->C, r->OC);
}

/* Milliseconds per call, averaged over `iters` calls after `warmup` untimed ones. */
static double time_ms(const bench_run *r, int warmup, int iters) {
    for (int i = 0; i < warmup; i++) run_once(r);
    cudaEvent_t start, stop;
    cudaCheck(cudaEventCreate(&start));
    cudaCheck(cudaEventCreate(&stop));
    cudaCheck(cudaEventRecord(start, r->ctx->stream));
    for (int i = 0; i < iters; i++) run_once(r);
    cudaCheck(cudaEventRecord(stop, r->ctx->stream));
    cudaCheck(cudaEventSynchronize(stop));
    float ms = 0.0f;
    cudaCheck(cudaEventElapsedTime(&ms, start, stop));
    cudaCheck(cudaEventDestroy(start));
    cudaCheck(cudaEventDestroy(stop));
    return (double)ms / iters;
}

/* Fills a device array with N(0, scale^2) values (through a host buffer), and its bf16 twin. */
static void fill(cuda_context *ctx, float *dev, uint16_t *dev16, size_t n, uint64_t stream,
                 float scale) {
    float *h = mallocCheck(n * sizeof(float));
    for (size_t i = 0; i < n; i++) h[i] = scale * rng_normal(7, stream, i);
    cuda_upload(ctx, dev, h, n * sizeof(float));
    cuda_fp32_to_bf16(ctx, dev16, dev, n);
    free(h);
}

int main(int argc, char **argv) {
    int C = 768, T = 1024, B = 8, V = 50304, tp = 1, iters = 20, warmup = 3, device = 0;
    flag_spec specs[] = {
        {"--hidden-size", FLAG_INT, &C, "C, the model width", NULL},
        {"--seq-length", FLAG_INT, &T, "T, tokens per sequence", NULL},
        {"--micro-batch-size", FLAG_INT, &B, "B, sequences per micro-batch", NULL},
        {"--vocab-size", FLAG_INT, &V, "V, vocabulary rows (padded)", NULL},
        {"--tensor-model-parallel-size", FLAG_INT, &tp, "tp: this rank's slice of each GEMM", NULL},
        {"--iters", FLAG_INT, &iters, "timed repetitions per shape", NULL},
        {"--warmup", FLAG_INT, &warmup, "untimed repetitions first", NULL},
        {"--device", FLAG_INT, &device, "GPU to use", NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    flags_parse("gemm_bench", "gemm_bench [flags]: cuBLAS TFLOP/s on a GPT layer's GEMM shapes",
                specs, nspecs, argc - 1, argv + 1, NULL, 0);
    if (C < 1 || T < 1 || B < 1 || V < 1 || iters < 1 || warmup < 0)
        die("gemm_bench: sizes and --iters must be >= 1 (got C %d T %d B %d V %d iters %d)", C, T,
            B, V, iters);
    if (tp < 1 || C % tp || V % tp)
        die("gemm_bench: --tensor-model-parallel-size %d must divide --hidden-size %d and "
            "--vocab-size %d",
            tp, C, V);
    if (cuda_device_count() == 0) {
        printf("gemm_bench: no GPU visible; nothing to measure\n");
        return 77;
    }

    const size_t N = (size_t)B * T, c = (size_t)C, p = (size_t)tp;
    const gemm_shape shapes[] = {
        {"qkv", c, 3 * c / p},    {"attproj", c / p, c},         {"fc", c, 4 * c / p},
        {"fcproj", 4 * c / p, c}, {"lm_head", c, (size_t)V / p},
    };
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    size_t maxC = 0, maxOC = 0;
    for (int s = 0; s < nshapes; s++) {
        if (shapes[s].C > maxC) maxC = shapes[s].C;
        if (shapes[s].OC > maxOC) maxOC = shapes[s].OC;
    }

    cuda_context ctx;
    cuda_context_init(&ctx, device);
    struct cudaDeviceProp prop;
    cudaCheck(cudaGetDeviceProperties(&prop, device));

    /* One arena for everything: fp32 operands, their bf16 copies, and the outputs. */
    const size_t n_inp = N * maxC, n_w = maxOC * maxC, n_out = N * maxOC;
    const size_t f32[] = {n_inp, n_w, n_out, n_out, n_inp, n_w};
    size_t bytes = 0;
    for (int i = 0; i < 6; i++) bytes += cuda_arena_footprint(f32[i] * sizeof(float));
    bytes += cuda_arena_footprint(n_inp * 2) + cuda_arena_footprint(n_w * 2) +
             cuda_arena_footprint(n_out * 2);
    cuda_arena arena;
    cuda_arena_init(&arena, "gemm_bench", bytes);
    bench_run r = {.ctx = &ctx, .N = N};
    float **views[] = {&r.inp, &r.weight, &r.out, &r.dout, &r.dinp, &r.dweight};
    cuda_arena_take_floats(&arena, views, f32, 6);
    r.inp16 = cuda_arena_take(&arena, n_inp * 2);
    r.weight16 = cuda_arena_take(&arena, n_w * 2);
    r.dout16 = cuda_arena_take(&arena, n_out * 2);
    fill(&ctx, r.inp, r.inp16, n_inp, 1, 1.0f);
    fill(&ctx, r.weight, r.weight16, n_w, 2, 0.02f);
    fill(&ctx, r.dout, r.dout16, n_out, 3, 1.0f);
    cuda_zero(&ctx, r.dinp, n_inp * sizeof(float));
    cuda_zero(&ctx, r.dweight, n_w * sizeof(float));
    cuda_context_sync(&ctx);

    printf("gemm_bench on %s (sm_%d%d): N = B*T = %d*%d = %zu, C %d, V %d, tp %d, %d iters\n",
           prop.name, prop.major, prop.minor, B, T, N, C, V, tp, iters);
    printf("%-8s %6s %6s %6s | %-19s %-19s | %-19s %-19s\n", "shape", "N", "C", "OC",
           "fp32 fwd ms TFLOP/s", "fp32 bwd ms TFLOP/s", "bf16 fwd ms TFLOP/s",
           "bf16 bwd ms TFLOP/s");
    for (int s = 0; s < nshapes; s++) {
        r.C = shapes[s].C;
        r.OC = shapes[s].OC;
        const double flops = 2.0 * (double)N * (double)r.C * (double)r.OC; /* one product */
        printf("%-8s %6zu %6zu %6zu |", shapes[s].name, N, r.C, r.OC);
        for (int bf16 = 0; bf16 < 2; bf16++) {
            for (int bwd = 0; bwd < 2; bwd++) {
                r.bf16 = bf16;
                r.backward = bwd;
                double ms = time_ms(&r, warmup, iters);
                double tf = (bwd ? 2.0 : 1.0) * flops / (ms * 1e-3) / 1e12;
                printf(" %8.3f %9.1f ", ms, tf);
            }
            printf("|");
        }
        printf("\n");
    }
    cuda_arena_free(&arena);
    cuda_context_free(&ctx);
    return 0;
}
