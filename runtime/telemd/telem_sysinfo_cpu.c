/* telem_sysinfo_cpu.c - the snapshot's "cpu" and "numa" sections: what
 * lscpu shows.
 *
 * The model, vendor and flags come from the first processor of
 * proc/cpuinfo; the topology from sys/devices/system/cpu, as lscpu takes
 * it: sockets are the distinct physical_package_id of the online CPUs,
 * cores the distinct (package, core_id) pairs, threads the online CPUs.
 * A cache's instances are counted as lscpu counts them: the CPUs that
 * come first in their own shared_cpu_list.  NUMA nodes come from
 * sys/devices/system/node (cpulist, meminfo).
 */
#include "telem_sysinfo_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"

#define S_LINE_MAX 16384          /* longest cpuinfo line looked at */
#define S_CACHES_MAX 16           /* cache indexes of one CPU */

/* ---- proc/cpuinfo ------------------------------------------------------ */

/* The keys of the first processor that go into the document, and the
 * name each gets there. */
static const struct {
    const char *key;
    const char *name;
    int number;
} s_cpuinfo_keys[] = {
    { "vendor_id", "vendor", 0 },     { "model name", "model_name", 0 },
    { "cpu family", "family", 1 },    { "model", "model", 1 },
    { "stepping", "stepping", 1 },    { "microcode", "microcode", 0 },
    { "cpu MHz", "mhz", 1 },          { "bogomips", "bogomips", 1 },
    { "CPU implementer", "implementer", 0 }, { "CPU part", "part", 0 },
};

/* Splits "key\t: value" in place; 0 or -1 when there is no colon. */
static int
s_split(char *line, char **key, char **value)
{
    char *colon = strchr(line, ':');
    if (!colon)
        return -1;
    char *e = colon;
    while (e > line && isspace((unsigned char) e[-1]))
        e--;
    *e = '\0';
    char *v = colon + 1;
    while (isspace((unsigned char) *v))
        v++;
    size_t n = strlen(v);
    while (n > 0 && isspace((unsigned char) v[n - 1]))
        v[--n] = '\0';
    *key = line;
    *value = v;
    return 0;
}

static void
s_flags(tsi_ctx_t *c, json_t *cpu, char *value)
{
    json_t *flags = json_array();
    if (!flags) {
        c->oom = 1;
        return;
    }
    for (char *save = NULL, *f = strtok_r(value, " \t", &save); f;
         f = strtok_r(NULL, " \t", &save))
        tsi_push(c, flags, tsi_str(f));
    tsi_set(c, cpu, "flags", flags);
}

/* A finite number of cpuinfo as JSON: an integer when it is one that
 * int64 holds, else a real (the cast of a larger one is undefined). */
static json_t *
s_number(double d)
{
    if (d > -9.2e18 && d < 9.2e18 && d == (double) (int64_t) d)
        return json_integer((int64_t) d);
    return json_real(d);
}

static void
s_cpuinfo_value(tsi_ctx_t *c, json_t *cpu, const char *key, char *value)
{
    if (strcmp(key, "flags") == 0 || strcmp(key, "Features") == 0) {
        if (!json_object_get(cpu, "flags"))
            s_flags(c, cpu, value);
        return;
    }
    for (size_t i = 0; i < sizeof s_cpuinfo_keys / sizeof s_cpuinfo_keys[0];
         i++) {
        if (strcmp(key, s_cpuinfo_keys[i].key) != 0
            || json_object_get(cpu, s_cpuinfo_keys[i].name))
            continue;
        char *end;
        double d = strtod(value, &end);
        /* NaN and infinities (strtod reads "nan", "inf") are left out:
         * JSON has no such number. */
        if (s_cpuinfo_keys[i].number && end != value && !*end && isfinite(d))
            tsi_set(c, cpu, s_cpuinfo_keys[i].name, s_number(d));
        else if (!s_cpuinfo_keys[i].number)
            tsi_set(c, cpu, s_cpuinfo_keys[i].name, tsi_str(value));
        return;
    }
}

/* Reads the first processor's keys and counts "processor" lines. */
static int
s_cpuinfo(tsi_ctx_t *c, json_t *cpu, int64_t *nproc)
{
    char path[TSI_PATH_MAX];
    snprintf(path, sizeof path, "%s/cpuinfo", c->proc);
    FILE *f = fopen(path, "re");
    if (!f)
        return TELEM_ENOTFOUND;
    char *line = malloc(S_LINE_MAX);
    if (!line) {
        fclose(f);
        return TELEM_ENOMEM;
    }
    int first_done = 0, seen = 0;
    *nproc = 0;
    while (fgets(line, S_LINE_MAX, f)) {
        char *key, *value;
        if (line[0] == '\n') {
            first_done |= seen;
            continue;
        }
        if (s_split(line, &key, &value) != 0)
            continue;
        seen = 1;
        if (strcmp(key, "processor") == 0)
            (*nproc)++;
        if (!first_done)
            s_cpuinfo_value(c, cpu, key, value);
    }
    int bad = ferror(f);
    free(line);
    fclose(f);
    return bad ? TELEM_EIO : seen ? 0 : TELEM_EPROTO;
}

