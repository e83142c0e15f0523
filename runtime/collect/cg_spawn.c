/* cg_spawn.c - a collector group's processes: command lines, posix_spawn,
 * stop, wait and the count of running collectors.
 *
 * Calls go one way: cg.c (settings, planning, start) calls this file
 * through cg_internal.h and cg.h's process functions; this file calls
 * nothing in cg.c.
 *
 * Collectors are spawned with posix_spawn (fork+exec from a large parent
 * is ~30x slower, see the project's measured facts) with a clean signal
 * mask and default dispositions, so they stop on SIGTERM whatever the
 * parent blocks.  Each child gets a pidfd right after the spawn; stop and
 * wait poll() those, so waiting with a bound needs no sleep loop and no
 * SIGCHLD handler, and only this group's own children are ever reaped.
 */
#include "cg_internal.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "telem_grow.h"
#include "telem_paths.h"
#include "telem_time.h"

extern char **environ;

#define S_KILL_WAIT_MS 2000

typedef struct {
    char **v;
    size_t n, cap;
    int oom;
} s_argv_t;

static void
s_add(s_argv_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
s_add(s_argv_t *a, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    if (telem_grow((void **) &a->v, &a->cap, a->n + 2, sizeof *a->v, 32)) {
        free(s);
        a->oom = 1;
        return;
    }
    if (!s)
        a->oom = 1;
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
}

static void
s_argv_free(s_argv_t *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    memset(a, 0, sizeof *a);
}

/* The program collectors run; *search = 1 to look it up on PATH. */
static int
s_program(const cg_t *g, char *buf, size_t size, int *search)
{
    const char *given = g->user_test ? g->user_program : g->collector;
    *search = 0;
    if (given)
        return snprintf(buf, size, "%s", given) < (int) size ? 0 : -1;
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    if (g->user_test)
        return 0;
    char *slash = strrchr(buf, '/');
    if (slash && (size_t) (slash - buf) + 17 < size) {
        strcpy(slash + 1, "telem_collector");
        if (access(buf, X_OK) == 0)
            return 0;
    }
    *search = 1;
    return snprintf(buf, size, "telem_collector") < (int) size ? 0 : -1;
}

/* The collector's own command line. */
static void
s_collector_args(const cg_t *g, const cg__coll_t *c, const char *prog,
                 s_argv_t *a)
{
    /* Absolute: a remote shell starts in another directory. */
    const char *env = getenv("TELEM_RUNDIR");
    char rundir[TELEM_PATH_MAX] = "";
    if (env && *env && telem_rundir_resolve(rundir, sizeof rundir, env))
        snprintf(rundir, sizeof rundir, "%s", env);
    s_add(a, "%s", prog);
    for (size_t i = 0; i < g->ncargs; i++)
        s_add(a, "%s", g->cargs[i]);
    if (g->user_test)
        s_add(a, "%s", TELEM_COLLECTOR_FLAG);
    s_add(a, "--node"), s_add(a, "%s", c->node);
    s_add(a, "--backend"), s_add(a, "%s", g->backend);
    if (!g->user_test && g->kernel)
        s_add(a, "--kernel"), s_add(a, "%s", g->kernel);
    if (c->device >= 0)
        s_add(a, "--device"), s_add(a, "%d", c->device);
    else
        s_add(a, "--per-node");
    if (c->pin >= 0)
        s_add(a, "--pin"), s_add(a, "%d", c->pin);
    s_add(a, "--period"), s_add(a, "%.9f", g->period_ns / 1e9);
    s_add(a, "--reps"), s_add(a, "%d", g->reps);
    if (g->spread)
        s_add(a, "--spread");
    s_add(a, "--epoch"), s_add(a, "%lld", (long long) g->epoch_ns);
    s_add(a, "--phase"), s_add(a, "%lld", (long long) c->phase_ns);
    s_add(a, "--group"), s_add(a, "%s", g->name);
    if (*rundir)
        s_add(a, "--rundir"), s_add(a, "%s", rundir);
}

/* Writes `s` quoted for a POSIX shell: '...' with '\''. */
static void
s_quote(const char *s, FILE *f)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    }
    fputc('\'', f);
}

/* "exec 'prog' 'arg' ...": one word for a shell, which then becomes the
 * collector (exec), so signals sent to the spawned process reach it. */
static void
s_add_shell(s_argv_t *a, const s_argv_t *cmd)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        a->oom = 1;
        return;
    }
    fputs("exec", f);
    for (size_t i = 0; i < cmd->n; i++) {
        fputc(' ', f);
        s_quote(cmd->v[i], f);
    }
    fclose(f);
    s_add(a, "%s", buf ? buf : "");
    free(buf);
}

/* One template word with every {node} replaced. */
static void
s_add_word(s_argv_t *a, const char *w, size_t n, const char *node)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        a->oom = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (n - i >= 6 && strncmp(w + i, "{node}", 6) == 0) {
            fputs(node, f);
            i += 5;
        } else {
            fputc(w[i], f);
        }
    }
    fclose(f);
    s_add(a, "%s", buf ? buf : "");
    free(buf);
}

/* Template words, then the collector command (unless {cmd} placed it). */
static void
s_template_args(const cg_t *g, const cg__coll_t *c, const s_argv_t *cmd,
                s_argv_t *a)
{
    int placed = 0;
    const char *p = g->spawn;
    while (*p) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t");
        if (n == 5 && strncmp(p, "{cmd}", 5) == 0) {
            s_add_shell(a, cmd);
            placed = 1;
        } else if (n) {
            s_add_word(a, p, n, c->node);
        }
        p += n;
    }
    for (size_t i = 0; !placed && i < cmd->n; i++)
        s_add(a, "%s", cmd->v[i]);
}

