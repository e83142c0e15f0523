/* bench_fanin_relay.c - the relays of bench_fanin's relay mode, and the
 * processes it starts on the nodes for it.
 *
 * The benchmark runs its job with telem_launch --relays off and does by
 * hand what --relays K does, so that one job is measured direct and
 * through relays of several K: one telem_relay per group of K nodes,
 * started through the job's own command template inside the namespace
 * of the group's first node, bound to that node's address (the template turns `--bind 0.0.0.0`
 * into it), CURVE with the job's key; then, once every relay said
 * "ready", RUNDIR/relays written atomically (a 0600 temporary file renamed
 * over it), which ac_connect() reads.  The launcher's telem_agg looks for
 * a relays file beside RUNDIR/launch/telemd_nodes, so the relayed telem_agg
 * is a second instance started here on the first node after the relays
 * file exists ($TELEM_RELAYS names it).  Also: the TCP connections a
 * process holds, from /proc (its socket inodes against its namespace's
 * TCP table).
 */
#include "bench_fanin.h"

#include "bench_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define S_WORDS 64

struct fanin_relays {
    size_t n;                        /* relays */
    pid_t *pid;
    int *out;                        /* read ends of their stdout */
    char path[PATH_MAX];             /* RUNDIR/relays */
};

/* argv of `template` (words split on blanks, {node} replaced) followed by
 * `tail`; the words point into `buf`. */
static void
s_argv(const char *template_, const char *node, char *buf, size_t size,
       char **argv, const char *const *tail)
{
    size_t k = 0;
    if (snprintf(buf, size, "%s", template_) >= (int) size)
        bench_die("bench_fanin", "template too long");
    char *save = NULL;
    for (char *w = strtok_r(buf, " \t", &save); w && k < S_WORDS - 24;
         w = strtok_r(NULL, " \t", &save))
        argv[k++] = strcmp(w, "{node}") == 0 ? (char *) node : w;
    for (size_t i = 0; tail[i] && k < S_WORDS - 1; i++)
        argv[k++] = (char *) tail[i];
    argv[k] = NULL;
}

/* environ plus NAME=VALUE pairs (replacing those names); caller frees
 * the array and its first `nset` strings. */
static char **
s_env(const char *const *set, size_t nset)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + nset + 1, sizeof *env);
    if (!env)
        bench_die("bench_fanin", "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < nset; i++)
        env[k++] = strdup(set[i]);
    for (size_t i = 0; i < n; i++) {
        int keep = 1;
        for (size_t s = 0; s < nset; s++) {
            size_t len = (size_t) (strchr(set[s], '=') - set[s]) + 1;
            keep &= strncmp(environ[i], set[s], len) != 0;
        }
        if (keep)
            env[k++] = environ[i];
    }
    return env;
}

static pid_t
s_spawn(char **argv, char **env, int out_fd, const char *log)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (out_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    else
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT
                                     | O_TRUNC, 0600);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    if (rc)
        bench_die("bench_fanin", "cannot start %s: %s", argv[0],
                  strerror(rc));
    return pid;
}

/* Reads relay `i`'s stdout until "ready"; its TCP endpoint into ep. */
static void
s_wait_ready(fanin_relays_t *self, size_t i, int wait_s, char *ep,
             size_t size)
{
    char buf[4096];
    size_t len = 0;
    *ep = '\0';
    int64_t deadline = bench_now_ns() + (int64_t) wait_s * 1000000000;
    for (;;) {
        buf[len] = '\0';
        char *q = strstr(buf, "query\t");
        if (q && !*ep)
            snprintf(ep, size, "%.*s", (int) strcspn(q + 6, "\n"), q + 6);
        if (strstr(buf, "\nready\n") && *ep)
            return;
        struct pollfd p = { self->out[i], POLLIN, 0 };
        int64_t left = (deadline - bench_now_ns()) / 1000000;
        ssize_t r = left > 0 && poll(&p, 1, (int) left) == 1
                    ? read(self->out[i], buf + len, sizeof buf - 1 - len) : -1;
        if (r <= 0)
            bench_die("bench_fanin", "relay r%zu did not say ready in %d s "
                      "(see its log)", i + 1, wait_s);
        len += (size_t) r;
    }
}

