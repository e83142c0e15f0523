/* launch_job_procs.c - the job's process table: starting the daemons and the
 * program on a node, reading telemd's start-up lines, stopping, reaping.
 *
 * Calls go one way: launch_job.c and launch_job_loop.c call this file,
 * which calls launch_job_files.c and nothing above it.  What it learns goes
 * back up as return values (launch_job_reap() hands over an exited
 * process) or through self->on_line, the handler of output lines that
 * launch_job_new() installs.
 *
 * Each process is started through the node source (directly, srun, or a
 * remote-shell template) into a process group of its own; signals go to
 * the whole group.  telemd's and telem_dictd's standard output come back
 * through pipes polled by the job's loop: they print their endpoints and
 * "ready", which is how the launcher learns, on every kind of node, where
 * to reach them and that they are up (and, under Slurm, which node telemd
 * really runs on).
 */
#include "launch_job_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "telem_error.h"
#include "telem_grow.h"
#include "telem_log.h"
#include "telem_time.h"

const char *
launch_job_role_name(launch_job_role_t role)
{
    static const char *const names[] = { "telemd", "dictd", "collect",
                                         "watch", "program", "agg",
                                         "relay" };
    return (unsigned) role < 7 ? names[role] : "process";
}

static launch_job_proc_t *
s_find_fd(launch_job_t *self, int fd)
{
    for (size_t i = 0; i < self->nprocs; i++)
        if (self->procs[i]->out_fd == fd)
            return self->procs[i];
    return NULL;
}

static void
s_close_output(launch_job_t *self, launch_job_proc_t *p)
{
    if (p->out_fd < 0)
        return;
    zmq_pollitem_t item = { NULL, p->out_fd, ZMQ_POLLIN, 0 };
    zloop_poller_end(self->loop, &item);
    close(p->out_fd);
    p->out_fd = -1;
}

static int
s_on_output(zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    (void) loop;
    launch_job_t *self = arg;
    launch_job_proc_t *p = s_find_fd(self, item->fd);
    if (!p)
        return 0;
    ssize_t r = read(p->out_fd, p->line + p->len, sizeof p->line - 1 - p->len);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (r <= 0) {
        s_close_output(self, p);
        return 0;
    }
    p->len += (size_t) r;
    p->line[p->len] = '\0';
    char *start = p->line, *nl;
    while ((nl = strchr(start, '\n')) != NULL) {
        *nl = '\0';
        self->on_line(self, p, start);
        start = nl + 1;
        if (p->stopping)            /* failed its identity check */
            return 0;
    }
    p->len = strlen(start);
    memmove(p->line, start, p->len + 1);
    if (p->len == sizeof p->line - 1)      /* a line too long: drop it */
        p->len = 0;
    return 0;
}

