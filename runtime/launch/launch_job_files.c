/* launch_job_files.c - what the launcher writes where others find it, and the
 * environment each process of the job gets.
 *
 * Files (all in the run directory, mode 0700):
 *   <nodefile>                 active nodes, "<name>\t<query endpoint>",
 *                              rank order: what ac_connect() reads
 *   <rundir>/launch/job        every node: "<name>\t<state>\t<rank>\t
 *                              <endpoint>", after a '#' header with the
 *                              launcher's pid, restart endpoint and count
 *   <rundir>/launch/telemd_nodes   every node whose telemd runs, in the
 *                              node file's form: the active nodes, the
 *                              reserves, and nodes taken out of the job
 *                              whose telemd stays for their history (what
 *                              telem_agg and the job report read)
 *   <rundir>/launch/restarts.log   one line per restart of this job
 *                                  (emptied when a job starts)
 *   <rundir>/launch/daemons.log    one line per death, restart and pause
 *                                  of a node daemon (emptied when a job
 *                                  starts)
 *   <rundir>/launch/daemons    every supervised daemon: node, daemon,
 *                              state, pid, deaths, restarts, until
 *   <rundir>/launch/launch.lock    flock held while the launcher runs
 *                                  (telem_node_lock: it holds the pid)
 *   <rundir>/launch/<node>.<role>.log   a daemon's standard error
 *   <dict node file>           telem_dictd's endpoints ($TELEM_DICT_NODEFILE,
 *                              else <rundir>/dict_nodes): the servers
 *                              register there; removed at start and end
 *   <prometheus config>        with --prometheus-config FILE: FILE, a
 *                              Prometheus configuration with one scrape
 *                              job reading its targets (file_sd) from
 *   <its targets file>         FILE less ".yml"/".yaml", plus
 *                              ".targets.yml": every node whose telemd
 *                              serves /metrics, rewritten whenever one
 *                              starts or the job changes; left with no
 *                              target when the job ends
 * Every file is replaced atomically (write a temporary file, rename), so a
 * reader (Prometheus watching its targets file too) never sees half of
 * one.
 */
#include "launch_job_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "telem_error.h"
#include "telem_log.h"
#include "telem_time.h"

/* The Prometheus files' absolute paths (Prometheus resolves a relative
 * file_sd path against its configuration's directory, not ours). */
static int
s_prom_paths(launch_job_t *self, char *why, size_t why_size)
{
    const char *file = self->cfg.prometheus_config;
    char cwd[PATH_MAX] = "";
    if (file[0] != '/' && !getcwd(cwd, sizeof cwd)) {
        snprintf(why, why_size, "cannot resolve %s: %s", file,
                 strerror(errno));
        return TELEM_EIO;
    }
    int n = snprintf(self->prom_config, sizeof self->prom_config, "%s%s%s",
                     cwd, *cwd ? "/" : "", file);
    size_t len = strlen(self->prom_config), stem = len;
    if (len > 4 && strcmp(self->prom_config + len - 4, ".yml") == 0)
        stem = len - 4;
    else if (len > 5 && strcmp(self->prom_config + len - 5, ".yaml") == 0)
        stem = len - 5;
    if (n >= (int) sizeof self->prom_config ||
        snprintf(self->prom_targets, sizeof self->prom_targets,
                 "%.*s.targets.yml", (int) stem, self->prom_config) >=
            (int) sizeof self->prom_targets) {
        snprintf(why, why_size, "--prometheus-config: path too long");
        return TELEM_EINVAL;
    }
    return 0;
}

/* The Prometheus files' paths, and a first writing of both (no target
 * yet), so a path that cannot be written fails the start. */
static int
s_prom_open(launch_job_t *self, char *why, size_t why_size)
{
    int rc = s_prom_paths(self, why, why_size);
    if (rc == 0 && (rc = launch_job_files_write_prometheus(self)) != 0)
        snprintf(why, why_size, "cannot write %s: %s", self->prom_config,
                 strerror(errno));
    if (rc)
        self->prom_config[0] = '\0';     /* nothing to write at the end */
    return rc;
}

