/* launch_job_step.c - one Slurm job step that runs one kind of process
 * (telemd, telem_dictd, the collectors, the program) on many nodes: its
 * files, its srun, its output split into the tasks' records, how its tasks
 * end and how one task is stopped alone.
 *
 * Why: one `srun --nodes=1` per node and kind made a job of 32 Slurm nodes
 * take about 5 s to start (docs/performance.md), every srun a process of
 * its own on the launcher's host and a step that slurmctld creates one at
 * a time.  One srun per kind makes one step, which slurmctld creates once
 * and whose tasks the nodes' slurmd start at once.
 *
 * How (each choice measured on Slurm 22.05, docs/telem_launch.md):
 *   - The words of each node (telemd's --bind NODEADDR, telem_dictd's
 *     --node, the collectors' --node, the program's TELEM_RANK ...) are
 *     lines of a step file, RUNDIR/launch/steps/ROLE.SEQ.tasks (0600 in
 *     the 0700 run directory, which every node sees under Slurm); every
 *     task runs `telem_step FILE`, which execs its node's line
 *     (launch_step.h says why a file rather than --multi-prog).  Ranks
 *     are fixed by --distribution=arbitrary with SLURM_HOSTFILE (the
 *     step's nodes, one a line, in the file's order), and telem_step
 *     refuses to run a line whose rank Slurm did not give it.
 *   - srun --label: a labelled line of the step's standard output goes to
 *     its task's record (self->on_line: endpoints, "ready", the name
 *     check, as for a process of its own); of its standard error to
 *     launch/NODE.ROLE.log.  The program's and the collectors' lines go,
 *     label removed, to the launcher's own output as before.
 *   - srun --verbose: srun reports every task's end, "Completed" included
 *     (without it only failures); those lines end the task's record as a
 *     child's exit ends a process's, and every line of srun's own goes to
 *     launch/steps.log.  A task srun never reports (its node lost) ends
 *     when srun does.
 *   - --kill-on-bad-exit=0 and --no-kill: one task's end does not end the
 *     others, and neither does a node that Slurm marks DOWN (without
 *     --no-kill every task of the step is killed then).
 *   - srun signals all its tasks or none.  The whole step stops by the
 *     stop signal to its srun (SIGINT, forwarded to the tasks); one task
 *     alone by `telem_step --signal SIG PID STEP` run on its node through
 *     a one-node srun, PID being the one telem_step printed before its
 *     exec.  Which of the two is decided once per loop turn (a 1 ms
 *     timer), so that stopping a node and then a whole kind sends one
 *     signal to srun.  A node given back to Slurm has its tasks ended by
 *     Slurm.
 */
#include "launch_job_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch_step.h"
#include "telem_error.h"
#include "telem_grow.h"
#include "telem_log.h"

#define S_LINE_MAX 16384            /* bytes of one output line */
#define S_LOST_STATUS (255 << 8)    /* a task whose end srun did not say */

typedef struct {
    int fd;                     /* -1 once closed */
    size_t len;
    int skip;                   /* the rest of an overlong line: 1 drop,
                                   2 forward to fwd */
    int fwd;
    char buf[S_LINE_MAX];
} s_pipe_t;

struct launch_job_step {
    pid_t pid;                  /* srun, leading its process group */
    launch_job_role_t role;
    unsigned seq;
    size_t n, live;
    launch_job_proc_t **task;   /* per rank; NULL once it ended */
    size_t *node;               /* per rank: the node */
    launch_job_step_end_fn *end;
    s_pipe_t out, err;
    int signalled, killed;      /* the stop signal, SIGKILL sent to srun */
    int status;                 /* of the last exit notification, -1 */
    char id[32];                /* "JOBID.STEPID" once a task said */
    char last_error[160];       /* srun's last error line */
    char file[TELEM_PATH_MAX + 64], hosts[TELEM_PATH_MAX + 64];
};