/* ---- topology ---------------------------------------------------------- */

typedef struct {
    int64_t pkg, core;
} s_pair_t;

static int
s_pair_cmp(const void *a, const void *b)
{
    const s_pair_t *x = a, *y = b;
    if (x->pkg != y->pkg)
        return x->pkg < y->pkg ? -1 : 1;
    return x->core < y->core ? -1 : x->core > y->core;
}

/* Sockets and cores of the online CPUs in bits (n of them). */
static int
s_topology(tsi_ctx_t *c, json_t *cpu, const uint8_t *bits, int n)
{
    char dir[TSI_PATH_MAX];
    snprintf(dir, sizeof dir, "%s/devices/system/cpu", c->sys);
    s_pair_t *p = malloc((size_t) n * sizeof *p);
    if (!p)
        return TELEM_ENOMEM;
    int k = 0, rc = 0;
    for (int i = 0; i < TSI_CPUS_MAX && k < n && !rc; i++) {
        if (!tsi_bit(bits, i))
            continue;
        char rel[64];
        snprintf(rel, sizeof rel, "cpu%d/topology/physical_package_id", i);
        if ((rc = tsi_read_i64(dir, rel, &p[k].pkg)) != 0)
            break;
        snprintf(rel, sizeof rel, "cpu%d/topology/core_id", i);
        rc = tsi_read_i64(dir, rel, &p[k++].core);
    }
    if (rc == 0) {
        qsort(p, (size_t) k, sizeof *p, s_pair_cmp);
        int64_t sockets = 0, cores = 0;
        for (int i = 0; i < k; i++) {
            sockets += i == 0 || p[i].pkg != p[i - 1].pkg;
            cores += i == 0 || s_pair_cmp(&p[i], &p[i - 1]) != 0;
        }
        tsi_set(c, cpu, "sockets", json_integer(sockets));
        tsi_set(c, cpu, "cores", json_integer(cores));
        tsi_set(c, cpu, "cores_per_socket", json_integer(cores / sockets));
        tsi_set(c, cpu, "threads_per_core", json_integer(n / cores));
    }
    free(p);
    return rc;
}

/* "32K", "1024 KB", "8M" -> bytes; -1 when malformed. */
static int64_t
s_size(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0 || v > (1LL << 40))
        return -1;
    while (*end == ' ')
        end++;
    int64_t mult = 1;
    switch (*end) {
    case 'K': mult = 1024; end++; break;
    case 'M': mult = 1024 * 1024; end++; break;
    case 'G': mult = 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'B')
        end++;
    return *end ? -1 : v * mult;
}

/* CPUs of bits that come first in their own shared_cpu_list of index
 * `idx`: the cache's instances. */
static int64_t
s_instances(const char *dir, int idx, const uint8_t *bits)
{
    int64_t n = 0;
    for (int i = 0; i < TSI_CPUS_MAX; i++) {
        if (!tsi_bit(bits, i))
            continue;
        char rel[96], buf[256];
        snprintf(rel, sizeof rel, "cpu%d/cache/index%d/shared_cpu_list", i,
                 idx);
        if (tsi_read(dir, rel, buf, sizeof buf) < 0)
            continue;
        char *end;
        long first = strtol(buf, &end, 10);
        n += end != buf && first == i;
    }
    return n;
}

/* One cache of cpu0 (index idx); NULL when it has no level or size. */
static json_t *
s_cache(tsi_ctx_t *c, const char *dir, int idx, const uint8_t *bits)
{
    char rel[96], type[64], size[64];
    int64_t level, ways = 0, line = 0;
    snprintf(rel, sizeof rel, "cpu0/cache/index%d/level", idx);
    if (tsi_read_i64(dir, rel, &level) || level < 0 || level > 16)
        return NULL;
    snprintf(rel, sizeof rel, "cpu0/cache/index%d/size", idx);
    int64_t bytes = tsi_read(dir, rel, size, sizeof size) > 0 ? s_size(size) : -1;
    if (bytes < 0)
        return NULL;
    snprintf(rel, sizeof rel, "cpu0/cache/index%d/type", idx);
    if (tsi_read(dir, rel, type, sizeof type) < 0)
        snprintf(type, sizeof type, "Unknown");
    snprintf(rel, sizeof rel, "cpu0/cache/index%d/ways_of_associativity", idx);
    tsi_read_i64(dir, rel, &ways);
    snprintf(rel, sizeof rel, "cpu0/cache/index%d/coherency_line_size", idx);
    tsi_read_i64(dir, rel, &line);
    int64_t inst = s_instances(dir, idx, bits);
    json_t *j = json_object();
    if (!j)
        return NULL;
    tsi_set(c, j, "level", json_integer(level));
    tsi_set(c, j, "type", tsi_str(type));
    tsi_set(c, j, "size_bytes", json_integer(bytes));
    tsi_set(c, j, "ways", json_integer(ways));
    tsi_set(c, j, "line_bytes", json_integer(line));
    tsi_set(c, j, "instances", json_integer(inst));
    tsi_set(c, j, "total_bytes", json_integer(bytes * inst));
    return j;
}

