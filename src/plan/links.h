/* links.h — α and β of each kind of communication on this machine, measured by short MPI
 * jobs through Trident's own communication layer (src/runtime/comm.h): the numbers of
 * calibration.h's "link" lines (2 ranks) and "link-at" lines (4 and 8 ranks, the sizes of
 * groups up to the world the plan is for: a ring of 4 on this machine is not two rings of 2 —
 * with fewer cores than ranks its members take turns).
 *
 * The worker (`trident plan --links-worker FILE`, run by plan_links_measure under mpirun on
 * g ranks) times each kind at a small and a large message, fastest of several rounds spread
 * over the job (round r of every kind before round r + 1 of any), and rank 0 writes
 * "<kind> <bytes> <seconds>" lines (p2p, a pair, only on 2 ranks). In each round every rank
 * also runs the same layer's worth of work 40 times, each timed by its thread CPU time (as the
 * replay view times compute): the median of (the slowest rank's time − this rank's), in the
 * quietest round, is what a collective after compute waits for its last member beyond its
 * transfer — the per-call sync
 * of every collective kind (a pipeline receive's wait is the schedule's, played by the
 * simulator). The fit, per kind, with time_model.h's cost of one call over g ranks (steps s,
 * bytes on the wire w):
 *
 *   β = (t_large − t_small) / (w_large − w_small),   α = (t_small − β·w_small) / s,
 *   sync = max(0, t_after − t_small), t_after = t_small + the arrival gap
 *
 * Between hosts (trident plan --ranks-per-node) nothing is measured yet: the network's α and β
 * are given (plan_links_network), and the time model uses them for groups that span hosts.
 *
 * Not here: what the time model does with them (time_model.h, plan_collective_time).
 */
#ifndef TRIDENT_PLAN_LINKS_H
#define TRIDENT_PLAN_LINKS_H

#include "src/plan/calibration.h"

/* Bytes of the two messages: a latency's and a layer's (the activations a layer's collectives
 * move are tens to hundreds of KB; much larger messages leave the caches and fit another β). */
enum { PLAN_LINK_SMALL = 64, PLAN_LINK_LARGE = 1 << 18 };
enum { PLAN_LINK_WORK = 200000 }; /* multiply-adds of the work timed on both ranks (~0.2 ms) */

/* The network between hosts when none is measured (trident plan --ranks-per-node): 10 Gbit/s
 * Ethernet under TCP, an assumption the table prints, given otherwise by
 * --inter-node-bandwidth and --inter-node-latency. */
#define PLAN_NETWORK_GB_PER_S 1.25
#define PLAN_NETWORK_LATENCY_US 25.0

/* The link of the network from its bandwidth (bytes per second) and latency (seconds per
 * message step): α = latency, β = 1 / bandwidth, sync 0 (the kind's own is kept), `source`. */
plan_link plan_links_network(double bytes_per_s, double latency_s, const char *source);

/* Runs the worker under mpirun on 2 ranks, filling cal->link with the fit (source "measured"),
 * then on 4 and 8 where the world has that many, filling cal->link_group. Dies with one line
 * starting "<who>: " when a job fails. */
void plan_links_measure(plan_calibration *cal, int world, const char *who);

/* Of two measurements of the links, the faster: for every kind and group size, the fit whose
 * large message takes less, and the smaller sync, into cal (another job's load on a shared
 * machine only ever slows a measurement). */
void plan_links_keep_faster(plan_calibration *cal, const plan_calibration *other);

/* The worker: inside an MPI job of 2 to PLAN_LINK_MAX_GROUP ranks, writes the times to `out`
 * (rank 0). Returns 0. */
int plan_links_worker(const char *out);

/* The fit of one kind over g ranks from its three times: fills *l. */
void plan_links_fit(plan_link_kind k, int g, double t_small, double t_large, double t_after,
                    plan_link *l);

#endif /* TRIDENT_PLAN_LINKS_H */
