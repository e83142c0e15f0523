/* telem_sampler_proc.c - level 2 node metrics read from /proc.
 *
 * Reads stat, meminfo, loadavg, uptime, net/dev and diskstats under the
 * environment's proc_root and counts the job user's processes.  Metric names
 * follow Dragon's telemetry where it has one (cpu_percent, used_ram,
 * load_average, num_running_processes).
 *
 * It has to stay cheap (telemd samples every second on every node), so:
 * - the six files are opened once and re-read with pread() from offset 0
 *   (/proc regenerates them on every read from the start), into one buffer
 *   that grows as needed and is kept between calls;
 * - the process count stats each /proc/<pid> directory through the proc
 *   directory's fd instead of opening and parsing /proc/<pid>/status; the
 *   directory's owner is the process's effective uid (processes that made
 *   themselves non-dumpable, e.g. setuid programs, show as root);
 * - per-interface and per-disk counters live in small tables whose order
 *   follows the files, so a lookup is O(1) in the usual case;
 * - whether a diskstats entry is a whole disk is decided once per name.
 *
 * Whole disks: if a "sys/block" directory sits beside proc_root (/sys/block
 * for /proc), a disk is whole when sys/block/<name> exists ('/' in the name
 * becomes '!', as sysfs spells it).  Otherwise the kernel's naming rule
 * decides: <disk><N> is a partition of <disk> when <disk> does not end in a
 * digit (sda1), <disk>p<N> when it does (nvme0n1p1, mmcblk0p2), and it is a
 * partition only when that parent is listed too.  loop, ram and zram devices
 * are never reported.  diskstats counts 512-byte sectors on every device.
 *
 * A file that is missing or unparsable skips its metrics; sample() fails
 * only when nothing at all could be read.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "telem_grow.h"
#include "telem_sampler.h"
#include "telem_time.h"

#define S_BUF_INITIAL (16u << 10)
#define S_BUF_MAX (16u << 20)       /* no /proc file we read gets near this */
#define S_DEV_NAME_MAX 64           /* IFNAMSIZ is 16, DISK_NAME_LEN 32 */
#define S_DEVS_MAX 8192             /* interfaces or disks tracked at most */
#define S_SECTOR_BYTES 512.0

enum {
    S_F_STAT, S_F_MEMINFO, S_F_LOADAVG, S_F_UPTIME, S_F_NETDEV, S_F_DISKSTATS,
    S_F_COUNT
};

static const char *const s_file_names[S_F_COUNT] = {
    "stat", "meminfo", "loadavg", "uptime", "net/dev", "diskstats"
};

/* One network interface or disk: two counters (rx/tx bytes, or read/write
 * sectors), this read's and the previous one's. */
typedef struct {
    char name[S_DEV_NAME_MAX];
    uint64_t cur[2];
    uint64_t prev[2];
    int8_t whole;               /* disks: 1 whole, 0 not, -1 undecided */
    bool seen;                  /* listed in the current read */
    bool has_prev;              /* prev[] holds an earlier read */
} s_dev_t;

typedef struct {
    s_dev_t *v;
    size_t n, cap;
    size_t cursor;              /* where the next name is expected */
} s_devs_t;

typedef struct {
    DIR *proc_dir;              /* proc_root, rewound for each pid scan */
    int proc_fd;                /* dirfd(proc_dir), for openat/fstatat */
    int sys_block_fd;           /* <proc_root>/../sys/block, or -1 */
    int fds[S_F_COUNT];         /* -1 until opened */
    uid_t job_uid;
    char *buf;
    size_t buf_cap;
    double dt_s;                /* seconds since the previous call, or 0 */
    bool have_prev;
    int64_t prev_ns;
    bool have_cpu, have_ctxt;
    uint64_t prev_cpu_total, prev_cpu_idle, prev_ctxt;
    s_devs_t ifaces, disks;
} s_proc_t;

