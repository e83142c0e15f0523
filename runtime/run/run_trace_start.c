/* run_trace_start.c - how the tracer gets hold of a program and lets go of
 * it: starting one traced, attaching to a running one, detaching.
 *
 * Starting.  The child unblocks every signal, stops itself with SIGSTOP
 * and only then calls execve.  The parent waits for that stop, seizes the
 * child (with EXITKILL) and sends SIGCONT; the seized child re-traps at
 * once and the wait loop resumes it with PTRACE_SYSCALL, so the execve is
 * the first call counted and nothing of the fork's own set-up is.  The
 * SIGCONT reaches the child as an ordinary signal, before its execve, and
 * is re-injected: its default action has no effect on a running process.
 *
 * Attaching.  Every thread listed in /proc/PID/task is seized and
 * interrupted (a seized thread runs on until something stops it, and only
 * a stopped thread can be resumed into system-call tracing); the listing
 * is read again until a pass finds no new thread, since a thread not yet
 * seized may start others meanwhile.  A thread already ours (a clone
 * event of a seized thread attached it) answers EPERM and is kept.
 *
 * Detaching.  PTRACE_DETACH needs a thread in a ptrace stop, and the loop
 * resumes every thread as soon as it stops, so each one is interrupted
 * and let go at its next stop, whatever that stop is: a signal it was
 * about to receive goes with it (PTRACE_DETACH's data), a system-call,
 * event or group stop goes with none.  A thread in a group stop stays
 * stopped after the detach, as it would be untraced.  Children a clone,
 * fork or vfork event announces during the detach are let go at their
 * first stop; their entries stay, flagged, until the end, so a child whose
 * first stop comes before its parent's event is not waited for twice.
 */
#include "run_trace_int.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "telem_error.h"
#include "telem_why.h"

extern char **environ;

/* In the child, between fork and execve: async-signal-safe calls only. */
static void
s_child(const char *path, char *const argv[], const char *msg, size_t len)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    kill(getpid(), SIGSTOP);
    execve(path, argv, environ);
    int e = errno;
    const char *why = strerrordesc_np(e);
    if (write(STDERR_FILENO, msg, len) >= 0 && why
        && write(STDERR_FILENO, why, strlen(why)) >= 0)
        (void) !write(STDERR_FILENO, "\n", 1);
    _exit(e == ENOENT ? 127 : 126);
}

static void
s_reap(pid_t pid)
{
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
        ;
}

pid_t
run_trace_start_child(run_trace_t *t, const char *path, char *const argv[])
{
    char msg[512];
    int len = snprintf(msg, sizeof msg, "telem_run: cannot execute '%s': ",
                       path);
    if (len < 0 || (size_t) len >= sizeof msg)
        len = snprintf(msg, sizeof msg, "telem_run: cannot execute: ");
    pid_t pid = fork();
    if (pid < 0)
        return TELEM_EIO;
    if (pid == 0)
        s_child(path, argv, msg, (size_t) len);
    int st = 0;
    pid_t w;
    while ((w = waitpid(pid, &st, WSTOPPED)) < 0 && errno == EINTR)
        ;
    if (w != pid || !WIFSTOPPED(st)) {
        if (w == pid)
            errno = ECHILD;
        s_reap(pid);
        return TELEM_EIO;
    }
    if (ptrace(PTRACE_SEIZE, pid, NULL,
               (void *) (long) (RUN_TRACE_OPTIONS | PTRACE_O_EXITKILL)) < 0
        || !run_tids_put(t->tids, pid)) {
        int e = errno ? errno : ENOMEM;
        s_reap(pid);
        errno = e;
        return TELEM_EIO;
    }
    kill(pid, SIGCONT);
    return pid;
}

/* Seizes and interrupts one thread.  Returns 1 when attached now, 0 when
 * gone or already ours, or a negative code (errno kept). */
static int
s_seize(run_trace_t *t, pid_t tid, int first)
{
    if (run_tids_get(t->tids, tid))
        return 0;
    if (ptrace(PTRACE_SEIZE, tid, NULL, (void *) (long) RUN_TRACE_OPTIONS)
        < 0) {
        if (errno == ESRCH)
            return 0;
        if (errno != EPERM || first)
            return TELEM_EIO;
        /* A thread a seized thread started: attached by its clone event. */
        return run_tids_put(t->tids, tid) ? 0 : TELEM_ENOMEM;
    }
    if (!run_tids_put(t->tids, tid))
        return TELEM_ENOMEM;
    if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 && errno != ESRCH)
        return TELEM_EIO;
    return 1;
}

