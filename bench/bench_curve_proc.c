/* bench_curve_proc.c - the real daemons bench_curve measures: telemd and
 * telem_dictd started from the build's bin/ (bench_curve.h).
 *
 * Each child is told to die with us (PR_SET_PDEATHSIG): however the
 * benchmark ends (a normal exit, bench_die, Ctrl-C, a kill), no daemon
 * is left behind.  The child's environment is built before the fork
 * (the parent already runs libzmq's threads, so no setenv after it):
 * a copy of ours with TELEM_KEYS set empty, so a plain daemon never
 * picks up a key from the environment.  A stop waits on a pidfd with a
 * deadline rather than in a sleep loop.
 */
#include "bench_curve.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_proc.h"

#define S_ARGS_MAX 32
#define S_ENV_MAX 512

extern char **environ;

/* Our environment without TELEM_KEYS, plus "TELEM_KEYS=" (empty: none). */
static void
s_env(char **envp)
{
    int n = 0;
    for (char **e = environ; *e && n < S_ENV_MAX - 2; e++)
        if (strncmp(*e, TELEM_KEYS_ENV "=", strlen(TELEM_KEYS_ENV) + 1) != 0)
            envp[n++] = *e;
    envp[n++] = TELEM_KEYS_ENV "=";
    envp[n] = NULL;
}

/* In the child: die with the parent, stdout on the pipe, stderr to the
 * log, then exec. */
static void
s_child(const char *prog, char *const *av, char *const *envp, int out_fd,
        const char *errlog, pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(1);
    dup2(out_fd, 1);
    int e = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (e >= 0)
        dup2(e, 2);
    execve(prog, av, envp);
    _exit(127);
}

/* Reads "kind<TAB>value" lines until 'ready', keeping the endpoints. */
static int
s_read_ready(bcurve_daemon_t *d)
{
    char line[512];
    while (fgets(line, sizeof line, d->out)) {
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, "ready") == 0)
            return 0;
        char *tab = strchr(line, '\t');
        if (!tab)
            continue;
        *tab++ = '\0';
        char *dst = strcmp(line, "ingest") == 0 ? d->ingest
                    : strcmp(line, "ctl") == 0 ? d->ctl
                    : strcmp(line, "query") == 0 ? d->query
                    : strcmp(line, "endpoint") == 0 ? d->endpoint : NULL;
        if (dst)
            snprintf(dst, BCURVE_EP_MAX, "%s", tab);
    }
    return -1;
}

static void
s_spawn(const bcurve_ctx_t *ctx, const char *name, const char **args,
        const char *errlog, bcurve_daemon_t *d)
{
    char prog[1024];
    bench_proc_path(prog, sizeof prog, ctx->argv0, name);
    char *av[S_ARGS_MAX + 2] = { prog };
    for (int i = 0; i < S_ARGS_MAX && args[i]; i++)
        av[i + 1] = (char *) args[i];
    char *envp[S_ENV_MAX];
    s_env(envp);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        bench_die(name, "pipe: %s", strerror(errno));
    memset(d, 0, sizeof *d);
    pid_t parent = getpid();
    d->pid = fork();
    if (d->pid < 0)
        bench_die(name, "fork: %s", strerror(errno));
    if (d->pid == 0)
        s_child(prog, av, envp, fds[1], errlog, parent);
    close(fds[1]);
    if (!(d->out = fdopen(fds[0], "r")) || s_read_ready(d) != 0) {
        bcurve_stop(d);
        bench_die(name, "%s exited before 'ready' (see %s)", prog, errlog);
    }
}

void
bcurve_telemd(const bcurve_ctx_t *ctx, const char *rundir, const char *node,
              int curve, bcurve_daemon_t *d)
{
    char errlog[512];
    snprintf(errlog, sizeof errlog, "%s/telemd-%s.log", rundir, node);
    const char *args[S_ARGS_MAX] = {
        "--node", node, "--rundir", rundir, "--level", "1",
        "--window", "7200", "--no-log", "--no-handover", "--bind",
        "127.0.0.1", "--log-level", "warn",
        curve ? "--keys" : NULL, curve ? ctx->keys_dir : NULL, NULL };
    s_spawn(ctx, "telemd", args, errlog, d);
    if (!*d->query || !*d->ingest || !*d->ctl)
        bench_die("telemd", "%s printed no query/ingest/ctl endpoint", node);
}

void
bcurve_dictd(const bcurve_ctx_t *ctx, const char *rundir,
             const char *nodefile, int curve, bcurve_daemon_t *d)
{
    char errlog[512];
    snprintf(errlog, sizeof errlog, "%s/dictd.log", rundir);
    const char *args[S_ARGS_MAX] = {
        "--node", "n1", "--rundir", rundir, "--nodefile", nodefile,
        "--nodes", "n1", "--replicas", "1", "--sync", "none",
        "--bind", "127.0.0.1", "--log-level", "warn",
        curve ? "--keys" : NULL, curve ? ctx->keys_dir : NULL, NULL };
    s_spawn(ctx, "telem_dictd", args, errlog, d);
    if (strncmp(d->endpoint, "tcp://", 6) != 0)
        bench_die("telem_dictd", "endpoint '%s' is not TCP", d->endpoint);
}

/* Waits up to timeout_ms for the child to exit; 1 if it did. */
static int
s_wait_exit(pid_t pid, int timeout_ms)
{
    int fd = (int) syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        return 0;
    struct pollfd p = { fd, POLLIN, 0 };
    int r = poll(&p, 1, timeout_ms);
    close(fd);
    return r > 0;
}

void
bcurve_stop(bcurve_daemon_t *d)
{
    if (d->pid > 0) {
        kill(d->pid, SIGTERM);
        if (!s_wait_exit(d->pid, 5000))
            kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        d->pid = 0;
    }
    if (d->out)
        fclose(d->out);
    d->out = NULL;
}
