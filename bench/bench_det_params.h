/* bench_det_params.h - a benchmark's -s option (name=value,...) set on a
 * detector (bench_detect, bench_straggler). */
#ifndef BENCH_DET_PARAMS_H
#define BENCH_DET_PARAMS_H

#include "det.h"

/* Sets each name=value of `params` (NULL or "" for none) on d; a pair
 * without '=' or a value the detector refuses ends the benchmark with a
 * message naming `who`.  With `check`, det_check() too (the values that
 * only make sense together). */
void bench_det_params(det_t *d, const char *params, const char *who,
                      int check);

#endif