/* Opens <launch_dir>/<node>.<role>.log for a daemon's stderr. */
static int
s_log_fd(launch_job_t *self, size_t node, launch_job_role_t role)
{
    char path[TELEM_PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s.%s.log", self->launch_dir,
             launch_state_name(self->state, node), launch_job_role_name(role));
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

static int
s_table_add(launch_job_t *self, launch_job_proc_t *p)
{
    if (telem_grow((void **) &self->procs, &self->cap, self->nprocs + 1,
                   sizeof *self->procs, 16))
        return TELEM_ENOMEM;
    self->procs[self->nprocs++] = p;
    return 0;
}

/* Spawns the wrapped command with the given descriptors. */
static int
s_spawn_cmd(launch_job_t *self, size_t node, launch_job_role_t role,
            const char *const *argv, const launch_env_t *env,
            const char *const *telem_kv, int out_fd, int err_fd, pid_t *pid)
{
    launch_argv_t cmd = { 0 };
    int rc = launch_source_command(self->source,
                                   launch_state_name(self->state, node),
                                   launch_job_role_name(role), argv, telem_kv,
                                   &cmd);
    if (rc == 0) {
        launch_proc_spawn_t s = { cmd.v, launch_env_array(env), -1, out_fd,
                                  err_fd };
        rc = launch_proc_spawn(&s, pid);
        if (rc)
            telem_log(TELEM_LOG_ERROR, "cannot start %s for node %s (%s): %s",
                      launch_job_role_name(role), launch_state_name(self->state,
                                                                    node),
                      cmd.v[0], strerror(errno));
    }
    launch_argv_clear(&cmd);
    return rc;
}

launch_job_proc_t *
launch_job_spawn(launch_job_t *self, size_t node, launch_job_role_t role,
                 const char *const *argv, const launch_env_t *env,
                 const char *const *telem_kv)
{
    int pipefd[2] = { -1, -1 }, err_fd = -1;
    launch_job_proc_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->node = node;
    p->role = role;
    p->out_fd = -1;
    int daemon = role == LAUNCH_ROLE_TELEMD || role == LAUNCH_ROLE_DICTD
                 || role == LAUNCH_ROLE_RELAY;
    if (daemon && pipe2(pipefd, O_CLOEXEC) != 0)
        goto fail;
    if (daemon && (err_fd = s_log_fd(self, node, role)) < 0)
        goto fail;
    if (s_spawn_cmd(self, node, role, argv, env, telem_kv, pipefd[1], err_fd,
                    &p->pid))
        goto fail;
    if (err_fd >= 0)
        close(err_fd);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    if (s_table_add(self, p)) {
        launch_proc_signal_group(p->pid,
                                 SIGKILL);  /* reaped as an unknown child */
        goto fail_spawned;
    }
    if (pipefd[0] >= 0) {
        fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
        p->out_fd = pipefd[0];
        zmq_pollitem_t item = { NULL, p->out_fd, ZMQ_POLLIN, 0 };
        zloop_poller(self->loop, &item, s_on_output, self);
    }
    return p;
fail:
    if (err_fd >= 0)
        close(err_fd);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
fail_spawned:
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    free(p);
    return NULL;
}

/* What the program's start keeps per node until its spawn is done. */
typedef struct {
    launch_argv_t kv, cmd;
    launch_env_t *env;
} s_prog_t;

/* Builds node i's environment and command into *g and its spawn into *s;
 * 0 or an error. */
static int
s_prog_prepare(launch_job_t *self, size_t i, s_prog_t *g,
               launch_proc_spawn_t *s)
{
    g->env = launch_job_env(self, i, LAUNCH_ROLE_PROGRAM, &g->kv);
    if (!g->env)
        return TELEM_ENOMEM;
    int rc = launch_source_command(self->source,
                                   launch_state_name(self->state, i),
                                   "program", self->cfg.program,
                                   (const char *const *) g->kv.v, &g->cmd);
    *s = (launch_proc_spawn_t) { g->cmd.v, launch_env_array(g->env), -1, -1,
                                 -1 };
    return rc;
}

/* Enters a spawned program into the table; NULL (its group killed, to be
 * reaped as an unknown child) when out of memory. */
static launch_job_proc_t *
s_prog_enter(launch_job_t *self, size_t i, pid_t pid)
{
    launch_job_proc_t *p = calloc(1, sizeof *p);
    if (p) {
        p->node = i;
        p->role = LAUNCH_ROLE_PROGRAM;
        p->pid = pid;
        p->out_fd = -1;
    }
    if (!p || s_table_add(self, p)) {
        launch_proc_signal_group(pid, SIGKILL);
        free(p);
        return NULL;
    }
    return p;
}

size_t
launch_job_spawn_programs(launch_job_t *self, const size_t *idx, size_t n)
{
    s_prog_t *g = calloc(n ? n : 1, sizeof *g);
    launch_proc_spawn_t *s = calloc(n ? n : 1, sizeof *s);
    pid_t *pids = calloc(n ? n : 1, sizeof *pids);
    int *rcs = calloc(n ? n : 1, sizeof *rcs);
    int *errs = calloc(n ? n : 1, sizeof *errs);
    size_t started = 0;
    int ok = g && s && pids && rcs && errs;
    for (size_t k = 0; ok && k < n; k++)
        ok = s_prog_prepare(self, idx[k], &g[k], &s[k]) == 0;
    if (ok)
        launch_proc_spawn_many(s, n, pids, rcs, errs);
    for (size_t k = 0; ok && k < n; k++) {
        launch_job_node_t *nd = &self->nodes[idx[k]];
        nd->done = 0;
        nd->program = rcs[k] ? NULL : s_prog_enter(self, idx[k], pids[k]);
        started += nd->program != NULL;
        if (rcs[k])
            telem_log(TELEM_LOG_ERROR, "cannot start program for node %s "
                      "(%s): %s", launch_state_name(self->state, idx[k]),
                      s[k].argv[0], strerror(errs[k]));
    }
    if (!ok)
        telem_log(TELEM_LOG_ERROR, "cannot start the program: out of memory");
    for (size_t k = 0; g && k < n; k++) {
        launch_env_destroy(&g[k].env);
        launch_argv_clear(&g[k].kv);
        launch_argv_clear(&g[k].cmd);
    }
    free(g);
    free(s);
    free(pids);
    free(rcs);
    free(errs);
    return started;
}

/* Spawns a daemon for node i with the environment launch_job_env() gives. */
static launch_job_proc_t *
s_spawn_role(launch_job_t *self, size_t i, launch_job_role_t role,
             const char *const *argv)
{
    launch_argv_t kv = { 0 };
    launch_env_t *env = launch_job_env(self, i, role, &kv);
    launch_job_proc_t *p = env ? launch_job_spawn(self, i, role, argv, env,
                                                  (const char *const *) kv.v)
                       : NULL;
    launch_env_destroy(&env);
    launch_argv_clear(&kv);
    /* An observer is up once started (the node daemons once "ready"). */
    if (p && (role == LAUNCH_ROLE_COLLECT || role == LAUNCH_ROLE_WATCH
              || role == LAUNCH_ROLE_AGG)) {
        self->nodes[i].sup[role].state = LAUNCH_SUP_RUNNING;
        self->nodes[i].sup[role].up_once = 1;
        launch_job_files_write_daemons(self);
    }
    return p;
}

const char *
launch_job_bind_addr(const launch_job_t *self, size_t i)
{
    if (self->cfg.bind_addr)
        return self->cfg.bind_addr;
    return launch_source_addr(self->source, launch_state_name(self->state, i));
}

int
launch_job_start_telemd(launch_job_t *self, size_t i)
{
    char level[16];
    snprintf(level, sizeof level, "%d", self->cfg.level);
    char http_port[16], port[16];
    snprintf(http_port, sizeof http_port, "%d", self->cfg.metrics_port);
    launch_job_node_t *nd = &self->nodes[i];
    snprintf(port, sizeof port, "%ld", nd->keep_port);
    const char *argv[20];
    size_t k = 0;
    argv[k++] = self->bin_telemd;
    argv[k++] = "--keys";
    argv[k++] = self->keys_dir;
    if (!launch_source_daemon_names_itself(self->source)) {
        argv[k++] = "--node";
        argv[k++] = launch_state_name(self->state, i);
    }
    argv[k++] = "--rundir";
    argv[k++] = self->rundir;
    argv[k++] = "--level";
    argv[k++] = level;
    const char *bind = launch_job_bind_addr(self, i);
    if (bind) {
        argv[k++] = "--bind";
        argv[k++] = bind;
    }
    if (nd->keep_port > 0) {    /* a restart: clients keep their endpoint */
        argv[k++] = "--port";
        argv[k++] = port;
    }
    if (self->cfg.metrics_port >= 0) {
        argv[k++] = "--http-port";
        argv[k++] = http_port;
        if (self->cfg.metrics_bind) {
            argv[k++] = "--http-bind";
            argv[k++] = self->cfg.metrics_bind;
        }
    }
    argv[k] = NULL;
    nd->ready = 0;
    nd->misses = 0;
    /* A restarted telemd's node keeps its last endpoint in the node files
       until the new one prints its own. */
    if (nd->sup[LAUNCH_ROLE_TELEMD].restarts == 0)
        nd->endpoint[0] = '\0';
    nd->reported[0] = nd->metrics[0] = '\0';
    nd->started_ns = telem_mono_ns();
    nd->telemd = s_spawn_role(self, i, LAUNCH_ROLE_TELEMD, argv);
    return nd->telemd ? 0 : TELEM_EIO;
}

/* "a,b,c": the nodes that are not DOWN, the dictionary's node set;
 * malloc'd, NULL when out of memory. */
static char *
s_dict_list(const launch_job_t *self)
{
    size_t len = 1;
    for (size_t k = 0; k < self->n; k++)
        if (launch_state_node(self->state, k) != LAUNCH_NODE_DOWN)
            len += strlen(launch_state_name(self->state, k)) + 1;
    char *list = calloc(1, len);
    for (size_t k = 0; list && k < self->n; k++)
        if (launch_state_node(self->state, k) != LAUNCH_NODE_DOWN)
            strcat(strcat(list, *list ? "," : ""),
                   launch_state_name(self->state, k));
    return list;
}

int
launch_job_start_dictd(launch_job_t *self, size_t i)
{
    launch_job_node_t *nd = &self->nodes[i];
    nd->dict_ready = 0;
    if (!self->dict)
        return 0;
    launch_argv_t argv = { 0 };
    char *list = s_dict_list(self);
    const char *bind = launch_job_bind_addr(self, i);
    int rc = TELEM_ENOMEM;
    if (list) {
        const char *words[] = { self->bin_dictd, "--node",
                                launch_state_name(self->state, i), "--rundir",
                                self->rundir, "--nodefile",
                                self->dict_nodefile, "--nodes", list,
                                "--keys", self->keys_dir, NULL };
        char port[24];
        snprintf(port, sizeof port, "%ld", nd->dict_keep_port);
        if (launch_argv_addv(&argv, words) == 0
            && (!bind || (launch_argv_add(&argv, "--bind") == 0
                && launch_argv_add(&argv, bind) == 0))
            && (nd->dict_keep_port <= 0 || !bind
                || (launch_argv_add(&argv, "--port") == 0
                    && launch_argv_add(&argv, port) == 0))) {
            nd->dictd = s_spawn_role(self, i, LAUNCH_ROLE_DICTD,
                                     (const char *const *) argv.v);
            rc = nd->dictd ? 0 : TELEM_EIO;
        }
    }
    free(list);
    launch_argv_clear(&argv);
    return rc;
}

/* Local virtual nodes share this machine: one telem_collect on the first
 * active node runs every node's collectors and maps them onto this
 * machine's devices.  Elsewhere every active node runs its own
 * telem_collect --node NAME, on its own devices. */
static int
s_collect_per_node(const launch_job_t *self)
{
    return launch_source_kind(self->source) != LAUNCH_SOURCE_LOCAL;
}

static int
s_start_collect(launch_job_t *self, size_t i)
{
    launch_argv_t argv = { 0 };
    int rc = 0;
    if (self->cfg.collect && launch_argv_add(&argv, self->bin_collect) == 0
        && launch_argv_split(&argv, self->cfg.collect, NULL) == 0
        && (!s_collect_per_node(self)
            || (launch_argv_add(&argv, "--node") == 0
                && launch_argv_add(&argv,
                                   launch_state_name(self->state, i)) == 0)))
        rc = s_spawn_role(self, i, LAUNCH_ROLE_COLLECT,
                          (const char *const *) argv.v) ? 0 : TELEM_EIO;
    launch_argv_clear(&argv);
    return rc;
}

static int
s_start_watch(launch_job_t *self, size_t i)
{
    launch_argv_t argv = { 0 };
    if (self->cfg.ndetectors == 0 || access(self->bin_watch, X_OK) != 0)
        return 0;
    int rc = launch_argv_add(&argv, self->bin_watch);
    for (size_t d = 0; !rc && d < self->cfg.ndetectors; d++)
        rc = launch_argv_add(&argv, "--detector")
             || launch_argv_add(&argv, self->cfg.detectors[d]);
    /* A resilient job is restarted on the watcher's request; otherwise
       the watcher only reports. */
    if (!rc && self->cfg.resilient)
        rc = launch_argv_add(&argv, "--restart-endpoint")
             || launch_argv_add(&argv, self->restart_ep);
    if (!rc)
        rc = s_spawn_role(self, i, LAUNCH_ROLE_WATCH,
                          (const char *const *) argv.v) ? 0 : TELEM_EIO;
    launch_argv_clear(&argv);
    return rc;
}

void
launch_job_start_observers(launch_job_t *self, size_t i)
{
    if (!s_collect_per_node(self))
        s_start_collect(self, i);
    else
        for (size_t k = 0; k < self->n; k++)
            if (launch_state_node(self->state, k) == LAUNCH_NODE_ACTIVE)
                s_start_collect(self, k);
    launch_job_start_agg(self, i);
    s_start_watch(self, i);
}

int
launch_job_start_role(launch_job_t *self, size_t i, launch_job_role_t role)
{
    switch (role) {
    case LAUNCH_ROLE_TELEMD: return launch_job_start_telemd(self, i);
    case LAUNCH_ROLE_DICTD: return launch_job_start_dictd(self, i);
    case LAUNCH_ROLE_COLLECT: return s_start_collect(self, i);
    case LAUNCH_ROLE_WATCH: return s_start_watch(self, i);
    case LAUNCH_ROLE_AGG:
        launch_job_start_agg(self, i);
        return 0;
    default: return TELEM_EINVAL;
    }
}

/* Prints where telem_agg serves and the tunnel a user runs on a login node
 * to reach it (the node's loopback is not reachable from elsewhere): when
 * it first starts, and again when it moves to a new first node. */
static void
s_announce_agg(launch_job_t *self, size_t i)
{
    if (self->agg_announced == i + 1)
        return;
    self->agg_announced = i + 1;
    char host[256] = "";
    if (launch_source_kind(self->source) == LAUNCH_SOURCE_LOCAL)
        gethostname(host, sizeof host - 1);
    else
        snprintf(host, sizeof host, "%s", launch_state_name(self->state, i));
    int port = self->cfg.agg_port;
    /* The URL carries the job's token (the launcher's own output, read by
       the job's user); a token of the user's own stays in its file. */
    char query[96] = "";
    if (self->agg_token[0])
        snprintf(query, sizeof query, "?token=%s", self->agg_token);
    else if (self->cfg.agg_token_file)
        snprintf(query, sizeof query, " with the token in --agg-token-file");
    if (port == 0)
        telem_log(TELEM_LOG_INFO, "telem_agg on %s: dashboard and OpenTSDB "
                  "API at the address in %s/telem_agg/url (token in %s)",
                  launch_state_name(self->state, i), self->rundir,
                  launch_job_keys_token_file(self));
    else
        telem_log(TELEM_LOG_INFO, "telem_agg on %s: dashboard and OpenTSDB "
                  "API at http://localhost:%d/ there; from a login node run "
                  "'ssh -NL localhost:%d:localhost:%d %s' and open "
                  "http://localhost:%d/%s", launch_state_name(self->state, i),
                  port, port, port, host, port, query);
}

void
launch_job_start_agg(launch_job_t *self, size_t i)
{
    if (self->cfg.agg_port < 0 || self->cfg.level < 1
        || launch_job_count(self, LAUNCH_ROLE_AGG) > 0
        || access(self->bin_agg, X_OK) != 0)
        return;
    char port[16], nodes[TELEM_PATH_MAX + 16];
    snprintf(port, sizeof port, "%d", self->cfg.agg_port);
    /* Every node whose telemd runs: a node taken out of the job stays
       visible with its history (launch_job_files.c). */
    snprintf(nodes, sizeof nodes, "%s/telemd_nodes", self->launch_dir);
    launch_argv_t argv = { 0 };
    const char *words[] = { self->bin_agg, "--rundir", self->rundir,
                            "--nodefile", nodes, "--port", port,
                            "--launch-endpoint", self->restart_ep, NULL };
    int rc = launch_argv_addv(&argv, words);
    if (!rc && self->cfg.agg_bind)
        rc = launch_argv_add(&argv, "--bind")
             || launch_argv_add(&argv, self->cfg.agg_bind);
    const char *token = launch_job_keys_token_file(self);
    if (!rc && token)
        rc = launch_argv_add(&argv, "--token-file")
             || launch_argv_add(&argv, token);
    if (!rc && s_spawn_role(self, i, LAUNCH_ROLE_AGG,
                            (const char *const *) argv.v))
        s_announce_agg(self, i);
    launch_argv_clear(&argv);
}

size_t
launch_job_stop(launch_job_t *self, int role, long node)
{
    size_t n = 0;
    int64_t deadline = telem_mono_ns() + self->cfg.grace_ns;
    for (size_t i = 0; i < self->nprocs; i++) {
        launch_job_proc_t *p = self->procs[i];
        if ((role >= 0 && (int) p->role != role)
            || (node >= 0 && p->node != (size_t) node))
            continue;
        if (!p->stopping) {
            p->stopping = 1;
            p->kill_at_ns = deadline;
            launch_proc_signal_group(p->pid,
                                     launch_source_stop_signal(self->source));
        }
        n++;
    }
    return n;
}

size_t
launch_job_stop_agg_off(launch_job_t *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->nprocs; i++) {
        const launch_job_proc_t *p = self->procs[i];
        if (p->role == LAUNCH_ROLE_AGG && !p->stopping
            && launch_state_node(self->state, p->node) != LAUNCH_NODE_ACTIVE) {
            self->nodes[p->node].sup[LAUNCH_ROLE_AGG].state
                = LAUNCH_SUP_STOPPED;
            n += launch_job_stop(self, LAUNCH_ROLE_AGG, (long) p->node);
        }
    }
    if (n)
        launch_job_files_write_daemons(self);
    return n;
}