static const telem_meta_t s_metrics[] = {
    {"cpu_percent", TELEM_METRIC_GAUGE, "percent",
     "Share of the node's CPU time, all cores together, that was busy (not "
     "idle, not waiting for I/O) since the previous sample, 0-100."},
    {"used_ram", TELEM_METRIC_GAUGE, "percent",
     "Memory in use as a percent of MemTotal: (MemTotal - MemAvailable) / "
     "MemTotal * 100."},
    {"mem_used_bytes", TELEM_METRIC_GAUGE, "bytes",
     "Memory in use: MemTotal - MemAvailable."},
    {"mem_available_bytes", TELEM_METRIC_GAUGE, "bytes",
     "Memory available to new work without swapping (MemAvailable)."},
    {"mem_total_bytes", TELEM_METRIC_GAUGE, "bytes",
     "Usable physical memory (MemTotal)."},
    {"swap_used_bytes", TELEM_METRIC_GAUGE, "bytes",
     "Swap space in use: SwapTotal - SwapFree."},
    {"load_average", TELEM_METRIC_GAUGE, "",
     "Load average over the last minute."},
    {"load_average_5", TELEM_METRIC_GAUGE, "",
     "Load average over the last 5 minutes."},
    {"load_average_15", TELEM_METRIC_GAUGE, "",
     "Load average over the last 15 minutes."},
    {"num_running_processes", TELEM_METRIC_GAUGE, "",
     "Processes (not threads) whose /proc/<pid> directory belongs to the "
     "job's user, i.e. whose effective uid is the job's."},
    {"procs_running", TELEM_METRIC_GAUGE, "",
     "Runnable tasks on the node, all users (procs_running in /proc/stat)."},
    {"context_switches_per_second", TELEM_METRIC_GAUGE, "1/s",
     "Context switches per second on the node since the previous sample."},
    {"uptime_seconds", TELEM_METRIC_GAUGE, "seconds",
     "Time since the node booted."},
    {"net_rx_bytes_per_second", TELEM_METRIC_GAUGE, "bytes/s",
     "Bytes received per second on a network interface (tag iface; "
     "loopback not reported)."},
    {"net_tx_bytes_per_second", TELEM_METRIC_GAUGE, "bytes/s",
     "Bytes sent per second on a network interface (tag iface; loopback "
     "not reported)."},
    {"disk_read_bytes_per_second", TELEM_METRIC_GAUGE, "bytes/s",
     "Bytes read per second from a whole disk (tag disk; partitions, loop "
     "and ram devices not reported)."},
    {"disk_write_bytes_per_second", TELEM_METRIC_GAUGE, "bytes/s",
     "Bytes written per second to a whole disk (tag disk; partitions, loop "
     "and ram devices not reported)."},
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

/* ---- reading and tokenising ---------------------------------------------- */

/* Reads file `which` whole into self->buf, NUL-terminated.  Returns 0,
 * TELEM_ENOTFOUND (cannot open), TELEM_EIO or TELEM_ETOOBIG / TELEM_ENOMEM. */
static int
s_read(s_proc_t *self, int which)
{
    int fd = self->fds[which];
    if (fd < 0) {
        fd = openat(self->proc_fd, s_file_names[which], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return TELEM_ENOTFOUND;
        self->fds[which] = fd;
    }
    size_t len = 0;
    for (;;) {
        if (self->buf_cap - len < 2) {
            if (self->buf_cap >= S_BUF_MAX)
                return TELEM_ETOOBIG;
            if (telem_grow((void **) &self->buf, &self->buf_cap,
                           self->buf_cap + 1, 1, S_BUF_INITIAL))
                return TELEM_ENOMEM;
        }
        ssize_t r = pread(fd, self->buf + len, self->buf_cap - len - 1,
                          (off_t) len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);          /* reopen on the next call */
            self->fds[which] = -1;
            return TELEM_EIO;
        }
        if (r == 0)
            break;
        len += (size_t) r;
    }
    self->buf[len] = '\0';
    return 0;
}

/* Returns the line at *pos (NUL-terminated in place) and moves *pos past
 * it; NULL at the end of the buffer. */
static char *
s_next_line(char **pos)
{
    char *line = *pos;
    if (*line == '\0')
        return NULL;
    char *nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *pos = nl + 1;
    }
    else
        *pos = line + strlen(line);
    return line;
}

/* Parses up to max unsigned decimal numbers separated by blanks.  Returns
 * how many were read; stops at the first thing that is not one. */
static int
s_parse_u64s(const char *s, uint64_t *out, int max)
{
    int n = 0;
    while (n < max) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s < '0' || *s > '9')
            break;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0)
            break;
        out[n++] = (uint64_t) v;
        s = end;
    }
    return n;
}

/* True when line starts with the given key (including its separator). */
static bool
s_starts(const char *line, const char *key)
{
    return strncmp(line, key, strlen(key)) == 0;
}

