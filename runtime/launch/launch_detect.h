/* launch_detect.h - before a job starts, every detector asked for with
 * --detector is checked against the data it needs.
 *
 * Why: a detector without its data sees nothing and says nothing; the job
 * then runs unwatched while the user believes it is watched.  Each
 * detector's data source is known from its name and its metric:
 *   - any detector: telem_watch must be there (bindir, where it can be
 *     checked: local nodes), and the telemetry level must be 1 or more;
 *   - a metric cg_<kernel>_seconds (slowgpu's default, cg_dgemm_seconds,
 *     or one named with metric=) comes from collectors: without --collect
 *     the launcher starts them, `telem_collect --backend cpu --kernel
 *     dgemm` for dgemm and `--backend cuda --kernel fma` for fma, and says
 *     so; another kernel needs --collect;
 *   - straggler's test kernels (kernels=, cg_dgemm_seconds by default):
 *     the collectors of --collect, or those slowgpu starts, must record
 *     them; where none run, one line says a straggler cannot be excluded
 *     (but on GPU health fields, at level 3);
 *   - proc-threshold reads num_running_processes: level 2 or more;
 *   - a metric gpu_* is collected at level 3, telemd_* at level 4;
 *     gpu-health reads the GPU health series (gpu_xid_total, ...): 3;
 *   - other metrics are the program's own (level 1).
 * A detector name telem_watch does not know is refused too.
 *
 * Thread safety: none; called once before the job starts.
 */
#ifndef LAUNCH_DETECT_H
#define LAUNCH_DETECT_H

#include <stddef.h>

#include "launch_job.h"

/* Checks cfg's detectors (cfg->detectors, cfg->ndetectors) against
 * cfg->level and cfg->collect; `watch` is telem_watch's path, checked for
 * when `check_bin` is 1.  Where collectors are needed and not given, points
 * cfg->collect at default arguments written into collect_buf (which must
 * outlive cfg) and logs one line.  Returns 0, or TELEM_EINVAL with a
 * sentence in `why` naming the detector and the fix (TELEM_ENOTFOUND when
 * telem_watch is missing). */
int launch_detect_check(launch_job_config_t *cfg, const char *watch,
                        int check_bin, char *collect_buf,
                        size_t collect_size, char *why, size_t why_size);

#endif
