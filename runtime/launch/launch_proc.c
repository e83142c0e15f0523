/* launch_proc.c - environments, argument vectors and posix_spawn for the
 * launcher (see launch_proc.h).
 *
 * An environment is kept as the NULL-terminated array posix_spawn wants,
 * so handing it over costs nothing; setting a key is a linear search,
 * which is fine for the few dozen variables a job has.  Words of a command
 * template are split by wordexp(3) (the C library's shell word splitter,
 * command substitution off) rather than by a parser of our own.
 */
#include "launch_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wordexp.h>

#include "telem_error.h"

/* The marker "{node}" becomes before word splitting ('{' and '}' are
 * special to wordexp), and is replaced by the node name after it. */
#define S_NODE_MARK "__telem_node_name__"

struct tl_env {
    tl_argv_t kv;
};

/* ---- argument vectors -------------------------------------------------- */

int
tl_argv_add(tl_argv_t *a, const char *s)
{
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        char **v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return TELEM_ENOMEM;
        a->v = v;
        a->cap = cap;
    }
    if (!(a->v[a->n] = strdup(s)))
        return TELEM_ENOMEM;
    a->v[++a->n] = NULL;
    return 0;
}

int
tl_argv_addv(tl_argv_t *a, const char *const *v)
{
    for (size_t i = 0; v && v[i]; i++)
        if (tl_argv_add(a, v[i]))
            return TELEM_ENOMEM;
    return 0;
}

void
tl_argv_clear(tl_argv_t *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    memset(a, 0, sizeof *a);
}

/* Copies `s` with every `from` replaced by `to` into a new string. */
static char *
s_replace(const char *s, const char *from, const char *to)
{
    size_t lf = strlen(from), lt = strlen(to), n = 0;
    for (const char *p = strstr(s, from); p; p = strstr(p + lf, from))
        n++;
    char *out = malloc(strlen(s) + n * lt + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *p; (p = strstr(s, from)) != NULL; s = p + lf) {
        memcpy(o, s, (size_t) (p - s));
        o += p - s;
        memcpy(o, to, lt);
        o += lt;
    }
    strcpy(o, s);
    return out;
}

int
tl_argv_split(tl_argv_t *a, const char *line, const char *node)
{
    char *marked = s_replace(line, "{node}", S_NODE_MARK);
    if (!marked)
        return TELEM_ENOMEM;
    wordexp_t we;
    int rc = wordexp(marked, &we, WRDE_NOCMD | WRDE_UNDEF);
    free(marked);
    if (rc != 0) {
        if (rc != WRDE_NOSPACE)
            return TELEM_EINVAL;
        wordfree(&we);
        return TELEM_ENOMEM;
    }
    rc = we.we_wordc ? 0 : TELEM_EINVAL;
    for (size_t i = 0; rc == 0 && i < we.we_wordc; i++) {
        char *w = s_replace(we.we_wordv[i], S_NODE_MARK, node ? node : "{node}");
        rc = w ? tl_argv_add(a, w) : TELEM_ENOMEM;
        free(w);
    }
    wordfree(&we);
    return rc;
}

/* ---- environments ------------------------------------------------------ */

tl_env_t *
tl_env_new(char *const *base)
{
    tl_env_t *self = calloc(1, sizeof *self);
    if (self && tl_argv_addv(&self->kv, (const char *const *) base))
        tl_env_destroy(&self);
    return self;
}

void
tl_env_destroy(tl_env_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tl_argv_clear(&(*self_p)->kv);
    free(*self_p);
    *self_p = NULL;
}

static long
s_env_find(const tl_env_t *self, const char *key)
{
    size_t lk = strlen(key);
    for (size_t i = 0; i < self->kv.n; i++)
        if (strncmp(self->kv.v[i], key, lk) == 0 && self->kv.v[i][lk] == '=')
            return (long) i;
    return -1;
}

int
tl_env_set(tl_env_t *self, const char *key, const char *value)
{
    if (!key || !*key || strchr(key, '=') || !value)
        return TELEM_EINVAL;
    size_t len = strlen(key) + strlen(value) + 2;
    char *kv = malloc(len);
    if (!kv)
        return TELEM_ENOMEM;
    snprintf(kv, len, "%s=%s", key, value);
    long i = s_env_find(self, key);
    if (i >= 0) {
        free(self->kv.v[i]);
        self->kv.v[i] = kv;
        return 0;
    }
    int rc = tl_argv_add(&self->kv, kv);
    free(kv);
    return rc;
}

