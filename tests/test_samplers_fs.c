/* test_samplers_fs.c - the fs sampler: mounts from the fixture list
 * (tests/data/node/good/proc/mounts: pseudo file systems and excluded
 * mount points left out, escapes undone, a mount point listed twice
 * reported once) with statvfs of real directories; a malformed list; and
 * a mount that hangs.
 *
 * The hang is real: as root, in a child with its own mount namespace, a
 * FUSE file system is mounted whose daemon never answers (the test holds
 * /dev/fuse and never reads it), so statvfs on it blocks.  Sampling must
 * come back within the deadline, skip and count that mount, skip it
 * (quickly) while the call is stuck, and take it back once the connection
 * is closed and the call returns.  Without root or /dev/fuse that part is
 * skipped with the reason.
 */
#include "tmpdir.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sampler_rec.h"
#include "telem_time.h"

#define GOOD TELEM_TEST_DATA "/node/good"
#define BAD TELEM_TEST_DATA "/node/bad"

static void
test_fixture(void)
{
    telem_sampler_env_t env = {.proc_root = GOOD "/proc"};
    void *st;
    rec_t *r = calloc(1, sizeof *r);
    CHECK(rec_open(&telem_sampler_fs, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_fs, st, telem_now_ns(), r) == 0);
    /* Reported: / (its last line, /dev/vda), /run and /dev/shm are tmpfs
     * but /dev is excluded, /boot/efi, the NFS home: only those that
     * exist here answer statvfs. */
    CHECK_EQ(rec_count(r, "fs_size_bytes"), rec_count(r, "fs_files"));
    const char *root = "device=/dev/vda,fstype=ext4,mountpoint=/";
    CHECK(rec_value(r, "fs_size_bytes", root) > 0.0);
    CHECK(rec_value(r, "fs_available_bytes", root)
          <= rec_value(r, "fs_free_bytes", root));
    CHECK(rec_value(r, "fs_free_bytes", root)
          <= rec_value(r, "fs_size_bytes", root));
    CHECK(!rec_find(r, "fs_size_bytes",
                    "device=/dev/nvme0n1p2,fstype=ext4,mountpoint=/"));
    static const char *const never[] = {
        "mountpoint=/sys", "mountpoint=/proc", "mountpoint=/dev",
        "fstype=cgroup2", "fstype=squashfs", "fstype=overlay",
        "mountpoint=/run/credentials", "fstype=autofs", "fstype=devpts"
    };
    for (size_t i = 0; i < r->n; i++)
        for (size_t j = 0; j < sizeof never / sizeof never[0]; j++)
            CHECK(strstr(r->v[i].tags, never[j]) == NULL);
    size_t nroot = 0;
    for (size_t i = 0; i < r->n; i++)
        nroot += strcmp(r->v[i].metric, "fs_size_bytes") == 0
                 && strstr(r->v[i].tags, "mountpoint=/") != NULL
                 && strcmp(strstr(r->v[i].tags, "mountpoint=/"),
                           "mountpoint=/") == 0;
    CHECK_EQ(nroot, 1);
    /* /run exists here: statvfs answers (tmpfs is kept). */
    if (access("/run", F_OK) == 0)
        CHECK(rec_find(r, "fs_files",
                       "device=tmpfs,fstype=tmpfs,mountpoint=/run") != NULL);
    CHECK_EQ(rec_value(r, "fs_mounts_hung", ""), 0.0);
    CHECK_EQ(rec_value(r, "fs_stat_timeouts_total", ""), 0.0);
    telem_sampler_fs.close(&st);

    /* Escapes: a mount point with a blank, written by the test. */
    char dir[64];
    CHECK(test_tmpdir(dir, sizeof dir, "telem_fs") == 0);
    char sub[256], text[1024];
    snprintf(sub, sizeof sub, "%s/with space", dir);
    CHECK(mkdir(sub, 0755) == 0);
    snprintf(text, sizeof text, "dev\\134x %s/with\\040space ext4 rw 0 0\n",
             dir);
    rec_write(dir, "mounts", text);
    env.proc_root = dir;
    CHECK(rec_open(&telem_sampler_fs, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_fs, st, telem_now_ns(), r) == 0);
    char tags[512];
    snprintf(tags, sizeof tags, "device=dev\\x,fstype=ext4,mountpoint=%s",
             sub);
    CHECK(rec_value(r, "fs_size_bytes", tags) > 0.0);
    telem_sampler_fs.close(&st);
    CHECK(test_rmtree(dir) == 0);

    /* Malformed: nothing reported, no harm; no list at all: unsupported. */
    env.proc_root = BAD "/proc";
    CHECK(rec_open(&telem_sampler_fs, &st, &env) == 0);
    CHECK(rec_sample(&telem_sampler_fs, st, telem_now_ns(), r) == 0);
    CHECK_EQ(rec_count(r, "fs_size_bytes"), 0);
    telem_sampler_fs.close(&st);
    env.proc_root = "/nonexistent";
    CHECK(rec_open(&telem_sampler_fs, &st, &env) == TELEM_EUNSUPPORTED);
    free(r);
}