/* Roles whose output is the user's: it goes to the launcher's own. */
static int
s_forwards(launch_job_role_t role)
{
    return role == LAUNCH_ROLE_PROGRAM || role == LAUNCH_ROLE_COLLECT
           || role == LAUNCH_ROLE_WATCH || role == LAUNCH_ROLE_AGG
           || LAUNCH_ROLE_IS_DETCMD(role);
}

static void
s_log(launch_job_t *self, const launch_job_step_t *st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
s_log(launch_job_t *self, const launch_job_step_t *st, const char *fmt, ...)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "%s.%u%s%s: ",
                     launch_job_role_name(st->role), st->seq,
                     st->id[0] ? " step " : "", st->id);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t) n, fmt, ap);
    va_end(ap);
    launch_job_files_log_step(self, line);
}

/* Writes text and a newline in one call where it can. */
static void
s_write_line(int fd, const char *text, size_t len, int newline)
{
    struct iovec v[2] = { { (void *) text, len }, { "\n", newline ? 1 : 0 } };
    int iov = 2;
    struct iovec *p = v;
    while (iov > 0) {
        ssize_t w = writev(fd, p, iov);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return;
        while (iov > 0 && (size_t) w >= p->iov_len) {
            w -= (ssize_t) p->iov_len;
            p++;
            iov--;
        }
        if (iov > 0) {
            p->iov_base = (char *) p->iov_base + w;
            p->iov_len -= (size_t) w;
        }
    }
}

/* Appends a line of a daemon's standard error to its node's log. */
static void
s_node_log(launch_job_t *self, const launch_job_step_t *st, size_t rank,
           const char *text)
{
    char path[TELEM_PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s.%s.log", self->launch_dir,
             launch_state_name(self->state, st->node[rank]),
             launch_job_role_name(st->role));
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
        s_write_line(fd, text, strlen(text), 1);
        close(fd);
    }
}

/* Hands task `rank` up as ended. */
static void
s_end(launch_job_t *self, launch_job_step_t *st, size_t rank, int status,
      const char *how)
{
    launch_job_proc_t *p = st->task[rank];
    if (!p)
        return;
    st->task[rank] = NULL;
    st->live--;
    if (how && *how)
        snprintf(p->how, sizeof p->how, "%s", how);
    st->end(self, p, status);
}

/* ---- stopping one task --------------------------------------------------- */

static void
s_helper_add(launch_job_t *self, pid_t pid)
{
    if (telem_grow((void **) &self->helpers, &self->helpers_cap,
                   self->nhelpers + 1, sizeof *self->helpers, 8) == 0)
        self->helpers[self->nhelpers++] = pid;
}

/* Sends `sig` to task p alone: telem_step --signal on its node. */
static void
s_signal_task(launch_job_t *self, launch_job_step_t *st, launch_job_proc_t *p,
              int sig)
{
    char sigs[16], pid[24];
    snprintf(sigs, sizeof sigs, "%d", sig);
    snprintf(pid, sizeof pid, "%ld", p->task_pid);
    const char *argv[] = { self->bin_step, "--signal", sigs, pid, st->id,
                           NULL };
    launch_argv_t cmd = { 0 };
    const char *node = launch_state_name(self->state, p->node);
    int fd = launch_job_files_step_log_fd(self);
    pid_t h;
    if (launch_source_command(self->source, node, "signal", argv, NULL,
                              &cmd) == 0) {
        launch_proc_spawn_t s = { cmd.v, NULL, -1, fd, fd };
        if (launch_proc_spawn(&s, &h) == 0)
            s_helper_add(self, h);
    }
    s_log(self, st, "signal %d to task %zu (%s, pid %ld) alone", sig,
          p->rank, node, p->task_pid);
    launch_argv_clear(&cmd);
}

/* ---- one line of output -------------------------------------------------- */

