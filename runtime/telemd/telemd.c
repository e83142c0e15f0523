/* telemd.c - the node agent's command line: parse flags, start, wait.
 *
 * Everything else lives in telemd_actor.c (sockets, loop) and
 * telemd_agent.c (what messages mean).
 */
#include <czmq.h>
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_cli.h"
#include "telem_error.h"
#include "telem_limits.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_keys.h"
#include "telem_time.h"
#include "telem_zap.h"
#include "telemd_actor.h"

static const char s_usage[] =
"Usage: telemd [OPTIONS]\n"
"The telem node agent: one per node.  Collects samples pushed by the node's\n"
"processes and, by telemetry level, node metrics from /proc (level 2) and\n"
"GPU metrics from NVML (level 3) and its own metrics (level 4) into an\n"
"in-memory store with a retention window; answers queries and control\n"
"requests from telem_client, the analysis client and other nodes.\n"
"\n"
"Options:\n"
"  -n, --node NAME        node name (default: $TELEM_NODE, $SLURMD_NODENAME,\n"
"                         or the host name)\n"
"  -L, --level L          telemetry level 0-4 (default: $TELEM_LEVEL or 2)\n"
"  -w, --window SECONDS   retention window (default 300)\n"
"  -i, --interval SECONDS sampling interval for node metrics (default 1)\n"
"  -r, --rundir DIR       run directory (default: $TELEM_RUNDIR,\n"
"                         $XDG_RUNTIME_DIR/telem or /tmp/telem-UID)\n"
"  -b, --bind ADDR        TCP address for remote queries (default 127.0.0.1;\n"
"                         'none' binds no TCP endpoint)\n"
"  -p, --port PORT        TCP port (default 0: an ephemeral port)\n"
"      --keys DIR         the job's key directory (DIR/job.key, mode 0600):\n"
"                         the TCP endpoint is CURVE and serves only clients\n"
"                         holding the key (default: $TELEM_KEYS, else\n"
"                         RUNDIR/keys when it holds a key, else plain TCP)\n"
"      --insecure         allow a plain TCP bind off loopback (a network\n"
"                         only you use); without keys plain TCP serves\n"
"                         queries to anyone who reaches it, never control\n"
"      --max-tcp-peers N  TCP connections held at once; more are refused\n"
"                         (default 512; at most half the open-file limit)\n"
"      --http-port PORT   serve GET /metrics for Prometheus on this port\n"
"                         (default: no HTTP server; 0: an ephemeral port,\n"
"                         printed as 'metrics<TAB>URL')\n"
"      --http-bind ADDR   numeric address of /metrics (default 127.0.0.1;\n"
"                         0.0.0.0 or :: for every address)\n"
"  -m, --mem-cap MIB      memory cap of the store in MiB (default 256)\n"
"  -N, --nodefile FILE    add this node and its query endpoint to FILE\n"
"  -u, --job-user USER    user whose processes num_running_processes counts\n"
"                         (default: the user running telemd)\n"
"      --proc-root DIR    read node metrics from DIR instead of /proc\n"
"      --sys-root DIR     read /sys metrics from DIR instead of /sys\n"
"      --nvml-lib FILE    NVML library to load (default $TELEM_NVML_LIB, else\n"
"                         libnvidia-ml.so.1)\n"
"      --rocm-smi-lib FILE  AMD rocm_smi library to load\n"
"                         (default librocm_smi64.so.1)\n"
"      --ze-lib FILE      Intel Level Zero loader to load (default\n"
"                         libze_loader.so.1)\n"
"      --log-dir DIR      flush log directory, per node and user, mode 0700\n"
"                         (default RUNDIR/NODE/log)\n"
"      --flush SECONDS    flush to the log every SECONDS (default 120, >= 1)\n"
"      --history SECONDS  how far back the log keeps and queries reach\n"
"                         (default: no bound but --log-max)\n"
"      --log-max MIB      bound on the log's size, oldest segments removed\n"
"                         first (default 1024)\n"
"      --no-log           keep no log: history is in memory only\n"
"      --no-handover      refuse to start while a telemd runs for the node\n"
"                         (default: take the node over, see below)\n"
"      --no-slurmd-watch  under Slurm, do not watch the node's slurmd\n"
"                         (default: when SLURMD_NODENAME is set, a status\n"
"                         request is answered 'node lost' once the node's\n"
"                         slurmd is gone, so telem_launch restarts the job\n"
"                         without the node at once)\n"
"      --handover-wait S  after asking the old telemd to exit, wait S\n"
"                         seconds before SIGTERM (default 5)\n"
"      --term-wait S      after SIGTERM, wait S seconds before SIGKILL\n"
"                         (default 3)\n"
"  -l, --log-level LVL    error, warn, info (default) or debug\n"
"  -h, --help             show this help\n"
"  -V, --version          show the version\n"
"\n"
"On start telemd prints its endpoints, one 'kind<TAB>endpoint' a line (node,\n"
"ingest, ctl, query, metrics), then 'ready', and writes the same (with its\n"
"pid) to RUNDIR/NODE/endpoints.  It stops on\n"
"SIGINT, SIGTERM or a shutdown request (telem_client shutdown), after\n"
"flushing everything it received to the log.  A telemd started for a node\n"
"that has one running takes over: it asks the old one to hand over (flush\n"
"and exit), then sends SIGTERM, then SIGKILL, and reloads the log.\n"
"Exit status: 0 after a clean stop, 1 on a start-up error, 2 on bad usage.\n";

