/* comm_tag.h — the range of point-to-point message tags: one limit for every package.
 *
 * MPI guarantees tags 0 .. 32767 on every implementation (MPI_TAG_UB >= 32767). comm keeps
 * the top one for its rings (comm_ring.c), so a caller's tag is 0 .. COMM_MAX_TAG:
 *
 *   0 ............................ COMM_MAX_TAG = 32766 | COMM_RING_TAG = 32767
 *   comm_send / comm_recv / comm_sendrecv               | ring reduce-scatter / all-gather
 *
 * The pipeline schedule numbers its messages 0 .. 2·m·p·v − 1 (pp_tag in src/pp/schedule.h),
 * so a schedule needs 2·m·p·v <= COMM_MAX_TAG + 1; schedule.c and the trainer's flag check
 * (src/train/config.c) both test that against this constant.
 *
 * Not here: anything else about messages (comm.h). This header has no dependencies, so the
 * pure-data schedule can include it without linking MPI.
 */
#ifndef TRIDENT_RUNTIME_COMM_TAG_H
#define TRIDENT_RUNTIME_COMM_TAG_H

#define COMM_MAX_TAG 32766  /* largest tag a caller may use */
#define COMM_RING_TAG 32767 /* reserved for comm's rings */

#endif /* TRIDENT_RUNTIME_COMM_TAG_H */
