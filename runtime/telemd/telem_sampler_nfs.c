/* telem_sampler_nfs.c - level 2: NFS client operations, retransmissions
 * and bytes, per mount, from <proc_root>/self/mountstats.
 *
 * mountstats (fs/nfs/super.c, nfs_show_stats; fs/sunrpc/stats.c) has one
 * block per mount, opening with
 *   device SERVER:/EXPORT mounted on MOUNTPOINT with fstype nfs4 statvers=1.1
 * and, for NFS mounts, lines such as
 *   bytes: normal-read normal-write direct-read direct-write server-read
 *          server-write read-pages write-pages
 *   per-op statistics
 *           READ: ops transmissions major-timeouts bytes-sent bytes-received
 *                 queue-ms rtt-ms execute-ms [errors]
 * An operation's retransmissions are transmissions - ops.  Series, tags
 * mountpoint and server (op for per-operation ones): nfs_ops_total and
 * nfs_op_retransmissions_total per operation that ran at least once,
 * nfs_retransmissions_total and nfs_major_timeouts_total summed per mount,
 * nfs_read_bytes_total and nfs_write_bytes_total (normal plus direct I/O:
 * what the applications read and wrote).  All are the kernel's counters.
 *
 * The file is opened once and re-read with pread() into a buffer kept
 * between calls.  open() returns TELEM_EUNSUPPORTED when the file cannot be
 * read or names no NFS mount (a mount made after telemd started is seen
 * once telemd restarts).  A line that does not parse is skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_grow.h"
#include "telem_sampler.h"
#include "telem_sampler_files.h"

#define S_BUF_INITIAL (64u << 10)
#define S_BUF_MAX (64u << 20)
#define S_C TELEM_METRIC_COUNTER

static const telem_meta_t s_metrics[] = {
    {"nfs_ops_total", S_C, "",
     "NFS operations of one type sent by this client (tags mountpoint, "
     "server, op)."},
    {"nfs_op_retransmissions_total", S_C, "",
     "RPC retransmissions of one operation type: transmissions - ops "
     "(tags mountpoint, server, op)."},
    {"nfs_retransmissions_total", S_C, "",
     "RPC retransmissions on the mount, all operations (tags mountpoint, "
     "server)."},
    {"nfs_major_timeouts_total", S_C, "",
     "RPC major timeouts on the mount, all operations (tags mountpoint, "
     "server)."},
    {"nfs_read_bytes_total", S_C, "bytes",
     "Bytes applications read from the mount, normal and O_DIRECT (tags "
     "mountpoint, server)."},
    {"nfs_write_bytes_total", S_C, "bytes",
     "Bytes applications wrote to the mount, normal and O_DIRECT (tags "
     "mountpoint, server)."},
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

typedef struct {
    int fd;
    char *buf;
    size_t cap;
} s_nfs_t;

/* The mount being parsed. */
typedef struct {
    telem_tag_t tags[3];            /* mountpoint, server, op */
    bool nfs, in_ops;
    uint64_t retrans, timeouts;
    char server[256];
} s_mount_t;