/* A line of task `rank`'s standard output. */
static void
s_task_out(launch_job_t *self, launch_job_step_t *st, size_t rank,
           const char *text)
{
    launch_job_proc_t *p = st->task[rank];
    long pid;
    char id[sizeof st->id];
    if (launch_step_start_parse(text, &pid, id, sizeof id) == 0) {
        if (!st->id[0])
            memcpy(st->id, id, sizeof id);
        if (p) {
            p->task_pid = pid;
            if (p->stopping && !p->sent && !st->signalled) {
                p->sent = 1;
                s_signal_task(self, st, p,
                              launch_source_stop_signal(self->source));
            }
        }
        return;
    }
    if (s_forwards(st->role))
        s_write_line(STDOUT_FILENO, text, strlen(text), 1);
    else if (p && !p->stopping)
        self->on_line(self, p, text);
}

/* Tasks that srun says ended ("task R: ..."). */
static void
s_tasks_ended(launch_job_t *self, launch_job_step_t *st,
              const launch_step_srun_t *ev, const char *line)
{
    unsigned char *hit = calloc(st->n, 1);
    if (!hit || launch_step_ranks(ev->ranks, ev->ranks_len, st->n, hit)) {
        s_log(self, st, "ranks not understood in: %s", line);
        free(hit);
        return;
    }
    int status = st->status >= 0 ? st->status : ev->status;
    char how[96] = "";
    if (status < 0) {
        status = S_LOST_STATUS;
        snprintf(how, sizeof how, "ended: %.80s", ev->what);
    }
    int error = strncmp(line, "srun: error: ", 13) == 0;
    if (error && s_forwards(st->role))
        s_write_line(STDERR_FILENO, line, strlen(line), 1);
    for (size_t r = 0; r < st->n; r++) {
        if (!hit[r])
            continue;
        if (error && !s_forwards(st->role))
            s_node_log(self, st, r, line);
        s_end(self, st, r, status, how);
    }
    free(hit);
}

/* srun says node ev->node is lost: its tasks will not report their end. */
static void
s_node_failure(launch_job_t *self, launch_job_step_t *st,
               const launch_step_srun_t *ev, const char *line)
{
    char how[96];
    snprintf(how, sizeof how, "lost with its node (%.60s)", line);
    if (s_forwards(st->role))
        s_write_line(STDERR_FILENO, line, strlen(line), 1);
    for (size_t r = 0; r < st->n; r++) {
        const char *name = launch_state_name(self->state, st->node[r]);
        if (strlen(name) == ev->node_len
            && memcmp(name, ev->node, ev->node_len) == 0)
            s_end(self, st, r, SIGKILL, how);
    }
}

/* A line of srun's own (not labelled) on its standard error. */
static void
s_srun_line(launch_job_t *self, launch_job_step_t *st, const char *line)
{
    launch_step_srun_t ev;
    launch_step_srun_parse(line, &ev);
    s_log(self, st, "%s", line);
    switch (ev.kind) {
    case LAUNCH_STEP_SRUN_STATUS:
        st->status = ev.status;
        return;
    case LAUNCH_STEP_SRUN_TASKS:
        s_tasks_ended(self, st, &ev, line);
        break;
    case LAUNCH_STEP_SRUN_NODE_FAILURE:
        s_node_failure(self, st, &ev, line);
        break;
    case LAUNCH_STEP_SRUN_ERROR:
        snprintf(st->last_error, sizeof st->last_error, "%s", ev.what);
        if (s_forwards(st->role))
            s_write_line(STDERR_FILENO, line, strlen(line), 1);
        break;
    default:
        break;
    }
    st->status = -1;
}

static void
s_line(launch_job_t *self, launch_job_step_t *st, const char *line,
       int is_err)
{
    size_t rank;
    const char *text;
    int rc = launch_step_label(line, st->n, &rank, &text);
    if (rc == TELEM_EPROTO)
        s_log(self, st, "line of no task of this step: %.200s", line);
    else if (rc == 0 && !is_err)
        s_task_out(self, st, rank, text);
    else if (rc == 0 && s_forwards(st->role))
        s_write_line(STDERR_FILENO, text, strlen(text), 1);
    else if (rc == 0)
        s_node_log(self, st, rank, text);
    else if (is_err)
        s_srun_line(self, st, line);
    else
        s_log(self, st, "%.200s", line);
}

