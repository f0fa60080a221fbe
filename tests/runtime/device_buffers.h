/* device_buffers.h — the few CUDA memory calls comm_nccl_test needs, kept in their own
 * library so that the test itself includes no CUDA header (cuda_runtime.h next to cmocka's
 * repository trips Bazel's include checking). Every call dies on a CUDA error. */
#ifndef TRIDENT_TESTS_RUNTIME_DEVICE_BUFFERS_H
#define TRIDENT_TESTS_RUNTIME_DEVICE_BUFFERS_H

#include <stddef.h>

void *dev_alloc_copy(const void *host, size_t bytes); /* cudaMalloc + copy host -> device */
void dev_to_host(void *host, const void *dev, size_t bytes);
void dev_zero(void *dev, size_t bytes);
void dev_free(void *dev);

#endif /* TRIDENT_TESTS_RUNTIME_DEVICE_BUFFERS_H */