/* One pass over /proc/PID/task.  Returns the threads attached, or a
 * negative code. */
static int
s_attach_pass(run_trace_t *t, pid_t pid, int *first)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int) pid);
    DIR *d = opendir(dir);
    if (!d)
        return TELEM_ENOTFOUND;
    int added = 0, rc = 0;
    struct dirent *de;
    while (rc >= 0 && (de = readdir(d)) != NULL) {
        char *end;
        long tid = strtol(de->d_name, &end, 10);
        if (*end || tid <= 0)
            continue;
        rc = s_seize(t, (pid_t) tid, *first);
        added += rc > 0;
        if (rc > 0)
            *first = 0;
    }
    int e = errno;
    closedir(d);
    errno = e;
    return rc < 0 ? rc : added;
}

int
run_trace_start_attach(run_trace_t *t, pid_t pid, char *why, size_t why_size)
{
    if (kill(pid, 0) < 0 && errno == ESRCH) {
        telem_why(why, why_size, "no process %d", (int) pid);
        return TELEM_ENOTFOUND;
    }
    int first = 1, rc;
    while ((rc = s_attach_pass(t, pid, &first)) > 0)
        ;
    if (rc == 0 && first)
        rc = TELEM_ENOTFOUND;             /* it ended while we looked */
    if (rc == TELEM_ENOTFOUND)
        telem_why(why, why_size, "process %d has ended", (int) pid);
    else if (rc < 0)
        telem_why(why, why_size, "cannot trace process %d: %s%s", (int) pid,
                  strerror(errno),
                  errno == EPERM ? " (traced already, another user's, or"
                                   " not allowed by kernel.yama.ptrace_scope)"
                                 : "");
    if (rc < 0)
        return rc;
    t->pid = pid;
    t->started = 0;
    return 0;
}

/* Threads attached and not yet let go. */
static size_t
s_attached(run_trace_t *t)
{
    size_t n = 0;
    for (size_t i = 0; i < run_tids_capacity(t->tids); i++) {
        run_tid_t *e = run_tids_at(t->tids, i);
        n += e->tid && !(e->flags & RUN_TID_DETACHED);
    }
    return n;
}

static void
s_detach_stop(run_trace_t *t, pid_t tid, int st)
{
    int event = (unsigned) st >> 16, sig = WSTOPSIG(st);
    unsigned long msg = 0;
    if ((event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK
         || event == PTRACE_EVENT_CLONE)
        && ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) == 0 && msg)
        run_tids_put(t->tids, (pid_t) msg);
    if (event == PTRACE_EVENT_EXEC
        && ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) == 0
        && (pid_t) msg != tid)
        run_tids_del(t->tids, (pid_t) msg);
    int inject = event || sig == (SIGTRAP | 0x80) ? 0 : sig;
    ptrace(PTRACE_DETACH, tid, NULL, (void *) (long) inject);
    run_tid_t *e = run_tids_put(t->tids, tid);
    if (e)
        e->flags |= RUN_TID_DETACHED;
}

void
run_trace_start_detach(run_trace_t *t)
{
    for (size_t i = 0; i < run_tids_capacity(t->tids); i++) {
        run_tid_t *e = run_tids_at(t->tids, i);
        if (e->tid && !(e->flags & RUN_TID_DETACHED))
            ptrace(PTRACE_INTERRUPT, e->tid, NULL, NULL);
    }
    while (s_attached(t) > 0) {
        int st;
        pid_t tid = waitpid(-1, &st, __WALL);
        if (tid < 0 && errno == EINTR)
            continue;
        if (tid < 0)
            break;
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            if (tid == t->pid) {
                t->status = st;
                t->ended = 1;
            }
            run_tids_del(t->tids, tid);
        } else if (WIFSTOPPED(st)) {
            s_detach_stop(t, tid, st);
        }
    }
    run_tids_clear(t->tids);
    if (t->verbose)
        fprintf(stderr, "telem_run: detached from process %d\n", (int) t->pid);
}