/* ---- a hung mount --------------------------------------------------------- */

static double
s_elapsed_s(int64_t t0)
{
    return (double) (telem_mono_ns() - t0) / 1e9;
}

/* Samples until fs_mounts_hung is 0, bounded; returns whether it was. */
static int
s_wait_unhung(void *st, rec_t *r)
{
    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 1000; i++) {
        CHECK(rec_sample(&telem_sampler_fs, st, telem_now_ns(), r) == 0);
        if (rec_value(r, "fs_mounts_hung", "") == 0.0)
            return 1;
        nanosleep(&ten_ms, NULL);
    }
    return 0;
}

static void
s_hung_checks(const char *dir, int fuse_fd)
{
    telem_sampler_env_t env = {.proc_root = dir};
    void *st;
    rec_t *r = calloc(1, sizeof *r);
    CHECK(rec_open(&telem_sampler_fs, &st, &env) == 0);
    int64_t t0 = telem_mono_ns();
    CHECK(rec_sample(&telem_sampler_fs, st, telem_now_ns(), r) == 0);
    double first = s_elapsed_s(t0);
    printf("sample with a hung mount: %.3f s (deadline 0.5 s)\n", first);
    CHECK(first >= 0.45 && first < 5.0);
    char tags[512];
    snprintf(tags, sizeof tags, "device=/dev/vda,fstype=ext4,mountpoint=%s",
             dir);
    CHECK(rec_value(r, "fs_size_bytes", tags) > 0.0);   /* after the hang */
    CHECK_EQ(rec_value(r, "fs_stat_timeouts_total", ""), 1.0);
    CHECK_EQ(rec_value(r, "fs_mounts_hung", ""), 1.0);
    CHECK_EQ(rec_count(r, "fs_size_bytes"), 2);         /* / and dir */

    t0 = telem_mono_ns();
    CHECK(rec_sample(&telem_sampler_fs, st, telem_now_ns(), r) == 0);
    double second = s_elapsed_s(t0);
    printf("next sample, the mount skipped: %.6f s\n", second);
    CHECK(second < 0.4);
    CHECK_EQ(rec_value(r, "fs_mounts_hung", ""), 1.0);
    CHECK_EQ(rec_value(r, "fs_stat_timeouts_total", ""), 1.0);

    /* The daemon goes away: the stuck call fails with ENOTCONN and
     * returns; the mount is asked again (and answers nothing). */
    close(fuse_fd);
    CHECK(s_wait_unhung(st, r));
    CHECK_EQ(rec_value(r, "fs_stat_timeouts_total", ""), 1.0);
    CHECK_EQ(rec_count(r, "fs_size_bytes"), 2);
    telem_sampler_fs.close(&st);
    free(r);
}

/* The child: own mount namespace, a FUSE mount nobody serves. */
static int
s_hung_child(const char *dir)
{
    if (unshare(CLONE_NEWNS) != 0
        || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return 77;
    char mnt[512], opts[128], text[2048];
    snprintf(mnt, sizeof mnt, "%s/hung", dir);
    if (mkdir(mnt, 0755) != 0)
        return 1;
    int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return 77;
    snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0",
             fd);
    if (mount("telemtest", mnt, "fuse.telemtest", MS_NOSUID | MS_NODEV,
              opts) != 0)
        return 77;
    snprintf(text, sizeof text, "/dev/vda / ext4 rw 0 0\n"
             "telemtest %s fuse.telemtest rw,nosuid,nodev 0 0\n"
             "/dev/vda %s ext4 rw 0 0\n", mnt, dir);
    rec_write(dir, "mounts", text);
    s_hung_checks(dir, fd);
    umount2(mnt, MNT_DETACH);
    fflush(stdout);
    fflush(stderr);
    return s_failures ? 1 : 0;
}

static void
test_hung(void)
{
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
        printf("hung mount: skipped (needs root and /dev/fuse)\n");
        return;
    }
    char dir[64];
    CHECK(test_tmpdir(dir, sizeof dir, "telem_fs") == 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(s_hung_child(dir));
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (rc == 77)
        printf("hung mount: skipped (no mount namespace or FUSE here)\n");
    else
        CHECK_INT(rc, 0);
    rmdir(dir);                 /* hung/ went with the namespace */
    char hung[512];
    snprintf(hung, sizeof hung, "%s/hung", dir);
    rmdir(hung);
    CHECK(test_rmtree(dir) == 0);
}

int
main(void)
{
    test_fixture();
    test_hung();
    return check_report("test_samplers_fs");
}
