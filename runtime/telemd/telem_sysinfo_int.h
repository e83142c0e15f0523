/* telem_sysinfo_int.h - PRIVATE to the snapshot collector
 * (runtime/telemd/telem_sysinfo*.c).
 *
 * Files, top to bottom; each calls only those below it:
 *   telem_sysinfo.c       telem_sysinfo_collect(): the document, memory,
 *                         boot time, kernel, OS, telem's own section
 *   telem_sysinfo_cpu.c   tsi_cpu(): model, topology, caches, NUMA
 *   telem_sysinfo_dev.c   tsi_block(), tsi_net()
 *   telem_sysinfo_nvml.c  tsi_gpu(): NVIDIA GPUs through NVML
 *   telem_sysinfo_gpu.c   tsi_gpu_amd(), tsi_gpu_intel(): AMD and Intel GPUs
 *   telem_sysinfo_read.c  bounded file reading, CPU lists, skips
 * Internal names carry the tsi_ prefix.
 */
#ifndef TELEM_SYSINFO_INT_H
#define TELEM_SYSINFO_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "telem_sysinfo.h"

#define TSI_PATH_MAX 4096
#define TSI_ROOT_MAX 2048          /* a root, so root + a relative path fits */
#define TSI_FILE_MAX (64u << 10)   /* largest small file read whole */
#define TSI_CPUS_MAX 8192          /* CPUs a list may name */
#define TSI_ENTRIES_MAX 1024       /* block devices, interfaces, nodes */

typedef struct {
    const telem_sysinfo_opts_t *o;
    char proc[TSI_ROOT_MAX];
    char sys[TSI_ROOT_MAX];
    char etc[TSI_ROOT_MAX];
    json_t *skipped;               /* [{"source", "why"}] */
    int oom;                       /* a json_* allocation failed */
} tsi_ctx_t;

/* Reads <dir>/<rel> into buf (at most size - 1 bytes, NUL-terminated,
 * trailing newlines and spaces cut).  Returns its length, or
 * TELEM_ENOTFOUND (no such file), TELEM_EIO (unreadable) or TELEM_ETOOBIG
 * (longer than size - 1). */
int tsi_read(const char *dir, const char *rel, char *buf, size_t size);

/* tsi_read() of a decimal integer (surrounding spaces allowed, nothing
 * else).  Returns 0, a tsi_read() error or TELEM_EPROTO. */
int tsi_read_i64(const char *dir, const char *rel, int64_t *v);

/* Parses a CPU list ("0-3,8,10-11") into a bitmap of TSI_CPUS_MAX bits
 * (zeroed first).  Returns the number of CPUs, or TELEM_EPROTO (malformed,
 * a CPU at or over TSI_CPUS_MAX, a range backwards). */
int tsi_cpulist(const char *s, uint8_t *bits);

/* 1 if CPU i is in the bitmap. */
static inline int
tsi_bit(const uint8_t *bits, int i)
{
    return (bits[i >> 3] >> (i & 7)) & 1;
}

/* Records a skipped source: one log line and an entry in "skipped". */
void tsi_skip(tsi_ctx_t *c, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The reason for a tsi_read() error, for a skip ("missing", ...). */
const char *tsi_why(int rc);

/* A JSON string of s (NULL: ""); bytes that are not UTF-8 become '?'.
 * NULL only when out of memory. */
json_t *tsi_str(const char *s);

/* Sets obj[key] to v (stolen), noting an allocation failure in c. */
void tsi_set(tsi_ctx_t *c, json_t *obj, const char *key, json_t *v);
/* Appends v (stolen) to arr. */
void tsi_push(tsi_ctx_t *c, json_t *arr, json_t *v);

/* Sections, each set into doc (or skipped). */
void tsi_cpu(tsi_ctx_t *c, json_t *doc);
void tsi_block(tsi_ctx_t *c, json_t *doc);
void tsi_net(tsi_ctx_t *c, json_t *doc);
void tsi_gpu(tsi_ctx_t *c, json_t *doc);
void tsi_gpu_amd(tsi_ctx_t *c, json_t *doc);
void tsi_gpu_intel(tsi_ctx_t *c, json_t *doc);

#endif