fanin_relays_t *
fanin_relays_start(const fanin_relay_opts_t *o)
{
    fanin_relays_t *self = calloc(1, sizeof *self);
    size_t k = o->group;
    self->n = (o->n + k - 1) / k;
    self->pid = calloc(self->n, sizeof *self->pid);
    self->out = calloc(self->n, sizeof *self->out);
    char **group = calloc(self->n, sizeof *group);
    if (!self->pid || !self->out || !group)
        bench_die("bench_fanin", "out of memory");
    char dir[PATH_MAX], keys[PATH_MAX + 8], nodes[PATH_MAX + 8],
         relay[PATH_MAX + 16], buf[PATH_MAX * 2], log[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/relay", o->rundir);
    snprintf(keys, sizeof keys, "%s/keys", o->rundir);
    snprintf(nodes, sizeof nodes, "%s/nodes", o->rundir);
    snprintf(relay, sizeof relay, "%s/telem_relay", o->bindir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        bench_die("bench_fanin", "mkdir %s: %s", dir, strerror(errno));
    for (size_t g = 0; g < self->n; g++) {
        size_t first = g * k, last = first + k < o->n ? first + k : o->n;
        size_t cap = 1;
        for (size_t i = first; i < last; i++)
            cap += strlen(o->names[i]) + 1;
        if (!(group[g] = calloc(1, cap)))
            bench_die("bench_fanin", "out of memory");
        for (size_t i = first; i < last; i++)
            strcat(strcat(group[g], i > first ? "," : ""), o->names[i]);
        char name[32];
        snprintf(name, sizeof name, "r%zu", g + 1);
        const char *tail[] = { relay, "--nodefile", nodes, "--group",
            group[g], "--name", name, "--bind", "0.0.0.0", "--keys", keys,
            "--rundir", dir, "--log-level", "warn", NULL };
        char *argv[S_WORDS];
        s_argv(o->template_, o->names[first], buf, sizeof buf, argv, tail);
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0)
            bench_die("bench_fanin", "pipe: %s", strerror(errno));
        snprintf(log, sizeof log, "%s/%s.log", dir, name);
        self->pid[g] = s_spawn(argv, environ, fds[1], log);
        close(fds[1]);
        self->out[g] = fds[0];
    }
    /* Every relay starts at once; then each one's "ready". */
    snprintf(buf, sizeof buf, "%s/relays.tmp", o->rundir);
    int fd = open(buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        bench_die("bench_fanin", "%s: %s", buf, strerror(errno));
    for (size_t g = 0; g < self->n; g++) {
        char ep[512];
        s_wait_ready(self, g, o->wait_s, ep, sizeof ep);
        fprintf(f, "r%zu\t%s\t%s\n", g + 1, ep, group[g]);
        free(group[g]);
    }
    free(group);
    snprintf(self->path, sizeof self->path, "%s/relays", o->rundir);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0
        || rename(buf, self->path) != 0)
        bench_die("bench_fanin", "cannot write %s: %s", self->path,
                  strerror(errno));
    return self;
}

size_t fanin_relays_count(const fanin_relays_t *self) { return self->n; }

int64_t
fanin_relays_cpu_ns(const fanin_relays_t *self)
{
    int64_t t = 0;
    for (size_t i = 0; i < self->n; i++) {
        int64_t c = fanin_proc_cpu_ns((long) self->pid[i]);
        t += c > 0 ? c : 0;
    }
    return t;
}

int
fanin_stop_pid(pid_t pid, int wait_s)
{
    int pfd = (int) syscall(SYS_pidfd_open, pid, 0), status = 0;
    kill(pid, SIGTERM);
    struct pollfd p = { pfd, POLLIN, 0 };
    if (pfd < 0 || poll(&p, 1, wait_s * 1000) != 1)
        kill(pid, SIGKILL);
    if (pfd >= 0)
        close(pfd);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

size_t
fanin_relays_stop(fanin_relays_t **self_p)
{
    fanin_relays_t *self = *self_p;
    size_t bad = 0;
    if (!self)
        return 0;
    unlink(self->path);
    for (size_t i = 0; i < self->n; i++) {
        bad += fanin_stop_pid(self->pid[i], 10) != 0;
        close(self->out[i]);
    }
    free(self->pid);
    free(self->out);
    free(self);
    *self_p = NULL;
    return bad;
}

pid_t
fanin_agg_start(const fanin_relay_opts_t *o, const char *relays,
                const char *dir, char *url, size_t size)
{
    char agg[PATH_MAX + 16], nodes[PATH_MAX + 32], token[PATH_MAX + 32],
         buf[PATH_MAX * 2], log[PATH_MAX + 32], ev[PATH_MAX + 32],
         kv[PATH_MAX + 32];
    snprintf(agg, sizeof agg, "%s/telem_agg", o->bindir);
    snprintf(nodes, sizeof nodes, "%s/launch/telemd_nodes", o->rundir);
    snprintf(token, sizeof token, "%s/keys/agg.token", o->rundir);
    snprintf(log, sizeof log, "%s/agg.log", dir);
    if (mkdir(dir, 0700) != 0)
        bench_die("bench_fanin", "mkdir %s: %s", dir, strerror(errno));
    const char *tail[] = { agg, "--rundir", dir, "--nodefile", nodes,
        "--port", "0", "--bind", "0.0.0.0", "--token-file", token,
        "--log-level", "warn", NULL };
    char *argv[S_WORDS];
    s_argv(o->template_, o->names[0], buf, sizeof buf, argv, tail);
    snprintf(ev, sizeof ev, "TELEM_RELAYS=%s", relays);
    snprintf(kv, sizeof kv, "TELEM_KEYS=%s/keys", o->rundir);
    const char *set[] = { ev, kv };
    char **env = s_env(set, 2);
    pid_t pid = s_spawn(argv, env, -1, log);
    free(env[0]);
    free(env[1]);
    free(env);
    /* Its URL file; the child's pidfd is the clock (it exits: no URL). */
    snprintf(buf, sizeof buf, "%s/telem_agg/url", dir);
    int pfd = (int) syscall(SYS_pidfd_open, pid, 0);
    int64_t deadline = bench_now_ns() + (int64_t) o->wait_s * 1000000000;
    for (;;) {
        FILE *f = fopen(buf, "r");
        int ok = f && fgets(url, (int) size, f) != NULL;
        if (f)
            fclose(f);
        url[ok ? strcspn(url, "\r\n") : 0] = '\0';
        if (*url)
            break;
        struct pollfd p = { pfd, POLLIN, 0 };
        if (pfd < 0 || bench_now_ns() > deadline || poll(&p, 1, 20) != 0)
            bench_die("bench_fanin", "telem_agg in %s did not start (see %s)",
                      dir, log);
    }
    close(pfd);
    return pid;
}

/* The inodes of `pid`'s sockets. */
static size_t
s_socket_inodes(long pid, unsigned long *ino, size_t cap)
{
    char path[64], link[64], p[320];
    snprintf(path, sizeof path, "/proc/%ld/fd", pid);
    DIR *d = opendir(path);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && n < cap) {
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        ssize_t len = readlink(p, link, sizeof link - 1);
        if (len > 0) {
            link[len] = '\0';
            n += sscanf(link, "socket:[%lu]", &ino[n]) == 1;
        }
    }
    if (d)
        closedir(d);
    return n;
}

/* tcp://A.B.C.D:PORT as /proc/net/tcp writes it (the address's raw
 * 32 bits in hex, the port in hex); 0, or -1 if not that form. */
static int
s_ep(const char *ep, unsigned *addr, unsigned *port)
{
    char host[64];
    struct in_addr a;
    if (sscanf(ep, "tcp://%63[0-9.]:%u", host, port) != 2
        || inet_pton(AF_INET, host, &a) != 1)
        return -1;
    *addr = (unsigned) a.s_addr;
    return 0;
}

static int
s_wanted(const char *const *eps, size_t neps, unsigned addr, unsigned port)
{
    for (size_t k = 0; k < neps; k++) {
        unsigned a, p;
        if (s_ep(eps[k], &a, &p) == 0 && a == addr && p == port)
            return 1;
    }
    return neps == 0;
}

size_t
fanin_tcp_conns(long pid, const char *const *eps, size_t neps)
{
    size_t cap = 16384, n = 0;
    unsigned long *ino = calloc(cap, sizeof *ino);
    if (!ino)
        bench_die("bench_fanin", "out of memory");
    size_t nino = s_socket_inodes(pid, ino, cap);
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%ld/net/tcp", pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        unsigned st, raddr, rport;
        unsigned long i;
        if (sscanf(line, " %*d: %*x:%*x %x:%x %x %*x:%*x %*x:%*x %*x %*d "
                   "%*d %lu", &raddr, &rport, &st, &i) != 4
            || st != 1 || !s_wanted(eps, neps, raddr, rport))
            continue;
        for (size_t k = 0; k < nino; k++)
            if (ino[k] == i) {
                n++;
                break;
            }
    }
    if (f)
        fclose(f);
    free(ino);
    return n;
}

