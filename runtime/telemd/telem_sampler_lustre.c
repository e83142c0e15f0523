/* telem_sampler_lustre.c - level 2: the Lustre client's llite read and
 * write counters and the node's Lustre health check.
 *
 * Lustre keeps one llite directory per client mount, named
 * <fsname>-<instance> (scratch-ffff9a1b2c3d4000).  Its `stats` file holds
 * lines of "<name> <count> samples [<unit>] <min> <max> <sum> [<sumsq>]"
 * after a snapshot_time line; read_bytes and write_bytes give the calls
 * (count) and the bytes (sum).  Where the file lives moved across
 * versions: <proc_root>/fs/lustre/llite/<fs>/stats (Lustre 2.x before 2.12),
 * <sys_root>/kernel/debug/lustre/llite/<fs>/stats (debugfs, later versions),
 * <sys_root>/fs/lustre/llite/<fs>/stats; the first directory found is used.
 * health_check (<sys_root>/fs/lustre/ or <proc_root>/fs/lustre/) reads
 * "healthy", else names what is not ("NOT HEALTHY", "LBUG").
 *
 * Series, tag fs (the llite directory's name less its instance):
 * lustre_read_bytes_total, lustre_write_bytes_total, lustre_read_ops_total,
 * lustre_write_ops_total (counters); lustre_health_ok, 1 or 0, untagged.
 * The directories are listed on every call (a mount may come or go: a few
 * entries) and each stats file is opened and read once per call.
 * open() returns TELEM_EUNSUPPORTED when neither <proc_root>/fs/lustre nor
 * <sys_root>/fs/lustre exists.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_sampler.h"
#include "telem_sampler_files.h"

#define S_PATH_MAX 512
#define S_STATS_MAX (64u << 10)
#define S_C TELEM_METRIC_COUNTER

static const telem_meta_t s_metrics[] = {
    {"lustre_read_bytes_total", S_C, "bytes",
     "Bytes read through the Lustre client (llite stats read_bytes sum; "
     "tag fs)."},
    {"lustre_write_bytes_total", S_C, "bytes",
     "Bytes written through the Lustre client (llite stats write_bytes "
     "sum; tag fs)."},
    {"lustre_read_ops_total", S_C, "",
     "Read calls on the Lustre client (llite stats read_bytes samples; "
     "tag fs)."},
    {"lustre_write_ops_total", S_C, "",
     "Write calls on the Lustre client (llite stats write_bytes samples; "
     "tag fs)."},
    {"lustre_health_ok", TELEM_METRIC_GAUGE, "",
     "1 when Lustre's health_check reads \"healthy\", else 0."},
    {NULL, TELEM_METRIC_GAUGE, NULL, NULL}
};

typedef struct {
    int llite_fd;                   /* the llite directory, or -1 */
    int health_at;                  /* directory holding health_check */
    char *buf;                      /* S_STATS_MAX */
    int emitted;                    /* values from this call */
    int files;                      /* stats files read this call */
    telem_sampler_emit_fn emit;
    void *arg;
} s_lustre_t;

/* "read_bytes 21 samples [bytes] 4096 1048576 8392704 ...": the count and
 * the sum.  Returns 0 or TELEM_EPROTO. */
static int
s_stat_line(const char *rest, uint64_t *count, uint64_t *sum)
{
    const char *s;
    uint64_t min, max;
    if (telem_sfile_u64(rest, count, &s) != 0)
        return TELEM_EPROTO;
    s += strspn(s, " \t");
    if (strncmp(s, "samples", 7) != 0)
        return TELEM_EPROTO;
    s += 7;
    s += strspn(s, " \t");
    if (*s == '[') {
        const char *close = strchr(s, ']');
        if (!close)
            return TELEM_EPROTO;
        s = close + 1;
    }
    if (telem_sfile_u64(s, &min, &s) != 0 || telem_sfile_u64(s, &max, &s)
        || telem_sfile_u64(s, sum, &s))
        return TELEM_EPROTO;
    return 0;
}

