/* bench_curve_dict.c - what CURVE costs the dictionary's pipelined puts
 * and gets (bench_curve.h).
 *
 * Two telem_dictd processes on 127.0.0.1, one node and one copy each,
 * --sync none (no fdatasync: the transport's cost is not hidden behind
 * the disk's), one with --keys and one with $TELEM_KEYS empty.  One
 * client (ddict.h, opened with $TELEM_KEYS set and empty) runs
 * bench_dict's pipelined cells: batches of 64 puts or gets of 64 B and of
 * 64 KiB values, 1 s per cell and side, the sides alternating within each
 * of 3 repetitions; the median is reported.  Every reply is checked.
 * Target: CURVE at >= 0.5x plain.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_common.h"
#include "bench_curve.h"
#include "ddict.h"
#include "telem_error.h"

#define S_DEPTH 64
#define S_REPS 3
#define S_SECONDS 1.0
#define S_KEYS_SMALL 10000
#define S_KEYS_LARGE 256

typedef struct {
    int is_get;
    size_t vsize;
    const char *id, *what;
} s_cell_t;

static const s_cell_t s_cells[] = {
    { 0, 64, "dict_set_64", "dictionary put 64 B, 64 deep (k ops/s)" },
    { 1, 64, "dict_get_64", "dictionary get 64 B, 64 deep (k ops/s)" },
    { 0, 65536, "dict_set_64k", "dictionary put 64 KiB, 64 deep (k ops/s)" },
    { 1, 65536, "dict_get_64k", "dictionary get 64 KiB, 64 deep (k ops/s)" },
};

static int
s_nkeys(size_t vsize)
{
    return vsize > 1024 ? S_KEYS_LARGE : S_KEYS_SMALL;
}

/* One batch of S_DEPTH operations from key *i on; exits on any error. */
static void
s_round(ddict_t *d, ddict_batch_t *b, const s_cell_t *cell,
        const uint8_t *val, uint64_t *i)
{
    char keys[S_DEPTH][32];
    ddict_batch_clear(b);
    for (int k = 0; k < S_DEPTH; k++) {
        int kl = snprintf(keys[k], sizeof keys[k], "b%zu:%06llu",
                          cell->vsize, (unsigned long long)
                          (*i)++ % (unsigned long long) s_nkeys(cell->vsize));
        if (cell->is_get)
            ddict_batch_get(b, keys[k], (size_t) kl);
        else
            ddict_batch_put(b, keys[k], (size_t) kl, val, cell->vsize);
    }
    int rc = ddict_batch_exec(d, b);
    for (int k = 0; rc == 0 && k < S_DEPTH; k++) {
        size_t vl = 0;
        rc = ddict_batch_result(b, (size_t) k, NULL, &vl, NULL);
        if (rc == 0 && cell->is_get && vl != cell->vsize)
            rc = TELEM_EPROTO;
    }
    if (rc)
        bench_die("ddict batch", "%s", telem_strerror(rc));
}

/* Operations per second of one cell for S_SECONDS. */
static double
s_run(ddict_t *d, ddict_batch_t *b, const s_cell_t *cell, const uint8_t *val)
{
    uint64_t i = 0;
    int64_t t0 = bench_now_ns(), stop = t0 + (int64_t) (S_SECONDS * 1e9);
    while (bench_now_ns() < stop)
        s_round(d, b, cell, val, &i);
    return (double) i / ((double) (bench_now_ns() - t0) / 1e9);
}

/* Writes every key the get cells of this size read. */
static void
s_fill(ddict_t *d, ddict_batch_t *b, size_t vsize, const uint8_t *val)
{
    s_cell_t put = { 0, vsize, "", "" };
    uint64_t i = 0;
    while (i < (uint64_t) s_nkeys(vsize))
        s_round(d, b, &put, val, &i);
}

static ddict_t *
s_open(const bcurve_ctx_t *ctx, const char *nodefile, int curve)
{
    bcurve_client_keys(ctx, curve);
    int err = 0;
    ddict_t *d = ddict_open(nodefile, "bench", 10000, &err);
    if (!d)
        bench_die("ddict_open", "%s: %s", nodefile, telem_strerror(err));
    return d;
}

static void
s_cell(const s_cell_t *cell, ddict_t *d[2], ddict_batch_t *b,
       const uint8_t *val, bcurve_table_t *t)
{
    double v[2][S_REPS], med[2];
    for (int rep = 0; rep < S_REPS; rep++)
        for (int c = 0; c < 2; c++)
            v[(c + rep) % 2][rep] = s_run(d[(c + rep) % 2], b, cell, val);
    for (int c = 0; c < 2; c++)
        med[c] = bench_median_d(v[c], S_REPS);
    printf("  %-44s %10.0f %10.0f ops/s  %8.1f %8.1f MB/s\n", cell->what,
           med[0], med[1], med[0] * (double) cell->vsize / 1e6,
           med[1] * (double) cell->vsize / 1e6);
    bcurve_add(t, &(bcurve_row_t) {
        .id = cell->id, .what = cell->what, .plain = med[0] / 1e3,
        .curve = med[1] / 1e3, .rate = 1, .target = "CURVE >= 0.5x plain",
        .met = med[1] >= 0.5 * med[0] });
}

void
bcurve_part_dict(const bcurve_ctx_t *ctx, bcurve_table_t *t)
{
    printf("\n-- 4. dictionary, pipelined (64 deep), one client: "
           "telem_dictd --bind 127.0.0.1 --sync none, --keys and not; "
           "median of %d x %.0f s\n", S_REPS, S_SECONDS);
    printf("  %-44s %10s %10s        %8s %8s\n", "cell", "plain", "CURVE",
           "plain", "CURVE");
    bcurve_daemon_t srv[2];
    ddict_t *d[2];
    for (int c = 0; c < 2; c++) {
        char rundir[512], nodefile[600];
        snprintf(rundir, sizeof rundir, "%s/dict-%s", ctx->dir,
                 c ? "curve" : "plain");
        snprintf(nodefile, sizeof nodefile, "%s/dict_nodes", rundir);
        if (mkdir(rundir, 0700) != 0)
            bench_die("mkdir", "%s", rundir);
        bcurve_dictd(ctx, rundir, nodefile, c, &srv[c]);
        d[c] = s_open(ctx, nodefile, c);
    }
    ddict_batch_t *b = ddict_batch_new();
    uint8_t *val = malloc(65536);
    if (!b || !val)
        bench_die("bench_curve", "out of memory");
    for (size_t k = 0; k < 65536; k++)
        val[k] = (uint8_t) (k * 131u + 7u);
    for (size_t i = 0; i < sizeof s_cells / sizeof s_cells[0]; i++) {
        if (s_cells[i].is_get)
            for (int c = 0; c < 2; c++)
                s_fill(d[c], b, s_cells[i].vsize, val);
        s_cell(&s_cells[i], d, b, val, t);
    }
    free(val);
    ddict_batch_destroy(&b);
    for (int c = 0; c < 2; c++) {
        ddict_close(&d[c]);
        bcurve_stop(&srv[c]);
    }
}
