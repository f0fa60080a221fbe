/* context_cuda.cu — the plumbing of kernels/ops_cuda.h: error checks, the context (device,
 * stream, cuBLAS handle, reduction scratch, timing events), host<->device copies and the arena
 * allocator.
 *
 * Not here: any numerical kernel.
 */
#include "kernels/cuda_common.cuh"

#include <string.h>

#include "src/core/clock.h"

using namespace trident_cuda;

/* ---- error checks -------------------------------------------------------------------------- */

static const char *cuda_hint(cudaError_t err) {
    switch (err) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
        return "no usable GPU: check nvidia-smi and CUDA_VISIBLE_DEVICES";
    case cudaErrorMemoryAllocation:
        return "out of device memory: lower --micro-batch-size or raise model parallelism";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
        return "kernels were built for sm_90 (Hopper): rebuild with a -gencode for this GPU "
               "(tools/gpu/README.md)";
    case cudaErrorIllegalAddress:
        return "a kernel touched memory it does not own: run under compute-sanitizer";
    default: return "run with CUDA_LAUNCH_BLOCKING=1 to find the kernel that failed";
    }
}

extern "C" void cuda_check_(cudaError_t err, const char *what, const char *file, int line) {
    if (err == cudaSuccess) return;
    fprintf(stderr, "%s:%d: CUDA error in %s: %s (%s)\n", file, line, what, cudaGetErrorString(err),
            cudaGetErrorName(err));
    check_fail_(file, line, "cuda call failed", cuda_hint(err));
}

extern "C" void cublas_check_(cublasStatus_t st, const char *what, const char *file, int line) {
    if (st == CUBLAS_STATUS_SUCCESS) return;
    fprintf(stderr, "%s:%d: cuBLAS error in %s: %s\n", file, line, what, cublasGetStatusString(st));
    check_fail_(file, line, "cublas call failed",
                st == CUBLAS_STATUS_NOT_INITIALIZED ? "was cuda_context_init() called?"
                : st == CUBLAS_STATUS_INVALID_VALUE ? "a size or leading dimension is wrong"
                                                    : "check the matrix sizes and pointers");
}

/* ---- context --------------------------------------------------------------------------------- */

extern "C" int cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky "no device / no driver" error */
        return 0;
    }
    return n;
}

