/* telem_sampler_numa.c - level 2 memory of each NUMA node, from
 * <sys_root>/devices/system/node/nodeN/meminfo, tag numa_node.
 *
 * The file repeats /proc/meminfo's layout with a "Node N " prefix on each
 * line ("Node 0 MemTotal:  8742688 kB"; drivers/base/node.c).  The files
 * are found and opened once, at open(), and re-read with pread().  The
 * sampler is unsupported where the kernel has no node directory (built
 * without CONFIG_NUMA); a single-node machine still reports node 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_sampler.h"
#include "telem_stext.h"

static const struct {
    const char *key;
    const char *metric;
    double scale;
} s_fields[] = {
    {"MemTotal:", "numa_mem_total_bytes", 1024},
    {"MemFree:", "numa_mem_free_bytes", 1024},
    {"MemUsed:", "numa_mem_used_bytes", 1024},
    {"FilePages:", "numa_mem_file_bytes", 1024},
    {"AnonPages:", "numa_mem_anon_bytes", 1024},
    {"Shmem:", "numa_mem_shmem_bytes", 1024},
    {"Slab:", "numa_mem_slab_bytes", 1024},
    {"HugePages_Total:", "numa_hugepages", 1},
    {"HugePages_Free:", "numa_hugepages_free", 1},
};
#define S_NFIELDS (sizeof s_fields / sizeof s_fields[0])

#define NODE " of a NUMA node (tag numa_node; "
#define M(name, what, field) \
    {name, TELEM_METRIC_GAUGE, "bytes", what NODE field \
     " in /sys/devices/system/node/nodeN/meminfo)."}

static const telem_meta_t s_metrics[] = {
    M("numa_mem_total_bytes", "Physical memory", "MemTotal"),
    M("numa_mem_free_bytes", "Memory not used for anything", "MemFree"),
    M("numa_mem_used_bytes", "Memory in use (MemTotal - MemFree)",
      "MemUsed"),
    M("numa_mem_file_bytes", "Page cache", "FilePages"),
    M("numa_mem_anon_bytes", "Anonymous memory of processes", "AnonPages"),
    M("numa_mem_shmem_bytes", "Shared memory and tmpfs", "Shmem"),
    M("numa_mem_slab_bytes", "Kernel slab caches", "Slab"),
    {"numa_hugepages", TELEM_METRIC_GAUGE, "",
     "Huge pages of the default size in the pool" NODE "HugePages_Total)."},
    {"numa_hugepages_free", TELEM_METRIC_GAUGE, "",
     "Huge pages of the pool not allocated" NODE "HugePages_Free)."},
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

typedef struct {
    telem_stext_file_t *files;
    size_t n;
    telem_stext_t text;
} s_numa_t;

/* One line, "Node N Key: value [kB]"; true when it was one of ours. */
static bool
s_line(char *line, const telem_tag_t *tag, telem_sampler_emit_fn emit,
       void *arg)
{
    if (!telem_stext_starts(line, "Node "))
        return false;
    const char *key = telem_stext_blank(line + 5);
    key += strspn(key, "0123456789");
    key = telem_stext_blank(key);
    const char *colon = strchr(key, ':');
    if (!colon)
        return false;
    size_t klen = (size_t) (colon - key) + 1;
    for (size_t i = 0; i < S_NFIELDS; i++) {
        uint64_t v;
        if (strncmp(key, s_fields[i].key, klen) == 0
            && s_fields[i].key[klen] == '\0') {
            if (telem_stext_u64s(colon + 1, &v, 1) != 1)
                return false;
            emit(arg, s_fields[i].metric, tag, 1,
                 (double) v * s_fields[i].scale);
            return true;
        }
    }
    return false;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    (void) now_ns;
    s_numa_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    int nok = 0, last = TELEM_EIO;
    for (size_t i = 0; i < self->n; i++) {
        telem_stext_file_t *f = &self->files[i];
        int rc = telem_stext_read(&self->text, -1, "", &f->fd);
        if (rc != 0) {
            last = rc;
            continue;
        }
        telem_tag_t tag = {"numa_node", f->name};
        char *pos = self->text.buf, *line;
        bool found = false;
        while ((line = telem_stext_line(&pos)) != NULL)
            found |= s_line(line, &tag, emit, arg);
        if (found)
            nok++;
        else
            last = TELEM_EPROTO;
    }
    return nok > 0 ? 0 : last;
}

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_numa_t *self = *state_p;
    telem_stext_files_free(&self->files, self->n);
    telem_stext_free(&self->text);
    free(self);
    *state_p = NULL;
}

static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    s_numa_t *self = env ? calloc(1, sizeof *self) : NULL;
    int rc = !env ? TELEM_EINVAL : !self ? TELEM_ENOMEM : 0;
    if (self) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/devices/system/node",
                 env->sys_root ? env->sys_root : "/sys");
        int n = telem_stext_open_numbered(dir, "node", "meminfo",
                                          &self->files);
        self->n = n > 0 ? (size_t) n : 0;
        rc = n == TELEM_ENOMEM ? n : n <= 0 ? TELEM_EUNSUPPORTED : 0;
    }
    if (rc != 0) {
        void *p = self;
        s_close(&p);
        self = NULL;
    }
    if (err)
        *err = rc;
    return self;
}

const telem_sampler_vt_t telem_sampler_numa = {
    .name = "numa",
    .min_level = 2,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
