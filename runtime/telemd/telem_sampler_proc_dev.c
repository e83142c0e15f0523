/* telem_sampler_proc_dev.c - the proc sampler's per-device rates: network
 * interfaces from /proc/net/dev and disks from /proc/diskstats.
 *
 * Per-interface and per-disk counters live in small tables whose order
 * follows the files, so a lookup is O(1) in the usual case; whether a
 * diskstats entry is a whole disk is decided once per name.
 *
 * Whole disks: if a "sys/block" directory sits beside proc_root (/sys/block
 * for /proc), a disk is whole when sys/block/<name> exists ('/' in the name
 * becomes '!', as sysfs spells it).  Otherwise the kernel's naming rule
 * decides: <disk><N> is a partition of <disk> when <disk> does not end in a
 * digit (sda1), <disk>p<N> when it does (nvme0n1p1, mmcblk0p2), and it is a
 * partition only when that parent is listed too.  loop, ram and zram devices
 * are never reported.  diskstats counts 512-byte sectors on every device
 * (Documentation/admin-guide/iostats.rst).
 *
 * Every value is a rate against the previous call; a counter that went
 * down (device reset, 32-bit wrap on old kernels) gives no value this time.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_grow.h"
#include "telem_sampler_proc_int.h"

#define S_SECTOR_BYTES 512.0

/* ---- interface and disk tables ------------------------------------------- */

static void
s_devs_begin(tproc_devs_t *devs)
{
    for (size_t i = 0; i < devs->n; i++)
        devs->v[i].seen = false;
    devs->cursor = 0;
}

/* Finds name, expected at the cursor since the files list devices in a
 * stable order, else anywhere; appends it when new.  Returns NULL when the
 * name is too long, the table is full or memory ran out. */
