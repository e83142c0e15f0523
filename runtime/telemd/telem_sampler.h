/* telem_sampler.h - the sampler plug-in interface of telemd.
 *
 * A sampler reads one source of node metrics (/proc, NVML, telemd itself)
 * and emits (metric, tags, value) triples each time telemd's sampling timer
 * fires, if the node's telemetry level is at least the sampler's min_level.
 * Samplers are const vtables; their state is private to them.  They never
 * log: open() gives a code and telemd prints one line when a sampler is
 * not available (e.g. TELEM_EUNSUPPORTED when NVML is not installed).
 *
 * Samplers run on telemd's actor thread only; they need not be thread-safe.
 * Each lives in telem_sampler_<name>.c and exports one vtable,
 * telem_sampler_<name>.
 */
#ifndef TELEM_SAMPLER_H
#define TELEM_SAMPLER_H

#include <stdint.h>
#include <sys/types.h>

#include "telem_error.h"
#include "telem_procwalk.h"
#include "telem_types.h"

/* Receives one value.  tags may be NULL; telemd adds host=<node>.  The
 * timestamp is the one passed to sample(). */
typedef void (*telem_sampler_emit_fn)(void *arg, const char *metric,
                              const telem_tag_t *tags, uint32_t ntags,
                              double value);

/* telemd's own counters, for the self sampler (level 4). */
typedef struct {
    uint64_t nseries, npoints, mem_bytes, mem_cap_bytes;
    uint64_t ingested, dropped, bad_messages, expired;
    uint64_t ingest_queue;      /* messages waiting on the ingest socket */
    uint64_t counter_series;    /* pushed counters' node series */
    uint64_t push_refused;      /* pushed samples refused */
} telem_sampler_self_stats_t;

typedef struct {
    const char *node;           /* node name */
    uid_t job_uid;              /* whose processes count as the job's */
    const char *proc_root;      /* "/proc" unless testing */
    const char *sys_root;       /* "/sys" unless testing */
    const char *nvml_library;   /* NULL = "libnvidia-ml.so.1" */
    const char *rsmi_library;   /* NULL = "librocm_smi64.so.1" */
    const char *ze_library;     /* NULL = "libze_loader.so.1" */
    /* The walk of proc_root's processes the proc and job samplers share,
     * once a round (lent, not owned; its job user is job_uid); NULL: each
     * makes its own. */
    telem_procwalk_t *procwalk;
    /* For the self sampler: fills *out with telemd's counters. */
    void (*self_stats)(void *arg, telem_sampler_self_stats_t *out);
    void *self_stats_arg;
} telem_sampler_env_t;

typedef struct {
    const char *name;           /* "proc", "nvml", "self" */
    int min_level;              /* 2 node, 3 GPU, 4 telemd's own */
    /* Metric descriptions this sampler emits, NULL-terminated by metric. */
    const telem_meta_t *metrics;
    /* Opens the source: returns its state, or NULL with *err (may be
     * NULL) set to a negative code: TELEM_EUNSUPPORTED (source absent,
     * skip this sampler), TELEM_EINVAL (NULL env, or one this sampler
     * cannot use) or TELEM_ENOMEM.  *err is 0 on success. */
    void *(*open)(const telem_sampler_env_t *env, int *err);
    /* Emits the current values.  Rates (cpu_percent, network and disk
     * rates) are computed against the previous call; the first call emits
     * only the absolute values.  Returns 0 or a negative code (the caller
     * logs it rate-limited and keeps calling). */
    int (*sample)(void *state, int64_t now_ns, telem_sampler_emit_fn emit,
                  void *arg);
    /* Frees the state; accepts NULL and nulls *state_p. */
    void (*close)(void **state_p);
} telem_sampler_vt_t;

extern const telem_sampler_vt_t telem_sampler_proc;
extern const telem_sampler_vt_t telem_sampler_nvml;
extern const telem_sampler_vt_t telem_sampler_self;
extern const telem_sampler_vt_t telem_sampler_psi;
extern const telem_sampler_vt_t telem_sampler_vmstat;
extern const telem_sampler_vt_t telem_sampler_numa;
extern const telem_sampler_vt_t telem_sampler_cpufreq;
extern const telem_sampler_vt_t telem_sampler_fs;
extern const telem_sampler_vt_t telem_sampler_ib;
extern const telem_sampler_vt_t telem_sampler_hw;
extern const telem_sampler_vt_t telem_sampler_nfs;
extern const telem_sampler_vt_t telem_sampler_lustre;
extern const telem_sampler_vt_t telem_sampler_job;
extern const telem_sampler_vt_t telem_sampler_rsmi;
extern const telem_sampler_vt_t telem_sampler_ze;

#endif
