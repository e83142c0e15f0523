/* run_trace.c - the tracer's wait loop and the handling of every stop
 * (run_trace.h); starting, attaching and detaching are in
 * run_trace_start.c, which this file calls.
 *
 * The stops, told apart as ptrace(2) describes them for PTRACE_SEIZE:
 *   WSTOPSIG == SIGTRAP|0x80     system-call entry or exit: read with
 *                                PTRACE_GET_SYSCALL_INFO, counted, resumed
 *   status>>16 == an event       fork/vfork/clone (the new thread gets an
 *                                entry), exec (a non-leader's execve: the
 *                                thread takes the leader's id, its pending
 *                                call goes with it), exit: resumed;
 *                                PTRACE_EVENT_STOP with a stop signal is a
 *                                group stop: PTRACE_LISTEN, so the program
 *                                stays stopped until SIGCONT (unless a
 *                                SIGCONT is already pending); any other
 *                                PTRACE_EVENT_STOP (a new thread's first
 *                                stop, an interrupt) is resumed
 *   otherwise                    signal delivery: resumed with the signal
 * A thread whose stop comes before its creator's event is simply added
 * when first seen.  Resuming a thread that has just been killed fails
 * with ESRCH, which is ignored: its exit is reported next.
 *
 * The tick.  A POSIX timer sends RUN_TRACE_TICK_SIG to the tracer's thread
 * every tick_ns; its handler does nothing, but the signal makes a waiting
 * waitpid return EINTR.  The loop also reads the coarse monotonic clock
 * (vDSO, no system call) after every stop, so the callback runs on time
 * while stops arrive without a pause.  A tick that lands just before
 * waitpid only delays the callback by one tick.
 */
#include "run_trace_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "telem_error.h"

static void
s_tick_handler(int sig)
{
    (void) sig;
}

/* The tick timer, signalling this thread, and the signal unblocked here. */
static int
s_timer_start(run_trace_t *t)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_tick_handler;
    sigemptyset(&sa.sa_mask);
    if (sigaction(RUN_TRACE_TICK_SIG, &sa, NULL) < 0)
        return TELEM_EIO;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = RUN_TRACE_TICK_SIG;
#ifdef sigev_notify_thread_id
    ev.sigev_notify_thread_id = gettid();
#else
    ev._sigev_un._tid = gettid();    /* older C libraries leave it unnamed */
#endif
    if (timer_create(CLOCK_MONOTONIC, &ev, &t->timer) < 0)
        return TELEM_EIO;
    t->timer_ok = 1;
    struct itimerspec its = {
        .it_interval = { t->tick_ns / 1000000000, t->tick_ns % 1000000000 },
        .it_value = { t->tick_ns / 1000000000, t->tick_ns % 1000000000 },
    };
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, RUN_TRACE_TICK_SIG);
    if (timer_settime(t->timer, 0, &its, NULL) < 0
        || pthread_sigmask(SIG_UNBLOCK, &set, NULL) != 0)
        return TELEM_EIO;
    return 0;
}

run_trace_t *
run_trace_new(const run_trace_config_t *cfg, int *err)
{
    int rc = TELEM_EINVAL;
    run_trace_t *t = NULL;
    if (!cfg || !cfg->counts || !cfg->scall || cfg->tick_ns <= 0
        || run_counts_size(cfg->counts) != RUN_SCALL_SLOTS)
        goto out;
    rc = TELEM_ENOMEM;
    if (!(t = calloc(1, sizeof *t)) || !(t->tids = run_tids_new()))
        goto out;
    t->counts = cfg->counts;
    t->cells = run_counts_cells(cfg->counts);
    t->scall = cfg->scall;
    t->tick_ns = cfg->tick_ns;
    t->tick = cfg->tick;
    t->tick_arg = cfg->tick_arg;
    t->verbose = cfg->verbose;
    t->pid = -1;
    rc = s_timer_start(t);
out:
    if (rc)
        run_trace_destroy(&t);
    if (err)
        *err = rc;
    return t;
}

void
run_trace_destroy(run_trace_t **trace_p)
{
    if (!trace_p || !*trace_p)
        return;
    run_trace_t *t = *trace_p;
    if (t->tids && run_tids_count(t->tids))
        run_trace_start_detach(t);
    if (t->timer_ok)
        timer_delete(t->timer);
    run_tids_destroy(&t->tids);
    free(t);
    *trace_p = NULL;
}

pid_t
run_trace_spawn(run_trace_t *trace, const char *path, char *const argv[])
{
    if (trace->pid > 0)
        return TELEM_ESTATE;
    pid_t pid = run_trace_start_child(trace, path, argv);
    if (pid > 0) {
        trace->pid = pid;
        trace->started = 1;
    }
    return pid;
}

int
run_trace_attach(run_trace_t *trace, pid_t pid, char *why, size_t why_size)
{
    if (trace->pid > 0) {
        snprintf(why, why_size, "already attached to process %d",
                 (int) trace->pid);
        return TELEM_ESTATE;
    }
    int rc = run_trace_start_attach(trace, pid, why, why_size);
    if (!rc && trace->verbose)
        fprintf(stderr, "telem_run: attached to process %d (%zu threads)\n",
                (int) pid, run_tids_count(trace->tids));
    return rc;
}

static inline void
s_resume(pid_t tid, int sig)
{
    ptrace(PTRACE_SYSCALL, tid, NULL, (void *) (long) sig);
}