static void
s_caches(tsi_ctx_t *c, json_t *cpu, const uint8_t *bits)
{
    char dir[TSI_PATH_MAX];
    snprintf(dir, sizeof dir, "%s/devices/system/cpu", c->sys);
    json_t *caches = json_array();
    if (!caches) {
        c->oom = 1;
        return;
    }
    for (int i = 0; i < S_CACHES_MAX; i++) {
        json_t *one = s_cache(c, dir, i, bits);
        if (!one)
            break;
        tsi_push(c, caches, one);
    }
    if (json_array_size(caches) == 0)
        tsi_skip(c, "cpu caches", "%s/cpu0/cache: missing or malformed", dir);
    tsi_set(c, cpu, "caches", caches);
}

/* ---- NUMA -------------------------------------------------------------- */

/* "Node 0 MemTotal:       32768 kB" in node<N>/meminfo -> bytes, or -1. */
static int64_t
s_node_mem(const char *dir, long node)
{
    char rel[64], buf[8192];
    snprintf(rel, sizeof rel, "node%ld/meminfo", node);
    if (tsi_read(dir, rel, buf, sizeof buf) < 0)
        return -1;
    const char *p = strstr(buf, "MemTotal:");
    long long kb;
    if (!p || sscanf(p + 9, "%lld", &kb) != 1 || kb < 0 || kb > (1LL << 50))
        return -1;
    return kb * 1024;
}

static void
s_numa(tsi_ctx_t *c, json_t *doc)
{
    char dir[TSI_PATH_MAX], buf[4096];
    uint8_t bits[TSI_CPUS_MAX / 8];
    snprintf(dir, sizeof dir, "%s/devices/system/node", c->sys);
    int rc = tsi_read(dir, "online", buf, sizeof buf);
    if (rc < 0 || (rc = tsi_cpulist(buf, bits)) <= 0) {
        tsi_skip(c, "numa", "%s/online: %s", dir,
                 rc == 0 ? "no node" : tsi_why(rc));
        return;
    }
    json_t *nodes = json_array();
    for (long i = 0; nodes && i < TSI_CPUS_MAX; i++) {
        if (!tsi_bit(bits, (int) i) || json_array_size(nodes) >= TSI_ENTRIES_MAX)
            continue;
        char rel[64], cpus[4096];
        snprintf(rel, sizeof rel, "node%ld/cpulist", i);
        if (tsi_read(dir, rel, cpus, sizeof cpus) < 0)
            cpus[0] = '\0';
        json_t *n = json_object();
        if (!n)
            break;
        int64_t mem = s_node_mem(dir, i);
        tsi_set(c, n, "node", json_integer(i));
        tsi_set(c, n, "cpus", tsi_str(cpus));
        tsi_set(c, n, "mem_total_bytes", mem >= 0 ? json_integer(mem)
                                                  : json_null());
        tsi_push(c, nodes, n);
    }
    tsi_set(c, doc, "numa", nodes);
}

/* ---- the section ------------------------------------------------------- */

/* Online CPUs into bits and cpu["online"]; their count or an error. */
static int
s_online(tsi_ctx_t *c, json_t *cpu, uint8_t *bits)
{
    char dir[TSI_PATH_MAX], buf[4096];
    snprintf(dir, sizeof dir, "%s/devices/system/cpu", c->sys);
    int rc = tsi_read(dir, "online", buf, sizeof buf);
    if (rc < 0 || (rc = tsi_cpulist(buf, bits)) <= 0) {
        tsi_skip(c, "cpu topology", "%s/online: %s", dir,
                 rc == 0 ? "no CPU" : tsi_why(rc));
        return rc == 0 ? TELEM_EPROTO : rc;
    }
    tsi_set(c, cpu, "online", tsi_str(buf));
    tsi_set(c, cpu, "threads", json_integer(rc));
    return rc;
}

void
tsi_cpu(tsi_ctx_t *c, json_t *doc)
{
    json_t *cpu = json_object();
    uint8_t *bits = malloc(TSI_CPUS_MAX / 8);
    if (!cpu || !bits) {
        json_decref(cpu);
        free(bits);
        c->oom = 1;
        return;
    }
    int64_t nproc = 0;
    int rc = s_cpuinfo(c, cpu, &nproc);
    if (rc)
        tsi_skip(c, "cpuinfo", "%s/cpuinfo: %s", c->proc, tsi_why(rc));
    else
        tsi_set(c, cpu, "processors", json_integer(nproc));
    int n = s_online(c, cpu, bits);
    if (n > 0) {
        if ((rc = s_topology(c, cpu, bits, n)) != 0)
            tsi_skip(c, "cpu topology", "%s/devices/system/cpu/cpu*/topology: %s",
                     c->sys, tsi_why(rc));
        s_caches(c, cpu, bits);
    }
    free(bits);
    tsi_set(c, doc, "cpu", cpu);
    s_numa(c, doc);
}
