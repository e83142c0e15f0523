/* launch_job_procs.c - the job's process table: spawning a command on a
 * node or one kind on many nodes, reading telemd's start-up lines,
 * stopping, reaping.
 *
 * Calls go one way: launch_job.c, launch_job_start.c and launch_job_loop.c
 * call this file, which calls launch_job_step.c and launch_job_files.c
 * and nothing above it.  What it learns goes back up as return values
 * (launch_job_reap() hands over an exited process) or through
 * self->on_line and self->on_exit, the handlers that launch_job_new()
 * installs (a task of a Slurm step ends while srun runs on: srun's word,
 * not a child's exit, says so).
 *
 * Each process is started through the node source (directly, srun, or a
 * remote-shell template) into a process group of its own; signals go to
 * the whole group.  Under Slurm one kind started on many nodes at once is
 * one job step (launch_job_step.c): its tasks have records here like
 * processes, without a pid of their own (pid 0), and are stopped through
 * their step.  telemd's and telem_dictd's standard output come back
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
                                         "relay", "detcmd1", "detcmd2",
                                         "detcmd3", "detcmd4" };
    _Static_assert(sizeof names / sizeof names[0] == LAUNCH_SUP_ROLES,
                   "a name per role");
    return (unsigned) role < LAUNCH_SUP_ROLES ? names[role] : "process";
}

static launch_job_proc_t *
s_find_fd(launch_job_t *self, int fd)
{
    for (size_t i = 0; i < self->nprocs; i++)
        if (self->procs[i]->out_fd == fd)
            return self->procs[i];
    return NULL;
}

void
launch_job_unwatch_fd(launch_job_t *self, int *fd)
{
    if (*fd < 0)
        return;
    zmq_pollitem_t item = { NULL, *fd, ZMQ_POLLIN, 0 };
    zloop_poller_end(self->loop, &item);
    close(*fd);
    *fd = -1;
}

static void
s_close_output(launch_job_t *self, launch_job_proc_t *p)
{
    launch_job_unwatch_fd(self, &p->out_fd);
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

/* A task of a step ended (launch_job_step.c): out of the table, up. */
static void
s_task_ended(launch_job_t *self, launch_job_proc_t *p, int status)
{
    for (size_t i = 0; i < self->nprocs; i++)
        if (self->procs[i] == p) {
            self->procs[i] = self->procs[--self->nprocs];
            break;
        }
    self->on_exit(self, p, status);
    free(p);
}

int
launch_job_uses_steps(const launch_job_t *self)
{
    return self->bin_step[0] && launch_source_kind(self->source)
                                == LAUNCH_SOURCE_SLURM;
}

/* Starts `role` on nodes idx[0..n) as one Slurm step; sets recs[k].
 * Returns how many started. */
static size_t
s_spawn_step(launch_job_t *self, launch_job_role_t role, const size_t *idx,
             size_t n, const launch_argv_t *argvs, launch_job_proc_t **recs)
{
    launch_argv_t *kvs = calloc(n, sizeof *kvs);
    launch_env_t *env = NULL;
    size_t started = 0;
    int ok = kvs != NULL;
    /* srun carries node idx[0]'s environment to every task; each task's
       line adds its own TELEM_* keys (launch_job_env()). */
    for (size_t k = 0; ok && k < n; k++) {
        launch_env_t *e = launch_job_env(self, idx[k], role, &kvs[k]);
        ok = e != NULL;
        if (k == 0)
            env = e;
        else
            launch_env_destroy(&e);
    }
    launch_job_step_t *st = ok ? launch_job_step_start(self, role, idx, n,
                                                        argvs, kvs, env,
                                                        s_task_ended)
                            : NULL;
    for (size_t k = 0; st && k < n; k++) {
        recs[k] = launch_job_step_task(st, k);
        if (s_table_add(self, recs[k])) {
            launch_job_step_forget(st, k);  /* left to run with its step */
            free(recs[k]);
            recs[k] = NULL;
        }
        started += recs[k] != NULL;
    }
    launch_env_destroy(&env);
    for (size_t k = 0; kvs && k < n; k++)
        launch_argv_clear(&kvs[k]);
    free(kvs);
    return started;
}