/* A system-call stop: count the call at entry, its bytes at exit. */
static void
s_syscall(run_trace_t *t, pid_t tid, run_tid_t *th)
{
    struct __ptrace_syscall_info info;
    if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *) sizeof info, &info)
        <= 0) {
        t->unread += errno != ESRCH;     /* ESRCH: killed meanwhile */
        return;
    }
    if (info.op == PTRACE_SYSCALL_INFO_ENTRY) {
        size_t slot = run_scall_slot(info.arch, info.entry.nr);
        run_counts_add(&t->cells[slot], 0);
        if (th)
            th->slot = run_scall_is_io(t->scall, slot) ? (uint32_t) slot
                                                        : RUN_TID_NO_CALL;
    } else if (info.op == PTRACE_SYSCALL_INFO_EXIT && th
               && th->slot != RUN_TID_NO_CALL) {
        if (!info.exit.is_error && info.exit.rval > 0)
            run_counts_add_bytes(&t->cells[th->slot],
                                 (uint64_t) info.exit.rval);
        th->slot = RUN_TID_NO_CALL;
    }
}

static int
s_is_stop_signal(int sig)
{
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN
           || sig == SIGTTOU;
}

/* 1 when SIGCONT waits in the thread's or its process's pending set.  A
 * group stop the thread enters with a SIGCONT already queued behind the
 * stop signal (sent while the tracer held the stop signal, as when a
 * terminal's Ctrl-Z stopped telem_run too and fg continued both) must not
 * last: untraced, that SIGCONT would have ended it. */
static int
s_sigcont_pending(pid_t tid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int) tid);
    FILE *f = fopen(path, "r");
    int pending = 0;
    while (f && !pending && fgets(line, sizeof line, f)) {
        if (strncmp(line, "SigPnd:", 7) && strncmp(line, "ShdPnd:", 7))
            continue;
        char *end;
        unsigned long long mask = strtoull(line + 7, &end, 16);
        pending = end != line + 7 && (mask >> (SIGCONT - 1)) & 1;
    }
    if (f)
        fclose(f);
    return pending;
}

/* An event stop (status >> 16 != 0). */
static void
s_event(run_trace_t *t, pid_t tid, int event, int sig)
{
    unsigned long msg = 0;
    switch (event) {
    case PTRACE_EVENT_FORK:
    case PTRACE_EVENT_VFORK:
    case PTRACE_EVENT_CLONE:
        if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) == 0 && msg)
            run_tids_put(t->tids, (pid_t) msg);
        break;
    case PTRACE_EVENT_EXEC:
        /* A non-leader's execve: it now runs as the leader, whose entry
           takes its pending call (the execve's exit comes next). */
        if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) == 0
            && (pid_t) msg != tid) {
            run_tid_t *old = run_tids_get(t->tids, (pid_t) msg);
            uint32_t slot = old ? old->slot : RUN_TID_NO_CALL;
            run_tids_del(t->tids, (pid_t) msg);
            run_tid_t *now = run_tids_put(t->tids, tid);
            if (now)
                now->slot = slot;
        }
        break;
    case PTRACE_EVENT_STOP:
        if (s_is_stop_signal(sig) && !s_sigcont_pending(tid)) {
            ptrace(PTRACE_LISTEN, tid, NULL, NULL);
            return;
        }
        break;
    default:
        break;
    }
    s_resume(tid, 0);
}

static void
s_stop(run_trace_t *t, pid_t tid, int st)
{
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
        if (tid == t->pid) {
            t->status = st;
            t->ended = 1;
        }
        run_tids_del(t->tids, tid);
        return;
    }
    if (!WIFSTOPPED(st))
        return;
    int sig = WSTOPSIG(st), event = (unsigned) st >> 16;
    run_tid_t *th = run_tids_put(t->tids, tid);
    if (sig == (SIGTRAP | 0x80)) {
        s_syscall(t, tid, th);
        s_resume(tid, 0);
    } else if (event) {
        s_event(t, tid, event, sig);
    } else {
        s_resume(tid, sig);
    }
}

static int64_t
s_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int
run_trace_loop(run_trace_t *t)
{
    int64_t next = s_coarse_ns() + t->tick_ns;
    for (;;) {
        int st;
        pid_t tid = waitpid(-1, &st, __WALL);
        if (tid > 0)
            s_stop(t, tid, st);
        else if (errno == ECHILD)
            return 0;
        else if (errno != EINTR)
            return TELEM_EIO;
        int64_t now = s_coarse_ns();
        if (now < next && tid > 0)
            continue;
        next = now + t->tick_ns;
        if (t->tick && t->tick(t->tick_arg) == RUN_TRACE_DETACH) {
            run_trace_start_detach(t);
            return 0;
        }
    }
}

int
run_trace_status(const run_trace_t *trace, int *status)
{
    if (!trace->ended)
        return TELEM_ESTATE;
    *status = trace->status;
    return 0;
}

uint64_t
run_trace_unread(const run_trace_t *trace)
{
    return trace->unread;
}

int
run_trace_kill(const run_trace_t *trace, int sig)
{
    if (trace->pid <= 0 || trace->ended)
        return TELEM_ESTATE;
    return kill(trace->pid, sig) < 0 ? TELEM_EIO : 0;
}

int
run_trace_which(const char *cmd, char *buf, size_t size)
{
    if (!cmd || !*cmd)
        return TELEM_ENOTFOUND;
    if (strchr(cmd, '/')) {
        int n = snprintf(buf, size, "%s", cmd);
        return n < 0 || (size_t) n >= size ? TELEM_ETOOBIG : 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;; p++) {
        const char *end = strchrnul(p, ':');
        int n = end == p ? snprintf(buf, size, "./%s", cmd)
                         : snprintf(buf, size, "%.*s/%s", (int) (end - p), p,
                                    cmd);
        struct stat sb;
        if (n > 0 && (size_t) n < size && stat(buf, &sb) == 0
            && S_ISREG(sb.st_mode) && access(buf, X_OK) == 0)
            return 0;
        if (!*end)
            return TELEM_ENOTFOUND;
        p = end;
    }
}