typedef struct {
    telemd_config_t cfg;
    char node[TELEM_NAME_MAX + 1];
    char rundir[TELEM_PATH_MAX];
    char tcp_bind[160];
    const char *bind_addr;
    long port;
    const char *nodefile;
    long http_port;             /* -1: no HTTP server */
    const char *http_bind;
    char log_dir[TELEM_PATH_MAX];
    int no_log;
    int no_slurmd_watch;
    const char *keys_dir;       /* --keys */
    int insecure;
} s_args_t;

#define S_PROG "telemd"
#define S_STR_(x) #x
#define S_STR(x) S_STR_(x)

static int
s_job_user(const char *s, uid_t *uid)
{
    struct passwd *pw = getpwnam(s);
    if (pw) {
        *uid = pw->pw_uid;
        return 0;
    }
    int64_t v;
    if (telem_cli_int64(s, 0, 4294967294LL, &v))
        return -1;
    *uid = (uid_t) v;
    return 0;
}

static int
s_level_default(void)
{
    const char *env = getenv("TELEM_LEVEL");
    int64_t v;
    if (env && telem_cli_int64(env, 0, 4, &v) == 0)
        return (int) v;
    return 2;
}

static int s_option_log(s_args_t *a, int c, char *v);

static int
s_option(void *arg, int c, char *v)
{
    s_args_t *a = arg;
    double d;
    int64_t i;
    switch (c) {
    case 'n':
        if (!telem_node_valid(v))
            return telem_cli_bad(S_PROG, "--node", v,
                                 "1-255 bytes, no '/', tab or newline");
        snprintf(a->node, sizeof a->node, "%s", v);
        return 0;
    case 'L':
        if (telem_cli_int64(v, 0, 4, &i))
            return telem_cli_bad(S_PROG, "--level", v,
                                 "an integer from 0 to 4");
        a->cfg.level = (int) i;
        return 0;
    case 'w':
        if (telem_cli_seconds(v, 0.001, 365 * 86400.0, &a->cfg.window_ns))
            return telem_cli_bad(S_PROG, "--window", v, "seconds, above 0");
        return 0;
    case 'i':
        if (telem_cli_seconds(v, 0.001, 86400, &a->cfg.interval_ns))
            return telem_cli_bad(S_PROG, "--interval", v,
                                 "seconds, from 0.001 to 86400");
        return 0;
    case 'r':
        if (telem_rundir_resolve(a->rundir, sizeof a->rundir, v))
            return telem_cli_bad(S_PROG, "--rundir", v,
                                 "path too long, or no current directory");
        return 0;
    case 'b': a->bind_addr = v; return 0;
    case 'p':
        if (telem_cli_int64(v, 0, 65535, &i))
            return telem_cli_bad(S_PROG, "--port", v,
                                 "an integer from 0 to 65535");
        a->port = (long) i;
        return 0;
    case 'm':
        if (telem_cli_number(v, 1, 1024 * 1024, &d))
            return telem_cli_bad(S_PROG, "--mem-cap", v,
                                 "MiB, from 1 to 1048576");
        a->cfg.mem_cap_bytes = (size_t) (d * 1048576.0);
        return 0;
    case 'N': a->nodefile = v; return 0;
    case 'u':
        if (s_job_user(v, &a->cfg.job_uid))
            return telem_cli_bad(S_PROG, "--job-user", v,
                                 "no such user or uid");
        return 0;
    case 'M':
        if (telem_cli_int64(v, 1, 1 << 20, &i))
            return telem_cli_bad(S_PROG, "--max-tcp-peers", v,
                                 "an integer from 1 to 1048576");
        a->cfg.max_tcp_peers = (int) i;
        return 0;
    case 'H':
        if (telem_cli_int64(v, 0, 65535, &i))
            return telem_cli_bad(S_PROG, "--http-port", v,
                                 "an integer from 0 to 65535");
        a->http_port = (long) i;
        return 0;
    case 'B': a->http_bind = v; return 0;
    case 'P': a->cfg.proc_root = v; return 0;
    case 'S': a->cfg.sys_root = v; return 0;
    default: return s_option_log(a, c, v);
    }
}