/* ---- /proc/stat ---------------------------------------------------------- */

/* Emits cpu_percent from the "cpu" line: busy = total - idle - iowait, where
 * total is user+nice+system+idle+iowait+irq+softirq+steal (guest time is
 * already part of user). */
static void
s_emit_cpu(s_proc_t *self, const char *rest, telem_sampler_emit_fn emit,
           void *arg)
{
    uint64_t v[8] = {0};
    int n = s_parse_u64s(rest, v, 8);
    if (n < 4)
        return;
    uint64_t total = 0;
    for (int i = 0; i < n; i++)
        total += v[i];
    uint64_t idle = v[3] + v[4];
    if (self->have_cpu && total > self->prev_cpu_total
        && idle >= self->prev_cpu_idle) {
        double dtotal = (double) (total - self->prev_cpu_total);
        double didle = (double) (idle - self->prev_cpu_idle);
        double pct = (dtotal - didle) / dtotal * 100.0;
        if (pct < 0.0)
            pct = 0.0;
        if (pct > 100.0)
            pct = 100.0;
        emit(arg, "cpu_percent", NULL, 0, pct);
    }
    self->prev_cpu_total = total;
    self->prev_cpu_idle = idle;
    self->have_cpu = true;
}

static void
s_emit_ctxt(s_proc_t *self, uint64_t ctxt, telem_sampler_emit_fn emit,
            void *arg)
{
    if (self->have_ctxt && self->dt_s > 0.0 && ctxt >= self->prev_ctxt)
        emit(arg, "context_switches_per_second", NULL, 0,
             (double) (ctxt - self->prev_ctxt) / self->dt_s);
    self->prev_ctxt = ctxt;
    self->have_ctxt = true;
}

static int
s_do_stat(s_proc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    int rc = s_read(self, S_F_STAT);
    if (rc != 0)
        return rc;
    char *pos = self->buf, *line;
    bool found = false;
    while ((line = s_next_line(&pos)) != NULL) {
        uint64_t v;
        if (s_starts(line, "cpu ")) {
            s_emit_cpu(self, line + 4, emit, arg);
            found = true;
        }
        else if (s_starts(line, "ctxt ") && s_parse_u64s(line + 5, &v, 1)) {
            s_emit_ctxt(self, v, emit, arg);
            found = true;
        }
        else if (s_starts(line, "procs_running ")
                 && s_parse_u64s(line + 14, &v, 1)) {
            emit(arg, "procs_running", NULL, 0, (double) v);
            found = true;
        }
    }
    return found ? 0 : TELEM_EPROTO;
}

/* ---- /proc/meminfo ------------------------------------------------------- */

enum {
    S_M_TOTAL, S_M_FREE, S_M_AVAILABLE, S_M_BUFFERS, S_M_CACHED,
    S_M_SWAP_TOTAL, S_M_SWAP_FREE, S_M_COUNT
};

static const char *const s_mem_keys[S_M_COUNT] = {
    "MemTotal:", "MemFree:", "MemAvailable:", "Buffers:", "Cached:",
    "SwapTotal:", "SwapFree:"
};

/* Fills kb[] and sets bit i of the result for each key found. */
static unsigned
s_parse_meminfo(char *buf, uint64_t kb[S_M_COUNT])
{
    unsigned found = 0;
    char *pos = buf, *line;
    while (found != (1u << S_M_COUNT) - 1
           && (line = s_next_line(&pos)) != NULL) {
        for (int i = 0; i < S_M_COUNT; i++) {
            if (!(found & (1u << i)) && s_starts(line, s_mem_keys[i])
                && s_parse_u64s(line + strlen(s_mem_keys[i]), &kb[i], 1)) {
                found |= 1u << i;
                break;
            }
        }
    }
    return found;
}

