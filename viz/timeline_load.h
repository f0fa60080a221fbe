/* timeline_load.h — a measured timeline from a run's trace files.
 *
 * Picks one training step (TRACE_STEP events bound steps; a step is complete when every rank
 * has closed it; by default the last one without evaluation), puts every rank on rank 0's clock (the header's clock_offset) and keeps
 * that step's events only. An event belongs to step k when
 *   - it carries step == k (forward, backward, optimizer, data: they know their step), or
 *   - it carries no step (step -1: messages, memory samples) and started inside the same
 *     rank's TRACE_STEP k span.
 * So the previous step's optimizer and the next step's forwards are not in the picture even
 * when they overlap it in time. Nothing is clipped: a slice begun in step k is drawn whole
 * in step k, and the window (0 .. duration) grows to hold it. Time is shifted so the window
 * starts at 0. Sends and receives carry the pairing computed by trace_run_read().
 *
 * Not here: drawing; MPI.
 */
#ifndef TRIDENT_VIZ_TIMELINE_LOAD_H
#define TRIDENT_VIZ_TIMELINE_LOAD_H

#include <stddef.h>

#include "src/trace/trace.h"
#include "viz/timeline.h"

/* The complete steps of a run, ascending: returns their number and (if out is not NULL)
 * fills up to cap of them. A trace without any TRACE_STEP event has none. */
int viz_run_complete_steps(const trace_run *r, int *out, int cap);
/* True if any rank recorded a TRACE_STEP event. */
int viz_run_has_steps(const trace_run *r);

/* The step every timeline shows by default: the last complete step in which no rank
 * evaluated (a held-out evaluation records TRACE_EVAL forwards with the step it follows, and
 * would fill most of the picture), or the last complete step when every step evaluated; -1
 * when no step is complete. Evaluation is drawn only when asked: an explicit step that has it. */
int viz_run_default_step(const trace_run *r);

/* The timeline of step `step` (-1: viz_run_default_step(); the whole trace when the run
 * has no TRACE_STEP events at all). NULL and one line in err when that step is not complete
 * on every rank. `name` names the panel (usually the run directory). */
viz_timeline *viz_timeline_from_run(const trace_run *r, const char *name, int step, char *err,
                                    size_t errlen);

#endif /* TRIDENT_VIZ_TIMELINE_LOAD_H */