/* The flush log's and the hand-over's options. */
static int
s_option_log(s_args_t *a, int c, char *v)
{
    double d;
    switch (c) {
    case 'D':
        if (!*v || snprintf(a->log_dir, sizeof a->log_dir, "%s", v)
                       >= (int) sizeof a->log_dir)
            return telem_cli_bad(S_PROG, "--log-dir", v,
                                 "a directory path, not empty, not too long");
        return 0;
    case 'F':
        if (telem_cli_seconds(v, 1, 86400, &a->cfg.flush_ns))
            return telem_cli_bad(S_PROG, "--flush", v,
                                 "seconds, from 1 to 86400");
        return 0;
    case 'Y':
        if (telem_cli_seconds(v, 1, 100 * 365 * 86400.0, &a->cfg.history_ns))
            return telem_cli_bad(S_PROG, "--history", v, "seconds, >= 1");
        return 0;
    case 'X':
        if (telem_cli_number(v, 1, 1024.0 * 1024 * 1024, &d))
            return telem_cli_bad(S_PROG, "--log-max", v, "MiB, >= 1");
        a->cfg.log_max_bytes = (uint64_t) (d * 1048576.0);
        return 0;
    case 'O': a->no_log = 1; return 0;
    case 'K': a->cfg.handover = 0; return 0;
    case 'J': a->no_slurmd_watch = 1; return 0;
    case 'A':
        if (telem_cli_seconds(v, 0.001, 3600, &a->cfg.handover_cfg.ask_ns))
            return telem_cli_bad(S_PROG, "--handover-wait", v,
                                 "seconds, from 0.001 to 3600");
        return 0;
    case 'T':
        if (telem_cli_seconds(v, 0.001, 3600, &a->cfg.handover_cfg.term_ns))
            return telem_cli_bad(S_PROG, "--term-wait", v,
                                 "seconds, from 0.001 to 3600");
        return 0;
    case 'G': a->cfg.nvml_library = v; return 0;
    case 'W': a->cfg.rsmi_library = v; return 0;
    case 'Z': a->cfg.ze_library = v; return 0;
    case 'k': a->keys_dir = v; return 0;
    case 'I': a->insecure = 1; return 0;
    default: return 2;
    }
}

static int
s_parse(s_args_t *a, int argc, char **argv, telem_log_level_t *loglevel)
{
    static const struct option opts[] = {
        { "node", 1, 0, 'n' }, { "level", 1, 0, 'L' }, { "window", 1, 0, 'w' },
        { "interval", 1, 0, 'i' }, { "rundir", 1, 0, 'r' },
        { "bind", 1, 0, 'b' }, { "port", 1, 0, 'p' }, { "mem-cap", 1, 0, 'm' },
        { "nodefile", 1, 0, 'N' }, { "job-user", 1, 0, 'u' },
        { "proc-root", 1, 0, 'P' }, { "nvml-lib", 1, 0, 'G' },
        { "sys-root", 1, 0, 'S' },
        { "rocm-smi-lib", 1, 0, 'W' }, { "ze-lib", 1, 0, 'Z' },
        { "max-tcp-peers", 1, 0, 'M' },
        { "http-port", 1, 0, 'H' }, { "http-bind", 1, 0, 'B' },
        { "log-dir", 1, 0, 'D' }, { "flush", 1, 0, 'F' },
        { "history", 1, 0, 'Y' }, { "log-max", 1, 0, 'X' },
        { "no-log", 0, 0, 'O' }, { "no-handover", 0, 0, 'K' },
        { "no-slurmd-watch", 0, 0, 'J' },
        { "handover-wait", 1, 0, 'A' }, { "term-wait", 1, 0, 'T' },
        { "keys", 1, 0, 'k' }, { "insecure", 0, 0, 'I' },
        { "log-level", 1, 0, 'l' }, { "help", 0, 0, 'h' },
        { "version", 0, 0, 'V' }, { 0, 0, 0, 0 }
    };
    const telem_cli_spec_t spec = {
        .prog = S_PROG, .usage = s_usage,
        .shortopts = "n:L:w:i:r:b:p:m:N:u:l:hV", .longopts = opts,
        .option = s_option, .log_level = loglevel,
        .version = "telemd 0.1.0 (protocol " S_STR(TELEM_PROTO_VERSION) ")",
    };
    return telem_cli_parse_spec(&spec, argc, argv, a);
}