static int
s_do_meminfo(s_proc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    int rc = s_read(self, S_F_MEMINFO);
    if (rc != 0)
        return rc;
    uint64_t kb[S_M_COUNT] = {0};
    unsigned found = s_parse_meminfo(self->buf, kb);
    if (found & (1u << S_M_SWAP_TOTAL) && found & (1u << S_M_SWAP_FREE)
        && kb[S_M_SWAP_TOTAL] >= kb[S_M_SWAP_FREE])
        emit(arg, "swap_used_bytes", NULL, 0,
             (double) (kb[S_M_SWAP_TOTAL] - kb[S_M_SWAP_FREE]) * 1024.0);
    if (!(found & (1u << S_M_TOTAL)) || kb[S_M_TOTAL] == 0)
        return TELEM_EPROTO;
    /* Kernels before 3.14 have no MemAvailable: estimate it. */
    uint64_t avail = (found & (1u << S_M_AVAILABLE))
        ? kb[S_M_AVAILABLE]
        : kb[S_M_FREE] + kb[S_M_BUFFERS] + kb[S_M_CACHED];
    if (avail > kb[S_M_TOTAL])
        avail = kb[S_M_TOTAL];
    uint64_t used = kb[S_M_TOTAL] - avail;
    emit(arg, "mem_total_bytes", NULL, 0, (double) kb[S_M_TOTAL] * 1024.0);
    emit(arg, "mem_available_bytes", NULL, 0, (double) avail * 1024.0);
    emit(arg, "mem_used_bytes", NULL, 0, (double) used * 1024.0);
    emit(arg, "used_ram", NULL, 0,
         (double) used / (double) kb[S_M_TOTAL] * 100.0);
    return 0;
}

/* ---- /proc/loadavg, /proc/uptime ----------------------------------------- */

/* Parses up to max blank-separated finite floating-point numbers. */
static int
s_parse_doubles(const char *s, double *out, int max)
{
    int n = 0;
    while (n < max) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || !isfinite(v))
            break;
        out[n++] = v;
        s = end;
    }
    return n;
}

static int
s_do_loadavg(s_proc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    int rc = s_read(self, S_F_LOADAVG);
    if (rc != 0)
        return rc;
    double v[3];
    if (s_parse_doubles(self->buf, v, 3) != 3)
        return TELEM_EPROTO;
    emit(arg, "load_average", NULL, 0, v[0]);
    emit(arg, "load_average_5", NULL, 0, v[1]);
    emit(arg, "load_average_15", NULL, 0, v[2]);
    return 0;
}

static int
s_do_uptime(s_proc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    int rc = s_read(self, S_F_UPTIME);
    if (rc != 0)
        return rc;
    double up;
    if (s_parse_doubles(self->buf, &up, 1) != 1)
        return TELEM_EPROTO;
    emit(arg, "uptime_seconds", NULL, 0, up);
    return 0;
}

/* ---- interface and disk tables ------------------------------------------- */

static void
s_devs_begin(s_devs_t *devs)
{
    for (size_t i = 0; i < devs->n; i++)
        devs->v[i].seen = false;
    devs->cursor = 0;
}

/* Finds name, expected at the cursor since the files list devices in a
 * stable order, else anywhere; appends it when new.  Returns NULL when the
 * name is too long, the table is full or memory ran out. */
static s_dev_t *
s_devs_get(s_devs_t *devs, const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len >= S_DEV_NAME_MAX)
        return NULL;
    size_t i = devs->cursor;
    if (i >= devs->n || strcmp(devs->v[i].name, name) != 0)
        for (i = 0; i < devs->n && strcmp(devs->v[i].name, name) != 0; i++)
            ;
    if (i == devs->n) {
        if (devs->n == S_DEVS_MAX)
            return NULL;
        if (telem_grow((void **) &devs->v, &devs->cap, devs->n + 1,
                       sizeof *devs->v, 16))
            return NULL;
        s_dev_t *d = &devs->v[devs->n++];
        memset(d, 0, sizeof *d);
        memcpy(d->name, name, len + 1);
        d->whole = -1;
    }
    devs->cursor = i + 1;
    devs->v[i].seen = true;
    return &devs->v[i];
}

/* Drops devices that were not listed this time, keeping the order. */
static void
s_devs_end(s_devs_t *devs)
{
    size_t w = 0;
    for (size_t r = 0; r < devs->n; r++)
        if (devs->v[r].seen)
            devs->v[w++] = devs->v[r];
    devs->n = w;
}

static const s_dev_t *
s_devs_find(const s_devs_t *devs, const char *name)
{
    for (size_t i = 0; i < devs->n; i++)
        if (strcmp(devs->v[i].name, name) == 0)
            return &devs->v[i];
    return NULL;
}

/* Emits the two rates of every device that has an earlier read (and, for
 * disks, is whole), then makes the current counters the previous ones.  A
 * counter that went down (device reset) gives no rate this time. */
