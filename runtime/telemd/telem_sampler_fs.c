/* telem_sampler_fs.c - level 2 size, free space and inodes of each mounted
 * file system, from <proc_root>/mounts and statvfs(), tags mountpoint,
 * fstype and device.
 *
 * Left out, as node_exporter leaves them out by default: pseudo file
 * systems (the fstype list below: proc, sysfs, cgroup, devpts, ...) and
 * mount points under /dev, /proc, /sys, /run/credentials and container
 * storage.  tmpfs stays in: /dev/shm and /tmp filling up is a real way for
 * a job to fail.  A mount point listed twice is reported once, for the
 * last (visible) mount.
 *
 * statvfs() of a dead NFS server or a hung FUSE daemon blocks.  So the
 * calls run on a helper thread (telem_sampler_fs_worker.h) and the sampler
 * waits at most TFS_DEADLINE_NS for each: a mount that does not answer in
 * time is skipped and counted (fs_stat_timeouts_total), its thread left
 * behind, and it is not asked again until that call has returned
 * (fs_mounts_hung counts those mounts on each sample); a new helper
 * thread does the rest.  At most S_STUCK_MAX threads are ever left behind;
 * past that no mount is stat'ed until one returns.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_grow.h"
#include "telem_sampler.h"
#include "telem_sampler_fs_worker.h"
#include "telem_stext.h"
#include "telem_time.h"

#define TFS_DEADLINE_NS (TELEM_NS_PER_SEC / 2)
#define S_STUCK_MAX 8
#define S_MOUNTS_MAX 4096
#define S_PATH_MAX 4096

#define TAGS " (tags mountpoint, fstype, device)."
static const telem_meta_t s_metrics[] = {
    {"fs_size_bytes", TELEM_METRIC_GAUGE, "bytes",
     "Size of a mounted file system" TAGS},
    {"fs_free_bytes", TELEM_METRIC_GAUGE, "bytes",
     "Free space of a mounted file system, including what only root may "
     "use" TAGS},
    {"fs_available_bytes", TELEM_METRIC_GAUGE, "bytes",
     "Space available to unprivileged users on a mounted file system" TAGS},
    {"fs_files", TELEM_METRIC_GAUGE, "",
     "Inodes of a mounted file system" TAGS},
    {"fs_files_free", TELEM_METRIC_GAUGE, "",
     "Free inodes of a mounted file system" TAGS},
    {"fs_stat_timeouts_total", TELEM_METRIC_COUNTER, "",
     "statvfs() calls that did not return within the deadline (0.5 s), "
     "since telemd started: each one's mount was skipped."},
    {"fs_mounts_hung", TELEM_METRIC_GAUGE, "",
     "Mounts skipped in this sample because an earlier statvfs() on them "
     "has not returned yet."},
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

/* node_exporter's default --collector.filesystem.fs-types-exclude. */
static const char *const s_pseudo[] = {
    "autofs", "binfmt_misc", "bpf", "cgroup", "cgroup2", "configfs",
    "debugfs", "devpts", "devtmpfs", "fusectl", "hugetlbfs", "iso9660",
    "mqueue", "nsfs", "overlay", "proc", "procfs", "pstore", "rpc_pipefs",
    "securityfs", "selinuxfs", "squashfs", "sysfs", "tracefs", NULL
};
/* ... and its --collector.filesystem.mount-points-exclude (a prefix
 * followed by the end or '/', or with a '+' any path below). */
static const char *const s_excluded_dirs[] = {
    "/dev", "/proc", "/sys", "/run/credentials/+", "/var/lib/docker/+",
    "/var/lib/containers/storage/+", NULL
};

typedef struct {
    char *device, *dir, *type;  /* into the text buffer, unescaped */
} s_mount_t;

typedef struct {
    char dir[S_PATH_MAX];
    tfs_worker_t *worker;       /* abandoned, until its call returns */
} s_stuck_t;

typedef struct {
    int proc_fd, fd;
    telem_stext_t text;
    s_mount_t *mounts;
    size_t nmounts, cap;
    const char **paths;         /* this sample's statvfs batch */
    size_t *which;              /* paths[i] is mounts[which[i]] */
    tfs_result_t *res;
    size_t bcap;
    tfs_worker_t *worker;
    s_stuck_t stuck[S_STUCK_MAX];
    size_t nstuck;
    uint64_t timeouts;
} s_fs_t;

