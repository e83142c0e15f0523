/* telemd_handover.c - the new telemd's side of a hand-over: ask, SIGTERM,
 * SIGKILL, each followed by a bounded wait for the node's lock
 * (telemd_handover.h).
 *
 * Waiting is a poll of the lock with a short sleep between tries (a flock
 * cannot be waited on with a timeout); the old telemd's pid is checked
 * against /proc before any signal, so a stale endpoints file never makes
 * telemd signal an unrelated process.
 */
#include "telemd_handover.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "telem_error.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_sock_raw.h"
#include "telem_time.h"

#define S_TRY_MS 20              /* between two tries of the lock */
#define S_REPLY_MS 1000          /* wait for the answer to the request */
#define S_REPLY_MAX (64 << 10)  /* its frame limit: a control reply is
                                    well under 1 KiB */

int
telemd_lock_try(const char *path, int *fd_out)
{
    *fd_out = -1;
    for (int tries = 0; tries < 8; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
            return TELEM_EIO;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int busy = errno == EWOULDBLOCK;
            close(fd);
            return busy ? TELEM_ESTATE : TELEM_EIO;
        }
        struct stat a, b;
        if (fstat(fd, &a) != 0 || stat(path, &b) != 0
            || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
            close(fd);           /* its holder removed it: lock the new one */
            continue;
        }
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%d\n", (int) getpid());
        if (ftruncate(fd, 0) != 0 || write(fd, pid, (size_t) n) != n) {
            close(fd);
            return TELEM_EIO;
        }
        *fd_out = fd;
        return 0;
    }
    return TELEM_EIO;
}

/* Waits up to `ns` for the lock.  0 with *fd, or TELEM_ETIMEDOUT. */
static int
s_wait_lock(const char *path, int64_t ns, int *fd)
{
    int64_t end = telem_mono_ns() + ns;
    for (;;) {
        int rc = telemd_lock_try(path, fd);
        if (rc != TELEM_ESTATE)
            return rc;
        if (telem_mono_ns() >= end)
            return TELEM_ETIMEDOUT;
        struct timespec ts = { 0, S_TRY_MS * 1000000L };
        nanosleep(&ts, NULL);
    }
}

/* Reads `key<TAB>value` from the endpoints file into out. */
static int
s_endpoint(const char *rundir, const char *node, const char *key, char *out,
           size_t size)
{
    char path[TELEM_PATH_MAX], line[TELEM_PATH_MAX + 64];
    if (telem_node_path(path, sizeof path, rundir, node, "endpoints"))
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int found = -1;
    size_t klen = strlen(key);
    while (found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, key, klen) == 0 && line[klen] == '\t') {
            snprintf(out, size, "%s", line + klen + 1);
            found = 0;
        }
    }
    fclose(f);
    return found;
}

/* The old telemd's pid: endpoints file, else the lock file; 0 if none. */
static pid_t
s_old_pid(const char *rundir, const char *node, const char *lock_path)
{
    char buf[64] = "";
    if (s_endpoint(rundir, node, "pid", buf, sizeof buf) != 0) {
        FILE *f = fopen(lock_path, "r");
        if (!f || !fgets(buf, sizeof buf, f))
            *buf = '\0';
        if (f)
            fclose(f);
    }
    long v = strtol(buf, NULL, 10);
    return v > 1 && v != (long) getpid() ? (pid_t) v : 0;
}

/* 1 when `pid` runs a program named telemd as this user. */
static int
s_is_our_telemd(pid_t pid)
{
    char path[64], comm[64] = "";
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int) pid);
    if (stat(path, &st) != 0 || st.st_uid != getuid())
        return 0;
    snprintf(path, sizeof path, "/proc/%d/comm", (int) pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(comm, sizeof comm, f))
        *comm = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    return strcmp(comm, "telemd") == 0;
}

/* Sends TELEM_CTL_HANDOVER on the node's ctl socket and waits a moment
 * for the answer.  Returns 0 when the old telemd answered. */
static int
s_ask(const char *rundir, const char *node)
{
    char ep[TELEM_PATH_MAX];
    if (s_endpoint(rundir, node, "ctl", ep, sizeof ep) != 0)
        return TELEM_ECONN;
    void *zctx = zmq_ctx_new();
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    const telem_sock_opts_t o = {
        .max_msg = S_REPLY_MAX, .sndhwm = TELEM_SOCK_KEEP,
        .rcvhwm = TELEM_SOCK_KEEP, .linger_ms = 0,
        .sndtimeo_ms = TELEM_SOCK_KEEP, .reconnect_ivl_max_ms = TELEM_SOCK_KEEP,
    };
    void *dealer = zctx ? telem_sock_raw_new(zctx, ZMQ_DEALER, &o, ep, NULL)
                        : NULL;
    int rc = TELEM_ECONN;
    const void *data;
    size_t size;
    telem_control_t c = { .id = 1, .op = TELEM_CTL_HANDOVER };
    if (dealer && enc && telem_proto_encode_control(enc, &c, &data, &size) == 0
        && zmq_send(dealer, data, size, ZMQ_DONTWAIT) >= 0) {
        zmq_pollitem_t item = { dealer, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&item, 1, S_REPLY_MS) == 1)
            rc = 0;
    }
    if (dealer)
        zmq_close(dealer);
    telem_proto_encoder_destroy(&enc);
    if (zctx)
        zmq_ctx_term(zctx);
    return rc;
}

/* Step 2 or 3: signals the old telemd if it is one; 1 if signalled. */
static int
s_signal(pid_t pid, int sig, const char *name)
{
    if (!pid || !s_is_our_telemd(pid)) {
        telem_log(TELEM_LOG_WARN, "hand-over: pid %d is not a telemd of this "
                  "user; not sending %s", (int) pid, name);
        return 0;
    }
    telem_log(TELEM_LOG_INFO, "hand-over: sending %s to telemd pid %d", name,
              (int) pid);
    return kill(pid, sig) == 0;
}

int
telemd_handover(const char *rundir, const char *node, const char *lock_path,
                const telemd_handover_config_t *cfg, int *fd_out)
{
    pid_t pid = s_old_pid(rundir, node, lock_path);
    telem_log(TELEM_LOG_INFO, "hand-over: telemd pid %d holds node %s; "
              "asking it to flush and exit", (int) pid, node);
    int rc = s_ask(rundir, node);
    if (rc)
        telem_log(TELEM_LOG_WARN, "hand-over: no answer to the request");
    if ((rc = s_wait_lock(lock_path, cfg->ask_ns, fd_out)) != TELEM_ETIMEDOUT)
        goto out;
    telem_log(TELEM_LOG_WARN, "hand-over: lock still held after %.1f s",
              cfg->ask_ns / 1e9);
    if (s_signal(pid, SIGTERM, "SIGTERM")
        && (rc = s_wait_lock(lock_path, cfg->term_ns, fd_out))
               != TELEM_ETIMEDOUT)
        goto out;
    if (s_signal(pid, SIGKILL, "SIGKILL"))
        rc = s_wait_lock(lock_path, cfg->kill_ns, fd_out);
out:
    if (rc == 0)
        telem_log(TELEM_LOG_INFO, "hand-over: node %s lock taken", node);
    else
        telem_log(TELEM_LOG_ERROR, "hand-over: node %s not taken over: %s",
                  node, telem_strerror(rc));
    return rc;
}
