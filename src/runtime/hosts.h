/* hosts.h — which machine each rank runs on.
 *
 * Ranks on one host share its memory and its clock: Open MPI moves their messages through
 * shared memory (single copy where the kernel allows, dist.h), and one CLOCK_MONOTONIC times
 * them all. Ranks on different hosts share neither: their bytes cross the network, and their
 * clocks disagree until clock_sync.h aligns them. Layouts care too: Megatron puts a tensor-
 * parallel group inside one host, whose all-reduces are the hottest traffic (groups.h).
 *
 *   hosts_init();                       // collective, in dist_init(): every rank's host name
 *   if (hosts_count() > 1) ...          // ranks on more than one machine
 *   hosts_of(rank), hosts_name(h)       // host index (in order of first rank) and its name
 *   hosts_same(a, b)                    // one host: shared memory and one clock
 *   hosts_describe(buf, cap)            // "2 hosts: node1 (ranks 0-1), node2 (ranks 2-3)"
 *
 * A host is a host name (gethostname): two processes that report the same name are on one
 * host. Without mpirun: one host, this one. TRIDENT_TEST_HOSTS="a,a,b,b" (tests only) makes
 * rank k report the k-th name, so the bookkeeping is testable on one machine without
 * namespaces; tools/cluster.sh makes real separate hosts (UTS, network and time namespaces).
 *
 * Not here: clock alignment (clock_sync.h), transports (dist.h), group layouts (groups.h).
 */
#ifndef TRIDENT_RUNTIME_HOSTS_H
#define TRIDENT_RUNTIME_HOSTS_H

#include <stdbool.h>
#include <stddef.h>

enum { HOSTS_NAME_MAX = 32 }; /* a host name's bytes kept, NUL included (the trace's field) */

/* Gathers every rank's host name (an all-gather over MPI_COMM_WORLD when MPI runs). */
void hosts_init(void);
/* Frees the table (dist_finalize). */
void hosts_free(void);

int hosts_count(void);         /* distinct hosts, >= 1 */
int hosts_of(int rank);        /* 0 .. hosts_count()-1, by first rank */
const char *hosts_name(int h); /* the host's name */
bool hosts_same(int a, int b); /* ranks a and b on one host */
/* One line: "1 host: NAME (ranks 0-3)" or "2 hosts: node1 (ranks 0-1), node2 (ranks 2-3)";
 * ranks listed as ranges. Returns buf. */
const char *hosts_describe(char *buf, size_t cap);

#endif /* TRIDENT_RUNTIME_HOSTS_H */
