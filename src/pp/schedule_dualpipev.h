/* schedule_dualpipev.h — DualPipeV's order, a part of the schedule library (schedule.h has the
 * manual; this header only joins schedule.c to schedule_dualpipev.c, whose comment says what
 * the schedule promises and the eight steps it takes).
 */
#ifndef TRIDENT_PP_SCHEDULE_DUALPIPEV_H
#define TRIDENT_PP_SCHEDULE_DUALPIPEV_H

#include "src/pp/schedule.h"

/* Rank `rank`'s 6m actions into out (out->n == 6m, out->actions allocated). */
void pp_dualpipev_plan(const pp_config *cfg, int rank, pp_rank_plan *out);

#endif /* TRIDENT_PP_SCHEDULE_DUALPIPEV_H */
