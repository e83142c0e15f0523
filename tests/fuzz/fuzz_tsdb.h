/* fuzz_tsdb.h - what fuzz_tsdb.c and fuzz_http.c share: which parsed
 * OpenTSDB queries are too heavy to execute on every input.
 *
 * A downsample with a fill policy makes one point per bucket of the range
 * for every series: the executor allows 10 M points per sub-query
 * (TSDB_EXEC_MAX_POINTS, checked by test_tsdb_query), which takes ~25 s
 * under ASan.  Inputs that reach the bound would turn the fuzzers' time
 * into a few executions, so the targets parse such queries but execute
 * only those below FZ_TSDB_POINTS (per series).  TELEM_FUZZ_HEAVY=1
 * executes every query: tests/fuzz/run.sh replays the reproducers of
 * tests/fuzz/regress so (one of them, of the executor's memory bound).
 */
#ifndef TELEM_FUZZ_TSDB_H
#define TELEM_FUZZ_TSDB_H

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tsdb_downsample.h"
#include "tsdb_query.h"

#define FZ_TSDB_POINTS 50000

/* 1 when a sub-query of q fills more than FZ_TSDB_POINTS buckets (and
 * TELEM_FUZZ_HEAVY is not 1). */
static inline int
fz_tsdb_heavy(const tsdb_query_t *q)
{
    const char *all = getenv("TELEM_FUZZ_HEAVY");
    if (all && strcmp(all, "1") == 0)
        return 0;
    int heavy = 0;
    for (size_t i = 0; !heavy && i < tsdb_query_count(q); i++) {
        json_t *j = tsdb_query_to_json(q, i);
        const char *spec = json_string_value(json_object_get(j, "downsample"));
        tsdb_downsample_t ds;
        char why[64];
        heavy = spec && tsdb_downsample_parse(spec, &ds, why, sizeof why) == 0
                && ds.fill != TSDB_FILL_NONE
                && tsdb_downsample_max_points(&ds, tsdb_query_start_ms(q),
                                              tsdb_query_end_ms(q))
                       > FZ_TSDB_POINTS;
        json_decref(j);
    }
    return heavy;
}

#endif