static void
s_devs_emit(s_proc_t *self, s_devs_t *devs, const char *tag_key,
            const char *const metrics[2], double scale,
            telem_sampler_emit_fn emit, void *arg)
{
    for (size_t i = 0; i < devs->n; i++) {
        s_dev_t *d = &devs->v[i];
        if (d->has_prev && d->whole != 0 && self->dt_s > 0.0) {
            telem_tag_t tag = {tag_key, d->name};
            for (int k = 0; k < 2; k++)
                if (d->cur[k] >= d->prev[k])
                    emit(arg, metrics[k], &tag, 1,
                         (double) (d->cur[k] - d->prev[k]) * scale
                         / self->dt_s);
        }
        d->prev[0] = d->cur[0];
        d->prev[1] = d->cur[1];
        d->has_prev = true;
    }
}

/* ---- /proc/net/dev ------------------------------------------------------- */

/* Lines look like "  eth0: rxbytes rxpackets ... (8 rx fields) txbytes ...";
 * the two header lines have no colon. */
static int
s_do_netdev(s_proc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    static const char *const metrics[2] = {
        "net_rx_bytes_per_second", "net_tx_bytes_per_second"
    };
    int rc = s_read(self, S_F_NETDEV);
    if (rc != 0)
        return rc;
    s_devs_begin(&self->ifaces);
    char *pos = self->buf, *line;
    while ((line = s_next_line(&pos)) != NULL) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        while (*line == ' ' || *line == '\t')
            line++;
        uint64_t v[9];
        if (strcmp(line, "lo") == 0 || s_parse_u64s(colon + 1, v, 9) != 9)
            continue;
        s_dev_t *d = s_devs_get(&self->ifaces, line);
        if (d) {
            d->cur[0] = v[0];
            d->cur[1] = v[8];
        }
    }
    s_devs_end(&self->ifaces);
    s_devs_emit(self, &self->ifaces, "iface", metrics, 1.0, emit, arg);
    return 0;
}

/* ---- /proc/diskstats ----------------------------------------------------- */

/* The name a partition's parent disk would have by the kernel's naming
 * rule (sda1 -> sda, nvme0n1p1 -> nvme0n1); false when name does not end in
 * a number and so cannot be a partition's. */
static bool
s_parent_name(const char *name, char *parent, size_t size)
{
    size_t len = strlen(name), base = len;
    while (base > 0 && name[base - 1] >= '0' && name[base - 1] <= '9')
        base--;
    if (base == len || base == 0 || base >= size)
        return false;
    if (base >= 2 && name[base - 1] == 'p'
        && name[base - 2] >= '0' && name[base - 2] <= '9')
        base--;                 /* a parent ending in a digit adds 'p' */
    memcpy(parent, name, base);
    parent[base] = '\0';
    return true;
}

static bool
s_is_whole_disk(const s_proc_t *self, const char *name)
{
    if (s_starts(name, "loop") || s_starts(name, "ram")
        || s_starts(name, "zram"))
        return false;
    if (self->sys_block_fd >= 0) {
        char sysname[S_DEV_NAME_MAX];
        size_t i;
        for (i = 0; name[i] != '\0'; i++)
            sysname[i] = name[i] == '/' ? '!' : name[i];
        sysname[i] = '\0';
        return faccessat(self->sys_block_fd, sysname, F_OK, 0) == 0;
    }
    char parent[S_DEV_NAME_MAX];
    return !(s_parent_name(name, parent, sizeof parent)
             && s_devs_find(&self->disks, parent) != NULL);
}

/* Lines: major minor name reads merged sectors_read ms writes merged
 * sectors_written ...  */
static int
s_do_diskstats(s_proc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    static const char *const metrics[2] = {
        "disk_read_bytes_per_second", "disk_write_bytes_per_second"
    };
    int rc = s_read(self, S_F_DISKSTATS);
    if (rc != 0)
        return rc;
    s_devs_begin(&self->disks);
    char *pos = self->buf, *line;
    while ((line = s_next_line(&pos)) != NULL) {
        uint64_t majmin[2], v[7];
        char *name, *end;
        if (s_parse_u64s(line, majmin, 2) != 2)
            continue;
        name = line + strspn(line, " \t");
        name += strspn(name, "0123456789");
        name += strspn(name, " \t");
        name += strspn(name, "0123456789");
        name += strspn(name, " \t");
        end = name + strcspn(name, " \t");
        if (*end == '\0' || end == name)
            continue;
        *end = '\0';
        if (s_parse_u64s(end + 1, v, 7) != 7)
            continue;
        s_dev_t *d = s_devs_get(&self->disks, name);
        if (d) {
            d->cur[0] = v[2];
            d->cur[1] = v[6];
        }
    }
    s_devs_end(&self->disks);
    /* Decided once every current name is in the table (the heuristic looks
     * for the parent disk). */
    for (size_t i = 0; i < self->disks.n; i++)
        if (self->disks.v[i].whole < 0)
            self->disks.v[i].whole =
                s_is_whole_disk(self, self->disks.v[i].name) ? 1 : 0;
    s_devs_emit(self, &self->disks, "disk", metrics, S_SECTOR_BYTES,
                emit, arg);
    return 0;
}

