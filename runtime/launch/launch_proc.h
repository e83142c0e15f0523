/* launch_proc.h - how the launcher makes processes: environments, argument
 * vectors, posix_spawn into a process group of their own, and signals to
 * whole groups.
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

/* ---- environments ------------------------------------------------------ */

typedef struct tl_env tl_env_t;

/* Copies `base` (a NULL-terminated "KEY=VALUE" array such as environ;
 * NULL: empty).  NULL when out of memory. */
tl_env_t *tl_env_new(char *const *base);

/* Frees; accepts NULL or a pointer to NULL; nulls the pointer. */
void tl_env_destroy(tl_env_t **self_p);

/* Sets KEY to VALUE, replacing an older value.  Returns 0, TELEM_EINVAL
 * (empty key or a key with '=') or TELEM_ENOMEM. */
int tl_env_set(tl_env_t *self, const char *key, const char *value);

/* Like tl_env_set() with a printf-formatted value. */
int tl_env_setf(tl_env_t *self, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Removes KEY if present. */
void tl_env_unset(tl_env_t *self, const char *key);

/* Value of KEY, or NULL; owned by the environment. */
const char *tl_env_get(const tl_env_t *self, const char *key);

/* The NULL-terminated "KEY=VALUE" array, owned by the environment and
 * valid until it is next changed or destroyed. */
char *const *tl_env_array(const tl_env_t *self);

/* ---- argument vectors -------------------------------------------------- */

/* A NULL-terminated array of strings that owns its strings. */
typedef struct {
    char **v;
    size_t n;
    size_t cap;
} tl_argv_t;

/* Appends a copy of `s`.  Returns 0 or TELEM_ENOMEM. */
int tl_argv_add(tl_argv_t *a, const char *s);

/* Appends copies of every string of the NULL-terminated `v`. */
int tl_argv_addv(tl_argv_t *a, const char *const *v);

/* Frees the strings and the array and zeroes *a (safe on a zeroed one). */
void tl_argv_clear(tl_argv_t *a);

/* Splits `line` into words as a POSIX shell would (quotes, backslashes;
 * no command substitution, no variable expansion of undefined names is an
 * error) and appends them, replacing every "{node}" in a word by `node`
 * (may be NULL: no replacement).  Returns 0, TELEM_EINVAL (a syntax error,
 * command substitution, or no word) or TELEM_ENOMEM. */
int tl_argv_split(tl_argv_t *a, const char *line, const char *node);

/* ---- processes --------------------------------------------------------- */

typedef struct {
    char *const *argv;      /* argv[0] is looked up in PATH if it has no '/' */
    char *const *envp;      /* NULL: the launcher's environment */
    int stdin_fd;           /* -1: /dev/null */
    int stdout_fd;          /* -1: inherit */
    int stderr_fd;          /* -1: inherit */
} tl_spawn_t;

/* Starts a process in a new process group (its pid is the group id) with
 * an empty signal mask and default signal dispositions.  Returns 0 and the
 * pid in *pid, or TELEM_EINVAL (no argv) or TELEM_EIO with errno set (the
 * program could not be started, e.g. ENOENT). */
int tl_spawn(const tl_spawn_t *s, pid_t *pid);

/* Sends `sig` to the whole process group `pgid`, and SIGCONT after it so
 * that a stopped group acts on it.  ESRCH (gone already) is not an error.
 * Returns 0 or TELEM_EIO. */
int tl_signal_group(pid_t pgid, int sig);

/* Runs argv to completion with stdout captured into buf (NUL-terminated,
 * cut at size - 1) and stderr to the launcher's.  For short helper
 * commands before the job starts (scontrol).  Returns 0 if it exited 0,
 * TELEM_EIO if it could not run or failed (errno kept when it could not
 * start), TELEM_ETOOBIG if the output did not fit. */
int tl_run_capture(char *const *argv, char *buf, size_t size);

/* Writes a description of a wait status: "exited 3", "signal 9 (Killed)". */
void tl_status_describe(int status, char *buf, size_t size);

#endif