static int
s_spawn_argv(pid_t *pid, char **argv, int search)
{
    posix_spawnattr_t attr;
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGTERM);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGHUP);
    sigaddset(&dfl, SIGCHLD);
    sigaddset(&dfl, SIGPIPE);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &dfl);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK
                                    | POSIX_SPAWN_SETSIGDEF);
    int rc = search ? posix_spawnp(pid, argv[0], NULL, &attr, argv, environ)
                    : posix_spawn(pid, argv[0], NULL, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    return rc;
}

int
cg__spawn(cg_t *g, size_t i, char *why, size_t why_size)
{
    cg__coll_t *c = &g->colls[i];
    char prog[PATH_MAX];
    s_argv_t cmd = { 0 }, full = { 0 };
    int search, rc = TELEM_EIO;
    if (s_program(g, prog, sizeof prog, &search)) {
        snprintf(why, why_size, "cannot name the collector program");
        goto out;
    }
    s_collector_args(g, c, prog, &cmd);
    if (g->spawn) {
        s_template_args(g, c, &cmd, &full);
        search = 1;
    }
    s_argv_t *use = g->spawn ? &full : &cmd;
    if (cmd.oom || full.oom || use->n == 0) {
        rc = TELEM_ENOMEM;
        goto out;
    }
    int e = s_spawn_argv(&c->pid, use->v, search);
    if (e) {
        snprintf(why, why_size, "cannot start %s: %s", use->v[0],
                 strerror(e));
        goto out;
    }
    c->state = CG_RUNNING;
    c->pidfd = (int) syscall(SYS_pidfd_open, c->pid, 0);
    if (c->pidfd < 0) {
        snprintf(why, why_size, "pidfd_open: %s (Linux 5.3 or later is "
                 "needed)", strerror(errno));
        kill(c->pid, SIGKILL);
        goto out;
    }
    rc = 0;
out:
    s_argv_free(&cmd);
    s_argv_free(&full);
    return rc;
}

/* Reaps collector c if it has exited; returns 1 if it did. */
static int
s_reap(cg__coll_t *c)
{
    int status;
    if (c->state != CG_RUNNING)
        return 0;
    pid_t r = waitpid(c->pid, &status, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR))
        return 0;
    if (r == c->pid && WIFEXITED(status))
        c->exit_code = WEXITSTATUS(status);
    else if (r == c->pid && WIFSIGNALED(status))
        c->signal = WTERMSIG(status);
    c->state = CG_EXITED;
    if (c->pidfd >= 0)
        close(c->pidfd);
    c->pidfd = -1;
    return 1;
}

/* Polls the running collectors (and wake_fd) once, up to timeout_ms;
 * reaps what exited.  Returns the number reaped or TELEM_EIO. */
static int
s_poll_once(cg_t *g, int timeout_ms, int wake_fd)
{
    struct pollfd *p = calloc(g->ncolls + 1, sizeof *p);
    size_t n = 0;
    int reaped = 0;
    if (!p)
        return TELEM_ENOMEM;
    for (size_t i = 0; i < g->ncolls; i++)
        if (g->colls[i].state == CG_RUNNING && g->colls[i].pidfd >= 0)
            p[n++] = (struct pollfd) { .fd = g->colls[i].pidfd,
                                       .events = POLLIN };
    if (wake_fd >= 0)
        p[n++] = (struct pollfd) { .fd = wake_fd, .events = POLLIN };
    int r = poll(p, n, timeout_ms);
    free(p);
    if (r < 0 && errno != EINTR)
        return TELEM_EIO;
    for (size_t i = 0; i < g->ncolls; i++)
        reaped += s_reap(&g->colls[i]);
    return reaped;
}

/* Waits until every collector has exited or the deadline (monotonic ns). */
static void
s_wait_all(cg_t *g, int64_t deadline)
{
    while (cg_running(g) > 0) {
        int64_t left = (deadline - telem_mono_ns()) / TELEM_NS_PER_MS;
        if (left <= 0 || s_poll_once(g, (int) left, -1) < 0)
            return;
    }
}

/* Counted here, not in cg.c, so that this file never calls up into it. */
size_t
cg_running(const cg_t *g)
{
    size_t n = 0;
    for (size_t i = 0; g->started && i < g->ncolls; i++)
        n += g->colls[i].state == CG_RUNNING;
    return n;
}

int
cg_stop(cg_t *g, int timeout_ms)
{
    if (!g->started)
        return TELEM_ESTATE;
    if (timeout_ms <= 0)
        timeout_ms = CG_STOP_DEFAULT_MS;
    for (size_t i = 0; i < g->ncolls; i++)
        if (g->colls[i].state == CG_RUNNING)
            kill(g->colls[i].pid, SIGTERM);
    s_wait_all(g, telem_mono_ns() + timeout_ms * TELEM_NS_PER_MS);
    if (cg_running(g) == 0)
        return 0;
    for (size_t i = 0; i < g->ncolls; i++)
        if (g->colls[i].state == CG_RUNNING)
            kill(g->colls[i].pid, SIGKILL);
    s_wait_all(g, telem_mono_ns() + S_KILL_WAIT_MS * TELEM_NS_PER_MS);
    return TELEM_ETIMEDOUT;
}

int
cg_wait(cg_t *g, int timeout_ms, int wake_fd)
{
    if (cg_running(g) == 0)
        return TELEM_ESTATE;
    return s_poll_once(g, timeout_ms < 0 ? -1 : timeout_ms, wake_fd);
}
