/* launch_proc.h - how the launcher makes processes: posix_spawn into a
 * process group of their own, signals to whole groups, short helper
 * commands and wait statuses (environments: launch_env.h; argument
 * vectors: launch_argv.h).
 *
 * Every process the launcher starts leads its own process group, so that a
 * signal to the group reaches whatever the process forked (a shell script's
 * children, srun's helpers) and Ctrl-C on the terminal reaches the launcher
 * alone, which then stops each group itself.  Children start with an empty
 * signal mask and default dispositions whatever the launcher blocks.
 * posix_spawn is used rather than fork+exec: it stays fast when the
 * launcher is large (see FACTS.md).
 *
 * Thread safety: none of these objects is shared between threads.
 */
#ifndef LAUNCH_PROC_H
#define LAUNCH_PROC_H

#include <stddef.h>
#include <sys/types.h>

typedef struct {
    char *const *argv;      /* argv[0] is looked up in PATH if it has no '/' */
    char *const *envp;      /* NULL: the launcher's environment */
    int stdin_fd;           /* -1: /dev/null */
    int stdout_fd;          /* -1: inherit */
    int stderr_fd;          /* -1: inherit */
} launch_proc_spawn_t;

/* Starts a process in a new process group (its pid is the group id) with
 * an empty signal mask and default signal dispositions.  Returns 0 and the
 * pid in *pid, or TELEM_EINVAL (no argv) or TELEM_EIO with errno set (the
 * program could not be started, e.g. ENOENT). */
int launch_proc_spawn(const launch_proc_spawn_t *s, pid_t *pid);

/* Starts the n processes of s[0..n) as launch_proc_spawn() does, several
 * at once: posix_spawn returns only once its child has called exec, and
 * on a busy machine most of that is the child waiting for a core, so one
 * spawn after the other costs n such waits (about 1 ms each under load).
 * A few threads (at most LAUNCH_PROC_SPAWNERS, about one per 8 processes,
 * none for fewer than 16) take the next process from a shared counter and
 * overlap those waits.  rcs[i] is launch_proc_spawn()'s result for s[i],
 * pids[i] its pid, errs[i] its errno (0 on success).  Returns how many
 * failed.  Every descriptor the caller holds must be close-on-exec, as the
 * launcher's are: children of one thread may start while another thread's
 * spawn is under way. */
#define LAUNCH_PROC_SPAWNERS 16
size_t launch_proc_spawn_many(const launch_proc_spawn_t *s, size_t n,
                              pid_t *pids, int *rcs, int *errs);

/* Sends `sig` to the whole process group `pgid`, and SIGCONT after it so
 * that a stopped group acts on it.  ESRCH (gone already) is not an error.
 * Returns 0 or TELEM_EIO. */
int launch_proc_signal_group(pid_t pgid, int sig);

/* Runs argv to completion with stdout captured into buf (NUL-terminated,
 * cut at size - 1) and stderr to the launcher's.  For short helper
 * commands before the job starts (scontrol).  Returns 0 if it exited 0,
 * TELEM_EIO if it could not run or failed (errno kept when it could not
 * start), TELEM_ETOOBIG if the output did not fit. */
int launch_proc_run_capture(char *const *argv, char *buf, size_t size);

/* Writes a description of a wait status: "exited 3", "signal 9 (Killed)". */
void launch_proc_status_describe(int status, char *buf, size_t size);

#endif
