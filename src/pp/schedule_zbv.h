/* schedule_zbv.h — ZB-V in its published order, a part of the schedule library (schedule.h has the
 * manual; this header only joins schedule.c to schedule_zbv.c).
 *
 * Not here: the V placement itself (pp_stage / pp_stage_owner in schedule.c).
 */
#ifndef TRIDENT_PP_SCHEDULE_ZBV_H
#define TRIDENT_PP_SCHEDULE_ZBV_H

#include "src/pp/schedule.h"

/* Fills out->actions (3·m·v = 6m of them, allocated by the caller), out->warmup (forwards
 * before the rank's first B) and out->cooldown (actions after its last F). */
void pp_zbv_plan(const pp_config *cfg, int rank, pp_rank_plan *out);

#endif /* TRIDENT_PP_SCHEDULE_ZBV_H */