static void
s_defaults(s_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->cfg.level = s_level_default();
    a->cfg.window_ns = 300 * TELEM_NS_PER_SEC;
    a->cfg.interval_ns = TELEM_NS_PER_SEC;
    a->cfg.job_uid = getuid();
    a->cfg.max_tcp_peers = TELEM_TCP_PEERS_DEFAULT;
    a->bind_addr = "127.0.0.1";
    a->http_port = -1;
    a->http_bind = "127.0.0.1";
    a->cfg.handover = 1;
    /* The launcher hands its environment to every telemd it starts: this
       is how a job picks the NVML library without a telemd option. */
    const char *nvml = getenv("TELEM_NVML_LIB");
    a->cfg.nvml_library = nvml && *nvml ? nvml : NULL;
}

static int
s_finish_config(s_args_t *a)
{
    if (!*a->node && telem_node_default(a->node, sizeof a->node)) {
        fprintf(stderr, "telemd: cannot determine the node name; "
                "use --node\n");
        return 2;
    }
    if (!*a->rundir && telem_rundir_default(a->rundir, sizeof a->rundir)) {
        fprintf(stderr, "telemd: run directory path too long\n");
        return 2;
    }
    char why[TELEM_PATH_MAX + 200];
    if (telem_rundir_prepare(a->rundir, why, sizeof why)) {
        fprintf(stderr, "telemd: %s\n", why);
        return 1;
    }
    if (strcmp(a->bind_addr, "none") != 0) {
        if (a->port)
            snprintf(a->tcp_bind, sizeof a->tcp_bind, "tcp://%s:%ld",
                     a->bind_addr, a->port);
        else  /* port 0: the kernel picks a random free port, where "*"
                 would take the lowest free one and so reuse a dead node's */
            snprintf(a->tcp_bind, sizeof a->tcp_bind, "tcp://%s:0",
                     a->bind_addr);
        a->cfg.tcp_bind = a->tcp_bind;
    }
    if (a->http_port >= 0) {
        a->cfg.http_bind = a->http_bind;
        a->cfg.http_port = (int) a->http_port;
    }
    a->cfg.node = a->node;
    a->cfg.rundir = a->rundir;
    if (!a->no_log && !*a->log_dir
        && telem_node_path(a->log_dir, sizeof a->log_dir, a->rundir, a->node,
                           "log")) {
        fprintf(stderr, "telemd: log directory path too long; use "
                "--log-dir\n");
        return 2;
    }
    a->cfg.log_dir = a->no_log ? NULL : a->log_dir;
    const char *slurm = getenv("SLURMD_NODENAME");
    if (!a->no_slurmd_watch && slurm && *slurm)
        a->cfg.slurmd_node = slurm;
    return 0;
}



static void
s_announce(telemd_t *d, const s_args_t *a)
{
    printf("node\t%s\ningest\t%s\nctl\t%s\n", a->node,
           telemd_ingest_endpoint(d), telemd_ctl_endpoint(d));
    if (*telemd_tcp_endpoint(d))
        printf("query\t%s\n", telemd_tcp_endpoint(d));
    if (*telemd_metrics_url(d))
        printf("metrics\t%s\n", telemd_metrics_url(d));
    printf("ready\n");
    fflush(stdout);
    telem_log(TELEM_LOG_INFO, "node %s ready at level %d, window %.0f s, "
              "query %s%s%s", a->node, a->cfg.level, a->cfg.window_ns / 1e9,
              *telemd_tcp_endpoint(d) ? telemd_tcp_endpoint(d)
                                      : telemd_ctl_endpoint(d),
              *telemd_metrics_url(d) ? ", metrics " : "",
              telemd_metrics_url(d));
}