/* Opens (empties) launch/restarts.log and launch/daemons.log; removes
 * launch/steps.log. */
static int
s_open_logs(launch_job_t *self, char *why, size_t why_size)
{
    char path[TELEM_PATH_MAX + 32];
    FILE **logs[] = { &self->restart_log, &self->daemon_log };
    const char *names[] = { "restarts.log", "daemons.log" };
    snprintf(path, sizeof path, "%s/steps.log", self->launch_dir);
    unlink(path);               /* made again by the first step */
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", self->launch_dir, names[k]);
        if (!(*logs[k] = fopen(path, "we"))) {
            snprintf(why, why_size, "cannot open %s: %s", path,
                     strerror(errno));
            return TELEM_EIO;
        }
    }
    return 0;
}

int
launch_job_files_open(launch_job_t *self, char *why, size_t why_size)
{
    char path[TELEM_PATH_MAX + 32];
    if (mkdir(self->launch_dir, 0700) != 0 && errno != EEXIST) {
        snprintf(why, why_size, "cannot create %s: %s", self->launch_dir,
                 strerror(errno));
        return TELEM_EIO;
    }
    int rc = telem_node_lock(path, sizeof path, self->rundir, "launch",
                             "launch.lock", &self->lock_fd);
    if (rc == TELEM_ESTATE)
        snprintf(why, why_size, "another telem_launch runs in %s; give this "
                 "job its own run directory (--rundir or TELEM_RUNDIR)",
                 self->rundir);
    else if (rc)
        snprintf(why, why_size, "cannot lock %s: %s", path,
                 rc == TELEM_EIO ? strerror(errno) : telem_strerror(rc));
    if (rc) {
        if (self->lock_fd >= 0)
            close(self->lock_fd);
        self->lock_fd = -1;
        return rc;
    }
    if (self->cfg.prometheus_config &&
        (rc = s_prom_open(self, why, why_size)) != 0)
        return rc;
    /* Endpoints of an earlier job's servers are stale: the servers of
       this one register afresh (their data stays in their logs). */
    if (unlink(self->dict_nodefile) != 0 && errno != ENOENT)
        telem_log(TELEM_LOG_WARN, "cannot remove %s: %s", self->dict_nodefile,
                  strerror(errno));
    /* The restarts and the watcher's events of an earlier job in this run
       directory are not this job's (the dashboard and the report show
       them as this job's). */
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/telem_watch/events.jsonl%s",
                 self->rundir, k ? ".1" : "");
        if (unlink(path) != 0 && errno != ENOENT)
            telem_log(TELEM_LOG_WARN, "cannot remove %s: %s", path,
                      strerror(errno));
    }
    return s_open_logs(self, why, why_size);
}

/* Writes `path` atomically from the lines fill() prints into a FILE. */
static int
s_write_atomic(const char *path, void (*fill)(const launch_job_t *, FILE *),
               const launch_job_t *self)
{
    char tmp[TELEM_PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long) getpid());
    FILE *f = fopen(tmp, "we");
    if (!f)
        goto fail;
    fill(self, f);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        goto fail;
    }
    return 0;
fail:
    telem_log(TELEM_LOG_ERROR, "cannot write %s: %s", path, strerror(errno));
    return TELEM_EIO;
}

static void
s_fill_nodefile(const launch_job_t *self, FILE *f)
{
    fprintf(f, "# active nodes of the job, written by telem_launch[%ld]\n",
            (long) getpid());
    for (size_t i = 0; i < self->n; i++)      /* allocation order = ranks */
        if (launch_state_node(self->state, i) == LAUNCH_NODE_ACTIVE)
            fprintf(f, "%s\t%s\n", launch_state_name(self->state, i),
                    self->nodes[i].endpoint);
}

