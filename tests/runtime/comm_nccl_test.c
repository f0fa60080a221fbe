/* comm_nccl_test.c — the NCCL backend on one GPU (world size 1, no mpirun): every operation
 * on device buffers through a one-rank NCCL communicator, including sends to oneself that
 * are queued and posted with the next receive, and a host buffer staged through the device.
 * The buffers come from the device module (device_alloc on --device cuda), as the trainer's
 * do: comm.c tells device memory from host memory by device_owns(). (The first version
 * allocated with cudaMalloc behind the module's back: comm.c then took every buffer for host
 * memory and staged it with a host memcpy from a device pointer — a segfault, found on the
 * first GPU run.) Tagged "gpu" and "manual": CI has no GPU; without one it exits 77. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/precision/convert.h"
#include "src/runtime/comm.h"
#include "src/runtime/dist.h"
#include "src/runtime/parallel_state.h"
#include "src/device/device_memory.h"
#include "tests/support/testing.h"

/* bytes of device memory holding a copy of host[bytes] */
static void *dev_alloc_copy(const void *host, size_t bytes) {
    void *d = device_alloc(bytes, "test buffers");
    device_upload(d, host, bytes);
    return d;
}

static int g_events;
static void count_events(const comm_event *e, void *ctx) {
    (void)e;
    (void)ctx;
    g_events++;
}

static void every_operation_works_on_device_memory(void **state) {
    (void)state;
    pg_layout l;
    char err[128];
    assert_true(pg_layout_make(&l, 1, 1, 1, 1, 1, 1, NULL, err, sizeof err));
    parallel_state *ps = ps_create_with(&l, 0, COMM_NCCL);
    comm_group *g = ps->tp;
    assert_int_equal(comm_backend_of(g), COMM_NCCL);
    enum { n = 1001 };
    float h[n], back[n];
    for (int i = 0; i < n; i++) h[i] = (float)i - 3.5f;
    float *d = dev_alloc_copy(h, sizeof h), *d2 = dev_alloc_copy(h, sizeof h);
    comm_set_trace_hook(count_events, NULL);

    comm_all_reduce(g, d, n, COMM_FLOAT32, COMM_SUM);
    device_download(back, d, sizeof back);
    expect_close(back, h, n, 0, 0, "all_reduce of one rank");

    uint16_t hb[n], bb[n];
    for (int i = 0; i < n; i++) hb[i] = prec_fp32_to_bf16((float)(i % 50));
    uint16_t *db = dev_alloc_copy(hb, sizeof hb);
    comm_all_reduce(g, db, n, COMM_BF16, COMM_SUM);
    device_download(bb, db, sizeof bb);
    assert_memory_equal(bb, hb, sizeof hb);

    device_zero(d2, sizeof h);
    comm_all_gather(g, d, d2, n, COMM_FLOAT32);
    device_download(back, d2, sizeof back);
    expect_close(back, h, n, 0, 0, "all_gather of one rank");

    device_zero(d2, sizeof h);
    comm_reduce_scatter(g, d, d2, n, COMM_FLOAT32, COMM_SUM);
    device_download(back, d2, sizeof back);
    expect_close(back, h, n, 0, 0, "reduce_scatter of one rank");

    comm_broadcast(g, d, n, COMM_FLOAT32, 0);
    comm_barrier(g);

    /* send, send, then recv, recv — to oneself */
    float *r1 = dev_alloc_copy(h, sizeof h), *r2 = dev_alloc_copy(h, sizeof h);
    device_zero(r1, sizeof h);
    device_zero(r2, sizeof h);
    comm_send(g, d, n, COMM_FLOAT32, 0, 1);
    comm_send(g, d, 10, COMM_FLOAT32, 0, 2);
    comm_recv(g, r1, n, COMM_FLOAT32, 0, 1);
    comm_recv(g, r2, 10, COMM_FLOAT32, 0, 2);
    device_download(back, r1, sizeof back);
    expect_close(back, h, n, 0, 0, "send/recv to self");
    device_download(back, r2, 10 * sizeof(float));
    expect_close(back, h, 10, 0, 0, "second send/recv to self");

    comm_sendrecv(g, d, n, 0, r2, n, 0, COMM_FLOAT32, 3);
    device_download(back, r2, sizeof back);
    expect_close(back, h, n, 0, 0, "sendrecv with oneself");
    comm_all_reduce(g, d, 0, COMM_FLOAT32, COMM_SUM); /* zero length */

    /* a host buffer on an NCCL group: staged through the device and back */
    memcpy(back, h, sizeof back);
    comm_all_reduce(g, back, n, COMM_FLOAT32, COMM_SUM);
    expect_close(back, h, n, 0, 0, "all_reduce of a host buffer (staged)");
    comm_wait_sends(g);
    comm_set_trace_hook(NULL, NULL);
    assert_int_equal(g_events, 13);

    device_free(d);
    device_free(d2);
    device_free(db);
    device_free(r1);
    device_free(r2);
    ps_destroy(ps);
}

int main(int argc, char **argv) {
    dist_init(&argc, &argv);
    char err[512];
    if (dist_bind_device() < 0 || !device_init(DEVICE_CUDA, dist_bind_device(), err, sizeof err)) {
        fprintf(stderr, "comm_nccl_test: no CUDA device visible; skipped\n");
        dist_finalize();
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_operation_works_on_device_memory),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    device_shutdown();
    dist_finalize();
    return failed;
}
