/* device_memory.h — where this process keeps its tensors: the current device and its memory.
 *
 * The memory half of src/device (device.h is the kernel half and includes this header). It is
 * its own library, //src/device:memory, so that code that only moves bytes — communication
 * (src/runtime/comm.c stages device buffers through the host), checkpoints — links no BLAS:
 *
 *   device_init(DEVICE_CUDA, dist_bind_device(), err, sizeof err);  // once, after dist_init()
 *   float *w = device_alloc(n * sizeof(float), "parameters");  // zeroed, device memory
 *   device_upload(w, host_w, n * sizeof(float));
 *
 * The three devices (cpu, cuda, cpu-guarded) are described in device.h. On cpu-guarded, device
 * pages are readable only between device_guard_open() and device_guard_close() (kernels and
 * copies open them); any other host access faults at once and names the address.
 *
 * Not here: the kernels (device.h), which GPU a rank gets (dist_bind_device, src/runtime/dist.h).
 */
#ifndef TRIDENT_DEVICE_DEVICE_MEMORY_H
#define TRIDENT_DEVICE_DEVICE_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { DEVICE_CPU = 0, DEVICE_CUDA = 1, DEVICE_CPU_GUARDED = 2 } device_kind;

/* "cpu", "cuda", "cpu-guarded". */
const char *device_kind_name(device_kind k);
/* Parses one of the names above; false for anything else. */
bool device_kind_parse(const char *s, device_kind *out);
/* Whether this build can run kind at all (cuda: built with nvcc). */
bool device_kind_built(device_kind k);

/* Makes `kind` this process's device. cuda: GPU number `gpu` (the rank's binding from
 * dist_bind_device(); -1 = none), one stream,
 * one cuBLAS handle. Returns false with a message naming the problem (no CUDA build, no GPU)
 * and changes nothing. Calling it again with the kind already current is a no-op. */
bool device_init(device_kind kind, int gpu, char *err, size_t errlen);
/* Back to the cpu device; frees the CUDA context. Every device_alloc'ed buffer must be freed. */
void device_shutdown(void);
device_kind device_current(void);
/* True on the cpu device: device pointers are ordinary host pointers. */
bool device_is_host(void);
/* GPU index in use (cuda), else -1. */
int device_gpu(void);
/* GPUs visible to this process; 0 without a CUDA build, a driver or a GPU (never dies). */
int device_cuda_count(void);

/* ---- memory --------------------------------------------------------------------------- */

/* `bytes` of zeroed device memory (never NULL; dies naming `what` when it cannot). `what`
 * labels the buffer for device_bytes_in_use_of: a string literal. */
void *device_alloc(size_t bytes, const char *what);
void device_free(void *p);
/* True when p points into a live device_alloc buffer of a non-host device (cuda,
 * cpu-guarded); always false on the cpu device, where everything is host memory. */
bool device_owns(const void *p);
/* Trident's own allocator accounting, on every device (the cpu one too): bytes currently
 * allocated with device_alloc (what was asked for, not page or allocator rounding), and the
 * most ever at once since the start or the last reset. Every buffer of the model, the
 * optimizer, the activations, the work spaces and the pipeline messages comes from
 * device_alloc, so the peak is what src/train/memory_predict.h predicts. Not counted: host
 * arrays outside device_alloc (the data, the trace recorder, MPI's private copies of pending
 * sends, the communication library's rings and staging slots). */
size_t device_bytes_in_use(void);
size_t device_bytes_peak(void);
/* The peak starts again from what is in use now (between two runs in one process). */
void device_bytes_peak_reset(void);
/* Bytes in use in the buffers device_alloc'ed with this `what` ("parameters", "Adam first
 * moments", ...): the measurement beside a prediction's kinds. `what` must be a string that
 * outlives its buffers (every caller passes a literal). */
size_t device_bytes_in_use_of(const char *what);

void device_upload(void *dev_dst, const void *host_src, size_t bytes);
void device_download(void *host_dst, const void *dev_src, size_t bytes);
void device_copy(void *dev_dst, const void *dev_src, size_t bytes);
void device_zero(void *dev, size_t bytes);
/* Waits for everything queued (cuda); a no-op on the CPU devices. NCCL calls wait on it
 * (their own stream), benchmarks so that they time kernels, not launches (the trace instead
 * uses device.h's timing markers, which need no wait per span). */
void device_sync(void);

/* ---- for the kernels of device.c -------------------------------------------------------- */

/* cpu-guarded: device pages readable and writable until the matching close; nests. A no-op
 * on the other devices. */
void device_guard_open(void);
void device_guard_close(void);

#ifdef TRIDENT_CUDA
#include "kernels/ops_cuda.h"
/* The cuda device's stream and cuBLAS handle (valid while the cuda device is current). */
cuda_context *device_cuda_context(void);
#endif

#endif /* TRIDENT_DEVICE_DEVICE_MEMORY_H */