static void
s_fill_telemd_nodes(const launch_job_t *self, FILE *f)
{
    fprintf(f, "# nodes whose telemd runs (active, reserve, or taken out of "
            "the job with their history), written by telem_launch[%ld]\n",
            (long) getpid());
    for (size_t i = 0; i < self->n; i++)
        if (self->nodes[i].telemd && *self->nodes[i].endpoint)
            fprintf(f, "%s\t%s\n", launch_state_name(self->state, i),
                    self->nodes[i].endpoint);
}

static void
s_fill_jobfile(const launch_job_t *self, FILE *f)
{
    fprintf(f, "# telem_launch pid %ld restart %s restarts %ld\n",
            (long) getpid(), self->restart_ep,
            launch_state_restarts(self->state));
    for (size_t i = 0; i < self->n; i++)
        fprintf(f, "%s\t%s\t%ld\t%s\n", launch_state_name(self->state, i),
                launch_state_node_name(launch_state_node(self->state, i)),
                launch_state_rank(self->state, i),
                *self->nodes[i].endpoint ? self->nodes[i].endpoint : "-");
}

/* A YAML double-quoted scalar: quotes, backslashes and control bytes
 * escaped. */
static void
s_yaml_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* A path in a comment line: control bytes shown as '?'. */
static void
s_comment_str(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *) s; *p; p++)
        fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
}

static void
s_fill_prom_config(const launch_job_t *self, FILE *f)
{
    fprintf(f, "# Prometheus configuration for the telem job of "
            "telem_launch[%ld]: every\n# node's telemd serves /metrics.  "
            "Run\n#   prometheus --config.file=", (long) getpid());
    s_comment_str(f, self->prom_config);
    fprintf(f, "\n# The targets are in the file named below, which "
            "telem_launch rewrites\n# whenever a node's telemd starts; "
            "Prometheus re-reads it by itself.\n# The scrape job can be "
            "copied into a configuration of your own as it\n# is "
            "(docs/prometheus.md).\n");
    fprintf(f, "scrape_configs:\n  - job_name: \"telem\"\n"
            "    scrape_interval: 1s\n    scrape_timeout: 1s\n"
            "    file_sd_configs:\n      - files:\n          - ");
    s_yaml_str(f, self->prom_targets);
    fprintf(f, "\n");
}

/* Every node whose telemd serves /metrics; none once the job has ended
 * (the lock is given back first). */
static void
s_fill_prom_targets(const launch_job_t *self, FILE *f)
{
    size_t n = 0;
    fprintf(f, "# targets of the telem job of telem_launch[%ld], rewritten "
            "as its nodes change\n", (long) getpid());
    for (size_t i = 0; self->lock_fd >= 0 && i < self->n; i++) {
        if (!self->nodes[i].telemd || !*self->nodes[i].metrics)
            continue;
        fprintf(f, "- targets: [");
        s_yaml_str(f, self->nodes[i].metrics);
        fprintf(f, "]\n  labels:\n    node: ");
        s_yaml_str(f, launch_state_name(self->state, i));
        fprintf(f, "\n    telem_state: \"%s\"\n", launch_state_node_name(
                    launch_state_node(self->state, i)));
        n++;
    }
    if (n == 0)
        fprintf(f, "[]\n");
}

int
launch_job_files_write_prometheus(launch_job_t *self)
{
    if (!*self->prom_config)
        return 0;
    int rc = s_write_atomic(self->prom_config, s_fill_prom_config, self);
    int rc2 = s_write_atomic(self->prom_targets, s_fill_prom_targets, self);
    return rc ? rc : rc2;
}

