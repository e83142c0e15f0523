/* run_trace.h - telem_run's system-call tracer: counts every system call of
 * a program, all its threads and all its children, by name, and the bytes
 * of its I/O calls, into a counter table (run_counts.h).
 *
 * Built on ptrace (Linux >= 5.3).  Every thread is attached with
 * PTRACE_SEIZE and the options TRACESYSGOOD, TRACEFORK, TRACEVFORK,
 * TRACECLONE, TRACEEXEC and TRACEEXIT (plus EXITKILL for a program the
 * tracer started, so it dies with the tracer); one waitpid(-1, __WALL)
 * loop takes every stop, reads it with PTRACE_GET_SYSCALL_INFO (which
 * names the architecture, so 32-bit programs on a 64-bit kernel and
 * aarch64 are counted too) and resumes it with PTRACE_SYSCALL.  A call is
 * counted at its entry; an I/O call's bytes (its return value, when >= 0)
 * at its exit.  A call the kernel restarts after a signal enters twice and
 * counts twice, as strace counts it.
 *
 * The traced program's behaviour does not change: every signal it is sent
 * is delivered (signal-delivery stops re-inject it), a stop signal stops
 * it (group-stops are left with PTRACE_LISTEN until SIGCONT), and an
 * execve from a thread other than the leader is followed (the thread takes
 * the leader's id).  Detaching interrupts every thread, wherever it is,
 * and lets it go with its pending signal, leaving the program running (or
 * stopped, if it was) and unchanged.
 *
 * Time goes on while the program runs: every `tick_ns` the loop calls the
 * owner's tick callback from the tracer's own thread (a POSIX timer
 * signals that thread, so a program that makes no system call for a long
 * time delays nothing), which pushes counts, reads its signals and may
 * ask to detach.
 *
 * Thread safety: a tracer belongs to the thread that calls run_trace_new()
 * (ptrace binds a tracee to the thread that attached it); every function
 * is to be called from that thread.  Its counter table may be flushed by
 * the tick callback.  The caller blocks RUN_TRACE_TICK_SIG in every other
 * thread before starting them (telem_run blocks it in main before any).
 */
#ifndef RUN_TRACE_H
#define RUN_TRACE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "run_counts.h"
#include "run_scall.h"

/* The signal of the tick timer (a real-time signal telem_run keeps for
 * itself; the traced program never sees it). */
#define RUN_TRACE_TICK_SIG (SIGRTMIN + 1)

/* What the tick callback asks of the loop. */
enum {
    RUN_TRACE_GO_ON = 0,
    RUN_TRACE_DETACH = 1,       /* let every thread go and return */
};

/* Called at least every tick_ns while the loop runs. */
typedef int (run_trace_tick_fn)(void *arg);

typedef struct {
    run_counts_t *counts;       /* RUN_SCALL_SLOTS slots, not owned */
    const run_scall_t *scall;   /* not owned */
    int64_t tick_ns;            /* > 0 */
    run_trace_tick_fn *tick;    /* NULL: none */
    void *tick_arg;
    int verbose;                /* report attaches and detaches on stderr */
} run_trace_config_t;

typedef struct run_trace run_trace_t;

/* A tracer with nothing attached yet.  The config's pointers must outlive
 * it.  Returns NULL and *err: TELEM_EINVAL (a table of the wrong size, no
 * scall, tick_ns <= 0), TELEM_ENOMEM or TELEM_EIO (timer). */
run_trace_t *run_trace_new(const run_trace_config_t *cfg, int *err);

/* Stops the timer and frees the tracer; accepts NULL, nulls the pointer.
 * Threads still attached are detached first. */
void run_trace_destroy(run_trace_t **trace_p);

/* Starts `path` with `argv` and the process's environment, traced from its
 * first instruction (the execve is its first counted call), with every
 * signal unblocked and at its default action.  `path` is what execve(2)
 * gets: resolve PATH first (run_trace_which()).  Returns the child's pid,
 * or TELEM_EIO (errno set) when it could not be started or attached.  A
 * failed execve ends the child with status 126 (127 for ENOENT) after one
 * line on stderr. */
pid_t run_trace_spawn(run_trace_t *trace, const char *path,
                      char *const argv[]);

/* Attaches to every thread of the running process `pid` (repeating until
 * no new thread appears).  Returns 0, or TELEM_ENOTFOUND (no such
 * process), TELEM_EIO (permission: errno EPERM; see ptrace(2) and
 * /proc/sys/kernel/yama/ptrace_scope), TELEM_ESTATE (already attached),
 * with a sentence in `why`. */
int run_trace_attach(run_trace_t *trace, pid_t pid, char *why,
                     size_t why_size);

/* Runs until no traced thread is left (the started program and all its
 * descendants have ended) or the tick callback asks to detach.  Returns 0,
 * or TELEM_EIO when waitpid failed for another reason than having no
 * tracee. */
int run_trace_loop(run_trace_t *trace);

/* The wait status of the started or attached process's exit, as
 * waitpid(2) gives it.  Returns 0, or TELEM_ESTATE when it has not ended
 * (it was detached, or never started). */
int run_trace_status(const run_trace_t *trace, int *status);

/* System-call stops that could not be read (PTRACE_GET_SYSCALL_INFO
 * failed: a kernel older than 5.3); their calls are not counted. */
uint64_t run_trace_unread(const run_trace_t *trace);

/* Sends `sig` to the started or attached process.  Returns 0 or TELEM_EIO. */
int run_trace_kill(const run_trace_t *trace, int sig);

/* Writes the file execve(2) should run for `cmd` into buf: `cmd` itself
 * when it holds a '/', else the first executable regular file named `cmd`
 * in $PATH (default "/usr/local/bin:/usr/bin:/bin").  Returns 0,
 * TELEM_ENOTFOUND or TELEM_ETOOBIG. */
int run_trace_which(const char *cmd, char *buf, size_t size);

#endif