/* ---- reading srun's pipes ------------------------------------------------ */

static int s_on_readable(zloop_t *loop, zmq_pollitem_t *item, void *arg);

static void
s_close_pipe(launch_job_t *self, s_pipe_t *pp)
{
    launch_job_unwatch_fd(self, &pp->fd);
}

/* The start of a line too long for the buffer: the user's output goes on
 * (label removed), a daemon's is dropped to its end. */
static void
s_overlong(launch_job_t *self, launch_job_step_t *st, s_pipe_t *pp,
           int is_err)
{
    size_t rank;
    const char *text;
    pp->buf[pp->len] = '\0';
    pp->skip = 1;
    if (s_forwards(st->role)
        && launch_step_label(pp->buf, st->n, &rank, &text) == 0) {
        pp->fwd = is_err ? STDERR_FILENO : STDOUT_FILENO;
        pp->skip = 2;
        s_write_line(pp->fwd, text, strlen(text), 0);
    } else {
        s_log(self, st, "a line of over %d bytes dropped", S_LINE_MAX - 1);
    }
    pp->len = 0;
}

/* Splits the buffer into lines; an overlong line's rest is skipped or
 * forwarded up to its newline. */
static void
s_lines(launch_job_t *self, launch_job_step_t *st, s_pipe_t *pp, int is_err)
{
    char *start = pp->buf, *nl, *end = pp->buf + pp->len;
    while ((nl = memchr(start, '\n', (size_t) (end - start))) != NULL) {
        *nl = '\0';
        if (pp->skip == 2)
            s_write_line(pp->fwd, start, (size_t) (nl - start), 1);
        else if (!pp->skip)
            s_line(self, st, start, is_err);
        pp->skip = 0;
        start = nl + 1;
    }
    pp->len = (size_t) (end - start);
    if (pp->skip == 2 && pp->len) {
        s_write_line(pp->fwd, start, pp->len, 0);
        pp->len = 0;
    } else if (pp->skip == 1) {
        pp->len = 0;
    } else {
        memmove(pp->buf, start, pp->len);
        if (pp->len == sizeof pp->buf - 1)
            s_overlong(self, st, pp, is_err);
    }
}

/* Reads what is there; returns 1 when more may come now. */
static int
s_read(launch_job_t *self, launch_job_step_t *st, int is_err)
{
    s_pipe_t *pp = is_err ? &st->err : &st->out;
    if (pp->fd < 0)
        return 0;
    ssize_t r = read(pp->fd, pp->buf + pp->len, sizeof pp->buf - 1 - pp->len);
    if (r < 0 && errno == EINTR)
        return 1;
    if (r < 0 && errno == EAGAIN)
        return 0;
    if (r <= 0) {
        if (pp->len && !pp->skip) {     /* a last line without newline */
            pp->buf[pp->len] = '\0';
            s_line(self, st, pp->buf, is_err);
        }
        pp->len = 0;
        s_close_pipe(self, pp);
        return 0;
    }
    pp->len += (size_t) r;
    s_lines(self, st, pp, is_err);
    return 1;
}

static launch_job_step_t *
s_find_fd(launch_job_t *self, int fd, int *is_err)
{
    for (size_t k = 0; k < self->nsteps; k++) {
        launch_job_step_t *st = self->steps[k];
        if (st->out.fd == fd || st->err.fd == fd) {
            *is_err = st->err.fd == fd;
            return st;
        }
    }
    return NULL;
}

static int
s_on_readable(zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    (void) loop;
    launch_job_t *self = arg;
    int is_err = 0;
    launch_job_step_t *st = s_find_fd(self, item->fd, &is_err);
    if (st)
        s_read(self, st, is_err);
    return 0;
}

