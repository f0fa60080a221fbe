/* comm_stage.c — staging of buffers on the wrong side of the host/device line.
 *
 * Callers pass whatever memory their tensors live in (src/device/device.h). MPI reads host
 * memory only, NCCL device memory only, so a buffer on the wrong side goes through one of the
 * group's two staging slots (0: what is sent, 1: what is received), grown on demand:
 *
 *   MPI group,  device buffer:  download -> MPI on the host slot -> upload the result
 *   NCCL group, host buffer:    upload   -> NCCL on the device slot -> download the result
 *
 * So 8 ranks that share one GPU run the GPU path over MPI, with every collective and p2p
 * message staged through host memory, and ranks with a GPU each use NCCL directly. On the
 * cpu device nothing is ever staged (device_owns is false for every pointer). The staging
 * copies count in the operation's time on the timeline: they are part of what it costs.
 *
 * Not here: when an operation stages what (each operation in comm.c says), the backends. */
#include <stdlib.h>

#include "src/core/check.h"
#include "src/device/device_memory.h"
#include "src/runtime/comm_internal.h"

bool comm_needs_staging(const comm_group *g, const void *p) {
    if (!p) return false;
    return comm_is_nccl(g) ? !device_owns(p) : device_owns(p);
}

static void *stage_slot(comm_group *g, int slot, size_t bytes, bool on_device) {
    if (g->stage_cap[slot] < bytes) {
        if (g->stage_on_device[slot]) device_free(g->stage[slot]);
        else free(g->stage[slot]);
        g->stage[slot] = on_device ? device_alloc(bytes, "NCCL staging") : mallocCheck(bytes);
        g->stage_cap[slot] = bytes;
        g->stage_on_device[slot] = on_device;
    }
    return g->stage[slot];
}

/* See comm_internal.h. NCCL: the device's queued work is waited for
 * (NCCL runs on its own stream). */
void *comm_stage_in(comm_group *g, comm_staged *st, int slot, const void *user, size_t bytes,
                    bool read) {
    st->user = (void *)user;
    st->backend = (void *)user;
    st->bytes = 0;
    if (comm_is_nccl(g)) device_sync();
    if (!bytes || !comm_needs_staging(g, user)) return st->backend;
    st->to_device = comm_is_nccl(g);
    st->backend = stage_slot(g, slot, bytes, st->to_device);
    st->bytes = bytes;
    if (read) {
        if (st->to_device) device_upload(st->backend, user, bytes);
        else device_download(st->backend, user, bytes);
    }
    return st->backend;
}

void comm_stage_out(const comm_staged *st) {
    if (!st->bytes) return;
    if (st->to_device) device_download(st->user, st->backend, st->bytes);
    else device_upload(st->user, st->backend, st->bytes);
}