/* ---- /proc/mounts -------------------------------------------------------- */

/* Undoes the kernel's octal escapes (\040 space, \011 tab, \012 newline,
 * \134 backslash) in place. */
static void
s_unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; ) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0'
            && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
            *w++ = (char) ((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        }
        else
            *w++ = *r++;
    }
    *w = '\0';
}

/* Cuts the next blank-separated field of *pos; NULL when none. */
static char *
s_field(char **pos)
{
    char *s = (char *) telem_stext_blank(*pos);
    if (*s == '\0')
        return NULL;
    char *e = s + strcspn(s, " \t");
    if (*e != '\0')
        *e++ = '\0';
    *pos = e;
    return s;
}

static bool
s_excluded(const char *dir, const char *type)
{
    for (int i = 0; s_pseudo[i]; i++)
        if (strcmp(type, s_pseudo[i]) == 0)
            return true;
    for (int i = 0; s_excluded_dirs[i]; i++) {
        const char *x = s_excluded_dirs[i];
        size_t l = strcspn(x, "+");
        if (strncmp(dir, x, l) != 0)
            continue;
        if (x[l] == '+' ? dir[l] != '\0' : dir[l] == '\0' || dir[l] == '/')
            return true;
    }
    return dir[0] != '/';
}

/* Parses "device dir type options freq passno" lines into self->mounts. */
static int
s_parse_mounts(s_fs_t *self)
{
    self->nmounts = 0;
    char *pos = self->text.buf, *line;
    while ((line = telem_stext_line(&pos)) != NULL) {
        s_mount_t m;
        char *p = line;
        if (!(m.device = s_field(&p)) || !(m.dir = s_field(&p))
            || !(m.type = s_field(&p)) || !s_field(&p))
            continue;           /* options are required */
        s_unescape(m.device);
        s_unescape(m.dir);
        if (strlen(m.dir) >= S_PATH_MAX || s_excluded(m.dir, m.type))
            continue;
        if (self->nmounts == S_MOUNTS_MAX
            || telem_grow((void **) &self->mounts, &self->cap,
                          self->nmounts + 1, sizeof m, 16))
            return TELEM_ENOMEM;
        self->mounts[self->nmounts++] = m;
    }
    return 0;
}

/* ---- stuck mounts -------------------------------------------------------- */

/* Lets go of stuck mounts whose call has returned. */
static void
s_reap(s_fs_t *self)
{
    size_t w = 0;
    for (size_t i = 0; i < self->nstuck; i++) {
        if (tfs_worker_returned(self->stuck[i].worker))
            tfs_worker_destroy(&self->stuck[i].worker);
        else
            self->stuck[w++] = self->stuck[i];
    }
    self->nstuck = w;
}

static bool
s_is_stuck(const s_fs_t *self, const char *dir)
{
    for (size_t i = 0; i < self->nstuck; i++)
        if (strcmp(self->stuck[i].dir, dir) == 0)
            return true;
    return false;
}

/* ---- sampling ------------------------------------------------------------ */

static void
s_emit_mount(const s_mount_t *m, const tfs_result_t *r,
             telem_sampler_emit_fn emit, void *arg)
{
    if (r->rc != 0)
        return;
    const telem_tag_t tags[3] = {
        {"device", m->device}, {"fstype", m->type}, {"mountpoint", m->dir}
    };
    emit(arg, "fs_size_bytes", tags, 3, (double) r->size);
    emit(arg, "fs_free_bytes", tags, 3, (double) r->free);
    emit(arg, "fs_available_bytes", tags, 3, (double) r->avail);
    emit(arg, "fs_files", tags, 3, (double) r->files);
    emit(arg, "fs_files_free", tags, 3, (double) r->files_free);
}

/* Builds the batch: each mount point once (its last mount), none stuck.
 * Returns how many were left out as hung. */
