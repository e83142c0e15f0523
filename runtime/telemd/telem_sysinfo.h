/* telem_sysinfo.h - the one-time system snapshot of a node, as JSON.
 *
 * telemd takes it once at start and keeps it: what lscpu shows (CPU model,
 * sockets, cores, threads, caches, flags, NUMA layout), memory, boot time
 * with sub-second accuracy, kernel and OS, block devices, network
 * interfaces, GPUs through NVML when present, telem's version and telemd's
 * configuration.  docs/protocol.md ("sysinfo") documents the document's
 * shape, schema 1.
 *
 * Sources: files under three roots (proc, sys, etc; "/proc", "/sys",
 * "/etc" by default), so tests feed fixture trees, and, when `live` is
 * set, system calls that describe the running machine: uname(),
 * getifaddrs(), the realtime and boot-time clocks, NVML (libnvidia-ml
 * loaded with dlopen at run time, as the nvml sampler does).  A source
 * that is missing or malformed is skipped: its part of the document is
 * left out, the document's "skipped" list names it with a reason, and
 * one log line says so.  Nothing read is trusted: every file is read
 * with a size bound, every count is capped, and bad input gives a skip,
 * never a crash.
 *
 * JSON is written with jansson (a real JSON library, as DESIGN asks for
 * JSON; the telemd part may use it: docs/architecture.arrows denies it
 * nothing here).  Thread safety: telem_sysinfo_collect() keeps no state;
 * calls may run in parallel.
 */
#ifndef TELEM_SYSINFO_H
#define TELEM_SYSINFO_H

#include <stddef.h>
#include <stdint.h>

#define TELEM_SYSINFO_SCHEMA 1

/* One entry of the configuration section ("telem": {"config": {...}}):
 * the owner of a setting adds a line where the list is built
 * (telemd_agent.c), nothing else changes. */
typedef enum {
    TELEM_SYSINFO_INT = 0,
    TELEM_SYSINFO_STR,
    TELEM_SYSINFO_BOOL,
    TELEM_SYSINFO_DBL
} telem_sysinfo_kind_t;

typedef struct {
    const char *key;
    telem_sysinfo_kind_t kind;
    int64_t i;                  /* INT, BOOL (0 or not) */
    double d;                   /* DBL */
    const char *s;              /* STR; NULL writes null */
} telem_sysinfo_kv_t;

typedef struct {
    const char *node;           /* the node's name; NULL: omitted */
    const char *version;        /* telem's version; NULL: omitted */
    /* Roots: NULL takes "/proc", "/sys", "/etc" below `root` (NULL or
     * "": the real root).  E.g. root "tests/data/sysinfo/numa2" reads
     * tests/data/sysinfo/numa2/proc/meminfo. */
    const char *root;
    const char *proc_dir;
    const char *sys_dir;
    const char *etc_dir;
    /* 1: also the system calls (uname, getifaddrs, clocks, NVML); 0:
     * files only (kernel from proc/sys/kernel, boot time from proc/stat's
     * btime, no addresses, no GPUs), for tests on fixture trees. */
    int live;
    const char *nvml_library;   /* NULL: "libnvidia-ml.so.1" */
    const char *rsmi_library;   /* NULL: "librocm_smi64.so.1" */
    const char *ze_library;     /* NULL: "libze_loader.so.1" */
    const telem_sysinfo_kv_t *config;
    size_t nconfig;
} telem_sysinfo_opts_t;

/* Collects the snapshot.  On success returns 0 and sets *json_p to a
 * malloc'd NUL-terminated JSON object (the caller frees it) and *len to
 * its length.  Missing sources are skipped as said above and are not
 * errors.  Returns TELEM_EINVAL (NULL arguments, a root path too long) or
 * TELEM_ENOMEM (then *json_p is NULL). */
int telem_sysinfo_collect(const telem_sysinfo_opts_t *o, char **json_p,
                          size_t *len);

#endif