static tproc_dev_t *
s_devs_get(tproc_devs_t *devs, const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len >= TPROC_DEV_NAME_MAX)
        return NULL;
    size_t i = devs->cursor;
    if (i >= devs->n || strcmp(devs->v[i].name, name) != 0)
        for (i = 0; i < devs->n && strcmp(devs->v[i].name, name) != 0; i++)
            ;
    if (i == devs->n) {
        if (devs->n == TPROC_DEVS_MAX)
            return NULL;
        if (telem_grow((void **) &devs->v, &devs->cap, devs->n + 1,
                       sizeof *devs->v, 16))
            return NULL;
        tproc_dev_t *d = &devs->v[devs->n++];
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
s_devs_end(tproc_devs_t *devs)
{
    size_t w = 0;
    for (size_t r = 0; r < devs->n; r++)
        if (devs->v[r].seen)
            devs->v[w++] = devs->v[r];
    devs->n = w;
}

static const tproc_dev_t *
s_devs_find(const tproc_devs_t *devs, const char *name)
{
    for (size_t i = 0; i < devs->n; i++)
        if (strcmp(devs->v[i].name, name) == 0)
            return &devs->v[i];
    return NULL;
}

/* Counter k's growth since the previous read; false when it went down. */
static bool
s_delta(const tproc_dev_t *d, int k, double *out)
{
    if (d->cur[k] < d->prev[k])
        return false;
    *out = (double) (d->cur[k] - d->prev[k]);
    return true;
}

static void
s_devs_shift(tproc_devs_t *devs)
{
    for (size_t i = 0; i < devs->n; i++) {
        tproc_dev_t *d = &devs->v[i];
        memcpy(d->prev, d->cur, sizeof d->prev);
        d->has_prev = true;
    }
}

/* ---- /proc/net/dev ------------------------------------------------------- */

/* Emits the six per-second rates of one interface: counter k of cur[]
 * becomes metrics[k]. */
static void
s_net_emit(const tproc_t *self, const tproc_dev_t *d,
           telem_sampler_emit_fn emit, void *arg)
{
    static const char *const metrics[6] = {
        "net_rx_bytes_per_second", "net_rx_errors_per_second",
        "net_rx_drops_per_second", "net_tx_bytes_per_second",
        "net_tx_errors_per_second", "net_tx_drops_per_second"
    };
    telem_tag_t tag = {"iface", d->name};
    double delta;
    for (int k = 0; k < 6; k++)
        if (s_delta(d, k, &delta))
            emit(arg, metrics[k], &tag, 1, delta / self->dt_s);
}

/* Lines look like "  eth0: rxbytes rxpackets rxerrs rxdrop ... (8 rx
 * fields) txbytes txpackets txerrs txdrop ..."; the two header lines have
 * no colon. */
int
tproc_do_netdev(tproc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    int rc = tproc_read(self, TPROC_F_NETDEV);
    if (rc != 0)
        return rc;
    s_devs_begin(&self->ifaces);
    char *pos = self->text.buf, *line;
    while ((line = telem_stext_line(&pos)) != NULL) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        line = (char *) telem_stext_blank(line);
        uint64_t v[12];
        if (strcmp(line, "lo") == 0
            || telem_stext_u64s(colon + 1, v, 12) != 12)
            continue;
        tproc_dev_t *d = s_devs_get(&self->ifaces, line);
        if (d) {
            const uint64_t cur[6] = {v[0], v[2], v[3], v[8], v[10], v[11]};
            memcpy(d->cur, cur, sizeof cur);
        }
    }
    s_devs_end(&self->ifaces);
    for (size_t i = 0; i < self->ifaces.n; i++)
        if (self->ifaces.v[i].has_prev && self->dt_s > 0.0)
            s_net_emit(self, &self->ifaces.v[i], emit, arg);
    s_devs_shift(&self->ifaces);
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
s_is_whole_disk(const tproc_t *self, const char *name)
{
    if (telem_stext_starts(name, "loop") || telem_stext_starts(name, "ram")
        || telem_stext_starts(name, "zram"))
        return false;
    if (self->sys_block_fd >= 0) {
        char sysname[TPROC_DEV_NAME_MAX];
        size_t i;
        for (i = 0; name[i] != '\0'; i++)
            sysname[i] = name[i] == '/' ? '!' : name[i];
        sysname[i] = '\0';
        return faccessat(self->sys_block_fd, sysname, F_OK, 0) == 0;
    }
    char parent[TPROC_DEV_NAME_MAX];
    return !(s_parent_name(name, parent, sizeof parent)
             && s_devs_find(&self->disks, parent) != NULL);
}

/* Average time per completed request: ms spent / requests, in seconds; 0
 * when none completed in the interval (as iostat prints it). */
static void
s_disk_latency(const tproc_dev_t *d, int ios, int ms, const char *metric,
               const telem_tag_t *tag, telem_sampler_emit_fn emit, void *arg)
{
    double n, t;
    if (s_delta(d, ios, &n) && s_delta(d, ms, &t))
        emit(arg, metric, tag, 1, n > 0.0 ? t / n / 1000.0 : 0.0);
}

/* cur[]: reads, sectors read, ms reading, writes, sectors written, ms
 * writing, ms doing I/O. */
static void
s_disk_emit(const tproc_t *self, const tproc_dev_t *d,
            telem_sampler_emit_fn emit, void *arg)
{
    telem_tag_t tag = {"disk", d->name};
    double delta, dt = self->dt_s;
    if (s_delta(d, 1, &delta))
        emit(arg, "disk_read_bytes_per_second", &tag, 1,
             delta * S_SECTOR_BYTES / dt);
    if (s_delta(d, 4, &delta))
        emit(arg, "disk_write_bytes_per_second", &tag, 1,
             delta * S_SECTOR_BYTES / dt);
    if (s_delta(d, 0, &delta))
        emit(arg, "disk_reads_per_second", &tag, 1, delta / dt);
    if (s_delta(d, 3, &delta))
        emit(arg, "disk_writes_per_second", &tag, 1, delta / dt);
    if (!d->full)
        return;
    s_disk_latency(d, 0, 2, "disk_read_latency_seconds", &tag, emit, arg);
    s_disk_latency(d, 3, 5, "disk_write_latency_seconds", &tag, emit, arg);
    if (s_delta(d, 6, &delta)) {
        double pct = delta / 1000.0 / dt * 100.0;
        emit(arg, "disk_busy_percent", &tag, 1, pct > 100.0 ? 100.0 : pct);
    }
}

/* Parses one diskstats line ("major minor name reads merged sectors ms
 * writes merged sectors ms in_flight io_ms ...") into the table. */
static void
s_disk_line(tproc_t *self, char *line)
{
    uint64_t majmin[2], v[10];
    if (telem_stext_u64s(line, majmin, 2) != 2)
        return;
    char *name = line + strspn(line, " \t");
    name += strspn(name, "0123456789");
    name += strspn(name, " \t");
    name += strspn(name, "0123456789");
    name += strspn(name, " \t");
    char *end = name + strcspn(name, " \t");
    if (*end == '\0' || end == name)
        return;
    *end = '\0';
    int n = telem_stext_u64s(end + 1, v, 10);
    if (n < 7)
        return;
    tproc_dev_t *d = s_devs_get(&self->disks, name);
    if (!d)
        return;
    const uint64_t cur[TPROC_DEV_COUNTERS] = {
        v[0], v[2], v[3], v[4], v[6], n >= 10 ? v[7] : 0, n >= 10 ? v[9] : 0
    };
    memcpy(d->cur, cur, sizeof cur);
    d->full = n >= 10;
}

int
tproc_do_diskstats(tproc_t *self, telem_sampler_emit_fn emit, void *arg)
{
    int rc = tproc_read(self, TPROC_F_DISKSTATS);
    if (rc != 0)
        return rc;
    s_devs_begin(&self->disks);
    char *pos = self->text.buf, *line;
    while ((line = telem_stext_line(&pos)) != NULL)
        s_disk_line(self, line);
    s_devs_end(&self->disks);
    /* Decided once every current name is in the table (the heuristic looks
     * for the parent disk). */
    for (size_t i = 0; i < self->disks.n; i++) {
        tproc_dev_t *d = &self->disks.v[i];
        if (d->whole < 0)
            d->whole = s_is_whole_disk(self, d->name) ? 1 : 0;
        if (d->whole && d->has_prev && self->dt_s > 0.0)
            s_disk_emit(self, d, emit, arg);
    }
    s_devs_shift(&self->disks);
    return 0;
}

int
tproc_open_sys_block(const char *proc_root)
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
