/* telem_sampler_proc_int.h - the proc sampler's state, shared by its files:
 * telem_sampler_proc.c (stat, meminfo, loadavg, uptime, processes and the
 * vtable), telem_sampler_proc_dev.c (net/dev and diskstats) and
 * telem_sampler_proc_meta.c (the metric table).  Private to the sampler.
 */
#ifndef TELEM_SAMPLER_PROC_INT_H
#define TELEM_SAMPLER_PROC_INT_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "telem_sampler.h"
#include "telem_stext.h"

#define TPROC_DEV_NAME_MAX 64       /* IFNAMSIZ is 16, DISK_NAME_LEN 32 */
#define TPROC_DEVS_MAX 8192         /* interfaces or disks tracked at most */
#define TPROC_DEV_COUNTERS 7        /* counters kept per device */
#define TPROC_CPU_FIELDS 8          /* user nice system idle iowait irq
                                       softirq steal (guest is in user) */
#define TPROC_CPUS_MAX 8192         /* cores tracked at most */

enum {
    TPROC_F_STAT, TPROC_F_MEMINFO, TPROC_F_LOADAVG, TPROC_F_UPTIME,
    TPROC_F_NETDEV, TPROC_F_DISKSTATS, TPROC_F_COUNT
};

/* One network interface or disk: its counters, this read's and the
 * previous one's (net: rx bytes, errors, drops, tx bytes, errors, drops;
 * disks: reads, sectors read, ms reading, writes, sectors written, ms
 * writing, ms doing I/O). */
typedef struct {
    char name[TPROC_DEV_NAME_MAX];
    uint64_t cur[TPROC_DEV_COUNTERS];
    uint64_t prev[TPROC_DEV_COUNTERS];
    int8_t whole;               /* disks: 1 whole, 0 not, -1 undecided */
    bool seen;                  /* listed in the current read */
    bool has_prev;              /* prev[] holds an earlier read */
    bool full;                  /* disks: the line had the time fields
                                   (Linux 2.6 and later always) */
} tproc_dev_t;

typedef struct {
    tproc_dev_t *v;
    size_t n, cap;
    size_t cursor;              /* where the next name is expected */
} tproc_devs_t;

/* One core's jiffies at the previous read of /proc/stat. */
typedef struct {
    uint64_t prev[TPROC_CPU_FIELDS];
    char name[12];              /* the tag value: "0", "1", ... */
    bool has_prev;
    bool seen;
} tproc_cpu_t;

typedef struct {
    DIR *proc_dir;              /* proc_root */
    int proc_fd;                /* dirfd(proc_dir), for openat */
    int sys_block_fd;           /* <proc_root>/../sys/block, or -1 */
    int fds[TPROC_F_COUNT];     /* -1 until opened */
    telem_procwalk_t *walk;     /* env's, or own_walk */
    telem_procwalk_t *own_walk; /* made when env lends none */
    telem_stext_t text;         /* the last file read */
    double dt_s;                /* seconds since the previous call, or 0 */
    bool have_prev;
    int64_t prev_ns;
    int64_t round_ns;           /* this call's now_ns */
    bool have_cpu, have_ctxt;
    uint64_t prev_cpu[TPROC_CPU_FIELDS], prev_ctxt;
    tproc_cpu_t *cpus;          /* indexed by core number */
    size_t ncpus;
    tproc_devs_t ifaces, disks;
} tproc_t;

extern const telem_meta_t tproc_metrics[];

/* Reads file `which` into self->text (telem_stext_read's codes). */
int tproc_read(tproc_t *self, int which);

/* /proc/net/dev and /proc/diskstats: 0 or a negative code. */
int tproc_do_netdev(tproc_t *self, telem_sampler_emit_fn emit, void *arg);
int tproc_do_diskstats(tproc_t *self, telem_sampler_emit_fn emit, void *arg);

/* Opens <dir of proc_root>/sys/block, or returns -1. */
int tproc_open_sys_block(const char *proc_root);

#endif