/* ---- starting a step ----------------------------------------------------- */

/* Writes the step file and the host file of nodes idx[0..n). */
static int
s_files(launch_job_t *self, launch_job_step_t *st, const size_t *idx,
        const launch_argv_t *argvs, const launch_argv_t *kvs)
{
    char dir[TELEM_PATH_MAX + 16], tmp[sizeof st->file + 8];
    snprintf(dir, sizeof dir, "%s/steps", self->launch_dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return TELEM_EIO;
    const char *role = launch_job_role_name(st->role);
    snprintf(st->file, sizeof st->file, "%s/%s.%u.tasks", dir, role, st->seq);
    snprintf(st->hosts, sizeof st->hosts, "%s/%s.%u.hosts", dir, role,
             st->seq);
    int rc = 0;
    for (int which = 0; which < 2 && !rc; which++) {
        const char *path = which ? st->hosts : st->file;
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC
                      | O_NOFOLLOW, 0600);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f && fd >= 0)
            close(fd);
        rc = f ? 0 : TELEM_EIO;
        for (size_t k = 0; !rc && k < st->n; k++) {
            const char *node = launch_state_name(self->state, idx[k]);
            rc = which ? (fprintf(f, "%s\n", node) < 0 ? TELEM_EIO : 0)
                 : launch_step_file_line(f, node, k,
                                         (const char *const *) kvs[k].v,
                                         (const char *const *) argvs[k].v);
        }
        if (f && fclose(f) != 0)
            rc = TELEM_EIO;
        if (!rc && rename(tmp, path) != 0)
            rc = TELEM_EIO;
        if (rc)
            unlink(tmp);
    }
    return rc;
}

/* Spawns srun with its output into two pipes. */
static int
s_spawn(launch_job_t *self, launch_job_step_t *st, launch_env_t *env)
{
    int out[2] = { -1, -1 }, err[2] = { -1, -1 }, rc = TELEM_EIO;
    launch_argv_t cmd = { 0 };
    const char *argv[] = { self->bin_step, st->file, NULL };
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)
        || launch_env_set(env, "SLURM_HOSTFILE", st->hosts)
        || launch_source_step_command(self->source, st->n,
                                      launch_job_role_name(st->role), argv,
                                      &cmd))
        goto out;
    launch_proc_spawn_t s = { cmd.v, launch_env_array(env), -1, out[1],
                              err[1] };
    rc = launch_proc_spawn(&s, &st->pid);
out:
    if (rc)
        telem_log(TELEM_LOG_ERROR, "cannot start the %s step of %zu node(s): "
                  "%s", launch_job_role_name(st->role), st->n,
                  strerror(errno));
    for (int k = 0; k < 2; k++) {
        if (out[1 - k] >= 0 && (k == 0 || rc))
            close(out[1 - k]);
        if (err[1 - k] >= 0 && (k == 0 || rc))
            close(err[1 - k]);
    }
    st->out.fd = rc ? -1 : out[0];
    st->err.fd = rc ? -1 : err[0];
    launch_argv_clear(&cmd);
    return rc;
}

static void
s_destroy(launch_job_t *self, launch_job_step_t **st_p)
{
    launch_job_step_t *st = *st_p;
    if (!st)
        return;
    s_close_pipe(self, &st->out);
    s_close_pipe(self, &st->err);
    if (st->file[0])
        unlink(st->file);
    if (st->hosts[0])
        unlink(st->hosts);
    free(st->task);             /* the records are the table's */
    free(st->node);
    free(st);
    *st_p = NULL;
}

/* The records of the step's tasks. */
static int
s_records(launch_job_step_t *st, const size_t *idx)
{
    for (size_t k = 0; k < st->n; k++) {
        launch_job_proc_t *p = calloc(1, sizeof *p);
        if (!p)
            return TELEM_ENOMEM;
        p->node = st->node[k] = idx[k];
        p->role = st->role;
        p->out_fd = -1;
        p->step = st;
        p->rank = k;
        st->task[k] = p;
        st->live++;
    }
    return 0;
}