size_t
launch_job_spawn_nodes(launch_job_t *self, launch_job_role_t role,
                       const size_t *idx, size_t n,
                       const launch_argv_t *argvs, launch_job_proc_t **recs)
{
    for (size_t k = 0; k < n; k++)
        recs[k] = NULL;
    if (n && launch_job_uses_steps(self))
        return s_spawn_step(self, role, idx, n, argvs, recs);
    size_t started = 0;
    for (size_t k = 0; k < n; k++) {
        launch_argv_t kv = { 0 };
        launch_env_t *env = launch_job_env(self, idx[k], role, &kv);
        recs[k] = env ? launch_job_spawn(self, idx[k], role,
                                         (const char *const *) argvs[k].v,
                                         env, (const char *const *) kv.v)
                  : NULL;
        started += recs[k] != NULL;
        launch_env_destroy(&env);
        launch_argv_clear(&kv);
    }
    return started;
}

/* The program on nodes idx[0..n) as one Slurm step. */
static size_t
s_spawn_program_step(launch_job_t *self, const size_t *idx, size_t n)
{
    launch_argv_t *argvs = calloc(n ? n : 1, sizeof *argvs);
    launch_job_proc_t **recs = calloc(n ? n : 1, sizeof *recs);
    size_t started = 0;
    int rc = argvs && recs ? 0 : TELEM_ENOMEM;
    for (size_t k = 0; !rc && k < n; k++)
        rc = launch_argv_addv(&argvs[k], self->cfg.program);
    if (!rc)
        started = launch_job_spawn_nodes(self, LAUNCH_ROLE_PROGRAM, idx, n,
                                         argvs, recs);
    for (size_t k = 0; !rc && k < n; k++) {
        self->nodes[idx[k]].done = 0;
        self->nodes[idx[k]].program = recs[k];
    }
    for (size_t k = 0; argvs && k < n; k++)
        launch_argv_clear(&argvs[k]);
    free(argvs);
    free(recs);
    return started;
}

size_t
launch_job_spawn_programs(launch_job_t *self, const size_t *idx, size_t n)
{
    if (launch_job_uses_steps(self))
        return s_spawn_program_step(self, idx, n);
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

/* The stop of tasks of steps, decided once the event that asked for it is
 * over (launch_job_step_stop()). */
static int
s_on_steps_due(zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    launch_job_t *self = arg;
    self->steps_due = 0;
    launch_job_step_stop(self);
    return 0;
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
            if (!p->step)
                launch_proc_signal_group(p->pid,
                                         launch_source_stop_signal(
                                             self->source));
            else if (!self->steps_due)
                self->steps_due = zloop_timer(self->loop, 1, 1,
                                              s_on_steps_due, self) >= 0;
        }
        n++;
    }
    return n;
}

void
launch_job_kill_due(launch_job_t *self, int64_t now_ns)
{
    for (size_t i = 0; i < self->nprocs; i++) {
        launch_job_proc_t *p = self->procs[i];
        if (p->stopping && p->kill_at_ns <= now_ns && !p->step) {
            if (!p->killed)
                telem_log(TELEM_LOG_WARN, "%s on %s did not stop in time: "
                          "SIGKILL", launch_job_role_name(p->role),
                          launch_state_name(self->state, p->node));
            p->killed = 1;
            launch_proc_signal_group(p->pid, SIGKILL);
        }
    }
    launch_job_step_kill(self, now_ns);
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
        /* A step's srun hands its tasks up itself. */
        if (!p && launch_job_step_reaped(self, pid, *status))
            continue;
        if (!p)
            continue;
        s_close_output(self, p);
        return p;
    }
    return NULL;
}