/* ---- processes ----------------------------------------------------------- */

/* Counts /proc/<pid> directories owned by job_uid: one fstatat per process,
 * nothing opened. */
static int
s_do_procs(s_proc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    uint64_t n = 0;
    struct dirent *de;
    rewinddir(self->proc_dir);
    while ((de = readdir(self->proc_dir)) != NULL) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
            continue;
        struct stat st;
        if (fstatat(self->proc_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;           /* exited since readdir */
        if (S_ISDIR(st.st_mode) && st.st_uid == self->job_uid)
            n++;
    }
    emit(arg, "num_running_processes", NULL, 0, (double) n);
    return 0;
}

/* ---- the vtable ---------------------------------------------------------- */

/* Opens <dir of proc_root>/sys/block, or returns -1. */
static int
s_open_sys_block(const char *proc_root)
{
    size_t len = strlen(proc_root);
    while (len > 1 && proc_root[len - 1] == '/')
        len--;
    while (len > 0 && proc_root[len - 1] != '/')
        len--;                  /* keep the parent, with its slash */
    char *path = malloc(len + sizeof "sys/block");
    if (!path)
        return -1;
    memcpy(path, proc_root, len);
    memcpy(path + len, "sys/block", sizeof "sys/block");
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(path);
    return fd;
}

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_proc_t *self = *state_p;
    for (int i = 0; i < S_F_COUNT; i++)
        if (self->fds[i] >= 0)
            close(self->fds[i]);
    if (self->sys_block_fd >= 0)
        close(self->sys_block_fd);
    if (self->proc_dir)
        closedir(self->proc_dir);
    free(self->ifaces.v);
    free(self->disks.v);
    free(self->buf);
    free(self);
    *state_p = NULL;
}

/* Fails with TELEM_EUNSUPPORTED when proc_root is not a readable directory. */
static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    s_proc_t *self = env ? calloc(1, sizeof *self) : NULL;
    if (!self) {
        if (err)
            *err = env ? TELEM_ENOMEM : TELEM_EINVAL;
        return NULL;
    }
    const char *root = env->proc_root ? env->proc_root : "/proc";
    for (int i = 0; i < S_F_COUNT; i++)
        self->fds[i] = -1;
    self->job_uid = env->job_uid;
    self->sys_block_fd = s_open_sys_block(root);
    self->buf = malloc(S_BUF_INITIAL);
    self->buf_cap = S_BUF_INITIAL;
    self->proc_dir = opendir(root);
    int rc = !self->buf ? TELEM_ENOMEM
           : !self->proc_dir ? TELEM_EUNSUPPORTED : 0;
    if (err)
        *err = rc;
    if (rc != 0) {
        void *p = self;
        s_close(&p);
        return NULL;
    }
    self->proc_fd = dirfd(self->proc_dir);
    return self;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    s_proc_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    /* No rates across a clock step backwards; counters still refresh. */
    self->dt_s = self->have_prev && now_ns > self->prev_ns
        ? (double) (now_ns - self->prev_ns) / (double) TELEM_NS_PER_SEC
        : 0.0;
    int (*const steps[])(s_proc_t *, telem_sampler_emit_fn, void *) = {
        s_do_stat, s_do_meminfo, s_do_loadavg, s_do_uptime, s_do_netdev,
        s_do_diskstats, s_do_procs
    };
    int nok = 0, last = TELEM_EIO;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int rc = steps[i](self, emit, arg);
        if (rc == 0)
            nok++;
        else
            last = rc;
    }
    self->have_prev = true;
    self->prev_ns = now_ns;
    return nok > 0 ? 0 : last;
}

const telem_sampler_vt_t telem_sampler_proc = {
    .name = "proc",
    .min_level = 2,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