static long
s_read(s_nfs_t *self)
{
    size_t len = 0;
    for (;;) {
        if (self->cap - len < 2) {
            if (self->cap >= S_BUF_MAX)
                return TELEM_ETOOBIG;
            if (telem_grow((void **) &self->buf, &self->cap, self->cap + 1,
                           1, S_BUF_INITIAL))
                return TELEM_ENOMEM;
        }
        ssize_t r = pread(self->fd, self->buf + len, self->cap - len - 1,
                          (off_t) len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return TELEM_EIO;
        if (r == 0)
            break;
        len += (size_t) r;
    }
    self->buf[len] = '\0';
    return (long) len;
}

/* Parses up to max unsigned numbers separated by blanks; returns how many. */
static int
s_u64s(const char *s, uint64_t *out, int max)
{
    int n = 0;
    while (n < max && telem_sfile_u64(s, &out[n], &s) == 0)
        n++;
    return n;
}

static void
s_end_mount(s_mount_t *m, telem_sampler_emit_fn emit, void *arg)
{
    if (m->nfs) {
        emit(arg, "nfs_retransmissions_total", m->tags, 2,
             (double) m->retrans);
        emit(arg, "nfs_major_timeouts_total", m->tags, 2,
             (double) m->timeouts);
    }
    m->nfs = false;
}

/* "device SRC mounted on MP with fstype TYPE ...": tags in place. */
static void
s_begin_mount(s_mount_t *m, char *line)
{
    memset(m, 0, sizeof *m);
    char *src = line + 7;
    char *on = strstr(src, " mounted on ");
    char *with = on ? strstr(on + 12, " with fstype ") : NULL;
    if (!with || strncmp(with + 13, "nfs", 3) != 0)
        return;
    *on = '\0';
    *with = '\0';
    char *colon = strstr(src, ":/");
    size_t sl = colon ? (size_t) (colon - src) : strlen(src);
    if (sl == 0 || sl >= sizeof m->server || !on[12])
        return;
    memcpy(m->server, src, sl);
    m->server[sl] = '\0';
    m->tags[0] = (telem_tag_t) {"mountpoint", on + 12};
    m->tags[1] = (telem_tag_t) {"server", m->server};
    m->nfs = true;
}

/* "        READ: ops trans timeouts ...". */
static void
s_op_line(s_mount_t *m, char *line, telem_sampler_emit_fn emit, void *arg)
{
    char *colon = strchr(line, ':');
    uint64_t v[3];
    if (!colon)
        return;
    *colon = '\0';
    line += strspn(line, " \t");
    if (!*line || s_u64s(colon + 1, v, 3) != 3 || v[0] == 0)
        return;
    uint64_t retrans = v[1] > v[0] ? v[1] - v[0] : 0;
    m->retrans += retrans;
    m->timeouts += v[2];
    m->tags[2] = (telem_tag_t) {"op", line};
    emit(arg, "nfs_ops_total", m->tags, 3, (double) v[0]);
    emit(arg, "nfs_op_retransmissions_total", m->tags, 3, (double) retrans);
}

/* Returns 1 when the line opens an NFS mount. */
static int
s_line(s_mount_t *m, char *line, telem_sampler_emit_fn emit, void *arg)
{
    if (strncmp(line, "device ", 7) == 0) {
        s_end_mount(m, emit, arg);
        s_begin_mount(m, line);
        return m->nfs;
    }
    if (!m->nfs)
        return 0;
    char *s = line + strspn(line, " \t");
    uint64_t v[4];
    if (m->in_ops)
        s_op_line(m, s, emit, arg);
    else if (strncmp(s, "per-op statistics", 17) == 0)
        m->in_ops = true;
    else if (strncmp(s, "bytes:", 6) == 0 && s_u64s(s + 6, v, 4) == 4) {
        emit(arg, "nfs_read_bytes_total", m->tags, 2, (double) (v[0] + v[2]));
        emit(arg, "nfs_write_bytes_total", m->tags, 2,
             (double) (v[1] + v[3]));
    }
    return 0;
}

/* Parses the buffer; returns the NFS mounts seen. */
static int
s_parse(s_nfs_t *self, telem_sampler_emit_fn emit, void *arg)
{
    s_mount_t m;
    memset(&m, 0, sizeof m);
    int mounts = 0;
    char *pos = self->buf;
    while (*pos) {
        char *nl = strchr(pos, '\n');
        if (nl)
            *nl = '\0';
        mounts += s_line(&m, pos, emit, arg);
        pos = nl ? nl + 1 : pos + strlen(pos);
    }
    s_end_mount(&m, emit, arg);
    return mounts;
}

static void
s_ignore(void *arg, const char *metric, const telem_tag_t *tags,
         uint32_t ntags, double value)
{
    (void) arg, (void) metric, (void) tags, (void) ntags, (void) value;
}

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_nfs_t *self = *state_p;
    if (self->fd >= 0)
        close(self->fd);
    free(self->buf);
    free(self);
    *state_p = NULL;
}

static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    s_nfs_t *self = env ? calloc(1, sizeof *self) : NULL;
    int rc = !env ? TELEM_EINVAL : !self ? TELEM_ENOMEM : 0;
    if (self) {
        int dfd = open(env->proc_root ? env->proc_root : "/proc",
                       O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        self->fd = dfd < 0 ? -1
                 : openat(dfd, "self/mountstats", O_RDONLY | O_CLOEXEC);
        if (dfd >= 0)
            close(dfd);
        if (self->fd < 0 || s_read(self) < 0)
            rc = TELEM_EUNSUPPORTED;
        else if (s_parse(self, s_ignore, NULL) == 0)
            rc = TELEM_EUNSUPPORTED;
    }
    if (err)
        *err = rc;
    if (rc != 0) {
        void *p = self;
        s_close(&p);
        return NULL;
    }
    return self;
}

static int
s_sample(void *state, int64_t now_ns, telem_sampler_emit_fn emit, void *arg)
{
    (void) now_ns;
    s_nfs_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    long rc = s_read(self);
    if (rc < 0)
        return (int) rc;
    return s_parse(self, emit, arg) > 0 ? 0 : TELEM_EPROTO;
}

const telem_sampler_vt_t telem_sampler_nfs = {
    .name = "nfs",
    .min_level = 2,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
