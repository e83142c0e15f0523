/* run_session.h - one run of telem_run: set up the push client, count the
 * launch, run (or attach to) the program with the counting asked for,
 * push the counts, and give back the program's exit status.
 *
 * telem_run.c reads the command line into a run_session_config_t and
 * hands it here.  What a session does:
 *   1. Points the push client at the node: TELEM_INGEST for telem_run and
 *      the program when an endpoint is given; for MPI counting, adds
 *      libtelem_mpi.so to LD_PRELOAD and passes the push rate and
 *      verbosity on (TELEM_RUN_RATE, TELEM_RUN_VERBOSE).
 *   2. Describes the metrics and waits for telemd's acknowledgement.
 *      With no telemd it says so once on stderr and counts nothing: the
 *      program runs untraced and without the MPI library (unless verbose,
 *      where the counts are still taken and printed at the end); an attach
 *      has then nothing to do and fails.  TELEM_LEVEL=0 (nothing is
 *      recorded) runs the program untraced too.
 *   3. Runs the program and counts the launch once it runs
 *      (telem_run_total{operation="exec"}, or operation="attach" for -S):
 *      traced (run_trace.h) for system-call counts or an attach, else
 *      started with posix_spawn and waited for.  SIGINT,
 *      SIGTERM, SIGHUP and SIGQUIT sent to telem_run by another process
 *      are passed on to the program it started (those a terminal sends
 *      reach the program directly, in its process group); for an attach
 *      they detach instead, leaving the process running.
 *   4. Pushes the counts as increments every 1/rate seconds and at the
 *      end, then flushes with telemd's acknowledgement.
 * Exit status: the program's (128 + N when signal N ended it, as a shell
 * reports it); 0 after a detach or when the attached process ended;
 * RUN_SESSION_EFAIL when telem_run itself failed (one line on stderr);
 * 126 / 127 when the command cannot be executed / is not found.
 *
 * Call once, from the main thread, before any other thread starts.
 */
#ifndef RUN_SESSION_H
#define RUN_SESSION_H

#include <sys/types.h>

#define RUN_SESSION_EFAIL 125

typedef struct {
    int mpi;                /* -m: preload the MPI library */
    int syscalls;           /* -s: count system calls */
    pid_t attach;           /* -S: attach to this process (0: none) */
    const char *endpoint;   /* -u: ingest endpoint or socket path, or NULL */
    int verbose;            /* -v */
    double rate_hz;         /* pushes per second, > 0 */
    char **argv;            /* the command, NULL-terminated (NULL for -S) */
} run_session_config_t;

/* Runs the session; returns the exit status described above. */
int run_session(const run_session_config_t *cfg);

#endif
