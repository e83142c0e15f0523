/* telem_sysinfo.c - the one-time system snapshot (telem_sysinfo.h): the
 * document and its small sections (memory, boot time, kernel, OS, telem).
 *
 * Boot time: CLOCK_REALTIME read on both sides of CLOCK_BOOTTIME; the
 * boot instant is the midpoint of the two realtime readings minus the
 * time since boot, and its accuracy half the gap between them plus the
 * clocks' resolution.  The tightest of a few tries is kept (a preemption
 * between the reads widens one try, not all).  Boot time so taken is
 * what the realtime clock says now about the boot, as the kernel's own
 * /proc/stat btime is (which it truncates to the second); without the
 * clocks (fixtures) btime is the source, accurate to 1 s.
 *
 * Call order: this file calls telem_sysinfo_cpu.c, telem_sysinfo_dev.c
 * and telem_sysinfo_read.c (telem_sysinfo_int.h).
 */
#include "telem_sysinfo_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "telem_error.h"
#include "telem_time.h"

#define S_BOOT_TRIES 5

/* ---- memory ------------------------------------------------------------ */

static void
s_memory(tsi_ctx_t *c, json_t *doc)
{
    static const struct { const char *key, *name; int64_t scale; } keys[] = {
        { "MemTotal", "total_bytes", 1024 },
        { "MemAvailable", "available_bytes", 1024 },
        { "SwapTotal", "swap_total_bytes", 1024 },
        { "Hugepagesize", "hugepage_bytes", 1024 },
        { "HugePages_Total", "hugepages_total", 1 },
    };
    char *buf = malloc(TSI_FILE_MAX);
    int rc = buf ? tsi_read(c->proc, "meminfo", buf, TSI_FILE_MAX) : TELEM_ENOMEM;
    json_t *mem = rc >= 0 ? json_object() : NULL;
    for (size_t i = 0; mem && i < sizeof keys / sizeof keys[0]; i++) {
        char pat[32];
        snprintf(pat, sizeof pat, "%s:", keys[i].key);
        const char *p = strstr(buf, pat);
        /* the key at a line's start, its value a count that fits */
        long long v;
        if (!p || (p != buf && p[-1] != '\n')
            || sscanf(p + strlen(pat), "%lld", &v) != 1 || v < 0
            || v > INT64_MAX / keys[i].scale)
            continue;
        tsi_set(c, mem, keys[i].name, json_integer(v * keys[i].scale));
    }
    if (mem && !json_object_get(mem, "total_bytes")) {
        json_decref(mem);
        mem = NULL;
        rc = TELEM_EPROTO;
    }
    free(buf);
    if (mem)
        tsi_set(c, doc, "memory", mem);
    else
        tsi_skip(c, "memory", "%s/meminfo: %s", c->proc,
                 rc == TELEM_EPROTO ? "no MemTotal line" : tsi_why(rc));
}

/* ---- boot time --------------------------------------------------------- */

static int64_t
s_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t) ts.tv_sec * TELEM_NS_PER_SEC + ts.tv_nsec;
}

static int64_t
s_resolution(clockid_t id)
{
    struct timespec ts;
    if (clock_getres(id, &ts) != 0)
        return 1;
    return (int64_t) ts.tv_sec * TELEM_NS_PER_SEC + ts.tv_nsec;
}

/* /proc/stat's btime, seconds; -1 when missing or malformed. */
static int64_t
s_btime(tsi_ctx_t *c)
{
    char *buf = malloc(TSI_FILE_MAX);
    long long v = -1;
    if (buf && tsi_read(c->proc, "stat", buf, TSI_FILE_MAX) >= 0) {
        const char *p = strstr(buf, "\nbtime ");
        if (!p || sscanf(p + 7, "%lld", &v) != 1 || v < 0)
            v = -1;
    }
    free(buf);
    return v;
}