launch_job_step_t *
launch_job_step_start(launch_job_t *self, launch_job_role_t role,
                      const size_t *idx, size_t n, const launch_argv_t *argvs,
                      const launch_argv_t *kvs, launch_env_t *env,
                      launch_job_step_end_fn *end)
{
    launch_job_step_t *st = calloc(1, sizeof *st);
    if (!st || !n)
        goto fail;
    st->role = role;
    st->n = n;
    st->end = end;
    st->status = -1;
    st->seq = ++self->step_seq;
    st->out.fd = st->err.fd = -1;
    st->task = calloc(n, sizeof *st->task);
    st->node = calloc(n, sizeof *st->node);
    if (!st->task || !st->node || s_records(st, idx)
        || telem_grow((void **) &self->steps, &self->steps_cap,
                      self->nsteps + 1, sizeof *self->steps, 8))
        goto fail;
    if (s_files(self, st, idx, argvs, kvs)) {
        telem_log(TELEM_LOG_ERROR, "cannot write the %s step's files in "
                  "%s/steps: %s", launch_job_role_name(role),
                  self->launch_dir, strerror(errno));
        goto fail;
    }
    if (s_spawn(self, st, env))
        goto fail;
    self->steps[self->nsteps++] = st;
    for (int k = 0; k < 2; k++) {
        int fd = k ? st->err.fd : st->out.fd;
        fcntl(fd, F_SETFL, O_NONBLOCK);
        zmq_pollitem_t item = { NULL, fd, ZMQ_POLLIN, 0 };
        zloop_poller(self->loop, &item, s_on_readable, self);
    }
    s_log(self, st, "srun pid %ld: %zu task(s) from %s", (long) st->pid, n,
          st->file);
    return st;
fail:
    for (size_t k = 0; st && st->task && k < st->n; k++)
        free(st->task[k]);
    s_destroy(self, &st);
    return NULL;
}

launch_job_proc_t *
launch_job_step_task(const launch_job_step_t *st, size_t rank)
{
    return rank < st->n ? st->task[rank] : NULL;
}

void
launch_job_step_forget(launch_job_step_t *st, size_t rank)
{
    if (rank < st->n && st->task[rank]) {
        st->task[rank] = NULL;
        st->live--;
    }
}

/* ---- stopping, killing --------------------------------------------------- */

/* How many live tasks of the step are stopping (with `due`: whose grace
 * ended by now_ns). */
static size_t
s_count_stopping(const launch_job_step_t *st, int due, int64_t now_ns)
{
    size_t n = 0;
    for (size_t r = 0; r < st->n; r++) {
        const launch_job_proc_t *p = st->task[r];
        n += p && p->stopping && (!due || p->kill_at_ns <= now_ns);
    }
    return n;
}

void
launch_job_step_stop(launch_job_t *self)
{
    int sig = launch_source_stop_signal(self->source);
    for (size_t k = 0; k < self->nsteps; k++) {
        launch_job_step_t *st = self->steps[k];
        size_t stopping = s_count_stopping(st, 0, 0);
        if (!stopping || st->signalled)
            continue;
        if (stopping == st->live) {
            st->signalled = 1;
            launch_proc_signal_group(st->pid, sig);
            s_log(self, st, "signal %d to srun: every task stops", sig);
        }
        for (size_t r = 0; r < st->n; r++) {
            launch_job_proc_t *p = st->task[r];
            if (!p || !p->stopping || p->sent)
                continue;
            /* A task whose pid is not known yet is signalled when its
               start line comes (s_task_out). */
            if (st->signalled || (p->task_pid > 0 && st->id[0])) {
                p->sent = 1;
                if (!st->signalled)
                    s_signal_task(self, st, p, sig);
            }
        }
    }
}

/* One task whose grace ended while others of its step run: SIGKILL on its
 * node, and it is no longer waited for (an unreachable node's task would
 * never be reported). */