extern "C" void cuda_context_init(cuda_context *ctx, int device) {
    int n = cuda_device_count();
    if (device < 0 || device >= n)
        die("cuda: device %d requested but %d GPU(s) are visible (CUDA_VISIBLE_DEVICES?)", device,
            n);
    ctx->device = device;
    cudaCheck(cudaSetDevice(device));
    cudaCheck(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    cublasCheck(cublasCreate(&ctx->cublas));
    cublasCheck(cublasSetStream(ctx->cublas, ctx->stream));
    /* Plain fp32 for cublasSgemm (no TF32), so GEMMs match the CPU to ~1e-5; the bf16
     * products ask for tensor cores through their compute type, not through this mode. */
    cublasCheck(cublasSetMathMode(ctx->cublas, CUBLAS_DEFAULT_MATH));
    /* Scratch of the reductions that answer on the host (reduce_cuda.cu). */
    cudaCheck(cudaMalloc((void **)&ctx->partials, CUDA_REDUCE_BLOCKS * sizeof(double)));
    cudaCheck(cudaMalloc((void **)&ctx->flag, sizeof(int)));
    /* Timing events: the reference now, the pool as cuda_event_record asks for ids. */
    ctx->events = NULL;
    ctx->nevents = 0;
    cudaCheck(cudaEventCreate(&ctx->ref));
    ctx->t_ref = 0.0;
}

extern "C" void cuda_context_free(cuda_context *ctx) {
    cudaCheck(cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < ctx->nevents; i++) cudaCheck(cudaEventDestroy(ctx->events[i]));
    free(ctx->events);
    cudaCheck(cudaEventDestroy(ctx->ref));
    cudaCheck(cudaFree(ctx->flag));
    cudaCheck(cudaFree(ctx->partials));
    cublasCheck(cublasDestroy(ctx->cublas));
    cudaCheck(cudaStreamDestroy(ctx->stream));
    memset(ctx, 0, sizeof *ctx);
}

extern "C" void cuda_context_sync(const cuda_context *ctx) {
    cudaCheck(cudaGetLastError());
    cudaCheck(cudaStreamSynchronize(ctx->stream));
}

extern "C" void cuda_upload(const cuda_context *ctx, void *dev_dst, const void *host_src,
                            size_t bytes) {
    if (bytes == 0) return;
    cudaCheck(cudaMemcpyAsync(dev_dst, host_src, bytes, cudaMemcpyHostToDevice, ctx->stream));
    cudaCheck(cudaStreamSynchronize(ctx->stream));
}

extern "C" void cuda_download(const cuda_context *ctx, void *host_dst, const void *dev_src,
                              size_t bytes) {
    if (bytes == 0) return;
    cudaCheck(cudaMemcpyAsync(host_dst, dev_src, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    cudaCheck(cudaStreamSynchronize(ctx->stream));
}

extern "C" void cuda_zero(const cuda_context *ctx, void *dev, size_t bytes) {
    if (bytes == 0) return;
    cudaCheck(cudaMemsetAsync(dev, 0, bytes, ctx->stream));
}

/* ---- timing events --------------------------------------------------------------------------- */

extern "C" void cuda_event_record(cuda_context *ctx, size_t i) {
    if (i >= ctx->nevents) { /* grow the pool: double it, or up to i, at least 64 events */
        size_t n = 2 * ctx->nevents > i + 1 ? 2 * ctx->nevents : i + 1;
        if (n < 64) n = 64;
        cudaEvent_t *grown = (cudaEvent_t *)mallocCheck(n * sizeof *grown);
        if (ctx->nevents) memcpy(grown, ctx->events, ctx->nevents * sizeof *grown);
        for (size_t k = ctx->nevents; k < n; k++) cudaCheck(cudaEventCreate(&grown[k]));
        free(ctx->events);
        ctx->events = grown;
        ctx->nevents = n;
    }
    cudaCheck(cudaEventRecord(ctx->events[i], ctx->stream));
}

extern "C" double cuda_events_reference(cuda_context *ctx) {
    cuda_context_sync(ctx);
    cudaCheck(cudaEventRecord(ctx->ref, ctx->stream));
    cudaCheck(cudaEventSynchronize(ctx->ref));
    ctx->t_ref = time_now();
    return ctx->t_ref;
}

extern "C" double cuda_event_time(const cuda_context *ctx, size_t i) {
    CHECK(i < ctx->nevents, "cuda_event_time of an event that was never recorded");
    float ms = 0.0f; /* from event i to the reference: >= 0, the reference came last */
    cudaCheck(cudaEventElapsedTime(&ms, ctx->events[i], ctx->ref));
    return ctx->t_ref - 1e-3 * (double)ms;
}

/* ---- arena ----------------------------------------------------------------------------------- */

static const size_t ARENA_ALIGN = 256;

extern "C" size_t cuda_arena_footprint(size_t bytes) {
    return (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
}

extern "C" void cuda_arena_init(cuda_arena *a, const char *name, size_t capacity) {
    a->name = name;
    a->base = NULL;
    a->capacity = cuda_arena_footprint(capacity);
    a->used = 0;
    if (a->capacity) cudaCheck(cudaMalloc((void **)&a->base, a->capacity));
}

extern "C" void *cuda_arena_take(cuda_arena *a, size_t bytes) {
    size_t need = cuda_arena_footprint(bytes);
    if (need > a->capacity - a->used)
        die("cuda arena '%s' is full: a view of %zu bytes does not fit in the %zu of %zu bytes "
            "left (size the arena with cuda_arena_footprint() over its views)",
            a->name, bytes, a->capacity - a->used, a->capacity);
    void *view = a->base + a->used;
    a->used += need;
    return view;
}

extern "C" void cuda_arena_take_floats(cuda_arena *a, float **views[], const size_t *counts,
                                       size_t n) {
    for (size_t i = 0; i < n; i++)
        *views[i] = (float *)cuda_arena_take(a, counts[i] * sizeof(float));
}

extern "C" void cuda_arena_reset(cuda_arena *a) { a->used = 0; }

extern "C" void cuda_arena_free(cuda_arena *a) {
    if (a->base) cudaCheck(cudaFree(a->base));
    a->base = NULL;
    a->capacity = a->used = 0;
}