static void
s_boot(tsi_ctx_t *c, json_t *doc)
{
    int64_t btime = s_btime(c);
    json_t *boot = json_object();
    if (!boot) {
        c->oom = 1;
        return;
    }
    if (c->o->live) {
        int64_t best_gap = INT64_MAX, best = 0;
        for (int i = 0; i < S_BOOT_TRIES; i++) {
            int64_t r1 = s_clock(CLOCK_REALTIME);
            int64_t b = s_clock(CLOCK_BOOTTIME);
            int64_t r2 = s_clock(CLOCK_REALTIME);
            if (r2 - r1 < best_gap) {
                best_gap = r2 - r1;
                best = r1 + (r2 - r1) / 2 - b;
            }
        }
        int64_t res = s_resolution(CLOCK_REALTIME) + s_resolution(CLOCK_BOOTTIME);
        tsi_set(c, boot, "time_ns", json_integer(best));
        tsi_set(c, boot, "accuracy_ns", json_integer(best_gap / 2 + res));
        tsi_set(c, boot, "source", tsi_str("clock_realtime-clock_boottime"));
    } else if (btime >= 0) {
        tsi_set(c, boot, "time_ns", json_integer(btime * TELEM_NS_PER_SEC));
        tsi_set(c, boot, "accuracy_ns", json_integer(TELEM_NS_PER_SEC));
        tsi_set(c, boot, "source", tsi_str("proc_stat_btime"));
    } else {
        json_decref(boot);
        tsi_skip(c, "boot", "%s/stat: no btime line, and no clocks (not "
                 "live)", c->proc);
        return;
    }
    if (btime >= 0)
        tsi_set(c, boot, "btime_s", json_integer(btime));
    tsi_set(c, doc, "boot", boot);
}

/* ---- kernel and OS ----------------------------------------------------- */

static void
s_kernel(tsi_ctx_t *c, json_t *doc)
{
    static const char *const files[][2] = {
        { "sysname", "sys/kernel/ostype" },
        { "release", "sys/kernel/osrelease" },
        { "version", "sys/kernel/version" },
        { "hostname", "sys/kernel/hostname" },
    };
    json_t *k = json_object();
    if (!k) {
        c->oom = 1;
        return;
    }
    struct utsname u;
    if (c->o->live && uname(&u) == 0) {
        tsi_set(c, k, "sysname", tsi_str(u.sysname));
        tsi_set(c, k, "release", tsi_str(u.release));
        tsi_set(c, k, "version", tsi_str(u.version));
        tsi_set(c, k, "machine", tsi_str(u.machine));
        tsi_set(c, k, "hostname", tsi_str(u.nodename));
    } else {
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            char buf[1024];
            if (tsi_read(c->proc, files[i][1], buf, sizeof buf) >= 0)
                tsi_set(c, k, files[i][0], tsi_str(buf));
        }
    }
    if (json_object_size(k) == 0) {
        json_decref(k);
        tsi_skip(c, "kernel", "%s/sys/kernel: missing", c->proc);
        return;
    }
    tsi_set(c, doc, "kernel", k);
}

/* One os-release value: unquoted, "double" or 'single' quoted with
 * backslash escapes; in place.  -1 when malformed. */
static int
s_unquote(char *v)
{
    size_t n = strlen(v);
    if (n == 0 || (v[0] != '"' && v[0] != '\''))
        return 0;
    if (n < 2 || v[n - 1] != v[0])
        return -1;
    char *w = v;
    for (size_t i = 1; i < n - 1; i++) {
        if (v[i] == '\\' && i + 1 < n - 1)
            i++;
        *w++ = v[i];
    }
    *w = '\0';
    return 0;
}

static void
s_os(tsi_ctx_t *c, json_t *doc)
{
    static const char *const keys[] = {
        "NAME", "ID", "ID_LIKE", "VERSION", "VERSION_ID",
        "VERSION_CODENAME", "PRETTY_NAME"
    };
    char *buf = malloc(TSI_FILE_MAX);
    int rc = buf ? tsi_read(c->etc, "os-release", buf, TSI_FILE_MAX) : TELEM_ENOMEM;
    json_t *os = rc >= 0 ? json_object() : NULL;
    for (char *save = NULL, *line = os ? strtok_r(buf, "\n", &save) : NULL;
         line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (line[0] == '#' || !eq)
            continue;
        *eq = '\0';
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (strcmp(line, keys[i]) == 0 && s_unquote(eq + 1) == 0) {
                char name[32];
                size_t k = 0;
                for (; keys[i][k] && k < sizeof name - 1; k++)
                    name[k] = (char) tolower((unsigned char) keys[i][k]);
                name[k] = '\0';
                tsi_set(c, os, name, tsi_str(eq + 1));
            }
    }
    if (os && json_object_size(os) == 0) {
        json_decref(os);
        os = NULL;
        rc = TELEM_EPROTO;
    }
    free(buf);
    if (os)
        tsi_set(c, doc, "os", os);
    else
        tsi_skip(c, "os", "%s/os-release: %s", c->etc, tsi_why(rc));
}

