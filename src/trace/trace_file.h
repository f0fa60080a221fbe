/* trace_file.h — one trace file read back, as the reader holds it: shared by the reader
 * (trace_read.c) and the matching of a run's messages (trace_run.c), which completes its
 * events' t_ready. Internal to src/trace; everyone else reads a file through trace.h.
 */
#ifndef TRIDENT_TRACE_TRACE_FILE_H
#define TRIDENT_TRACE_TRACE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "src/trace/trace.h"

struct trace_file {
    char path[4096];
    trace_header h; /* h.config_json points at config */
    char *config;
    char **strings; /* nstrings NUL-terminated copies */
    int nstrings;
    trace_event *ev;
    size_t n;
    uint64_t dropped;
};

/* Sets coll_entered, coll_last and every matched collective's t_ready from the collective ids
 * and the headers' clock offsets (trace_run.c; again after trace_run_fix_clocks). */
void trace_run_time_collectives(trace_run *r);

#endif /* TRIDENT_TRACE_TRACE_FILE_H */