/* The job's keys and the ZAP handler that checks them, before any
   socket is bound (docs/security.md).  0, or an exit status. */
static int
s_security(s_args_t *a, telem_keys_t **keys, telem_zap_t **zap)
{
    char why[512];
    int err = telem_keys_for_bind(a->keys_dir, a->insecure, a->rundir,
                                  a->cfg.tcp_bind, keys, why, sizeof why);
    if (err) {
        fprintf(stderr, "telemd: %s\n", why);
        return err == TELEM_EPERM ? 2 : 1;
    }
    a->cfg.keys = *keys;
    if (*keys && !(*zap = telem_zap_new(*keys, &err))) {
        fprintf(stderr, "telemd: cannot start the ZAP handler: %s\n",
                telem_strerror(err));
        return 1;
    }
    a->cfg.zap = *zap;
    if (!a->cfg.tcp_bind)
        return 0;
    if (*keys)
        telem_log(TELEM_LOG_INFO, "TCP is CURVE with the job's key from %s",
                  telem_keys_dir(*keys));
    else if (a->insecure && !telem_keys_loopback(a->cfg.tcp_bind))
        telem_log(TELEM_LOG_WARN, "--insecure: plain TCP at %s: anyone who "
                  "reaches it can read this node's telemetry (control over "
                  "it is refused)", a->cfg.tcp_bind);
    else
        telem_log(TELEM_LOG_INFO, "TCP on loopback is plain (no keys): "
                  "every user of this machine can query it; control over "
                  "it is refused");
    return 0;
}

/* SIG_BLOCK before the first thread: every thread made from then on (ZAP,
 * actor, ZeroMQ's, the log writer, HTTP) inherits SIGINT and SIGTERM
 * blocked.  SIG_UNBLOCK in the main thread once it waits: the signals
 * reach it alone, and its wait wakes the actor at once (telemd_wait), so
 * the actor need not wake up to look for them. */
static void
s_stop_signals(int how)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(how, &set, NULL);
}

int
main(int argc, char **argv)
{
    s_args_t a;
    s_defaults(&a);
    telem_log_level_t loglevel = TELEM_LOG_INFO;
    int rc = s_parse(&a, argc, argv, &loglevel);
    if (rc)
        return rc == 1 ? 0 : rc;
    telem_log_init("telemd", loglevel);
    if ((rc = s_finish_config(&a)) != 0)
        return rc;
    /* Before any socket exists (telem_limits.h: libzmq aborts when an ipc
       accept finds the descriptor table full). */
    a.cfg.max_tcp_peers = telem_limits_start(a.cfg.max_tcp_peers,
                                             a.cfg.tcp_bind != NULL);
    telem_keys_t *keys = NULL;
    telem_zap_t *zap = NULL;
    s_stop_signals(SIG_BLOCK);
    if ((rc = s_security(&a, &keys, &zap)) != 0) {
        telem_keys_destroy(&keys);
        return rc;
    }
    int err = 0;
    telemd_t *d = telemd_new(&a.cfg, &err);
    if (!d) {
        telem_zap_destroy(&zap);
        telem_keys_destroy(&keys);
        fprintf(stderr, "telemd: cannot start node '%s' in %s: %s\n", a.node,
                a.rundir, err == TELEM_ESTATE
                ? "another telemd is already running for this node "
                  "(without --no-handover it would take over)"
                : err == TELEM_ETIMEDOUT
                ? "the telemd running for this node did not exit when "
                  "asked, nor on SIGTERM or SIGKILL (see the log above)"
                : err == TELEM_EIO ? strerror(errno) : telem_strerror(err));
        return 1;
    }
    const char *query = *telemd_tcp_endpoint(d) ? telemd_tcp_endpoint(d)
                                                 : telemd_ctl_endpoint(d);
    if (a.nodefile && telem_nodefile_register(a.nodefile, a.node, query)) {
        fprintf(stderr, "telemd: cannot register in node file %s: %s\n",
                a.nodefile, strerror(errno));
        telemd_destroy(&d);
        rc = 1;
    } else {
        s_announce(d, &a);
        s_stop_signals(SIG_UNBLOCK);
        telemd_wait(d, -1);
        telem_log(TELEM_LOG_INFO, "node %s stopping", a.node);
        telemd_destroy(&d);
    }
    telem_zap_destroy(&zap);
    telem_keys_destroy(&keys);
    return rc;
}
