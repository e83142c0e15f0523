/* fuzz_proc.c - libFuzzer target: telemd's /proc sampler
 * (runtime/telemd/telem_sampler_proc.c): stat, meminfo, loadavg, uptime,
 * net/dev and diskstats, and whole-disk detection through sys/block, read
 * through the sampler's vtable (open on a proc root, sample, close), as
 * telemd does every second.
 *
 * Input: a tree (tests/fuzz/fuzz.h): proc/... is the proc root, sys/block
 * beside it.  The sampler samples twice, so rates are computed: before
 * the second sample, each file next/<name> (next/stat, next/net/dev, ...)
 * is written over proc/<name> in place (the sampler keeps its files open
 * and re-reads them from offset 0, as it does /proc).  Oracles beyond the
 * sanitizers: every value emitted is finite and named by a metric of the
 * sampler's own table; percentages lie in 0..100; tags are a non-empty
 * key and value that fit a name.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "telem_sampler.h"

static const char *const s_files[] = {
    "stat", "meminfo", "loadavg", "uptime", "net/dev", "diskstats"
};

static void
s_emit(void *arg, const char *metric, const telem_tag_t *tags, uint32_t ntags,
       double value)
{
    size_t *n = arg;
    const telem_meta_t *m = telem_sampler_proc.metrics;
    while (m->metric && strcmp(m->metric, metric) != 0)
        m++;
    FZ_CHECK(m->metric != NULL);
    FZ_CHECK(isfinite(value));
    if (strcmp(metric, "cpu_percent") == 0 || strcmp(metric, "used_ram") == 0)
        FZ_CHECK(value >= 0.0 && value <= 100.0);
    FZ_CHECK(ntags == 0 || tags != NULL);
    for (uint32_t i = 0; i < ntags; i++)
        FZ_CHECK(tags[i].key[0] && tags[i].value[0]
                 && strlen(tags[i].value) <= TELEM_NAME_MAX);
    (*n)++;
}

/* Writes next/<f> over proc/<f>, in place, for every file given. */
static void
s_next_round(const char *root)
{
    for (size_t i = 0; i < sizeof s_files / sizeof s_files[0]; i++) {
        char from[FZ_PATH_MAX], to[FZ_PATH_MAX];
        snprintf(from, sizeof from, "%s/next/%s", root, s_files[i]);
        snprintf(to, sizeof to, "%s/proc/%s", root, s_files[i]);
        FILE *f = fopen(from, "rb");
        if (!f)
            continue;
        static char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        fz_write(to, buf, n);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *root = fz_fresh_dir("t");
    fz_tree(root, data, size);
    char proc[FZ_PATH_MAX];
    snprintf(proc, sizeof proc, "%s/proc", root);
    telem_sampler_env_t env = { .node = "n1", .job_uid = 0, .proc_root = proc };
    int err = 0;
    void *st = telem_sampler_proc.open(&env, &err);
    if (!st) {
        FZ_CHECK(err == TELEM_EUNSUPPORTED);
        return 0;
    }
    size_t n = 0;
    telem_sampler_proc.sample(st, 1000000000, s_emit, &n);
    s_next_round(root);
    telem_sampler_proc.sample(st, 2000000000, s_emit, &n);
    telem_sampler_proc.close(&st);
    FZ_CHECK(st == NULL);
    return 0;
}