static void
s_do_fs(int llite_fd, const char *dir, void *arg)
{
    s_lustre_t *self = arg;
    char path[S_PATH_MAX], fs[256];
    snprintf(path, sizeof path, "%s/stats", dir);
    if (telem_sfile_read_at(llite_fd, path, self->buf, S_STATS_MAX) <= 0)
        return;
    snprintf(fs, sizeof fs, "%s", dir);
    char *dash = strrchr(fs, '-');
    if (dash && dash != fs)
        *dash = '\0';
    telem_tag_t tag = {"fs", fs};
    static const struct {
        const char *key, *bytes, *ops;
    } keys[] = {
        {"read_bytes", "lustre_read_bytes_total", "lustre_read_ops_total"},
        {"write_bytes", "lustre_write_bytes_total", "lustre_write_ops_total"},
    };
    self->files++;
    char *save = NULL;
    for (char *line = strtok_r(self->buf, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        for (size_t k = 0; k < 2; k++) {
            size_t kl = strlen(keys[k].key);
            uint64_t count, sum;
            if (strncmp(line, keys[k].key, kl) == 0
                && (line[kl] == ' ' || line[kl] == '\t')
                && s_stat_line(line + kl, &count, &sum) == 0) {
                self->emit(self->arg, keys[k].ops, &tag, 1, (double) count);
                self->emit(self->arg, keys[k].bytes, &tag, 1, (double) sum);
                self->emitted++;
            }
        }
    }
}

static void
s_close(void **state_p)
{
    if (!state_p || !*state_p)
        return;
    s_lustre_t *self = *state_p;
    if (self->llite_fd >= 0)
        close(self->llite_fd);
    if (self->health_at >= 0)
        close(self->health_at);
    free(self->buf);
    free(self);
    *state_p = NULL;
}

static int
s_open_dir(const char *dir, const char *sub)
{
    char path[S_PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, sub) >= (int) sizeof path)
        return -1;
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Finds the llite and health_check directories; false when there is no
 * Lustre at all. */
static bool
s_find(s_lustre_t *self, const char *proc, const char *sys)
{
    int proc_fd = s_open_dir(proc, "fs/lustre");
    int sys_fd = s_open_dir(sys, "fs/lustre");
    self->llite_fd = s_open_dir(proc, "fs/lustre/llite");
    if (self->llite_fd < 0)
        self->llite_fd = s_open_dir(sys, "kernel/debug/lustre/llite");
    if (self->llite_fd < 0)
        self->llite_fd = s_open_dir(sys, "fs/lustre/llite");
    self->health_at = -1;
    if (sys_fd >= 0 && faccessat(sys_fd, "health_check", R_OK, 0) == 0)
        self->health_at = dup(sys_fd);
    else if (proc_fd >= 0 && faccessat(proc_fd, "health_check", R_OK, 0) == 0)
        self->health_at = dup(proc_fd);
    bool any = proc_fd >= 0 || sys_fd >= 0;
    if (proc_fd >= 0)
        close(proc_fd);
    if (sys_fd >= 0)
        close(sys_fd);
    return any;
}

static void *
s_open(const telem_sampler_env_t *env, int *err)
{
    s_lustre_t *self = env ? calloc(1, sizeof *self) : NULL;
    int rc = !env ? TELEM_EINVAL : !self ? TELEM_ENOMEM : 0;
    if (self) {
        self->llite_fd = self->health_at = -1;
        self->buf = malloc(S_STATS_MAX);
        if (!self->buf)
            rc = TELEM_ENOMEM;
        else if (!s_find(self, env->proc_root ? env->proc_root : "/proc",
                         env->sys_root ? env->sys_root : "/sys"))
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
    s_lustre_t *self = state;
    if (!self || !emit)
        return TELEM_EINVAL;
    self->emit = emit;
    self->arg = arg;
    self->emitted = self->files = 0;
    if (self->llite_fd >= 0)
        telem_sfile_each(self->llite_fd, ".", s_do_fs, self);
    char text[TELEM_SFILE_TEXT_MAX];
    if (self->health_at >= 0
        && telem_sfile_read_at(self->health_at, "health_check", text,
                               sizeof text) > 0) {
        emit(arg, "lustre_health_ok", NULL, 0,
             strncmp(text, "healthy", 7) == 0 ? 1.0 : 0.0);
        self->emitted++;
    }
    /* Garbage in every stats file read is worth a (rate-limited) line. */
    return self->emitted > 0 || self->files == 0 ? 0 : TELEM_EPROTO;
}

const telem_sampler_vt_t telem_sampler_lustre = {
    .name = "lustre",
    .min_level = 2,
    .metrics = s_metrics,
    .open = s_open,
    .sample = s_sample,
    .close = s_close,
};