int
tl_env_setf(tl_env_t *self, const char *key, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t) n >= sizeof buf)
        return TELEM_ETOOBIG;
    return tl_env_set(self, key, buf);
}

void
tl_env_unset(tl_env_t *self, const char *key)
{
    long i = s_env_find(self, key);
    if (i < 0)
        return;
    free(self->kv.v[i]);
    memmove(&self->kv.v[i], &self->kv.v[i + 1],
            (self->kv.n - (size_t) i) * sizeof *self->kv.v);
    self->kv.n--;
}

const char *
tl_env_get(const tl_env_t *self, const char *key)
{
    long i = s_env_find(self, key);
    return i < 0 ? NULL : self->kv.v[i] + strlen(key) + 1;
}

char *const *
tl_env_array(const tl_env_t *self)
{
    static char *const empty[] = { NULL };
    return self->kv.v ? self->kv.v : empty;
}

/* ---- processes --------------------------------------------------------- */

static int
s_spawn_attr(posix_spawnattr_t *attr)
{
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if (posix_spawnattr_init(attr))
        return -1;
    int rc = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP
                                      | POSIX_SPAWN_SETSIGMASK
                                      | POSIX_SPAWN_SETSIGDEF)
          || posix_spawnattr_setpgroup(attr, 0)
          || posix_spawnattr_setsigmask(attr, &none)
          || posix_spawnattr_setsigdefault(attr, &all);
    if (rc)
        posix_spawnattr_destroy(attr);
    return rc ? -1 : 0;
}

int
tl_spawn(const tl_spawn_t *s, pid_t *pid)
{
    extern char **environ;
    if (!s || !s->argv || !s->argv[0] || !pid)
        return TELEM_EINVAL;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    if (s_spawn_attr(&attr))
        return TELEM_EIO;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0) {
        rc = s->stdin_fd >= 0
                 ? posix_spawn_file_actions_adddup2(&fa, s->stdin_fd, 0)
                 : posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
                                                    O_RDONLY, 0);
        if (!rc && s->stdout_fd >= 0)
            rc = posix_spawn_file_actions_adddup2(&fa, s->stdout_fd, 1);
        if (!rc && s->stderr_fd >= 0)
            rc = posix_spawn_file_actions_adddup2(&fa, s->stderr_fd, 2);
        if (!rc)
            rc = posix_spawnp(pid, s->argv[0], &fa, &attr, s->argv,
                              s->envp ? s->envp : environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    posix_spawnattr_destroy(&attr);
    if (rc) {
        errno = rc;
        return TELEM_EIO;
    }
    return 0;
}

int
tl_signal_group(pid_t pgid, int sig)
{
    if (pgid <= 1)
        return TELEM_EINVAL;
    if (kill(-pgid, sig) && errno != ESRCH)
        return TELEM_EIO;
    if (sig != SIGCONT && sig != SIGKILL)
        kill(-pgid, SIGCONT);
    return 0;
}

int
tl_run_capture(char *const *argv, char *buf, size_t size)
{
    int fds[2];
    if (size == 0 || pipe2(fds, O_CLOEXEC))
        return TELEM_EIO;
    tl_spawn_t s = { argv, NULL, -1, fds[1], -1 };
    pid_t pid;
    int rc = tl_spawn(&s, &pid);
    close(fds[1]);
    size_t len = 0;
    int too_big = 0;
    while (rc == 0) {
        char tmp[4096];
        ssize_t r = read(fds[0], tmp, sizeof tmp);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        size_t take = (size_t) r < size - 1 - len ? (size_t) r : size - 1 - len;
        memcpy(buf + len, tmp, take);
        len += take;
        too_big |= take < (size_t) r;
    }
    buf[len] = '\0';
    close(fds[0]);
    if (rc)
        return rc;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return TELEM_EIO;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return TELEM_EIO;
    return too_big ? TELEM_ETOOBIG : 0;
}

void
tl_status_describe(int status, char *buf, size_t size)
{
    if (WIFEXITED(status))
        snprintf(buf, size, "exited %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, size, "ended with status 0x%x", (unsigned) status);
}