static size_t
s_batch(s_fs_t *self, size_t *n_out)
{
    size_t n = 0, hung = 0;
    for (size_t i = 0; i < self->nmounts; i++) {
        bool later = false;
        for (size_t j = i + 1; j < self->nmounts && !later; j++)
            later = strcmp(self->mounts[i].dir, self->mounts[j].dir) == 0;
        if (later)
            continue;
        if (s_is_stuck(self, self->mounts[i].dir)) {
            hung++;
            continue;
        }
        self->paths[n] = self->mounts[i].dir;
        self->which[n++] = i;
    }
    *n_out = n;
    return hung;
}

/* Runs the batch from `from`, moving a mount that times out to the stuck
 * list and going on with a new worker.  Returns mounts left out. */
static size_t
s_run(s_fs_t *self, size_t n, telem_sampler_emit_fn emit, void *arg)
{
    size_t from = 0, skipped = 0;
    while (from < n) {
        if (!self->worker && (self->nstuck == S_STUCK_MAX
                              || !(self->worker = tfs_worker_new())))
            return skipped + (n - from);
        tfs_worker_t *stuck;
        long k = tfs_worker_run(&self->worker, self->paths + from, n - from,
                                TFS_DEADLINE_NS, self->res + from, &stuck);
        if (k < 0)
            return skipped + (n - from);
        for (size_t i = from; i < from + (size_t) k; i++)
            s_emit_mount(&self->mounts[self->which[i]], &self->res[i],
                         emit, arg);
        from += (size_t) k;
        if (stuck) {            /* paths[from] did not answer */
            s_stuck_t *s = &self->stuck[self->nstuck++];
            strcpy(s->dir, self->paths[from]);
            s->worker = stuck;
            self->timeouts++;
            skipped++;
            from++;
        }
    }
    return skipped;
}

static int
s_grow_batch(s_fs_t *self)
{
    if (self->nmounts <= self->bcap)
        return 0;
    size_t c1 = self->bcap, c2 = self->bcap, c3 = self->bcap;
    if (telem_grow((void **) &self->paths, &c1, self->nmounts,
                   sizeof *self->paths, 16)
        || telem_grow((void **) &self->which, &c2, self->nmounts,
                      sizeof *self->which, 16)
        || telem_grow((void **) &self->res, &c3, self->nmounts,
                      sizeof *self->res, 16))
        return TELEM_ENOMEM;
    self->bcap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    return 0;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    (void) now_ns;
    s_fs_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    int rc = telem_stext_read(&self->text, self->proc_fd, "mounts", &self->fd);
    if (rc == 0)
        rc = s_parse_mounts(self);
    if (rc == 0)
        rc = s_grow_batch(self);
    if (rc != 0)
        return rc;
    s_reap(self);
    size_t n;
    size_t hung = s_batch(self, &n);
    hung += s_run(self, n, emit, arg);
    emit(arg, "fs_mounts_hung", NULL, 0, (double) hung);
    emit(arg, "fs_stat_timeouts_total", NULL, 0, (double) self->timeouts);
    return 0;
}

/* ---- the vtable ---------------------------------------------------------- */

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_fs_t *self = *state_p;
    tfs_worker_destroy(&self->worker);
    for (size_t i = 0; i < self->nstuck; i++)
        tfs_worker_destroy(&self->stuck[i].worker);
    if (self->fd >= 0)
        close(self->fd);
    if (self->proc_fd >= 0)
        close(self->proc_fd);
    telem_stext_free(&self->text);
    free(self->mounts);
    free(self->paths);
    free(self->which);
    free(self->res);
    free(self);
    *state_p = NULL;
}

/* Unsupported when <proc_root>/mounts cannot be read. */
static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    s_fs_t *self = env ? calloc(1, sizeof *self) : NULL;
    int rc = !env ? TELEM_EINVAL : !self ? TELEM_ENOMEM : 0;
    if (self) {
        self->fd = -1;
        self->proc_fd = open(env->proc_root ? env->proc_root : "/proc",
                             O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (self->proc_fd < 0
            || telem_stext_read(&self->text, self->proc_fd, "mounts",
                                &self->fd) != 0)
            rc = TELEM_EUNSUPPORTED;
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

const telem_sampler_vt_t telem_sampler_fs = {
    .name = "fs",
    .min_level = 2,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