void
launch_job_kill_due(launch_job_t *self, int64_t now_ns)
{
    for (size_t i = 0; i < self->nprocs; i++) {
        launch_job_proc_t *p = self->procs[i];
        if (p->stopping && p->kill_at_ns <= now_ns) {
            if (!p->killed)
                telem_log(TELEM_LOG_WARN, "%s on %s did not stop in time: "
                          "SIGKILL", launch_job_role_name(p->role),
                          launch_state_name(self->state, p->node));
            p->killed = 1;
            launch_proc_signal_group(p->pid, SIGKILL);
        }
    }
}

size_t
launch_job_count(const launch_job_t *self, int role)
{
    size_t n = 0;
    for (size_t i = 0; i < self->nprocs; i++)
        n += role < 0 || (int) self->procs[i]->role == role;
    return n;
}

size_t
launch_job_count_stopping(const launch_job_t *self, int role)
{
    size_t n = 0;
    for (size_t i = 0; i < self->nprocs; i++)
        n += (role < 0 || (int) self->procs[i]->role == role)
             && self->procs[i]->stopping;
    return n;
}

launch_job_proc_t *
launch_job_reap(launch_job_t *self, int *status)
{
    pid_t pid;
    while ((pid = waitpid(-1, status, WNOHANG)) > 0) {
        launch_job_proc_t *p = NULL;
        for (size_t i = 0; i < self->nprocs; i++)
            if (self->procs[i]->pid == pid) {
                p = self->procs[i];
                self->procs[i] = self->procs[--self->nprocs];
                break;
            }
        /* Whatever the process left in its group goes with it. */
        launch_proc_signal_group(pid, SIGKILL);
        if (!p)
            continue;
        s_close_output(self, p);
        return p;
    }
    return NULL;
}