int
launch_job_files_write(launch_job_t *self)
{
    char path[TELEM_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/job", self->launch_dir);
    int rc = s_write_atomic(self->nodefile, s_fill_nodefile, self);
    int rc2 = s_write_atomic(path, s_fill_jobfile, self);
    snprintf(path, sizeof path, "%s/telemd_nodes", self->launch_dir);
    int rc3 = s_write_atomic(path, s_fill_telemd_nodes, self);
    int rc4 = launch_job_files_write_prometheus(self);
    return rc ? rc : rc2 ? rc2 : rc3 ? rc3 : rc4;
}

void
launch_job_files_close(launch_job_t *self)
{
    char path[TELEM_PATH_MAX + 16];
    if (self->lock_fd >= 0) {
        unlink(self->nodefile);
        unlink(self->dict_nodefile);
        snprintf(path, sizeof path, "%s/job", self->launch_dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/telemd_nodes", self->launch_dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/daemons", self->launch_dir);
        unlink(path);
        close(self->lock_fd);
        self->lock_fd = -1;
        launch_job_files_write_prometheus(self);    /* no target left */
    }
    if (self->restart_log)
        fclose(self->restart_log);
    self->restart_log = NULL;
    if (self->daemon_log)
        fclose(self->daemon_log);
    self->daemon_log = NULL;
    if (self->step_log)
        fclose(self->step_log);
    self->step_log = NULL;
}

/* Appends "<UTC time> <line>" to f. */
static void
s_log_line(FILE *f, const char *line)
{
    if (!f)
        return;
    char ts[40];
    time_t now = time(NULL);
    struct tm tm;
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    fprintf(f, "%s %s\n", ts, line);
    fflush(f);
}

void
launch_job_files_log_restart(launch_job_t *self, const char *line)
{
    s_log_line(self->restart_log, line);
}

void
launch_job_files_log_daemon(launch_job_t *self, const char *line)
{
    s_log_line(self->daemon_log, line);
}

int
launch_job_files_step_log_fd(launch_job_t *self)
{
    char path[TELEM_PATH_MAX + 32];
    if (!self->step_log) {
        snprintf(path, sizeof path, "%s/steps.log", self->launch_dir);
        self->step_log = fopen(path, "ae");     /* emptied at the start */
    }
    return self->step_log ? fileno(self->step_log) : -1;
}

void
launch_job_files_log_step(launch_job_t *self, const char *line)
{
    if (launch_job_files_step_log_fd(self) >= 0)
        s_log_line(self->step_log, line);
}

static const char *
s_sup_state_name(launch_sup_state_t st)
{
    static const char *const names[] = { "stopped", "running", "starting",
                                         "waiting", "paused" };
    return (unsigned) st < 5 ? names[st] : "?";
}

/* The pid of node i's process in `role`, or 0. */
static long
s_role_pid(const launch_job_t *self, size_t i, launch_job_role_t role)
{
    for (size_t k = 0; k < self->nprocs; k++)
        if (self->procs[k]->node == i && self->procs[k]->role == role
            && !self->procs[k]->stopping)
            return self->procs[k]->step ? self->procs[k]->task_pid
                                        : (long) self->procs[k]->pid;
    return 0;
}

static void
s_fill_daemons(const launch_job_t *self, FILE *f)
{
    fprintf(f, "# node\tdaemon\tstate\tpid\tdeaths\trestarts\tuntil; "
            "written by telem_launch[%ld]\n", (long) getpid());
    for (size_t i = 0; i < self->n; i++)
        for (int r = 0; r < LAUNCH_SUP_ROLES; r++) {
            const launch_job_sup_t *s = &self->nodes[i].sup[r];
            if (r == LAUNCH_ROLE_PROGRAM || (!s->up_once && !s->restarts))
                continue;
            char until[40] = "-";
            if (s->state == LAUNCH_SUP_WAITING
                || s->state == LAUNCH_SUP_PAUSED) {
                time_t t = (time_t) (s->until_rt_ns / 1000000000);
                struct tm tm;
                strftime(until, sizeof until, "%Y-%m-%dT%H:%M:%SZ",
                         gmtime_r(&t, &tm));
            }
            long pid = s_role_pid(self, i, (launch_job_role_t) r);
            fprintf(f, "%s\t%s\t%s\t%ld\t%d\t%ld\t%s\n",
                    launch_state_name(self->state, i),
                    launch_job_role_name((launch_job_role_t) r),
                    s_sup_state_name(s->state), pid, s->deaths, s->restarts,
                    until);
        }
}

int
launch_job_files_write_daemons(launch_job_t *self)
{
    char path[TELEM_PATH_MAX + 16];
    if (self->lock_fd < 0)
        return 0;
    snprintf(path, sizeof path, "%s/daemons", self->launch_dir);
    return s_write_atomic(path, s_fill_daemons, self);
}

/* Sets KEY=value in env and records "KEY=value" in kv. */
static int
s_put(launch_env_t *env, launch_argv_t *kv, const char *key, const char *fmt,
      ...)
{
    char value[TELEM_PATH_MAX + 64], pair[TELEM_PATH_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    snprintf(pair, sizeof pair, "%s=%s", key, value);
    return launch_env_set(env, key, value) || launch_argv_add(kv, pair);
}

static int
s_env_program(const launch_job_t *self, size_t i, launch_env_t *env,
              launch_argv_t *kv)
{
    long restarts = launch_state_restarts(self->state);
    int rc = s_put(env, kv, "TELEM_RANK", "%ld", launch_state_rank(self->state,
                                                                   i))
          || s_put(env, kv, "TELEM_NNODES", "%zu",
                   launch_state_count(self->state, LAUNCH_NODE_ACTIVE))
          || s_put(env, kv, "TELEM_RESTART_COUNT", "%ld", restarts)
          || (restarts > 0 && s_put(env, kv, "TELEM_RESTARTED", "1"));
    return rc;
}

/* A detector command runs on the watcher's rounds (telem_watch --period;
 * its default, 1 s, when not given) and, like the watcher, asks for
 * restarts only in a resilient job. */
static int
s_env_detcmd(const launch_job_t *self, launch_env_t *env, launch_argv_t *kv)
{
    int64_t p = self->cfg.watch_period_ns > 0 ? self->cfg.watch_period_ns
                                              : TELEM_NS_PER_SEC;
    return s_put(env, kv, "TELEM_WATCH_PERIOD", "%.9g", (double) p / 1e9)
           || s_put(env, kv, "TELEM_WATCH_RESTART", "%d",
                    self->cfg.resilient ? 1 : 0);
}

launch_env_t *
launch_job_env(const launch_job_t *self, size_t i, launch_job_role_t role,
               launch_argv_t *kv)
{
    extern char **environ;
    static const char *const drop[] = {
        "TELEM_NODE", "TELEM_RANK", "TELEM_NNODES", "TELEM_RESTART_COUNT",
        "TELEM_RESTARTED", "TELEM_DICT_NODEFILE", "TELEM_WATCH_PERIOD",
        "TELEM_WATCH_RESTART", NULL
    };
    launch_env_t *env = launch_env_new(environ);
    if (!env)
        return NULL;
    for (size_t k = 0; drop[k]; k++)
        launch_env_unset(env, drop[k]);
    int rc = s_put(env, kv, "TELEM_RUNDIR", "%s", self->rundir)
          || s_put(env, kv, "TELEM_LEVEL", "%d", self->cfg.level)
          || s_put(env, kv, "TELEM_NODEFILE", "%s", self->nodefile)
          || s_put(env, kv, "TELEM_LAUNCH_ENDPOINT", "%s", self->restart_ep)
          || (self->keys && s_put(env, kv, TELEM_KEYS_ENV, "%s",
                                  self->keys_dir))
          || (self->dict && s_put(env, kv, "TELEM_DICT_NODEFILE", "%s",
                                  self->dict_nodefile));
    /* Under Slurm telemd names itself from SLURMD_NODENAME. */
    if (!rc && (role != LAUNCH_ROLE_TELEMD
                || !launch_source_daemon_names_itself(self->source)))
        rc = s_put(env, kv, "TELEM_NODE", "%s", launch_state_name(self->state,
                                                                  i));
    if (!rc && role == LAUNCH_ROLE_PROGRAM)
        rc = s_env_program(self, i, env, kv);
    if (!rc && LAUNCH_ROLE_IS_DETCMD(role))
        rc = s_env_detcmd(self, env, kv);
    if (rc)
        launch_env_destroy(&env);
    return env;
}
