/* schedule_arrows.h — the dependency arrows of a schedule picture (`trident schedule --arrows`):
 * one per receiving action, from the box of the action that sent its message (found by its
 * tag) to the receiver's box; thin and light, straight between rows, an arc above the row for
 * the turn-around of a V on one rank. Part of the schedule picture (schedule_draw.c): the
 * layout's box height, row pitch and `until` (a build's cut) decide where they go.
 */
#ifndef TRIDENT_VIZ_SCHEDULE_ARROWS_H
#define TRIDENT_VIZ_SCHEDULE_ARROWS_H

#include "src/pp/schedule.h"
#include "src/pp/schedule_sim.h"
#include "viz/schedule_draw.h"

/* Fills out->arrows / narrow for the receives that start before out->until. */
void viz_sched_arrows_layout(viz_schedule_layout *out, const pp_schedule *s, const pp_sim *sim);
/* Paints one arrow. */
void viz_sched_arrow_draw(cairo_t *cr, const viz_sched_arrow *a);

#endif /* TRIDENT_VIZ_SCHEDULE_ARROWS_H */
