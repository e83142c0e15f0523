/* bench_fixture.h - the recorded series the storage benches replay.
 *
 * A fixture is `telem_client -f json query` output, gzip'd (bench/data/,
 * docs/performance.md says how each was recorded): {"series": [{"metric",
 * "tags", "points": [[ts_ns, value|null], ...]}, ...]}.  bench_block,
 * bench_store_mem and bench_reload read them through this one loader.
 */
#ifndef BENCH_FIXTURE_H
#define BENCH_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#ifndef BENCH_DATA_DIR
#define BENCH_DATA_DIR "bench/data"
#endif

typedef struct {
    char metric[256];
    char name[512];         /* metric{k="v",...}, as Prometheus writes it */
    uint32_t n;             /* points */
    int64_t *ts;            /* n + 1 slots (the spare one 0) */
    double *val;            /* null values read as NaN */
} bench_series_t;

typedef struct {
    const char *path;
    bench_series_t *s;
    size_t ns;
    uint64_t npoints;       /* over every series */
} bench_fixture_t;

/* Reads the gzip'd fixture at path (through gzip -dc); exits with a
 * message when it cannot be read or holds no series. */
void bench_fixture_load(bench_fixture_t *f, const char *path);

/* Frees what bench_fixture_load() allocated. */
void bench_fixture_free(bench_fixture_t *f);

#endif
