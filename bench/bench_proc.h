/* bench_proc.h - a real telemd program started by a benchmark, its start
 * timed to 'ready' (bench_drain, bench_reload). */
#ifndef BENCH_PROC_H
#define BENCH_PROC_H

#include <stdint.h>
#include <sys/types.h>

/* Starts the telemd beside this program (argv0's directory) with args
 * (NULL-terminated, without the program name), stdout on a pipe, stderr
 * to `errlog`; waits for its 'ready' line.  *ready_ns: time from fork to
 * 'ready'.  Returns the pid; exits through bench_die() on failure. */
pid_t bench_proc_telemd(const char *argv0, const char *const *args,
                        const char *errlog, int64_t *ready_ns);

/* Sends sig and waits for the exit; returns the time to exit (ns); sets
 * *status to the wait status. */
int64_t bench_proc_stop(pid_t pid, int sig, int *status);

/* Path of a program beside argv0 into buf. */
void bench_proc_path(char *buf, size_t size, const char *argv0,
                     const char *name);

#endif
