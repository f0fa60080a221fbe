/* tp_fixture.h — what the tensor-parallel tests share: one TP group over the whole world,
 * and deterministic data that any rank can compute for any rank.
 *
 *   int main(int argc, char **argv) {
 *       mpi_test_launch(argc, argv, WORLD);
 *       tp_fixture_init(&argc, &argv, WORLD);      // dist_init + ps_create (tp = WORLD)
 *       ... cmocka tests use tp_fixture_group(), tp_fixture_rank(), tp_fixture_size() ...
 *       return tp_fixture_finish(rc);              // ps_destroy + dist_finalize
 *   }
 *
 * Every rank builds the serial reference itself from tp_fixture_fill() (a pure function of
 * stream and index, like the model's initialisation), so comparing a rank's slice with the
 * serial result needs no communication. A trace hook tallies the collectives by kind.
 *
 * Not here: the tests themselves.
 */
#ifndef TRIDENT_TESTS_TP_FIXTURE_H
#define TRIDENT_TESTS_TP_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

typedef struct comm_group comm_group;

void tp_fixture_init(int *argc, char ***argv, int world);
int tp_fixture_finish(int rc);

comm_group *tp_fixture_group(void); /* the TP group: all ranks, tp = world */
int tp_fixture_rank(void);          /* rank in the TP group */
int tp_fixture_size(void);          /* size of the TP group */

/* x[i] = scale * N(0,1) for (stream, i); a malloc'ed array when x is NULL. */
float *tp_fixture_fill(float *x, size_t n, uint64_t stream, float scale);

/* Collectives seen by the trace hook since the last reset, by operation. */
typedef struct {
    size_t all_reduce_calls, all_reduce_bytes;
    size_t all_gather_calls, all_gather_bytes;
    size_t reduce_scatter_calls, reduce_scatter_bytes;
    size_t other_calls; /* anything else: broadcast, p2p, barrier */
} tp_traffic;
void tp_traffic_reset(void); /* also resets the TP group's counters */
tp_traffic tp_traffic_get(void);

/* Columns [c0, c0+w) of the rows of x (rows, ld) into out (rows, w). */
void tp_fixture_columns(float *out, const float *x, size_t rows, size_t ld, size_t c0, size_t w);

#endif /* TRIDENT_TESTS_TP_FIXTURE_H */
