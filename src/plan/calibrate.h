/* calibrate.h — `trident plan --calibrate` as one call: the kernels and the model's block
 * (calibration.h, plan_calibration_measure), then short serial `trident train` runs of the
 * model, traced, min(world, cores) of them at once (the cores as busy as the job will keep
 * them), twice, and the links under MPI (links.h) twice, in turn: another job's load comes in
 * stretches of seconds, and the faster of each is kept. Their step CPU time
 * after warm-up (the lower quartile of the steps: another job's load lands on some steps, the
 * copies' own contention on all) over the time model's prediction of that step from the
 * numbers above is the trainer factor (what the trainer and a busy machine add around the
 * kernels: the executor, pools, loss bookkeeping, shared caches). CPU time, as the replay view
 * counts a step: time descheduled by other processes on a shared machine is not the layout's.
 * With experts, the same runs' metrics give the expert load of every ep up to `world`
 * (calibration.h): the runs start from the initialisation a layout's run starts from, and
 * route as it will in its first steps.
 *
 * Runs this program again (/proc/self/exe): under mpirun for the links, plainly for the
 * serial runs (scratch run directories in /tmp, removed after). About 15 s for the demo's model
 * at 8 ranks.
 *
 * Not here: the file (calibration.h), the model (time_model.h).
 */
#ifndef TRIDENT_PLAN_CALIBRATE_H
#define TRIDENT_PLAN_CALIBRATE_H

#include "src/plan/calibration.h"
#include "src/train/config.h"

#define PLAN_CALIBRATE_SECONDS 6.0 /* the in-process measurements together */

/* Every number of cal for the model of c, for layouts of up to `world` ranks. Dies with one
 * line starting "<who>: " when a measurement's run fails. */
void plan_calibrate(const train_config *c, int world, plan_calibration *cal, const char *who);

#endif /* TRIDENT_PLAN_CALIBRATE_H */