static void
s_abandon(launch_job_t *self, launch_job_step_t *st, size_t r)
{
    launch_job_proc_t *p = st->task[r];
    const char *node = launch_state_name(self->state, p->node);
    telem_log(TELEM_LOG_WARN, "%s on %s did not stop in time: SIGKILL",
              launch_job_role_name(p->role), node);
    if (p->task_pid > 0 && st->id[0])
        s_signal_task(self, st, p, SIGKILL);
    s_end(self, st, r, SIGKILL, "did not stop in time: killed on its node "
          "and no longer waited for");
}

void
launch_job_step_kill(launch_job_t *self, int64_t now_ns)
{
    for (size_t k = 0; k < self->nsteps; k++) {
        launch_job_step_t *st = self->steps[k];
        size_t due = s_count_stopping(st, 1, now_ns);
        if (!due || st->killed)
            continue;
        if (due == st->live) {
            /* As for a process of its own: SIGKILL to srun's group. */
            st->killed = 1;
            telem_log(TELEM_LOG_WARN, "the %s step (%zu task(s)) did not "
                      "stop in time: SIGKILL", launch_job_role_name(st->role),
                      st->live);
            s_log(self, st, "SIGKILL to srun");
            launch_proc_signal_group(st->pid, SIGKILL);
            continue;
        }
        for (size_t r = 0; r < st->n; r++)
            if (st->task[r] && st->task[r]->stopping
                && st->task[r]->kill_at_ns <= now_ns)
                s_abandon(self, st, r);
    }
}

/* ---- srun's end ---------------------------------------------------------- */

static int
s_helper_reaped(launch_job_t *self, pid_t pid)
{
    for (size_t k = 0; k < self->nhelpers; k++)
        if (self->helpers[k] == pid) {
            self->helpers[k] = self->helpers[--self->nhelpers];
            return 1;
        }
    return 0;
}

/* Ends what srun left unsaid and frees the step. */
static void
s_finish(launch_job_t *self, launch_job_step_t *st, int status)
{
    while (s_read(self, st, 0) || s_read(self, st, 1))
        ;                       /* srun is gone: its pipes end */
    s_close_pipe(self, &st->out);
    s_close_pipe(self, &st->err);
    char desc[96], how[320];
    launch_proc_status_describe(status, desc, sizeof desc);
    snprintf(how, sizeof how, "ended without a word from srun, which %s%s%.*s",
             desc, st->last_error[0] ? ": " : "", 100, st->last_error);
    s_log(self, st, "srun %s", desc);
    int lost = WIFEXITED(status) && WEXITSTATUS(status) == 0
               ? S_LOST_STATUS : status;
    for (size_t r = 0; r < st->n; r++)
        s_end(self, st, r, lost, how);
    s_destroy(self, &st);
}

int
launch_job_step_reaped(launch_job_t *self, pid_t pid, int status)
{
    if (s_helper_reaped(self, pid))
        return 1;
    for (size_t k = 0; k < self->nsteps; k++) {
        launch_job_step_t *st = self->steps[k];
        if (st->pid != pid)
            continue;
        self->steps[k] = self->steps[--self->nsteps];
        s_finish(self, st, status);
        return 1;
    }
    return 0;
}

void
launch_job_step_close_all(launch_job_t *self)
{
    for (size_t k = 0; k < self->nsteps; k++) {
        launch_proc_signal_group(self->steps[k]->pid, SIGKILL);
        s_destroy(self, &self->steps[k]);
    }
    for (size_t k = 0; k < self->nhelpers; k++)
        launch_proc_signal_group(self->helpers[k], SIGKILL);
    char dir[TELEM_PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/steps", self->launch_dir);
    rmdir(dir);                 /* when empty */
    free(self->steps);
    free(self->helpers);
    self->steps = NULL;
    self->helpers = NULL;
    self->nsteps = self->steps_cap = self->nhelpers = self->helpers_cap = 0;
}