/* ---- telem's own section ----------------------------------------------- */

static json_t *
s_kv(const telem_sysinfo_kv_t *kv)
{
    switch (kv->kind) {
    case TELEM_SYSINFO_INT: return json_integer(kv->i);
    case TELEM_SYSINFO_BOOL: return json_boolean(kv->i != 0);
    case TELEM_SYSINFO_DBL: return json_real(kv->d);
    default: return kv->s ? tsi_str(kv->s) : json_null();
    }
}

static void
s_telem(tsi_ctx_t *c, json_t *doc)
{
    json_t *t = json_object(), *cfg = json_object();
    if (!t || !cfg) {
        json_decref(t);
        json_decref(cfg);
        c->oom = 1;
        return;
    }
    if (c->o->version)
        tsi_set(c, t, "version", tsi_str(c->o->version));
    for (size_t i = 0; i < c->o->nconfig; i++)
        if (c->o->config[i].key)
            tsi_set(c, cfg, c->o->config[i].key, s_kv(&c->o->config[i]));
    tsi_set(c, t, "config", cfg);
    tsi_set(c, doc, "telem", t);
}

/* ---- the document ------------------------------------------------------ */

static int
s_root(char *out, const char *dir, const char *root, const char *name)
{
    int n = dir ? snprintf(out, TSI_ROOT_MAX, "%s", dir)
                : snprintf(out, TSI_ROOT_MAX, "%s/%s", root ? root : "", name);
    return n > 0 && n < TSI_ROOT_MAX ? 0 : TELEM_EINVAL;
}

static void
s_sections(tsi_ctx_t *c, json_t *doc)
{
    s_telem(c, doc);
    tsi_cpu(c, doc);
    s_memory(c, doc);
    s_boot(c, doc);
    s_kernel(c, doc);
    s_os(c, doc);
    tsi_block(c, doc);
    tsi_net(c, doc);
    tsi_gpu(c, doc);
    tsi_gpu_amd(c, doc);
    tsi_gpu_intel(c, doc);
}

int
telem_sysinfo_collect(const telem_sysinfo_opts_t *o, char **json_p,
                      size_t *len)
{
    if (!o || !json_p || !len)
        return TELEM_EINVAL;
    *json_p = NULL;
    *len = 0;
    tsi_ctx_t c = { .o = o };
    if (s_root(c.proc, o->proc_dir, o->root, "proc")
        || s_root(c.sys, o->sys_dir, o->root, "sys")
        || s_root(c.etc, o->etc_dir, o->root, "etc"))
        return TELEM_EINVAL;
    int64_t t0 = telem_mono_ns();
    json_t *doc = json_object();
    c.skipped = json_array();
    if (!doc || !c.skipped) {
        json_decref(doc);
        json_decref(c.skipped);
        return TELEM_ENOMEM;
    }
    tsi_set(&c, doc, "schema", json_integer(TELEM_SYSINFO_SCHEMA));
    if (o->node)
        tsi_set(&c, doc, "node", tsi_str(o->node));
    tsi_set(&c, doc, "collected_ns", json_integer(telem_now_ns()));
    s_sections(&c, doc);
    tsi_set(&c, doc, "skipped", c.skipped);
    tsi_set(&c, doc, "collect_ns", json_integer(telem_mono_ns() - t0));
    char *text = c.oom ? NULL : json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text)
        return TELEM_ENOMEM;
    *json_p = text;
    *len = strlen(text);
    return 0;
}
