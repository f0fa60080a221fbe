/* replay_internal.h — what the two files of the replay share (replay.h is the manual): one
 * rank's program and clocks, one collective instance, and the helpers both read events with.
 *
 *   replay.c         the programs (pass 1), the simulation (pass 3), the replayed run
 *   replay_match.c   collective calls matched across ranks into instances, and what each
 *                    instance costs (pass 2)
 */
#ifndef TRIDENT_TRACE_REPLAY_INTERNAL_H
#define TRIDENT_TRACE_REPLAY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "src/trace/trace.h"

enum { OP_BEGIN, OP_END, OP_ADVANCE, OP_COMM, OP_MEMORY, OP_ISSUE };

typedef struct {
    int type;
    int ev;    /* event index in the rank's file (all but ADVANCE) */
    double dt; /* ADVANCE */
} rp_op;

typedef struct {
    int n, cap;
    rp_op *ops;
} rp_program;

typedef struct { /* one rank during the replay */
    const trace_file *f;
    int n;                /* events */
    int nkept;            /* events replayed (all but TRACE_OPEN and TRACE_STREAM ones) */
    int *order;           /* (nkept) their indices, by start time */
    double *t0, *tr, *t1; /* (n) replayed times */
    int *inst;            /* (n) collective instance, -1 otherwise */
    int *stream_of;       /* (n) for the main lane's wait on a stream collective: that
                             collective's index, -1 otherwise */
    double *at;           /* (n) where the event begins in the program: its start, but a
                             stream collective's issue (no later than its wait) */
    rp_program prog;
    int piece_end; /* where the program's last piece of compute ends (an op index) */
    int pc;        /* next op */
    bool arrived;  /* the collective at pc has registered its arrival */
    double now;    /* the rank's replay clock */
    /* the communication stream: collectives issued by the program, run in issue order */
    int *queue, head, tail; /* (n) issued, not yet finished: queue[head..tail) */
    double *issued;         /* (n) replayed time each stream collective was issued */
    bool *finished;         /* (n) a stream collective's replayed end is known */
    bool stream_arrived;    /* the collective at the queue's head has registered its arrival */
    double stream_now;      /* the stream's clock: when its previous collective ended */
    double p2p_bandwidth;   /* bytes per second of the fastest measured p2p copy, 0 unknown */
} rp_rank;

typedef struct { /* one collective instance */
    int members, arrived;
    double latest, cost;
    const char *op; /* its class: op, bytes and members */
    long long bytes;
} rp_inst;

static inline const trace_event *rp_ev(const rp_rank *k, int i) {
    return trace_file_event(k->f, (size_t)i);
}
static inline bool rp_on_stream(const trace_event *e) { return (e->flags & TRACE_STREAM) != 0; }
/* The part of a communication event after its data was there, capped by its cpu if known. */
static inline double rp_transfer(const trace_event *e) {
    double t = e->t_end - (e->t_ready > e->t_start ? e->t_ready : e->t_start);
    if (t < 0) t = 0;
    if (e->cpu >= 0 && e->cpu < t) t = e->cpu;
    return t;
}

/* Fills ks[*].inst (each replayed collective call's instance, -1 for the rest) from r's
 * matching (r->coll) and returns the instances (*ninst of them), each with its replayed
 * members and its transfer cost. */
rp_inst *rp_match_collectives(const trace_run *r, rp_rank *ks, int *ninst);

#endif /* TRIDENT_TRACE_REPLAY_INTERNAL_H */