static uint64_t
s_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Every series of FANIN_METRIC in [start, end] on every node: their
 * count, points and an order-free digest of node, metric, tags, stamps
 * and values (a relay merges replies in the order they arrive). */
static int
s_digest(ac_t *ac, int64_t start, int64_t end, size_t *nseries,
         size_t *npoints, uint64_t *digest)
{
    const char *m[] = { FANIN_METRIC };
    ac_query_t q = { .metrics = m, .nmetrics = 1, .start_ns = start,
                     .end_ns = end };
    ac_result_t *res = NULL;
    int rc = ac_query(ac, &q, &res);
    *nseries = *npoints = 0;
    *digest = 0;
    for (size_t i = 0; res && i < ac_result_nseries(res); i++) {
        const telem_series_t *s = ac_result_series(res, i);
        const char *node = ac_result_series_node(res, i);
        uint64_t h = s_fnv(0xcbf29ce484222325ull, node, strlen(node) + 1);
        h = s_fnv(h, s->metric, strlen(s->metric) + 1);
        for (uint32_t t = 0; t < s->ntags; t++) {
            h = s_fnv(h, s->tags[t].key, strlen(s->tags[t].key) + 1);
            h = s_fnv(h, s->tags[t].value, strlen(s->tags[t].value) + 1);
        }
        h = s_fnv(h, s->ts, s->npoints * sizeof *s->ts);
        h = s_fnv(h, s->values, s->npoints * sizeof *s->values);
        *digest += h;
        *npoints += s->npoints;
        (*nseries)++;
    }
    if (res && ac_result_nmissing(res))
        rc = rc ? rc : -1;
    ac_result_destroy(&res);
    return rc;
}

int
fanin_same_answers(ac_t *direct, ac_t *relayed, int64_t start, int64_t end,
                   char *why, size_t size)
{
    size_t ns[2], np[2];
    uint64_t d[2];
    int rc0 = s_digest(direct, start, end, &ns[0], &np[0], &d[0]);
    int rc1 = s_digest(relayed, start, end, &ns[1], &np[1], &d[1]);
    snprintf(why, size, "direct: %zu series, %zu points, digest %016llx "
             "(rc %d); through relays: %zu series, %zu points, digest "
             "%016llx (rc %d)", ns[0], np[0], (unsigned long long) d[0], rc0,
             ns[1], np[1], (unsigned long long) d[1], rc1);
    return rc0 == 0 && rc1 == 0 && ns[0] == ns[1] && np[0] == np[1]
           && d[0] == d[1] && ns[0] > 0 ? 0 : -1;
}
