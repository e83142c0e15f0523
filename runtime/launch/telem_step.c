/* telem_step - the first program of each task of a multi-node Slurm step
 * that telem_launch starts (launch_job_step.c).
 *
 *   telem_step FILE
 *       Finds the line of this node ($SLURMD_NODENAME) in the step file
 *       FILE (launch_step.h), checks that Slurm gave this task the rank the
 *       launcher wrote there ($SLURM_PROCID), prints its start line
 *       ("telem_step<TAB>start<TAB>PID<TAB>JOBID.STEPID<TAB>NODE") and
 *       execs the line's command with the line's environment added.  The
 *       command keeps this process, so Slurm's signals, srun's report of
 *       the task's end and the pid of the start line are the command's.
 *   telem_step --signal SIG PID JOBID.STEPID
 *       Sends signal number SIG to process PID of this node if it is a
 *       task of step JOBID.STEPID (its environment says so), not a
 *       process that took the pid after the task ended.  How the launcher
 *       stops one task of a step and lets the others run: srun signals
 *       every task of its step or none.
 *
 * Why a program of its own: one srun starts the same command on every
 * node of a step, and the launcher's nodes need different words (their
 * address, their name, their rank).  It links nothing but the C library
 * and telem_common, so it costs a task almost nothing before the exec.
 *
 * Exit status: the command's (exec), or 2 when the task cannot be set up
 * (no line for the node, a rank Slurm did not give, a malformed file),
 * 127 when the command cannot be executed; --signal: 0 sent, 1 no such
 * task, 2 bad arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch_step.h"
#include "telem_error.h"

static int
s_fail(const char *what, const char *detail)
{
    fprintf(stderr, "telem_step: %s%s%s\n", what, detail ? ": " : "",
            detail ? detail : "");
    return 2;
}

/* Reads FILE whole, to its end (procfs files say they are empty), at most
 * LAUNCH_STEP_FILE_MAX bytes; NULL with errno set on error. */
static char *
s_read(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t got = 0, cap = 0;
    char *buf = NULL;
    while (fd >= 0) {
        if (got + 1 >= cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb = ncap <= LAUNCH_STEP_FILE_MAX + 1 ? realloc(buf, ncap)
                                                      : NULL;
            if (!nb) {
                errno = cap ? EFBIG : ENOMEM;
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + got, cap - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto fail;
        if (r == 0)
            break;
        got += (size_t) r;
    }
    if (fd < 0)
        return NULL;
    close(fd);
    buf[got] = '\0';
    *len = got;
    return buf;
fail:
    close(fd);
    free(buf);
    return NULL;
}

/* The task's start line, written before the exec (one write). */
static void
s_start_line(const char *node)
{
    const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
    char line[512];
    int n = snprintf(line, sizeof line, "%s%ld\t%s.%s\t%s\n",
                     LAUNCH_STEP_START, (long) getpid(), job ? job : "0",
                     step ? step : "0", node);
    if (n > 0 && (size_t) n < sizeof line) {
        ssize_t w = write(STDOUT_FILENO, line, (size_t) n);
        (void) w;
    }
}

static int
s_run(const char *path)
{
    const char *node = getenv("SLURMD_NODENAME");
    const char *procid = getenv("SLURM_PROCID");
    if (!node || !*node || !procid)
        return s_fail("not a task of a Slurm step", "SLURMD_NODENAME or "
                      "SLURM_PROCID is not set");
    size_t len = 0, rank = 0;
    char *buf = s_read(path, &len);
    if (!buf)
        return s_fail(path, strerror(errno));
    launch_argv_t env = { 0 }, argv = { 0 };
    int rc = launch_step_file_find(buf, len, node, &rank, &env, &argv);
    free(buf);
    char why[160];
    if (rc == 0 && (strtoul(procid, NULL, 10) != rank
                    || strspn(procid, "0123456789") != strlen(procid))) {
        snprintf(why, sizeof why, "node %s is rank %zu of the step file, "
                 "Slurm made it rank %s", node, rank, procid);
        rc = TELEM_EPROTO;
    } else if (rc) {
        snprintf(why, sizeof why, "no usable line for node %s in %s: %s",
                 node, path, telem_strerror(rc));
    }
    if (rc == 0) {
        for (size_t k = 0; k < env.n && rc == 0; k++)
            rc = putenv(env.v[k]) == 0 ? 0 : TELEM_ENOMEM;
        env.n = 0;              /* the strings now belong to environ */
        unsetenv("SLURM_HOSTFILE");     /* the launcher's, for srun only */
        if (rc == 0) {
            s_start_line(node);
            execvp(argv.v[0], argv.v);
            fprintf(stderr, "telem_step: cannot execute %s: %s\n", argv.v[0],
                    strerror(errno));
            return 127;
        }
        snprintf(why, sizeof why, "out of memory");
    }
    launch_argv_clear(&env);
    launch_argv_clear(&argv);
    return s_fail(why, NULL);
}

/* Whether /proc/PID/environ holds "KEY=VALUE". */
static int
s_environ_has(const char *env, size_t len, const char *kv)
{
    size_t kl = strlen(kv);
    for (size_t off = 0; off < len;) {
        const char *s = env + off;
        size_t sl = strnlen(s, len - off);
        if (sl == kl && memcmp(s, kv, kl) == 0)
            return 1;
        off += sl + 1;
    }
    return 0;
}

static int
s_signal(const char *sig_s, const char *pid_s, const char *step)
{
    char *e1, *e2, job[64], path[64], kv[96];
    long sig = strtol(sig_s, &e1, 10), pid = strtol(pid_s, &e2, 10);
    const char *dot = strchr(step, '.');
    if (*e1 || *e2 || sig < 1 || sig >= NSIG || pid <= 1 || !dot
        || (size_t) (dot - step) >= sizeof job || !dot[1])
        return s_fail("usage", "telem_step --signal SIG PID JOBID.STEPID");
    snprintf(job, sizeof job, "%.*s", (int) (dot - step), step);
    snprintf(path, sizeof path, "/proc/%ld/environ", pid);
    size_t len = 0;
    char *env = s_read(path, &len);
    int ours = 0;
    if (env) {
        snprintf(kv, sizeof kv, "SLURM_JOB_ID=%s", job);
        ours = s_environ_has(env, len, kv);
        snprintf(kv, sizeof kv, "SLURM_STEP_ID=%s", dot + 1);
        ours = ours && s_environ_has(env, len, kv);
        free(env);
    }
    if (!ours || kill((pid_t) pid, (int) sig) != 0)
        return 1;
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--signal") == 0)
        return s_signal(argv[2], argv[3], argv[4]);
    if (argc != 2 || argv[1][0] == '-')
        return s_fail("usage", "telem_step FILE | telem_step --signal SIG "
                      "PID JOBID.STEPID");
    return s_run(argv[1]);
}
