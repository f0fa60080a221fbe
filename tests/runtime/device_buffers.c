/* device_buffers.c — see device_buffers.h. */
#include "tests/runtime/device_buffers.h"

#include <cuda_runtime.h>

#include "src/core/check.h"

static void ok(cudaError_t e, const char *what) {
    if (e != cudaSuccess) die("%s: %s", what, cudaGetErrorString(e));
}

void *dev_alloc_copy(const void *host, size_t bytes) {
    void *d = NULL;
    ok(cudaMalloc(&d, bytes ? bytes : 1), "cudaMalloc");
    if (bytes) ok(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
    return d;
}

void dev_to_host(void *host, const void *dev, size_t bytes) {
    ok(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

void dev_zero(void *dev, size_t bytes) { ok(cudaMemset(dev, 0, bytes), "cudaMemset"); }

void dev_free(void *dev) { ok(cudaFree(dev), "cudaFree"); }
