/* run_trace_int.h - the tracer's state, shared by its two files (private
 * to runtime/run).
 *
 *   run_trace.c        the public calls, the timer, the wait loop and the
 *                      handling of every stop
 *   run_trace_start.c  starting a program traced, attaching to a running
 *                      one, and detaching every thread
 * run_trace.c calls into run_trace_start.c, never the other way.
 */
#ifndef RUN_TRACE_INT_H
#define RUN_TRACE_INT_H

#include <time.h>

#include "run_tids.h"
#include "run_trace.h"

/* The options of every attach; EXITKILL is added for a started program. */
#define RUN_TRACE_OPTIONS                                                  \
    (PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK      \
     | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT)

struct run_trace {
    run_counts_t *counts;
    run_counts_cell_t *cells;
    const run_scall_t *scall;
    run_tids_t *tids;
    int64_t tick_ns;
    run_trace_tick_fn *tick;
    void *tick_arg;
    int verbose;
    timer_t timer;
    int timer_ok;
    pid_t pid;                  /* the started or attached process */
    int started;                /* 1: run_trace_spawn(), 0: attached */
    int ended;                  /* `status` holds pid's exit */
    int status;
    uint64_t unread;            /* stops PTRACE_GET_SYSCALL_INFO refused */
};

/* run_trace_start.c */

/* Attaches options to a stopped child and lets it go on to its execve;
 * used by run_trace_spawn(). */
pid_t run_trace_start_child(run_trace_t *t, const char *path,
                            char *const argv[]);

/* Seizes every thread of `pid`; see run_trace_attach(). */
int run_trace_start_attach(run_trace_t *t, pid_t pid, char *why,
                           size_t why_size);

/* Interrupts every traced thread and detaches each at its next stop,
 * re-injecting a signal it was about to receive.  Returns when none is
 * left attached. */
void run_trace_start_detach(run_trace_t *t);

#endif
