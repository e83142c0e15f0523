/* launch_proc.c - posix_spawn into a process group of its own, signals to
 * whole groups, helper commands and wait statuses for the launcher (see
 * launch_proc.h).
 */
#include "launch_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "telem_error.h"

static int
s_spawn_attr(posix_spawnattr_t *attr)
{
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if (posix_spawnattr_init(attr))
        return -1;
    int rc = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP
                                      | POSIX_SPAWN_SETSIGMASK
                                      | POSIX_SPAWN_SETSIGDEF)
          || posix_spawnattr_setpgroup(attr, 0)
          || posix_spawnattr_setsigmask(attr, &none)
          || posix_spawnattr_setsigdefault(attr, &all);
    if (rc)
        posix_spawnattr_destroy(attr);
    return rc ? -1 : 0;
}

int
launch_proc_spawn(const launch_proc_spawn_t *s, pid_t *pid)
{
    extern char **environ;
    if (!s || !s->argv || !s->argv[0] || !pid)
        return TELEM_EINVAL;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    if (s_spawn_attr(&attr))
        return TELEM_EIO;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0) {
        rc = s->stdin_fd >= 0
                 ? posix_spawn_file_actions_adddup2(&fa, s->stdin_fd, 0)
                 : posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
                                                    O_RDONLY, 0);
        if (!rc && s->stdout_fd >= 0)
            rc = posix_spawn_file_actions_adddup2(&fa, s->stdout_fd, 1);
        if (!rc && s->stderr_fd >= 0)
            rc = posix_spawn_file_actions_adddup2(&fa, s->stderr_fd, 2);
        if (!rc)
            rc = posix_spawnp(pid, s->argv[0], &fa, &attr, s->argv,
                              s->envp ? s->envp : environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    posix_spawnattr_destroy(&attr);
    if (rc) {
        errno = rc;
        return TELEM_EIO;
    }
    return 0;
}

typedef struct {
    const launch_proc_spawn_t *s;
    pid_t *pids;
    int *rcs;
    int *errs;
    size_t n;
    atomic_size_t next;
} s_batch_t;

static void *
s_spawner(void *arg)
{
    s_batch_t *b = arg;
    for (size_t i; (i = atomic_fetch_add(&b->next, 1)) < b->n;) {
        b->rcs[i] = launch_proc_spawn(&b->s[i], &b->pids[i]);
        b->errs[i] = b->rcs[i] ? errno : 0;
    }
    return NULL;
}

size_t
launch_proc_spawn_many(const launch_proc_spawn_t *s, size_t n, pid_t *pids,
                       int *rcs, int *errs)
{
    s_batch_t b = { s, pids, rcs, errs, n, 0 };
    size_t want = n < 16 ? 0 : n / 8;
    if (want > LAUNCH_PROC_SPAWNERS - 1)
        want = LAUNCH_PROC_SPAWNERS - 1;
    pthread_t t[LAUNCH_PROC_SPAWNERS];
    size_t started = 0;
    /* A thread that cannot be made only means fewer of them. */
    while (started < want
           && pthread_create(&t[started], NULL, s_spawner, &b) == 0)
        started++;
    s_spawner(&b);               /* this thread takes its share too */
    for (size_t k = 0; k < started; k++)
        pthread_join(t[k], NULL);
    size_t failed = 0;
    for (size_t i = 0; i < n; i++)
        failed += rcs[i] != 0;
    return failed;
}

int
launch_proc_signal_group(pid_t pgid, int sig)
{
    if (pgid <= 1)
        return TELEM_EINVAL;
    if (kill(-pgid, sig) && errno != ESRCH)
        return TELEM_EIO;
    if (sig != SIGCONT && sig != SIGKILL)
        kill(-pgid, SIGCONT);
    return 0;
}

int
launch_proc_run_capture(char *const *argv, char *buf, size_t size)
{
    int fds[2];
    if (size == 0 || pipe2(fds, O_CLOEXEC))
        return TELEM_EIO;
    launch_proc_spawn_t s = { argv, NULL, -1, fds[1], -1 };
    pid_t pid;
    int rc = launch_proc_spawn(&s, &pid);
    close(fds[1]);
    size_t len = 0;
    int too_big = 0;
    while (rc == 0) {
        char tmp[4096];
        ssize_t r = read(fds[0], tmp, sizeof tmp);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        size_t take = (size_t) r < size - 1 - len ? (size_t) r : size - 1 - len;
        memcpy(buf + len, tmp, take);
        len += take;
        too_big |= take < (size_t) r;
    }
    buf[len] = '\0';
    close(fds[0]);
    if (rc)
        return rc;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return TELEM_EIO;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return TELEM_EIO;
    return too_big ? TELEM_ETOOBIG : 0;
}

void
launch_proc_status_describe(int status, char *buf, size_t size)
{
    if (WIFEXITED(status))
        snprintf(buf, size, "exited %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, size, "ended with status 0x%x", (unsigned) status);
}
